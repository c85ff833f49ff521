"""Findings of the load checks moved off the 10% decode and throughput goals onto their noise budgets (issue 10 item 2,
2026-12-05): the runs that, under a budget of measured noise, miss by more than it. Each finding explains one sign
only (issue 10 item 3), and its band comes from other runs where the card has recorded them, else from the run it
judges, with the reason naming the run that would replace it.
"""

from __future__ import annotations

import pytest
from latency_findings_common import H100, LLAMA, MEASURED_ON, OTHER_SESSION_NOISE, QWEN, envelope

# --- Qwen2.5-7B at light load: the ITL above its simulation (both cards) ---------------------------------------------
LIGHT_LOAD_ITL_ABOVE_ID = "h200-light-load-itl-above-cause-not-established"
H100_LIGHT_LOAD_ITL_ABOVE_ID = "h100-light-load-itl-above-cause-not-established"
# (run, quantity) of each check it covers: before 2026-12-05 these were held to the 10% decode goal
# (ITL_MEAN_ON_GOAL, ITL_MEDIAN_ON_GOAL, with guards that they still missed their budget).
LIGHT_LOAD_ITL_ABOVE = {"closed.c8": ("itl_mean",), "poisson.f0.25": ("itl_median", "itl_mean"),
                        "poisson.f0.5": ("itl_median",)}
_LIGHT_LOAD = (
    "Qwen2.5-7B's ITL at light load (the closed loop at C = 8: its mean; the Poisson runs at 0.25x the C = 64 rate: "
    "median and mean; at 0.5x: median) runs above its simulation by more than the run's noise budget (the rows beside "
    "give each): the steps of a lightly loaded engine take longer than the step model prices. Part of it is the "
    "per-sequence excess of the decode step (h200-decode-per-sequence-cost); not all: with the session's excess "
    "carried, the Poisson medians stay 2-8% above (test_latency_sequence_cost.py::"
    "test_poisson_medians_keep_a_residual_beyond_the_sequence_cost) and C = 8's mean 3-4%. The rest has no mechanism "
    "measured apart (candidates: the steps that carry a prompt, h200-prompt-steps-slower-than-modeled, whose share of "
    "the mean is larger at light load; the async scheduler's idle gaps between requests).")
LIGHT_LOAD_REASON = _LIGHT_LOAD + (
    " Band, set at test time: the lowest and highest measured/simulated of the same run and statistic in the card's "
    "other recorded sessions (each simulated with its own session's setup), widened by this run's noise budget.")
H100_LIGHT_LOAD_REASON = _LIGHT_LOAD + (
    " On the H100 these runs were recorded in three sessions (2026-12-02 18:32, 2026-12-06 05:48 and 06:43; each later "
    "one's expectation, written before it ran: every statistic within ~3% of the earlier ratios, which held). Band, set "
    "at test time: the lowest and highest measured/simulated of the same run and statistic in the H100's other "
    "recorded sessions, each with its own session's setup, widened by this run's noise budget (and by ONE_OTHER_SESSION, "
    "OTHER_SESSION_NOISE, where one other session alone cannot show how far sessions spread).")


def light_load_marks(model: str, run: str) -> tuple[pytest.MarkDecorator, ...]:
    if model != QWEN or run not in LIGHT_LOAD_ITL_ABOVE:
        return ()
    return tuple(mark for q in LIGHT_LOAD_ITL_ABOVE[run] for mark in (
        pytest.mark.finding(LIGHT_LOAD_ITL_ABOVE_ID, hardware=MEASURED_ON, quantity=q, reason=LIGHT_LOAD_REASON,
                            band_from="other-runs"),
        pytest.mark.finding(H100_LIGHT_LOAD_ITL_ABOVE_ID, hardware=H100, quantity=q, reason=H100_LIGHT_LOAD_REASON,
                            band_from="other-runs")))


# --- Llama-3.1-8B's closed loops (one session, 2026-11-30): one finding per sign -------------------------------------
_ONE_SESSION = (" Llama-3.1-8B's closed loops were recorded in one session (2026-11-30 02:02): band read off the run "
                "it judges (its measured/simulated +- its noise budget), which tests nothing yet; a second "
                "Llama-3.1-8B closed-loop session (C = 8, 32, 64) would replace it with other runs.")
