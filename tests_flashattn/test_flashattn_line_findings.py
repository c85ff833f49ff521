"""The H100's held-out line findings (flashattn_line_findings): each marks only where a recorded session missed its
line, each band holds the judged ratio on the side its cause names and comes from another run wherever one missed,
and the grid the short contexts launch is the recordings' own."""

from __future__ import annotations

import json
from pathlib import Path

import flashattn_decode_line as dl
import flashattn_line_findings as lf
import pytest

from pytest_anatomy import recordings

CASES = [(c, None) for c in lf.SHORT_CONTEXTS + lf.LONG_CONTEXTS] + [(c, lf.SHORT_GRID) for c in lf.SHORT_CONTEXTS]


def _marks(context: int, grid: int | None) -> tuple[pytest.MarkDecorator, ...]:
    return lf.line_marks(context) if grid is None else lf.grid_marks(context)


@pytest.mark.parametrize("context, grid", CASES)
def test_a_finding_marks_exactly_where_a_session_missed_and_holds_the_judged_ratio(context: int,
                                                                                   grid: int | None) -> None:
    """The recorded sessions' ratios, judged: a mark exactly where some session missed the line on the finding's side;
    its band holds the latest ratio (an other-runs band can fail here: where a later session leaves it, this shows it)
    on that side; strict only where every session missed."""
    ratios = lf.session_ratios(lf.SPLIT, context, grid)
    side = lf.side_of(context)
    marks = _marks(context, grid)
    other = "above" if side == "below" else "below"
    if lf.missed(ratios[-1], other):  # the judged session missed on the other side: that side's own finding
        (mark,) = marks
        lo, hi = mark.kwargs["expected"]
        assert mark.args[0] == lf.opposite_id(context) != lf.SHORT_BELOW_ID and lo <= ratios[-1][0] <= hi
        assert (hi > 1.0) if other == "above" else (lo < 1.0)
        return
    assert bool(marks) == any(lf.missed(x, side) for x in ratios)
    if not marks:
        return
    (mark,) = marks
    lo, hi = mark.kwargs["expected"]
    r, b = ratios[-1]
    agrees = abs(r - 1.0) <= b  # the judged session on its line: a non-strict finding resolves, its band unused
    assert (lo <= r <= hi or (agrees and not mark.kwargs["strict"])) and mark.kwargs["hardware"] == lf.LINE_FINDING_CARD
    assert mark.args[0] == (lf.SHORT_BELOW_ID if side == "below" else lf.LONG_ABOVE_ID)
    assert (lo < 1.0) if side == "below" else (hi > 1.0)  # the band reaches the side its cause names
    if mark.kwargs["strict"]:
        assert all(lf.missed(x, side) for x in ratios) and not lo <= 1.0 <= hi


@pytest.mark.parametrize("context, grid", CASES)
def test_a_band_comes_from_an_earlier_session_that_missed_wherever_one_did(context: int, grid: int | None) -> None:
    """Moving the judged ratio moves no other-runs band: it is the earlier sessions' ratios that missed on the finding's
    side, each within TWO_RUNS x its budget, or (a long context's own side, none earlier) fd2's ratio widened by fd's
    budget. The finding's side is its context's, or the opposite one where the judged session missed there
    (opposite_id: 4k on the 8-split grid, above the line at 12:56 and again at 14:51)."""
    marks = _marks(context, grid)
    if not marks:
        pytest.skip(f"no finding at {context}: no session missed")
    (mark,) = marks
    *earlier, (r, b) = lf.session_ratios(lf.SPLIT, context, grid)
    side = lf.side_of(context)
    if mark.args[0] == lf.opposite_id(context):
        side = "above" if side == "below" else "below"
    shown = [e for e in earlier if lf.missed(e, side)]
    if shown:
        assert mark.kwargs["band_from"] == "other-runs"
        assert mark.kwargs["expected"] == (round(min(x - lf.TWO_RUNS * bx for x, bx in shown), 4),
                                           round(max(x + lf.TWO_RUNS * bx for x, bx in shown), 4))
    elif mark.kwargs["band_from"] == "other-runs":
        r2, _ = lf.line_ratio(lf.FUSED, context)
        assert grid is None and mark.kwargs["expected"] == (round(r2 - b, 4), round(r2 + b, 4))
    else:
        assert mark.kwargs["expected"] == (round(r - b, 4), round(r + b, 4))


