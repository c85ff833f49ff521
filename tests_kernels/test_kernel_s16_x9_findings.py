"""kernel_s16_x9_findings against the recordings, the headers and the compilers: every time its reasons quote is the
20:21 / 20:22 run's (read here through pytest_anatomy.recordings), every counter the 20:38 profile's, s16's band is
s9's earlier sessions x the profile's s16 / s9 cycles (never a time of the judged run), x9's band is two outcomes its
header wrote before the run, and the compiled facts the reasons cite are the device's (its batch) and this checkout's
compiler's."""

from __future__ import annotations

from pathlib import Path

import kernel_findings as kf
import kernel_findings_shared as kfs
import kernel_s16_x9_findings as kx
import pytest
import rung_checks

from pytest_anatomy import recordings
from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import fused, sgemm
from pytest_anatomy.kernels.registry import header_of
from pytest_anatomy.specs.hardware import get_hardware

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _at(name: str, when: str, key: str = "time") -> float:
    return rung_checks.run_value(name, when, key) * 1e3  # ms


def _profiled() -> None:
    if not (kx.S16_NCU and kx.S9_NCU and kx.X9_NCU and kx.X6_NCU):
        pytest.skip(f"the {kx.PROFILE} profile is not in this checkout")


@pytest.mark.parametrize("label", kx.SHAPES)
def test_s16_reason_quotes_the_run_and_its_band_reads_other_runs(label: str) -> None:
    fid, reason, band = kf.BANDED["preregistered"][f"{kx.S16}-{label}"]
    assert fid == kx.S16_FID and fid in kf.NOT_STRICT
    for name, key in ((f"sgemm.{kx.S16}.{label}", "time"), (f"sgemm.{kx.S16}.{label}", "time_repeat"),
                      (f"sgemm.s9-cp-async-pipeline.{label}", "time")):
        assert f"{_at(name, kx.RUN_S16, key):.4f}" in reason, (name, key)
    assert kf.BANDED_FROM_KEYS[("preregistered", f"{kx.S16}-{label}")] == "other-runs"
    # the band: s9's sessions before the judged run (none of them the judged run) x the profile's cycles ratio
    before = kx.s9_sessions_before(label)
    assert len(before) >= 30
    blocks, pre = kfs.spread_terms()["timing_blocks_both_runs"], sgemm.S16_PREREGISTERED[label]
    assert band == (round(min(before) * kx.PROFILE_RATIO * (1 - blocks) / pre, 4),
                    round(max(before) * kx.PROFILE_RATIO * (1 + blocks) / pre, 4))
    assert band[0] > 1.0  # the pre-registration itself lies outside: s16 agreeing would leave the band


def test_s9_sessions_before_exclude_the_judged_run() -> None:
    stamps = sorted(p.name.split("@")[1] for p in kx.RESULTS.glob(f"sgemm.{kx.S9}.{kx.SQUARE}@*.json"))
    earlier = [s for s in stamps if s[:16] < recordings.stamp_of(kx.RUN_S16)[:16]]
    assert len(kx.s9_sessions_before(kx.SQUARE)) == len(earlier) < len(stamps)


def test_s16_counters_are_the_profiles() -> None:
    _profiled()
    _, reason, _ = kf.BANDED["preregistered"][f"{kx.S16}-{kx.SQUARE}"]
    s16, s9 = kx.S16_NCU, kx.S9_NCU
    assert (s16["Registers Per Thread"], s16["Local Memory Spilling Requests"]) == (128, 23_158_784)
    assert (s9["Local Memory Spilling Requests"], s16["Shared Memory Configuration Size"],
            s9["Shared Memory Configuration Size"]) == (0, 135_168, 135_168)
    assert (s16["Warp Cycles Per Issued Instruction"], s9["Warp Cycles Per Issued Instruction"]) == (5.0, 4.72)
    c = kx.s16_counters()
    # 1,024 blocks x 8 warps x 128 k-tiles: the device loop's 19 LDL + 3 STL per k-tile, counted
    assert round(c["spill_per_ktile"]) == kx.S16_DEVICE_LDL + kx.S16_DEVICE_STL
    assert 0.96 < c["instr_ratio"] < 0.98 and round(c["priced_ratio"], 3) == 0.960
    assert round(kx.PROFILE_RATIO, 4) == 1.0409 and kx.not_selected_cycles(f"sgemm.{kx.S16}.{kx.SQUARE}") == 2.3
    for text in ("23,158,784", "22.09 per warp per k-tile", "5.00 warp cycles per issue against s9's 4.72",
                 "0.71% to 32.65%", "(1) the 128-register cap", "(4) the L1 carve-out: not supported"):
        assert text in reason, text


