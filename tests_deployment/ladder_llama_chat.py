"""Llama-3.1-8B's chat ladder and its chat plan_top, as data (2026-12-03 14:27-14:37, card GPU-0a76d8fe, new): the
rung gains that miss the preregistered ones by more than issue 14's 20%, plan's chat recommendation missing its ITL
SLO, why, and each one's band.

Two device calls: batch 20261203T142751Z (baseline, limits, prefix_cache, fp8_weights, fp8_kv) and 20261203T143336Z
(eager, ngram, plan_top; eager and ngram branch off the first call's fp8_kv). Llama's rag plan_top (batch
20261203T142608Z, the same card) met the rag SLO; test_the_recommended_plan_meets_its_slo holds it there.

Pre-registered (docs/DEPLOYMENT.md "Next visits", docs/RECORDING.md "The fifteenth H200 visit: plan"): the chat slices
"predict the same misses" as Qwen2.5-7B's chat (ladder_chat.py). Held for fp8_weights (TTFT p50, p99, ITL p99) and
eager (TTFT p50, p99, ITL p50, throughput, goodput); in part for prefix_cache (TTFT p50 missed; TTFT p99 and ITL p99
moved as on Qwen but stayed within 20%) and ngram (TTFT p50 and p99 missed; ITL p50 missed where Qwen's sat at the
edge, ITL p99 agreed where Qwen's missed); not for fp8_kv, which lengthened the prompt windows Qwen's shortened (a new
finding). Both plan_tops were predicted to meet their SLOs: rag's did, chat's missed ITL p99.

Every number a reason quotes is a constant below, recomputed by test_ladder_llama_chat.py from the kept raw timelines
(ladder_raw's methods), the preregistered calibration and the kept deployment.json. Bands, as Qwen's chat ladder
(ladder_chat.py): the measured gain's request-resampled 95% interval over the predicted gain (checked-run; fp8_weights
takes the mechanism's [0.5, 1], ladder_findings.fp8_weights_band); every interval excludes its prediction (not request
noise) and none covers a restart of the engine: the rungs run again since (prefix_cache, fp8_kv, eager, ngram; fp8_kv
also by the cause test repeat) are banded by every other run where they all hold it, else by their hull where the
rung ran three times and that holds it (ladder_repeat.banded). plan_top has
no parent: its band is its ITL p99's request-resampled 95% interval over the SLO it is held to.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ladder_chat as lc
import cause_findings as cf
import ladder_findings as lf
import ladder_repeat as lrp
import ladder_llama as ll

MODEL, WORKLOAD, USERS = ll.MODEL, "chat", lc.USERS
FIRST_BATCH, SECOND_BATCH, RAG_PLAN_BATCH = "20261203T142751Z", "20261203T143336Z", "20261203T142608Z"
SECOND_SLICE = ("eager", "ngram", "plan_top")
_PRE = json.loads((Path(__file__).parent / "preregistered.json").read_text())
SLO_ITL_MS = json.loads((Path(__file__).parent / "workloads" / "chat.json").read_text())["slo"]["itl_ms"]
PLAN_PREDICTED_ITL_P99_MS = _PRE["plan_top"][MODEL][WORKLOAD]["predicted"]["itl_p99_s"] * 1e3


def batch_of(step: str) -> str:
    """The kept batch that measured a Llama chat rung."""
    return SECOND_BATCH if step in SECOND_SLICE else FIRST_BATCH


# (measured gain, its resampled 95% interval) of each Llama chat (rung, metric) outside 20% of its prediction
GAINS: dict[tuple[str, str], tuple[float, float, float]] = {
    ("prefix_cache", "ttft_p50_s"): (0.935, 0.8326, 1.0453),
    ("fp8_weights", "ttft_p50_s"): (0.66, 0.6072, 0.7141), ("fp8_weights", "ttft_p99_s"): (0.6398, 0.6289, 0.6542),
    ("fp8_weights", "itl_p99_s"): (0.551, 0.5422, 0.5606),
    ("fp8_kv", "ttft_p50_s"): (1.4853, 1.3282, 1.5597), ("fp8_kv", "itl_p99_s"): (1.5756, 1.5637, 1.5888),
    ("eager", "ttft_p50_s"): (1.5049, 1.4476, 1.5523), ("eager", "ttft_p99_s"): (1.6558, 1.5188, 1.7193),
    ("eager", "itl_p50_s"): (4.1272, 4.0648, 4.2053), ("eager", "output_throughput"): (0.2576, 0.227, 0.309),
    ("eager", "goodput"): (0.2382, 0.2169, 0.2954),
    ("ngram", "ttft_p50_s"): (0.8152, 0.7686, 0.87), ("ngram", "ttft_p99_s"): (1.4494, 1.2986, 1.5059),
    ("ngram", "itl_p50_s"): (0.4665, 0.459, 0.4822)}
# the n-gram rung's predicted gains, simulated with the run's measured E and draft share (predicted_gains)
NGRAM_PREDICTED: dict[str, float] = {"ttft_p50_s": 1.6645, "ttft_p99_s": 1.0336, "itl_p50_s": 0.3062}
NGRAM_PREDICTED_ITL_P50_MS = 1.13  # the simulated n-gram rung's ITL p50 at the run's E and draft share
# measured metrics the reasons quote, ms (ladder_metrics over the kept raw runs, as the device plan computed them)
METRIC_MS: dict[tuple[str, str], float] = {
    ("limits", "ttft_p50_s"): 46.81, ("prefix_cache", "ttft_p50_s"): 43.77, ("fp8_weights", "ttft_p50_s"): 28.89,
    ("fp8_kv", "ttft_p50_s"): 42.91, ("eager", "ttft_p50_s"): 64.58, ("ngram", "ttft_p50_s"): 34.98,
    ("limits", "ttft_p99_s"): 392.81, ("prefix_cache", "ttft_p99_s"): 242.06, ("fp8_weights", "ttft_p99_s"): 154.86,
    ("plan_top", "ttft_p99_s"): 152.35, ("fp8_kv", "itl_p50_s"): 4.9, ("ngram", "itl_p50_s"): 2.29,
    ("limits", "itl_p99_s"): 36.36, ("prefix_cache", "itl_p99_s"): 38.81, ("fp8_weights", "itl_p99_s"): 21.39,
    ("fp8_kv", "itl_p99_s"): 33.7, ("eager", "itl_p99_s"): 40.16, ("plan_top", "itl_p99_s"): 26.59}
QWEN_PLAN_ITL_P99_MS = 21.33  # Qwen2.5-7B's chat plan_top (batch lc.SECOND_BATCH), under the same SLO
# largest captured CUDA-graph size of each rung's engine (deployment.json: resolved.cudagraph_capture_sizes)
CAPTURED_MAX: dict[str, int] = {"baseline": 512, "limits": 64, "prefix_cache": 64, "fp8_weights": 64, "fp8_kv": 64,
                                "eager": 0, "ngram": 320, "plan_top": 512}

# Engine clock (ladder_raw). Prompt windows: median ms; (lowest, highest) tercile median by new tokens; 90th percentile
# and longest; the median of the windows whose step fits 512 tokens (inside) and of those above it; Qwen's above 512.
WINDOW_MS = {"limits": 24.0, "prefix_cache": 27.5, "fp8_weights": 16.0, "fp8_kv": 24.5, "eager": 21.1, "ngram": 19.4}
WINDOW_TERCILES_MS = {"limits": (26.2, 22.6), "prefix_cache": (28.2, 27.6)}
WINDOW_Q90_MS = {"limits": 35.1, "prefix_cache": 38.4, "fp8_weights": 21.5, "fp8_kv": 33.2}
WINDOW_MAX_MS = {"fp8_weights": 27.1, "fp8_kv": 35.7}
INSIDE_512_MS = {"baseline": 12.4, "plan_top": 12.2}
ABOVE_512_MS = {"baseline": 24.5, "fp8_weights": 15.6, "fp8_kv": 27.0, "plan_top": 24.7}
QWEN_ABOVE_512_MS = {"fp8_weights": 22.5, "fp8_kv": 19.8, "plan_top": 17.4}
# pure decode (ngram: verify) steps, median ms (pure_step_ms), (rung, batch); the same priced (lf.priced_step_ms)
STEP_MS = {("prefix_cache", 32): 5.89, ("fp8_weights", 32): 4.91, ("fp8_kv", 1): 3.54, ("fp8_kv", 32): 4.95,
           ("eager", 1): 20.18, ("eager", 32): 19.56, ("ngram", 1): 5.44, ("ngram", 32): 10.36}
PRICED_STEP_MS = {("prefix_cache", 32): 5.61, ("fp8_weights", 32): 4.02, ("fp8_kv", 1): 3.36, ("fp8_kv", 32): 3.68,
                  ("eager", 1): 5.66, ("eager", 32): 5.99, ("ngram", 1): 3.36, ("ngram", 32): 5.66}
# the step model's price of the mean 582-token prompt beside 31 decodes, uncached and with its 256-token system prompt
# cached (lc.priced_prompt_ms); and of plan_top's median window above 512 tokens (PLAN_BIG_WINDOW: new tokens beside
# outputs, medians) on the cached system prompt
PRICED_PROMPT_MS = {"limits": 15.6, "prefix_cache": 10.11}
PLAN_BIG_WINDOW, PRICED_PLAN_BIG_MS = (654, 31), 17.04
# TTFT's engine parts, median ms (engine_median_ms)
ENGINE_MEDIAN_MS = {("limits", "prefill"): 36.99, ("prefix_cache", "prefill"): 37.46, ("fp8_weights", "prefill"): 22.64,
                    ("fp8_kv", "ingress"): 2.89, ("fp8_kv", "prefill"): 33.69, ("eager", "ingress"): 19.07,
                    ("eager", "prefill"): 42.84, ("ngram", "ingress"): 12.91, ("ngram", "prefill"): 20.0}
# the opening burst (opening_burst: the USERS requests sent at once): (steps, ms)
BURST = {"limits": (17, 401), "prefix_cache": (9, 242), "fp8_weights": (9, 154), "fp8_kv": (9, 154), "eager": (10, 253),
         "ngram": (10, 223)}
NEW_TOKENS = {"limits": 93187, "prefix_cache": 56067}  # every request's input less its cached tokens, summed
# ngram: the stream (decode chunks and their tokens) and the counters
NGRAM_STREAM = {"chunks": 7780, "tokens": 36131, "drafts": 7332, "accepted": 28688}
# The ITL p99 tail on the engine's clock (itl_tail_windows(requests, 512)): its tokens, those closing a prompt window,
# those closing a window whose step exceeds 512 tokens; prompt windows, and those above 512 tokens; the ITL p99's
# request-resampled 95% interval, ms (resampled_metric_interval)
TAIL_WINDOWS = {"plan_top": (362, 362, 362), "fp8_kv": (362, 362, 270)}
WINDOWS = {"plan_top": (117, 30), "fp8_kv": (129, 37)}
PLAN_ITL_P99_INTERVAL_MS = (25.7, 26.66)


def _m(rung: str, metric: str, digits: int = 1) -> str:
    return f"{METRIC_MS[(rung, metric)]:.{digits}f}"


def _burst(rung: str) -> str:
    return f"{BURST[rung][0]} steps in {BURST[rung][1]} ms"


def _sms(rung: str, batch: int) -> str:
    return f"{STEP_MS[(rung, batch)]:.2f}"


def _lcs(step: str) -> str:
    lo, hi = ll.COMPLETING_STEP_MS[step]
    return f"{lo:.1f}-{hi:.1f}"


PROMPT_STEP = (
    "Llama-3.1-8B's chat, as Qwen2.5-7B's: the step carrying a prompt does not shrink with the prompt. By the engine's "
    f"clock limits' prompt windows take {WINDOW_TERCILES_MS['limits'][0]:.1f} ms for the third with the fewest new "
    f"tokens and {WINDOW_TERCILES_MS['limits'][1]:.1f} ms for the third with the most (median {WINDOW_MS['limits']:.1f}), "
    f"prefix_cache's {WINDOW_TERCILES_MS['prefix_cache'][0]:.1f} and {WINDOW_TERCILES_MS['prefix_cache'][1]:.1f} ms "
    f"(median {WINDOW_MS['prefix_cache']:.1f}), where the step model prices the mean {lc.MEAN_PROMPT}-token prompt "
    f"beside 31 decodes at {PRICED_PROMPT_MS['limits']:.2f} ms and {PRICED_PROMPT_MS['prefix_cache']:.2f} ms with its "
    f"{lc.SYSTEM_PROMPT}-token system prompt cached (a pure decode step of 32: {_sms('prefix_cache', 32)} ms, priced "
    f"{PRICED_STEP_MS[('prefix_cache', 32)]:.2f}). With max_num_seqs 32 vLLM captured CUDA graphs only up to "
    f"{CAPTURED_MAX['limits']} tokens, so every prompt step runs without one; the baseline engine (graphs to "
    f"{CAPTURED_MAX['baseline']}) runs its windows whose step fits {CAPTURED_MAX['baseline']} tokens in "
    f"{INSIDE_512_MS['baseline']:.1f} ms and those above it in {ABOVE_512_MS['baseline']:.1f} ms (plan_top: "
    f"{INSIDE_512_MS['plan_top']:.1f} and {ABOVE_512_MS['plan_top']:.1f}). So the cache that cuts the new tokens from "
    f"{NEW_TOKENS['limits']:,} to {NEW_TOKENS['prefix_cache']:,} (hits exact) leaves TTFT p50 at "
    f"{_m('limits', 'ttft_p50_s')} -> {_m('prefix_cache', 'ttft_p50_s')} ms (scheduled to first token "
    f"{ENGINE_MEDIAN_MS[('limits', 'prefill')]:.1f} -> {ENGINE_MEDIAN_MS[('prefix_cache', 'prefill')]:.1f} ms). Unlike "
    f"Qwen's, TTFT p99 (the opening burst: {_burst('limits')} -> {_burst('prefix_cache')}; "
    f"{_m('limits', 'ttft_p99_s')} -> {_m('prefix_cache', 'ttft_p99_s')} ms) and ITL p99 ({_m('limits', 'itl_p99_s')} -> "
    f"{_m('prefix_cache', 'itl_p99_s')} ms; windows' 90th percentile {WINDOW_Q90_MS['limits']:.1f} -> "
    f"{WINDOW_Q90_MS['prefix_cache']:.1f}) moved the same way but stayed within 20% of their predicted gains. Band: the "
    "measured gain's request-resampled 95% interval over the predicted gain.")

FP8_STEP = (
    "fp8_weights on Llama's chat, as on Qwen's chat and both rags: the theory prices compute-bound steps at bf16's peak "
    f"and predicts no TTFT or ITL-tail gain; the graph-less prompt windows fall {WINDOW_MS['prefix_cache']:.1f} -> "
    f"{WINDOW_MS['fp8_weights']:.1f} ms (median; 90th percentile {WINDOW_Q90_MS['prefix_cache']:.1f} -> "
    f"{WINDOW_Q90_MS['fp8_weights']:.1f}), and with them TTFT p50 ({_m('prefix_cache', 'ttft_p50_s')} -> "
    f"{_m('fp8_weights', 'ttft_p50_s')} ms; scheduled to first token {ENGINE_MEDIAN_MS[('prefix_cache', 'prefill')]:.1f} "
    f"-> {ENGINE_MEDIAN_MS[('fp8_weights', 'prefill')]:.1f}), the opening burst ({_burst('prefix_cache')} -> "
    f"{_burst('fp8_weights')}: TTFT p99 {_m('prefix_cache', 'ttft_p99_s')} -> {_m('fp8_weights', 'ttft_p99_s')} ms) and "
    f"ITL p99 ({_m('prefix_cache', 'itl_p99_s')} -> {_m('fp8_weights', 'itl_p99_s')} ms). Pure decode steps of 32 fall "
    f"{_sms('prefix_cache', 32)} -> {_sms('fp8_weights', 32)} ms where {PRICED_STEP_MS[('prefix_cache', 32)]:.2f} -> "
    f"{PRICED_STEP_MS[('fp8_weights', 32)]:.2f} is priced (ITL p50 within 20%). Which part of the graph-less step fp8 "
    "removes is unknown. " + lf.FP8_WEIGHTS_BAND)

FP8_KV_ID = "h200-llama-fp8-kv-lengthens-prompt-windows"
_TW, _WN = TAIL_WINDOWS["fp8_kv"], WINDOWS["fp8_kv"]
FP8_KV_STEP = (
    f"fp8_kv on Llama's chat: TTFT p50 rises {_m('fp8_weights', 'ttft_p50_s')} -> {_m('fp8_kv', 'ttft_p50_s')} ms and ITL "
    f"p99 {_m('fp8_weights', 'itl_p99_s')} -> {_m('fp8_kv', 'itl_p99_s')} ms where no change is predicted: the opposite "
    "of Qwen2.5-7B's fp8_kv rung (h200-fp8-kv-shortens-long-prompt-windows). The decode step does not move (32 "
    f"sequences {_sms('fp8_weights', 32)} -> {_sms('fp8_kv', 32)} ms, priced {PRICED_STEP_MS[('fp8_weights', 32)]:.2f} "
    f"-> {PRICED_STEP_MS[('fp8_kv', 32)]:.2f}: the decode gain absent again), nor the opening burst of 1,024-token prompt "
    f"chunks ({_burst('fp8_kv')}, as with bf16 KV; TTFT p99 agrees). The windows where a prompt joins the "
    f"running decodes in a graph-less step lengthen: median {WINDOW_MS['fp8_weights']:.1f} -> {WINDOW_MS['fp8_kv']:.1f} "
    f"ms, 90th percentile {WINDOW_Q90_MS['fp8_weights']:.1f} -> {WINDOW_Q90_MS['fp8_kv']:.1f}, longest "
    f"{WINDOW_MAX_MS['fp8_weights']:.1f} -> {WINDOW_MAX_MS['fp8_kv']:.1f}, above 512 tokens "
    f"{ABOVE_512_MS['fp8_weights']:.1f} -> {ABOVE_512_MS['fp8_kv']:.1f}; scheduled to first token "
    f"{ENGINE_MEDIAN_MS[('fp8_weights', 'prefill')]:.1f} -> {ENGINE_MEDIAN_MS[('fp8_kv', 'prefill')]:.1f} ms. All {_TW[0]} "
    f"tokens at or above the ITL p99 close one of the {_WN[0]} prompt windows (ladder_raw.itl_tail_windows; {_TW[2]} of "
    f"them one of the {_WN[1]} above 512 tokens). A second fp8-KV engine on the card, plan_top in the next call, shows "
    f"the same: its windows above 512 tokens (graph-less there too) take {ABOVE_512_MS['plan_top']:.1f} ms, as bf16's "
    f"baseline ({ABOVE_512_MS['baseline']:.1f}): on this card only the engine with fp8 weights alone shortened them "
    "(started once: whether its start or fp8 KV is the odd one is not measured apart). On Qwen's card fp8 KV shortened "
    f"the same windows (above 512 tokens {QWEN_ABOVE_512_MS['fp8_weights']:.1f} -> {QWEN_ABOVE_512_MS['fp8_kv']:.1f} ms, "
    f"plan_top {QWEN_ABOVE_512_MS['plan_top']:.1f}); on Llama's rag card it left the step completing a prompt alone "
    f"({_lcs('fp8_weights')} -> {_lcs('fp8_kv')} ms). Cause unknown: fp8 KV's attention in a step mixing a prompt with "
    "decodes (FA3 with an fp8 query and the log's uncalibrated q_scale; the step model prices fp8 KV as bytes only) on "
    "Llama's heads (32 query over 8 KV, Qwen's 28 over 4), or this card or host on graph-less steps. Both tests since "
    "made narrow it: fp8_weights and fp8_kv repeated in one call on another card (cause test repeat) lengthened the "
    f"windows again (all windows {cf.LLAMA_REPEAT_RATIO:.3f}x, inside the band around the first visit's "
    f"{cf.LLAMA_FIRST_RATIO:.3f}x), so it is fp8 KV's and not an engine start's; and plan_top with graphs captured to its "
    f"budget (cause test graphs-to-budget) ran the same fp8-KV prompt windows above 512 tokens in {cf.ABOVE_MS:.2f} ms, so the lengthening is confined to graph-less steps (cause_findings.py). Band: the measured "
    "gain's request-resampled 95% interval over the predicted gain.")

_EXTRA = STEP_MS[("eager", 32)] - STEP_MS[("fp8_kv", 32)]
_ASSUMED_LAYER_MS = (PRICED_STEP_MS[("eager", 32)] - PRICED_STEP_MS[("fp8_kv", 32)]) / ll.LLAMA_LAYERS
_QWEN_CHAT_LAYER_MS = (lc.STEP_MS[("eager", 32)] - lc.STEP_MS[("fp8_kv", 32)]) / lf.LAYERS
EAGER_STEP = (
    f"On Llama's chat (32 sequences): a pure decode step of 32 takes {_sms('eager', 32)} ms eager against "
    f"{_sms('fp8_kv', 32)} ms with graphs (fp8_kv), priced {PRICED_STEP_MS[('eager', 32)]:.2f} and "
    f"{PRICED_STEP_MS[('fp8_kv', 32)]:.2f}: eager adds {_EXTRA:.2f} ms, {_EXTRA / ll.LLAMA_LAYERS:.3f} ms per layer "
    f"against {_ASSUMED_LAYER_MS:.3f} assumed ({_EXTRA / ll.LLAMA_LAYERS / _ASSUMED_LAYER_MS:.1f}x). Per layer that is "
    f"{_EXTRA / ll.LLAMA_LAYERS / _QWEN_CHAT_LAYER_MS:.2f}x Qwen2.5-7B's chat card ({_QWEN_CHAT_LAYER_MS:.3f}) and "
    f"{_EXTRA / ll.LLAMA_LAYERS / (ll._LLAMA_EXTRA / ll.LLAMA_LAYERS):.2f}x Llama's rag card "
    f"({ll._LLAMA_EXTRA / ll.LLAMA_LAYERS:.3f}): the host cost per layer varies by host more than by model. One "
    f"sequence: {_sms('eager', 1)} ms eager, {_sms('fp8_kv', 1)} with graphs: flat in the batch, host-bound. Prompt "
    f"windows take {WINDOW_MS['eager']:.1f} ms eager against {WINDOW_MS['fp8_kv']:.1f} ms with graphs (graph-less at "
    f"max_num_seqs 32, and lengthened by fp8 KV on this card: {FP8_KV_ID}). TTFT p50 {_m('eager', 'ttft_p50_s')} against "
    f"{_m('fp8_kv', 'ttft_p50_s')} ms: a request waits {ENGINE_MEDIAN_MS[('eager', 'ingress')]:.1f} ms (median) to be "
    f"queued by the busy engine core against {ENGINE_MEDIAN_MS[('fp8_kv', 'ingress')]:.1f}, and scheduling to first "
    f"token takes {ENGINE_MEDIAN_MS[('eager', 'prefill')]:.1f} against {ENGINE_MEDIAN_MS[('fp8_kv', 'prefill')]:.1f} ms; "
    f"TTFT p99, the opening burst: {_burst('eager')} against {_burst('fp8_kv')}. Throughput and goodput follow the "
    f"decode step; ITL p99 agrees ({_m('eager', 'itl_p99_s')} against {_m('fp8_kv', 'itl_p99_s')} ms: the parent's tail "
    "is already its long prompt windows). Band: the measured gain's request-resampled 95% interval over the predicted "
    "gain.")

_NG = NGRAM_STREAM
_COUNTER_TPS = _NG["tokens"] / (_NG["tokens"] - _NG["accepted"])
_NGRAM_ACCEPT = (
    f"On Llama's chat acceptance is the prediction's input (E = 1 + {_NG['accepted']:,} accepted / {_NG['drafts']:,} "
    f"drafts = {1 + _NG['accepted'] / _NG['drafts']:.2f}); throughput and ITL p99 agree within 20%. ")
NGRAM_STEP = (
    _NGRAM_ACCEPT + f"ITL p50 misses, "
    f"{_m('ngram', 'itl_p50_s', 2)} ms against {NGRAM_PREDICTED_ITL_P50_MS:.2f} predicted ({_m('fp8_kv', 'itl_p50_s', 2)} "
    f"for the parent): a pure verify step of 32 sequences (160 tokens, inside the FULL graph of 160) takes "
    f"{_sms('ngram', 32)} ms where {PRICED_STEP_MS[('ngram', 32)]:.2f} is priced "
    f"({STEP_MS[('ngram', 32)] / PRICED_STEP_MS[('ngram', 32)]:.2f}x; one sequence {_sms('ngram', 1)} against "
    f"{PRICED_STEP_MS[('ngram', 1)]:.2f}), while the parent's decode step is "
    f"{STEP_MS[('fp8_kv', 32)] / PRICED_STEP_MS[('fp8_kv', 32)]:.2f}x its price, and the stream carries "
    f"{_NG['tokens'] / _NG['chunks']:.2f} tokens per decode chunk ({_NG['chunks']:,} chunks, {_NG['tokens']:,} tokens) "
    f"where the counters imply {_COUNTER_TPS:.2f}; on Qwen's chat the same gain sat at the 20% edge. Async scheduling "
    "is off with n-gram drafting, so scheduling, the CPU n-gram lookup and rejection sampling run between steps. "
    "Band: the measured gain's request-resampled 95% interval over the predicted gain.")
NGRAM_TTFT_STEP = (
    _NGRAM_ACCEPT + f"TTFT p50 falls {_m('fp8_kv', 'ttft_p50_s')} -> {_m('ngram', 'ttft_p50_s')} ms where it was "
    f"predicted to grow: the parent's prompt windows are the long ones ({FP8_KV_ID}), the n-gram engine's shorter "
    f"({WINDOW_MS['fp8_kv']:.1f} -> {WINDOW_MS['ngram']:.1f} ms; without async scheduling a window ends with its own "
    "step), and async scheduling off moves TTFT's two unmodelled parts as on Qwen's chat (ingress "
    f"{ENGINE_MEDIAN_MS[('fp8_kv', 'ingress')]:.2f} -> {ENGINE_MEDIAN_MS[('ngram', 'ingress')]:.2f} ms, scheduled to "
    f"first token {ENGINE_MEDIAN_MS[('fp8_kv', 'prefill')]:.2f} -> {ENGINE_MEDIAN_MS[('ngram', 'prefill')]:.2f}). "
    "Band: the measured gain's request-resampled 95% interval over the predicted gain.")
NGRAM_BURST_STEP = (
    f"TTFT p99, the opening burst: {_burst('ngram')} against {_burst('fp8_kv')} ({BURST['ngram'][1] / BURST['ngram'][0]:.1f} "
    f"against {BURST['fp8_kv'][1] / BURST['fp8_kv'][0]:.1f} ms a step; Qwen's went the other way, its fp8_kv burst the "
    "slow one, a finding of its own): why the serial engine's burst steps are the slower here is unknown. Band: the "
    "measured gain's request-resampled 95% interval over the predicted gain.")

PLAN_ID = "h200-llama-chat-plan-misses-itl-slo"
_PT, _PW = TAIL_WINDOWS["plan_top"], WINDOWS["plan_top"]
PLAN_STEP = (
    "plan's chat recommendation for Llama-3.1-8B (max_num_seqs 1024, budget 8192, prefix cache, fp8 weights and KV; "
    f"CUDA graphs captured to {CAPTURED_MAX['plan_top']} tokens) misses the chat SLO's ITL p99: "
    f"{_m('plan_top', 'itl_p99_s', 2)} ms measured [{PLAN_ITL_P99_INTERVAL_MS[0]:.2f}, "
    f"{PLAN_ITL_P99_INTERVAL_MS[1]:.2f} resampled] against {SLO_ITL_MS} ms allowed, "
    f"{PLAN_PREDICTED_ITL_P99_MS:.2f} ms predicted ({METRIC_MS[('plan_top', 'itl_p99_s')] / SLO_ITL_MS - 1:+.1%} over the "
    f"SLO, {METRIC_MS[('plan_top', 'itl_p99_s')] / PLAN_PREDICTED_ITL_P99_MS:.2f}x the prediction); TTFT p99 "
    f"{_m('plan_top', 'ttft_p99_s')} ms meets its 300. Qwen2.5-7B's same plan met it at {QWEN_PLAN_ITL_P99_MS:.2f} ms. By "
    f"the engine's clock all {_PT[0]} tokens at or above the p99 close a prompt window, every one of them one of the "
    f"{_PW[1]} windows (of {_PW[0]}) whose step exceeds the largest captured graph (ladder_raw.itl_tail_windows): those "
    f"steps run graph-less and take {ABOVE_512_MS['plan_top']:.1f} ms (median), where the windows inside the graphs take "
    f"{INSIDE_512_MS['plan_top']:.1f} ms and the step model prices the median such window ({PLAN_BIG_WINDOW[0]} new "
    f"tokens on the cached {lc.SYSTEM_PROMPT} beside {PLAN_BIG_WINDOW[1]} decodes) at {PRICED_PLAN_BIG_MS:.2f} ms: "
    f"h200-prompt-step-excess's graph-less prompt step. Qwen's plan_top ran the same windows in "
    f"{QWEN_ABOVE_512_MS['plan_top']:.1f} ms; Llama's as long as bf16's baseline ({ABOVE_512_MS['baseline']:.1f}): on "
    f"this card the fp8-KV engines' graph-less prompt steps are bf16's length and only fp8 weights alone shortened them "
    f"({FP8_KV_ID}: above 512 tokens fp8_weights {ABOVE_512_MS['fp8_weights']:.1f}, fp8_kv "
    f"{ABOVE_512_MS['fp8_kv']:.1f} ms), so the shortening that kept Qwen's plan under the SLO is absent. Why is unknown "
    "(that finding). The step model prices a "
    "prompt step alike inside and outside the captured graphs, so plan's simulation could not see this. The cause "
    f"test {cf.CAUSE} settled the cause (cause_findings.py): the same plan with graphs captured to 8,192 tokens ran "
    f"those windows in {cf.ABOVE_MS:.1f} ms and met the SLO at {cf.ITL_P99_MS:.2f} ms ITL p99. Band: "
    "the ITL p99's request-resampled 95% interval over the SLO (one run, no parent). Strict: a run that meets the SLO "
    "retires the finding.")

REASON = "Llama chat {rung}: {metric} gain {g:.4g} measured [{lo:.4g}, {hi:.4g} resampled], {p:.4g} predicted. "
FINDINGS: dict[str, tuple[str, str]] = {
    "prefix_cache": (lc.PROMPT_STEP_ID, PROMPT_STEP), "fp8_weights": (lc.FP8_ID, FP8_STEP),
    "fp8_kv": (FP8_KV_ID, FP8_KV_STEP), "eager": (lc.EAGER_ID, EAGER_STEP)}
# the n-gram rung's misses, each under its own cause's finding (ladder_chat.NGRAM_ID's split)
NGRAM_FINDINGS: dict[str, tuple[str, str]] = {"itl_p50_s": (lc.NGRAM_ID, NGRAM_STEP),
                                              "ttft_p50_s": (lc.NGRAM_TTFT_ID, NGRAM_TTFT_STEP),
                                              "ttft_p99_s": (lc.NGRAM_BURST_LONGER_ID, NGRAM_BURST_STEP)}


def predicted_of(rung: str, metric: str, predicted: dict[str, float | None]) -> float | None:
    """The gain a Llama chat miss is reconciled against: the preregistered one, the n-gram rung's simulated at its E."""
    return NGRAM_PREDICTED.get(metric) if rung == "ngram" else predicted.get(metric)


