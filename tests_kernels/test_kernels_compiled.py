"""What the compiler says, without a GPU: registers, shared memory, spills (ptxas -v of NVRTC, the device's compiler at
the device's version), static SASS (cuobjdump, where installed), and occupancy computed from them -- checked against
the seed's own reported occupancy first. Skips with the reason where a tool is missing. Where the device's compiler
gives other numbers than the nvcc counts a header priced, the tests state the device's (kernels/nvrtc_facts.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import kernel_first_run_findings as first_run
import pytest
import rung_checks

from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import fused, nvrtc_facts
from pytest_anatomy.kernels.emulator import kernels_in
from pytest_anatomy.kernels.ladders import LADDERS, TIMING_SHAPES
from pytest_anatomy.kernels.registry import PREREGISTERED_ON, DeviceFacts
from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.theory.kernel_occupancy import occupancy
from pytest_anatomy.theory.prediction import Prediction

SOURCES = sorted({s for vs in LADDERS.values() for v in vs if not v.is_baseline
                  for s in v.sources(dict(TIMING_SHAPES[v.ladder]), DeviceFacts(132))})


_need = rung_checks.need_tools  # skips, naming the tool, where it is absent


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("source", SOURCES)
def test_no_spills_no_stack(source):
    """Register-resident rows and register tiles must stay in registers: a stack frame or spill
    would put them in local memory and void every ledger. Two rungs do spill under the device's
    compiler, and the test states how much: s13 (32 bytes) and s16 (96; finding
    h200-s16-device-spill-pace-below-s9), both at the 128-register cap, neither under nvcc."""
    _need("nvrtc")
    report = kc.resource_report(source, "sm_90")
    assert report, f"ptxas reported no kernels for {source}"
    for use in report.values():
        spill = nvrtc_facts.SPILLED_SOURCES.get(source, (0, 0, 0))
        assert (use.stack_bytes, use.spill_store_bytes, use.spill_load_bytes) == spill, use
        assert use.registers <= 255


def test_ptxas_report_with_a_stack_keeps_its_shared_memory():
    """NVRTC's ptxas line names the cumulative stack between the barriers and the shared memory where a kernel spills
    (the device's s13): the parse keeps all three."""
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
           "ptxas         .     32 bytes stack frame, 32 bytes spill stores, 32 bytes spill loads\n"
           "ptxas info    : Used 128 registers, used 1 barriers, 32 bytes cumulative stack size, 49152 bytes smem\n")
    assert kc.parse_ptxas(log)["k"] == kc.ResourceUse("k", 128, 49152, 32, 32, 32, 1)


def _latest_kernels_batch() -> tuple[str, dict]:
    """The newest device batch of the kernels plan on the card the predictions are written for: (stamp, provenance)."""
    for path in sorted((ROOT / "results" / PREREGISTERED_ON / "batches").glob("*/kernels.json"), reverse=True):
        prov = json.loads(path.read_text())["provenance"]
        if prov.get("kind") == "kernels":
            return path.parent.name, prov
    pytest.skip(f"no kernels batch under results/{PREREGISTERED_ON}/batches in this checkout")


