"""The chat ladder's findings, as data: the rung gains measured on the H200 (2026-12-03 00:01-00:17, Qwen2.5-7B, chat;
the eleventh visit's card) that miss the preregistered ones by more than issue 14's 20%, why, and each one's band.

Two device calls: batch 20261203T000111Z (baseline, limits, prefix_cache, fp8_weights, fp8_kv) and 20261203T001319Z
(eager, ngram, plan_top; eager and ngram branch off the first call's fp8_kv). Every number a reason quotes is a
constant below, recomputed by tests_deployment/test_ladder_chat.py: the gains and absolute metrics from the recordings,
the engine-clock times from the kept raw timelines (ladder_raw's methods), the priced steps from the preregistered
calibration, the engines' CUDA-graph capture sizes from the kept batches' deployment.json.

Bands, as the rag ladder's second slice: the measured gain's request-resampled 95% interval (ladder_raw.
resampled_gain_interval) over the predicted gain, read off the run it judges (checked-run); fp8_weights' gains instead
take the mechanism's band, [0.5, 1] over the predicted gain (ladder_findings.fp8_weights_band: explanation). The first
slice's mechanism band [1, 1/g] (an added time pulls a gain toward 1) does not hold on chat: the prefix cache made two
of its gains worse than 1, so the prompt step did not only gain a constant. Every interval below excludes its prediction
(test_chat_intervals_are_the_recorded_ones): no miss is request-sampling noise. The intervals do not cover a restart of
the engine. The rungs run again since (prefix_cache, fp8_kv, eager and ngram on 2026-12-04; fp8_kv's gains also by the
cause test repeat) are banded by every other run together where they all hold the first visit's gain, else by their
hull where the rung ran three times and that holds it, and quote them where neither does (ladder_repeat.py: its later
runs' findings too). Every band still read off its run says so in its
reason (ladder_findings.AGAIN: what second run would replace it; ladder_repeat.banded: which run did not repeat it).
"""

from __future__ import annotations

import pytest

import cause_findings as cf
import ladder_findings as lf
import ladder_repeat as lrp

WORKLOAD, USERS = "chat", 32  # the workload and its closed loop's concurrency (workloads/chat.json)
FIRST_BATCH, SECOND_BATCH = "20261203T000111Z", "20261203T001319Z"
SECOND_SLICE = ("eager", "ngram", "plan_top")


def batch_of(step: str) -> str:
    """The kept batch that measured a chat rung."""
    return SECOND_BATCH if step in SECOND_SLICE else FIRST_BATCH


# (measured gain, its resampled 95% interval) of each chat (rung, metric) outside 20% of its prediction
GAINS: dict[tuple[str, str], tuple[float, float, float]] = {
    ("prefix_cache", "ttft_p50_s"): (1.0292, 0.8957, 1.1357), ("prefix_cache", "ttft_p99_s"): (0.7036, 0.6985, 0.7495),
    ("prefix_cache", "itl_p99_s"): (1.1674, 1.1453, 1.196),
    ("fp8_weights", "ttft_p50_s"): (0.6455, 0.6113, 0.7406), ("fp8_weights", "ttft_p99_s"): (0.7614, 0.7595, 0.7648),
    ("fp8_weights", "itl_p99_s"): (0.7043, 0.6555, 0.7171),
    ("fp8_kv", "itl_p99_s"): (0.8016, 0.7767, 0.8578),
    ("eager", "ttft_p50_s"): (1.8773, 1.7094, 2.1469), ("eager", "ttft_p99_s"): (1.5243, 1.5075, 1.679),
    ("eager", "itl_p50_s"): (4.3476, 4.3255, 4.3797), ("eager", "output_throughput"): (0.2642, 0.2323, 0.3031),
    ("eager", "goodput"): (0.2263, 0.2021, 0.2616),
    ("ngram", "ttft_p50_s"): (0.9809, 0.8828, 1.1738), ("ngram", "ttft_p99_s"): (0.7829, 0.7253, 0.7857),
    ("ngram", "itl_p99_s"): (0.5085, 0.4292, 0.5469)}
