"""The latency suite's findings, as data: which card they were measured on, their explanations, and
the bands that are derived from a different run than the one checked.

A finding explains a gap in one card's measurements (the numbers in its reason are that card's);
its mark carries `hardware=CHECKED_ON`, so on any other target the same reconciliation is judged
on its own. Another card's findings get their own constant here.

Decode-step bands come from the other H200 session (OTHER_SESSION: the 2026-11-30 runs) while the
suite replays the newest one (2026-12-02: Qwen2.5-7B's 23:58 NVML-spec session, Llama-3.1-8B's 23:51 catalog-spec
one): each band is that session's measured/predicted ratio,
computed by the same setup code, +- OTHER_SESSION_NOISE. test_latency_steps.py::
test_decode_bands_are_the_other_sessions_ratios recomputes every ratio from the recordings, so none
is retyped by hand.

The same holds for the numbers a reason quotes from the recordings: each is formatted from a table here that a test
recomputes (test_latency_steps.py, test_latency_load.py, test_latency_closed_loop.py,
test_latency_findings_reasons.py), or recomputed by
test_latency_findings_reasons.py and looked for in the reason's text at its printed precision. Model facts (56 KiB of
KV per token), a band's definition and the accuracy targets are not measurements and stay as written.
Not tied yet (estimates whose definition the text does not pin down to one recorded quantity): ITL_UNDER_LOAD's
"50-90 sequences", LLAMA_TTFT_REASON's "~35-70 decodes", the above-GEMMs reason's "5-10 ms" and "~10-13%", and
DECODE_ROOFLINE's 4.02 ms GEMV chain (docs/DESIGN.md; no recording holds it).

The findings live in one module per topic; this one re-exports every name the tests read (`import latency_findings as
lf`, then `lf.X`), so a test never needs to know which module holds a finding:
- latency_findings_common.py: the card, the two models, the other session and its noise, bands carried from other
  runs (Carried, StepCarried), the reasons' wording helpers;
- latency_decode_findings.py: the decode step (other-session bands, per-sequence cost, b=1 overhead, bare roofline,
  tiny-hidden twins) and which decode runs the run-validity check flags;
- latency_prefill_findings.py: the lone prefill (matmul ceiling, short prompts, long prompts above their GEMMs);
- latency_closed_loop_findings.py: the closed loop (C=64 steady state, median ITL and C = 1 throughput carried from
  the decode step, C = 1 first-token time, C = 8/32/64 throughput with the per-sequence excess);
- latency_poisson_overload_findings.py: Poisson arrivals (ITL under load) and the overload runs;
- latency_poisson_ttft_findings.py: Poisson arrivals' TTFT below the knee;
- latency_run_validity_findings.py: runs the validity checks flag (stalled decode runs, slow prompt steps);
- latency_session_pace_findings.py: sessions whose every Poisson run ran its prompts slowly (imported directly);
- latency_card_findings.py: divergences recorded on one physical card, keyed by its NVML UUID (imported directly);
- latency_seed_findings.py: the seed's RTX 4090.
"""

from __future__ import annotations

from latency_closed_loop_findings import (C1_FIRST_TOKEN, b64_step_miss_mark, C1_FIRST_TOKEN_CASES, CLOSED_ITL_FROM_DECODE,
                                          CLOSED_THROUGHPUT_FROM_DECODE, PROMPT_STEPS_SLOWER,
                                          STEADY_STATE_LLAMA, STEADY_STATE_RATIOS, STEADY_STATE_WITH_GEMM_ETA,
                                          c1_first_token_marks, closed_itl_marks, closed_throughput_marks,
                                          CLOSED_C8_SHORT_ID, CLOSED_THROUGHPUT_C, CLOSED_THROUGHPUT_QUANTITY,
                                          CLOSED_THROUGHPUT_RUNS, LLAMA_THROUGHPUT_ABOVE, closed_throughput_cost_marks,
                                          closed_throughput_envelope, closed_throughput_misses,
                                          steady_state_band, steady_state_marks)
from latency_decode_findings import (B1_RESIDUAL_MS, BORDERLINE, DECODE_RATIO_OTHER_SESSION, DECODE_ROOFLINE,
                                     HOST_STALL_FINDING_ID, PER_SEQUENCE_FINDING_ID, LLAMA_B1_RATIOS, LLAMA_OVERHEAD_BELOW_QWEN, TRANSFERRED_OVERHEAD_ID,
                                     MARGINAL_COST_NEWEST, MARGINAL_COST_REASON, MARGINAL_COST_RUNS,
                                     NEWEST_SLOPE_STALLED, NEWEST_SLOPE_STALLED_AT,
                                     PER_SEQUENCE_COST, ROOFLINE_OTHER_SESSION, SLOPE_STALLED_SESSIONS,
                                     STALLED_DECODE_RUNS, STALLED_PINNED_POOL, TINY_OVERHEAD_FINDING,
                                     TINY_OVERHEAD_REASON, decode_step_marks, marginal_cost_band, marginal_cost_envelope, marginal_cost_marks,
                                     marginal_cost_span)
