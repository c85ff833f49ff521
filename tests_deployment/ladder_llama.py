"""Findings of Llama-3.1-8B's rag ladder (test_ladder_replay.py::test_rung_gain_is_within_20_percent), as data.

Recorded in two device calls on two cards, the predictions those frozen in preregistered.json since 2026-12-01:
- 2026-12-03 09:08 (batch 20261203T090822Z, card GPU-eb486c2b): baseline and limits;
- 2026-12-03 12:17 (batch 20261203T121717Z, card GPU-833ea41f): prefix_cache, fp8_weights, fp8_kv, eager, ngram.
So prefix_cache's gains divide by a parent run in another session on another card; every other gain is within a batch.

The outcomes pre-registered before the second call (docs/RECORDING.md, "The fourteenth visit, as it starts") held:
- limits, prefix_cache: TTFT and ITL-tail gains short of the prediction (ladder_findings: h200-prompt-step-excess),
  banded [1, 1/g] from that mechanism's arithmetic (an added time per prompt-carrying step pulls the gain toward 1),
  except prefix_cache's ITL p99, which went the other way (PREFIX_ITL_P99 says how far, and that why is unknown);
- fp8_weights: TTFT p50/p99 and ITL p99 well below the predicted 1 (h200-fp8-weights-shorten-prompt-steps), banded
  [0.5, 1] / g as Qwen2.5-7B's: a compute-bound step at fp8 takes at most the bf16 step, at least half of it;
- fp8_kv: every gain within 20% (no finding);
- eager and ngram: the second slice's findings (h200-eager-steps-host-bound, h200-ngram-verify-steps-serial; ngram's
  TTFT p50 h200-ngram-ttft-not-delayed-without-async-scheduling, a cause of its own), banded
  by the measured gain's request-resampled 95% interval over the predicted gain (ladder_raw), as Qwen's are; run again
  on 2026-12-04 (ladder_repeat.py), by the second run's widened interval where it holds them (other-runs).
- limits, TTFT p99: -21% of the predicted gain and not resolved from noise: the p99 of 96 requests is their
  second-largest TTFT, and the resampled interval holds the prediction (h200-p99-gain-unresolved).

GAINS and STEP_MS are recomputed from the kept raw data by test_ladder_replay.py.
"""

from __future__ import annotations

import ladder_repeat as lrp
import pytest
from ladder_findings import COMPLETING_STEP_MS as QWEN_COMPLETING_STEP_MS
from ladder_findings import AGAIN, LAYERS, MEASURED_GAINS, MEASURED_ON, NGRAM_STEPS_ID, NGRAM_TTFT_ID, PROMPT_STEP, STEP_MS

from pytest_anatomy.specs.model import load_model

MODEL, WORKLOAD = "llama-3.1-8b", "rag"
# the kept batch that holds each rung's run
BATCH_OF: dict[str, str] = {"baseline": "20261203T090822Z", "limits": "20261203T090822Z",
                            **{s: "20261203T121717Z" for s in ("prefix_cache", "fp8_weights", "fp8_kv", "eager",
                                                                "ngram")}}
# (rung, metric) -> (measured gain over its parent, its request-resampled 95% interval), every gain outside 20%
GAINS: dict[tuple[str, str], tuple[float, tuple[float, float]]] = {
    ("limits", "ttft_p99_s"): (0.8845, (0.6525, 1.4673)),
    ("limits", "itl_p99_s"): (0.5946, (0.5674, 0.612)),
    ("prefix_cache", "ttft_p50_s"): (0.4189, (0.3659, 0.4596)),
    ("prefix_cache", "ttft_p99_s"): (0.172, (0.1581, 0.2347)),
    ("prefix_cache", "itl_p99_s"): (1.1106, (1.0791, 1.1619)),
    ("fp8_weights", "ttft_p50_s"): (0.6751, (0.6121, 0.733)),
    ("fp8_weights", "ttft_p99_s"): (0.7003, (0.6785, 0.7103)),
    ("fp8_weights", "itl_p99_s"): (0.591, (0.5853, 0.6084)),
    ("eager", "ttft_p50_s"): (2.0292, (1.9625, 2.1525)),
    ("eager", "ttft_p99_s"): (1.7404, (1.52, 1.8041)),
    ("eager", "itl_p50_s"): (5.4, (5.304, 5.5201)),
    ("eager", "output_throughput"): (0.2364, (0.2128, 0.2675)),
    ("eager", "goodput"): (0.0394, (0.0242, 0.0566)),
    ("ngram", "ttft_p50_s"): (0.9594, (0.888, 1.0668)),
    ("ngram", "itl_p50_s"): (0.5049, (0.4853, 0.5242)),
    ("ngram", "output_throughput"): (1.9613, (1.7565, 2.1808)),
    ("ngram", "goodput"): (1.9613, (1.9298, 2.0041)),
}
# By the engine's clock (ladder_raw): the step completing a prompt (ladder_findings.completing_step_ms: lowest and
# highest tercile median, ms) and a pure decode step of 16 / 1 sequences (ladder_raw.pure_step_ms, ms), per rung
COMPLETING_STEP_MS: dict[str, tuple[float, float]] = {"limits": (30.0, 32.6), "prefix_cache": (38.2, 39.3),
                                                      "fp8_weights": (27.6, 28.2), "fp8_kv": (27.6, 29.4),
                                                      "eager": (26.9, 27.6), "ngram": (21.8, 22.8)}
