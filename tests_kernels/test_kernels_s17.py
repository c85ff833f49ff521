"""Rung s17 (issue 17's fp32 target): s16's 32-deep k-tile without the spill the device's NVRTC 13.0.88 gave s16.

On the CPU: its pre-registered times and both alternatives are s16's method at the device's compiled shares (s9's time
split into an issue part and a per-k-tile part by two of its tuner's recordings, priced at s17's compiled share and
depth; the alternatives read the same recordings and the 20:38 profile's paces), recomputed, never typed in; ptxas's
resources under the device's compiler give 128 registers, no spill and the 16 warps per SM; its main K loop has no
guard, no local memory and the header's counts; it computes the right answer in the emulator across block edges,
ragged last k-tiles, 32 rows and N % 4 != 0, where its unguarded copies read clamped rows and columns; the device plan's
--rungs selects it beside s9 and cuBLAS fp32. Its measured times are reconciled by test_kernels_ladders (the
pre-registered-time tests), like every rung's.
"""

from __future__ import annotations


from pathlib import Path

import pytest

import rung_checks as rc

from pytest_anatomy import recordings
from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import nvrtc_facts, sgemm
from pytest_anatomy.kernels.registry import PREREGISTERED_ON, DeviceFacts
from pytest_anatomy.theory.kernel_occupancy import occupancy

ROOT = Path(__file__).resolve().parents[1]
RUNG = "s17-fp32-ktile32-lean"
PACE = "Warp Cycles Per Issued Instruction"
# Block edges in M and N (rows and columns past them read clamped), K below one k-tile, ragged last k-tiles after the
# main loop (K % 32 != 0), N % 4 != 0 (every k-tile guarded), 32 rows (96 clamped rows per block), and a block whose
# last rows and columns are clamped while its main loop runs.
EDGE_SHAPES = ({"M": 150, "N": 260, "K": 100}, {"M": 129, "N": 131, "K": 33}, {"M": 32, "N": 260, "K": 64},
               {"M": 200, "N": 256, "K": 7}, {"M": 130, "N": 132, "K": 96})
SHARE_SPLIT = sgemm.S16_TILE_COST_PAIR  # s9's kernel at 8- and 16-deep k-tiles, the run s16's prediction named


def _rung():
    return next(v for v in sgemm.LADDER if v.id == RUNG)


def _device_share(candidate: str) -> float:
    """The candidate's compiled FFMA share under the device's NVRTC (test_kernels_autotune checks the loop)."""
    return nvrtc_facts.share(nvrtc_facts.TILE_LOOPS[candidate])


def _split(label: str) -> tuple[float, float]:
    """s9's time at `label` as X / share + S x 16 / bk at the shares the device compiled: (X, S) in ms."""
    return rc.tile_cost_split(label, _device_share)


def _pace(rung: str) -> float:
    """A rung's warp cycles per issued instruction at 4096^3 in the profile s17's alternative (a) names."""
    name = f"ncu.sgemm.{rung}.4096x4096x4096"
    paths = [p for p in recordings.candidates(ROOT / "results", PREREGISTERED_ON, "kernels", name)
             if f"@{sgemm.S17_PACE_NCU_STAMP}." in p.name]
    assert paths, f"{name}@{sgemm.S17_PACE_NCU_STAMP} is gone: recordings are never deleted"
    return float(recordings.load_file(paths[0]).data["kernels"][-1]["metrics"][PACE])


@pytest.mark.parametrize("label", list(sgemm.S17_PREREGISTERED))
def test_preregistered_times_are_s9s_split_at_s17s_share_and_depth(label):
    """X / 0.9176 + S / 2, with X and S solved at the device's shares of s9's kernel (0.8218, 0.8498): the header's
    numbers, to the digit written, and the registry's; the split is physical (both parts positive)."""
    x, stall = _split(label)
    assert x > 0 and stall > 0, f"{label}: X {x:.4f} ms, S {stall:.4f} ms"
    assert x / sgemm.S17_FFMA_SHARE + stall / 2 == pytest.approx(sgemm.S17_PREREGISTERED[label], abs=0.0005)
    assert dict(_rung().h200_ms)[label] == sgemm.S17_PREREGISTERED[label]


