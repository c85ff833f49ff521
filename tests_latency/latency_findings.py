"""The latency suite's findings, as data: which card they were measured on, their explanations, and
the bands that are derived from a different run than the one checked.

A finding explains a gap in one card's measurements (the numbers in its reason are that card's);
its mark carries `hardware=MEASURED_ON`, so on any other target the same reconciliation is judged
on its own. Another card's findings get their own constant here.

Decode-step bands come from the other H200 session (OTHER_SESSION: the 2026-11-30 runs) while the
suite replays the newest one (2026-12-02: Qwen2.5-7B's 14:26 NVML-spec session, Llama-3.1-8B's 14:18 catalog-spec
one): each band is that session's measured/predicted ratio,
computed by the same setup code, +- OTHER_SESSION_NOISE. test_latency_steps.py::
test_decode_bands_are_the_other_sessions_ratios recomputes every ratio from the recordings, so none
is retyped by hand.

The same holds for the numbers a reason quotes from the recordings: each is formatted from a table here that a test
recomputes (test_latency_steps.py, test_latency_load.py, test_latency_findings_reasons.py), or recomputed by
test_latency_findings_reasons.py and looked for in the reason's text at its printed precision. Model facts (56 KiB of
KV per token), a band's definition and the accuracy targets are not measurements and stay as written.
Not tied yet (estimates whose definition the text does not pin down to one recorded quantity): ITL_UNDER_LOAD's
"50-90 sequences", LLAMA_TTFT_REASON's "~35-70 decodes", the above-GEMMs reason's "5-10 ms" and "~10-13%", and
DECODE_ROOFLINE's 4.02 ms GEMV chain (docs/DESIGN.md; no recording holds it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

MEASURED_ON = "h200"
QWEN, LLAMA = "qwen2.5-7b", "llama-3.1-8b"

# A count as the reasons spell it ("four sessions").
_COUNT = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count(n: int) -> str:
    return _COUNT[n] if n < len(_COUNT) else f"{n:,}"


def _plural(n: int) -> str:
    return "" if n == 1 else "s"


def _days(stamps: tuple[str, ...]) -> str:
    """The days of `stamps` (oldest first) as a reason names them: "2026-12-01" or "2026-12-01 to 2026-12-02"."""
    first, last = stamps[0][:10], stamps[-1][:10]
    return first if first == last else f"{first} to {last}"


def _and(items: list[str]) -> str:
    """["a", "b", "c"] -> "a, b and c"."""
    return " and ".join(filter(None, (", ".join(items[:-1]), items[-1]))) if items else ""


# The session the decode bands were measured in, per model (its b=1 recording's stamp).
OTHER_SESSION = {"qwen2.5-7b": "2026-11-30T00:37:45Z", "llama-3.1-8b": "2026-11-30T02:02:39Z"}
# Two runs' noise budgets (each <= 1.25% for a decode step: repeat scatter, ceiling and calibration spread).
OTHER_SESSION_NOISE = 0.025

# measured / predicted decode step in OTHER_SESSION, by (model, batch): Qwen with its own calibration,
# Llama with the Qwen calibration known when it ran (tests_latency/conftest.py).
DECODE_RATIO_OTHER_SESSION: dict[tuple[str, int], float] = {
    ("qwen2.5-7b", 4): 1.0100, ("qwen2.5-7b", 8): 1.0166, ("qwen2.5-7b", 16): 1.0347, ("qwen2.5-7b", 32): 1.0444,
    ("qwen2.5-7b", 64): 1.0588, ("qwen2.5-7b", 128): 1.1282,
    ("llama-3.1-8b", 1): 0.9856, ("llama-3.1-8b", 2): 0.9928, ("llama-3.1-8b", 4): 0.9980, ("llama-3.1-8b", 8): 1.0143,
    ("llama-3.1-8b", 16): 1.0224, ("llama-3.1-8b", 32): 1.0538, ("llama-3.1-8b", 64): 1.0854,
    ("llama-3.1-8b", 128): 1.1565,
}

# measured / predicted per-sequence slope (the decode step's OLS slope over b = 1..64 against d(t_step)/db), every
# recorded H200 session of each model, each with its own session's setup (Llama with the Qwen calibration known when it
# ran): test_latency_findings_reasons.py::test_marginal_cost_runs_are_the_recorded_ones recomputes them.
MARGINAL_COST_RUNS: dict[tuple[str, str], float] = {
    ("qwen2.5-7b", "2026-11-30T00:37:45Z"): 1.3719, ("qwen2.5-7b", "2026-12-01T04:47:39.125311Z"): 1.3100,
    ("qwen2.5-7b", "2026-12-01T05:15:55.000000Z"): 1.3034, ("qwen2.5-7b", "2026-12-01T06:44:22.000000Z"): 1.2733,
    ("qwen2.5-7b", "2026-12-01T06:53:39.000000Z"): 1.2996, ("qwen2.5-7b", "2026-12-01T11:24:59.000000Z"): 1.2657,
    ("qwen2.5-7b", "2026-12-01T11:34:04.000000Z"): 1.2857, ("qwen2.5-7b", "2026-12-02T00:05:58.000000Z"): 1.2614,
    ("qwen2.5-7b", "2026-12-02T00:15:06.000000Z"): 1.5103, ("qwen2.5-7b", "2026-12-02T02:33:51.000000Z"): 1.2703,
    ("qwen2.5-7b", "2026-12-02T02:43:17.000000Z"): 1.9208, ("qwen2.5-7b", "2026-12-02T04:52:35.000000Z"): 1.2540,
    ("qwen2.5-7b", "2026-12-02T04:59:44.000000Z"): 1.2400, ("qwen2.5-7b", "2026-12-02T07:14:23.000000Z"): 1.2697,
    ("qwen2.5-7b", "2026-12-02T07:21:58.000000Z"): 1.2894, ("qwen2.5-7b", "2026-12-02T14:18:58.000000Z"): 1.2789,
    ("qwen2.5-7b", "2026-12-02T14:26:26.000000Z"): 1.2880,
    ("llama-3.1-8b", "2026-11-30T02:02:39Z"): 1.3201, ("llama-3.1-8b", "2026-12-01T04:47:39.340850Z"): 1.3398,
    ("llama-3.1-8b", "2026-12-01T06:44:22.000000Z"): 1.3264, ("llama-3.1-8b", "2026-12-01T11:24:59.000000Z"): 1.3181,
    ("llama-3.1-8b", "2026-12-02T00:05:58.000000Z"): 1.3199, ("llama-3.1-8b", "2026-12-02T02:33:51.000000Z"): 1.3263,
    ("llama-3.1-8b", "2026-12-02T04:52:35.000000Z"): 1.3343, ("llama-3.1-8b", "2026-12-02T07:14:23.000000Z"): 1.3065,
    ("llama-3.1-8b", "2026-12-02T14:18:58.000000Z"): 1.3518,
}


# A decode run the run-validity check flags (an engine-core stall) carries this finding (HOST_STALL_REASON below).
HOST_STALL_FINDING_ID = "h200-decode-stalled-run"
# Every recorded decode run of Qwen2.5-7B and Llama-3.1-8B the run-validity check flags (load_stats.decode_validity,
# on the engine-clock step intervals of its raw timeline): (model, session stamp, batch). Recomputed, with the
# check's margins on the clean runs, by test_latency_findings_reasons.py::test_decode_validity_flags_the_recorded_runs.
# The first four came from engines with the utilization-sized KV pool; latency_live_plan.py pins both plans' pools
# since, and STALLED_PINNED_POOL are the flagged runs from a pinned pool (the same test recomputes which).
STALLED_DECODE_RUNS: tuple[tuple[str, str, int], ...] = (
    (QWEN, "2026-11-30T00:37:45Z", 128), (QWEN, "2026-12-02T00:15:06.000000Z", 64),
    (QWEN, "2026-12-02T00:15:06.000000Z", 128), (QWEN, "2026-12-02T02:43:17.000000Z", 64),
    (QWEN, "2026-12-02T14:18:58.000000Z", 16))
STALLED_PINNED_POOL = frozenset({(QWEN, "2026-12-02T14:18:58.000000Z", 16)})
# The sessions of MARGINAL_COST_RUNS whose b = 1..64 slope runs through a run the validity check flags: their slopes
# (MARGINAL_COST_RUNS keeps them) are neither quoted in the spans nor a band's source; the newest is quoted by name.
SLOPE_STALLED_SESSIONS = frozenset((m, s) for m, s, b in STALLED_DECODE_RUNS if b <= 64)
NEWEST_SLOPE_STALLED = max(SLOPE_STALLED_SESSIONS, key=lambda ms: ms[1])
NEWEST_SLOPE_STALLED_AT = min(b for m, s, b in STALLED_DECODE_RUNS if (m, s) == NEWEST_SLOPE_STALLED)  # its batch


def marginal_cost_span(*models: str) -> str:
    """The per-sequence slope ratios of `models` (every recorded session outside SLOPE_STALLED_SESSIONS) as the reasons quote
    them: "1.3-1.4", or one number where both ends print alike."""
    lo, hi = (f(r for (m, stamp), r in MARGINAL_COST_RUNS.items() if m in models and (m, stamp) not in SLOPE_STALLED_SESSIONS)
              for f in (min, max))
    return f"{lo:.1f}" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}-{hi:.1f}"


PER_SEQUENCE_COST = (
    "Each extra sequence costs more than its KV bytes at the read ceiling: the decode step's OLS slope over "
    f"b = 1..64 is ~{marginal_cost_span(QWEN, LLAMA)}x the KV read per sequence for both models "
    f"(every session but the {len(SLOPE_STALLED_SESSIONS)} with a b = 1..64 run of {HOST_STALL_FINDING_ID}'s; "
    "test_marginal_cost_per_sequence: "
    "1,088 tokens x 56 KiB for Qwen2.5-7B, x 128 KiB for Llama-3.1-8B), so the gap grows with the batch, to "
    f"{DECODE_RATIO_OTHER_SESSION[('qwen2.5-7b', 128)] - 1:+.1%} (Qwen) and "
    f"{DECODE_RATIO_OTHER_SESSION[('llama-3.1-8b', 128)] - 1:+.1%} (Llama) at b=128 in the 2026-11-30 session. "
    "Not yet isolated: paged decode attention over 16-token blocks "
    "reading below the streaming ceiling, and per-sequence sampling and bookkeeping. The seed's 4090 shows 1.6x.")
# The b=1 decode residual (measured step - roofline at the session's read ceiling), ms, lowest and highest over
# every recorded H200 session of each model (test_b1_residuals_are_the_recorded_ones recomputes them).
B1_RESIDUAL_MS: dict[str, tuple[float, float]] = {"qwen2.5-7b": (1.485, 1.551), "llama-3.1-8b": (1.414, 1.482)}
# Llama-3.1-8B's b=1 decode step, measured / predicted with the Qwen calibration known when it ran, every recorded
# session (test_latency_findings_reasons.py::test_llama_b1_ratios_are_the_recorded_ones recomputes them).
LLAMA_B1_RATIOS: dict[str, float] = {"2026-11-30T02:02:39Z": 0.9856, "2026-12-01T04:47:39.340850Z": 0.9924,
                                     "2026-12-01T06:44:22.000000Z": 0.9727, "2026-12-01T11:24:59.000000Z": 0.9814,
                                     "2026-12-02T00:05:58.000000Z": 0.9868, "2026-12-02T02:33:51.000000Z": 0.9875,
                                     "2026-12-02T04:52:35.000000Z": 0.9852, "2026-12-02T07:14:23.000000Z": 0.9950,
                                     "2026-12-02T14:18:58.000000Z": 0.9808}
LLAMA_OVERHEAD_BELOW_QWEN = (
    "Llama-3.1-8B's b=1 step leaves {0:.2f}-{1:.2f} ms above its roofline where Qwen2.5-7B's leaves {2:.2f}-{3:.2f} ms in "
    "the same sessions and engine: the overhead transferred from Qwen over-predicts Llama's small-batch steps "
    "(by {4:.0%}-{5:.0%} at b=1 over its {6} sessions), although Llama has 32 layers to Qwen's 28. Not a per-layer "
    "cost (that would go the other way); "
    "candidates: GEMV streaming efficiency at Llama's shapes (hidden 4,096, no qkv bias) vs Qwen's (3,584, "
    "with bias). The tiny-hidden overhead models separate the engine's share from the model's.").format(
    *B1_RESIDUAL_MS["llama-3.1-8b"], *B1_RESIDUAL_MS["qwen2.5-7b"], 1 - max(LLAMA_B1_RATIOS.values()),
    1 - min(LLAMA_B1_RATIOS.values()), _count(len(LLAMA_B1_RATIOS)))
# b at which a session's ratio may straddle its own noise budget: the finding may resolve in one session
BORDERLINE = {("qwen2.5-7b", 4), ("qwen2.5-7b", 8), ("llama-3.1-8b", 1), ("llama-3.1-8b", 2), ("llama-3.1-8b", 4),
              ("llama-3.1-8b", 8)}


def other_session_band(ratio: float) -> tuple[float, float]:
    return (round(ratio * (1 - OTHER_SESSION_NOISE), 4), round(ratio * (1 + OTHER_SESSION_NOISE), 4))


def decode_step_marks(model: str, b: int) -> tuple[pytest.MarkDecorator, ...]:
    """The finding of a decode step at batch b, its band from the other session, or none."""
    ratio = DECODE_RATIO_OTHER_SESSION.get((model, b))
    if ratio is None:
        return ()
    fid, reason = (("h200-transferred-overhead-above-llamas", LLAMA_OVERHEAD_BELOW_QWEN) if ratio < 1
                   else ("h200-decode-per-sequence-cost", PER_SEQUENCE_COST))
    return (pytest.mark.finding(fid, reason=reason, expected=other_session_band(ratio), hardware=MEASURED_ON,
                                strict=(model, b) not in BORDERLINE),)


# measured / steady-state closed form at C=64 (test_saturation_throughput), eta fitted on the 8,192 prefill (the
# recipe every session has), of the runs that set each model's band: Qwen2.5-7B's, its own earlier runs (every
# recorded run before the newest); Llama-3.1-8B's (one run), every recorded Qwen2.5-7B run. The band is their range
# +- OTHER_SESSION_NOISE, carried to the run checked by the shift the theory computes for THAT run at test time (its
# closed form with the prefill-fitted eta / with the eta its session's GEMM timings give; 1 where it timed none).
# test_steady_state_bands_are_the_recorded_ratios recomputes them.
STEADY_STATE_RATIOS: dict[str, tuple[float, ...]] = {"qwen2.5-7b": (0.9014, 0.9125, 0.9092, 0.9221, 0.9150, 0.9168,
                                                                    0.9114, 0.9106),
                                                     "llama-3.1-8b": (0.9014, 0.9125, 0.9092, 0.9221, 0.9150, 0.9168,
                                                                      0.9114, 0.9106, 0.9157)}


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
                                                              "2026-12-02T14:18:58.000000Z": (0.8366, 0.9137)}
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
                                quantity="output_throughput_steady_state", hardware=MEASURED_ON),)


# --- test_latency_steps.py -------------------------------------------------------------------
# Qwen2.5-7B's b=1 step in OTHER_SESSION against its bare roofline (test_decode_bands_are_the_other_sessions_ratios
# recomputes these): matmul + KV bytes (GB), the session's read ceiling (TB/s), the roofline and the step (ms).
ROOFLINE_OTHER_SESSION = {"bytes_gb": 14.203, "read_tb_s": 4.469, "roofline_ms": 3.178, "step_ms": 4.666}
# The overhead measured apart: the tiny-hidden twins' fitted c0 + c_layer x layers, added to Qwen2.5-7B's b=1
# roofline, against Qwen2.5-7B's measured b=1 step (test_tiny_models_overhead_as_an_additive_term). The band is set
# at test time from the mechanism and other sessions (reconcile(finding_band=)): if the twins' step is a CPU-side
# floor that the full model's GPU work hides, Qwen's b=1 step is its roofline plus the residual it left in the
# sessions recorded without the twins, each +- its own noise.
TINY_OVERHEAD_REASON = (
    "The tiny-hidden twins' decode step (hidden 256, 2 and 28 layers, same engine and settings) is not an overhead "
    "that adds to a full model's GPU work: c0 + c_layer x 28 layers from them, added to Qwen2.5-7B's b=1 roofline, "
    "over-predicts Qwen2.5-7B's measured b=1 step. A twin's step is the async engine's CPU-side loop (scheduling, "
    "input preparation, sampling bookkeeping, the graph launch), which the 7B model's "
    f"~{ROOFLINE_OTHER_SESSION['roofline_ms']:.1f} ms of GPU work per step "
    "overlaps, so it is a floor, not a term to add. The calibration therefore keeps Qwen2.5-7B's own b=1 residual "
    "(calibration.TINY_OVERHEAD_IS_ADDITIVE = False). Band: the measured step this mechanism expects, the checked "
    "session's roofline plus the b=1 residual of each other recorded session, +- that session's and this run's noise.")
TINY_OVERHEAD_FINDING = pytest.mark.finding("h200-tiny-model-step-is-the-cpu-loop", hardware=MEASURED_ON,
                                            reason=TINY_OVERHEAD_REASON, quantity="decode_step_tiny_overhead")


_R = ROOFLINE_OTHER_SESSION
DECODE_ROOFLINE = pytest.mark.finding("h200-decode-step-overhead", hardware=MEASURED_ON,
    reason=(f"The bare roofline ({_R['bytes_gb']:.2f} GB at the measured {_R['read_tb_s']:.2f} TB/s read ceiling = "
            f"{_R['roofline_ms']:.2f} ms; {_R['bytes_gb'] / 4.8:.2f} ms at the 4.8 TB/s datasheet) misses "
            f"{_R['step_ms'] - _R['roofline_ms']:.2f} ms of the {_R['step_ms']:.2f} ms b=1 step "
            f"({1 - _R['roofline_ms'] / _R['step_ms']:.0%}; the 2026-11-30 session). A CUDA-graphed chain of cuBLAS "
            "GEMVs over the same weights took 4.02 ms on this H200 (DESIGN.md): "
            f"{4.02 - _R['roofline_ms']:.2f} ms of the gap is GEMV streaming below the read ceiling; the remaining "
            f"~{_R['step_ms'] - 4.02:.2f} ms is attention, norms, rope, sampling and kernel boundaries. Band: that "
            f"session's ratio +-{OTHER_SESSION_NOISE:.1%}."),
    expected=other_session_band(_R["step_ms"] / _R["roofline_ms"]))

# measured / predicted per-sequence slope (b = 1..64) and that run's noise budget (slope scatter + read ceiling's), each
# model's newest session (the run each check replays), and each model's newest session outside SLOPE_STALLED_SESSIONS (the
# run that sets the other model's band: a run a noisy-run finding covers is no band's source), by its stamp;
# test_marginal_cost_bands_are_the_other_models recomputes both.
MARGINAL_COST_NEWEST: dict[str, tuple[float, float]] = {"qwen2.5-7b": (1.2880, 0.1012), "llama-3.1-8b": (1.3518, 0.0239)}
MARGINAL_COST_SOURCE: dict[str, tuple[str, float, float]] = {
    "qwen2.5-7b": ("2026-12-02T14:26:26.000000Z", 1.2880, 0.1012),
    "llama-3.1-8b": ("2026-12-02T14:18:58.000000Z", 1.3518, 0.0239)}


def _hhmm(model: str, stamp: str) -> str:
    return f"{stamp[:10]} {stamp[11:16]}" if model == QWEN else stamp[11:16]


MARGINAL_COST_REASON = (
    "Each extra sequence adds more to the decode step than its KV read at the session's read ceiling (1,088 tokens x "
    "56 KiB for Qwen2.5-7B, x 128 KiB for Llama-3.1-8B): {0:.2f}x for Qwen2.5-7B ({1}) and {2:.2f}x for "
    "Llama-3.1-8B ({3}), {4:.2f}x and {5:.2f}x on 2026-11-30: the same per-byte excess on two KV shapes (GQA 7:1 vs 4:1), "
    "so it scales with KV bytes, not with the model's GEMMs. The seed's 4090 shows 1.6x. Not yet isolated: paged "
    "decode attention over 16-token blocks reading below the streaming ceiling. Band: the other model's newest ratio "
    "+- both runs' noise budgets, from a run no stalled-run finding covers (Qwen2.5-7B's {6} session measured "
    f"{{7:.2f}}x through its stalled b={{8}} run, {HOST_STALL_FINDING_ID}'s, and is no band's source).").format(
    MARGINAL_COST_SOURCE[QWEN][1], _hhmm(QWEN, MARGINAL_COST_SOURCE[QWEN][0]), MARGINAL_COST_SOURCE[LLAMA][1],
    _hhmm(LLAMA, MARGINAL_COST_SOURCE[LLAMA][0]), *(MARGINAL_COST_RUNS[(m, OTHER_SESSION[m])] for m in (QWEN, LLAMA)),
    _hhmm(QWEN, NEWEST_SLOPE_STALLED[1]), MARGINAL_COST_RUNS[NEWEST_SLOPE_STALLED], NEWEST_SLOPE_STALLED_AT)


def marginal_cost_band(model: str) -> tuple[float, float]:
    """The other model's source run's ratio +- its budget and the checked (newest) run's."""
    (_, other_ratio, other_budget), = [v for m, v in MARGINAL_COST_SOURCE.items() if m != model]
    half = other_budget + MARGINAL_COST_NEWEST[model][1]
    return (round(other_ratio * (1 - half), 4), round(other_ratio * (1 + half), 4))