# the n-gram rung's predicted gains, simulated with the run's measured E and draft share (predicted_gains)
NGRAM_PREDICTED: dict[str, float] = {"ttft_p50_s": 1.6807, "ttft_p99_s": 1.0338, "itl_p99_s": 0.2732}
# measured metrics the reasons quote, ms (the recordings)
METRIC_MS: dict[tuple[str, str], float] = {
    ("limits", "ttft_p50_s"): 50.2, ("prefix_cache", "ttft_p50_s"): 51.6, ("fp8_weights", "ttft_p50_s"): 33.3,
    ("fp8_kv", "ttft_p50_s"): 32.8, ("eager", "ttft_p50_s"): 61.5, ("ngram", "ttft_p50_s"): 32.2,
    ("limits", "ttft_p99_s"): 415.9, ("prefix_cache", "ttft_p99_s"): 292.6, ("fp8_weights", "ttft_p99_s"): 222.8,
    ("fp8_kv", "ttft_p99_s"): 217.6, ("eager", "ttft_p99_s"): 331.6, ("ngram", "ttft_p99_s"): 170.3,
    ("limits", "itl_p99_s"): 38.6, ("prefix_cache", "itl_p99_s"): 45.1, ("fp8_weights", "itl_p99_s"): 31.8,
    ("fp8_kv", "itl_p99_s"): 25.5}
# largest captured CUDA-graph size of each rung's engine (deployment.json: resolved.cudagraph_capture_sizes)
CAPTURED_MAX: dict[str, int] = {"baseline": 512, "limits": 64, "prefix_cache": 64, "fp8_weights": 64, "fp8_kv": 64,
                                "eager": 0, "ngram": 320, "plan_top": 512}

# Engine clock (ladder_raw). Prompt windows: median ms (prompt_window_ms); (lowest, highest) tercile median by new
# tokens; 90th percentile and longest; for the engines captured to 512 tokens, the median of the windows whose step
# fits 512 and of those above it.
WINDOW_MS = {"limits": 25.5, "prefix_cache": 29.8, "fp8_weights": 20.7, "fp8_kv": 19.3, "eager": 19.9, "ngram": 17.7}
WINDOW_TERCILES_MS = {"limits": (26.6, 24.6), "prefix_cache": (30.0, 30.7)}
WINDOW_Q90_MS = {"limits": 36.4, "prefix_cache": 43.8, "fp8_weights": 29.4, "fp8_kv": 25.2}
WINDOW_MAX_MS = {"fp8_weights": 38.5, "fp8_kv": 28.3}
GRAPH_SPLIT_MS = {"baseline": (11.2, 24.7), "plan_top": (9.8, 17.4)}
# pure decode (ngram: verify) steps, median ms (pure_step_ms), (rung, batch); the same priced (lf.priced_step_ms)
STEP_MS = {("prefix_cache", 32): 5.36, ("fp8_weights", 32): 4.53, ("fp8_kv", 1): 3.45, ("fp8_kv", 32): 4.55,
           ("eager", 1): 16.15, ("eager", 32): 19.53, ("ngram", 1): 5.70, ("ngram", 32): 10.23}
PRICED_STEP_MS = {("prefix_cache", 32): 5.03, ("fp8_weights", 32): 3.55, ("fp8_kv", 1): 3.26, ("fp8_kv", 32): 3.40,
                  ("eager", 1): 5.28, ("eager", 32): 5.42, ("ngram", 1): 3.26, ("ngram", 32): 5.40}
# the step model's price of the workload's mean prompt (582 tokens) beside 31 decodes, uncached and with its 256-token
# system prompt cached (priced_prompt_ms)
MEAN_PROMPT, SYSTEM_PROMPT = 582, 256
PRICED_PROMPT_MS = {"limits": 14.66, "prefix_cache": 9.53}
# TTFT's engine parts, median ms (engine_median_ms)
ENGINE_MEDIAN_MS = {("limits", "prefill"): 39.9, ("prefix_cache", "prefill"): 42.96,
                    ("fp8_weights", "prefill"): 27.78, ("fp8_kv", "ingress"): 2.53, ("fp8_kv", "prefill"): 23.99,
                    ("eager", "ingress"): 18.1, ("eager", "prefill"): 40.56, ("ngram", "ingress"): 11.17,
                    ("ngram", "prefill"): 18.47}
