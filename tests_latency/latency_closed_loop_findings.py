"""The closed loop's findings (test_latency_closed_loop.py): the C=64 steady state the prompt-carrying steps
fall short of, the closed runs' median ITL and C = 1 throughput carried from the same session's decode step, and the
first-token time the simulation lacks at C = 1; and the throughput at C = 8, 32 and 64 with the per-sequence excess
measured apart (test_latency_closed_throughput.py: its per-session table, and which C carry a finding).
"""

from __future__ import annotations

from pytest_anatomy.recordings import same_instant

from collections.abc import Callable
from typing import Any

import pytest
from latency_decode_findings import LLAMA_B1_RATIOS, LLAMA_OVERHEAD_BELOW_QWEN, PER_SEQUENCE_COST, TRANSFERRED_OVERHEAD_ID
from latency_findings_common import CHECKED_ON, H100, LLAMA, MEASURED_ON, OTHER_SESSION_NOISE, QWEN, StepCarried, _count, envelope

# measured / steady-state closed form at C=64 (test_saturation_throughput), eta fitted on the 8,192 prefill (the
# recipe every session has), of the runs that set each model's band: Qwen2.5-7B's, its own earlier runs (every
# recorded run before the newest); Llama-3.1-8B's (one run), every recorded Qwen2.5-7B run. The band is their range
# +- OTHER_SESSION_NOISE, carried to the run checked by the shift the theory computes for THAT run at test time (its
# closed form with the prefill-fitted eta / with the eta its session's GEMM timings give; 1 where it timed none).
# test_steady_state_bands_are_the_recorded_ratios recomputes them.
STEADY_STATE_RATIOS: dict[str, tuple[float, ...]] = {"qwen2.5-7b": (0.9014, 0.9125, 0.9092, 0.9221, 0.9150, 0.9168,
                                                                    0.9114, 0.9106, 0.9157, 0.9015, 0.9000, 0.9112,
                                                                    0.9117, 0.9043, 0.9205, 0.9192, 0.9100, 0.9041),
                                                     "llama-3.1-8b": (0.9014, 0.9125, 0.9092, 0.9221, 0.9150, 0.9168,
                                                                      0.9114, 0.9106, 0.9157, 0.9015, 0.9000, 0.9112,
                                                                      0.9117, 0.9043, 0.9205, 0.9192, 0.9100, 0.9041,
                                                                      0.9133)}


def steady_state_band(model: str, shift: float) -> tuple[float, float]:
    ratios = STEADY_STATE_RATIOS[model]
    return (round(min(ratios) * (1 - OTHER_SESSION_NOISE) * shift, 4),
            round(max(ratios) * (1 + OTHER_SESSION_NOISE) * shift, 4))


# The same ratio of Llama-3.1-8B's own C=64 runs (eta fitted on the 8,192 prefill), by stamp; and of each Qwen2.5-7B run
# whose session timed GEMMs: (its ratio with eta from those timings, its shift = closed form with the prefill-fitted eta
# / with the GEMMs'). PROMPT_STEPS_SLOWER quotes them; test_latency_findings_reasons.py::
# test_steady_state_ratios_quoted_are_the_recorded_ones recomputes them.
STEADY_STATE_LLAMA: dict[str, float] = {"2026-11-30T02:02:39Z": 0.8928}
STEADY_STATE_WITH_GEMM_ETA: dict[str, tuple[float, float]] = {"2026-12-01T06:44:22.000000Z": (0.8441, 0.9284),
                                                              "2026-12-01T11:24:59.000000Z": (0.8542, 0.9263),
                                                              "2026-12-02T00:05:58.000000Z": (0.8513, 0.9304),
                                                              "2026-12-02T02:33:51.000000Z": (0.8442, 0.9208),
                                                              "2026-12-02T04:52:35.000000Z": (0.8564, 0.9396),
                                                              "2026-12-02T07:14:23.000000Z": (0.8469, 0.9301),
                                                              "2026-12-02T14:18:58.000000Z": (0.8366, 0.9137),
                                                              "2026-12-02T16:29:14.000000Z": (0.8434, 0.9356),
                                                              "2026-12-02T23:51:19.000000Z": (0.8443, 0.9381),
                                                              "2026-12-03T08:29:08.000000Z": (0.8399, 0.9217),
                                                              "2026-12-03T12:06:46.000000Z": (0.8378, 0.9190),
                                                              "2026-12-03T14:16:33.000000Z": (0.8484, 0.9381),
                                                              "2026-12-03T21:25:39.000000Z": (0.8500, 0.9235),
                                                              "2026-12-03T23:32:23.000000Z": (0.8422, 0.9162),
                                                              "2026-12-04T00:09:44.000000Z": (0.8521, 0.9364),
                                                              "2026-12-04T09:53:42.000000Z": (0.8301, 0.9181),
                                                              "2026-12-04T10:05:35.000000Z": (0.8401, 0.9198)}