def test_split_at_the_device_shares_is_the_headers():
    """The header's X and S at 4096^3 (2.585 and 0.103 ms), and the same split at s16's device share: 3.089 ms, where
    s16 ran 3.266 ms with its spill."""
    x, stall = _split("4096x4096x4096")
    assert (round(x, 3), round(stall, 3)) == (2.585, 0.103)
    s16_share = nvrtc_facts.share(nvrtc_facts.RUNG_LOOPS["s16-fp32-ktile32"])
    assert x / s16_share + stall / 2 == pytest.approx(3.089, abs=0.0005)


@pytest.mark.parametrize("label", list(sgemm.S17_ALT_INSTRUCTIONS))
def test_alternative_instructions_only_is_the_split_without_the_stall_gain(label):
    """(b): X / 0.9176 + S, the k-tile's stall part not halved."""
    x, stall = _split(label)
    assert x / sgemm.S17_FFMA_SHARE + stall == pytest.approx(sgemm.S17_ALT_INSTRUCTIONS[label], abs=0.0005)


@pytest.mark.parametrize("label", list(sgemm.S17_ALT_S16_PACE))
def test_alternative_s16_pace_is_s9s_time_at_s17s_instructions_and_s16s_pace(label):
    """(a): s9's time in the tuner run x s9's / s17's compiled share (0.926) x s16's / s9's warp cycles per issue in
    the 20:38 profile (5.00 / 4.72)."""
    ratio = _device_share(SHARE_SPLIT[1]) / sgemm.S17_FFMA_SHARE
    pace = _pace("s16-fp32-ktile32") / _pace("s9-cp-async-pipeline")
    assert (round(ratio, 3), round(pace, 4)) == (0.926, 1.0593)
    got = rc.tile_cost_ms(SHARE_SPLIT[1], label) * ratio * pace
    assert got == pytest.approx(sgemm.S17_ALT_S16_PACE[label], abs=0.0005)


def test_outcomes_are_ordered_and_the_target_is_between_them():
    """At 4096^3 the prediction and (b) meet 90% of the tuner run's cuBLAS fp32, (a) does not, and all three are under
    s9's own time in that run (above it is the finding the header names)."""
    sq = "4096x4096x4096"
    cublas = float(recordings.load_file(next(
        p for p in recordings.candidates(ROOT / "results", PREREGISTERED_ON, "kernels", f"sgemm.{SHARE_SPLIT[1]}.{sq}")
        if f"@{sgemm.S16_TILE_COST_RUN}." in p.name)).data["baseline_ms_median"])
    target = cublas / sgemm.AUTOTUNE_TARGETS[sq]
    pre, a, b = sgemm.S17_PREREGISTERED[sq], sgemm.S17_ALT_S16_PACE[sq], sgemm.S17_ALT_INSTRUCTIONS[sq]
    assert pre < b < target < a < rc.tile_cost_ms(SHARE_SPLIT[1], sq)


def test_launch_is_s16s_grid_and_window():
    rc.assert_ktile32_window_launch(_rung())


_need = rc.need_tools  # skips, naming the tool, where it is absent


def test_resources_under_the_devices_compiler_keep_sixteen_warps_without_a_spill():
    """ptxas of NVRTC 13.0.88 (the device's): no stack frame, no spill, 128 registers, no static shared memory (both
    stages are the dynamic window): two 256-thread blocks = 16 warps per SM, with the 66,560-byte window counted."""
    _need("nvrtc")
    assert kc.nvrtc_version() == nvrtc_facts.DEVICE_NVRTC
    v = _rung()
    (call,) = v.calls(sgemm.TIMING_SHAPE, DeviceFacts(132))
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    assert (use.stack_bytes, use.spill_store_bytes, use.spill_load_bytes) == (0, 0, 0), use
    assert use.registers <= 128 and use.shared_bytes == 0, use
    occ = occupancy(use.registers, use.shared_bytes + call.launch.shmem, call.launch.threads_per_block, "sm_90")
    assert occ.value * call.launch.threads_per_block // 32 == v.theory.warps_per_sm == 16, occ