def test_the_short_contexts_run_a_smaller_grid_than_the_lines_points() -> None:
    """The refuted candidate's premise, from the recordings' configs: 8 splits at 1k-4k, 9 at the line's 8k and 64k,
    and the own-grid line's forced 8k and 64k ran the short contexts' 8."""
    splits = {c: lf.latest_call(lf.SPLIT, c).provenance["config"]["splits"] for c in (1024, 2048, 4096, 8192, 65536)}
    assert splits == {1024: 8, 2048: 8, 4096: 8, 8192: 9, 65536: 9}
    for c in dl.FIT_CONTEXTS:
        rec = recordings.load_latest(lf.RESULTS, lf.LINE_FINDING_CARD, "flashattn", lf.call_name(lf.SPLIT, c, 8))
        assert rec.provenance["config"]["splits"] == lf.SHORT_GRID == 8
    # the waves the reason names: 5 programs an SM (the launched kernel's 38,912 B of shared memory; its 72 registers
    # allow 7), 64 x splits programs: one partial wave of 660 slots at 8 and at 9 splits
    assert lf.resident_per_sm() == 5
    assert lf.grid_words(8).startswith("512 programs, 0.78 waves") and lf.grid_words(9).startswith("576 programs, 0.87")


def test_no_line_finding_where_the_line_held_or_nothing_is_recorded(monkeypatch, tmp_path) -> None:
    assert lf.line_marks(8192) == () and lf.grid_marks(8192) == ()
    lf.session_ratios.cache_clear()
    monkeypatch.setattr(lf, "RESULTS", tmp_path)
    try:
        assert all(lf.line_marks(c) == () for c in lf.SHORT_CONTEXTS + lf.LONG_CONTEXTS)
        assert all(lf.grid_marks(c) == () for c in lf.SHORT_CONTEXTS)
        with pytest.raises(recordings.MissingRecording):
            lf.line_ratio(lf.SPLIT, 1024)
    finally:
        lf.session_ratios.cache_clear()


def _copy_session(src: Path, dst: Path, names: list[str], stamp: str, scale: dict[str, float]) -> None:
    """The H100 recordings `names` of the 08:33 session, written again as a later session stamped `stamp` (a synthetic
    copy in tmp_path; the committed recordings are never touched), each time scaled by scale.get(name, 1.0)."""
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


def test_a_later_session_is_banded_by_the_earlier_miss_and_can_leave_the_band(monkeypatch, tmp_path) -> None:
    """Two synthetic sessions of 2k, both copies of 08:33's (which missed below the line): the judged one is banded by
    the first (other-runs), whatever it measured. Judged as the first was, it lies in the band; moved onto the line,
    it leaves the band, and the band does not follow."""
    card = tmp_path / lf.LINE_FINDING_CARD / "flashattn"
    card.mkdir(parents=True)
    names = [lf.call_name(lf.SPLIT, c) for c in (2048, *dl.FIT_CONTEXTS)]
    src = lf.RESULTS / lf.LINE_FINDING_CARD / "flashattn"
    _copy_session(src, card, names, "20261207T083310Z", {})
    monkeypatch.setattr(lf, "RESULTS", tmp_path)
    monkeypatch.setattr(dl, "RESULTS", tmp_path)
    bands = []
    for scale in (1.0, 1 / 0.977):  # the judged 2k as the first session's, then moved onto the line (0.977 -> ~1.0)
        for old in card.glob("*@20261207T084500*.json"):
            old.unlink()
        _copy_session(src, card, names, "20261207T084500Z", {names[0]: scale})
        lf.session_ratios.cache_clear()
        try:
            (mark,) = lf.line_marks(2048)
            r, _ = lf.line_ratio(lf.SPLIT, 2048)
        finally:
            lf.session_ratios.cache_clear()
        assert mark.kwargs["band_from"] == "other-runs" and "1 earlier H100 session" in mark.kwargs["reason"]
        bands.append(mark.kwargs["expected"])
        lo, hi = bands[0]
        assert (lo <= r <= hi) == (scale == 1.0)
    assert bands[0] == bands[1]  # the judged session moves no bound