PURE_STEP_MS: dict[tuple[str, int], float] = {("limits", 16): 6.739, ("prefix_cache", 16): 6.163,
                                              ("fp8_kv", 16): 4.738, ("fp8_kv", 1): 3.617, ("eager", 16): 26.359,
                                              ("eager", 1): 24.625, ("ngram", 16): 9.985, ("ngram", 1): 6.317}


LLAMA_LAYERS = load_model(MODEL).num_layers
_QWEN_LAYER_MS = (STEP_MS[("eager", 16)] - STEP_MS[("fp8_kv", 16)]) / LAYERS  # Qwen2.5-7B's rag eager cost per layer
_LLAMA_EXTRA = PURE_STEP_MS[("eager", 16)] - PURE_STEP_MS[("fp8_kv", 16)]  # eager's added ms at 16 sequences


def _cs(step: str) -> str:
    lo, hi = COMPLETING_STEP_MS[step]
    return f"{lo:.1f}-{hi:.1f} ms"


UNRESOLVED_P99 = ("{rung}: TTFT p99 gain {g:.4g} measured [{lo:.4g}, {hi:.4g} resampled], {p:.4g} predicted: the p99 "
                  "of 96 requests is their second-largest TTFT, and the interval holds the prediction, so this run "
                  "cannot tell the gain from its prediction at 20%. Band: that interval over the predicted gain.")
ITL_P99 = ("{rung}: ITL p99 gain {g:.4g} measured, {p:.4g} predicted, as Qwen2.5-7B's limits rung ("
           f"{MEASURED_GAINS[('limits', 'itl_p99_s')]:.3f} measured): the 1,024-token budget splits each 1,000-token "
           "rag prompt into steps that carry a prompt chunk beside the decodes, and those steps run longer than priced. ")
PREFIX_TTFT = ("prefix_cache: {metric} gain {g:.4g} measured, {p:.4g} predicted (Qwen2.5-7B's TTFT p50: "
               f"{MEASURED_GAINS[('prefix_cache', 'ttft_p50_s')]:.3f}): with ~3,000 of each prompt's tokens cached the "
               f"step completing it still takes {_cs('prefix_cache')} by the engine's clock, where the step model "
               "prices a few ms beyond a decode step. Band: [1, 1/predicted], the added time's arithmetic. ")
PREFIX_ITL_P99 = (
    "prefix_cache: ITL p99 gain {g:.4g} measured [{lo:.4g}, {hi:.4g} resampled], {p:.4g} predicted and Qwen2.5-7B's "
    f"{MEASURED_GAINS[('prefix_cache', 'itl_p99_s')]:.3f}: the tail grew where both predicted it to shrink, outside "
    "the [1, 1/predicted] an added time allows. The ITL p99 is the step completing a prompt, and by the engine's clock "
    f"that step takes {_cs('prefix_cache')} here (84-862 new tokens beside ~15 decodes, ~3,000 cached) against "
    f"{_cs('limits')} in the parent limits run (1,008-token chunks), while a pure decode step of 16 sequences is "
    f"faster here ({PURE_STEP_MS[('prefix_cache', 16)]:.2f} against {PURE_STEP_MS[('limits', 16)]:.2f} ms), so the "
    "card is not slower at decode. The parent ran three hours earlier on another card (GPU-eb486c2b, batch "
    f"20261203T090822Z; this rung GPU-833ea41f), and Qwen's same step took {QWEN_COMPLETING_STEP_MS['prefix_cache'][0]:.1f}-"
    f"{QWEN_COMPLETING_STEP_MS['prefix_cache'][1]:.1f} ms: why Llama's cached-prompt "
    "step is the slower one is unknown (candidates: attention over the cached context in a graph-less step at "
    "Llama's 32 layers, or a card difference on compute-bound steps; neither is measured apart). Band: the "
    "measured gain's request-resampled 95% interval over the predicted gain, which covers the requests, not a "
    "second session.")