# the opening burst (opening_burst, USERS requests sent at once): (steps, ms); its new tokens (input - cached)
BURST = {"limits": (17, 422), "prefix_cache": (9, 293), "fp8_weights": (9, 224), "fp8_kv": (10, 222),
         "eager": (10, 366), "ngram": (9, 171)}
BURST_TOKENS = {"limits": 16165, "prefix_cache": 8741}
NEW_TOKENS = {"limits": 93187, "prefix_cache": 56067}  # every request's input less its cached tokens, summed
# ngram: the stream (decode chunks and their tokens), the counters, the ITL tail (itl_tail), one-token chunks
# (one_token_chunks: early ones, early chunks, later ones, later chunks), steps and prompt windows
NGRAM_STREAM = {"chunks": 8168, "tokens": 36131, "drafts": 7516, "accepted": 28322}
NGRAM_TAIL = {"p_ms": 12.95, "tokens": 362, "one_token": 362, "early": 284, "gap_ms": 17.78}
NGRAM_ONE_TOKEN = (562, 800, 185, 7368)
NGRAM_STEPS, NGRAM_WINDOWS = 413, 105


def priced_prompt_ms(calibration: dict, row: dict, context: float, decodes: int, new: int, past: int,
                     model: str = lf.MODEL) -> float:
    """The step model's time (ms) of a step carrying `new` prompt tokens on `past` cached ones beside `decodes`
    decodes at `context`, under a preregistered rung's knobs (no graph padding: no prompt step is captured)."""
    from pytest_anatomy.deployment_ladder import calibration_from_record
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import deployment as dp

    kw = row["engine_kwargs"]
    knobs = dp.EngineKnobs(kw["max_num_seqs"], kw["max_num_batched_tokens"], kw["enable_prefix_caching"],
                           "quantization" in kw, "kv_cache_dtype" in kw, not kw["enforce_eager"], 0)
    sm = dp.step_model(load_model(model), *calibration_from_record(calibration), knobs)
    return sm.seconds(decodes, decodes * context, ((new, past),)) * 1e3


def _m(rung: str, metric: str) -> str:
    return f"{METRIC_MS[(rung, metric)]:.1f}"


def _burst(rung: str) -> str:
    return f"{BURST[rung][0]} steps in {BURST[rung][1]} ms"


PROMPT_STEP_ID = "h200-prompt-step-excess"
PROMPT_STEP = (
    "On chat the step carrying a prompt does not shrink with the prompt, and the chat ladder's own baseline says why. "
    "By the engine's clock (ladder_raw.prompt_windows: the gap between two steps' outputs into which a prompt was "
    f"scheduled) limits' prompt windows take {WINDOW_TERCILES_MS['limits'][0]:.1f} ms for the third with the fewest "
    f"new tokens and {WINDOW_TERCILES_MS['limits'][1]:.1f} ms for the third with the most (median "
    f"{WINDOW_MS['limits']:.1f}); prefix_cache's {WINDOW_TERCILES_MS['prefix_cache'][0]:.1f} and "
    f"{WINDOW_TERCILES_MS['prefix_cache'][1]:.1f} ms (median {WINDOW_MS['prefix_cache']:.1f}). The step model prices "
    f"the mean {MEAN_PROMPT}-token prompt beside 31 decodes at {PRICED_PROMPT_MS['limits']:.2f} ms, and "
    f"{PRICED_PROMPT_MS['prefix_cache']:.2f} ms with its {SYSTEM_PROMPT}-token system prompt cached; a pure decode step "
    f"of 32 takes {STEP_MS[('prefix_cache', 32)]:.2f} ms. With max_num_seqs 32 vLLM captured CUDA graphs only up to "
    f"{CAPTURED_MAX['limits']} tokens, so every step carrying a prompt runs without one. The baseline engine "
    f"(max_num_seqs 1024, graphs captured up to {CAPTURED_MAX['baseline']} tokens) runs the same prompts: its windows "
    f"whose step fits {CAPTURED_MAX['baseline']} tokens take {GRAPH_SPLIT_MS['baseline'][0]:.1f} ms, those above it "
    f"{GRAPH_SPLIT_MS['baseline'][1]:.1f} ms (plan_top, also captured to {CAPTURED_MAX['plan_top']}: "
    f"{GRAPH_SPLIT_MS['plan_top'][0]:.1f} and {GRAPH_SPLIT_MS['plan_top'][1]:.1f} ms): outside the captured graphs a "
    "prompt step takes about twice as long and no longer shrinks with its tokens, the cause the rag slice named as the "
    f"candidate. So the cache that cuts the prompts' new tokens from {NEW_TOKENS['limits']:,} to "
    f"{NEW_TOKENS['prefix_cache']:,} (hits exact) cannot cut TTFT p50: {_m('limits', 'ttft_p50_s')} -> "
    f"{_m('prefix_cache', 'ttft_p50_s')} ms (scheduled to first token {ENGINE_MEDIAN_MS[('limits', 'prefill')]:.1f} -> "
    f"{ENGINE_MEDIAN_MS[('prefix_cache', 'prefill')]:.1f} ms: the prompt's step and the next, whose launch async "
    "scheduling waits for before emitting). TTFT p99 is the opening burst (the 32 requests sent at once hold the two "
    f"slowest of 160): {_burst('limits')} for {BURST_TOKENS['limits']:,} new tokens against {_burst('prefix_cache')} "
    f"for {BURST_TOKENS['prefix_cache']:,}: the cache removes steps as priced, but each step keeps its length. ITL p99 "
    f"(a decode waiting out a prompt window) rises {_m('limits', 'itl_p99_s')} -> {_m('prefix_cache', 'itl_p99_s')} ms "
    f"because prefix_cache's windows are longer (90th percentile {WINDOW_Q90_MS['limits']:.1f} -> "
    f"{WINDOW_Q90_MS['prefix_cache']:.1f} ms); why a cached prompt's graph-less step is longer is unknown (cascade "
    "attention over the system prompt common to the batch is a candidate, not checked). Band: the measured gain's "
    "request-resampled 95% interval over the predicted gain.")