def marginal_cost_marks(model: str) -> tuple[pytest.MarkDecorator, ...]:
    return (pytest.mark.finding("h200-decode-per-sequence-cost", hardware=MEASURED_ON, reason=MARGINAL_COST_REASON,
                                expected=marginal_cost_band(model)),)




# The host-stall finding's numbers (HOST_STALL_REASON), from three flagged runs of Qwen2.5-7B on 2026-12-02 (the two
# disturbed b=64 runs, and the 14:18 b=16 run, the first from a pinned pool), each beside the clean run at that batch of
# the same visit's other session (HOST_STALL_SAME_VISIT); test_latency_steps.py::
# test_host_stall_numbers_are_the_recorded_ones recomputes every entry. Step intervals: engine clock, the pure steps
# of the run's batch in its raw timeline (latency_setups.step_intervals), ms; short_share: the share under 0.9 x their median;
# below_b1: how many are shorter than the same session's b=1 step (b1_ms, its median interval); lag: the frontend's
# t - engine_t on those steps, ms; prefill_8192_apart: |the 8,192-token prefill of the two sessions' ratio - 1|;
# attempts: how often the plan measured the part (it measures a flagged one once more), flagged_attempts how many
# the check flagged; sm_mhz_min (runs with NVML samples, from 2026-12-02 14:18): the lowest SM clock sampled during
# the run and the clean one.
HOST_STALL_SAME_VISIT = {"2026-12-02T02:43:17.000000Z": "2026-12-02T02:33:51.000000Z",
                         "2026-12-02T00:15:06.000000Z": "2026-12-02T00:05:58.000000Z",
                         "2026-12-02T14:18:58.000000Z": "2026-12-02T14:26:26.000000Z"}