FP8_WEIGHTS = (
    "fp8_weights: {metric} gain {g:.4g} measured, {p:.4g} predicted, as Qwen2.5-7B's "
    f"({MEASURED_GAINS[('fp8_weights', 'ttft_p50_s')]:.3f} / {MEASURED_GAINS[('fp8_weights', 'ttft_p99_s')]:.3f} / "
    f"{MEASURED_GAINS[('fp8_weights', 'itl_p99_s')]:.3f} for TTFT p50 / p99 / ITL p99): the theory keeps bf16's GEMM "
    "peak for compute-bound steps, so it predicts no TTFT or ITL-tail gain; the step completing a prompt falls from "
    f"{_cs('prefix_cache')} to {_cs('fp8_weights')} by the engine's clock. Band: [0.5, 1] / predicted (at most the "
    "bf16 step, at least half of it at fp8's doubled peak). ")
EAGER = (
    "eager: {metric} gain {g:.4g} measured [{lo:.4g}, {hi:.4g} resampled], {p:.4g} predicted. As Qwen2.5-7B's "
    "(h200-eager-steps-host-bound), the eager step is host-bound: a pure decode step of 16 sequences takes "
    f"{PURE_STEP_MS[('eager', 16)]:.1f} ms eager against {PURE_STEP_MS[('fp8_kv', 16)]:.2f} ms with graphs (fp8_kv, "
    f"the same engine otherwise) and {PURE_STEP_MS[('eager', 1)]:.1f} ms for one sequence, so it hardly grows with "
    f"the batch, while the step completing a prompt ({_cs('eager')}) is no slower than with graphs "
    f"({_cs('fp8_kv')}). The theory prices eager as 12 launches per layer x 6 us (an assumption, not fitted). "
    "Pre-registered in docs/DEPLOYMENT.md: a per-layer host cost predicts Llama's added time as its "
    f"{LLAMA_LAYERS} layers x Qwen2.5-7B's measured {_QWEN_LAYER_MS:.3f} ms = {LLAMA_LAYERS * _QWEN_LAYER_MS:.1f} ms; "
    f"measured {_LLAMA_EXTRA:.1f} ms ({_LLAMA_EXTRA / LLAMA_LAYERS:.3f} ms per layer, "
    f"{_LLAMA_EXTRA / LLAMA_LAYERS / _QWEN_LAYER_MS:.2f}x Qwen's): not a per-layer cost alone, or a slower host: "
    "this session's engine starts also ran ~25% longer than the previous visit's (docs/RECORDING.md), and which it "
    "is, is not measured apart. Goodput collapses further because most requests' ITL now exceeds the SLO. Band: "
    "the measured gain's request-resampled 95% interval over the predicted gain.")
NGRAM = (
    "ngram: {metric} gain {g:.4g} measured [{lo:.4g}, {hi:.4g} resampled], {p:.4g} predicted with the run's own "
    "acceptance. As Qwen2.5-7B's (h200-ngram-verify-steps-serial): a pure verify step of 16 sequences takes "
    f"{PURE_STEP_MS[('ngram', 16)]:.2f} ms by the engine's clock against {PURE_STEP_MS[('fp8_kv', 16)]:.2f} ms for "
    f"the parent's plain decode step ({PURE_STEP_MS[('ngram', 1)]:.2f} against {PURE_STEP_MS[('fp8_kv', 1)]:.2f} ms "
    "for one sequence): async scheduling is disabled with n-gram drafting, so scheduling, the CPU n-gram lookup and "
    "rejection sampling run between steps; their split is unknown. Band: the measured gain's request-resampled 95% "
    "interval over the predicted gain.")