LLAMA_CLOSED_ABOVE_ID = "h200-llama-closed-loop-steps-slower-at-high-c"
LLAMA_CLOSED_ABOVE = (
    "Llama-3.1-8B's closed loops at C = 32 and 64 run their steps slower than simulated: median ITL above the "
    "prediction, and at C = 64 the throughput below it, beyond the run's noise budget. The decode steps of batch 32 "
    "and 64 carry the per-sequence excess (h200-decode-per-sequence-cost: the same session's isolated steps ran "
    "1.054x and 1.085x their prediction), which the step model lacks; the closed loops miss by less than those "
    "isolated steps (h200-llama-closed-loop-below-its-decode-steps)." + _ONE_SESSION)
LLAMA_CLOSED_ABOVE_CASES = {32: ("itl_median",), 64: ("itl_median", "output_throughput")}
LLAMA_CLOSED_BELOW_ID = "h200-llama-closed-loop-itl-below-prediction-cause-not-established"
LLAMA_CLOSED_BELOW = (
    "Llama-3.1-8B's closed loop runs faster than simulated at C = 8 (median ITL below the prediction) and in its "
    "prompt-carrying steps at C = 32 (mean ITL below, while the median is above), beyond the run's noise budget. At "
    "C = 8 part of it is the overhead transferred from Qwen2.5-7B over-predicting Llama's small steps in this session "
    "(h200-transferred-overhead-over-predicts-llamas: its b=1 step ran 0.986x); the session's isolated b=8 step ran "
    "above its prediction, so the rest, and C = 32's mean, have no mechanism measured apart." + _ONE_SESSION)
LLAMA_CLOSED_BELOW_CASES = {8: ("itl_median",), 32: ("itl_mean",)}


def llama_closed_marks(model: str, c: int) -> tuple[pytest.MarkDecorator, ...]:
    """Llama-3.1-8B's closed-loop ITL findings at C = c (quantity itl_median / itl_mean; C = 64's throughput is
    test_saturation_throughput's, llama_saturation_marks)."""
    if model != LLAMA:
        return ()
    marks = [pytest.mark.finding(LLAMA_CLOSED_ABOVE_ID, hardware=MEASURED_ON, quantity=q, reason=LLAMA_CLOSED_ABOVE,
                                 band_from="checked-run")
             for q in LLAMA_CLOSED_ABOVE_CASES.get(c, ()) if q != "output_throughput"]
    marks += [pytest.mark.finding(LLAMA_CLOSED_BELOW_ID, hardware=MEASURED_ON, quantity=q, reason=LLAMA_CLOSED_BELOW,
                                  band_from="checked-run") for q in LLAMA_CLOSED_BELOW_CASES.get(c, ())]
    return tuple(marks)


def llama_saturation_marks(model: str) -> tuple[pytest.MarkDecorator, ...]:
    if model != LLAMA:
        return ()
    return (pytest.mark.finding(LLAMA_CLOSED_ABOVE_ID, hardware=MEASURED_ON, quantity="output_throughput",
                                reason=LLAMA_CLOSED_ABOVE, band_from="checked-run"),
            *h100_llama_closed_marks(model, 64, ("output_throughput",)))


# --- Llama-3.1-8B's closed loops on the H100 (one session, 2026-12-05 21:41) -----------------------------------------
# The same session's isolated Llama decode steps ran above their prediction (transferred from the session's
# Qwen2.5-7B calibration) at every batch: 1.017x at b=1, 1.033x at 8, 1.047x at 32, 1.064x at 64, where the H200's ran
# 0.986x at b=1 (h200-transferred-overhead-over-predicts-llamas): a finding of the other sign, so its own id.
H100_LLAMA_STEPS_ID = "h100-llama-closed-loop-carries-its-decode-steps"
H100_LLAMA_STEPS = (
    "Llama-3.1-8B's closed loops on the H100 carry the miss of the same session's isolated decode steps: the median "
    "ITL at C = 8, 32 and 64 is a decode step of batch C (1.032x, 1.049x, 1.064x against the steps' 1.033x, 1.047x, "
    "1.064x), and at C = 1 the throughput runs at the inverse of the b=1 step's 1.017x. The steps themselves run above "
    "the transfer by the per-sequence excess (h200-decode-per-sequence-cost) and, at b=1, by 1.7%, inside that check's "
    "own budget (Llama's b=1 step over Qwen2.5-7B's is a card-to-card spread the transfer carries). Band, set at test "
    "time: the same session's isolated decode step at batch C (at C = 1 its inverse) +- its budget and this run's.")