HOST_STALL: dict[str, dict[str, float]] = {
    "2026-12-02T14:18:58.000000Z": {
        "batch": 16, "steps": 124, "median_ms": 5.1707, "mean_ms": 5.2654, "std_ms": 1.0589, "min_ms": 2.605,
        "max_ms": 11.7266, "mean_over_median": 1.0183, "short_share": 0.1129, "below_b1": 15, "b1_ms": 4.77,
        "lag_median_ms": 1.317, "lag_p90_ms": 2.126, "lag_max_ms": 4.384, "clean_median_ms": 5.1625,
        "clean_std_ms": 0.0835, "clean_lag_p90_ms": 1.3388, "prefill_8192_apart": 0.0121, "sm_mhz_min": 1515,
        "clean_sm_mhz_min": 1515, "attempts": 2, "flagged_attempts": 2},
    "2026-12-02T02:43:17.000000Z": {
        "batch": 64, "steps": 118, "median_ms": 6.371, "mean_ms": 7.3039, "std_ms": 2.5133, "min_ms": 3.86, "max_ms": 15.021,
        "mean_over_median": 1.1464, "short_share": 0.2797, "below_b1": 12, "b1_ms": 4.6785, "lag_median_ms": 2.523,
        "lag_p90_ms": 5.632, "lag_max_ms": 6.709, "clean_median_ms": 5.8235, "clean_std_ms": 0.0722,
        "clean_lag_p90_ms": 2.6088, "prefill_8192_apart": 0.004, "attempts": 1, "flagged_attempts": 1},
    "2026-12-02T00:15:06.000000Z": {
        "batch": 64, "steps": 118, "median_ms": 6.029, "mean_ms": 6.3605, "std_ms": 0.6652, "min_ms": 4.634, "max_ms": 8.017,
        "mean_over_median": 1.055, "short_share": 0.0254, "below_b1": 1, "b1_ms": 4.7715, "lag_median_ms": 3.03,
        "lag_p90_ms": 3.7596, "lag_max_ms": 4.166, "clean_median_ms": 5.9325, "clean_std_ms": 0.1135,
        "clean_lag_p90_ms": 2.486, "prefill_8192_apart": 0.0145, "attempts": 1, "flagged_attempts": 1},
}
_N, _S, _P = (HOST_STALL[k] for k in sorted(HOST_STALL, reverse=True))  # 14:18, 02:43, then 00:15
_N_AT, _S_AT, _P_AT = (k[11:16] for k in sorted(HOST_STALL, reverse=True))
_N_CLEAN, _S_CLEAN, _P_CLEAN = (HOST_STALL_SAME_VISIT[k][11:16] for k in sorted(HOST_STALL, reverse=True))
HOST_STALL_REASON = (
    "A decode run the run-validity check flags (load_stats.decode_validity: mean/median of its engine-clock step "
    "intervals > 1.02, or > 5% of them under 0.9 x their median) was disturbed by a host-CPU stall of vLLM's "
    f"engine-core process, not by the GPU. Qwen2.5-7B's b=64 run of the 2026-12-02 {_S_AT} session (NVML spec): "
    f"{_S['steps']:.0f} steps, median {_S['median_ms']:.2f} ms, mean {_S['mean_ms']:.2f}, std {_S['std_ms']:.2f}, "
    f"{_S['min_ms']:.2f}-{_S['max_ms']:.1f} ms; {_S['short_share']:.0%} of them under 0.9 x the median and "
    f"{_S['below_b1']:.0f} under the same session's b=1 step ({_S['b1_ms']:.2f} ms): long steps followed by steps "
    "shorter than the GPU can run that batch, the engine catching up on work the GPU had already finished, which no "
    "GPU slowdown (an SM-clock drop included) can produce. The frontend, which does not wait on the GPU, lagged the "
    f"engine clock by up to {_S['lag_max_ms']:.1f} ms on those steps (p90 {_S['lag_p90_ms']:.1f}, median "
    f"{_S['lag_median_ms']:.1f}). The full session on the same machine at {_S_CLEAN} ran b=64 at median "
    f"{_S['clean_median_ms']:.2f} ms, std {_S['clean_std_ms']:.2f} ms (lag p90 {_S['clean_lag_p90_ms']:.1f}), and "
    f"the two sessions' 8,192-token prefills differ by {_S['prefill_8192_apart']:.1%}: the GPU was not slower. "
    f"The {_P_AT} session's b=64 run (mean/median {_P['mean_over_median']:.3f}, std {_P['std_ms']:.2f} ms against "
    f"{_P['clean_std_ms']:.2f} at {_P_CLEAN}) ran a slow stretch without catch-up steps, its frontend lag up alike "
    f"(p90 {_P['lag_p90_ms']:.1f} ms against {_P['clean_lag_p90_ms']:.1f}); its prefill was "
    f"{_P['prefill_8192_apart']:.1%} from {_P_CLEAN}'s. The four runs flagged before 14:18 came from engines with the "
    "utilization-sized KV pool; the live plans pin 12 GiB since and measure a flagged decode part once more, and the "
    f"pinned pool did not prevent it: the b={_N['batch']:.0f} run of the {_N_AT} full session was flagged on "
    f"{_count(int(_N['flagged_attempts']))} of its {_count(int(_N['attempts']))} attempts, the recorded one {_N['steps']:.0f} steps, median {_N['median_ms']:.2f} ms, std {_N['std_ms']:.2f}, "
    f"{_N['min_ms']:.2f}-{_N['max_ms']:.1f} ms, {_N['short_share']:.0%} under 0.9 x the median (mean/median "
    f"{_N['mean_over_median']:.3f}) and {_N['below_b1']:.0f} under the b=1 step ({_N['b1_ms']:.2f} ms): long steps "
    f"followed by catch-up steps again, frontend lag p90 {_N['lag_p90_ms']:.1f} ms against "
    f"{_N['clean_lag_p90_ms']:.1f}. The fast session at {_N_CLEAN} ran b={_N['batch']:.0f} at median "
    f"{_N['clean_median_ms']:.2f} ms, std {_N['clean_std_ms']:.2f} (8,192-token prefills {_N['prefill_8192_apart']:.1%} "
    "apart): the catch-up steps pay back the long ones, so the flagged run's median is still the GPU's step. Both runs "
    f"sampled SM clocks down to {_N['sm_mhz_min']:.0f} and {_N['clean_sm_mhz_min']:.0f} MHz (NVML, every 0.1 s): "
    "the clock does not separate them. Band, from no median of the judged run: lower edge the band h200-decode-per-sequence-cost sets at "
    "that batch (the 2026-11-30 ratio -2.5%; for the slope, Llama-3.1-8B's ratio - both runs' budgets), upper edge "
    "that band's upper edge plus one standard deviation of the run's steps over its median, a stated noise term (for "
    "the slope: each flagged run's std moved through the slope's leverage at its batch, over the predicted slope). "
    "strict=False: a clean rerun decides.")


def stalled_run_marks(model: str, quantity: str, spread: float, b: int | None = None) -> tuple[pytest.MarkDecorator, ...]:
    """HOST_STALL_FINDING_ID on `quantity` ("decode_step"/"decode_step_other_model" at batch b, or
    "decode_s_per_sequence") for a replayed run the validity check flags (the caller decides, latency_setups.run_validity):
    the band of the run's batch (DECODE_RATIO_OTHER_SESSION; none tabulated there, no mark) or of the slope
    (marginal_cost_band), its upper edge widened by `spread` (the flagged runs' step std, relative)."""
    if b is not None:
        ratio = DECODE_RATIO_OTHER_SESSION.get((model, b))
        if ratio is None:
            return ()
        lo, hi = other_session_band(ratio)
    else:
        lo, hi = marginal_cost_band(model)
    return (pytest.mark.finding(HOST_STALL_FINDING_ID, hardware=MEASURED_ON, quantity=quantity, reason=HOST_STALL_REASON,
                                expected=(lo, round(hi + spread, 4)), strict=False),)


# Qwen2.5-7B's lone prefill / its bare roofline at the matmul ceiling in OTHER_SESSION, by prompt length, and the
# two runs' noise at that length (each run's repeat scatter + its matmul ceiling's scatter, the newest run's
# included): both recomputed by test_prefill_bands_are_the_other_sessions_ratios.
PREFILL_ROOFLINE_OTHER_SESSION: dict[int, float] = {2048: 1.3866, 8192: 1.2726, 16384: 1.2698, 32000: 1.2853}
PREFILL_ROOFLINE_NOISE: dict[int, float] = {2048: 0.1038, 8192: 0.0772, 16384: 0.0591, 32000: 0.0335}
# eta fitted on that session's 8,192-token prefill (the recipe before GEMM timings; recomputed by
# test_latency_findings_reasons.py::test_prefill_eta_fitted_in_the_other_session)
PREFILL_ETA_OTHER_SESSION = 0.7919
PREFILL_BELOW_CEILING_REASON = (
    f"At the session's measured 8192^3 bf16 matmul ceiling long prefills are "
    f"{min(PREFILL_ROOFLINE_OTHER_SESSION.values()) - 1:.0%}-{max(PREFILL_ROOFLINE_OTHER_SESSION.values()) - 1:.0%} "
    f"slower than their FLOPs (2026-11-30: they reach {1 / max(PREFILL_ROOFLINE_OTHER_SESSION.values()):.0%}-"
    f"{1 / min(PREFILL_ROOFLINE_OTHER_SESSION.values()):.0%} of it; eta = {PREFILL_ETA_OTHER_SESSION:.2f} when fitted on "
    "8,192 tokens). Real shapes (K = 3,584, N = 512 for k/v) "
    "tile worse than 8192^3, FlashAttention's causal kernel runs below GEMM peak, and norms/rope/activations add "
    "memory-bound passes the FLOP count ignores. Band: the 2026-11-30 session's ratio at that length +- both "
    "runs' repeat and matmul-ceiling scatter.")


def prefill_ceiling_marks(length: int) -> tuple[pytest.MarkDecorator, ...]:
    ratio, noise = PREFILL_ROOFLINE_OTHER_SESSION[length], PREFILL_ROOFLINE_NOISE[length]
    return (pytest.mark.finding("h200-prefill-below-matmul-ceiling", hardware=MEASURED_ON,
                                reason=PREFILL_BELOW_CEILING_REASON,
                                expected=(round(ratio * (1 - noise), 4), round(ratio * (1 + noise), 4))),)

