"""The step overhead every recorded H200 session measured (its Qwen2.5-7B b=1 step less the bare roofline at its own
read ceiling: cli_calibration.b1_residuals), pinned: the band of h200-decode-step-overhead (and of the H100's
h100f.OVERHEAD) is the checked run's roofline plus the other sessions' overheads from this table.

Pinned, not re-derived at test time, for two reasons. A band re-derived from the other sessions' recordings under the
current theory moves with the theory: a weight-bytes error shifts every session's roofline and so every overhead by
the same amount, and the band follows the checked prediction (tests_plugin/theory_mutants.py,
latency-matmul-weights-x1.05). And reading every H200 session's recordings on each run of the check cost the replay a
full pass over results/. test_latency_steps.py::test_b1_overheads_are_the_recorded_ones recomputes the table from the
recordings, so a new session or a theory change shows as that one failing table test."""

from __future__ import annotations

# recorded_at of the b=1 run -> its overhead in ms (4 decimals: 0.1 us, far under the band's 2.5% per edge)
B1_OVERHEAD_BY_SESSION_MS: dict[str, float] = {
    "2026-11-30T00:37:45Z": 1.4875, "2026-12-01T04:47:39.125311Z": 1.5077, "2026-12-01T05:15:55.000000Z": 1.5355,
    "2026-12-01T06:44:22.000000Z": 1.5505, "2026-12-01T06:53:39.000000Z": 1.5104,
    "2026-12-01T11:24:59.000000Z": 1.5310, "2026-12-01T11:34:04.000000Z": 1.5181,
    "2026-12-02T00:05:58.000000Z": 1.5320, "2026-12-02T00:15:06.000000Z": 1.5261,
    "2026-12-02T02:33:51.000000Z": 1.4982, "2026-12-02T02:43:17.000000Z": 1.4846,
    "2026-12-02T04:52:35.000000Z": 1.4975, "2026-12-02T04:59:44.000000Z": 1.5129,
    "2026-12-02T07:14:23.000000Z": 1.5065, "2026-12-02T07:21:58.000000Z": 1.4912,
    "2026-12-02T14:18:58.000000Z": 1.5144, "2026-12-02T14:26:26.000000Z": 1.5314,
    "2026-12-02T16:29:14.000000Z": 1.3845, "2026-12-02T16:37:12.000000Z": 1.3581,
    "2026-12-02T23:51:19.000000Z": 1.4674, "2026-12-02T23:58:45.000000Z": 1.4862,
    "2026-12-03T08:29:08.000000Z": 1.4848, "2026-12-03T08:36:49.000000Z": 1.5132,
    "2026-12-03T12:06:46.000000Z": 1.5381, "2026-12-03T12:14:50.000000Z": 1.5426,
    "2026-12-03T14:16:33.000000Z": 1.5364, "2026-12-03T14:23:49.000000Z": 1.5378,
    "2026-12-03T21:25:39.000000Z": 1.4851, "2026-12-03T21:32:29.000000Z": 1.4877,
    "2026-12-03T22:26:09.000000Z": 1.5288, "2026-12-03T23:32:23.000000Z": 1.5031,
    "2026-12-03T23:40:05.000000Z": 1.4883, "2026-12-04T00:09:44.000000Z": 1.3660,
    "2026-12-04T09:53:42.000000Z": 1.4554, "2026-12-04T10:05:35.000000Z": 1.5138,
    "2026-12-04T10:12:03.000000Z": 1.4684, "2026-12-06T08:39:30Z": 1.5185,
    "2026-12-06T09:41:35Z": 1.5233, "2026-12-07T05:34:54Z": 1.5347,
    "2026-12-07T17:25:29Z": 1.5230,
}


def other_sessions_overheads_s(recorded_at: str | None) -> list[float]:
    """Every pinned session's overhead in seconds except the checked run's own (`recorded_at`; None or a live run's
    stamp, absent from the table, keeps them all)."""
    return [ms * 1e-3 for stamp, ms in B1_OVERHEAD_BY_SESSION_MS.items() if stamp != recorded_at]
