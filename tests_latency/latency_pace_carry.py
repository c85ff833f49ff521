"""The Poisson mean-ITL band carried to the checked run's own prompt pace, at the rates where that pace explains the
spread between sessions.

Why: the eighteenth visit's 0.8x run (2026-12-03 23:32) ran its mean ITL at 1.244 of its simulation, above the band
the other clean sessions' envelope gave (1.2417 with its noise budget), with neither prompt-pace check flagging it: its
lone prompts' compute part was 20.2 ms, 1.12x the other sessions' median at 0.8x (18.0 ms), under both thresholds
(measure/prompt_pace.SLOW_PROMPT_STEPS). The mean ITL includes the steps that carry a 1,024-token prompt, so a run's
prompt pace moves it, and the sessions' raw ratios mix paces: at 0.8x the clean sessions' lone-prompt compute parts
span 16.5-20.2 ms and their mean-ITL ratios rise with them. Simulated at its own pace (eta / slowdown,
latency_setups.slowed_prompts), on the sessions recorded up to 23:32, each clean 0.8x run's ratio moves to
1.129-1.190 from 1.121-1.244: the spread halves.
At 0.5x, 1x and 1.3x it does not narrow (at 1x and 1.3x most prompts share a step, so the lone-prompt pace is a poor
proxy for the prompt steps the mean holds; at 0.5x the two slowest runs are over-corrected): the band there stays the
raw envelope. The rule that picks the rates (the spread of the carried ratios below the raw ones' over the clean
sessions, test_latency_pace_carry.py::test_pace_carries_where_it_narrows_the_spread) was written after the 23:32
miss, from the recorded sessions; the next sessions are its held-out test.

The band at a carried rate: the other clean sessions' ratios, each divided by its own pace shift (the run at the
reference pace), their envelope widened by the checked run's noise budget, then multiplied by the checked run's pace
shift. The pace shift is the simulation's mean ITL at the run's measured lone-prompt compute part over the reference
part (reference_part_ms) divided by the simulation's at the modeled pace; it comes from the run's prompt-carrying
steps, never from its ITLs, so a run whose decode steps ran slow is not carried. A run without a kept timeline is not
carried (shift 1).
"""

from __future__ import annotations

import statistics

