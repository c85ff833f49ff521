"""Findings of the cause tests (cause_tests.json, reconciled by test_cause_tests.py). Every number quoted here is
recomputed from the recordings and the kept batch by test_cause_tests.py.

graphs-to-budget (batch 20261203T184616Z, 2026-12-03 18:46 UTC, H200): Llama-3.1-8B's chat plan_top run again with
CUDA graphs captured to its 8,192-token budget (531 piecewise sizes, captured in 63 s and 4.31 GiB; the engine started
in 149 s). Written before it: the graph-less explanation predicted the windows above 512 tokens in [0.8, 1.2] x the step
model's 17.04 ms and ITL p99 under 25 ms; the fp8-KV explanation (the one we expected) predicted both unchanged. ITL p99
fell from 26.59 to 14.50 ms and the windows above 512 tokens from 24.7 to 12.4 ms: graph-less prompt steps were the
cause of plan_top's miss, and the expectation was wrong. The windows fell below the band, though: the finding below.

repeat (batch 20261203T213600Z, 2026-12-03 21:36 UTC, H200, another card): the fp8_weights and fp8_kv chat rungs of both
models run again unchanged, to tell whether the first visits' prompt-window ratios came from fp8 KV or from the engine
starts. Both written expectations were wrong. Llama-3.1-8B's lengthening repeated (1.637 over all windows, inside its
band around the first visit's 1.526): fp8 KV lengthens its graph-less prompt windows. Qwen2.5-7B's shortening did not
(the finding below).

graphs-to-budget-prefix (batch 20261203T213428Z, 21:34 UTC): Qwen2.5-7B's chat prefix_cache rung with graphs captured to
1,024 tokens ran its median prompt window in 11.03 ms (graph-less 29.8), inside the written band around the step model's
9.53 ms, as expected: graph-less prompt steps were the cause of h200-prompt-step-excess on this rung.
"""

from __future__ import annotations

import pytest

import ladder_findings as lf

CAUSE_BATCH, CAUSE = "20261203T184616Z", "graphs-to-budget"
RUN_ID = "llama-3.1-8b.chat.plan_top+graphs-to-budget"
# the run's prompt windows (ladder_raw.prompt_windows): (all, above 512 tokens); the median window above 512 tokens
# (ms) with its window-resampled 95% interval (ladder_raw.resampled_window_median_ms), and the median inside 512
WINDOWS = (122, 31)
ABOVE_MS, ABOVE_INTERVAL_MS, INSIDE_MS = 12.43, (11.95, 12.95), 12.07
# the windows' median (new tokens, outputs) above and inside 512 tokens, and the step model's price of each
# (ladder_chat.priced_prompt_ms on the cached 256-token system prompt, plan_top's knobs)
ABOVE_WINDOW, INSIDE_WINDOW = (642, 31), (275, 31)
PRICED_ABOVE_MS, PRICED_INSIDE_MS = 16.82, 8.88
ITL_P99_MS, PLAN_TOP_ITL_P99_MS, PLAN_TOP_ABOVE_MS = 14.50, 26.59, 24.7
PREDICTED_MS = 17.04  # cause_tests.json: the price of plan_top's median window above 512 tokens
# graphs-to-budget run again (batch 20261205T041022Z, the third start's card GPU-2d2b522c, the 21:55 plan's item 4): its
# windows (all, above 512), the median above 512 with its resampled interval, and its ITL p99 (ms)
CAUSE_BATCH_2 = "20261205T041022Z"
WINDOWS_2, ABOVE_MS_2, ABOVE_INTERVAL_MS_2, ITL_P99_MS_2 = (117, 31), 12.71, (11.46, 12.92), 14.87