H100_LLAMA_STEPS_CASES = {1: ("output_throughput",), 8: ("itl_median",), 32: ("itl_median",), 64: ("itl_median",)}
# The (card, model) pairs whose steady-state bound (h200-prompt-steps-slower-than-modeled's band) is carried by the same
# session's b=64 decode step miss: Llama-3.1-8B's H100 steps run above the transferred overhead at every batch (above),
# so its closed form is short by that miss before the prompt steps' own; the band is divided by it at test time.
STEADY_STATE_CARRIES_STEP_MISS = frozenset({(H100, LLAMA)})
H100_LLAMA_LOOP_ID = "h100-llama-closed-loop-below-its-steps-at-c64"
H100_LLAMA_LOOP = (
    "Llama-3.1-8B's closed loops on the H100 run their prompt-carrying steps slower than their decode steps' miss "
    "explains: at C = 64 the throughput is 0.906x the simulation (4,035 against 4,454 tokens/s) where the b=64 step's "
    "1.064x gives 0.94x, and the mean ITL at C = 8 and 64 sits above the median's miss (C = 8: 1.046x against 1.032x), "
    "the mean taking in the steps that carry a prompt (h200-prompt-steps-slower-than-modeled). A second H100 session "
    "(2026-12-06 00:05) repeated it. Band, set at test time: the envelope of the same run's measured/simulated in the "
    "H100's other recorded sessions, each with its own session's setup, +- this run's budget (other runs), and +- "
    "ONE_OTHER_SESSION while there is one other session only.")
H100_LLAMA_LOOP_CASES = {8: ("itl_mean",), 64: ("itl_mean", "output_throughput")}


def h100_llama_closed_marks(model: str, c: int, quantities: tuple[str, ...]) -> tuple[pytest.MarkDecorator, ...]:
    """The H100 findings of Llama-3.1-8B's closed loop at C = c on `quantities` (both other-runs, set by the test: the
    same session's steps' miss at batch C; the same loop in the card's other sessions)."""
    if model != LLAMA:
        return ()
    marks = [pytest.mark.finding(H100_LLAMA_STEPS_ID, hardware=H100, quantity=q, reason=H100_LLAMA_STEPS,
                                 band_from="other-runs") for q in H100_LLAMA_STEPS_CASES.get(c, ()) if q in quantities]
    marks += [pytest.mark.finding(H100_LLAMA_LOOP_ID, hardware=H100, quantity=q, reason=H100_LLAMA_LOOP,
                                  band_from="other-runs") for q in H100_LLAMA_LOOP_CASES.get(c, ()) if q in quantities]
    return tuple(marks)


IDS = frozenset({LIGHT_LOAD_ITL_ABOVE_ID, H100_LIGHT_LOAD_ITL_ABOVE_ID, LLAMA_CLOSED_ABOVE_ID, LLAMA_CLOSED_BELOW_ID,
                 H100_LLAMA_LOOP_ID})


# A band from other runs is their envelope widened by the checked run's budget; where the card has recorded ONE other
# session, that envelope is a point and shows nothing of how far one session lies from the next (the H200's recorded
# sessions of the light-load statistics span half-ranges of 0.5-3.4%): the band then also carries this allowance.
ONE_OTHER_SESSION = OTHER_SESSION_NOISE


def other_runs_band(ratios: list[float], budget: float) -> tuple[float, float]:
    """The envelope of other sessions' ratios, widened by the checked run's `budget` and, where there is one other
    session only, by ONE_OTHER_SESSION."""
    return envelope(ratios, budget + (ONE_OTHER_SESSION if len(ratios) == 1 else 0.0))


def checked_run_band(ratio: float, budget: float) -> tuple[float, float]:
    """A band read off the run it judges: its own measured/predicted +- its noise budget (band_from="checked-run")."""
    return (round(ratio * (1 - budget), 4), round(ratio * (1 + budget), 4))
