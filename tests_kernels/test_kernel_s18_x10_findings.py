"""kernel_s18_x10_findings against the recordings: x10's band is the probe's run (parsed from x10_probe.log) and never
the judged one; the profile's numbers and (b)'s arithmetic the reason quotes; s18's band is its header's headline and
alternative (a), and its clock pricing is the header's issue part at the recorded clocks."""

from __future__ import annotations

import json

import kernel_findings as kf
import kernel_findings_shared as kfs
import kernel_s18_x10_findings as fx
import pytest

from pytest_anatomy.kernels import small_m
from pytest_anatomy.kernels.registry import header_of
from pytest_anatomy.kernels.ladders import variant


def _rec(name: str, stamp: str) -> dict:
    path = fx.RESULTS / f"{name}@{stamp}.json"
    if not path.exists():
        pytest.skip(f"{path.name} is not in this checkout")
    return json.loads(path.read_text())


def test_the_probe_log_is_another_run_and_its_repeat_launches_were_correct() -> None:
    pr = fx.probe()
    assert pr["done"] and pr["times"][("x10", 5)] == 0.0746 and pr["times"][("x10", 30)] == 0.0761
    assert pr["counters"] and all(a == b == c and c % fx.TILES == 0 for a, b, c in pr["counters"])
    judged = _rec(f"softmax.{fx.X10}.{fx.VOCAB}", "20261205T035220Z")["measurements"]
    assert judged["time"]["value"] * 1e3 not in pr["times"].values()  # a separate process's medians, not the plan's


def test_x10s_band_reads_the_probe_never_the_judged_run() -> None:
    blocks = kfs.spread_terms()["timing_blocks_both_runs"]
    t = fx.probe_x10_ms()
    assert fx.x10_band(blocks) == (round(min(t) * (1 - blocks) / fx.X10_PREREG_MS, 4),
                                   round(max(t) * (1 + blocks) / fx.X10_PREREG_MS, 4))
    lo, hi = fx.x10_band(blocks)
    assert lo < fx.X10_MS / fx.X10_PREREG_MS < hi
    fid, reason, band = kf.BANDED["preregistered"][f"{fx.X10}-{fx.VOCAB}"]
    assert fid == fx.X10_FID and band == (lo, hi) and f"({lo}-{hi}x)" in reason
    assert kf.BANDED_FROM_KEYS[("preregistered", f"{fx.X10}-{fx.VOCAB}")] == "other-runs"


def test_x10s_reason_quotes_the_profile_and_bs_arithmetic() -> None:
    m = _rec(f"ncu.softmax.{fx.X10}.{fx.VOCAB}", fx.PROFILE)["data"]["kernels"][-1]["metrics"]
    reason = fx.x10_reason(kfs.spread_terms()["timing_blocks_both_runs"])
    assert f"DRAM reads {m['dram__bytes_read.sum'] / 1e6:.1f} MB" in reason
    assert f"L2 traffic {m['lts__t_bytes.sum'] / 1e6:.1f} MB" in reason
    assert f"{m['Warp Cycles Per Issued Instruction']:.2f} warp cycles per issue of which 14.5 (64.7%)" in reason
    # (b)'s example as the header wrote it: 8 chains of (0.58 + 3 x 2 us) + F = 54.2 us
    assert round(8 * (fx.X10_STEP_US + fx.X10_ROUND_TRIPS * 2.0) + fx.X10_FIXED_US, 1) == fx.X10_ALT_B_US
    us = fx.X10_MS * 1e3
    assert fx.chain_us(us) == pytest.approx((us - 1.52) / 8) and fx.round_trip_us(us) > 2.0 > fx.X10_ALT_B_THRESHOLD_US
    assert f"chain of {fx.chain_us(us):.1f} us per tile, {fx.round_trip_us(us):.1f} us per round trip" in reason
    assert "not reproduced and its cause is not established" in reason


def test_s18s_band_is_its_headers_headline_to_outcome_a() -> None:
    assert fx.s18_band() == (1.0, round(small_m.S18_ALT_UNHIDDEN[fx.SMALL] / small_m.S18_PREREGISTERED[fx.SMALL], 4))
    lo, hi = fx.s18_band()
    assert all(lo < t / fx.S18_PREREG_MS < hi for t in fx.S18_MS.values())
    assert kf.BANDED_FROM_KEYS[("preregistered", f"{fx.S18}-{fx.SMALL}")] == "preregistered"
    assert fx.S18_FID in kf.NOT_STRICT  # its lower edge lies inside the noise budget


def test_s18s_clock_pricing_is_the_headers_issue_part_at_the_recorded_clocks() -> None:
    assert round(fx.s18_issue_us(), 1) == 92.8  # the header's issue part
    clocks = _rec(f"sgemm.{fx.S18}.{fx.SMALL}", "20261205T035327Z")["data"]["clocks"]["time"]
    at = fx.s18_at_clock_ms(clocks["sm_mhz_min"])
    assert at == pytest.approx(0.1053 + 92.8e-3 * (1980 / clocks["sm_mhz_min"] - 1), abs=1e-4)
    assert f"at the NVML's {clocks['sm_mhz_min']} MHz: {at:.4f} ms" in fx.s18_reason()
    assert "no profile of s18 at 32 rows exists" in fx.s18_reason()


@pytest.mark.parametrize("rung", [fx.X10, fx.S18])
def test_the_headers_measured_outcome_quotes_this_run(rung: str) -> None:
    v = variant("softmax", rung) if rung == fx.X10 else variant("sgemm", rung)
    outcome = header_of(v.path)["measured_outcome"]
    assert "20261205T035220Z" in outcome if rung == fx.X10 else "20261205T035327Z" in outcome
    assert (fx.X10_FID if rung == fx.X10 else fx.S18_FID) in outcome
