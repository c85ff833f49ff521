"""The H100's held-out line findings (flashattn_line_findings): each band holds its recorded ratio on the side its cause
names, an other-runs band is fd2's ratio and never the checked call's, and the grid the short contexts' reason names is
the recordings' own."""

from __future__ import annotations

import flashattn_line_findings as lf
import pytest

from pytest_anatomy import recordings


@pytest.mark.parametrize("context", lf.SHORT_CONTEXTS + lf.LONG_CONTEXTS)
def test_each_line_finding_holds_its_ratio_on_its_side(context: int) -> None:
    (mark,) = lf.line_marks(context)
    lo, hi = mark.kwargs["expected"]
    r, b = lf.line_ratio(lf.SPLIT, context)
    assert lo <= r <= hi and mark.kwargs["hardware"] == lf.LINE_FINDING_CARD
    assert r - b > 1.0 or r + b < 1.0  # a miss beyond the noise budget, else no finding belongs here
    if context in lf.SHORT_CONTEXTS:
        assert mark.args[0] == lf.SHORT_GRID_ID and hi < 1.0 and mark.kwargs["band_from"] == "checked-run"
    else:
        assert mark.args[0] == lf.LONG_ABOVE_ID and r > 1.0
    assert mark.kwargs["strict"] == (not lo <= 1.0 <= hi)


@pytest.mark.parametrize("context", lf.LONG_CONTEXTS)
def test_an_other_runs_band_is_the_fused_kernels_ratio(context: int) -> None:
    """Moving fd's own ratio moves no other-runs band: the band is fd2's ratio widened by fd's budget."""
    (mark,) = lf.line_marks(context)
    r, b = lf.line_ratio(lf.SPLIT, context)
    r2, _ = lf.line_ratio(lf.FUSED, context)
    if mark.kwargs["band_from"] == "other-runs":
        assert mark.kwargs["expected"] == (round(r2 - b, 4), round(r2 + b, 4))
    else:
        assert not r2 - b <= r <= r2 + b and mark.kwargs["expected"] == (round(r - b, 4), round(r + b, 4))


def test_the_short_contexts_run_a_smaller_grid_than_the_lines_points() -> None:
    """The reason's candidate, from the recordings' configs: 8 splits at 1k-4k, 9 at the line's 8k and 64k."""
    splits = {c: lf.latest_call(lf.SPLIT, c).provenance["config"]["splits"] for c in (1024, 2048, 4096, 8192, 65536)}
    assert splits == {1024: 8, 2048: 8, 4096: 8, 8192: 9, 65536: 9}


def test_no_line_finding_where_the_line_held_or_nothing_is_recorded(monkeypatch, tmp_path) -> None:
    assert lf.line_marks(4096) == () and lf.line_marks(8192) == ()
    lf.line_ratio.cache_clear()
    monkeypatch.setattr(lf, "RESULTS", tmp_path)
    try:
        assert all(lf.line_marks(c) == () for c in lf.SHORT_CONTEXTS + lf.LONG_CONTEXTS)
        with pytest.raises(recordings.MissingRecording):
            lf.line_ratio(lf.SPLIT, 1024)
    finally:
        lf.line_ratio.cache_clear()
