"""Rung s16 (issue 17's fp32 target): s9 with a 32-deep k-tile, its two stages in a dynamic shared-memory window.

On the CPU: its pre-registered times are s9's time split into an issue part and a per-k-tile part by two of its
tuner's recordings, priced at s16's compiled share and depth (recomputed, never typed in); ptxas's resources (the
device's NVRTC: 128 registers and a 96-byte spill, which nvcc did not show the header) give the 16 warps per SM it
keeps from s9; its main K loop is the device's, the spill's LDL and STL in it; it computes the right answer in the
emulator across
block edges, ragged last k-tiles, 32 rows and N % 4 != 0; the device plan's --rungs selects it beside s9 and cuBLAS
fp32. Its measured times are reconciled by test_kernels_ladders (the pre-registered-time tests), like every rung's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import rung_checks as rc

from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import nvrtc_facts, sgemm
from pytest_anatomy.kernels.registry import DeviceFacts
from pytest_anatomy.theory.kernel_occupancy import occupancy

ROOT = Path(__file__).resolve().parents[1]
RUNG = "s16-fp32-ktile32"
# Block edges in M and N, K below one k-tile, ragged last k-tiles (K % 32 != 0, K % 8 != 0), N % 4 != 0, 32 rows.
EDGE_SHAPES = ({"M": 150, "N": 260, "K": 100}, {"M": 129, "N": 131, "K": 33}, {"M": 32, "N": 260, "K": 64},
               {"M": 200, "N": 256, "K": 7})


def _rung():
    return next(v for v in sgemm.LADDER if v.id == RUNG)


def _share(tile_candidate: str) -> float:
    """A tuner candidate's compiled FFMA share, as its registry entry states it (test_kernels_autotune checks it)."""
    return next(c.theory.ffma_share for c in sgemm.S9_CANDIDATES if c.id == tile_candidate)


def _split(label: str) -> tuple[float, float]:
    """s9's time at `label` as X / share + S x 16 / bk at the registry's shares: (X, S) in ms."""
    return rc.tile_cost_split(label, _share)


@pytest.mark.parametrize("label", list(sgemm.S16_PREREGISTERED))
def test_preregistered_times_are_s9s_split_at_s16s_share_and_depth(label):
    """X / 0.8862 + S / 2: s9's issue part at s16's compiled share, its per-k-tile stall part over half the k-tiles.
    The header's numbers, to the digit written, and the registry's; the split is physical (both parts positive)."""
    x, stall = _split(label)
    assert x > 0 and stall > 0, f"{label}: X {x:.4f} ms, S {stall:.4f} ms"
    assert x / sgemm.S16_FFMA_SHARE + stall / 2 == pytest.approx(sgemm.S16_PREREGISTERED[label], abs=0.0005)
    assert dict(_rung().h200_ms)[label] == sgemm.S16_PREREGISTERED[label]


def test_alternative_outcome_is_the_split_without_the_stall_gain():
    """The header's alternative (a): only the instructions saved, X / 0.8862 + S: 3.023 ms at 4096^3, 5.908 ms at
    2,048 rows."""
    for label, ms in (("4096x4096x4096", 3.023), ("2048x18944x3584", 5.908)):
        x, stall = _split(label)
        assert x / sgemm.S16_FFMA_SHARE + stall == pytest.approx(ms, abs=0.0005), label


def test_launch_is_s9s_grid_with_the_dynamic_window():
    rc.assert_ktile32_window_launch(_rung())


_need = rc.need_tools  # skips, naming the tool, where it is absent


def test_resources_keep_s9s_sixteen_warps():
    """ptxas (the device's NVRTC): 128 registers with a 96-byte stack frame, 248 bytes of spill stores and 296 of
    loads (the header, from nvcc: no spill; finding h200-s16-device-spill-pace-below-s9), no static shared memory (both
    stages are the dynamic window): two 256-thread blocks = 16 warps per SM, s9's, with the 66,560-byte window."""
    _need("nvrtc")
    v = _rung()
    (call,) = v.calls(sgemm.TIMING_SHAPE, DeviceFacts(132))
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    assert (use.stack_bytes, use.spill_store_bytes, use.spill_load_bytes) == nvrtc_facts.SPILLS[RUNG], use
    assert use.registers <= 128 and use.shared_bytes == 0, use
    occ = occupancy(use.registers, use.shared_bytes + call.launch.shmem, call.launch.threads_per_block, "sm_90")
    assert occ.value * call.launch.threads_per_block // 32 == v.theory.warps_per_sm == 16, occ


def test_main_k_loop_is_the_devices():
    """The main K loop (whole k-tiles, N % 4 == 0; the ragged and odd-N paths are loops of their own) under the
    device's NVRTC: 2,407 instructions per 32-deep k-tile, 2,048 FFMA (share 0.8509; the header priced nvcc's 2,311,
    share 0.8862, kept), 19 LDL and 3 STL of the spill, 128 LDS.128 (4 per k, s9's rate), 20 LDGSTS (16 A, 4 B), two
    barriers; no global load but cp.async."""
    _need("nvrtc", "cuobjdump", "nvdisasm")
    (call,) = _rung().calls(sgemm.TIMING_SHAPE, DeviceFacts(132))
    loops = [lp for lp in kc.loop_bodies(call.source, "sm_90")[call.kernel] if lp.get("FFMA")]
    main = min((lp for lp in loops if lp.get("LDGSTS") == 20), key=lambda lp: sum(lp.values()))
    local = sum(n for op, n in main.items() if op.startswith(("LDL", "STL")))
    got = (main["FFMA"], sum(main.values()), local, main.get("LDS.128"), main.get("BAR"))
    assert got == (*nvrtc_facts.RUNG_LOOPS[RUNG], 128, 2), main
    assert _rung().theory.ffma_share == sgemm.S16_FFMA_SHARE == 0.8862
    for lp in loops:
        assert not any(k.startswith("LDG.") for k in lp), lp


def test_matches_float64_across_block_and_k_tile_edges():
    rc.assert_matches_float64(_rung(), "sgemm", EDGE_SHAPES, 16)


def test_device_plan_times_it_beside_s9_and_cublas():
    """kernels_plan.py --rungs s16,s9 --no-autotune (dry run): s16 and s9 checked and timed beside cuBLAS fp32 at
    every sgemm shape, no tuner family, nothing else."""
    text = rc.plan_dry_run("--ladders", "sgemm", "--rungs", f"{RUNG},s9-cp-async-pipeline", "--no-autotune")
    rungs = {line.split()[1] for line in text.splitlines() if line.startswith("sgemm")}
    assert rungs == {RUNG, "s9-cp-async-pipeline", "s0-cublas"}, text
    assert "sgemm_fp32_ktile32<<<(32, 32, 1),(256, 1, 1)>>>" in text
    assert "autotune" not in text