_QWEN_STEADY = STEADY_STATE_RATIOS[LLAMA]  # every recorded Qwen2.5-7B run: Llama's band
(_LLAMA_STEADY_AT, _LLAMA_STEADY), = STEADY_STATE_LLAMA.items()
_FIRST_GEMM_STEADY = min(STEADY_STATE_WITH_GEMM_ETA)
PROMPT_STEPS_SLOWER = (
    "A closed loop at C=64 delivers less than its steady state minus the named terms (ramp-up and drain, the "
    "decode step's per-sequence miss at b=64, noise): the steps that carry new 1,024-token prompts beside the "
    "running decodes (several prompts per step, up to the 8,192-token budget) run longer than the step model prices "
    "them (h200-ttft-short-prefill-and-frontend); how many such steps a request meets per 256 tokens, and their "
    "length, are in the runs' step logs, not yet tabled here. Measured on both models alike (eta fitted on the "
    "8,192 prefill): "
    f"Qwen2.5-7B {min(_QWEN_STEADY):.3f}-{max(_QWEN_STEADY):.3f} over {_count(len(_QWEN_STEADY))} sessions, "
    f"Llama-3.1-8B {_LLAMA_STEADY:.3f} on {_LLAMA_STEADY_AT[:10]}. Band: Qwen's earlier runs' range "
    f"(for Llama, every Qwen run) +-{OTHER_SESSION_NOISE:.1%}. A run predicted with eta from its session's GEMM timings "
    f"(Qwen's since {_FIRST_GEMM_STEADY[:10]} {_FIRST_GEMM_STEADY[11:16]}) has faster prompt steps "
    "(h200-prefill-above-its-gemms) and a lower ratio "
    f"({STEADY_STATE_WITH_GEMM_ETA[_FIRST_GEMM_STEADY][0]:.3f} that session): its "
    "band is carried over by the shift the theory computes for that run at test time (its closed form with the "
    f"fitted eta / with the GEMMs'; {STEADY_STATE_WITH_GEMM_ETA[_FIRST_GEMM_STEADY][1]:.3f} on "
    f"{_FIRST_GEMM_STEADY[11:16]}).")


def steady_state_marks(model: str) -> tuple[pytest.MarkDecorator, ...]:
    """The band is set at test time (steady_state_band with the run's own shift: reconcile(finding_band=))."""
    return (pytest.mark.finding("h200-prompt-steps-slower-than-modeled", reason=PROMPT_STEPS_SLOWER,
                                quantity="output_throughput_steady_state", hardware=CHECKED_ON,
                                band_from="other-runs"),)


# Closed loop at C sequences: the median ITL is a decode step of batch C. Where the isolated decode step at batch C,
# recorded in the same session as a run of its own, misses beyond its noise budget, the closed run's median carries
# that miss: band = that step's measured/predicted +- its budget and the closed run's own (never the closed run's
# ratio). (ratio, budget) of the decode step, the closed run's budget; test_closed_itl_bands_are_the_decode_steps
# recomputes them, and checks that a case is listed exactly when its decode step misses beyond its budget.
# (C = 64's source is the 2026-12-04 10:05 session's b=64 step, which the validity check does not flag, nor the
# 2026-12-04 09:53 session's; it flagged the 2026-12-04 00:09 and 2026-12-02 16:29 sessions' (h200-decode-stalled-run),
# not the 2026-12-03 23:32, 21:25, 14:16, 12:06 or 08:29 session's, nor the 2026-12-02 23:51 session's.)
CLOSED_ITL_FROM_DECODE: dict[tuple[str, int], StepCarried] = {
    (QWEN, 8): StepCarried(((1.0203, 0.0194),), 0.0100),
    (QWEN, 32): StepCarried(((1.0346, 0.0155),), 0.0091),
    (QWEN, 64): StepCarried(((1.0447, 0.0159),), 0.0086),
}
# Closed loop at C = 1: the throughput is the inverse of a b=1 decode step (plus one prefill in ~60 steps), so where
# the same session's isolated b=1 step misses beyond its budget, the band is the inverse of its ratio +- its budget and
# the closed run's own ((1 / ratio, budget) of the step, the run's mean-ITL budget; recomputed by the same test).
CLOSED_THROUGHPUT_FROM_DECODE: dict[tuple[str, int], StepCarried] = {
    (LLAMA, 1): StepCarried(((1.0146, 0.0063),), 0.0073),
}


