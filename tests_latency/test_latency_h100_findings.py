"""latency_h100_findings' quoted inputs: the H100's read ceiling is its first session's recording, the H200's is the one
the H200 finding it re-prices quotes, and the overhead band is the mechanism's arithmetic."""

from __future__ import annotations

from pathlib import Path

import latency_findings as lf
import latency_h100_findings as h100f
import pytest

from pytest_anatomy import recordings

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_the_read_ratio_is_the_two_quoted_ceilings() -> None:
    try:
        ceil = recordings.load_latest(RESULTS, h100f.H100, "ceilings", "ceilings", stamp="2026-12-02T18:32:19.000000Z")
    except recordings.MissingRecording:
        pytest.skip("the first H100 session's ceilings are not in this checkout")
    assert round(ceil["read_bandwidth.value"].value / 1e12, 3) == 3.105
    assert "at 4.47 TB/s" in lf.MIXED_REASON  # the H200 finding's own figure, which the ratio re-prices
    assert h100f.READ_RATIO == pytest.approx(4.47 / 3.105)


def test_the_overhead_band_is_the_roofline_plus_the_recorded_overheads() -> None:
    lo, hi = h100f.overhead_band(4.575e-3, [1.36e-3, 1.55e-3])
    assert lo == pytest.approx((1 + 1.36 / 4.575) * 0.975) and hi == pytest.approx((1 + 1.55 / 4.575) * 1.025)