def test_nvrtc_is_the_devices():
    """The NVRTC these tests compile with (the library cuda-bindings loads, by its wheel's version) is the one the latest
    device batch recorded, and pyproject's `kernels` extra pins exactly it: a spill or a loop the device will compile
    shows here first (2026-12-04: s16 spilled under NVRTC 13.0.88 only, nvcc 13.0.88 and NVRTC 13.5 here did not)."""
    stamp, prov = _latest_kernels_batch()
    device = prov["versions"]["nvidia-cuda-nvrtc"]["version"]
    assert device == nvrtc_facts.DEVICE_NVRTC, f"batch {stamp} compiled with NVRTC {device}: restate nvrtc_facts"
    pins = re.findall(r'"nvidia-cuda-nvrtc([^"]*)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pins == [f"=={device}"], pins
    _need("nvrtc")
    assert kc.nvrtc_version() == device, f"NVRTC here is {kc.nvrtc_version()}, the device's (batch {stamp}) {device}"


@pytest.mark.parametrize("v", [pytest.param(v, id=v.id) for v in LADDERS["sgemm"] if not v.is_baseline])
def test_sgemm_occupancy_fits_an_sm90_sm(v):
    """The rung's launch fits a Hopper (sm_90) SM: ptxas's registers and shared memory leave room for at
    least one block (zero would mean the launch fails with 'too many resources requested').
    The blocks-per-SM figure itself is not compared with anything here."""
    _need("nvrtc")
    (call,) = v.calls(TIMING_SHAPES["sgemm"], DeviceFacts(132))
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    occ = occupancy(use.registers, use.shared_bytes + call.launch.shmem, call.launch.threads_per_block, "sm_90")
    assert occ.value >= 1, f"{v.id}: no block fits an sm_90 SM (limited by {occ.inputs['limiter']}): {occ}"


SEED_OCC = [("k1", 40, 0, 1024), ("k3", 38, 8192, 1024), ("k4", 54, 8192, 128), ("k5", 72, 20480, 128),
            ("k6", 111, 20480, 128)]  # (kernel, ptxas registers, shared bytes, threads) from fingerprint.txt and the CSV


@pytest.mark.gpu
@pytest.mark.targets(recorded="seed-sgemm.")
@pytest.mark.parametrize("kernel,regs,smem,threads", SEED_OCC)
def test_occupancy_matches_seed_report(kernel, regs, smem, threads, card, measured, reconcile):
    """The seed's CSV reports blocks per SM for its kernels on its card; our calculator, fed its
    ptxas registers and shared memory, must give the same integer."""
    rec = measured(f"seed-sgemm.square.4096x4096x4096.{kernel}")
    got = occupancy(regs, smem, threads, card.sm_arch)
    reported = Measurement(float(rec.data["row"]["blocks_per_sm"]), "blocks", source="recorded",
                           provenance=dict(rec.provenance))
    reconcile("blocks_per_sm", got, reported)


@pytest.mark.parametrize("source,kernel,kind,per_fma", [
    ("sgemm/s6_vectorized.cu", "sgemm_vectorized", "LDS.128", 4 / 64),
    ("sgemm/s7_warptiling.cu", "sgemm_warptiling", "LDS.128", 6 / 128),
    ("sgemm/s9_cp_async_pipeline.cu", "sgemm_cp_async_pipeline", "LDS.128", 4 / 64),
    # s13: 4 per k-step as s9, plus the prologue's first fragment, static code that runs once per block
    ("sgemm/s13_fp32_multistage.cu", "sgemm_fp32_multistage", "LDS.128", (64 + 4) / 1024),
    # s15: 2 of A and 4 of B per k-step for its 8 x 16 outputs, as s7
    ("sgemm/s15_fp32_thread_tile_8x16.cu", "sgemm_fp32_thread_tile_8x16", "LDS.128", 6 / 128),
    # s16: s9's fragment code over a 32-deep k-tile, 4 per k-step
    ("sgemm/s16_fp32_ktile32.cu", "sgemm_fp32_ktile32", "LDS.128", 4 / 64),
    # s17: s16's fragment code, unchanged
    ("sgemm/s17_fp32_ktile32_lean.cu", "sgemm_fp32_ktile32_lean", "LDS.128", 4 / 64),
    # s18: s9's fragment code on a 32 x 64 warp tile, 4 per k-step (2 A, 2 B)
    ("sgemm/s18_fp32_small_m_splitk.cu", "sgemm_fp32_small_m_splitk", "LDS.128", 4 / 64),
], ids=("s6", "s7", "s9", "s13", "s15", "s16", "s17", "s18"))
def test_vectorized_rungs_compile_to_128_bit_shared_loads(source, kernel, kind, per_fma, reconcile):
    """Static SASS: the float4 rungs' inner loops issue LDS.128 at the rate their access pattern
    says (instructions per FFMA, both counted once per unrolled loop body)."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    counts = kc.sass_counts(source, "sm_90")[kernel]
    reconcile(f"{kind}_per_ffma", Prediction(per_fma, "1/FMA", "access pattern (registry theory)"),
              Measurement(counts.get(kind, 0) / counts["FFMA"], "1/FMA", source="live",
                          provenance={"tool": "cuobjdump --dump-sass", "hardware": "sm_90", "counts": counts}))


PIPELINED = [("sgemm/s9_cp_async_pipeline.cu", "sgemm_cp_async_pipeline"),  # global loads only through cp.async
             ("sgemm/s13_fp32_multistage.cu", "sgemm_fp32_multistage"),
             ("sgemm/s15_fp32_thread_tile_8x16.cu", "sgemm_fp32_thread_tile_8x16"),
             ("sgemm/s16_fp32_ktile32.cu", "sgemm_fp32_ktile32"),
             ("sgemm/s17_fp32_ktile32_lean.cu", "sgemm_fp32_ktile32_lean"),
             ("sgemm/s18_fp32_small_m_splitk.cu", "sgemm_fp32_small_m_splitk")]


@pytest.mark.parametrize("v", [pytest.param(v, id=v.id) for v in LADDERS["sgemm"]
                               if v.theory is not None and v.theory.warps_per_sm])
def test_rung_gets_the_warps_its_ledger_counts_on(v):
    """A rung that states its resident warps (the issue ledger's W) gets exactly them from ptxas's registers
    and shared memory: a register creep past the cap would halve them and void its pre-registered time.
    No spill either (a register cap can be met by spilling accumulators), but where the device's compiler spills
    (s13, s16: kernels/nvrtc_facts.SPILLS), the test states the bytes."""
    _need("nvrtc")
    (call,) = v.calls(TIMING_SHAPES["sgemm"], DeviceFacts(132))
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    occ = occupancy(use.registers, use.shared_bytes + call.launch.shmem, call.launch.threads_per_block, "sm_90")
    assert (use.spill_store_bytes, use.spill_load_bytes) == nvrtc_facts.SPILLS.get(v.id, (0, 0, 0))[1:], use
    warps = occ.value * call.launch.threads_per_block // 32
    assert warps == v.theory.warps_per_sm, \
        f"{v.id}: {warps:g} warps/SM from ptxas (limited by {occ.inputs['limiter']}, {use}), the ledger counts on " \
        f"{v.theory.warps_per_sm}"


@pytest.mark.parametrize("source,kernel", [pytest.param(s, k, id=s.split("/")[-1].split("_")[0]) for s, k in PIPELINED])
def test_pipelined_rung_loads_global_memory_only_through_cp_async(source, kernel):
    """SASS: every global load of a pipelined rung is an LDGSTS (cp.async, global -> shared without a
    register), none an LDG: a plain load would stall on its register before the store to shared."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    counts = kc.sass_counts(source, "sm_90")[kernel]
    ldg = {k: n for k, n in counts.items() if k.startswith("LDG.")}
    assert counts.get("LDGSTS", 0) > 0 and not ldg, f"{kernel}: LDGSTS {counts.get('LDGSTS', 0)}, LDG {ldg}"


@first_run.COMPILER_VECTORIZES_S5
def test_s5_shared_loads_as_compiled(reconcile):
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    v = next(x for x in LADDERS["sgemm"] if x.id == "s5-2d-regtile")
    c = kc.sass_counts(v.source, "sm_90")["sgemm_2d_regtile"]
    lds = sum(n for k, n in c.items() if k.startswith("LDS."))
    reconcile("lds_per_ffma", Prediction(v.theory.lds_distinct + v.theory.lds_broadcast, "1/FMA", "scalar access pattern"),
              Measurement(lds / c["FFMA"], "1/FMA", source="live", provenance={"hardware": "sm_90", "counts": c}))


@pytest.mark.parametrize("source", SOURCES)
def test_compiles_with_nvrtc(source):
    """The device compiles with NVRTC, not nvcc: no math.h, no default includes. Needs cuda-core
    and the NVRTC wheel (nvidia-cuda-nvrtc) here; the GPU is not touched. The compile is the device's own (the
    options kernel_runner passes, ptxas -v among them) and the one the resource and SASS checks read: it compiles
    (resource_report raises "NVRTC failed" where it does not) and ptxas reports every kernel of the file."""
    _need("nvrtc")
    assert set(kernels_in(source)) <= set(kc.resource_report(source, "sm_90")), source


def _main_calls():
    """(variant, launch) of every hand-written kernel launch at the rung's timing shape."""
    out = []
    for lad, vs in LADDERS.items():
        for v in vs:
            if v.is_baseline:
                continue
            for call in v.calls(TIMING_SHAPES[lad], DeviceFacts(132)):
                if call.kernel not in {c[1].kernel for c in out if c[0] is v}:
                    out.append((v, call))
    return [pytest.param(v, c, id=f"{v.id}.{c.kernel}") for v, c in out]


@pytest.mark.gpu
@pytest.mark.targets(recorded="ncu.")
@pytest.mark.parametrize("v,call", _main_calls())
def test_occupancy_from_ptxas_matches_ncu(v, call, card, measured, reconcile):
    """Blocks per SM from this machine's ptxas report (registers, shared memory) and the launch,
    against Nsight Compute's theoretical occupancy for the same kernel on the profiled card
    (results/<card>/kernels/ncu.*): the calculator and the compiler's resource use, exactly."""
    _need("nvrtc")
    from pytest_anatomy.kernels.registry import shape_label

    rec = measured(f"ncu.{v.ladder}.{v.id}.{shape_label(TIMING_SHAPES[v.ladder])}")
    row = next((k for k in rec.data["kernels"] if k["name"] == call.kernel), None)
    assert row is not None, f"{call.kernel} not among the profiled kernels {[k['name'] for k in rec.data['kernels']]}"
    use = kc.resource_report(call.source, card.sm_arch)[call.kernel]
    occ = occupancy(use.registers, use.shared_bytes, call.launch.threads_per_block, card.sm_arch)
    warps = -(-call.launch.threads_per_block // 32)
    pred = Prediction(occ.value * warps / 64 * 100, "%", "blocks per SM x warps per block / 64 warps",
                      {**occ.inputs, "ptxas_registers": use.registers, "ptxas_shared_bytes": use.shared_bytes},
                      terms=occ.terms, notes=occ.notes)
    got = Measurement(float(row["metrics"]["Theoretical Occupancy"]), "%", source=rec["gpu_time_s"].source,
                      provenance={**rec["gpu_time_s"].provenance, "kernel": call.kernel,
                                  "ncu_registers": row["metrics"].get("Registers Per Thread")})
    reconcile("theoretical_occupancy", pred, got)


def test_warp_row_softmax_has_no_barrier_and_one_exp_per_element():
    """x5's header prices a row at two 5-shuffle warp reductions with no barrier and no shared memory, and one
    MUFU.EX2 per element (64 per lane: 16 float4): the SASS must say the same, or its prediction prices
    another kernel."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    c = kc.sass_counts("softmax/x5_warp_row.cu", "sm_90")["softmax_warp_row"]
    assert c.get("BAR", 0) == 0 and not any(k.startswith(("LDS", "STS")) for k in c), c
    assert c.get("SHFL", 0) == 10, c
    assert 64 <= c.get("MUFU", 0) <= 64 + 8, f"MUFU {c.get('MUFU', 0)}: one EX2 per element plus the reciprocal's"


@pytest.mark.parametrize("source,kernel,kind,per_hmma", [
    ("sgemm/s8_bf16_mma.cu", "sgemm_bf16_mma", "LDS.", 24 / 16),
    ("sgemm/s10_bf16_ldmatrix.cu", "sgemm_bf16_ldmatrix", "LDSM.", 6 / 16),
    ("sgemm/s11_bf16_warp64.cu", "sgemm_bf16_warp64", "LDSM.", 8 / 32),
], ids=("s8", "s10", "s11"))
def test_tensor_core_fragment_loads_per_mma(source, kernel, kind, per_hmma):
    """The tensor-core rungs' headers price a warp's 16-deep k-step by its fragment loads: s8 24 LDS.32
    per 16 mma, s10 6 ldmatrix.x4, s11 8 per 32 mma (and no plain shared load left). Static SASS, loop body counted once."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    c = kc.sass_counts(source, "sm_90")[kernel]
    loads = sum(n for k, n in c.items() if k.startswith(kind))
    assert loads / c["HMMA"] == pytest.approx(per_hmma), c
    if kind == "LDSM.":
        assert not any(k.startswith("LDS.") for k in c), f"{kernel} still reads fragments with plain LDS: {c}"


def test_cluster_softmax_keeps_two_blocks_per_sm_at_the_vocab_row():
    """x6's header prices the vocabulary row at 2 resident blocks of 480 threads per SM (264 on the H200, 3.9
    waves of its 1,024 blocks): ptxas's registers and shared memory must allow exactly that, with no spill
    (the row lives in registers; a spill would move it to local memory, a second DRAM pass)."""
    _need("nvrtc")
    v = next(x for x in LADDERS["softmax"] if x.id == "x6-cluster-row")
    (call,) = v.calls(fused.VOCAB_SHAPE, DeviceFacts(132))
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    occ = occupancy(use.registers, use.shared_bytes, call.launch.threads_per_block, "sm_90")
    assert call.launch.threads_per_block == 480 and call.launch.cluster == 8, call.launch
    assert (use.stack_bytes, use.spill_store_bytes, use.spill_load_bytes) == (0, 0, 0), use
    assert occ.value == 2, f"{occ.value:g} blocks/SM (limited by {occ.inputs['limiter']}, {use}); the header counts on 2"


def test_cluster_softmax_sass_is_one_read_one_write_and_two_cluster_barriers():
    """Static SASS of x6: the float4 path loads and stores 10 x 128 bits per thread (its 40 register values),
    the row is exchanged through exactly two cluster barriers, and the exponentials are one MUFU.EX2 per
    value held. The compiler keeps two copies of the exponential loop (float4 and scalar paths, one of
    which runs), so 2 x 40 EX2, plus at most 10 for the 3-step (max, sum) merge and the scale."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    c = kc.sass_counts("softmax/x6_cluster_row.cu", "sm_90")["softmax_cluster_row"]
    assert c.get("LDG.128", 0) == 10 and c.get("STG.128", 0) == 10, c
    assert c.get("UCGABAR_ARV", 0) == 2 and c.get("UCGABAR_WAIT", 0) == 2, c
    assert 2 * 40 <= c.get("MUFU", 0) <= 2 * 40 + 10, f"MUFU {c.get('MUFU', 0)}"
    assert not any(k.startswith(("LDL", "STL")) for k in c), c


def test_wgmma_rung_reads_operands_from_shared_memory_only():
    """s12 (sm_90a): its products are HGMMA.64x128x16 with both operands from descriptors -- no mma.sync and no
    ldmatrix left -- 2 per k-tile in the one K loop; the copies are cp.async and the async-proxy fence is there."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    c = kc.sass_counts("sgemm/s12_bf16_wgmma.cu", "sm_90")["sgemm_bf16_wgmma"]
    assert c.get("HGMMA", 0) >= 2 and not c.get("HMMA") and not any(k.startswith("LDSM") for k in c), c
    assert c.get("LDGSTS", 0) > 0 and c.get("FENCE", 0) >= 1, c


def test_tma_rung_loads_through_tensor_maps_only():
    """s14 (sm_90a): one thread's TMA copies (UTMALDG) are the only way its operands reach shared memory -- no
    cp.async, no global load, no ldmatrix -- and the consumers' K loop: 4 HGMMA.64x256x16 in 85 instructions per warp
    and k-tile under the device's NVRTC (its header's nvcc count: 87), waiting on mbarriers (SYNCS), with the one block
    barrier before the roles split; both warpgroup register moves (setmaxnreg) are there."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    v = next(x for x in LADDERS["sgemm"] if x.id == "s14-bf16-wgmma-tma")
    (call,) = v.calls(TIMING_SHAPES["sgemm"], DeviceFacts(132))
    c = kc.sass_counts(call.source, "sm_90")[call.kernel]
    assert c.get("UTMALDG", 0) >= 2 and c.get("USETMAXREG", 0) == 2 and c.get("BAR", 0) == 1, c
    assert not c.get("LDGSTS") and not c.get("HMMA") and not any(k.startswith(("LDG.", "LDSM", "LDS.")) for k in c), c
    # the innermost span with HGMMA (an mbarrier's retry path, placed after the epilogue, branches back over all)
    loop = min((lp for lp in kc.loop_bodies(call.source, "sm_90", ())[call.kernel] if lp.get("HGMMA")),
               key=lambda lp: sum(lp.values()))
    assert (loop["HGMMA"], sum(loop.values())) == nvrtc_facts.S14_LOOP and loop.get("SYNCS", 0) >= 2, loop


def test_tma_rung_holds_one_block_in_its_dynamic_window():
    """s14's launch asks for its 4-stage window as dynamic shared memory (no static array): one block of 384
    threads per SM, 12 warps (the registry's count), its 168 registers the launch bound's cap, no spill."""
    _need("nvrtc")
    from pytest_anatomy.kernels import sgemm

    v = next(x for x in LADDERS["sgemm"] if x.id == "s14-bf16-wgmma-tma")
    (call,) = v.calls(TIMING_SHAPES["sgemm"], DeviceFacts(132))
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    assert use.shared_bytes == 0 and call.launch.shmem == sgemm.S14_SMEM_BYTES, (use, call.launch)
    assert (use.stack_bytes, use.spill_store_bytes, use.spill_load_bytes) == (0, 0, 0), use
    occ = occupancy(use.registers, call.launch.shmem, call.launch.threads_per_block, "sm_90")
    assert occ.value * call.launch.threads_per_block // 32 == v.theory.warps_per_sm, occ


def test_s13_loop_is_its_headers_one_barrier_ring():
    """s13's compiled K loop (N % 4 == 0 side) under the device's compiler: 1,272 instructions per k-tile, 1,024 FFMA
    (share 0.8050), 7 of them spill loads, one barrier (s9: two), cp.async only; its header priced nvcc's 1,246 (share
    0.8218, kept: a pre-registration is not edited). ptxas's 49,152 bytes of static shared memory (three stages, A
    unpadded)."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    from pytest_anatomy.kernels import sgemm

    v = next(x for x in LADDERS["sgemm"] if x.id == "s13-fp32-multistage")
    (call,) = v.calls(TIMING_SHAPES["sgemm"], DeviceFacts(132))
    (loop,) = [lp for lp in kc.loop_bodies(call.source, "sm_90", sgemm.S13_TILE_LOOP_SIDE)[call.kernel] if lp.get("FFMA")]
    local = sum(n for op, n in loop.items() if op.startswith(("LDL", "STL")))
    assert (loop["FFMA"], sum(loop.values()), local, loop.get("BAR")) == (*nvrtc_facts.RUNG_LOOPS[v.id], 1), loop
    assert nvrtc_facts.share(nvrtc_facts.RUNG_LOOPS[v.id]) == pytest.approx(0.8050, abs=5e-5)
    assert v.theory.ffma_share == 0.8218  # the header's nvcc share, which its prediction divided by
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    assert use.shared_bytes == 3 * 16 * (128 + 128) * 4 and use.registers <= 128, use