# measured / predicted lone prefill (engine time from scheduling to first token, median) and that run's noise budget
# (step_budget's sum: repeat scatter + ceiling spread + calibration spread), per session (its b=1 decode stamp) and
# prompt length, each predicted with the calibration of its own session (Llama with Qwen's known then);
# test_prefill_runs_are_the_recorded_ones recomputes every entry, and fails when a session is missing from it.
PREFILL_RUNS: dict[tuple[str, str], dict[int, tuple[float, float]]] = {
    ("qwen2.5-7b", "2026-11-30T00:37:45Z"): {128: (3.4086, 0.1332), 512: (3.0844, 0.1668)},
    ("qwen2.5-7b", "2026-12-01T04:47:39.125311Z"): {128: (2.0804, 0.3401), 512: (1.8401, 0.2726)},
    ("qwen2.5-7b", "2026-12-01T05:15:55.000000Z"): {128: (2.7349, 0.0330), 512: (2.3596, 0.0693)},
    ("qwen2.5-7b", "2026-12-01T06:44:22.000000Z"): {128: (2.3458, 0.1753), 512: (2.3861, 0.3310),
                                                   2048: (1.2269, 0.1101), 8192: (1.1121, 0.1341),
                                                   16384: (1.1196, 0.1176),
                                                   32000: (1.1592, 0.0975)},
    ("qwen2.5-7b", "2026-12-01T06:53:39.000000Z"): {128: (2.4103, 0.0563), 512: (1.4323, 0.3119),
                                                   2048: (1.2518, 0.0891), 8192: (1.1119, 0.1194),
                                                   16384: (1.1253, 0.1002),
                                                   32000: (1.1404, 0.0831)},
    ("qwen2.5-7b", "2026-12-01T11:24:59.000000Z"): {128: (2.1356, 0.1768), 512: (2.4137, 0.3082),
                                                   2048: (1.2088, 0.0813), 8192: (1.1493, 0.0998),
                                                   16384: (1.1296, 0.0955),
                                                   32000: (1.1697, 0.0787)},
    ("qwen2.5-7b", "2026-12-01T11:34:04.000000Z"): {128: (2.2915, 0.0342), 512: (1.5893, 0.2107),
                                                   2048: (1.2931, 0.2331), 8192: (1.1944, 0.2498),
                                                   16384: (1.2021, 0.2425),
                                                   32000: (1.2122, 0.2221)},
    ("qwen2.5-7b", "2026-12-02T00:05:58.000000Z"): {128: (2.1426, 0.0255), 512: (1.6415, 0.0906),
                                                   2048: (1.2400, 0.1067), 8192: (1.1493, 0.1121),
                                                   16384: (1.1437, 0.1105),
                                                   32000: (1.1780, 0.0931)},
    ("qwen2.5-7b", "2026-12-02T00:15:06.000000Z"): {128: (1.8849, 0.2003), 512: (2.1638, 0.2109),
                                                   2048: (1.2618, 0.0889), 8192: (1.1376, 0.1056),
                                                   16384: (1.1406, 0.0909),
                                                   32000: (1.1733, 0.0725)},
    ("qwen2.5-7b", "2026-12-02T02:33:51.000000Z"): {128: (2.6193, 0.1516), 512: (1.6074, 0.3422),
                                                   2048: (1.2215, 0.0909), 8192: (1.1519, 0.1140),
                                                   16384: (1.1509, 0.0948),
                                                   32000: (1.1551, 0.0764)},
    ("qwen2.5-7b", "2026-12-02T02:43:17.000000Z"): {128: (1.9649, 0.0472), 512: (1.4983, 0.0877),
                                                   2048: (1.2567, 0.1126), 8192: (1.1384, 0.1167),
                                                   16384: (1.1464, 0.1021),
                                                   32000: (1.1669, 0.0869)},
    ("llama-3.1-8b", "2026-11-30T02:02:39Z"): {128: (2.4483, 0.0265), 512: (1.7422, 0.0400)},
    ("llama-3.1-8b", "2026-12-01T04:47:39.340850Z"): {128: (3.6545, 0.0730), 512: (2.5690, 0.0295)},
    ("llama-3.1-8b", "2026-12-01T06:44:22.000000Z"): {128: (3.0343, 0.0953), 512: (2.9364, 0.0913),
                                                     2048: (1.2484, 0.1047), 16384: (1.1256, 0.1032),
                                                     32000: (1.1211, 0.0960)},
    ("llama-3.1-8b", "2026-12-01T11:24:59.000000Z"): {128: (1.8583, 0.1017), 512: (2.2138, 0.2644),
                                                     2048: (1.2368, 0.0913), 16384: (1.1244, 0.0822),
                                                     32000: (1.1319, 0.0804)},
    ("llama-3.1-8b", "2026-12-02T00:05:58.000000Z"): {128: (2.6988, 0.1207), 512: (1.7684, 0.1998),
                                                     2048: (1.2742, 0.1160), 16384: (1.1216, 0.1017),
                                                     32000: (1.1234, 0.0930)},
    ("llama-3.1-8b", "2026-12-02T02:33:51.000000Z"): {128: (3.3325, 0.0160), 512: (3.2157, 0.1436),
                                                     2048: (1.2904, 0.0850), 16384: (1.1579, 0.0821),
                                                     32000: (1.1426, 0.0761)},
    ("qwen2.5-7b", "2026-12-02T04:52:35.000000Z"): {128: (1.6677, 0.0402), 512: (1.3266, 0.1154),
                                                   2048: (1.1950, 0.0815), 8192: (1.1084, 0.0881),
                                                   16384: (1.1212, 0.0764), 32000: (1.1617, 0.0624)},
    ("qwen2.5-7b", "2026-12-02T04:59:44.000000Z"): {128: (1.5934, 0.0738), 512: (1.3986, 0.0878),
                                                   2048: (1.2290, 0.0864), 8192: (1.0864, 0.1060),
                                                   16384: (1.1008, 0.0918), 32000: (1.1196, 0.0784)},
    ("llama-3.1-8b", "2026-12-02T04:52:35.000000Z"): {128: (1.8087, 0.0273), 512: (1.4470, 0.1430),
                                                     2048: (1.2495, 0.0770), 16384: (1.1376, 0.0649),
                                                     32000: (1.1372, 0.0623)},
    ("qwen2.5-7b", "2026-12-02T07:14:23.000000Z"): {128: (2.3714, 0.0411), 512: (1.3821, 0.1130),
                                                   2048: (1.2051, 0.1019), 8192: (1.0953, 0.1372),
                                                   16384: (1.0985, 0.1180), 32000: (1.1264, 0.1029)},
    ("qwen2.5-7b", "2026-12-02T07:21:58.000000Z"): {128: (2.4976, 0.0475), 512: (2.3606, 0.1158),
                                                   2048: (1.2129, 0.0894), 8192: (1.1397, 0.1039),
                                                   16384: (1.1343, 0.0962), 32000: (1.1493, 0.0807)},
    ("llama-3.1-8b", "2026-12-02T07:14:23.000000Z"): {128: (2.3023, 0.0589), 512: (2.0062, 0.1840),
                                                     2048: (1.2629, 0.1160), 16384: (1.1505, 0.1096),
                                                     32000: (1.1354, 0.1028)},
    ("qwen2.5-7b", "2026-12-02T14:18:58.000000Z"): {128: (2.4841, 0.0254), 512: (2.4725, 0.0721),
                                                   2048: (1.2489, 0.0811), 8192: (1.1302, 0.0963),
                                                   16384: (1.1234, 0.0885), 32000: (1.1376, 0.0754)},
    ("qwen2.5-7b", "2026-12-02T14:26:26.000000Z"): {128: (2.5107, 0.0139), 512: (2.1477, 0.1485),
                                                   2048: (1.2562, 0.1473), 8192: (1.1410, 0.1468),
                                                   16384: (1.1433, 0.1392), 32000: (1.1795, 0.1227)},
    ("llama-3.1-8b", "2026-12-02T14:18:58.000000Z"): {128: (2.4094, 0.1161), 512: (2.0416, 0.1942),
                                                     2048: (1.2360, 0.0935), 16384: (1.1233, 0.0812),
                                                     32000: (1.1193, 0.0747)},
}
# Sessions whose eta comes from their bf16 GEMM timings at the step's shapes (from 2026-12-01 06:44 on: every session
# since, the ten of 2026-12-02 included). On the
# earlier ones eta was fitted on the 8,192-token prefill, which absorbed the non-GEMM share: their compute-bound
# prefills say nothing about this calibration's gap. Their 128-token prefill is memory-bound (eta plays no part).
GEMM_ETA_SESSIONS = {"2026-12-01T06:44:22.000000Z", "2026-12-01T06:53:39.000000Z", "2026-12-01T11:24:59.000000Z",
                     "2026-12-01T11:34:04.000000Z", "2026-12-02T00:05:58.000000Z", "2026-12-02T00:15:06.000000Z",
                     "2026-12-02T02:33:51.000000Z", "2026-12-02T02:43:17.000000Z", "2026-12-02T04:52:35.000000Z",
                     "2026-12-02T04:59:44.000000Z", "2026-12-02T07:14:23.000000Z", "2026-12-02T07:21:58.000000Z",
                     "2026-12-02T14:18:58.000000Z", "2026-12-02T14:26:26.000000Z"}
# The run each prefill test replays (the newest session of its model): its band comes from every other run.
CHECKED_PREFILL = {"qwen2.5-7b": "2026-12-02T14:26:26.000000Z", "llama-3.1-8b": "2026-12-02T14:18:58.000000Z"}
MEMORY_BOUND_PREFILL = 128


def prefill_band(model: str, length: int) -> tuple[float, float]:
    """The envelope of every other recorded run's ratio at `length` (either model), each widened by its own noise
    budget plus the checked run's: a band from different runs than the one it judges, never from its own ratio."""
    checked = CHECKED_PREFILL[model]
    _, own = PREFILL_RUNS[(model, checked)][length]
    others = [runs[length] for (m, stamp), runs in PREFILL_RUNS.items()
              if (m, stamp) != (model, checked) and length in runs
              and (length == MEMORY_BOUND_PREFILL or stamp in GEMM_ETA_SESSIONS)]
    return (round(min(r * (1 - b - own) for r, b in others), 4), round(max(r * (1 + b + own) for r, b in others), 4))


SHORT_PREFILL_REASON = (
    "A lone prompt of 128 or 512 tokens takes far longer from scheduling to first token than one step of that work "
    "(memory-bound at 128 tokens, compute-bound at 512), over {n_runs} runs of two models: measured/predicted "
    "{lo128:.2f}-{hi128:.2f} at 128 tokens, {lo512:.2f}-{hi512:.2f} at 512. Not a per-step cost (a decode step's "
    "overhead is ~{decode_overhead:.1f} ms). It is NOT the KV pool's size, as first supposed: on 2026-12-01 the pinned pool (~225k "
    "tokens) gave Qwen2.5-7B {pin128:.2f}x/{pin512:.2f}x at 128/512 and the utilization pool (~2M tokens) "
    "{util128:.2f}x/{util512:.2f}x {apart} minutes later, where the earlier sessions had put the pinned pool lower "
    "({early_pin128:.2f}x/{early_pin512:.2f}x against {early_util128}x/{early_util512}x). Mechanism not established; "
    "candidates: the first step after an idle engine (the request arrives alone), per-request engine work (input "
    "processing, block-table set-up). Band: the envelope of every other run at this length, each +- its own and the "
    "checked run's noise budget (512 tokens: the runs whose eta comes from GEMM timings only, since a "
    "prefill-fitted eta absorbs part of the gap).")