def rung_marks(model: str, workload: str, step: str, predicted: dict[str, float | None]) -> list[pytest.MarkDecorator]:
    """The findings of one Llama chat rung's gains (test_rung_gain_is_within_20_percent), quantity by quantity."""
    if (model, workload) != (MODEL, WORKLOAD):
        return []
    marks = []
    for (rung, metric), (g, lo, hi) in GAINS.items():
        p = predicted_of(rung, metric, predicted)
        if rung != step or p is None:
            continue
        fid, text = NGRAM_FINDINGS[metric] if rung == "ngram" else FINDINGS[rung]
        # fp8_weights: the mechanism's band (ladder_findings.fp8_weights_band); the others: the measured gain's
        # request-resampled interval, read off the run it judges, unless the rung ran again (below)
        band, band_from = ((lf.fp8_weights_band(p), "explanation") if rung == "fp8_weights" else
                           ((round(lo / p, 4), round(hi / p, 4)), "checked-run"))
        again = lf.AGAIN if band_from == "checked-run" else ""
        if band_from == "checked-run":  # run again (ladder_repeat; the fp8_kv gains also by the cause test repeat):
            # banded by every other run where they all hold this one
            band, band_from, again = lrp.first_run_banded(MODEL, workload, rung, metric, p) or (band, band_from, again)
        marks.append(pytest.mark.finding(fid, reason=REASON.format(rung=rung, metric=metric, g=g, lo=lo, hi=hi, p=p)
                                         + text + again, quantity=f"{workload}.{step}.{metric}.gain",
                                         expected=band, hardware=lf.MEASURED_ON, band_from=band_from,
                                         strict=lrp.strict(band, band_from)))
    return marks


def plan_marks(model: str, workload: str) -> list[pytest.MarkDecorator]:
    """The finding of plan's recommendation missing its SLO (test_the_recommended_plan_meets_its_slo): the measured ITL
    p99 over the SLO, banded by its resampled interval over the SLO."""
    if (model, workload) != (MODEL, WORKLOAD):
        return []
    lo, hi = (x / SLO_ITL_MS for x in PLAN_ITL_P99_INTERVAL_MS)
    return [pytest.mark.finding(PLAN_ID, reason=PLAN_STEP + lf.AGAIN, quantity=f"{workload}.plan_top.itl_p99_s",
                                expected=(round(lo, 4), round(hi, 4)), hardware=lf.MEASURED_ON, strict=True,
                                band_from="checked-run")]
