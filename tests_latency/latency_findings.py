"""The latency suite's findings, as data: which card they were measured on, their explanations, and
the bands that are derived from a different run than the one checked.

A finding explains a gap in one card's measurements (the numbers in its reason are that card's);
its mark carries `hardware=MEASURED_ON`, so on any other target the same reconciliation is judged
on its own. Another card's findings get their own constant here.

Decode-step bands come from the other H200 session (OTHER_SESSION: the 2026-11-30 runs) while the
suite replays the newest one (2026-12-01): each band is that session's measured/predicted ratio,
computed by the same setup code, +- OTHER_SESSION_NOISE. test_latency_steps.py::
test_decode_bands_are_the_other_sessions_ratios recomputes every ratio from the recordings, so none
is retyped by hand.
"""

from __future__ import annotations

import pytest

MEASURED_ON = "h200"

# The session the decode bands were measured in, per model (its b=1 recording's stamp).
OTHER_SESSION = {"qwen2.5-7b": "2026-11-30T00:37:45Z", "llama-3.1-8b": "2026-11-30T02:02:39Z"}
# Two runs' noise budgets (each <= 1.25% for a decode step: repeat scatter, ceiling and calibration spread).
OTHER_SESSION_NOISE = 0.025

# measured / predicted decode step in OTHER_SESSION, by (model, batch): Qwen with its own calibration,
# Llama with the Qwen calibration known when it ran (tests_latency/conftest.py).
DECODE_RATIO_OTHER_SESSION: dict[tuple[str, int], float] = {
    ("qwen2.5-7b", 4): 1.0100, ("qwen2.5-7b", 8): 1.0166, ("qwen2.5-7b", 16): 1.0347, ("qwen2.5-7b", 32): 1.0444,
    ("qwen2.5-7b", 64): 1.0588, ("qwen2.5-7b", 128): 1.1282,
    ("llama-3.1-8b", 1): 0.9856, ("llama-3.1-8b", 2): 0.9928, ("llama-3.1-8b", 8): 1.0143,
    ("llama-3.1-8b", 16): 1.0224, ("llama-3.1-8b", 32): 1.0538, ("llama-3.1-8b", 64): 1.0854,
    ("llama-3.1-8b", 128): 1.1565,
}

PER_SEQUENCE_COST = (
    "Each extra sequence costs more than its KV bytes at the read ceiling: the decode step's OLS slope over "
    "b = 1..64 is ~1.3-1.4x the KV read per sequence for both models (test_marginal_cost_per_sequence: "
    "1,088 tokens x 56 KiB for Qwen2.5-7B, x 128 KiB for Llama-3.1-8B), so the gap grows with the batch, to "
    f"{DECODE_RATIO_OTHER_SESSION[('qwen2.5-7b', 128)] - 1:+.1%} (Qwen) and "
    f"{DECODE_RATIO_OTHER_SESSION[('llama-3.1-8b', 128)] - 1:+.1%} (Llama) at b=128 in the 2026-11-30 session. "
    "Not yet isolated: paged decode attention over 16-token blocks "
    "reading below the streaming ceiling, and per-sequence sampling and bookkeeping. The seed's 4090 shows 1.6x.")
LLAMA_OVERHEAD_BELOW_QWEN = (
    "Llama-3.1-8B's b=1 step leaves 1.42-1.47 ms above its roofline where Qwen2.5-7B's leaves 1.49-1.54 ms in "
    "the same session and engine: the overhead transferred from Qwen over-predicts Llama's small-batch steps "
    "by ~1%, although Llama has 32 layers to Qwen's 28. Not a per-layer cost (that would go the other way); "
    "candidates: GEMV streaming efficiency at Llama's shapes (hidden 4,096, no qkv bias) vs Qwen's (3,584, "
    "with bias). The tiny-hidden overhead models separate the engine's share from the model's.")
# b at which a session's ratio may straddle its own noise budget: the finding may resolve in one session
BORDERLINE = {("qwen2.5-7b", 4), ("qwen2.5-7b", 8), ("llama-3.1-8b", 1), ("llama-3.1-8b", 2), ("llama-3.1-8b", 8)}


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


# measured / steady-state closed form at C=64 (test_saturation_throughput), keyed by the model whose band it
# sets: each model's band is the OTHER model's ratio (newest recordings), +- OTHER_SESSION_NOISE.
STEADY_STATE_RATIO_OTHER_MODEL: dict[str, float] = {"qwen2.5-7b": 0.8928, "llama-3.1-8b": 0.9125}
PROMPT_STEPS_SLOWER = (
    "A closed loop at C=64 delivers less than its steady state minus the named terms (ramp-up and drain, the "
    "decode step's per-sequence miss at b=64, noise): the steps that carry a new 1,024-token prompt beside ~63 "
    "decodes run in ~35-60 ms where the step model says ~25 ms (h200-ttft-short-prefill-and-frontend), and a "
    "request spends ~4 such steps per 256 tokens. Measured on both models alike: the band of each is the other's "
    "ratio.")


def steady_state_marks(model: str) -> tuple[pytest.MarkDecorator, ...]:
    return (pytest.mark.finding("h200-prompt-steps-slower-than-modeled", reason=PROMPT_STEPS_SLOWER,
                                quantity="output_throughput_steady_state", hardware=MEASURED_ON,
                                expected=other_session_band(STEADY_STATE_RATIO_OTHER_MODEL[model])),)