def test_x9_reason_quotes_the_run_and_its_band_is_the_headers_alternatives() -> None:
    fid, reason, band = kf.BANDED["preregistered"][f"{kx.X9}-{kx.VOCAB}"]
    assert fid == kx.X9_FID and fid not in kf.NOT_STRICT
    for name, key in ((f"softmax.{kx.X9}.{kx.VOCAB}", "time"), (f"softmax.{kx.X9}.{kx.VOCAB}", "time_repeat"),
                      (f"softmax.{kx.X9}.{kx.SHORT}", "time"), (f"softmax.{kx.X6}.{kx.VOCAB}", "time"),
                      (f"softmax.x0-torch.{kx.VOCAB}", "time")):
        assert f"{_at(name, kx.RUN_X9, key):.4f}" in reason, (name, key)
    assert kx.X9_PREREG_MS == 0.042 and band == (round(46.42 / 42, 4), round((41.64 + 23.1) / 42, 4))
    assert kf.BANDED_FROM_KEYS[("preregistered", f"{kx.X9}-{kx.VOCAB}")] == "preregistered"
    vfid, vreason, vband = kf.BANDED["vocab_target"][kx.X9]
    units = kfs.READ_1109 / kx.VOCAB_BYTES * kx.X9_PREREG_MS * 1e-3
    assert (vfid, vreason) == (fid, reason) and vband == (round(units * band[0], 4), round(units * band[1], 4))
    assert kf.BANDED_FROM_KEYS[("vocab_target", kx.X9)] == "preregistered"


def test_x9_band_edges_are_written_in_its_header() -> None:
    """Both edges, and the per-wave prices the reason carries to 3 waves, are what the header wrote before the run."""
    h = header_of(next(v for v in fused.SOFTMAX if v.id == kx.X9).path)
    text = h["what_changes"] + " " + h["predicted_effect"]
    sms = get_hardware(kfs.MEASURED_ON).sm_count
    for written in (f"{kx.X9_FLOOR_US} us", f"= {kx.X9_WAVE_US} us per wave", f"{kx.X9_HEADLINE_US} us",
                    f"{kx.X9_FIXED_US} us", f"= {kx.X9_WORK_US} us", f"{kx.X9_SECOND_US} us",
                    f"{kx.X9_LONE_WAVE_US} us), ~0.065 ms", f"{kx.X9_HEADER_CLUSTERS} on {sms} SMs"):
        assert written in text, written


def test_x9_waves_are_the_profiles_clusters() -> None:
    _profiled()
    _, reason, _ = kf.BANDED["preregistered"][f"{kx.X9}-{kx.VOCAB}"]
    counts = [kx.active_clusters(m) for m in (kx.X9_NCU, kx.X6_NCU, kx.X7_NCU, kx.X8_NCU)]
    assert counts == [62, 30, 15, 15] and kx.x9_waves() == 3
    assert (kx.x9_model_us(kx.X9_WAVE_US, 3), kx.x9_model_us(kx.X9_FIXED_US + kx.X9_WORK_US, 3)) == (44.22, 51.39)
    assert "Max Active Clusters 62" in reason and "3 waves (62, 62, 4)" in reason
    # x7's and x8's reasons carry the profile's count: their grid (14) is co-resident
    for table, key in (("preregistered", f"x7-pipelined-{kx.VOCAB}"), ("vocab_target", "x8-tma-ring")):
        assert "Max Active Clusters 15 for x7's and 15 for x8's launch" in kf.BANDED[table][key][1]


def test_device_compile_facts_are_the_batch_s() -> None:
    s16 = kx.device_resources(kx.S16_SOURCE, kx.S16_KERNEL)
    x9 = kx.device_resources(kx.X9_SOURCE, kx.X9_KERNEL)
    if s16.registers < 0 or x9.registers < 0:
        pytest.skip(f"{kx.BATCH_S16} is not in this checkout")
    assert (s16.registers, s16.stack_bytes, s16.spill_store_bytes, s16.spill_load_bytes) == (128, 96, 248, 296)
    assert (x9.registers, x9.spill_store_bytes, x9.spill_load_bytes) == (64, 0, 0)


def _main_loop(loops: list[dict[str, int]]) -> dict[str, int]:
    """test_kernels_s16's choice: the shortest FFMA loop with 20 LDGSTS (whole k-tiles, N % 4 == 0)."""
    return min((lp for lp in loops if lp.get("FFMA") and lp.get("LDGSTS") == 20), key=lambda lp: sum(lp.values()))


def test_s16_k_loop_on_the_device_and_here(tmp_path: Path) -> None:
    """The loop the reason quotes: the device's cubin (the run's cubins.tar.xz) with its spill, and this checkout's
    compile with the device's NVRTC, the same loop and spill (the reason's nvcc count without one, 2,311, is history:
    the checks here compiled with nvcc until 2026-12-04 21:50)."""
    cubin = kx.device_compile(kx.BATCH_S16, kx.S16_SOURCE).get("cubin", "")  # "": no batch here, skipped below
    loops = rung_checks.device_cubin_loops(kx.BATCH_S16 / "cubins.tar.xz", cubin, tmp_path)
    device = _main_loop(loops[kx.S16_KERNEL])
    ldl = sum(n for op, n in device.items() if op.startswith("LDL"))
    stl = sum(n for op, n in device.items() if op.startswith("STL"))
    assert (sum(device.values()), device["FFMA"], ldl, stl) == (
        kx.S16_DEVICE_LOOP, kx.S16_LOOP_FFMA, kx.S16_DEVICE_LDL, kx.S16_DEVICE_STL)
    assert device == _main_loop(kc.loop_bodies(kx.S16_SOURCE, "sm_90")[kx.S16_KERNEL])
