"""flashattn_r7_findings' bands read other runs only: r6's sweep sessions and r7's first session, never the session
they judge (2026-12-04 16:39); and every reason found its recordings."""

from __future__ import annotations

import flashattn_findings as ff
import flashattn_r7_findings as r7f
import pytest

from pytest_anatomy import recordings


def _judged(case_name: str) -> list[recordings.Recording]:
    paths = recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn", case_name)
    return [r for r in map(recordings.load_file, paths) if r.recorded_at.startswith(r7f.SWEEP_SESSION)]


def test_the_bands_cover_the_nine_cases_and_read_no_recording_of_the_judged_session() -> None:
    if not r7f.BANDS:
        pytest.skip("the recordings the r7 bands read are not in this checkout")
    assert sorted(r7f.BANDS) == sorted(c.name for c in r7f.SHORT + r7f.D64)
    for case in (r7f.F_SHORT, r7f.F_LONG, *r7f.TARGET.values()):
        assert all(not r.recorded_at.startswith(r7f.SWEEP_SESSION) for r in r7f._recs(case))
    first = r7f._target_first()
    assert all(r.recorded_at < r7f.SWEEP_SESSION for r in first.values())
    assert _judged(r7f.SHORT[0].name), "the judged session's recording should exist beside the bands' sources"


def test_fixed_cost_bands_are_the_model_at_r6s_smallest_and_largest_fixed_part() -> None:
    if not r7f.BANDS:
        pytest.skip("the recordings the r7 bands read are not in this checkout")
    f = r7f.fixed_costs_s()
    assert 0 < f[0] <= f[-1] < 20e-6  # microseconds per program, not a fit gone wrong
    for case in r7f.SHORT:
        lo, hi = r7f.BANDS[case.name][2]
        vals = sorted(r7f.ratio_at(case, x) for x in (f[0], f[-1]))
        assert (lo, hi) == (round(vals[0], 3), round(vals[-1], 3))
    for case in r7f.D64:
        lo, hi = r7f.BANDS[case.name][2]
        assert 1.0 < lo < hi


def test_every_r7_reason_found_its_recordings() -> None:
    for reason in (r7f.FIXED_COST_REASON, r7f.D64_REASON):
        assert "not in this checkout" not in reason