PREFILL_ABOVE_GEMMS_REASON = (
    "With eta taken from the session's bf16 GEMMs at the four trunk shapes ({eta_lo:.2f}-{eta_hi:.2f} of the 8192^3 "
    "ceiling), a "
    "lone prefill of 2,048-32,000 tokens runs {lo_long:.0%}-{hi_long:.0%} longer than predicted over {n_gemm} "
    "GEMM-timed runs (2026-12-01: Qwen2.5-7B {pinned} at 2,048/16,384/32,000 with the pinned pool, {util} {apart} "
    "minutes later with the utilization pool; Llama-3.1-8B {llama}). Two parts, from the numbers: the lone-prompt "
    "excess seen at 128-512 tokens (5-10 ms, which is why 2,048 is the largest ratio), and ~10-13% of the rest from "
    "work the GEMM timings do not contain: FlashAttention's causal kernel (its FLOPs are divided by the GEMMs' eta; "
    "3-33% of the FLOPs from 2,048 to 32,000 tokens), RMSNorm, rope, SiLU-mul and residual passes over the "
    "activations (~1.3 ms of memory traffic per 2,048 tokens). The 8,192-token prefill that eta used to be fitted "
    "on absorbed both; with GEMM-timed eta it sits at {ratios_8192} (Qwen2.5-7B, one session each), inside its noise "
    "budget in all but {outside_8192} of them, so at 8,192 tokens the finding is strict=False. Band: as for the "
    "short prefills, over the runs whose eta comes from GEMM timings.")
# eta from the bf16 GEMM timings at a model's four trunk shapes (calibration.gemm_efficiency_by_tokens), lowest and
# highest over every token count of every GEMM-timed run in PREFILL_RUNS (either model): recomputed by
# test_latency_findings_reasons.py::test_gemm_eta_span_is_the_recorded_one.
GEMM_ETA_SPAN = (0.7511, 0.9997)
# The sessions those reasons compare by name (their ratios are read from PREFILL_RUNS, never retyped): the pinned
# and the utilization pool nine minutes apart, and the earlier sessions' pinned and utilization pools.
_PINNED, _UTILIZATION = ("qwen2.5-7b", "2026-12-01T06:44:22.000000Z"), ("qwen2.5-7b", "2026-12-01T06:53:39.000000Z")
_EARLY_PINNED = ("qwen2.5-7b", "2026-12-01T04:47:39.125311Z")
_EARLY_UTILIZATION = (("qwen2.5-7b", "2026-11-30T00:37:45Z"), ("qwen2.5-7b", "2026-12-01T05:15:55.000000Z"))
_LLAMA_GEMM = ("llama-3.1-8b", "2026-12-01T06:44:22.000000Z")


def _decode_overhead_ms() -> float:
    """A decode step's overhead as the short-prefill reason quotes it: the middle of every recorded b=1 residual
    (B1_RESIDUAL_MS, both models)."""
    ends = [ms for span in B1_RESIDUAL_MS.values() for ms in span]
    return (min(ends) + max(ends)) / 2


def _minutes_apart(first: tuple[str, str], second: tuple[str, str]) -> int:
    """Whole minutes between two sessions' starts (their stamps)."""
    from datetime import datetime

    start, end = (datetime.fromisoformat(key[1].replace("Z", "+00:00")) for key in (first, second))
    return round((end - start).total_seconds() / 60)


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def short_prefill_reason() -> str:
    """SHORT_PREFILL_REASON with its ratios read from PREFILL_RUNS (test_prefill_runs_are_the_recorded_ones
    recomputes them from the recordings)."""
    at = {n: [runs[n][0] for runs in PREFILL_RUNS.values() if n in runs] for n in (128, 512)}
    return SHORT_PREFILL_REASON.format(
        decode_overhead=_decode_overhead_ms(), apart=_count(_minutes_apart(_PINNED, _UTILIZATION)),
        n_runs=len(PREFILL_RUNS), lo128=min(at[128]), hi128=max(at[128]), lo512=min(at[512]), hi512=max(at[512]),
        pin128=PREFILL_RUNS[_PINNED][128][0], pin512=PREFILL_RUNS[_PINNED][512][0],
        util128=PREFILL_RUNS[_UTILIZATION][128][0], util512=PREFILL_RUNS[_UTILIZATION][512][0],
        early_pin128=PREFILL_RUNS[_EARLY_PINNED][128][0], early_pin512=PREFILL_RUNS[_EARLY_PINNED][512][0],
        early_util128=_span([PREFILL_RUNS[k][128][0] for k in _EARLY_UTILIZATION]),
        early_util512=_span([PREFILL_RUNS[k][512][0] for k in _EARLY_UTILIZATION]))


def short_prefill_marks(model: str, name: str, length: int) -> tuple[pytest.MarkDecorator, ...]:
    """The lone short prompt's finding (128 and 512 tokens), on the reconciliation `name` in either pool regime (the
    regime no longer sets a band: see SHORT_PREFILL_REASON); none at other lengths."""
    if length > 512:
        return ()
    return tuple(pytest.mark.finding("h200-short-prefill-excess", hardware=MEASURED_ON, quantity=f"{name}{regime}",
                                     reason=short_prefill_reason(), expected=prefill_band(model, length))
                 for regime in ("", "_pinned_pool"))


def _prefill_above_gemms_reason() -> str:
    """The reason with the 8,192-token ratios read from PREFILL_RUNS (which test_prefill_runs_are_the_recorded_ones
    recomputes), not retyped."""
    runs = [PREFILL_RUNS[key][8192] for key in sorted(PREFILL_RUNS) if key[1] in GEMM_ETA_SESSIONS
            and 8192 in PREFILL_RUNS[key]]
    gemm = [runs_ for key, runs_ in PREFILL_RUNS.items() if key[1] in GEMM_ETA_SESSIONS]
    long = [r[n][0] for r in gemm for n in (2048, 16384, 32000) if n in r]

    def three(key: tuple[str, str]) -> str:
        return "/".join(f"{PREFILL_RUNS[key][n][0]:.2f}" for n in (2048, 16384, 32000))
    return PREFILL_ABOVE_GEMMS_REASON.format(apart=_count(_minutes_apart(_PINNED, _UTILIZATION)), eta_lo=GEMM_ETA_SPAN[0], eta_hi=GEMM_ETA_SPAN[1], ratios_8192=", ".join(f"{r:.2f}" for r, _ in runs),
                                             outside_8192=sum(r - 1 > b for r, b in runs),
                                             lo_long=min(long) - 1, hi_long=max(long) - 1, n_gemm=len(gemm),
                                             pinned=three(_PINNED), util=three(_UTILIZATION), llama=three(_LLAMA_GEMM))


def above_gemms_marks(model: str, name: str, length: int) -> tuple[pytest.MarkDecorator, ...]:
    """h200-prefill-above-its-gemms at 2,048 tokens and up. It applies only where the prediction's eta comes from the
    session's GEMM timings (test_latency_steps.py applies it then): an eta fitted on the 8,192 prefill absorbs the
    gap, and those sessions' long prefills agree."""
    if length <= 512:
        return ()
    # strict=False from 8,192 tokens up: 8,192 sat inside its noise budget in six GEMM-timed sessions and 0.02-0.05
    # above it in eight (2026-12-01 11:24, seven of 2026-12-02's ten); 16,384 and 32,000 sit at 1.10-1.21, either side
    # of the prefill goal from one session to the next
    return tuple(pytest.mark.finding("h200-prefill-above-its-gemms", hardware=MEASURED_ON, quantity=f"{name}{regime}",
                                     reason=_prefill_above_gemms_reason(), expected=prefill_band(model, length),
                                     strict=length < 8192)
                 for regime in ("", "_pinned_pool"))


# --- test_latency_load.py ---------------------------------------------------------------------
POISSON = ("0.25", "0.5", "0.8", "1", "1.3")  # Poisson rates as fractions of the C=64 request rate
# A pool oversubscribed ~1.6x (128 prompts against a pinned ~225k-token pool) queues differently from one
# oversubscribed 1.06x: its quantities carry the regime in their name (test_latency_load._regime).
HEAVY = "_heavily_oversubscribed"

# Bands carried from the Qwen2.5-7B load runs recorded before the first predicted with eta from its session's GEMM
# timings (2026-12-01 06:44, FIRST_WITH_GEMM_TIMINGS) to every run checked. Those runs' eta was fitted on the
# 8,192-token prefill, which absorbs the prefill's non-GEMM work (h200-prefill-above-its-gemms), so their ratios are
# not a GEMM-timed run's. Carried: each earlier run's measured/predicted, +- its own and the checked run's repeat
# scatter (2 standard errors), times the checked run's calibration shift: its prediction with the earlier recipe /
# with its own (the theory's arithmetic on the same workload, never its measurement), computed at test time.
# test_carried_bands_are_the_recorded_ones recomputes the earlier runs' numbers.
FIRST_WITH_GEMM_TIMINGS = "2026-12-01T06:44:22.000000Z"


@dataclass(frozen=True)
class Carried:
    """The earlier sessions' (ratio, repeat scatter) of one quantity, eta fitted on the 8,192 prefill. The run
    checked brings its own repeat scatter and calibration shift (its prediction with that recipe / with its own),
    both computed at test time: band() puts the earlier runs in the checked run's frame."""
    earlier: tuple[tuple[float, float], ...]  # (ratio, scatter) of each earlier run, oldest first

    def band(self, scatter: float, shift: float) -> tuple[float, float]:
        lo = min(r * (1 - e - scatter) for r, e in self.earlier) * shift
        hi = max(r * (1 + e + scatter) for r, e in self.earlier) * shift
        return (round(lo, 4), round(hi, 4))

    def describe(self) -> str:
        return (f" Band carried from the earlier sessions ({', '.join(f'{r:.3f}' for r, _ in self.earlier)}, eta fitted "
                "on the 8,192 prefill) x the shift the theory computes for the run checked when its eta comes from "
                "GEMM timings (1 without them), +- both runs' repeat scatter: set at test time.")


CARRIED: dict[str, Carried] = {
    "poisson.f1:ttft_p50": Carried(((1.8715, 0.1781), (1.9288, 0.1577))),
    "poisson.f1:engine_ttft_p50": Carried(((1.5437, 0.1247), (1.4358, 0.1514))),
    "poisson.f1:itl_median": Carried(((1.0943, 0.0338), (1.0913, 0.0303))),
    "poisson.f1.3:ttft_p50": Carried(((1.6968, 0.1242), (1.6017, 0.1665))),
    "poisson.f1.3:engine_ttft_p50": Carried(((1.388, 0.1013), (1.2638, 0.1801))),
    "overload:itl_mean": Carried(((1.0576, 0.0114), (1.0766, 0.0539))),
    "overload:output_throughput": Carried(((0.9456, 0.0114), (0.9334, 0.0539))),
    "overload:ttft_p50": Carried(((1.0460, 0.1435), (1.0153, 0.1399))),
}
@dataclass(frozen=True)
class StepCarried:
    """A band from one run of the same session as the run checked (its isolated decode step): that step's (ratio,
    budget) and the checked run's own budget, all recorded; test_closed_itl_bands_are_the_decode_steps recomputes
    them."""
    earlier: tuple[tuple[float, float], ...]
    newest_scatter: float

    def band(self) -> tuple[float, float]:
        return Carried(self.earlier).band(self.newest_scatter, 1.0)


# Carried quantities whose ratio straddles their goal (10% for ITL) from one calibration to the other: within it
# with the prefill-fitted eta (1.058-1.094), beyond it with the GEMMs' (x 1.016-1.032): such a finding may resolve in
# one session and not the next, so it passes as an XPASS when it does (strict=False) instead of failing.
STRADDLING_THE_GOAL = frozenset({"poisson.f1:itl_median", "overload:itl_mean", "overload:output_throughput",
                                 "overload:ttft_p50"})


