"""flashattn_r8_sweep_findings: its pre-registered bands are the numbers test_flashattn_sweep.py's header wrote before
r8's sweep ran, its other-runs bands read no recording of the session they judge (2026-12-04 20:25-20:26), and every
reason found its recordings."""

from __future__ import annotations

import flashattn_r8_sweep_findings as r8s
import pytest
import test_flashattn_sweep as sweep

from pytest_anatomy.kernels.flashattn import registry

FAILED_IN_THE_SWEEP = 11  # the r8 cases outside the test's band before these findings (2026-12-04 20:25 session)


def _header() -> str:
    return " ".join((sweep.__doc__ or "").split())


def test_the_findings_cover_the_eleven_cases_outside_the_band() -> None:
    if len(r8s.BANDS) < FAILED_IN_THE_SWEEP:
        pytest.skip("the recordings the r8 other-runs bands read are not in this checkout")
    assert len(r8s.BANDS) == FAILED_IN_THE_SWEEP
    assert set(r8s.BANDS) <= {c.name for c in sweep.SWEEP_R8}
    assert sorted(r8s.BANDS) == sorted(c.name for c in r8s.SHORT + r8s.LONG_CAUSAL + r8s.LONG_FULL + r8s.D64_LONG)


def test_preregistered_bands_are_the_headers_numbers_as_written() -> None:
    header = _header()
    r8_part = header[header.index("What the author expects of r8 beyond its band"):]
    assert "N=512 1.45-1.79 full, 1.87-2.41 causal" in r8_part
    assert "1.42-1.67 causal" in r8_part
    assert "D=64 at N=512 further above (2.1-2.8 / 2.9-4.1" in r8_part
    assert "0.85 / 0.96 of the mid (0.78-0.82 / 0.78-0.87 with the fixed part taken out)" in r8_part
    expected = [(1.45, 1.79), (1.87, 2.41), (1.42, 1.67), (2.1, 2.8), (2.9, 4.1)]
    assert [r8s.WRITTEN_SHORT[c.name] for c in r8s.SHORT] == expected
    assert r8s.WRITTEN_LONG_CAUSAL == (0.78, 0.96)  # causal's two estimates: 0.78-0.87 and 0.96
    for name, (_, _, band, source) in r8s.BANDS.items():
        if source == "preregistered":
            assert band in (*expected, r8s.WRITTEN_LONG_CAUSAL), name


def test_other_runs_bands_read_no_recording_of_the_judged_session() -> None:
    if len(r8s.BANDS) < FAILED_IN_THE_SWEEP:
        pytest.skip("the recordings the r8 other-runs bands read are not in this checkout")
    targets = r8s._recs(r8s.TARGET["full"])
    assert len(targets) == 2 and not any(map(r8s.in_sweep, targets))  # r8's first (18:48) and second (20:23)
    assert all(r8s.in_sweep(r8s.judged(c)) for c in r8s.LONG_FULL + r8s.D64_LONG)
    f = r8s.cudnn_long_call_factors()
    assert len(f) >= 10 and 1.0 < f[0] <= f[-1] < 1.2  # cuDNN, never r8's judged 32k call
    for case in r8s.LONG_FULL:
        assert r8s.BANDS[case.name][2] == r8s.long_full_band(case)
        assert r8s.BANDS[case.name][3] == "other-runs"
    for case in r8s.D64_LONG:
        lo, hi = r8s.BANDS[case.name][2]
        assert lo == round(registry.rung(r8s.R8).efficiency.mid / registry.rung(r8s.R8).efficiency.lo, 3)
        assert 1.3 < hi and r8s.BANDS[case.name][3] == "other-runs"


def test_every_r8_sweep_reason_found_its_recordings() -> None:
    for reason in (r8s.FIXED_COST_REASON, r8s.UNDER_EDGE_REASON, r8s.LONG_FULL_REASON, r8s.D64_REASON):
        assert "not in this checkout" not in reason