def closed_throughput_marks(model: str, c: int) -> tuple[Any, ...]:
    carried = CLOSED_THROUGHPUT_FROM_DECODE.get((model, c))
    if carried is None:
        return ()
    inverse, budget = carried.earlier[0]
    return (pytest.mark.finding(
        TRANSFERRED_OVERHEAD_ID if inverse > 1 else "h200-decode-per-sequence-cost",
        # Its band is the H200 session's step: on the H100 Llama's b=1 step ran above the transfer, the other sign
        # (latency_budget_findings.H100_LLAMA_STEPS_ID, banded by the H100 session's own step)
        hardware=MEASURED_ON if model == LLAMA else CHECKED_ON, quantity="output_throughput",
        reason=(f"Closed loop at C = {c}: a request is decode steps of batch {c}, and the same session's isolated "
                f"decode step at batch {c} runs {1 / inverse:.4f}x its prediction (budget +-{budget:.4f}), so the "
                f"throughput runs at its inverse. " + (LLAMA_OVERHEAD_BELOW_QWEN if inverse > 1 else PER_SEQUENCE_COST)
                + " Band: the inverse of that step's ratio +- its budget and this run's."),
        expected=carried.band(), band_from="other-runs"),)




def closed_itl_marks(model: str, c: int) -> tuple[Any, ...]:
    carried = CLOSED_ITL_FROM_DECODE.get((model, c))
    if carried is None:
        return ()
    ratio, budget = carried.earlier[0]
    return (pytest.mark.finding(
        "h200-decode-per-sequence-cost", hardware=CHECKED_ON, quantity="itl_median",
        reason=(f"Closed loop at C = {c}: the median ITL is a decode step of batch {c}, and the same session's isolated "
                f"decode step at batch {c} runs {ratio:.4f}x its prediction (budget +-{budget:.4f}; the newest H200 "
                "session's): each sequence costs more than its KV bytes at the read ceiling. Band, set at test time "
                "(test_closed_loop_itl_mean_and_median): the checked run's own session's step ratio +- its budget and "
                "this run's."), band_from="other-runs"),)


# --- closed loop at C = 1: the first-token time the simulation lacks (test_closed_loop_throughput) -----------------
# At C = 1 a request is one 1,024-token prefill, 255 decode steps of batch 1 and the frontend's ingress + egress; the
# simulation prices the prefill with the step model and has no frontend. The band is set at test time from the same
# session's other runs (first_token.first_token_times): the lone prefills at 512 and 2,048 tokens, their
# measured/modeled ratio interpolated log-linearly in length to the request's, and decode.b1's ingress + egress means.
# Qwen2.5-7B's closed.c1 runs by stamp, oldest first: (measured / simulated, measured / simulated with those
# per-request times, the check's budget, the first-token time's own spread over the request: the prefill runs' repeat
# scatter); test_latency_closed_loop.py::test_c1_first_token_table_is_the_recorded_one recomputes them.
C1_FIRST_TOKEN_CASES = frozenset({(QWEN, 1)})
C1_FIRST_TOKEN: dict[str, tuple[float, float, float, float]] = {
    "2026-11-30T00:37:45Z": (0.9963, 1.0138, 0.0056, 0.0031),
    "2026-12-01T04:47:39.137982Z": (0.9914, 1.0006, 0.0099, 0.0034),
    "2026-12-01T06:44:22.000000Z": (0.9955, 1.0091, 0.0095, 0.0037),
    "2026-12-01T11:24:59.000000Z": (0.9958, 1.0104, 0.0102, 0.0035),
    "2026-12-02T00:05:58.000000Z": (0.9970, 1.0061, 0.0103, 0.0003),
    "2026-12-02T02:33:51.000000Z": (0.9908, 0.9997, 0.0064, 0.0034),
    "2026-12-02T04:52:35.000000Z": (0.9917, 0.9978, 0.0129, 0.0009),
    "2026-12-02T07:14:23.000000Z": (0.9770, 0.9835, 0.0640, 0.0003),
    "2026-12-02T14:18:58.000000Z": (0.9852, 0.9993, 0.0129, 0.0003),
    "2026-12-02T16:29:14.000000Z": (0.9914, 1.0003, 0.0092, 0.0006),
    "2026-12-02T23:51:19.000000Z": (0.9899, 1.0048, 0.0120, 0.0008),
    "2026-12-03T08:29:08.000000Z": (0.9855, 0.9937, 0.0091, 0.0018),
    "2026-12-03T12:06:46.000000Z": (0.9878, 1.0018, 0.0096, 0.0039),
    "2026-12-03T14:16:33.000000Z": (0.9934, 1.0102, 0.0637, 0.0004),
    "2026-12-03T21:25:39.000000Z": (0.9926, 1.0023, 0.0074, 0.0007),
    "2026-12-03T23:32:23.000000Z": (0.9892, 1.0047, 0.0077, 0.0036),
    "2026-12-04T00:09:44.000000Z": (0.9885, 1.0032, 0.0092, 0.0019),
    "2026-12-04T09:53:42.000000Z": (0.9878, 0.9943, 0.0112, 0.0005),
    "2026-12-04T10:05:35.000000Z": (0.9972, 1.0040, 0.0113, 0.0018),
}