TTFT_FINDING = pytest.mark.finding("h200-ttft-short-prefill-and-frontend", hardware=MEASURED_ON, quantity="ttft_p50",
    reason="Below the knee TTFT p50 is one 1,024-token prefill, measured well above its simulation (ttft_p50 row). "
           "Two parts: the engine's own prefill of 1,024 tokens (median scheduling-to-first-token: the "
           "engine_ttft_p50 row) runs above the model, the lone-short-prefill excess seen in test_prefill[128/512] "
           "and in closed.c1; and the frontend's ingress + egress (client minus engine TTFT: the difference of the "
           "two rows, growing with load), which the simulation omits.",
    expected=(1.3, 2.2))
# strict=False: at the lowest rates the engine's own TTFT lands either side of the 25% goal from one session (and
# calibration) to the next (1.13-1.14 on 2026-12-01 11:24 at 0.25x and 0.5x, above 1.25 in the sessions before).
ENGINE_TTFT_FINDING = pytest.mark.finding("h200-ttft-short-prefill-and-frontend", hardware=MEASURED_ON, quantity="engine_ttft_p50", reason=TTFT_FINDING.kwargs["reason"],
    expected=(1.2, 1.6), strict=False)


LLAMA_TTFT_REASON = (
    "Llama-3.1-8B (Qwen's calibration): TTFT p50 agrees at 0.25x and 0.5x of the C=64 rate and misses from 0.8x "
    "up (measured and simulated in the rows beside this text). Two parts, as for Qwen: the frontend's ingress + "
    "egress, which the simulation omits, grows with load (client minus engine TTFT: the ttft_p50 and "
    "engine_ttft_p50 rows); the engine's own queue + prefill medians stay near the simulation at the lower rates "
    "and run above it at 1.0x, where a new prompt shares its step with ~35-70 decodes whose per-sequence cost runs "
    f"~{marginal_cost_span(LLAMA)}x the roofline (h200-decode-per-sequence-cost). Llama's lone short prefill exceeds the model less than "
    "Qwen's (test_prefill[512] and test_prefill_efficiency_transfers_to_a_second_model[512]), so its TTFT misses "
    "start later.")
TTFT_MARKS = {
    **{(QWEN, f): (TTFT_FINDING, ENGINE_TTFT_FINDING) for f in POISSON},
    **{(QWEN, f): tuple(pytest.mark.finding("h200-ttft-short-prefill-and-frontend", hardware=MEASURED_ON, quantity=q,
                                            reason=TTFT_FINDING.kwargs["reason"] + CARRIED[f"poisson.f{f}:{q}"].describe())
                        for q in ("ttft_p50", "engine_ttft_p50")) for f in ("1", "1.3")},
    (LLAMA, "0.8"): (pytest.mark.finding("h200-ttft-short-prefill-and-frontend", hardware=MEASURED_ON, quantity="ttft_p50",
                                         reason=LLAMA_TTFT_REASON, expected=(1.3, 2.2)),),
    (LLAMA, "1"): (pytest.mark.finding("h200-ttft-short-prefill-and-frontend", hardware=MEASURED_ON, quantity="ttft_p50",
                                       reason=LLAMA_TTFT_REASON, expected=(1.3, 2.2)),
                   pytest.mark.finding("h200-ttft-short-prefill-and-frontend", hardware=MEASURED_ON, quantity="engine_ttft_p50",
                                       reason=LLAMA_TTFT_REASON, expected=(1.2, 1.6))),
}


# Two sessions of the same Poisson workload put the mean ITL on both sides of the 10% target: the
# excess is there at every rate from 0.5x up, its size moves by a few percent between sessions.
# Qwen2.5-7B's Poisson mean ITL, measured / simulated with its own session's setup, by rate (a fraction of the C=64
# rate) and run stamp, oldest first (test_latency_findings_reasons.py::test_poisson_itl_means_are_the_recorded_ones).
POISSON_ITL_MEAN: dict[str, dict[str, float]] = {
    "0.5": {"2026-11-30T00:37:45Z": 1.0940, "2026-12-01T04:47:40.227049Z": 1.1330,
            "2026-12-01T06:44:22.000000Z": 1.0880, "2026-12-01T11:24:59.000000Z": 1.0852,
            "2026-12-02T00:05:58.000000Z": 1.0730, "2026-12-02T02:33:51.000000Z": 1.1080,
            "2026-12-02T04:52:35.000000Z": 1.0975, "2026-12-02T07:14:23.000000Z": 1.1205,
            "2026-12-02T14:18:58.000000Z": 1.0964},
    "0.8": {"2026-11-30T00:37:45Z": 1.1825, "2026-12-01T11:24:59.000000Z": 1.1806,
            "2026-12-02T00:05:58.000000Z": 1.1308, "2026-12-02T02:33:51.000000Z": 1.1211,
            "2026-12-02T04:52:35.000000Z": 1.1233, "2026-12-02T07:14:23.000000Z": 1.3165,
            "2026-12-02T14:18:58.000000Z": 1.1368},
    "1": {"2026-11-30T00:37:45Z": 1.0897, "2026-12-01T04:47:40.320649Z": 1.0941,
          "2026-12-01T06:44:22.000000Z": 1.2160, "2026-12-01T11:24:59.000000Z": 1.1656,
          "2026-12-02T00:05:58.000000Z": 1.2049, "2026-12-02T02:33:51.000000Z": 1.1566,
          "2026-12-02T04:52:35.000000Z": 1.1504, "2026-12-02T07:14:23.000000Z": 1.1594,
          "2026-12-02T14:18:58.000000Z": 1.2084},
    "1.3": {"2026-11-30T00:37:45Z": 1.1303, "2026-12-01T04:47:40.416640Z": 1.0882,
            "2026-12-01T06:44:22.000000Z": 1.2116, "2026-12-01T11:24:59.000000Z": 1.2376,
            "2026-12-02T00:05:58.000000Z": 1.2056, "2026-12-02T02:33:51.000000Z": 1.2335,
            "2026-12-02T04:52:35.000000Z": 1.1928, "2026-12-02T07:14:23.000000Z": 1.2267,
            "2026-12-02T14:18:58.000000Z": 1.2956},
}
ITL_TARGET = 0.10  # the decode target (docs), not a measurement


def _sessions_reason() -> str:
    """SESSIONS with its sessions and ratios read from POISSON_ITL_MEAN."""
    def straddles(runs: dict[str, float]) -> bool:
        return min(runs.values()) < 1 + ITL_TARGET < max(runs.values())
    both = [f for f, runs in POISSON_ITL_MEAN.items() if straddles(runs)]
    one_side = [f for f, runs in POISSON_ITL_MEAN.items() if not straddles(runs)]
    ratios = [r for f in both for r in POISSON_ITL_MEAN[f].values()]
    stamps = {s for runs in POISSON_ITL_MEAN.values() for s in runs}
    days = sorted({s[:10] for s in stamps})
    # sessions per day: the most runs of one rate on that day (the early sessions stamp each rate's run apart)
    per_day = {d: max(len([s for s in runs if s[:10] == d]) for runs in POISSON_ITL_MEAN.values()) for d in days}
    return (" Qwen2.5-7B's mean ITL gap moves with the session and with the calibration the check uses (the report "
            "lists this run's ratio beside this text; the ledgers of results/h200/live-runs/ hold each live session's): "
            f"over {_and([f'{_count(n)} session{_plural(n)} on {d}' for d, n in per_day.items()])} it has "
            "landed on both sides of the "
            f"{ITL_TARGET:.0%} target at {_and([f + 'x' for f in both])} (measured/simulated "
            f"{min(ratios):.2f}-{max(ratios):.2f})"
            + "".join(f"; at {f}x, in {_count(len(POISSON_ITL_MEAN[f]))} runs, "
                      f"{'above' if min(POISSON_ITL_MEAN[f].values()) > 1 + ITL_TARGET else 'within'} it each time"
                      for f in one_side)
            + ", so this finding may resolve in one session and reappear in the next (strict=False).")


SESSIONS = _sessions_reason()
_Q64, _Q128 = DECODE_RATIO_OTHER_SESSION[(QWEN, 64)], DECODE_RATIO_OTHER_SESSION[(QWEN, 128)]
_L64, _L128 = DECODE_RATIO_OTHER_SESSION[(LLAMA, 64)], DECODE_RATIO_OTHER_SESSION[(LLAMA, 128)]
ITL_UNDER_LOAD = ("At the higher rates the simulated ITLs run short (the rows beside this text), the two decode findings "
                  "combined: the median is a decode step of 50-90 sequences, where each sequence costs "
                  f"~{marginal_cost_span(QWEN, LLAMA)}x its KV bytes (h200-decode-per-sequence-cost: b=64 {_Q64 - 1:+.1%}, b=128 {_Q128 - 1:+.1%} in the "
                  "2026-11-30 session), and the mean adds the steps that carry a 1,024-token prompt, which the engine "
                  "runs slower than modeled (h200-ttft-short-prefill-and-frontend).")


# Qwen2.5-7B's Poisson median ITL at 0.8x the C=64 rate, judged against the same session's runs at the rates either
# side (ITL_MEDIAN_NEIGHBOURS): per session with a 0.8x run, oldest first, the median ITL's (measured / simulated,
# repeat scatter) at 0.5x, 0.8x and 1x, then the 0.8x run's engine steps, measured and simulated (25,500 tokens each).
# test_latency_findings_reasons.py::test_poisson_itl_medians_between_are_the_recorded_ones recomputes every entry.
ITL_MEDIAN_NEIGHBOURS: dict[tuple[str, str], tuple[str, str]] = {(QWEN, "0.8"): ("0.5", "1")}
POISSON_ITL_MEDIAN_BETWEEN: dict[str, tuple[tuple[float, float], tuple[float, float], tuple[float, float], int, int]] = {
    "2026-11-30T00:37:45Z": ((1.0746, 0.0014), (1.0966, 0.0519), (1.0943, 0.0338), 860, 993),
    "2026-12-01T11:24:59.000000Z": ((1.0700, 0.0014), (1.0912, 0.0261), (1.1074, 0.0318), 910, 1032),
    "2026-12-02T00:05:58.000000Z": ((1.0679, 0.0013), (1.0860, 0.0364), (1.0955, 0.0428), 943, 1035),
    "2026-12-02T02:33:51.000000Z": ((1.0781, 0.0021), (1.0969, 0.0274), (1.1102, 0.0303), 956, 1041),
    "2026-12-02T04:52:35.000000Z": ((1.0848, 0.0019), (1.1077, 0.0214), (1.1074, 0.0222), 944, 1031),
    "2026-12-02T07:14:23.000000Z": ((1.0716, 0.0014), (1.1035, 0.0526), (1.0976, 0.0271), 830, 1036),
    "2026-12-02T14:18:58.000000Z": ((1.0803, 0.0019), (1.1039, 0.0331), (1.1039, 0.0378), 953, 1049),
}


def neighbour_band(ends: list[tuple[float, float]], own_scatter: float) -> tuple[float, float]:
    """Between the neighbouring loads' ratios, each +- its repeat scatter and the checked run's."""
    return (round(min(r * (1 - e - own_scatter) for r, e in ends), 4),
            round(max(r * (1 + e + own_scatter) for r, e in ends), 4))