FP8_ID = "h200-fp8-weights-shorten-prompt-steps"
FP8_STEP = (
    "fp8_weights on chat, as on rag: the theory prices compute-bound steps at bf16's peak and predicts no TTFT or "
    f"ITL-tail gain; the graph-less prompt windows fall from {WINDOW_MS['prefix_cache']:.1f} to "
    f"{WINDOW_MS['fp8_weights']:.1f} ms (median; 90th percentile {WINDOW_Q90_MS['prefix_cache']:.1f} -> "
    f"{WINDOW_Q90_MS['fp8_weights']:.1f}), and with them TTFT p50 ({_m('prefix_cache', 'ttft_p50_s')} -> "
    f"{_m('fp8_weights', 'ttft_p50_s')} ms; scheduled to first token {ENGINE_MEDIAN_MS[('prefix_cache', 'prefill')]:.1f} "
    f"-> {ENGINE_MEDIAN_MS[('fp8_weights', 'prefill')]:.1f}), the opening burst ({_burst('prefix_cache')} -> "
    f"{_burst('fp8_weights')}: TTFT p99 {_m('prefix_cache', 'ttft_p99_s')} -> {_m('fp8_weights', 'ttft_p99_s')} ms) "
    f"and ITL p99 ({_m('prefix_cache', 'itl_p99_s')} -> {_m('fp8_weights', 'itl_p99_s')} ms). Pure decode steps of 32 "
    f"fall {STEP_MS[('prefix_cache', 32)]:.2f} -> {STEP_MS[('fp8_weights', 32)]:.2f} ms where "
    f"{PRICED_STEP_MS[('prefix_cache', 32)]:.2f} -> {PRICED_STEP_MS[('fp8_weights', 32)]:.2f} is priced (ITL p50 gain "
    "0.843 against 0.706: inside the 20% target). Which part of the graph-less step fp8 removes is unknown. "
    + lf.FP8_WEIGHTS_BAND)