def _c1_first_token_reason() -> str:
    rows = list(C1_FIRST_TOKEN.values())
    plain = [r for r, _, _, _ in rows]
    timed = [t for _, t, _, _ in rows]
    agree = sum(1 for r, _, b, _ in rows if abs(r - 1) <= b)
    inside = sum(1 for _, t, b, s in rows if abs(t - 1) <= b + s)
    above = sum(1 for t in timed if t > 1)
    return (
        "Closed loop at C = 1: each request is one 1,024-token prefill and 255 decode steps of batch 1; the simulation "
        "prices the prefill with the step model and has no frontend (its note: 'frontend time not modeled'), while "
        "the engine's lone short prefill runs above the model (this finding's ttft rows) and the client waits for "
        "ingress and egress once per request. Band, set at test time from the same session's other runs: the "
        "simulation given those per-request times (sv.RequestTimes: the prefill's excess priced by the lone prefills "
        "at 512 and 2,048 tokens, measured/modeled interpolated linearly in log length; decode.b1's ingress + egress "
        "means; the prediction's notes name the recordings) over the simulation without them, +- this check's budget "
        f"and the prefill runs' repeat scatter. Over the {_count(len(rows))} sessions with a c1 run, measured/"
        f"simulated is {min(plain):.4f}-{max(plain):.4f}, {agree} of {len(rows)} within the check's budget (those "
        f"resolve: strict=False); over the simulation with the per-request times it is {min(timed):.4f}-"
        f"{max(timed):.4f}, {inside} of {len(rows)} within the band's half-width and {above} above 1: the lone "
        "prefill runs, noisy at 512 tokens, tend to price the loop's prefill high, so the prediction itself is not "
        "given these times.")


def c1_first_token_marks(model: str, c: int) -> tuple[Any, ...]:
    if (model, c) not in C1_FIRST_TOKEN_CASES:
        return ()
    return (pytest.mark.finding("h200-ttft-short-prefill-and-frontend", hardware=CHECKED_ON,
                                quantity="output_throughput", reason=_c1_first_token_reason(), strict=False,
                                band_from="other-runs"),)


# Its own id, not h200-decode-per-sequence-cost's (which it carries into the loop), so the report's finding card keeps
# that finding's general reason and this one says what the C=64 run's band is.
B64_STEP_MISS_ID = "h200-saturation-carries-the-b64-step-miss"


def b64_step_miss_mark(ratio: float, budget: float, miss_ms: float, shift: float) -> pytest.MarkDecorator:
    """B64_STEP_MISS_ID (h200-decode-per-sequence-cost carried into the loop) on the C=64 finite run's throughput (test_saturation_throughput's b64_step_miss):
    the same session's b=64 step over the step model by `ratio` (beyond its noise `budget`), every step re-simulated
    `miss_ms` longer, which takes the throughput to `shift` x the calibrated simulation's."""
    return pytest.mark.finding(
        B64_STEP_MISS_ID, hardware=CHECKED_ON, quantity="output_throughput", strict=False, band_from="other-runs",
        expected=(round(0.9 * shift, 4), 1.1),
        reason=(f"The same session's decode step at b=64 ran {ratio - 1:+.1%} over the step model (noise budget "
                f"{budget:.1%}; h200-decode-per-sequence-cost: each extra sequence costs more than its KV bytes), so "
                "the C=64 run's steps run longer than simulated. Re-simulated with every step "
                f"{miss_ms:.3f} ms longer (that miss, measured apart from this run), the finite run's throughput "
                f"is {shift:.3f}x the calibrated simulation's. Band: the 10% throughput target in both frames. First "
                "needed on the tenth visit's card (2026-12-02 16:29), whose b=1 calibration point ran fastest of the "
                "ten cards (4.632 ms) while its b=64 step did not (5.91 ms, inside the other sessions' 5.78-5.95): "
                "that session's b=64 miss was +6.8%, the other sessions' +4.1% to +5.4%. That b=64 run carries the "
                "decode-validity flag (8% of its steps under 0.9x the median, catch-up steps after stalls); its median "
                "step, which this band uses, matches the ninth visit's unflagged run (5.88 vs 5.94 ms). The eleventh visit's card "
                "(2026-12-02 23:51, whose b=1 step was ordinary at 4.706 ms) missed by more, +7.1% (6.003 ms, the "
                "slowest recorded b=64 step), without a validity flag: the b=64 miss is not only the tenth card's."))