def _itl_median_between_reason() -> str:
    rows = list(POISSON_ITL_MEDIAN_BETWEEN.values())
    mid = [r for _, (r, _), _, _, _ in rows]
    spread = [e for _, (_, e), _, _, _ in rows]
    steps, sim = [m for *_, m, _ in rows], [s for *_, s in rows]
    return (
        "At 0.8x the C=64 rate the median ITL is a decode step of the ~25 sequences running, yet it misses by more than "
        "the same session's closed loop at C=32 (the rows beside this text): under a fixed arrival rate slower steps "
        f"compound. The engine ran the run's 25,500 tokens in {min(steps)}-{max(steps)} steps where the simulation takes "
        f"{min(sim)}-{max(sim)}, so more requests overlap and each step carries more sequences, each costing more than "
        "its KV bytes (h200-decode-per-sequence-cost), while the steps that carry a 1,024-token prompt run slower than "
        f"modeled (h200-ttft-short-prefill-and-frontend). Over the {_count(len(rows))} sessions with a 0.8x run, "
        f"measured/simulated is {min(mid):.3f}-{max(mid):.3f}, {_count(sum(r > 1 + ITL_TARGET for r in mid))} above the "
        f"{ITL_TARGET:.0%} target, each within its repeat scatter ({min(spread):.1%}-{max(spread):.1%}) of it, so this "
        "may resolve in the next session (strict=False). Band, set at test time: between the same session's 0.5x and "
        "1x median-ITL ratios, each +- its repeat scatter and this run's (the miss grows with load, so a run between "
        "two loads sits between their misses; it did in every session above).")


ITL_MEDIAN_BETWEEN_REASON = _itl_median_between_reason()


ITL_MARKS = {
    (QWEN, "0.5"): (pytest.mark.finding("h200-itl-under-load", hardware=MEASURED_ON, quantity="itl_mean",
                                        reason=ITL_UNDER_LOAD + SESSIONS, expected=(1.05, 1.25), strict=False),),
    (QWEN, "0.8"): (pytest.mark.finding("h200-itl-under-load", hardware=MEASURED_ON, quantity="itl_mean",
                                        reason=ITL_UNDER_LOAD + SESSIONS, expected=(1.05, 1.25), strict=False),
                    pytest.mark.finding("h200-itl-under-load", hardware=MEASURED_ON, quantity="itl_median",
                                        reason=ITL_MEDIAN_BETWEEN_REASON, strict=False)),
    (QWEN, "1"): (pytest.mark.finding("h200-itl-under-load", hardware=MEASURED_ON, quantity="itl_mean",
                                      reason=ITL_UNDER_LOAD + SESSIONS, expected=(1.05, 1.25), strict=False),
                  pytest.mark.finding("h200-itl-under-load", hardware=MEASURED_ON, quantity="itl_median",
                                      reason=ITL_UNDER_LOAD + CARRIED["poisson.f1:itl_median"].describe(),
                                      strict="poisson.f1:itl_median" not in STRADDLING_THE_GOAL)),
    (QWEN, "1.3"): (pytest.mark.finding("h200-itl-under-load", hardware=MEASURED_ON, reason=ITL_UNDER_LOAD + SESSIONS,
                                        expected=(1.05, 1.25), strict=False),),
    (LLAMA, "1.3"): (pytest.mark.finding("h200-itl-under-load", hardware=MEASURED_ON, reason=(
        "Llama-3.1-8B at 1.3x (at its knee; median and mean ITL measured and simulated in the rows beside this "
        f"text): decode steps of 50-90 sequences at ~{marginal_cost_span(LLAMA)}x the roofline's per-sequence cost "
        f"(h200-decode-per-sequence-cost: Llama b=64 {_L64 - 1:+.1%}, b=128 {_L128 - 1:+.1%} in the 2026-11-30 "
        "session), the same mechanism as Qwen's."),
        expected=(1.10, 1.25)),),
}


MIXED_PREFILL = "h200-overload-prefill-in-kv-bound-steps"
# The frontend's ingress + egress per request below the knee (mean client TTFT - mean engine queue - mean engine
# prefill), ms, lowest and highest over every recorded Poisson run below the knee of both models
# (test_latency_findings_reasons.py::test_frontend_below_the_knee_is_the_recorded_one recomputes them).
FRONTEND_MS_BELOW_KNEE = (5.1, 18.4)
MIXED_REASON = ("Under overload a prompt's two chunks (8,192 + 7,921 tokens) share steps with ~125 decodes that each "
                "read ~16,600 tokens of KV (~120 GB, 27 ms a step at 4.47 TB/s). The step model takes max(memory, "
                "compute) and hides that traffic under the chunks' 194-228 ms of compute; the engine's prefill part of "
                "TTFT runs longer than simulated (measured and simulated in the prefill_part_of_ttft row), so the "
                "two overlap only partly (or the steps between chunks are longer). Queueing still dominates TTFT "
                "either way (the queueing_share_of_ttft row).")


# Qwen2.5-7B's overload runs in the heavily oversubscribed regime, oldest first (each from a live session):
# LLAMA_OVERLOAD_REASON says they land inside the bands Llama's run set, and every number it quotes is recomputed by
# test_latency_findings_reasons.py::test_overload_reasons_quote_the_recorded_runs.
QWEN_HEAVY_OVERLOAD = ("2026-12-01T04:47:40.726144Z", "2026-12-01T06:44:22.000000Z", "2026-12-01T11:24:59.000000Z",
                       "2026-12-02T00:05:58.000000Z", "2026-12-02T02:33:51.000000Z", "2026-12-02T04:52:35.000000Z",
                       "2026-12-02T07:14:23.000000Z", "2026-12-02T14:18:58.000000Z")
LLAMA_OVERLOAD_REASON = (
    "Heavily oversubscribed pool. Llama-3.1-8B (2026-11-30; 128 x 1,755 + 1,024 tokens on a 224,704-token pool, "
    "1.58x, 46 preemptions as simulated): TTFT itself "
    "agrees (mean 3.03 s vs 2.96 s, p50 +1.5%), but the engine splits it 2.58 s queue + 0.42 s prefill where the "
    "simulation has 2.73 + 0.23: requests are first scheduled ~0.15 s earlier and then spend ~0.19 s longer "
    "between first scheduling and first token (which itself comes ~0.07 s later on average), a queueing share of "
    "85% vs 92%. Candidates, not separated: steps mixing a prompt with ~125 KV-heavy decodes (Llama reads 128 KiB "
    "of KV per token, 2.3x Qwen) take longer than max(memory, compute) (Qwen's prefill part is 1.43x simulated for "
    "the same reason), and requests preempted after their first scheduling but before their first token count the "
    "wait as prefill in vLLM's stats. Qwen2.5-7B in the same regime "
    f"({_days(QWEN_HEAVY_OVERLOAD)}, {_count(len(QWEN_HEAVY_OVERLOAD))} live runs: 128 x 1,755 + 1,024 on a "
    "224,688-token pool, 1.58x) lands inside the bands this run set: the regime, not the model, sets the split.")
OVERLOAD_MARKS = {
    QWEN: (pytest.mark.finding(MIXED_PREFILL, hardware=MEASURED_ON, quantity="prefill_part_of_ttft", reason=MIXED_REASON,
                               expected=(1.3, 1.6)),
           pytest.mark.finding(MIXED_PREFILL, hardware=MEASURED_ON, quantity="queueing_share_of_ttft", expected=(0.97, 1.0), reason=(
               "The measured queueing share falls below the simulated one by more than the fixed 1 pp budget (both "
               "in the row beside this text): the engine's prefill part of TTFT is longer than simulated ("
               + MIXED_REASON.split(";")[0] + ") and the frontend's ingress + egress, which the simulation omits, "
               f"grows under overload from its {FRONTEND_MS_BELOW_KNEE[0]:.0f}-{FRONTEND_MS_BELOW_KNEE[1]:.0f} ms below "
               "the knee."))),
}
# Overload ITL: the same decode steps of ~70-125 sequences as under Poisson load, in either pool regime.
OVERLOAD_ITL_MARKS = {
    QWEN: (pytest.mark.finding("h200-itl-under-load", hardware=MEASURED_ON, quantity="itl_mean",
                               reason=ITL_UNDER_LOAD + CARRIED["overload:itl_mean"].describe(),
                               strict="overload:itl_mean" not in STRADDLING_THE_GOAL),
           pytest.mark.finding("h200-prompt-steps-slower-than-modeled", hardware=MEASURED_ON, quantity="output_throughput",
                               reason=("Under overload (128 prompts of 16,113 + 1,024 tokens) the run delivers less than "
                                       "simulated, for the reason its closed loop at C=64 does: " + PROMPT_STEPS_SLOWER
                                       + CARRIED["overload:output_throughput"].describe()),
                               strict="overload:output_throughput" not in STRADDLING_THE_GOAL),
           pytest.mark.finding(MIXED_PREFILL, hardware=MEASURED_ON, quantity="ttft_p50",
                               reason=MIXED_REASON + CARRIED["overload:ttft_p50"].describe(),
                               strict="overload:ttft_p50" not in STRADDLING_THE_GOAL),),
}
# A pool oversubscribed ~1.6x (128 prompts against a pinned ~225k-token pool) queues differently from one
# oversubscribed 1.06x (the whole 2M-token pool): its quantities carry the regime in their name, and its
# bands come from the first run of that regime (Llama-3.1-8B, 2026-11-30), so the second model's run
# (Qwen2.5-7B, live, 2026-12-01) is checked against a band it did not set.
HEAVY = "_heavily_oversubscribed"
HEAVY_MARKS = (pytest.mark.finding(MIXED_PREFILL, hardware=MEASURED_ON, quantity="queueing_share_of_ttft" + HEAVY,
                                   expected=(0.88, 0.96), reason=LLAMA_OVERLOAD_REASON),
               pytest.mark.finding(MIXED_PREFILL, hardware=MEASURED_ON, quantity="prefill_part_of_ttft" + HEAVY,
                                   expected=(1.6, 2.1), reason=LLAMA_OVERLOAD_REASON))


# Closed loop at C sequences: the median ITL is a decode step of batch C. Where the isolated decode step at batch C,
# recorded in the same session as a run of its own, misses beyond its noise budget, the closed run's median carries
# that miss: band = that step's measured/predicted +- its budget and the closed run's own (never the closed run's
# ratio). (ratio, budget) of the decode step, the closed run's budget; test_closed_itl_bands_are_the_decode_steps
# recomputes them, and checks that a case is listed exactly when its decode step misses beyond its budget.
CLOSED_ITL_FROM_DECODE: dict[tuple[str, int], StepCarried] = {
    (QWEN, 8): StepCarried(((1.0190, 0.0127),), 0.0096),
    (QWEN, 32): StepCarried(((1.0407, 0.0143),), 0.0065),
    (QWEN, 64): StepCarried(((1.0473, 0.0090),), 0.0066),
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
        "h200-transferred-overhead-above-llamas" if inverse > 1 else "h200-decode-per-sequence-cost",
        hardware=MEASURED_ON, quantity="output_throughput",
        reason=(f"Closed loop at C = {c}: a request is decode steps of batch {c}, and the same session's isolated "
                f"decode step at batch {c} runs {1 / inverse:.4f}x its prediction (budget +-{budget:.4f}), so the "
                f"throughput runs at its inverse. " + (LLAMA_OVERHEAD_BELOW_QWEN if inverse > 1 else PER_SEQUENCE_COST)
                + " Band: the inverse of that step's ratio +- its budget and this run's."),
        expected=carried.band()),)


# Llama-3.1-8B's closed-loop medians (its 2026-11-30 session) are still held to the decode target: under their noise
# budget they run below both their prediction and the band of that session's decode step at batch C, a gap with no
# mechanism yet (test_closed_itl_left_on_the_goal_still_diverge fails once that stops, to move them onto the budget).
CLOSED_ITL_ON_GOAL = (LLAMA,)