WINDOW_ID = "h200-graphed-prompt-windows-do-not-grow-with-their-tokens"
WINDOW_REASON = (
    f"With CUDA graphs captured to 8,192 tokens (cause test {CAUSE}), Llama-3.1-8B's chat plan_top ran its prompt "
    f"windows above 512 tokens in {ABOVE_MS:.2f} ms (median of {WINDOWS[1]}, [{ABOVE_INTERVAL_MS[0]:.2f}, "
    f"{ABOVE_INTERVAL_MS[1]:.2f}] resampled), {ABOVE_MS / PREDICTED_MS:.2f}x the {PREDICTED_MS:.2f} ms the step model "
    f"prices plan_top's median such window at, below the written band [0.8, 1.2] (plan_top, graph-less: "
    f"{PLAN_TOP_ABOVE_MS:.1f} ms). The windows do not grow with their new tokens: inside 512 tokens (median "
    f"{INSIDE_WINDOW[0]} new beside {INSIDE_WINDOW[1]} decodes) {INSIDE_MS:.2f} ms, above it ({ABOVE_WINDOW[0]} new) "
    f"{ABOVE_MS:.2f} ms, where the step model goes from {PRICED_INSIDE_MS:.2f} to {PRICED_ABOVE_MS:.2f} ms "
    f"({(PRICED_ABOVE_MS - PRICED_INSIDE_MS) / (ABOVE_WINDOW[0] - INSIDE_WINDOW[0]) * 100:.2f} ms per 100 new tokens): it "
    "prices the short windows too cheap and the long ones too dear. Why is unknown. Candidates: the window method "
    "(under async scheduling the gap that holds a scheduled request may span the running step and the prompt step's "
    "launch rather than the prompt step alone, which would give a floor near two decode steps' time), or a prompt term "
    "steeper than this fp8 engine's prompt GEMMs inside graphs. The cause itself is settled: ITL p99 "
    f"{ITL_P99_MS:.2f} ms against 25 allowed (plan_top {PLAN_TOP_ITL_P99_MS:.2f}). Run again on another card (batch "
    f"{CAUSE_BATCH_2}): {ABOVE_MS_2:.2f} ms above 512 tokens ([{ABOVE_INTERVAL_MS_2[0]:.2f}, {ABOVE_INTERVAL_MS_2[1]:.2f}] "
    f"resampled, {WINDOWS_2[1]} of {WINDOWS_2[0]} windows), ITL p99 {ITL_P99_MS_2:.2f} ms: the size repeated. Band: the "
    "other run's window-resampled interval, each side widened by sqrt(2) (repeat_ratio_band), over the prediction, "
    "which holds this run's (other-runs). Strict: a window in the written band retires the finding.")


def window_band(run: int) -> tuple[float, float]:
    """measured / predicted band of run `run`'s median window above 512 tokens: the other run's interval, widened."""
    ms, interval = (ABOVE_MS_2, ABOVE_INTERVAL_MS_2) if run == 1 else (ABOVE_MS, ABOVE_INTERVAL_MS)
    lo, hi = repeat_ratio_band(ms, interval)
    return round(ms * lo / PREDICTED_MS, 4), round(ms * hi / PREDICTED_MS, 4)


REPEAT_BATCH, REPEAT_MODEL = "20261203T213600Z", "qwen2.5-7b"
# Qwen2.5-7B's repeat: the median of every prompt window (fp8_kv, fp8_weights; ms), their counts, the ratio and its
# window-resampled 95% interval (each run's windows resampled apart); the first visit's ratio and interval
# (cause_tests.json, from batch 20261203T000111Z)
REPEAT_MS, REPEAT_WINDOWS = (18.31, 18.18), (128, 130)
REPEAT_RATIO, REPEAT_INTERVAL = 1.007, (0.866, 1.134)
FIRST_RATIO, FIRST_INTERVAL = 0.936, (0.863, 0.963)
LLAMA_REPEAT_RATIO, LLAMA_FIRST_RATIO = 1.637, 1.526  # Llama-3.1-8B's, the same way (its first visit: 20261203T142751Z)
SQRT2 = 2 ** 0.5  # a repeat's own sampling noise, as large as the first visit's: two independent samples
REPEAT_ID = "h200-qwen-fp8-kv-shortening-did-not-repeat"
REPEAT_REASON = (
    f"Qwen2.5-7B's fp8_kv chat rung ran its prompt windows {FIRST_RATIO:.3f}x the fp8_weights rung's on the first visit "
    f"(interval [{FIRST_INTERVAL[0]:.3f}, {FIRST_INTERVAL[1]:.3f}], batch 20261203T000111Z); repeated on another card "
    f"(cause test repeat, batch {REPEAT_BATCH}) the ratio is {REPEAT_RATIO:.3f} ({REPEAT_MS[0]:.2f} / {REPEAT_MS[1]:.2f} "
    f"ms over {REPEAT_WINDOWS[0]} / {REPEAT_WINDOWS[1]} windows), above the written band, so the first visit's "
    "shortening is not shown to be fp8 KV's. It is not shown to be the engine starts' either: the repeat's own resampled "
    f"interval, [{REPEAT_INTERVAL[0]:.3f}, {REPEAT_INTERVAL[1]:.3f}], holds both 1 and the first visit's ratio, and is "
    "wider on its upper side than the first visit's was (+2.9%), which is what made the written band narrow: a median "
    "of ~130 windows from a spread-out window population cannot resolve a 6% change on this workload. What stands: "
    "on Qwen2.5-7B fp8 KV moves the graph-less prompt windows by less than this resolution, where on Llama-3.1-8B the "
    "repeat confirmed a 1.6x lengthening. Band: the engine-start explanation's ratio, 1, with the first visit's relative "
    "interval widened by sqrt(2) as the written band was, over the prediction. Strict: a repeat in the written band "
    "retires it.")