# --- Llama-3.1-8B's closed loops below the prediction with the per-sequence excess (test_latency_sequence_cost.py) ---
LLAMA_CLOSED_BELOW_ID = "h200-llama-closed-loop-below-its-decode-steps"
_LLAMA_B1_FIRST = min(LLAMA_B1_RATIOS, key=lambda s: s[:19])


def llama_closed_below_marks() -> tuple[pytest.MarkDecorator, ...]:
    """The band is set at test time (test_latency_sequence_cost.llama_closed_band)."""
    return (pytest.mark.finding(LLAMA_CLOSED_BELOW_ID, hardware=CHECKED_ON, quantity="itl_median_with_sequence_cost",
                                reason=LLAMA_CLOSED_BELOW, band_from="other-runs"),)


LLAMA_CLOSED_BELOW = (
    "Llama-3.1-8B's closed loops at C = 8, 32 and 64 (one session, "
    f"{_LLAMA_B1_FIRST[:10]}) run their median ITL below the prediction that carries the same session's per-sequence "
    "excess (its decode.b1..b64 slope), by about the same fraction at every C (the rows beside give each), where "
    "Qwen2.5-7B's closed loops meet theirs within noise on both cards. Part of it is the overhead transferred from "
    f"Qwen over-predicting Llama's small steps (its b=1 step ran {LLAMA_B1_RATIOS[_LLAMA_B1_FIRST]:.4f}x that session's "
    "prediction: h200-transferred-overhead-over-predicts-llamas); the rest, larger, has no mechanism yet: the loop's steps "
    "run faster than the same session's isolated decode steps of the same batch. Band: the other two C's "
    "measured/predicted +- their budgets and this run's, i.e. the claim that the shortfall is one fraction of the "
    "step across C.")