def closed_itl_marks(model: str, c: int) -> tuple[Any, ...]:
    carried = CLOSED_ITL_FROM_DECODE.get((model, c))
    if carried is None:
        return ()
    ratio, budget = carried.earlier[0]
    return (pytest.mark.finding(
        "h200-decode-per-sequence-cost", hardware=MEASURED_ON, quantity="itl_median",
        reason=(f"Closed loop at C = {c}: the median ITL is a decode step of batch {c}, and the same session's isolated "
                f"decode step at batch {c} runs {ratio:.4f}x its prediction (budget +-{budget:.4f}): each sequence "
                "costs more than its KV bytes at the read ceiling. Band: that step's ratio +- its budget and this "
                "run's."),
        expected=carried.band()),)


# --- the seed's RTX 4090 (test_latency_seed_decode.py, test_latency_seed_load.py) ----------------
ATTAINMENT = pytest.mark.finding(
    "seed-decode-floor-attainment",
    reason="At the datasheet 1,008 GB/s with no overhead term the decode floor is a lower bound: vLLM reaches "
           "81-89% of it (the seed's 'roofline attainment', claim 4). The gap is a fixed ~1.8 ms per step "
           "(kernel gaps, sampling, norms: what the calibrated overhead term carries) plus a per-sequence cost "
           "above the KV bytes (see test_marginal_cost_per_request).",
    expected=(1.10, 1.26))

HIGH_C = pytest.mark.finding(
    "seed-decode-per-sequence-cost",
    reason="At C >= 32 the calibrated step model is 10-12% fast: each extra sequence costs 0.106 ms per step "
           "where its KV bytes at 1,008 GB/s cost 0.066 ms (1.6x, test_marginal_cost_per_request). Candidates: "
           "paged-attention decode reading 16-token KV blocks below streaming bandwidth, and GEMMs with M = C "
           "rows losing efficiency as C grows (the roofline max() assumes a perfect GEMV-to-GEMM transition).",
    expected=(1.09, 1.16))

HIGH_C_MEDIAN = pytest.mark.finding("seed-decode-per-sequence-cost", reason=HIGH_C.kwargs["reason"],
                                    quantity="itl_median", expected=HIGH_C.kwargs["expected"])

PAIRED_PROMPTS = pytest.mark.finding(
    "seed-c4-p99-below-prefill-step",
    reason="At C=4 the simulated closed loop spreads the 3 other prompts of each request's lifetime over 3 "
           "separate steps: 3 of 255 ITLs (1.2%) carry a prefill, just above the 1% a p99 needs, so it predicts a "
           "prefill step (~100 ms). Measured p99 is a decode step (17.6 ms; 17.4 and 21.4 ms in round 1): fewer "
           "than 1% of ITLs straddled a prompt, i.e. prompts ran in pairs, as the measured TTFT median of 288 ms "
           "(a 2,048-token step, not a lone 1,024-token one) also says. The simulation does not model the "
           "client/HTTP delay that groups the replacements.",
    expected=(0.1, 0.3))

SEED_MARGINAL_COST = pytest.mark.finding(
    "seed-decode-per-sequence-cost",
    reason="Each extra concurrent request adds 0.106 ms to the decode step, 1.6x its KV reads at the datasheet "
           "bandwidth (0.066 ms), as the seed found (claim 10). The H200 shows the same excess "
           f"({marginal_cost_span(QWEN, LLAMA)}x, test_latency_steps.py::test_marginal_cost_per_sequence). Mechanism not isolated (no per-kernel timing was recorded): decode "
           "attention over paged 16-token blocks and the batch's GEMM efficiency are the candidates.",
    expected=(1.4, 1.8))

SEED_TTFT_GROUPING = pytest.mark.finding(
    "seed-closed-loop-ttft-grouping",
    reason="The engine part of the mean TTFT at C=64 (queue 380 + prefill 479 ms) is 26% above the "
           "simulation: the simulated closed loop admits each replacement prompt alone as soon as a slot frees, "
           "while in the seed's run replacements arrived through HTTP and tokenization (141 ms frontend residual) "
           "and were prefilled in groups behind each other (the same grouping as the C=4 p99 finding).",
    expected=(1.1, 1.45))

SEED_LITTLES_LAW = pytest.mark.finding(
    "seed-littles-law-waiting-includes-preempted",
    reason="Little's law is an identity for a run that starts and ends empty, yet L / lambda = 140 s exceeds the "
           "histogram's mean queue time (135.0 s) by 3.7%: the 1 Hz `num_requests_waiting` gauge also counts the "
           "38 preempted requests waiting to be recomputed, while the queue-time histogram records only each "
           "request's first wait. 3.7% of 128 x 135 s is ~17 s per preemption, the order of a re-wait here.",
    expected=(0.95, 0.99))


# --- closed loop at C = 1: the first-token time the simulation lacks (test_closed_loop_throughput) -----------------
# At C = 1 a request is one 1,024-token prefill, 255 decode steps of batch 1 and the frontend's ingress + egress; the
# simulation prices the prefill with the step model and has no frontend. The band is set at test time from the same
# session's other runs (test_latency_load.first_token_times): the lone prefills at 512 and 2,048 tokens, their
# measured/modeled ratio interpolated log-linearly in length to the request's, and decode.b1's ingress + egress means.
# Qwen2.5-7B's closed.c1 runs by stamp, oldest first: (measured / simulated, measured / simulated with those
# per-request times, the check's budget, the first-token time's own spread over the request: the prefill runs' repeat
# scatter); test_latency_load.py::test_c1_first_token_table_is_the_recorded_one recomputes them.
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
    return (pytest.mark.finding("h200-ttft-short-prefill-and-frontend", hardware=MEASURED_ON,
                                quantity="output_throughput", reason=_c1_first_token_reason(), strict=False),)


# --- an open-loop run whose prompt steps ran slower than its session's other runs (measure/prompt_pace) ---------
SLOW_PROMPT_FINDING_ID = "h200-load-run-slow-prompt-steps"
# The Qwen2.5-7B Poisson runs the check flags, by (session stamp, rate): TTFT p50 measured / simulated and measured /
# simulated at the run's own pace (eta divided by its compute slowdown, latency_setups.slowed_prompts), then the mean
# ITL measured, simulated and simulated at that pace, ms; test_latency_prompt_pace.py recomputes them (and the paces
# and spans the reason quotes).
SLOW_PROMPT_RUNS: dict[tuple[str, str], tuple[float, float, float, float, float]] = {
    ("2026-12-02T07:14:23.000000Z", "0.8"): (2.5886, 1.7473, 8.8877, 6.7511, 8.7396),
    ("2026-12-02T14:18:58.000000Z", "1.3"): (2.2752, 1.1312, 10.6670, 8.2330, 10.4593),
}
(_FIRST_SLOW, _FIRST_RUN), (_HELD_SLOW, _HELD_RUN) = sorted(SLOW_PROMPT_RUNS.items())
_ITL_LO, _ITL_HI = ITL_MARKS[(QWEN, _HELD_SLOW[1])][0].kwargs["expected"]  # the clean runs' mean-ITL band at that rate
SLOW_PROMPT_REASON = (
    "This Poisson run's engine ran its prompt-carrying steps slower than the same session's runs at the other rates "
    "(the prompt-step pace check, measure/prompt_pace.py: the median of the two engine-step intervals around each step "
    "that carries one prompt between decode-only steps, against the median of the session's other runs; flagged above "
    "{threshold}x), while its decode-only steps kept their usual pace. First seen on 2026-12-02 07:14 (Qwen2.5-7B, "
    "0.8x): from 0.8 s into the run to its end every lone 1,024-token prompt step took ~9 ms longer, so more requests "
    f"overlapped and TTFT ({_FIRST_RUN[0]:.2f}x simulated) and mean ITL ({_FIRST_RUN[2] / _FIRST_RUN[3]:.2f}x) left "
    "their findings' bands, the median ITL did not. "
    "Only compute-bound work slowed, which fits an SM-clock dip or a host-side slowdown of the engine core's "
    "piecewise-graph steps (decode steps replay one full CUDA graph); neither was recorded during that run (load runs "
    "carry NVML samples from the 14:18 session on), so the cause is unknown. The simulation re-run with eta divided by the run's measured compute "
    "slowdown (its pace less two decode-only steps, over the session's) puts the TTFT inside the clean runs' band "
    f"({_FIRST_RUN[1]:.2f}x) and over-explains the mean ITL ({_FIRST_RUN[2] / _FIRST_RUN[4]:.2f}x, under the clean "
    f"band's {_ITL_LO:.2f}): the run's first 0.8 s and its multi-prompt steps were not slowed as much as its lone-prompt "
    "median. Band: the clean runs' band "
    "for this quantity, stretched to cover it in the frame of that slowed simulation too (the run's true slowdown lies "
    "between none, its first 0.8 s, and its median pace); strict=False: a clean rerun decides. The threshold was set "
    "after this miss, on the six sessions with a 0.8x Poisson run (clean runs 0.82-1.18x, this run 1.32x); later "
    f"sessions are its held-out test. The first held-out result: the {_HELD_SLOW[0][11:16]} full session's "
    f"{_HELD_SLOW[1]}x run was flagged (1.23x, on 7 lone-prompt steps; the same session's other runs 0.94-1.02x), "
    f"its mean ITL {_HELD_RUN[2] / _HELD_RUN[3]:.2f}x simulated, above the clean band's {_ITL_HI:.2f}; the slowed "
    f"simulation puts that mean ITL at {_HELD_RUN[4]:.2f} ms against {_HELD_RUN[2]:.2f} ms measured "
    f"({_HELD_RUN[2] / _HELD_RUN[4]:.2f}x, under the band's {_ITL_LO:.2f} again). But 1.3x runs have few lone prompts "
    "(7-11) and sit highest among the clean runs (1.03-1.18 over the six earlier sessions with a 0.8x run, the highest "
    "clean run among them a 1.3x one), so the threshold's margin at 1.3x is thin: this flag may be the top of the 1.3x runs' scatter "
    "as much as a slow run. The clock does not explain it: NVML sampled that run's lone-prompt steps at 1,560-1,860 MHz "
    "(median 1,770; the session's other runs' medians 1,830-1,950 MHz, all under the software power cap, "
    "tests_latency/test_latency_conditions.py), 3-9% lower, where its prompts' compute ran 1.41x slower.")


def slow_prompt_mark(quantity: str, base: tuple[float, float], shift: float, this_run: str) -> pytest.MarkDecorator:
    """SLOW_PROMPT_FINDING_ID on `quantity` of a run the prompt-pace check flags: `base` (the clean runs' finding band
    of that quantity) in the frames of both simulations, `shift` = simulated at the run's pace / simulated at the
    session's (a band in the slowed simulation's frame is that band x shift in the checked prediction's)."""
    from pytest_anatomy.measure.prompt_pace import SLOW_PROMPT_STEPS

    lo, hi = base
    expected = (round(min(lo, lo * shift), 4), round(max(hi, hi * shift), 4))
    reason = (SLOW_PROMPT_REASON.format(threshold=SLOW_PROMPT_STEPS) + f" This run: {this_run}; simulated "
              f"{quantity} at its pace is {shift:.3f}x the one at the session's.")
    return pytest.mark.finding(SLOW_PROMPT_FINDING_ID, hardware=MEASURED_ON, quantity=quantity, reason=reason,
                               expected=expected, strict=False)