def repeat_ratio_band(ratio: float, interval: tuple[float, float]) -> tuple[float, float]:
    """A repeat's band (measured / predicted) around a first visit's `ratio`: that visit's resampled interval, each
    side widened by sqrt(2) for the repeat's own sampling noise; never below 0, as no gain is (a goodput gain of 0.0085
    [0.0021, 0.0176], Llama-3.1-8B's rag eager fourth start, widened to a negative low edge)."""
    lo, hi = interval
    return max(0.0, 1 - SQRT2 * (1 - lo / ratio)), 1 + SQRT2 * (hi / ratio - 1)


def repeat_band() -> tuple[float, float]:
    """measured / predicted under the engine-start explanation (a ratio of 1), widened as the written band was."""
    lo, hi = repeat_ratio_band(FIRST_RATIO, FIRST_INTERVAL)
    return round(lo / FIRST_RATIO, 4), round(hi / FIRST_RATIO, 4)


# The repeat's ladder gains (fp8_kv+repeat over fp8_weights+repeat, ladder_metrics on the chat SLO) with their
# request-resampled 95% intervals (ladder_raw.resampled_gain_interval), by (model, metric): a second run of the chat
# ladders' fp8_kv gains (test_cause_tests recomputes them)
REPEAT_GAINS: dict[tuple[str, str], tuple[float, float, float]] = {
    ("llama-3.1-8b", "ttft_p50_s"): (1.2219, 1.0662, 1.599), ("llama-3.1-8b", "itl_p99_s"): (1.2925, 1.2008, 1.3547),
    ("qwen2.5-7b", "itl_p99_s"): (0.9735, 0.9526, 0.9795)}


def repeat_gain_band(model: str, metric: str, predicted: float) -> tuple[float, float]:
    """measured / predicted band of a ladder fp8_kv gain from the repeat's gain: its interval, each side widened by
    sqrt(2) (repeat_ratio_band: the checked run's sampling noise as large as the repeat's), over the predicted gain."""
    g, lo, hi = REPEAT_GAINS[(model, metric)]
    rlo, rhi = repeat_ratio_band(g, (lo, hi))
    return round(g * rlo / predicted, 4), round(g * rhi / predicted, 4)


# The first visits' gains the cause test repeat's band holds; the others lie outside it. The chat ladders band each
# fp8_kv gain by every other run together, this pair and the ladder's own second run (ladder_repeat.banded).
REPEAT_HOLDS = (("llama-3.1-8b", "ttft_p50_s"),)


def cause_marks(name: str, model: str, run: int = 1) -> list[pytest.MarkDecorator]:
    """The findings of one cause test's run (test_the_cause_run_is_reconciled_with_its_written_predictions); run 2:
    graphs-to-budget's second run."""
    if (name, model) == ("fp8_kv+repeat", REPEAT_MODEL):
        return [pytest.mark.finding(REPEAT_ID, reason=REPEAT_REASON, expected=repeat_band(), hardware=lf.MEASURED_ON,
                                    quantity="cause.fp8_kv+repeat.window_ratio_to_fp8_weights", strict=True,
                                    band_from="other-runs")]
    if name != CAUSE:
        return []
    reason = WINDOW_REASON if run == 1 else WINDOW_REASON.replace(
        f"ran its prompt windows above 512 tokens in {ABOVE_MS:.2f} ms", f"ran its prompt windows above 512 tokens in "
        f"{ABOVE_MS:.2f} ms on its first run (batch {CAUSE_BATCH})")
    return [pytest.mark.finding(WINDOW_ID, reason=reason, quantity=f"cause.{CAUSE}.window_above_512",
                                expected=window_band(run), hardware=lf.MEASURED_ON, strict=True,
                                band_from="other-runs")]
