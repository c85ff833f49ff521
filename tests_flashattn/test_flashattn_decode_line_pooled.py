"""The held-out flash-decoding line at the short contexts, pooled over every recorded session of each card
(flashattn_pooled_findings): does the short contexts' offset from the line through 8k and 64k survive averaging,
or is it the sessions' timing noise? The single-session tests cannot say: their budget is the offset's size."""

from __future__ import annotations

from typing import Any

import flashattn_decode_line as dl
import flashattn_line_findings as lf
import flashattn_pooled_findings as pf
import pytest

from pytest_anatomy import recordings
from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.theory.prediction import Prediction

CELLS = [(card, context, line) for card in dl.LINE_CARDS for context in pf.POOLED_CONTEXTS for line in pf.LINES]


def _pools() -> list[tuple[str, int, str, pf.Pooled]]:
    """Every (card, context, line) with a pool (MIN_SESSIONS sessions or more)."""
    return [(card, c, line, p) for card, c, line in CELLS if (p := pf.pooled(card, c, line)) is not None]


@pytest.mark.parametrize("card, context, line", [
    pytest.param(card, c, line, id=f"{card}-{c // 1024}k-{line}", marks=pf.pooled_marks(card, c, line))
    for card, c, line in CELLS])
def test_short_context_pooled_over_the_sessions_on_the_line(card: str, context: int, line: str,
                                                            reconcile: Any) -> None:
    """The line holds at `context`: measured / line time = 1 in the mean over every recorded session of `card` that
    drew `line` (each session's own 8k and 64k calls fix it), within 2 standard errors of that mean, taken from the
    sessions' own scatter. The single-session budget's terms are per-session timing noise, which the scatter already
    measures; no term of it is systematic, so none is added."""
    p = pf.pooled(card, context, line)
    if p is None:
        n = len(pf.session_offsets(card, context, line))
        pytest.skip(f"{n} recorded session(s) of {card} drew the {line} line at {context} (a pool needs "
                    f"{pf.MIN_SESSIONS})")
    sessions = [s.recorded_at for s in p.sessions]
    pred = Prediction(1.0, "", "measured / line time = 1: the line through each session's 8k and 64k calls holds at "
                      "this context, in the mean over the sessions",
                      {"context": context, "line": line, "sessions": sessions},
                      notes=("FITTED per session: each line's fixed part and stream rate come from its own 8k and 64k "
                             "calls; this context is held out in every session",))
    measured = Measurement(p.ratio, "", samples=tuple(1.0 + r for r in p.offsets), source="recorded",
                           provenance={"hardware": card, "sessions": sessions,
                                       "budgets": [round(s.budget, 5) for s in p.sessions]})
    reconcile(pf.QUANTITY[line], pred, measured, hardware=card, budget={"standard_errors_of_the_mean": p.tolerance},
              why=f"{pf.COVERAGE:g} standard errors of the mean offset over {p.n} sessions, from their own scatter "
                  f"(SD {p.sd:.2%}). Per-session noise, averaged down: held_out_budget's 8k_timing, 64k_timing and "
                  "own_timing (each call's timing-block noise, drawn anew in every session). Systematic: none (each "
                  "session's line is its own; no shared constant enters it)")


def test_the_pools_are_the_held_out_tests_sessions() -> None:
    """Each pool holds every recorded session that timed the context and drew its line, with the held-out test's own
    ratio and budget (dl.ratios_to_line: held_out and held_out_budget), oldest first; its newest is the session the
    single-session test judges; the line is 1k-2k's question at least, on every card of LINE_CARDS."""
    assert {1024, 2048} <= set(pf.POOLED_CONTEXTS) and max(pf.POOLED_CONTEXTS) < dl.FIT_CONTEXTS[0]
    for card, context, line, p in _pools():
        grid = pf.grid_of(card, context, line)
        held_out = dl.ratios_to_line(dl.RESULTS, card, pf.SPLIT, context, grid)
        assert [x for s in p.sessions for x in (1 + s.offset, s.budget)] == pytest.approx(
            [x for pair in held_out for x in pair], rel=1e-12)
        latest = recordings.load_latest(dl.RESULTS, card, "flashattn", dl.decode_name(context))
        assert p.sessions[-1].recorded_at == latest.recorded_at
    assert {card for card, c, line, _ in _pools() if line == pf.NATURAL and c in (1024, 2048)} == set(dl.LINE_CARDS)