# --- the closed loops' throughput at C = 8, 32, 64 with the per-sequence excess (test_latency_closed_throughput.py) ---
CLOSED_THROUGHPUT_QUANTITY = "output_throughput_with_sequence_cost"
CLOSED_THROUGHPUT_C = (8, 32, 64)
# Qwen2.5-7B's closed.c8, c32 and c64 runs by C and stamp, oldest first: (measured / predicted throughput with the
# session's per-sequence excess, the check's noise budget, measured / simulated mean TTFT), each with its own session's
# setup and excess; test_closed_throughput_table_is_the_recorded_one recomputes them. The H200's sessions only: another
# card's session is judged by the bands, not written into the H200's tables.
CLOSED_THROUGHPUT_RUNS: dict[int, dict[str, tuple[float, float, float]]] = {
    8: {
        "2026-11-30T00:37:45Z": (0.9882, 0.0174, 0.9370),
        "2026-12-01T04:47:39.167263Z": (0.9868, 0.0295, 0.7757),
        "2026-12-01T06:44:22.000000Z": (0.9799, 0.0294, 0.9242),
        "2026-12-01T11:24:59.000000Z": (0.9781, 0.0313, 0.9211),
        "2026-12-02T00:05:58.000000Z": (0.9741, 0.0279, 0.8868),
        "2026-12-02T02:33:51.000000Z": (0.9715, 0.0228, 0.8933),
        "2026-12-02T04:52:35.000000Z": (0.9733, 0.0332, 0.8749),
        "2026-12-02T07:14:23.000000Z": (0.9738, 0.0201, 1.0483),
        "2026-12-02T14:18:58.000000Z": (0.9732, 0.0230, 0.9338),
        "2026-12-02T16:29:14.000000Z": (0.9752, 0.0211, 0.9802),
        "2026-12-02T23:51:19.000000Z": (0.9770, 0.0290, 0.8870),
        "2026-12-03T08:29:08.000000Z": (0.9710, 0.0285, 0.9372),
        "2026-12-03T12:06:46.000000Z": (0.9750, 0.0297, 0.9368),
        "2026-12-03T14:16:33.000000Z": (0.9767, 0.0221, 0.8457),
        "2026-12-03T21:25:39.000000Z": (0.9713, 0.0235, 0.9288),
        "2026-12-03T23:32:23.000000Z": (0.9722, 0.0261, 1.0232),
        "2026-12-04T00:09:44.000000Z": (0.9686, 0.0257, 1.0043),
        "2026-12-04T09:53:42.000000Z": (0.9762, 0.0229, 1.0152),
        "2026-12-04T10:05:35.000000Z": (0.9764, 0.0278, 0.9088),
    },
    32: {
        "2026-11-30T00:37:45Z": (0.9946, 0.0431, 1.5947),
        "2026-12-01T04:47:39.220360Z": (0.9878, 0.0442, 1.5738),
        "2026-12-01T06:44:22.000000Z": (0.9504, 0.0554, 1.8017),
        "2026-12-01T11:24:59.000000Z": (0.9459, 0.0559, 1.8469),
        "2026-12-02T00:05:58.000000Z": (0.9411, 0.0625, 1.8703),
        "2026-12-02T02:33:51.000000Z": (0.9502, 0.0561, 1.8053),
        "2026-12-02T04:52:35.000000Z": (0.9467, 0.0566, 1.8202),
        "2026-12-02T07:14:23.000000Z": (0.9598, 0.0538, 1.7705),
        "2026-12-02T14:18:58.000000Z": (0.9522, 0.0536, 1.7933),
        "2026-12-02T16:29:14.000000Z": (0.9404, 0.0504, 1.9230),
        "2026-12-02T23:51:19.000000Z": (0.9537, 0.0540, 1.8426),
        "2026-12-03T08:29:08.000000Z": (0.9461, 0.0532, 1.8172),
        "2026-12-03T12:06:46.000000Z": (0.9450, 0.0566, 1.8500),
        "2026-12-03T14:16:33.000000Z": (0.9565, 0.0530, 1.8029),
        "2026-12-03T21:25:39.000000Z": (0.9446, 0.0445, 1.8461),
        "2026-12-03T23:32:23.000000Z": (0.9550, 0.0523, 1.7621),
        "2026-12-04T00:09:44.000000Z": (0.9451, 0.0525, 1.9027),
        "2026-12-04T09:53:42.000000Z": (0.9511, 0.0581, 1.8031),
        "2026-12-04T10:05:35.000000Z": (0.9520, 0.0512, 1.8068),
    },
    64: {
        "2026-11-30T00:37:45Z": (0.9837, 0.0486, 1.4839),
        "2026-12-01T04:47:39.365268Z": (0.9905, 0.0484, 1.4829),
        "2026-12-01T06:44:22.000000Z": (0.9345, 0.0696, 1.6755),
        "2026-12-01T11:24:59.000000Z": (0.9308, 0.0658, 1.6858),
        "2026-12-02T00:05:58.000000Z": (0.9247, 0.0738, 1.7071),
        "2026-12-02T02:33:51.000000Z": (0.9290, 0.0655, 1.7042),
        "2026-12-02T04:52:35.000000Z": (0.9363, 0.0669, 1.6609),
        "2026-12-02T07:14:23.000000Z": (0.9448, 0.0682, 1.6414),
        "2026-12-02T14:18:58.000000Z": (0.9356, 0.0663, 1.6870),
        "2026-12-02T16:29:14.000000Z": (0.9208, 0.0617, 1.7325),
        "2026-12-02T23:51:19.000000Z": (0.9321, 0.0653, 1.7053),
        "2026-12-03T08:29:08.000000Z": (0.9347, 0.0644, 1.6545),
        "2026-12-03T12:06:46.000000Z": (0.9254, 0.0717, 1.6879),
        "2026-12-03T14:16:33.000000Z": (0.9410, 0.0653, 1.6460),
        "2026-12-03T21:25:39.000000Z": (0.9317, 0.0569, 1.6731),
        "2026-12-03T23:32:23.000000Z": (0.9480, 0.0668, 1.6271),
        "2026-12-04T00:09:44.000000Z": (0.9210, 0.0618, 1.7435),
        "2026-12-04T09:53:42.000000Z": (0.9304, 0.0654, 1.6608),
        "2026-12-04T10:05:35.000000Z": (0.9400, 0.0622, 1.6496),
    },
}


def closed_throughput_misses(c: int) -> tuple[str, ...]:
    """The stamps of the sessions whose throughput at C = c misses its noise budget."""
    return tuple(s for s, (r, b, _) in CLOSED_THROUGHPUT_RUNS[c].items() if abs(r - 1) > b)