from latency_findings_common import (CHECKED_ON, LLAMA, MEASURED_ON, OTHER_SESSION, OTHER_SESSION_NOISE, QWEN, Carried, StepCarried,
                                     _count, other_session_band)
from latency_poisson_overload_findings import (CARRIED, FIRST_WITH_GEMM_TIMINGS, FRONTEND_MS_BELOW_KNEE, HEAVY,
                                               HEAVY_MARKS, LLAMA_HEAVY_MARKS, ITL_MARKS, SEQUENCE_COST_ITL,
                                               sequence_cost_itl_marks, ITL_MEDIAN_BETWEEN_REASON,
                                               ITL_MEDIAN_NEIGHBOURS, ITL_TARGET, ITL_MEAN_DERIVED, ITL_UNDER_LOAD,
                                               LLAMA_OVERLOAD_REASON, POISSON_ITL_MEAN_NEWEST_BUDGET,
                                               POISSON_PACE_FLAGGED, itl_mean_band, itl_mean_envelope,
                                               itl_median_band_13, itl_median_envelope, POISSON_ITL_MEDIAN_13,
                                               POISSON_ITL_MEDIAN_13_NEWEST_BUDGET, MIXED_PREFILL, MIXED_REASON,
                                               OVERLOAD_ITL_MARKS, OVERLOAD_MARKS, POISSON, POISSON_ITL_MEAN,
                                               POISSON_ITL_MEDIAN_BETWEEN, QWEN_HEAVY_OUTSIDE, QWEN_HEAVY_OVERLOAD,
                                               SESSIONS, STRADDLING_THE_GOAL, neighbour_band)
from latency_poisson_ttft_findings import (FIRST_TOKEN_BANDED, LLAMA_TTFT_REASON, POISSON_ENGINE_TTFT_P50,
                                           POISSON_ENGINE_TTFT_P50_NEWEST_BUDGET, POISSON_TTFT, POISSON_TTFT_P50,
                                           POISSON_TTFT_P50_NEWEST_BUDGET, TTFT_DERIVED, TTFT_MARKS, TTFT_REASON,
                                           ttft_band, ttft_envelope)
from latency_prefill_findings import (_PINNED, _UTILIZATION, CHECKED_PREFILL, GEMM_ETA_SESSIONS, GEMM_ETA_SPAN,
                                      MEMORY_BOUND_PREFILL, PREFILL_ABOVE_GEMMS_REASON, PREFILL_BELOW_CEILING_REASON,
                                      PREFILL_ETA_OTHER_SESSION, PREFILL_ROOFLINE_RUNS,
                                      PREFILL_RUNS, SHORT_PREFILL_REASON, _decode_overhead_ms, _inside_budget,
                                      _prefill_above_gemms_reason, above_gemms_marks, prefill_band,
                                      prefill_ceiling_band, prefill_ceiling_marks, short_prefill_marks,
                                      short_prefill_reason)
from latency_run_validity_findings import (HOST_STALL, HOST_STALL_REASON, HOST_STALL_SAME_VISIT, SLOW_PROMPT_FINDING_ID,
                                           SLOW_PROMPT_CLEAN_TTFT_BAND, SLOW_PROMPT_REASON, SLOW_PROMPT_RUNS,
                                           slow_prompt_mark, stalled_run_marks)
from latency_seed_findings import (ATTAINMENT, HIGH_C, HIGH_C_MEDIAN, PAIRED_PROMPTS, SEED_LITTLES_LAW,
                                   SEED_MARGINAL_COST, SEED_TTFT_GROUPING)

