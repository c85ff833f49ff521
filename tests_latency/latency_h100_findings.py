"""Latency findings on the first H100 (NVML UUID GPU-fabd6938, 2026-12-02), as data.

The H200's latency findings were held against the H100's sessions (latency_findings_common.CHECKED_ON), as
pre-registered in docs/RECORDING.md ("The first H100 visit"). A band carried to another card is widened by the
check's own measured-noise budget (pytest_anatomy.findings.carried_to_another_card). Three H200 bands are priced
in the H200's own milliseconds or bandwidth, so they cannot carry over unchanged. For each, the mechanism that the
H200 finding names is re-priced on the H100's predictions and ceilings. Nothing below is fitted on the H100's
measured ratios.
- The bare decode roofline misses the step overhead. That overhead is host- and launch-side, and the H200's
  sessions measured it at b=1 (cli_calibration.b1_residuals). Added to this session's roofline, it gives the band.
- Llama-3.1-8B at b=128 carries the per-sequence excess: the H200's band for its cost per sequence over its KV
  read (latency_decode_findings.marginal_cost_band, h200-decode-per-sequence-cost). On the H100, 128 sequences' KV read is a predicted 5.883 ms of a
  predicted 12.24 ms step (45.96 us per sequence at the read ceiling of the newest H100 session, 2026-12-06 00:00), so the
  excess is that excess x 5.883 / 12.24 of the step (the first session, 2026-12-02, priced 5.885 ms at 45.98 us; the
  2026-12-05 21:36 one 5.888 of 12.26 ms at 46.00 us).
- Under overload, the prefill part of TTFT is longer than simulated by the decodes' KV traffic that the step
  model hides under the prompt's compute (h200-overload-prefill-in-kv-bound-steps). That traffic takes 4.47 /
  3.105 = 1.44x longer at the H100's read ceiling. If the part that is not hidden grows with it, the H200's excess
  (0.6-1.1 of the prediction) becomes 0.86-1.58.
"""

from __future__ import annotations

import pytest
from latency_decode_findings import marginal_cost_band
from latency_findings_common import H100, LLAMA, OTHER_SESSION_NOISE
from latency_poisson_overload_findings import HEAVY_BAND

OVERHEAD_FINDING = "h100-decode-step-overhead-is-the-h200s"
OVERHEAD_NOISE = OTHER_SESSION_NOISE  # one session's ratio against another's

OVERHEAD_WHY = (
    "The bare roofline omits the step overhead (h200-decode-step-overhead), which is the host's and the launches', "
    "not the card's: the H200 sessions measured it at b=1 as their step less their roofline (cli_calibration."
    "b1_residuals). Band: this session's roofline plus the H200 sessions' smallest and largest overhead, "
    "+-2.5% (one session against another). The H100 measured 1.54-1.56 ms, beside the H200's upper end.")
OVERHEAD = pytest.mark.finding(OVERHEAD_FINDING, hardware=H100, quantity="decode_step_roofline", reason=OVERHEAD_WHY,
                               band_from="other-runs")


def overhead_band(roofline_s: float, residuals_s: list[float]) -> tuple[float, float]:
    """measured / roofline when the step is the roofline plus an overhead in the recorded range, +-OVERHEAD_NOISE."""
    return ((1 + min(residuals_s) / roofline_s) * (1 - OVERHEAD_NOISE),
            (1 + max(residuals_s) / roofline_s) * (1 + OVERHEAD_NOISE))


# Llama-3.1-8B at b=128 on the H100: the per-sequence excess of the H200's band, re-priced at the H100's predictions
# the H200's band for the transfer setup's per-sequence cost (h200-decode-per-sequence-cost), less 1
PER_SEQUENCE_EXCESS = tuple(round(b - 1, 4) for b in marginal_cost_band(LLAMA))
KV_READ_128_MS, STEP_128_MS = 128 * 45.96e-3, 12.24  # the H100's predictions (test_marginal_cost_per_sequence, b=128)
LLAMA_B128 = pytest.mark.finding(
    "h100-per-sequence-excess-in-a-longer-step", hardware=H100, quantity="decode_step_other_model",
    expected=tuple(round(1 + e * KV_READ_128_MS / STEP_128_MS, 4) for e in PER_SEQUENCE_EXCESS),
    band_from="explanation",
    reason=(f"Each extra sequence costs {1 + PER_SEQUENCE_EXCESS[0]:.2f}-{1 + PER_SEQUENCE_EXCESS[1]:.2f}x its KV "
            "read (h200-decode-per-sequence-cost, the H200's band for the transfer setup; the H100's own marginal "
            "cost, 1.15x, sits inside it). At b=128 the H100's predicted step "
            f"is {STEP_128_MS} ms, of which the 128 sequences' KV read is {KV_READ_128_MS:.3f} ms: the excess is that "
            "share of the step, smaller than on the H200, where the weights take less of a step."))