FP8_KV_ID = "h200-fp8-kv-shortens-long-prompt-windows"
FP8_KV_STEP = (
    f"fp8_kv on chat: ITL p99 falls {_m('fp8_weights', 'itl_p99_s')} -> {_m('fp8_kv', 'itl_p99_s')} ms where no change "
    "is predicted (the theory's fp8 KV halves KV bytes, which no compute-bound prompt step is priced by). The decode "
    f"step does not move (32 sequences: {STEP_MS[('fp8_weights', 32)]:.2f} -> {STEP_MS[('fp8_kv', 32)]:.2f} ms, priced "
    f"{PRICED_STEP_MS[('fp8_weights', 32)]:.2f} -> {PRICED_STEP_MS[('fp8_kv', 32)]:.2f}: the decode gain is again "
    f"absent), nor TTFT. What moved is the long prompt windows: median {WINDOW_MS['fp8_weights']:.1f} -> "
    f"{WINDOW_MS['fp8_kv']:.1f} ms, 90th percentile {WINDOW_Q90_MS['fp8_weights']:.1f} -> "
    f"{WINDOW_Q90_MS['fp8_kv']:.1f}, longest {WINDOW_MAX_MS['fp8_weights']:.1f} -> {WINDOW_MAX_MS['fp8_kv']:.1f}. On "
    "rag the same rung left ITL p99 alone (gain 1.018 [0.98, 1.06]). Explanation unknown: fp8 KV changes the prompt "
    "step's cache writes and FA3's fp8 path, which the step model prices as bytes only; or two engine starts' "
    "graph-less steps differ (the resampled interval covers the requests, not a restart, and neither engine was "
    "repeated). Repeated in one call on another card (cause test repeat, cause_findings.py) the windows' ratio was "
    f"{cf.REPEAT_RATIO:.3f} against this visit's {cf.FIRST_RATIO:.3f}, with an interval holding both: fp8 KV's share of this shortening is below what "
    "a median over ~130 windows resolves. Band: the measured gain's request-resampled 95% interval over the predicted "
    "gain.")

_EXTRA = STEP_MS[("eager", 32)] - STEP_MS[("fp8_kv", 32)]
_ASSUMED_LAYER_MS = (PRICED_STEP_MS[("eager", 32)] - PRICED_STEP_MS[("fp8_kv", 32)]) / lf.LAYERS
EAGER_ID = "h200-eager-steps-host-bound"
EAGER_STEP = (
    f"On chat (32 sequences): a pure decode step of 32 takes {STEP_MS[('eager', 32)]:.2f} ms eager against "
    f"{STEP_MS[('fp8_kv', 32)]:.2f} ms with graphs (fp8_kv), priced {PRICED_STEP_MS[('eager', 32)]:.2f} and "
    f"{PRICED_STEP_MS[('fp8_kv', 32)]:.2f} ms: eager adds {_EXTRA:.2f} ms, {_EXTRA / lf.LAYERS:.3f} ms per layer "
    f"against {_ASSUMED_LAYER_MS:.3f} assumed ({_EXTRA / lf.LAYERS / _ASSUMED_LAYER_MS:.1f}x). From one sequence to 32 "
    f"the eager step goes {STEP_MS[('eager', 1)]:.2f} -> {STEP_MS[('eager', 32)]:.2f} ms where the graph step goes "
    f"{STEP_MS[('fp8_kv', 1)]:.2f} -> {STEP_MS[('fp8_kv', 32)]:.2f}: host-bound, as on rag. Prompt windows take "
    f"{WINDOW_MS['eager']:.1f} ms eager against {WINDOW_MS['fp8_kv']:.1f} ms with graphs: at max_num_seqs 32 the graph "
    "engine runs every prompt step without a graph too (h200-prompt-step-excess), so eager costs little more there. "
    f"TTFT p50 {_m('eager', 'ttft_p50_s')} against {_m('fp8_kv', 'ttft_p50_s')} ms: a request waits "
    f"{ENGINE_MEDIAN_MS[('eager', 'ingress')]:.1f} ms (median) to be queued by the busy engine core against "
    f"{ENGINE_MEDIAN_MS[('fp8_kv', 'ingress')]:.1f}, and scheduling to first token takes "
    f"{ENGINE_MEDIAN_MS[('eager', 'prefill')]:.1f} against {ENGINE_MEDIAN_MS[('fp8_kv', 'prefill')]:.1f} ms; TTFT p99, "
    f"the opening burst: {_burst('eager')} against {_burst('fp8_kv')}. Throughput and goodput follow the decode step. "
    "Band: the measured gain's request-resampled 95% interval over the predicted gain.")