def test_the_budgets_cover_the_scatter_but_where_named() -> None:
    """Each session's budget sums three block differences carried through the line (each ~sqrt(2) x one block's
    noise), so timing noise alone scatters the offsets inside the budgets (recorded: SD 0.3-0.75 of their RMS in every
    pool but one). Where the SD reaches the budgets' RMS the sessions differ by more than their timing noise, a term the
    single-session budget does not carry (the pooled tolerance, from the scatter, does): pf.SCATTER_OVER_BUDGETS."""
    wide = {(card, context, line) for card, context, line, p in _pools() if p.sd > p.budget_rms}
    assert wide == pf.SCATTER_OVER_BUDGETS


def test_a_line_five_percent_off_falls_outside_the_pooled_tolerance() -> None:
    """The pooled check can fail: a line LINE_ERROR off moves the mean ratio by about that much, and every pool's
    tolerance is narrower; the pool recomputed with each session's line time 5% longer or shorter moves its ratio by
    1/1.05 or 1/0.95, its scatter by the same factor (Pooled.shifted)."""
    for card, context, line, p in _pools():
        assert p.tolerance < pf.LINE_ERROR, (card, context, line, p.tolerance)
        for e in (pf.LINE_ERROR, -pf.LINE_ERROR):
            q = p.shifted(e)
            assert q.ratio == pytest.approx(p.ratio / (1 + e)) and q.se == pytest.approx(p.se / (1 + e))
    # on the 1k pool of the card with the line findings, either direction of a 5% line error diverges
    p1k = pf.pooled(lf.LINE_FINDING_CARD, 1024)
    assert p1k is not None and all(not p1k.shifted(e).agrees() for e in (pf.LINE_ERROR, -pf.LINE_ERROR))


@pytest.mark.parametrize("card, context, line", [pytest.param(card, c, line, id=f"{card}-{c // 1024}k-{line}")
                                                 for card, c, line in CELLS])
def test_a_pooled_finding_is_banded_by_the_sessions_before_the_newest(card: str, context: int, line: str) -> None:
    """A mark exactly where the pool lies beyond its tolerance; its band the earlier sessions' pool (other-runs), never
    the judged pool's; its id the held-out line's finding of that card and side; strict where the band is clear of the
    tolerance."""
    p, marks = pf.pooled(card, context, line), pf.pooled_marks(card, context, line)
    if p is None or p.agrees():
        assert marks == ()
        return
    (mark,) = marks
    others = p.without_latest()
    lo, hi = mark.kwargs["expected"]
    assert (lo, hi) == (round(others.ratio - others.tolerance, 4), round(others.ratio + others.tolerance, 4))
    assert lo <= p.ratio <= hi  # the band holds the pool it carries (else the test diverges: no band is widened)
    assert mark.kwargs["band_from"] == "other-runs" and mark.kwargs["hardware"] == card
    assert mark.kwargs["quantity"] == pf.QUANTITY[line]
    assert mark.kwargs["strict"] == (hi < 1 - p.tolerance or lo > 1 + p.tolerance)
    assert f"Pooled over the {p.n} " in mark.kwargs["reason"] and f"{p.ratio:.4f}" in mark.kwargs["reason"]
    if card == lf.LINE_FINDING_CARD:  # the held-out line's findings on that card, one per side
        assert mark.args[0] == (lf.SHORT_BELOW_ID if p.mean < 0 else lf.opposite_id(context))