# Under overload: the H200's band on the prefill part, its excess moved by the two read ceilings
H200_PREFILL_PART, READ_RATIO = HEAVY_BAND["prefill_part_of_ttft"], 4.47 / 3.105
OVERLOAD_PREFILL = pytest.mark.finding(
    "h100-overload-kv-traffic-at-a-lower-ceiling", hardware=H100, quantity="prefill_part_of_ttft_heavily_oversubscribed",
    expected=tuple(round(1 + (b - 1) * READ_RATIO, 4) for b in H200_PREFILL_PART),
    band_from="other-runs",
    reason=("The decodes sharing a prompt's steps read their KV at the read ceiling, 1.44x slower on the H100 "
            "(3.105 against 4.47 TB/s); the step model hides that traffic under the prompt's compute "
            "(h200-overload-prefill-in-kv-bound-steps). Band: the H200's excess over the simulated prefill part "
            "(0.6-1.1) x 1.44, if the unhidden part grows with the traffic's time."))

# Qwen2.5-7B's b=2 step on the H100: one extra sequence's excess over its KV read, and the b=1 anchor's offset
# (first outside its noise budget in the 2026-12-06 00:00 session: +0.50% against +-0.35%, 30.7 us).
# The two terms, us (lowest, highest): the excess per sequence over its KV read of the H100's 2026-12-05 21:36 session's
# Qwen2.5-7B at b = 16-128 (decode-per-sequence-excess-is-per-sequence: 12.9, 5.5, 7.2, 7.1 us), and the step from
# the b=1 residual to the b=2 residual about the b = 1..64 line in the H200 sessions whose sweep is tabled
# (latency_sequence_cost_findings: -38 -> -30, -39 -> -32, -20 -> -24 us).
B2_EXCESS_US, B2_ANCHOR_STEP_US = (5.5, 12.9), (-4.0, 8.0)
B2_STEP_ID = "h100-decode-b2-one-sequences-excess"
B2_STEP = pytest.mark.finding(
    B2_STEP_ID, hardware=H100, quantity="decode_step", band_from="explanation", strict=False,
    reason=("Qwen2.5-7B's b=2 step is priced as the b=1 step (its calibration point) plus one more sequence's KV read "
            "at the read ceiling (~20 us on the H100). One more sequence costs more than that: its excess over the KV "
            f"read, {B2_EXCESS_US[0]}-{B2_EXCESS_US[1]} us on the H100 (the 2026-12-05 21:36 session's b = 16-128 "
            "steps, h200-decode-per-sequence-cost's mechanism), and the b=1 anchor's offset from the b = 1..64 line, "
            f"{B2_ANCHOR_STEP_US[0]:+.0f} to {B2_ANCHOR_STEP_US[1]:+.0f} us between b=1 and b=2 (the H200 sessions' "
            "sweeps, h200-closed-loop-runs-at-its-isolated-step; host-side, as the step overhead that transfers between "
            "the cards). Their sum, 1.5-21 us, is inside the check's ~21 us noise budget in most sessions (5 of the "
            "H100's 6; strict=False), not in the 2026-12-06 00:00 one (30.7 us). Band, set at test time from that "
            "arithmetic: 1 + (1.5 to 20.9 us) / the predicted step, +- this check's budget."))


def b2_step_band(predicted_s: float, budget: float) -> tuple[float, float]:
    """B2_STEP's band: one sequence's excess plus the anchor's step over the predicted b=2 step, +- the budget."""
    lo, hi = (B2_EXCESS_US[0] + B2_ANCHOR_STEP_US[0], B2_EXCESS_US[1] + B2_ANCHOR_STEP_US[1])
    return 1 + lo * 1e-6 / predicted_s - budget, 1 + hi * 1e-6 / predicted_s + budget
