"""Qwen2.5-7B's prefill part of TTFT in the heavily oversubscribed overload regime (128 prompts of 1,755 + 1,024
tokens on a pinned ~225k-token pool, 1.58x): its finding band derived from Qwen's own recorded sessions.

Why: the band was the one Llama-3.1-8B's run set (1.6-2.1, HEAVY_BAND: that run's 1.84 with room), typed, and
applied to Qwen's runs. Qwen's 15 runs before 2026-12-04 sat at 1.83-2.13 (the 2026-12-02 16:29 run already above
2.1), and the nineteenth call's run (2026-12-04 00:04) at 2.164, 1.6% above Qwen's highest, inside its own repeat
scatter (3.7%). The band is now the project's rule for a quantity recorded over many sessions: the other recorded
Qwen sessions' ratios (never the run checked), their envelope widened by the checked run's noise budget
(test_latency_load.test_overload_queueing_share_of_ttft passes it at test time). Changed after that miss: later
sessions are its held-out test (the first two, 2026-12-04 09:53 at 2.038 and 10:05 at 2.029, sat inside the earlier
runs' 1.83-2.16). Llama-3.1-8B's one heavy run (2026-11-30), which set HEAVY_BAND, is banded by the same envelope
of the Qwen runs since 2026-12-04 (issue 10 item 3; its reason says the regime, not the model, sets the split), so its
band no longer holds its own ratio. Its queueing share, which kept HEAVY_BAND (checked-run: the band its own run set),
is banded the same way since 2026-12-04 (heavy_share_band): the Qwen runs' measured / simulated shares
(QWEN_HEAVY_QUEUE_SHARE, 0.9078-0.9201), widened by the checked run's own noise budget on the share. Until 2026-12-05
that was its prefill-part budget carried into the share (the share is 1 - prefill / TTFT, so a relative error e in the
prefill part moves it by e x prefill share / queueing share, both simulated), the check itself being held to a fixed
1 pp; since then the check has a budget of its own (test_latency_load.queue_share_budget: that carried prefill-part
budget, the mean TTFT's repeat scatter carried the same way, and the frontend the simulation omits), and the band is
widened by it: 0.9032-0.9247 -> 0.8851-0.9431 for the 2026-11-30 run (0.9237, a finding either way). Qwen's own shares
keep HEAVY_BAND, the band Llama's run set (other runs for them).
"""

from __future__ import annotations

from pytest_anatomy.recordings import same_instant

from latency_findings_common import envelope

# measured / simulated prefill part of TTFT (mean engine prefill over mean simulated TTFT - queue) of every recorded
# Qwen2.5-7B overload run in the heavy regime, by stamp, oldest first; each with its own session's setup.
# test_latency_findings_reasons.py::test_qwen_heavy_prefill_parts_are_the_recorded_ones recomputes every entry.
QWEN_HEAVY_PREFILL_PART: dict[str, float] = {"2026-12-01T04:47:40.726144Z": 1.8269,
    "2026-12-01T06:44:22.000000Z": 2.0654, "2026-12-01T11:24:59.000000Z": 2.073,
    "2026-12-02T00:05:58.000000Z": 2.0736, "2026-12-02T02:33:51.000000Z": 2.0922,
    "2026-12-02T04:52:35.000000Z": 2.0354, "2026-12-02T07:14:23.000000Z": 2.0092,
    "2026-12-02T14:18:58.000000Z": 2.0424, "2026-12-02T16:29:14.000000Z": 2.1295,
    "2026-12-02T23:51:19.000000Z": 2.0747, "2026-12-03T08:29:08.000000Z": 2.0405,
    "2026-12-03T12:06:46.000000Z": 2.0426, "2026-12-03T14:16:33.000000Z": 2.0243,
    "2026-12-03T21:25:39.000000Z": 2.07, "2026-12-03T23:32:23.000000Z": 1.9886,
    "2026-12-04T00:09:44.000000Z": 2.1644, "2026-12-04T09:53:42.000000Z": 2.038,
    "2026-12-04T10:05:35.000000Z": 2.0288}


# measured / simulated queueing share of TTFT (mean engine queue over mean client TTFT) of the same runs, by stamp;
# test_latency_overload_heavy.py::test_qwen_heavy_prefill_parts_are_the_recorded_ones recomputes every entry.
QWEN_HEAVY_QUEUE_SHARE: dict[str, float] = {"2026-12-01T04:47:40.726144Z": 0.9154,
    "2026-12-01T06:44:22.000000Z": 0.916, "2026-12-01T11:24:59.000000Z": 0.9078,
    "2026-12-02T00:05:58.000000Z": 0.9084, "2026-12-02T02:33:51.000000Z": 0.9099,
    "2026-12-02T04:52:35.000000Z": 0.9199, "2026-12-02T07:14:23.000000Z": 0.9186,
    "2026-12-02T14:18:58.000000Z": 0.9183, "2026-12-02T16:29:14.000000Z": 0.9149,
    "2026-12-02T23:51:19.000000Z": 0.9201, "2026-12-03T08:29:08.000000Z": 0.9173,
    "2026-12-03T12:06:46.000000Z": 0.9163, "2026-12-03T14:16:33.000000Z": 0.9187,
    "2026-12-03T21:25:39.000000Z": 0.9189, "2026-12-03T23:32:23.000000Z": 0.9195,
    "2026-12-04T00:09:44.000000Z": 0.9186, "2026-12-04T09:53:42.000000Z": 0.9161,
    "2026-12-04T10:05:35.000000Z": 0.92}


def heavy_share_band(budget: float) -> tuple[float, float]:
    """Llama-3.1-8B's heavy-regime queueing share: the Qwen runs' envelope (Llama's run is not among them), widened by
    `budget` (the checked run's own budget on the share, test_latency_load.queue_share_budget's sum)."""
    return envelope(QWEN_HEAVY_QUEUE_SHARE.values(), budget)


def heavy_prefill_band(budget: float, exclude: str | None = None) -> tuple[float, float]:
    """The other recorded heavy-regime Qwen runs' envelope (never `exclude`, the run checked), widened by `budget`."""
    return envelope([r for s, r in QWEN_HEAVY_PREFILL_PART.items() if not same_instant(s, exclude)], budget)