# Every name above, the private ones included that tests read (the wording helper _count, the prefill
# reasons' compared sessions and parts).
__all__ = [
    "b64_step_miss_mark",
    "CHECKED_ON", "MEASURED_ON", "QWEN", "LLAMA", "_count", "OTHER_SESSION", "OTHER_SESSION_NOISE", "other_session_band", "Carried",
    "StepCarried", "DECODE_RATIO_OTHER_SESSION", "MARGINAL_COST_RUNS", "HOST_STALL_FINDING_ID", "STALLED_DECODE_RUNS",
    "STALLED_PINNED_POOL", "SLOPE_STALLED_SESSIONS", "NEWEST_SLOPE_STALLED", "NEWEST_SLOPE_STALLED_AT",
    "marginal_cost_span", "PER_SEQUENCE_COST", "B1_RESIDUAL_MS", "LLAMA_B1_RATIOS", "LLAMA_OVERHEAD_BELOW_QWEN", "TRANSFERRED_OVERHEAD_ID",
    "BORDERLINE", "decode_step_marks", "ROOFLINE_OTHER_SESSION", "TINY_OVERHEAD_REASON", "TINY_OVERHEAD_FINDING",
    "DECODE_ROOFLINE", "MARGINAL_COST_NEWEST", "MARGINAL_COST_REASON", "marginal_cost_band", "marginal_cost_envelope", "PER_SEQUENCE_FINDING_ID",
    "marginal_cost_marks", "PREFILL_ROOFLINE_RUNS", "prefill_ceiling_band", "PREFILL_ETA_OTHER_SESSION",
    "PREFILL_BELOW_CEILING_REASON", "prefill_ceiling_marks", "PREFILL_RUNS", "GEMM_ETA_SESSIONS", "CHECKED_PREFILL",
    "MEMORY_BOUND_PREFILL", "prefill_band", "SHORT_PREFILL_REASON", "PREFILL_ABOVE_GEMMS_REASON", "GEMM_ETA_SPAN",
    "_PINNED", "_UTILIZATION", "_decode_overhead_ms", "short_prefill_reason", "short_prefill_marks",
    "_prefill_above_gemms_reason", "_inside_budget", "above_gemms_marks", "STEADY_STATE_RATIOS", "steady_state_band",
    "STEADY_STATE_LLAMA", "STEADY_STATE_WITH_GEMM_ETA", "PROMPT_STEPS_SLOWER", "steady_state_marks",
    "CLOSED_ITL_FROM_DECODE", "CLOSED_THROUGHPUT_FROM_DECODE", "closed_throughput_marks",
    "closed_itl_marks", "CLOSED_THROUGHPUT_QUANTITY", "CLOSED_THROUGHPUT_C", "CLOSED_THROUGHPUT_RUNS",
    "closed_throughput_misses", "closed_throughput_envelope", "CLOSED_C8_SHORT_ID", "LLAMA_THROUGHPUT_ABOVE",
    "closed_throughput_cost_marks", "C1_FIRST_TOKEN_CASES", "C1_FIRST_TOKEN", "c1_first_token_marks", "POISSON", "HEAVY",
    "FIRST_WITH_GEMM_TIMINGS", "CARRIED", "STRADDLING_THE_GOAL", "TTFT_REASON", "TTFT_DERIVED",
    "POISSON_TTFT", "POISSON_TTFT_P50", "POISSON_TTFT_P50_NEWEST_BUDGET", "POISSON_ENGINE_TTFT_P50",
    "POISSON_ENGINE_TTFT_P50_NEWEST_BUDGET", "ttft_envelope", "ttft_band",
    "LLAMA_TTFT_REASON", "TTFT_MARKS", "POISSON_ITL_MEAN", "ITL_TARGET", "SESSIONS", "ITL_UNDER_LOAD",
    "FIRST_TOKEN_BANDED", "ITL_MEAN_DERIVED", "POISSON_PACE_FLAGGED", "POISSON_ITL_MEAN_NEWEST_BUDGET",
    "itl_mean_envelope", "itl_mean_band", "itl_median_envelope", "itl_median_band_13", "POISSON_ITL_MEDIAN_13",
    "POISSON_ITL_MEDIAN_13_NEWEST_BUDGET", "SEQUENCE_COST_ITL", "sequence_cost_itl_marks",
    "ITL_MEDIAN_NEIGHBOURS", "POISSON_ITL_MEDIAN_BETWEEN", "neighbour_band", "ITL_MEDIAN_BETWEEN_REASON", "ITL_MARKS",
    "MIXED_PREFILL", "FRONTEND_MS_BELOW_KNEE", "MIXED_REASON", "QWEN_HEAVY_OVERLOAD", "QWEN_HEAVY_OUTSIDE", "LLAMA_OVERLOAD_REASON",
    "OVERLOAD_MARKS", "OVERLOAD_ITL_MARKS", "HEAVY_MARKS", "LLAMA_HEAVY_MARKS", "HOST_STALL_SAME_VISIT", "HOST_STALL", "HOST_STALL_REASON",
    "stalled_run_marks", "SLOW_PROMPT_FINDING_ID", "SLOW_PROMPT_RUNS", "SLOW_PROMPT_CLEAN_TTFT_BAND",
    "SLOW_PROMPT_REASON", "slow_prompt_mark",
    "ATTAINMENT", "HIGH_C", "HIGH_C_MEDIAN", "PAIRED_PROMPTS", "SEED_MARGINAL_COST", "SEED_TTFT_GROUPING",
    "SEED_LITTLES_LAW"
]
