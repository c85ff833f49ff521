"""The held-out flash-decoding line at the short contexts, pooled over every recorded session: the arithmetic of
test_flashattn_decode_line_pooled and the findings it carries.

The held-out tests (test_flashattn_gpu.test_flash_decoding_on_the_line_through_8k_and_64k and
test_short_context_on_the_line_of_its_own_grid) judge one session each, the newest of each card. At 1k-2k the offset
from the line is about the size of one session's noise budget, so a single session lands on either side of the
budget's edge and cannot say whether the offset is real (issue 10, "predictions that can fail"). Here every recorded
session of a card that timed the context and the line's two points gives its offset r_i = measured / line time - 1
and its budget b_i, both from flashattn_decode_line.ratio_to_line (held_out and held_out_budget, as the held-out tests
reconcile them); the offsets pool into their mean, whose uncertainty is the sessions' own scatter (the standard error
of the mean). The pooled check holds that mean to zero within COVERAGE standard errors.

held_out_budget's three terms (8k_timing, 64k_timing, own_timing) are each a call's timing noise, from its own two
timing blocks or the recorded sessions' RMS of their difference: each session's draw is independent of the others'
(another run, mostly another card), so it averages down in the mean and the scatter measures it. None is systematic:
the line is each session's own, so no constant shared by the sessions enters it, and the tolerance carries no term
beyond the scatter's.

Findings: where the pooled mean lies beyond its tolerance, the card's finding of that side (the ids of the held-out
line's findings, flashattn_line_findings: cause not established), banded by the sessions before the newest (the one
the single-session test judges) pooled the same way, their mean +- COVERAGE standard errors (other-runs); strict
where that band lies clear of the pooled tolerance.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass

import flashattn_decode_line as dl
import pytest
from flashattn_findings import H100, RESULTS

from pytest_anatomy import recordings
from pytest_anatomy.kernels.flashattn import registry

SPLIT = registry.DECODE_VARIANTS[0].id
# The contexts below the line's first point (8k) that the cards time: 1k-2k, the question's, and 4k, where the data are
# there too. The contexts past 8k are the long-context findings' (every H100 session above its line: no question).
POOLED_CONTEXTS = (1024, 2048, 4096)
MIN_SESSIONS = 3  # a standard error from two sessions' scatter is one number's estimate of another's spread
COVERAGE = 2.0  # standard errors of the mean: the pooled tolerance
LINE_ERROR = 0.05  # the line error the pooled check must catch: its tolerance must lie inside it
# The two lines a session draws through its 8k and 64k calls: at the launch rule's splits (the held-out test's) and
# forced to the short context's own split count (the own-grid test's, where the counts differ).
NATURAL, OWN_GRID = "natural", "own-grid"
LINES = (NATURAL, OWN_GRID)
QUANTITY = {NATURAL: "pooled_time_on_the_line", OWN_GRID: "pooled_time_on_its_grids_line"}
LINE_WORDS = {NATURAL: "the line through its session's 8k and 64k calls",
              OWN_GRID: "the line through its session's 8k and 64k calls forced to its own split count"}
# Pools whose sessions scatter wider than their own budgets (SD over the budgets' RMS): the sessions differ by more
# than their timing noise. The H100's 4k on its own grid's line: -0.62% and +0.54% in the first two sessions (09:13,
# 09:49), +1.37% to +1.79% in the next three (12:56, 14:51, 15:18, each another card), SD 1.02% against budgets of
# 0.83-1.29% (RMS 0.99%). The pooled tolerance comes from that scatter, so it carries the step; a single session's
# budget does not.
SCATTER_OVER_BUDGETS = frozenset({(H100, 4096, OWN_GRID)})


@dataclass(frozen=True)
class SessionOffset:
    """One session's held-out call: measured / its own line's time - 1, and the held-out test's budget on it."""

    recorded_at: str
    offset: float
    budget: float


@dataclass(frozen=True)
class Pooled:
    """The sessions' offsets at one context (oldest first; the last is the newest, the one a replay judges)."""

    sessions: tuple[SessionOffset, ...]

    @property
    def n(self) -> int:
        return len(self.sessions)

    @property
    def offsets(self) -> tuple[float, ...]:
        return tuple(s.offset for s in self.sessions)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.offsets)

    @property
    def sd(self) -> float:
        """The sessions' scatter (sample standard deviation of r_i)."""
        return statistics.stdev(self.offsets)

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.n)

    @property
    def tolerance(self) -> float:
        return COVERAGE * self.se

    @property
    def ratio(self) -> float:
        return 1.0 + self.mean

    @property
    def budget_rms(self) -> float:
        """The per-session budgets' root mean square: what the single-session tests allow one session."""
        return math.sqrt(statistics.fmean(s.budget ** 2 for s in self.sessions))

    def agrees(self) -> bool:
        return abs(self.mean) <= self.tolerance

    def without_latest(self) -> Pooled:
        return Pooled(self.sessions[:-1])

    def shifted(self, line_error: float) -> Pooled:
        """The pool had every session's line time been (1 + line_error) x what it is."""
        return Pooled(tuple(SessionOffset(s.recorded_at, (1 + s.offset) / (1 + line_error) - 1, s.budget)
                            for s in self.sessions))