_NG = NGRAM_STREAM
NGRAM_ID, NGRAM_TTFT_ID = lf.NGRAM_STEPS_ID, lf.NGRAM_TTFT_ID  # the n-gram rung's misses split by cause
NGRAM_BURST_SHORTER_ID, NGRAM_BURST_LONGER_ID = lf.NGRAM_BURST_SHORTER_ID, lf.NGRAM_BURST_LONGER_ID
_NGRAM_BAND = "Band: the measured gain's request-resampled 95% interval over the predicted gain."
NGRAM_TTFT_STEP = (
    f"On chat acceptance is again not the miss (E = 1 + {_NG['accepted']:,} accepted / {_NG['drafts']:,} drafts = "
    f"{1 + _NG['accepted'] / _NG['drafts']:.2f}), and ITL p50 and throughput agree within 20%, though a pure verify "
    f"step of 32 sequences (160 tokens, inside the FULL graph of 160) takes {STEP_MS[('ngram', 32)]:.2f} ms where "
    f"{PRICED_STEP_MS[('ngram', 32)]:.2f} is priced (one sequence: {STEP_MS[('ngram', 1)]:.2f} against "
    f"{PRICED_STEP_MS[('ngram', 1)]:.2f}). TTFT misses: predicted to grow (the simulator's verify steps delay the "
    f"prompts), it does not move ({_m('fp8_kv', 'ttft_p50_s')} -> {_m('ngram', 'ttft_p50_s')} ms) because disabling "
    "async scheduling moves two unmodelled parts in opposite directions: a request is queued only while the engine "
    f"core is between steps (ingress median {ENGINE_MEDIAN_MS[('fp8_kv', 'ingress')]:.2f} -> "
    f"{ENGINE_MEDIAN_MS[('ngram', 'ingress')]:.2f} ms), and a step's tokens leave at its own end instead of after the "
    f"next step's launch (scheduled to first token {ENGINE_MEDIAN_MS[('fp8_kv', 'prefill')]:.2f} -> "
    f"{ENGINE_MEDIAN_MS[('ngram', 'prefill')]:.2f} ms; prompt windows {WINDOW_MS['fp8_kv']:.1f} -> "
    f"{WINDOW_MS['ngram']:.1f} ms, the spec-sized capture list reaching {CAPTURED_MAX['ngram']} tokens piecewise). "
    + _NGRAM_BAND)
NGRAM_BURST_STEP = (
    f"TTFT p99 is the opening burst: {_burst('ngram')} against {_burst('fp8_kv')} for the parent "
    f"({BURST['ngram'][1] / BURST['ngram'][0]:.1f} against {BURST['fp8_kv'][1] / BURST['fp8_kv'][0]:.1f} ms a step), "
    "where the simulator's verify steps lengthen it; why the n-gram engine's burst steps are the shorter is not "
    f"separated (its prompt windows {WINDOW_MS['fp8_kv']:.1f} -> {WINDOW_MS['ngram']:.1f} ms median). {_NGRAM_BAND}")
NGRAM_STEP = NGRAM_TTFT_STEP  # the chat text of the n-gram TTFT finding (ladder_llama_chat quotes its mechanism)

NGRAM_TAIL_ID = "h200-ngram-itl-tail-is-undrafted-steps"
NGRAM_PREDICTED_ITL_P99_MS = 5.42  # the simulated n-gram rung's ITL p99 at the run's E and draft share
_E1, _EN, _L1, _LN = NGRAM_ONE_TOKEN
_UNDRAFTED = 1 - _NG["drafts"] / (_NG["tokens"] - _NG["accepted"])  # the counters' share of decode steps not drafting
NGRAM_TAIL_STEP = (
    f"ngram's ITL p99 is {NGRAM_TAIL['p_ms']:.2f} ms measured ({_m('fp8_kv', 'itl_p99_s')} for the parent), "
    f"{NGRAM_PREDICTED_ITL_P99_MS:.2f} ms predicted: about one priced verify step "
    f"({PRICED_STEP_MS[('ngram', 32)]:.2f} ms), the simulation's one-token steps being the {_UNDRAFTED:.1%} its draft "
    "share leaves undrafted, spread evenly over each request by a per-request credit. Measured, every per-token gap at "
    f"or above the p99 is a one-token chunk ({NGRAM_TAIL['one_token']} of {NGRAM_TAIL['tokens']} tokens), "
    f"{NGRAM_TAIL['early']} of them in a request's first five decode chunks, median gap {NGRAM_TAIL['gap_ms']:.1f} ms, "
    "a prompt window's length. The n-gram proposer drafts only where a request's text already repeats, so its first "
    f"decode steps yield one token each ({_E1} of the first {_EN} decode chunks carry one token, against {_L1} of the "
    f"{_LN:,} later ones: {(_E1 + _L1) / (_EN + _LN):.1%} of all chunks), and in this closed loop a prompt is scheduled "
    f"in {NGRAM_WINDOWS} of the {NGRAM_STEPS} timed steps (windows median {WINDOW_MS['ngram']:.1f} ms). Why the stream has more one-token chunks than the counters have undrafted steps "
    "(drafts rejected at the first position count too, but are fewer) is not resolved; as on rag, the stream and the "
    "counters differ by a few percent. The rag slice's ngram stream has the same tail (all one-token chunks, mostly "
    "early: ladder_raw.itl_tail), inside h200-ngram-verify-steps-serial there. Band: the measured gain's "
    "request-resampled 95% interval over the predicted gain.")