def closed_throughput_envelope(c: int, budget: float, exclude: str | None = None) -> tuple[float, float]:
    """The band of Qwen2.5-7B's throughput at C = c: the lowest and highest ratio of its other recorded sessions (never
    the one stamped `exclude`, the run checked), widened by `budget` (the checked run's noise budget)."""
    return envelope((r for s, (r, _, _) in CLOSED_THROUGHPUT_RUNS[c].items() if not same_instant(s, exclude)), budget)


def _hhmm(stamp: str) -> str:
    return f"{stamp[:10]} {stamp[11:16]}"


def _span(values: list[float], digits: int) -> str:
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def _throughput_facts(c: int) -> tuple[str, str, int, int]:
    """(the ratios' span, the mean TTFT ratios' span, sessions, sessions beyond their budget) at C = c."""
    rows = CLOSED_THROUGHPUT_RUNS[c].values()
    return (_span([r for r, _, _ in rows], 3), _span([t for _, _, t in rows], 2), len(rows),
            len(closed_throughput_misses(c)))


def _band_sentence(c: int) -> str:
    _, _, n, k = _throughput_facts(c)
    return (f" Band, set at test time: the envelope of the other recorded H200 sessions' ratios at C = {c} (never the "
            f"run checked), widened by this run's noise budget; strict=False, since {n - k} of the {n} sessions sit "
            "inside their budget.")


def _c8_short_reason() -> str:
    ratios, ttft, n, k = _throughput_facts(8)
    return (
        "Closed loop at C = 8, predicted with the session's per-sequence excess measured apart: the throughput runs short "
        f"of that prediction in every recorded H200 session ({ratios} over {_count(n)}), {k} of them beyond their noise "
        "budget, and further short in the H100's session (the row beside gives it). On the H200 the first token is not "
        f"what comes late (mean TTFT {ttft}x the simulated), and the median ITL meets the same prediction within noise "
        "(test_latency_sequence_cost.py): the time is in the steps above the median, where the mean ITL runs above its "
        "prediction (on its noise budget since 2026-12-05: h200-light-load-itl-above-cause-not-established). Which steps, and why, is not established: no "
        "recording prices them apart." + _band_sentence(8))


def _prompt_steps_short_reason(c: int) -> str:
    """The reason at C = c of a closed loop whose first tokens come late (PROMPT_STEPS_SLOWER's mechanism)."""
    _, ttft, n, k = _throughput_facts(c)
    rows = CLOSED_THROUGHPUT_RUNS[c]
    timed = [r for s, (r, _, _) in rows.items() if s in STEADY_STATE_WITH_GEMM_ETA]
    early = [r for s, (r, _, _) in rows.items() if s not in STEADY_STATE_WITH_GEMM_ETA]
    return (
        f"Closed loop at C = {c}, predicted with the session's per-sequence excess measured apart: the throughput runs "
        f"{_span(timed, 3)} of that prediction over the {_count(len(timed))} recorded H200 sessions predicted with eta "
        f"from their GEMM timings and {_span(early, 3)} over the {_count(len(early))} before them (eta fitted on the "
        f"8,192 prefill prices the prompt steps slower), {k} of the {n} beyond their noise budget, and short in the "
        "H100's session too (the row beside). Its median ITL meets the same prediction within noise "
        "(test_latency_sequence_cost.py): the decode steps are priced, the first token is not (mean TTFT "
        f"{ttft}x the simulated: the frontend's ingress, which the simulation lacks, and the engine's queue and prompt "
        "steps). The steady-state check's finding names the mechanism: " + PROMPT_STEPS_SLOWER + _band_sentence(c))


def _c32_short_reason() -> str:
    misses = closed_throughput_misses(32)
    return (_prompt_steps_short_reason(32) + " The rule that puts a finding at a C (more than one session beyond its "
            "budget, every session short) was committed before the 2026-12-03 08:29 session ran, when one session had "
            "missed at C = 32; that session missed too, a held-out outcome. The sessions beyond their budget: "
            f"{', '.join(_hhmm(m) for m in misses)}.")


def _c64_short_reason() -> str:
    return _prompt_steps_short_reason(64)


