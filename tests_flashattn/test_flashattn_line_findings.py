"""The H100's held-out line findings (flashattn_line_findings): each band holds its recorded ratio on the side its cause
names, an other-runs band is fd2's ratio and never the checked call's, and the grid the short contexts' reason names is
the recordings' own."""

from __future__ import annotations

import json
from pathlib import Path

import flashattn_decode_line as dl
import flashattn_line_findings as lf
import pytest

from pytest_anatomy import recordings


@pytest.mark.parametrize("context", lf.SHORT_CONTEXTS + lf.LONG_CONTEXTS)
def test_each_line_finding_holds_its_ratio_on_its_side(context: int) -> None:
    """The recorded sessions' ratios, judged: the band holds the latest (an other-runs band can fail here, and this is
    where a later session that leaves it shows), beyond the noise budget, on the side the finding's cause names."""
    (mark,) = lf.line_marks(context)
    lo, hi = mark.kwargs["expected"]
    r, b = lf.line_ratio(lf.SPLIT, context)
    assert lo <= r <= hi and mark.kwargs["hardware"] == lf.LINE_FINDING_CARD
    assert r - b > 1.0 or r + b < 1.0  # a miss beyond the noise budget, else no finding belongs here
    if context in lf.SHORT_CONTEXTS:
        assert mark.args[0] == lf.SHORT_GRID_ID and hi < 1.0
        assert mark.kwargs["band_from"] == ("other-runs" if lf.earlier_ratios(lf.SPLIT, context) else "checked-run")
    else:
        assert mark.args[0] == lf.LONG_ABOVE_ID and r > 1.0
    assert mark.kwargs["strict"] == (not lo <= 1.0 <= hi)


@pytest.mark.parametrize("context", lf.LONG_CONTEXTS)
def test_an_other_runs_band_is_the_fused_kernels_ratio(context: int) -> None:
    """Without an earlier session, moving fd's own ratio moves no other-runs band: the band is fd2's ratio widened by
    fd's budget."""
    (mark,) = lf.line_marks(context)
    r, b = lf.line_ratio(lf.SPLIT, context)
    r2, _ = lf.line_ratio(lf.FUSED, context)
    if lf.earlier_ratios(lf.SPLIT, context):
        assert mark.kwargs["band_from"] == "other-runs"  # the earlier sessions' band: test_a_later_session_...
    elif mark.kwargs["band_from"] == "other-runs":
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


def _copy_session(src: Path, dst: Path, names: list[str], stamp: str, scale: dict[str, float]) -> None:
    """The H100 recordings `names` of one session, written again as a later session stamped `stamp` (a synthetic copy
    in tmp_path; the committed recordings are never touched), each time scaled by scale.get(name, 1.0)."""
    for name in names:
        (path,) = [p for p in sorted(src.glob(f"{name}@*.json")) if "20261207T0833" in p.name]
        data = json.loads(path.read_text())
        when = f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}Z"
        data["recorded_at"] = data["provenance"]["ceilings_recorded_at"] = when
        for key in ("time", "time_repeat"):
            m = data["measurements"][key]
            m["value"] *= scale.get(name, 1.0)
            m["samples"] = [x * scale.get(name, 1.0) for x in m["samples"]]
        (dst / f"{name}@{stamp}.json").write_text(json.dumps(data))


def test_a_later_session_is_banded_by_the_earlier_one_and_can_leave_the_band(monkeypatch, tmp_path) -> None:
    """With a second H100 session of 1k, the band is the first session's ratio within its own budget (other-runs),
    whatever the judged session measured: a later 1k on the line leaves the band, and the finding says so."""
    card = tmp_path / lf.LINE_FINDING_CARD / "flashattn"
    card.mkdir(parents=True)
    names = [lf.runner_decode_name(context=c, variant=lf.SPLIT, **lf.SHAPE) for c in (1024, 8192, 65536)]
    src = lf.RESULTS / lf.LINE_FINDING_CARD / "flashattn"
    _copy_session(src, card, names, "20261207T083310Z", {})
    first = None
    for scale in (1.0, 1 / 0.978):  # the judged 1k as the first session's, then moved onto the line (0.978 -> ~1.0)
        for old in card.glob("*@20261207T084500*.json"):
            old.unlink()
        _copy_session(src, card, names, "20261207T084500Z", {names[0]: scale})
        for fn in (lf.line_ratio, lf.earlier_ratios):
            fn.cache_clear()
        monkeypatch.setattr(lf, "RESULTS", tmp_path)
        monkeypatch.setattr(dl, "RESULTS", tmp_path)
        try:
            (mark,) = lf.line_marks(1024)
            r, _ = lf.line_ratio(lf.SPLIT, 1024)
        finally:
            for fn in (lf.line_ratio, lf.earlier_ratios):
                fn.cache_clear()
        assert mark.kwargs["band_from"] == "other-runs" and "1 earlier H100 session" in mark.kwargs["reason"]
        first = mark.kwargs["expected"] if first is None else first
        assert mark.kwargs["expected"] == first  # the judged session moves no bound
        lo, hi = first
        assert (lo <= r <= hi) == (scale == 1.0)