REASON = "chat {rung}: {metric} gain {g:.4g} measured [{lo:.4g}, {hi:.4g} resampled], {p:.4g} predicted. "
FINDINGS: dict[str, tuple[str, str]] = {"prefix_cache": (PROMPT_STEP_ID, PROMPT_STEP), "fp8_weights": (FP8_ID, FP8_STEP),
                                        "fp8_kv": (FP8_KV_ID, FP8_KV_STEP), "eager": (EAGER_ID, EAGER_STEP)}
# the n-gram rung's chat misses, each under its own cause's finding
NGRAM_FINDINGS: dict[str, tuple[str, str]] = {"ttft_p50_s": (NGRAM_TTFT_ID, NGRAM_TTFT_STEP),
                                              "ttft_p99_s": (NGRAM_BURST_SHORTER_ID, NGRAM_BURST_STEP),
                                              "itl_p99_s": (NGRAM_TAIL_ID, NGRAM_TAIL_STEP)}


def finding_of(rung: str, metric: str) -> tuple[str, str]:
    """(finding id, mechanism text) of one chat miss."""
    return NGRAM_FINDINGS[metric] if rung == "ngram" else FINDINGS[rung]


def predicted_of(rung: str, metric: str, predicted: dict[str, float | None]) -> float | None:
    """The gain a chat miss is reconciled against: the preregistered one, the n-gram rung's simulated at its E."""
    return NGRAM_PREDICTED.get(metric) if rung == "ngram" else predicted.get(metric)


def rung_marks(model: str, workload: str, step: str, predicted: dict[str, float | None]) -> list[pytest.MarkDecorator]:
    """The findings of one chat rung's gains (test_rung_gain_is_within_20_percent), quantity by quantity."""
    if (model, workload) != (lf.MODEL, WORKLOAD):
        return []
    marks = []
    for (rung, metric), (g, lo, hi) in GAINS.items():
        p = predicted_of(rung, metric, predicted)
        if rung != step or p is None:
            continue
        fid, text = finding_of(rung, metric)
        # fp8_weights: the mechanism's band (ladder_findings.fp8_weights_band); the others: the measured gain's
        # request-resampled interval, read off the run it judges, unless the rung ran again (below)
        band, band_from = ((lf.fp8_weights_band(p), "explanation") if rung == "fp8_weights" else
                           ((round(lo / p, 4), round(hi / p, 4)), "checked-run"))
        again = lf.AGAIN if band_from == "checked-run" else ""
        if band_from == "checked-run":  # run again (ladder_repeat; the fp8_kv gains also by the cause test repeat):
            # banded by every other run where they all hold this one
            band, band_from, again = lrp.first_run_banded(lf.MODEL, workload, rung, metric, p) or (band, band_from, again)
        marks.append(pytest.mark.finding(fid, reason=REASON.format(rung=rung, metric=metric, g=g, lo=lo, hi=hi, p=p)
                                         + text + again, quantity=f"{workload}.{step}.{metric}.gain",
                                         expected=band, hardware=lf.MEASURED_ON, band_from=band_from,
                                         strict=lrp.strict(band, band_from)))
    return marks