def test_main_k_loop_is_the_headers():
    """The main K loop (whole k-tiles, N % 4 == 0; the ragged and odd-N k-tiles are loops of their own) under the
    device's NVRTC: 2,232 instructions per 32-deep k-tile, 2,048 FFMA (share 0.9176, the ledger's), 128 LDS.128,
    20 LDGSTS (16 A, 4 B), two barriers, 29 integer, predicate and branch instructions; no SEL or ISETP (no guard),
    no local memory, no global load but cp.async anywhere."""
    _need("nvrtc", "cuobjdump", "nvdisasm")
    (call,) = _rung().calls(sgemm.TIMING_SHAPE, DeviceFacts(132))
    loops = [lp for lp in kc.loop_bodies(call.source, "sm_90")[call.kernel] if lp.get("FFMA")]
    (main,) = [lp for lp in loops if lp.get("LDGSTS") == 20]
    got = (main["FFMA"], sum(main.values()), main.get("LDS.128"), main.get("BAR"))
    assert got == (2048, 2232, 128, 2), main
    memory = ("FFMA", "LDS.128", "LDS.32", "LDGSTS", "BAR", "DEPBAR", "LDGDEPBAR")
    assert sum(n for op, n in main.items() if op not in memory) == 29, main
    assert not main.get("SEL") and not main.get("ISETP"), main
    assert main["FFMA"] / sum(main.values()) == pytest.approx(sgemm.S17_FFMA_SHARE, abs=5e-5)
    assert _rung().theory.ffma_share == sgemm.S17_FFMA_SHARE
    for lp in loops:
        assert not any(k.startswith(("LDG.", "LDL", "STL")) for k in lp), lp


def test_main_loop_copies_use_immediate_offsets():
    """The source states each main-loop copy's offsets as immediates of its cp.async (the "n" operands), the change
    that leaves s16's per-copy offset registers out of the loop."""
    from pytest_anatomy.kernels.registry import CUDA_DIR

    text = (CUDA_DIR / sgemm.S17_SOURCE).read_text(encoding="utf-8")
    assert 'cp.async.ca.shared.global [%0+%2], [%1+%3], 4;' in text
    assert 'cp.async.cg.shared.global [%0+%2], [%1], 16;' in text


def test_matches_float64_across_block_and_k_tile_edges():
    rc.assert_matches_float64(_rung(), "sgemm", EDGE_SHAPES, 17)


def test_matches_float64_with_copies_landing_at_their_wait():
    """The prologue's copies of tile 0 are a commit group of their own, so the first wait (1 group pending) waits
    for them: found with this mode before any run (the prologue committed tile 0 with tile 1, and the first tile was
    multiplied before its copies landed), mended, the prediction unchanged (docs/RECORDING.md, s17's section)."""
    rc.assert_matches_float64(rc.with_defines(_rung(), ("S17_EMU_LATE_COPY", 1)), "sgemm", EDGE_SHAPES, 1718)


def test_matches_float64_at_the_plans_odd_shapes():
    """The device plan's first two correctness shapes (1000^3: a ragged last k-tile after 30 main-loop tiles, clamped
    rows and columns in the edge blocks; 4097 x 1000 x 129: one row past 32 blocks)."""
    rc.assert_matches_float64(_rung(), "sgemm", sgemm.CORRECTNESS_SHAPES[:2], 1717)


def test_device_plan_times_it_beside_s9_and_cublas():
    """kernels_plan.py --rungs s17,s9 --no-autotune (dry run): s17 and s9 checked and timed beside cuBLAS fp32 at
    every sgemm shape, no tuner family, nothing else."""
    text = rc.plan_dry_run("--ladders", "sgemm", "--rungs", f"{RUNG},s9-cp-async-pipeline", "--no-autotune")
    rungs = {line.split()[1] for line in text.splitlines() if line.startswith("sgemm")}
    assert rungs == {RUNG, "s9-cp-async-pipeline", "s0-cublas"}, text
    assert "sgemm_fp32_ktile32_lean<<<(32, 32, 1),(256, 1, 1)>>>" in text
    assert "autotune" not in text
