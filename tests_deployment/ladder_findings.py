"""The tuning ladder's findings, as data: the rung gains measured on the H200 (2026-12-02 05:02, Qwen2.5-7B, rag)
that miss the preregistered ones by more than issue 14's 20%, why, and the band each explanation allows.

Every measured gain a reason quotes is in MEASURED_GAINS, which test_ladder_replay.py::
test_finding_gains_are_the_recorded_ones recomputes from the recordings. The engine-clock step times quoted
(the step that carries a prompt's last chunk) are COMPLETING_STEP_MS, computed by completing_step_ms from the raw
timeline (results/h200/batches/20261202T050156Z/deployment-raw.jsonl.xz) and recomputed by test_ladder_replay.py::
test_completing_step_times_are_the_recorded_ones.

Bands are the mechanism's, never the measurement's: an unmodelled time added to every request's TTFT, or to the
step that completes a prompt, in both a rung and its parent pulls the measured gain from the predicted g toward 1,
so measured / predicted lies in [1, 1 / g] for g < 1. fp8 weights can at most halve a step (half the weight bytes,
twice the GEMM peak) and never lengthen one: a gain in [0.5, 1] where 1 was predicted.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

MEASURED_ON = "h200"
MODEL, WORKLOAD = "qwen2.5-7b", "rag"
# the batch that measured the ladder, its raw timeline kept verbatim (COMPLETING_STEP_MS is computed from it)
RAW_TIMELINE = Path(__file__).resolve().parents[1] / "results" / MEASURED_ON / "batches" / "20261202T050156Z" / "deployment-raw.jsonl.xz"

# The step that completes a prompt, by the engine's clock: per request, the longest gap between consecutive engine
# outputs of any request (arrival_time + each engine_chunks timestamp) from its scheduling to its first token, the
# window's ends included; median per tercile of the requests' tail length (input - cached tokens), over the requests
# after the first 16 (which arrive together). (lowest, highest) tercile median in ms, per rung.
COMPLETING_STEP_MS: dict[str, tuple[float, float]] = {"limits": (26.6, 31.7), "prefix_cache": (21.4, 23.2),
                                                      "fp8_weights": (12.8, 15.2)}
FIRST_TOGETHER = 16  # the workload's first requests, sent at once (closed loop at its concurrency)


def completing_step_ms(requests: list[dict]) -> list[float]:
    """The three tercile medians (ms, tails ascending) of COMPLETING_STEP_MS's quantity over one run's raw requests."""
    outputs = sorted(r["engine"]["arrival_time"] + t for r in requests if r.get("engine") for t in r["engine_chunks"])
    rows = []
    for r in requests[FIRST_TOGETHER:]:
        e = r["engine"]
        start, end = e["arrival_time"] + e["scheduled_ts"], e["arrival_time"] + e["first_token_ts"]
        points = [start, *(t for t in outputs if start < t < end), end]
        rows.append((r["input_len"] - r["num_cached_tokens"], max(b - a for a, b in zip(points, points[1:]))))
    rows.sort(key=lambda row: row[0])
    n = len(rows)
    thirds = (rows[: n // 3], rows[n // 3 : 2 * n // 3], rows[2 * n // 3 :])
    return [statistics.median(gap for _, gap in third) * 1e3 for third in thirds]


def _ms(step: str) -> str:
    lo, hi = COMPLETING_STEP_MS[step]
    return f"{lo:.1f}-{hi:.1f} ms"


# measured gain (rung / parent) of each diverging (rung, metric), 2026-12-02 05:02 (recomputed by a test)
MEASURED_GAINS: dict[tuple[str, str], float] = {
    ("limits", "itl_p99_s"): 0.6259, ("prefix_cache", "ttft_p50_s"): 0.2752,
    ("prefix_cache", "itl_p99_s"): 0.7461, ("fp8_weights", "ttft_p50_s"): 0.6425,
    ("fp8_weights", "ttft_p99_s"): 0.6829, ("fp8_weights", "itl_p99_s"): 0.5827}

PROMPT_STEP = (
    "The step that carries a prompt's last chunk runs far above the step model: in the prefix-cache run (84-862 "
    f"new tokens beside 15 decodes, ~3,000 cached) it takes {_ms('prefix_cache')} by the engine's clock (median per tercile "
    "of tail length: not growing with the tail) where the step model prices 6.7 ms and a pure decode step takes "
    f"4.7 ms; with 1,008-token chunks (limits) the completing step's gap is {_ms('limits')} against 21.4-22.6 ms "
    "priced. Re-simulating every rung with its run's median excess (limits 8.1 ms, prefix_cache 15.9 ms, "
    "fp8_weights 7.4 ms, fp8_kv 8.2 ms per completing step) and its frontend ingress + egress (3.5-6 ms) gives "
    "gains of 0.277 (prefix_cache TTFT p50) and 0.661 (fp8_weights TTFT p50) against 0.275 and 0.643 measured, "
    "so this step is what the gains miss; for limits' ITL p99 it gives 0.471 of the 0.626 measured (30.3 of "
    "44.4 ms): the rest is unknown. The same excess is the latency suite's h200-ttft-short-prefill-and-frontend "
    "(lone short prefills 1.4-1.8x the model), which the ladder's simulation omits (no RequestTimes). Why the "
    "step is slow is not isolated: with max_num_seqs 16 vLLM captured CUDA graphs only up to 32 tokens (the log: "
    "7 piecewise sizes 1-32, against 51 up to 512 at the defaults), so every step carrying a prompt runs without "
    "a graph; the excess not growing with the tail, and shrinking with fp8 weights (next finding), says GPU time "
    "per step rather than per token. Request-resampled 95% intervals of these gains exclude the predictions "
    "(docs/DEPLOYMENT.md), so it is not noise.")
PROMPT_STEP_REASON = {
    ("limits", "itl_p99_s"): "limits: ITL p99 gain {g:.3f} measured, {p:.3f} predicted (the 1,024-token budget "
                             "moves ITL p99 from 70.9 to 44.4 ms, predicted 65.3 to 22.6 ms). ",
    ("prefix_cache", "ttft_p50_s"): "prefix_cache: TTFT p50 gain {g:.3f} measured, {p:.3f} predicted (37.3 ms "
                                    "measured against 8.0 ms predicted once the cache hits 2,992 of ~3,200 tokens; "
                                    "engine scheduling-to-first-token median 29.9 ms). ",
    ("prefix_cache", "itl_p99_s"): "prefix_cache: ITL p99 gain {g:.3f} measured, {p:.3f} predicted (33.1 ms against "
                                   "11.1 ms: the ITL p99 is the completing step). ",
}
FP8_STEP = (
    "fp8_weights: the theory keeps bf16's GEMM peak for compute-bound steps (theory/fp8.py, docs: prefill gains "
    "under-predicted), so it predicts no TTFT or ITL-tail gain; measured, the step carrying a prompt's tail falls "
    f"from {_ms('prefix_cache')} to {_ms('fp8_weights')} (engine clock, medians per tercile of tail length) and with it TTFT p50 "
    "(37.3 to 24.0 ms), TTFT p99 and ITL p99 (33.1 to 19.3 ms). Pure decode steps fall 4.74 to 3.40 ms, the "
    "0.726 predicted (measured ITL p50 gain 0.729: the bytes model holds). Which part of the completing step's "
    "excess fp8 removes (GEMMs at fp8's peak, or the graph-less step's own cost) is unknown. ")
FP8_REASON = "fp8_weights: {metric} gain {g:.3f} measured, {p:.3f} predicted. "


def _band(step: str, predicted: float) -> tuple[float, float]:
    if step == "fp8_weights":  # at most half a step, never longer: gain in [0.5, 1], predicted 1
        return (round(0.5 / predicted, 4), round(1.0 / predicted, 4))
    return (1.0, round(1 / predicted, 4))  # an added time pulls g toward 1


def rung_marks(model: str, workload: str, step: str, predicted: dict[str, float | None]) -> list[pytest.MarkDecorator]:
    """The findings of one rung's gains (test_rung_gain_is_within_20_percent), quantity by quantity."""
    if (model, workload) != (MODEL, WORKLOAD):
        return []
    marks = []
    for (rung, metric), g in MEASURED_GAINS.items():
        p = predicted.get(metric)
        if rung != step or p is None:
            continue
        if rung == "fp8_weights":
            fid, reason = "h200-fp8-weights-shorten-prompt-steps", FP8_REASON.format(metric=metric, g=g, p=p) + FP8_STEP
        else:
            fid, reason = "h200-prompt-step-excess", PROMPT_STEP_REASON[(rung, metric)].format(g=g, p=p) + PROMPT_STEP
        marks.append(pytest.mark.finding(fid, reason=reason, quantity=f"{workload}.{step}.{metric}.gain",
                                         expected=_band(step, p), hardware=MEASURED_ON))
    return marks
