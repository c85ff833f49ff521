"""Rung s15 (issue 17's fp32 target): cuBLAS fp32's regime (8 x 16 outputs per thread, one 8-warp block per SM) on
s9's two-stage cp.async pipeline.

On the CPU: its pre-registered times are the issue ledger's at cuBLAS fp32's recorded pace (recomputed from the
recording, never typed in); its compiled K loop and ptxas resources are what its header prices; it computes the
right answer in the emulator across block edges in both dimensions, at 32 rows and with N % 4 != 0; the device
plan's --rungs selects it beside s9 and cuBLAS fp32. Its measured times are reconciled by test_kernels_ladders (the
ladder's pre-registered-time tests), like every rung's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import rung_checks as rc

from pytest_anatomy import recordings
from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import nvrtc_facts, sgemm
from pytest_anatomy.kernels.registry import PREREGISTERED_ON, DeviceFacts, shape_label
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory.kernel_issue import counted_pace, issue_time
from pytest_anatomy.theory.kernel_occupancy import occupancy

ROOT = Path(__file__).resolve().parents[1]
RUNG = "s15-fp32-thread-tile-8x16"
PACE = "Warp Cycles Per Issued Instruction"
# Block edges in M and N (two 256-column tiles, N % 4 == 0 and != 0), K not a multiple of the 8-deep k-tile, and
# the FFN decode shape's 32 rows (96 of the tile's 128 rows zero-filled, never stored).
EDGE_SHAPES = ({"M": 150, "N": 300, "K": 44}, {"M": 129, "N": 513, "K": 17}, {"M": 32, "N": 260, "K": 40})


def _rung():
    return next(v for v in sgemm.LADDER if v.id == RUNG)


def _counted_pace() -> float:
    """cuBLAS fp32's warp cycles per issued instruction in the profile s15's prediction names (never a newer one)."""
    name = f"ncu.sgemm.{sgemm.S15_PACE_FIT}.{shape_label(sgemm.TIMING_SHAPE)}"
    paths = [p for p in recordings.candidates(ROOT / "results", PREREGISTERED_ON, "kernels", name)
             if f"@{sgemm.S15_PACE_NCU_STAMP}." in p.name]
    assert paths, f"{name}@{sgemm.S15_PACE_NCU_STAMP} is gone: recordings are never deleted"
    return float(recordings.load_file(paths[0]).data["kernels"][0]["metrics"][PACE])


@pytest.mark.parametrize("label", list(sgemm.S15_PREREGISTERED))
def test_preregistered_times_are_the_ledger_at_cublas_pace(label):
    """issue_time at cuBLAS fp32's counted pace, s15's warps per SM, compiled FFMA share and 128 x 256 block tile,
    on the card the pre-registration names at its boost clock: the header's numbers, to the digit written."""
    v, spec = _rung(), get_hardware(PREREGISTERED_ON)
    m, n, k = (int(x) for x in label.split("x"))
    pred = issue_time(counted_pace(sgemm.S15_PACE_FIT, _counted_pace()), ilp=v.theory.accumulators,
                      warps_per_sm=v.theory.warps_per_sm, ffma_share=v.theory.ffma_share, m=m, n=n, k=k,
                      sm_count=spec.sm_count, clock_hz=spec.boost_clock_hz, rung=v.id,
                      block_tile=sgemm.BLOCK_TILES[v.id])
    assert pred.value * 1e3 == pytest.approx(sgemm.S15_PREREGISTERED[label], abs=0.0005), \
        f"{label}: the ledger now gives {pred.value * 1e3:.4f} ms, pre-registered {sgemm.S15_PREREGISTERED[label]}"
    assert dict(v.h200_ms)[label] == sgemm.S15_PREREGISTERED[label]


def test_counted_pace_has_no_latency_term():
    fit = counted_pace("a kernel", 2.5)
    assert fit.cycles_per_issue(1) == fit.cycles_per_issue(128) == 2.5
    with pytest.raises(ValueError, match="positive"):
        counted_pace("a kernel", 0.0)


def test_ledger_counts_the_launch_s_block_tile():
    """The block tile the ledger counts whole on the busiest SM is the one the launch uses."""
    (call,) = _rung().calls(sgemm.TIMING_SHAPE, DeviceFacts(132))
    bm, bn, _ = sgemm.BLOCK_TILES[RUNG]
    assert call.launch.grid == (4096 // bn, 4096 // bm, 1) and call.launch.block == (256, 1, 1)


_need = rc.need_tools  # skips, naming the tool, where it is absent


def test_loop_and_resources_are_the_headers():
    """The compiled K loop (N % 4 == 0 side) under the device's NVRTC: 1,166 instructions per k-tile (the header's
    nvcc count: 1,163, the share 0.8805 its ledger divided by, kept), 1,024 FFMA, 48 LDS.128, 6 LDGSTS, two
    barriers. ptxas: no spill or stack, 24,832 bytes of static
    shared memory (two stages of As[8][132] and Bs[8][256]), one 256-thread block = the 8 warps per SM it counts."""
    _need("nvrtc", "cuobjdump", "nvdisasm")
    v = _rung()
    (call,) = v.calls(sgemm.TIMING_SHAPE, DeviceFacts(132))
    side = (("const bool vec = (N % 4) == 0;", "const bool vec = true;"),)
    (loop,) = [lp for lp in kc.loop_bodies(call.source, "sm_90", side)[call.kernel] if lp.get("FFMA")]
    got = (loop["FFMA"], sum(loop.values()), loop.get("LDS.128"), loop.get("LDGSTS"), loop.get("BAR"))
    assert got == (*nvrtc_facts.RUNG_LOOPS[RUNG][:2], 48, 6, 2), loop
    assert nvrtc_facts.RUNG_LOOPS[RUNG][2] == 0 and v.theory.ffma_share == 0.8805
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    assert (use.stack_bytes, use.spill_store_bytes, use.spill_load_bytes) == (0, 0, 0), use
    assert use.shared_bytes == 2 * 8 * (128 + 4 + 256) * 4 and use.registers <= 255, use
    occ = occupancy(use.registers, use.shared_bytes, call.launch.threads_per_block, "sm_90")
    assert occ.value * call.launch.threads_per_block // 32 == v.theory.warps_per_sm == 8, occ


def test_matches_float64_across_block_edges():
    rc.assert_matches_float64(_rung(), "sgemm", EDGE_SHAPES, 15)


def test_device_plan_times_it_beside_s9_and_cublas():
    """kernels_plan.py --rungs s15,s9 --no-autotune (dry run): s15 and s9 checked and timed beside cuBLAS fp32 at
    every sgemm shape, no tuner family, nothing else."""
    text = rc.plan_dry_run("--ladders", "sgemm", "--rungs", f"{RUNG},s9-cp-async-pipeline", "--no-autotune")
    rungs = {line.split()[1] for line in text.splitlines() if line.startswith("sgemm")}
    assert rungs == {RUNG, "s9-cp-async-pipeline", "s0-cublas"}, text
    assert "sgemm_fp32_thread_tile_8x16<<<(16, 32, 1),(256, 1, 1)>>>" in text
    assert "autotune" not in text