# Qwen2.5-7B, 1,024-token prompts. By rate and run stamp (oldest first): the run's median lone-prompt compute part in
# ms (prompt_pace.PromptPace.prompt_part_s) and its pace shift against reference_part_ms at that rate.
# test_latency_pace_carry.py::test_pace_tables_are_the_recorded_ones recomputes every entry from the recordings.
POISSON_PROMPT_PART_MS: dict[str, dict[str, float]] = {
    "0.5": {"2026-11-30T00:37:45Z": 20.05, "2026-12-01T04:47:40.227049Z": 24.59,
          "2026-12-01T06:44:22.000000Z": 16.52, "2026-12-01T11:24:59.000000Z": 16.14,
          "2026-12-02T00:05:58.000000Z": 16.21, "2026-12-02T02:33:51.000000Z": 16.03,
          "2026-12-02T04:52:35.000000Z": 16.27, "2026-12-02T07:14:23.000000Z": 16.55,
          "2026-12-02T14:18:58.000000Z": 16.22, "2026-12-02T16:29:14.000000Z": 21.74,
          "2026-12-02T23:51:19.000000Z": 16.23, "2026-12-03T08:29:08.000000Z": 20.85,
          "2026-12-03T12:06:46.000000Z": 20.85, "2026-12-03T14:16:33.000000Z": 18.55,
          "2026-12-03T21:25:39.000000Z": 16.13, "2026-12-03T23:32:23.000000Z": 23.16,
          "2026-12-04T00:09:44.000000Z": 23.9, "2026-12-04T09:53:42.000000Z": 16.96,
          "2026-12-04T10:05:35.000000Z": 16.22},
    "0.8": {"2026-11-30T00:37:45Z": 24.65, "2026-12-01T11:24:59.000000Z": 19.87,
          "2026-12-02T00:05:58.000000Z": 17.01, "2026-12-02T02:33:51.000000Z": 16.49,
          "2026-12-02T04:52:35.000000Z": 16.69, "2026-12-02T07:14:23.000000Z": 24.9,
          "2026-12-02T14:18:58.000000Z": 16.65, "2026-12-02T16:29:14.000000Z": 22.22,
          "2026-12-02T23:51:19.000000Z": 18.04, "2026-12-03T08:29:08.000000Z": 18.14,
          "2026-12-03T12:06:46.000000Z": 17.42, "2026-12-03T14:16:33.000000Z": 18.37,
          "2026-12-03T21:25:39.000000Z": 18.61, "2026-12-03T23:32:23.000000Z": 20.22,
          "2026-12-04T00:09:44.000000Z": 21.36, "2026-12-04T09:53:42.000000Z": 17.13,
          "2026-12-04T10:05:35.000000Z": 16.47},
    "1": {"2026-11-30T00:37:45Z": 17.29, "2026-12-01T04:47:40.320649Z": 18.55, "2026-12-01T06:44:22.000000Z": 19.47,
          "2026-12-01T11:24:59.000000Z": 17.36, "2026-12-02T00:05:58.000000Z": 18.88,
          "2026-12-02T02:33:51.000000Z": 15.88, "2026-12-02T04:52:35.000000Z": 16.91,
          "2026-12-02T07:14:23.000000Z": 16.29, "2026-12-02T14:18:58.000000Z": 16.36,
          "2026-12-02T16:29:14.000000Z": 21.53, "2026-12-02T23:51:19.000000Z": 28.14,
          "2026-12-03T08:29:08.000000Z": 18.23, "2026-12-03T12:06:46.000000Z": 16.51,
          "2026-12-03T14:16:33.000000Z": 22.65, "2026-12-03T21:25:39.000000Z": 18.88,
          "2026-12-03T23:32:23.000000Z": 16.07, "2026-12-04T00:09:44.000000Z": 22.66,
          "2026-12-04T09:53:42.000000Z": 16.7, "2026-12-04T10:05:35.000000Z": 16.04},
    "1.3": {"2026-11-30T00:37:45Z": 23.14, "2026-12-01T04:47:40.416640Z": 18.56, "2026-12-01T06:44:22.000000Z": 17.5,
          "2026-12-01T11:24:59.000000Z": 21.13, "2026-12-02T00:05:58.000000Z": 17.48,
          "2026-12-02T02:33:51.000000Z": 18.31, "2026-12-02T04:52:35.000000Z": 16.95,
          "2026-12-02T07:14:23.000000Z": 19.94, "2026-12-02T14:18:58.000000Z": 21.68,
          "2026-12-02T16:29:14.000000Z": 18.19, "2026-12-02T23:51:19.000000Z": 16.88,
          "2026-12-03T08:29:08.000000Z": 20.32, "2026-12-03T12:06:46.000000Z": 20.97,
          "2026-12-03T14:16:33.000000Z": 18.64, "2026-12-03T21:25:39.000000Z": 19.53,
          "2026-12-03T23:32:23.000000Z": 17.88, "2026-12-04T00:09:44.000000Z": 30.96,
          "2026-12-04T09:53:42.000000Z": 17.47, "2026-12-04T10:05:35.000000Z": 17.1},
}
POISSON_PACE_SHIFT: dict[str, dict[str, float]] = {
    "0.5": {"2026-11-30T00:37:45Z": 1.0691, "2026-12-01T04:47:40.227049Z": 1.165,
          "2026-12-01T06:44:22.000000Z": 1.0015, "2026-12-01T11:24:59.000000Z": 0.9965,
          "2026-12-02T00:05:58.000000Z": 0.9976, "2026-12-02T02:33:51.000000Z": 0.9951,
          "2026-12-02T04:52:35.000000Z": 0.9983, "2026-12-02T07:14:23.000000Z": 1.0019,
          "2026-12-02T14:18:58.000000Z": 0.9976, "2026-12-02T16:29:14.000000Z": 1.0838,
          "2026-12-02T23:51:19.000000Z": 0.9979, "2026-12-03T08:29:08.000000Z": 1.0731,
          "2026-12-03T12:06:46.000000Z": 1.0651, "2026-12-03T14:16:33.000000Z": 1.0335,
          "2026-12-03T21:25:39.000000Z": 0.9961, "2026-12-03T23:32:23.000000Z": 1.1164,
          "2026-12-04T00:09:44.000000Z": 1.1297, "2026-12-04T09:53:42.000000Z": 1.0073,
          "2026-12-04T10:05:35.000000Z": 0.9977},
    "0.8": {"2026-11-30T00:37:45Z": 1.2322, "2026-12-01T11:24:59.000000Z": 1.0461,
          "2026-12-02T00:05:58.000000Z": 0.9747, "2026-12-02T02:33:51.000000Z": 0.9627,
          "2026-12-02T04:52:35.000000Z": 0.966, "2026-12-02T07:14:23.000000Z": 1.194,
          "2026-12-02T14:18:58.000000Z": 0.9676, "2026-12-02T16:29:14.000000Z": 1.1132,
          "2026-12-02T23:51:19.000000Z": 1.0, "2026-12-03T08:29:08.000000Z": 1.0023,
          "2026-12-03T12:06:46.000000Z": 0.9844, "2026-12-03T14:16:33.000000Z": 1.0084,
          "2026-12-03T21:25:39.000000Z": 1.0144, "2026-12-03T23:32:23.000000Z": 1.0561,
          "2026-12-04T00:09:44.000000Z": 1.0942, "2026-12-04T09:53:42.000000Z": 0.9805,
          "2026-12-04T10:05:35.000000Z": 0.964},
    "1": {"2026-11-30T00:37:45Z": 1.0056, "2026-12-01T04:47:40.320649Z": 1.053, "2026-12-01T06:44:22.000000Z": 1.0789,
          "2026-12-01T11:24:59.000000Z": 1.0062, "2026-12-02T00:05:58.000000Z": 1.0561,
          "2026-12-02T02:33:51.000000Z": 0.96, "2026-12-02T04:52:35.000000Z": 0.9926,
          "2026-12-02T07:14:23.000000Z": 0.9735, "2026-12-02T14:18:58.000000Z": 0.9744,
          "2026-12-02T16:29:14.000000Z": 1.1485, "2026-12-02T23:51:19.000000Z": 1.4129,
          "2026-12-03T08:29:08.000000Z": 1.0325, "2026-12-03T12:06:46.000000Z": 0.9796,
          "2026-12-03T14:16:33.000000Z": 1.196, "2026-12-03T21:25:39.000000Z": 1.058,
          "2026-12-03T23:32:23.000000Z": 0.9665, "2026-12-04T00:09:44.000000Z": 1.199,
          "2026-12-04T09:53:42.000000Z": 0.9857, "2026-12-04T10:05:35.000000Z": 0.9655},
    "1.3": {"2026-11-30T00:37:45Z": 1.1608, "2026-12-01T04:47:40.416640Z": 1.0087,
          "2026-12-01T06:44:22.000000Z": 0.9702, "2026-12-01T11:24:59.000000Z": 1.1182,
          "2026-12-02T00:05:58.000000Z": 0.9693, "2026-12-02T02:33:51.000000Z": 1.0,
          "2026-12-02T04:52:35.000000Z": 0.9489, "2026-12-02T07:14:23.000000Z": 1.0707,
          "2026-12-02T14:18:58.000000Z": 1.1374, "2026-12-02T16:29:14.000000Z": 0.9963,
          "2026-12-02T23:51:19.000000Z": 0.9454, "2026-12-03T08:29:08.000000Z": 1.0831,
          "2026-12-03T12:06:46.000000Z": 1.1086, "2026-12-03T14:16:33.000000Z": 1.0113,
          "2026-12-03T21:25:39.000000Z": 1.0518, "2026-12-03T23:32:23.000000Z": 0.983,
          "2026-12-04T00:09:44.000000Z": 1.4159, "2026-12-04T09:53:42.000000Z": 0.9641,
          "2026-12-04T10:05:35.000000Z": 0.9555},
}
PACE_CARRIED: tuple[str, ...] = ("0.8",)


def reference_part_ms(factor: str, flagged: frozenset[str], parts: dict[str, float] | None = None) -> float:
    """The median compute part of the clean recorded runs at `factor` (not `flagged` by the prompt-pace checks), the
    newest left out: the pace the shifts are taken against. `parts`: the runs' parts by stamp (default: the table's)."""
    parts = POISSON_PROMPT_PART_MS[factor] if parts is None else parts
    newest = max(parts)
    return statistics.median(p for s, p in parts.items() if s != newest and s not in flagged)


def at_reference_pace(factor: str, runs: dict[str, float]) -> dict[str, float]:
    """`runs` (ratio by stamp at `factor`) each divided by its run's pace shift."""
    shifts = POISSON_PACE_SHIFT[factor]
    return {s: r / shifts[s] for s, r in runs.items()}


def spread(values: list[float]) -> float:
    return statistics.pstdev(values)