NGRAM_TTFT = (
    "ngram: {metric} gain {g:.4g} measured [{lo:.4g}, {hi:.4g} resampled], {p:.4g} predicted with the run's own "
    "acceptance: predicted to grow with the verify steps, TTFT falls instead, as on both chat ladders (" + NGRAM_TTFT_ID
    + ", where the engine's ingress and scheduled-to-first-token medians show async scheduling off moving TTFT's "
    "unmodelled parts). Carried from chat: this run's engine timelines were not read for it. Band: the measured "
    "gain's request-resampled 95% interval over the predicted gain.")

def _finding(step: str, metric: str, g: float, lo: float, hi: float,
             p: float) -> tuple[str, str, tuple[float, float], str]:
    """(finding id, reason, band, band_from) of one missed gain."""
    resampled = (round(lo / p, 4), round(hi / p, 4))
    if step == "limits" and metric == "ttft_p99_s":
        return ("h200-p99-gain-unresolved", UNRESOLVED_P99.format(rung=step, g=g, lo=lo, hi=hi, p=p), resampled,
                "checked-run")
    if step == "limits":
        return ("h200-prompt-step-excess", ITL_P99.format(rung=step, g=g, p=p) + PROMPT_STEP, (1.0, round(1 / p, 4)),
                "explanation")
    if step == "prefix_cache" and metric == "itl_p99_s":
        return ("h200-llama-cached-prompt-step-slower", PREFIX_ITL_P99.format(g=g, lo=lo, hi=hi, p=p), resampled,
                "checked-run")
    if step == "prefix_cache":
        return ("h200-prompt-step-excess", PREFIX_TTFT.format(metric=metric, g=g, p=p) + PROMPT_STEP,
                (1.0, round(1 / p, 4)), "explanation")
    if step == "fp8_weights":
        return ("h200-fp8-weights-shorten-prompt-steps", FP8_WEIGHTS.format(metric=metric, g=g, p=p),
                (round(0.5 / p, 4), round(1.0 / p, 4)), "explanation")
    if step == "ngram" and metric.startswith("ttft"):  # TTFT's cause is not the steps' (ladder_findings' split)
        return (NGRAM_TTFT_ID, NGRAM_TTFT.format(metric=metric, g=g, lo=lo, hi=hi, p=p), resampled, "checked-run")
    fid = "h200-eager-steps-host-bound" if step == "eager" else NGRAM_STEPS_ID
    return (fid, (EAGER if step == "eager" else NGRAM).format(metric=metric, g=g, lo=lo, hi=hi, p=p), resampled,
            "checked-run")


def rung_marks(model: str, workload: str, step: str, predicted: dict[str, float | None]) -> list[pytest.MarkDecorator]:
    """The findings of one rung's gains. `predicted`: the gains the test reconciles (the n-gram rung's simulated with
    the run's measured acceptance, NGRAM_PREDICTED)."""
    if (model, workload) != (MODEL, WORKLOAD):
        return []
    marks = []
    for (rung, metric), (g, (lo, hi)) in GAINS.items():
        p = NGRAM_PREDICTED.get(metric) if rung == "ngram" else predicted.get(metric)
        if rung != step or p is None:
            continue
        if lo <= p <= hi:  # a miss of the 20% target whose interval holds the prediction: within its error budget
            continue       # (gain_budget.py), so it agrees and no finding covers it (the table still lists the miss)
        fid, reason, band, band_from = _finding(rung, metric, g, lo, hi, p)
        again = AGAIN if band_from == "checked-run" else ""
        if band_from == "checked-run":  # run again (ladder_repeat): banded by the other run where it holds this one
            band, band_from, again = lrp.first_run_banded(MODEL, workload, rung, metric, p) or (band, band_from, again)
        reason += again
        marks.append(pytest.mark.finding(fid, reason=reason, quantity=f"{workload}.{step}.{metric}.gain",
                                         expected=band, hardware=MEASURED_ON, band_from=band_from,
                                         strict=lrp.strict(band, band_from)))
    return marks


# The n-gram rung's gains as predicted with its run's measured acceptance (test_ladder_replay.predicted_gains, from
# the preregistered calibration): E = 4.853 tokens per verify step, 98.4% of decode steps drafting. The marks need
# them at collection, before any recording is read; test_llama_ngram_prediction_is_the_recorded_one recomputes them.
NGRAM_PREDICTED: dict[str, float] = {"ttft_p50_s": 1.4399, "itl_p50_s": 0.2004, "output_throughput": 3.0348,
                                     "goodput": 3.0348}