# Which (model, C) carry a finding, decided on the whole table (test_closed_throughput_findings_are_where_the_sessions_
# miss holds Qwen2.5-7B's to it: a finding where more than one session misses its budget, all short):
# - Qwen2.5-7B at C = 8: short in every session, several beyond the budget, further on the H100; no mechanism measured
#   apart, so its id says the cause is not established. Not left on the 10% goal with a guard, as the same runs' mean ITL was
#   until 2026-12-05: most H200 sessions meet their throughput budget (the 2026-12-03 12:06 one, the
#   newest when this was decided, among them), so a guard that the run misses would fail there, while a budget and
#   a band from the other sessions are a sharper claim than 10%.
# - Qwen2.5-7B at C = 32: short in every session, their first tokens late as at C = 64 (the table's third column:
#   mean TTFT 1.6-1.9x simulated, where C = 8's is ~0.8-1.05x), so the first-token time of PROMPT_STEPS_SLOWER, its id
#   reused. Until the 2026-12-03 08:29 session only one session (2026-12-02 16:29) missed its budget, the miss a
#   2-sigma budget leaves to chance, and C = 32 had no finding; that session missed too (0.946 against +-5.3%), a
#   held-out outcome of this rule, committed before it ran.
# - Qwen2.5-7B at C = 64: the first-token time of PROMPT_STEPS_SLOWER, its id reused.
# - Llama-3.1-8B (one session): above its budget at C = 8 only, LLAMA_CLOSED_BELOW_ID; C = 32 and 64 within it.
# (the suffix the validation table counts as a finding whose cause is not established: report/validation.UNESTABLISHED)
CLOSED_C8_SHORT_ID = "h200-closed-loop-c8-throughput-short-cause-not-established"
_QWEN_THROUGHPUT: dict[int, tuple[str, Callable[[], str]]] = {
    8: (CLOSED_C8_SHORT_ID, _c8_short_reason),
    32: ("h200-prompt-steps-slower-than-modeled", _c32_short_reason),
    64: ("h200-prompt-steps-slower-than-modeled", _c64_short_reason),
}
LLAMA_THROUGHPUT_ABOVE = (8,)


def _llama_above_reason(c: int) -> str:
    others = " and ".join(str(o) for o in CLOSED_THROUGHPUT_C if o != c)
    return (LLAMA_CLOSED_BELOW + f" The throughput at C = {c} runs above the prediction that carries the same excess, "
            f"beyond its noise budget (the row beside gives both): its steps run faster than priced. At C = {others} the "
            "throughput sits within its budget. Band here, set at test time: the throughput's measured/predicted at "
            f"C = {others} (the same session, the same prediction) +- their budgets and this run's.")


# On the H100 (2026-12-05 21:41) Llama's throughput with the per-sequence excess carried runs below it at C = 32 and
# 64 (0.950x, 0.936x), the other sign from the H200's C = 8: its own finding.
H100_LLAMA_THROUGHPUT_BELOW = (32, 64)
H100_LLAMA_THROUGHPUT_BELOW_ID = "h100-llama-closed-throughput-below-with-the-sequence-cost"


def _h100_llama_below_reason(c: int) -> str:
    others = " and ".join(str(o) for o in CLOSED_THROUGHPUT_C if o != c)
    return (f"Llama-3.1-8B's first closed loops on the H100: the throughput at C = {c} runs below the prediction that "
            "carries the session's per-sequence excess (0.950x at C = 32, 0.936x at 64), beyond its noise budget: the "
            "steps that carry a prompt run slower than priced (h200-prompt-steps-slower-than-modeled), and they are a "
            "larger share of the run at high C. Band here, set at test time: the throughput's measured/predicted at "
            f"C = {others} (the same session, the same prediction) +- their budgets and this run's.")


def closed_throughput_cost_marks(model: str, c: int) -> tuple[pytest.MarkDecorator, ...]:
    """The finding of the closed loop's throughput at C = c with the per-sequence excess, its band set at test time
    (test_latency_closed_throughput.closed_throughput_band), or none."""
    if model == LLAMA:
        return ((() if c not in LLAMA_THROUGHPUT_ABOVE else
                 (pytest.mark.finding(LLAMA_CLOSED_BELOW_ID, hardware=CHECKED_ON, quantity=CLOSED_THROUGHPUT_QUANTITY,
                                      reason=_llama_above_reason(c), band_from="other-runs"),))
                + (() if c not in H100_LLAMA_THROUGHPUT_BELOW else
                   (pytest.mark.finding(H100_LLAMA_THROUGHPUT_BELOW_ID, hardware=H100, quantity=CLOSED_THROUGHPUT_QUANTITY,
                                        reason=_h100_llama_below_reason(c), band_from="other-runs"),)))
    if c not in _QWEN_THROUGHPUT:
        return ()
    fid, reason = _QWEN_THROUGHPUT[c]
    return (pytest.mark.finding(fid, hardware=CHECKED_ON, quantity=CLOSED_THROUGHPUT_QUANTITY, reason=reason(),
                                strict=False, band_from="other-runs"),)
