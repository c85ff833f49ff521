"""kernel_h100_findings' quoted numbers are its recordings': the times its reasons quote (the first H100 session's
and the H200's tenth visit's), and the two read ceilings its bands are scaled by."""

from __future__ import annotations

import math

import kernel_h100_findings as h100
import pytest

from pytest_anatomy import recordings

H100_SESSION = "2026-12-02T18:37:"  # the first H100 session's kernel recordings (its live ledger 20261202T182700Z)
H200_TENTH = "2026-12-02T16:3"  # the H200's tenth visit


def _time(hardware: str, name: str, prefix: str) -> float:
    recs = [recordings.load_file(p) for p in recordings.candidates(h100.RESULTS, hardware, "kernels", name)]
    found = [r for r in recs if r.recorded_at.startswith(prefix)]
    if not found:
        pytest.skip(f"results/{hardware}/kernels/{name}@{prefix}* is not in this checkout")
    return found[0]["time"].value


def test_the_quoted_times_are_the_recorded_ones() -> None:
    s2 = "sgemm.s2-coalesced.4096x4096x4096"
    assert "23.5 ms on the H100" in h100.BYTE_LEDGER_WHY and round(_time(h100.H100, s2, H100_SESSION) * 1e3, 1) == 23.5
    assert "23.9 ms on the H200" in h100.BYTE_LEDGER_WHY and round(_time(h100.H200, s2, H200_TENTH) * 1e3, 1) == 23.9
    x4 = "softmax.x4-vectorized.8192x2048"
    assert round(_time(h100.H100, x4, H100_SESSION) * 1e6, 1) == 50.1
    assert round(_time(h100.H200, x4, H200_TENTH) * 1e6, 1) == 45.3
    assert "(50.1 us against 45.3 us" in h100.SHORT_ROWS_WHY


def test_the_ceiling_scale_is_the_two_recorded_ceilings() -> None:
    k = h100.ceiling_scale()
    if math.isnan(k):
        pytest.skip("a ceilings recording the scale reads is not in this checkout")
    assert round(k, 2) == 1.43  # the reasons' "1.43x"
