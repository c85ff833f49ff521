"""The finding on test_flashattn_waves.test_one_wave_grid_costs_its_busiest_sm (added 2026-12-07 after its first run).

The test was written at 13:30, before any run: where the launch rule's grid (9 splits at 64k on the H100) and its
neighbours each fit one wave, a per-SM cap fitted on 9 splits against 8 prices one split more, and the slower of that
cap and the reference's stream (8 splits' time plus the partials' difference) is the prediction. The flat reading (more
programs never faster) put 10 splits at or above 9's time. Its first run (the H100, 2026-12-07 14:51, card
GPU-1693221d) confirmed the per-SM reading's direction (10 splits at 8's time, not 9's) and missed its number: 10
splits ran faster than 8 plus the partials, beyond the noise budget. Everything below is computed from the recordings.
The second session (15:18, card GPU-4dd51232) ran 10 splits at the same 0.9973 of its prediction, inside its own
budget (0.30%: its timing noise was larger, and the recorded sessions' RMS now widens 14:51's budget to 0.32% too), so
no session's verdict misses and the finding is not marked. The offset repeated to four decimals: it is systematic, and
smaller than the noise budget (docs/RECORDING.md, "What came back from the second per-SM call").
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import pytest
from flashattn_decode_line import decode_name
from flashattn_findings import H100, RESULTS
from flashattn_line_findings import TWO_RUNS
from flashattn_waves import WAVES_CONTEXT, heaviest_sm, per_sm_grids, per_sm_predicted

from pytest_anatomy import recordings
from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory import decode_waves as dw

NEXT_ID = "h100-flash-decoding-one-split-more-under-its-stream-cause-not-established"
SPLIT = registry.DECODE_VARIANTS[0].id


class PerSmRun(NamedTuple):
    """One session's three 64k calls, their grids and the test's prediction for the held-out one."""

    ref_g: dw.DecodeGrid
    fit_g: dw.DecodeGrid
    g: dw.DecodeGrid
    times_us: tuple[float, float, float]  # reference, fit (the launch rule's), held out
    predicted_us: float
    capped_us: float
    budget: float  # the noise budget, relative
    recorded_at: str


@functools.cache  # read at collection: the recordings do not change within a session
def session_runs(card: str = H100, step: int = 1) -> tuple[PerSmRun, ...]:
    """The test's inputs and prediction in each of the card's sessions that timed the held-out count, oldest first (the
    last is the session a replay judges); a session the test itself would skip is left out."""
    sm_count = int(get_hardware(card).require("sm_count"))
    runs = []
    for path in recordings.candidates(RESULTS, card, "flashattn", decode_name(WAVES_CONTEXT)):
        natural = recordings.load_file(path)
        try:  # a session without the held-out call, or one the test itself would skip, has no run here
            ref_g, fit_g, g = per_sm_grids(natural, sm_count, step)
            rec, ref = (recordings.load_beside(RESULTS, card, "flashattn", decode_name(WAVES_CONTEXT, SPLIT, x.splits),
                                               natural) for x in (g, ref_g))
            w = per_sm_predicted(ref_g, fit_g, g, sm_count, ref, natural, rec)
        except (recordings.MissingRecording, pytest.skip.Exception):
            continue
        capped = next(t.value for t in w.prediction.terms if t.name == "capped")
        runs.append(PerSmRun(ref_g, fit_g, g, tuple(x["time"].value * 1e6 for x in (ref, natural, rec)),
                             w.prediction.value * 1e6, capped * 1e6, sum(w.budget.values()), rec.recorded_at))
    return tuple(sorted(runs, key=lambda x: x.recorded_at))


def latest_run(card: str = H100, step: int = 1) -> PerSmRun | None:
    """The session a replay judges (session_runs' last); None where no session timed the held-out count."""
    runs = session_runs(card, step)
    return runs[-1] if runs else None


def ratio(run: PerSmRun) -> float:
    return run.times_us[2] / run.predicted_us


def band_of(runs: Sequence[PerSmRun]) -> tuple[tuple[float, float], str]:
    """The judged (last) session's band: the earlier sessions that missed on its side, each ratio within sqrt(2) x
    its own budget (other-runs: two noisy ratios compared, as flashattn_line_findings.TWO_RUNS); else the judged ratio
    within its budget (checked-run)."""
    *earlier, judged = runs
    r = ratio(judged)
    shown = [(ratio(e), e.budget) for e in earlier if abs(ratio(e) - 1) > e.budget and (ratio(e) < 1) == (r < 1)]
    if shown:
        return (round(min(x - TWO_RUNS * b for x, b in shown), 4), round(max(x + TWO_RUNS * b for x, b in shown), 4)), \
            "other-runs"
    return (round(r - judged.budget, 4), round(r + judged.budget, 4)), "checked-run"


def per_sm_marks(step: int = 1) -> tuple[pytest.MarkDecorator, ...]:
    """The H100's finding where its held-out count ran outside the prediction's noise budget; none where it agreed."""
    runs = session_runs(H100, step)
    if not runs:
        return ()
    run = runs[-1]
    t_ref, t_fit, t = run.times_us
    r = ratio(run)
    if abs(r - 1) <= run.budget:
        return ()
    sm_count = int(get_hardware(H100).require("sm_count"))
    ref_g, fit_g, g = run.ref_g, run.fit_g, run.g

    def busiest(x: dw.DecodeGrid) -> str:
        return f"{heaviest_sm(x, sm_count)} programs of {x.chunk:,} tokens"
    side = "under" if r < 1 else "over"
    reason = (
        f"At 64k the H100 session of {run.recorded_at[:16].replace('T', ' ')} ran {g.splits} splits in {t:.1f} us, "
        f"{abs(r - 1):.2%} {side} the prediction of {run.predicted_us:.1f} us ({ref_g.splits} splits' {t_ref:.1f} us "
        f"plus the partials' difference; the per-SM cap fitted on {fit_g.splits} splits prices it at "
        f"{run.capped_us:.1f} us, under that stream), beyond the noise budget of {run.budget:.2%}. The reading the "
        f"test was written for holds: {g.splits} splits ran at {ref_g.splits}'s time, {t_fit / t - 1:.1%} faster than "
        f"the launch rule's {fit_g.splits} ({t_fit:.1f} us), where the flat reading (more programs never faster) put "
        f"it at or above that. The busiest SM holds {busiest(g)} at {g.splits} splits, {busiest(ref_g)} at "
        f"{ref_g.splits} and {busiest(fit_g)} at {fit_g.splits}. Why {g.splits} splits ran {side} "
        f"{ref_g.splits}'s stream is not established; a candidate: shorter programs ({g.chunk:,} tokens against "
        f"{ref_g.chunk:,}) leave a shorter tail while the last programs finish, which the stream term does not "
        "price. ")
    band, band_from = band_of(runs)
    earlier = [f"{ratio(e):.4f} (+-{e.budget:.2%})" for e in runs[:-1]]
    reason += (f"Earlier sessions at this count ran {', '.join(earlier)} of their predictions. " if earlier else "")
    reason += ("Band: the earlier sessions that missed on this side, each ratio within sqrt(2) x its budget "
               "(other-runs)." if band_from == "other-runs" else
               "Band: the judged ratio within its noise budget (checked-run: no earlier session missed on this side "
               "at this count; a second that does replaces it).")
    return (pytest.mark.finding(NEXT_ID, hardware=H100, quantity="time_of_its_one_wave_grid", expected=band,
                                reason=reason, band_from=band_from),)