def grid_of(card: str, context: int, line: str) -> int | None:
    """The split count `line`'s 8k and 64k calls are forced to (None: the launch rule's); LookupError where the
    own-grid line does not exist on `card` (dl.own_grid: its test skips there)."""
    return None if line == NATURAL else dl.own_grid(dl.shape(context), dl.sm_count_of(card))


@functools.cache  # read at collection: the recordings do not change within a session
def session_offsets(card: str, context: int, line: str = NATURAL) -> tuple[SessionOffset, ...]:
    """Every recorded `card` session that timed `context` and `line`'s two points: its offset from its own line and
    the held-out test's budget on it (dl.ratio_to_line), oldest first. Empty where the line does not exist."""
    try:
        grid = grid_of(card, context, line)
    except LookupError:
        return ()
    out = []
    for path in recordings.candidates(RESULTS, card, "flashattn", dl.decode_name(context)):
        rec = recordings.load_file(path)
        try:
            ratio, budget = dl.ratio_to_line(RESULTS, card, rec, SPLIT, context, grid)
        except recordings.MissingRecording:
            continue  # a session without this line's 8k or 64k draws no line
        out.append(SessionOffset(rec.recorded_at, ratio - 1.0, budget))
    return tuple(sorted(out, key=lambda s: s.recorded_at))


def pooled(card: str, context: int, line: str = NATURAL) -> Pooled | None:
    """The pool at `context` on `card`, or None where fewer than MIN_SESSIONS sessions drew the line there."""
    sessions = session_offsets(card, context, line)
    return Pooled(sessions) if len(sessions) >= MIN_SESSIONS else None


def band_of(p: Pooled) -> tuple[float, float] | None:
    """The finding's band: the sessions before the newest, pooled the same way, their ratio +- COVERAGE standard
    errors (other-runs); None where fewer than two sessions are left (no scatter to take a standard error from)."""
    others = p.without_latest()
    if others.n < 2:
        return None
    return round(others.ratio - others.tolerance, 4), round(others.ratio + others.tolerance, 4)


def finding_id(card: str, side: str) -> str:
    """The held-out line's finding of `card` and `side` at a short context (flashattn_line_findings' ids)."""
    label = dl.CARD_LABELS.get(card, card).lower()
    return f"{label}-flash-decoding-short-contexts-{side}-the-line-cause-not-established"


def _reason(card: str, context: int, line: str, p: Pooled, side: str) -> str:
    label, others = dl.CARD_LABELS.get(card, card), p.without_latest()
    budgets = [s.budget for s in p.sessions]
    return (f"Pooled over the {p.n} {label} sessions that timed {context // 1024}k and its line's 8k and 64k, "
            f"flash-decoding ran {p.ratio:.4f} of {LINE_WORDS[line]} (offsets "
            f"{', '.join(f'{r:+.2%}' for r in p.offsets)}, oldest first): mean {p.mean:+.2%}, standard error "
            f"{p.se:.2%} from the sessions' scatter, {abs(p.mean) / p.se:.1f} standard errors {side} it, where one "
            f"session's noise budget is {min(budgets):.1%}-{max(budgets):.1%}. The offset a single session cannot "
            "resolve is there in the pool: not the sessions' timing noise, which averages down. Cause not "
            f"established. Band: the {others.n} sessions before the newest (the one the single-session test judges), "
            f"pooled the same way: {others.ratio:.4f} +- {COVERAGE:g} standard errors ({others.tolerance:.2%}; "
            "other-runs). It shares those sessions with the pool it bands, so what it tests is how far the newest "
            "session pulls the mean.")


def pooled_marks(card: str, context: int, line: str) -> tuple[pytest.MarkDecorator, ...]:
    """`card`'s finding on the pooled check at `context` on `line`, where the pool lies beyond its tolerance and the
    earlier sessions give a band; none where it agrees (the offset is noise) or there is no pool. A pool beyond its
    tolerance with no band to carry fails its test: no band is taken from the pool it judges."""
    p = pooled(card, context, line)
    band = None if p is None else band_of(p)
    if p is None or band is None or p.agrees():
        return ()
    side = "below" if p.mean < 0 else "above"
    strict = band[1] < 1.0 - p.tolerance or band[0] > 1.0 + p.tolerance
    return (pytest.mark.finding(finding_id(card, side), hardware=card, quantity=QUANTITY[line], expected=band,
                                strict=strict, reason=_reason(card, context, line, p, side), band_from="other-runs"),)
