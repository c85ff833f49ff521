"""The findings of the runs under load (test_latency_load.py): Poisson arrivals at five rates (ITL under load) and the
overload runs (the prefill in KV-bound steps, the heavily oversubscribed pool), with the bands carried from the
sessions calibrated before GEMM timings existed (CARRIED) and the runs the prompt-pace checks flag
(POISSON_PACE_FLAGGED, clean_other_runs). TTFT below the knee moved to latency_poisson_ttft_findings.py on 2026-12-07
to keep modules under 500 lines.
"""

from __future__ import annotations

from pytest_anatomy.recordings import same_instant

import latency_pace_carry as pc
from latency_overload_heavy import QWEN_HEAVY_PREFILL_PART
import pytest
from latency_closed_loop_findings import PROMPT_STEPS_SLOWER
from latency_decode_findings import DECODE_RATIO_OTHER_SESSION, marginal_cost_span
from latency_findings_common import CHECKED_ON, LLAMA, QWEN, Carried, _and, _count, _days, _plural, envelope, runs_band

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


# Carried quantities whose ratio straddles their goal (10% for ITL) from one calibration to the other: within it
# with the prefill-fitted eta (1.058-1.094), beyond it with the GEMMs' (x 1.016-1.032): such a finding may resolve in
# one session and not the next, so it passes as an XPASS when it does (strict=False) instead of failing.
STRADDLING_THE_GOAL = frozenset({"poisson.f1:itl_median", "overload:itl_mean", "overload:output_throughput",
                                 "overload:ttft_p50"})


# Two sessions of the same Poisson workload put the mean ITL on both sides of the 10% target: the
# excess is there at every rate from 0.5x up, its size moves by a few percent between sessions.
# Qwen2.5-7B's Poisson mean ITL, measured / simulated with its own session's setup, by rate (a fraction of the C=64
# rate) and run stamp, oldest first (test_latency_findings_reasons.py::test_poisson_itl_means_are_the_recorded_ones).
POISSON_ITL_MEAN: dict[str, dict[str, float]] = {
    "0.5": {"2026-11-30T00:37:45Z": 1.0940, "2026-12-01T04:47:40.227049Z": 1.1330,
            "2026-12-01T06:44:22.000000Z": 1.0880, "2026-12-01T11:24:59.000000Z": 1.0852,
            "2026-12-02T00:05:58.000000Z": 1.0730, "2026-12-02T02:33:51.000000Z": 1.1080,
            "2026-12-02T04:52:35.000000Z": 1.0975, "2026-12-02T07:14:23.000000Z": 1.1205,
            "2026-12-02T14:18:58.000000Z": 1.0964, "2026-12-02T16:29:14.000000Z": 1.1486,
            "2026-12-02T23:51:19.000000Z": 1.0754, "2026-12-03T08:29:08.000000Z": 1.1776,
            "2026-12-03T12:06:46.000000Z": 1.1160, "2026-12-03T14:16:33.000000Z": 1.1086,
            "2026-12-03T21:25:39.000000Z": 1.0949, "2026-12-03T23:32:23.000000Z": 1.1713,
            "2026-12-04T00:09:44.000000Z": 1.1589, "2026-12-04T09:53:42.000000Z": 1.0838,
            "2026-12-04T10:05:35.000000Z": 1.1029},
    "0.8": {"2026-11-30T00:37:45Z": 1.1825, "2026-12-01T11:24:59.000000Z": 1.1806,
            "2026-12-02T00:05:58.000000Z": 1.1308, "2026-12-02T02:33:51.000000Z": 1.1211,
            "2026-12-02T04:52:35.000000Z": 1.1233, "2026-12-02T07:14:23.000000Z": 1.3165,
            "2026-12-02T14:18:58.000000Z": 1.1368, "2026-12-02T16:29:14.000000Z": 1.2357,
            "2026-12-02T23:51:19.000000Z": 1.1872, "2026-12-03T08:29:08.000000Z": 1.1798,
            "2026-12-03T12:06:46.000000Z": 1.1742, "2026-12-03T14:16:33.000000Z": 1.1548,
            "2026-12-03T21:25:39.000000Z": 1.2025, "2026-12-03T23:32:23.000000Z": 1.2440,
            "2026-12-04T00:09:44.000000Z": 1.2395, "2026-12-04T09:53:42.000000Z": 1.1447,
            "2026-12-04T10:05:35.000000Z": 1.1284},
    "1": {"2026-11-30T00:37:45Z": 1.0897, "2026-12-01T04:47:40.320649Z": 1.0941,
          "2026-12-01T06:44:22.000000Z": 1.2160, "2026-12-01T11:24:59.000000Z": 1.1656,
          "2026-12-02T00:05:58.000000Z": 1.2049, "2026-12-02T02:33:51.000000Z": 1.1566,
          "2026-12-02T04:52:35.000000Z": 1.1504, "2026-12-02T07:14:23.000000Z": 1.1594,
          "2026-12-02T14:18:58.000000Z": 1.2084, "2026-12-02T16:29:14.000000Z": 1.2294,
          "2026-12-02T23:51:19.000000Z": 1.3458, "2026-12-03T08:29:08.000000Z": 1.2008,
          "2026-12-03T12:06:46.000000Z": 1.1634, "2026-12-03T14:16:33.000000Z": 1.2495,
          "2026-12-03T21:25:39.000000Z": 1.2438, "2026-12-03T23:32:23.000000Z": 1.2353,
          "2026-12-04T00:09:44.000000Z": 1.2563, "2026-12-04T09:53:42.000000Z": 1.1831,
          "2026-12-04T10:05:35.000000Z": 1.1659},
    "1.3": {"2026-11-30T00:37:45Z": 1.1303, "2026-12-01T04:47:40.416640Z": 1.0882,
            "2026-12-01T06:44:22.000000Z": 1.2116, "2026-12-01T11:24:59.000000Z": 1.2376,
            "2026-12-02T00:05:58.000000Z": 1.2056, "2026-12-02T02:33:51.000000Z": 1.2335,
            "2026-12-02T04:52:35.000000Z": 1.1928, "2026-12-02T07:14:23.000000Z": 1.2267,
            "2026-12-02T14:18:58.000000Z": 1.2956, "2026-12-02T16:29:14.000000Z": 1.2519,
            "2026-12-02T23:51:19.000000Z": 1.2165, "2026-12-03T08:29:08.000000Z": 1.2526,
            "2026-12-03T12:06:46.000000Z": 1.2585, "2026-12-03T14:16:33.000000Z": 1.2089,
            "2026-12-03T21:25:39.000000Z": 1.2364, "2026-12-03T23:32:23.000000Z": 1.2403,
            "2026-12-04T00:09:44.000000Z": 1.3087, "2026-12-04T09:53:42.000000Z": 1.2312,
            "2026-12-04T10:05:35.000000Z": 1.2026},
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


# The mean-ITL band at the rates where it is derived (ITL_MEAN_DERIVED), replacing the typed (1.05, 1.25): the envelope
# of Qwen2.5-7B's other clean recorded sessions' POISSON_ITL_MEAN at the same rate (never the run checked; never a run
# the prompt-pace checks flag, h200-load-run-slow-prompt-steps or h200-load-session-slow-prompt-steps, whose findings
# judge it instead), widened by the checked run's mean-ITL noise budget, as marginal_cost_envelope does for the decode
# slope. By rate: the stamps those checks flag (test_latency_load.slow_prompt_run's decision: the run against its
# session's other runs, or its session against the recorded reference where that slows this run) and the newest run's
# noise budget (itl_budget, mean), which the static band (the band as a replay of the newest run sees it) is widened by;
# test_latency_closed_loop.py::test_poisson_itl_mean_band_is_the_recorded_one recomputes both (the flagged stamps at
# 0.25x, where only the TTFT bands are derived, test_poisson_ttft_bands_are_the_recorded_ones). The marks carry that
# static band; a live run (not in the table) or an older replayed run is judged exactly only where
# test_latency_load.band_at_test_time passes itl_mean_envelope(factor, its budget, exclude=its stamp) as finding_band.
ITL_MEAN_DERIVED = ("0.5", "0.8", "1", "1.3")
POISSON_PACE_FLAGGED: dict[str, frozenset[str]] = {
    "0.25": frozenset({"2026-11-30T00:37:45Z", "2026-12-02T16:29:14.000000Z", "2026-12-03T12:06:46.000000Z",
                      "2026-12-04T00:09:44.000000Z"}),
    "0.5": frozenset({"2026-11-30T00:37:45Z", "2026-12-02T16:29:14.000000Z", "2026-12-03T12:06:46.000000Z",
                      "2026-12-04T00:09:44.000000Z"}),
    "0.8": frozenset({"2026-11-30T00:37:45Z", "2026-12-02T07:14:23.000000Z", "2026-12-02T16:29:14.000000Z",
                      "2026-12-03T12:06:46.000000Z", "2026-12-04T00:09:44.000000Z"}),
    "1": frozenset({"2026-11-30T00:37:45Z", "2026-12-02T16:29:14.000000Z", "2026-12-02T23:51:19.000000Z",
                    "2026-12-04T00:09:44.000000Z"}),
    "1.3": frozenset({"2026-11-30T00:37:45Z", "2026-12-02T14:18:58.000000Z", "2026-12-02T16:29:14.000000Z",
                      "2026-12-03T12:06:46.000000Z", "2026-12-04T00:09:44.000000Z"}),
}
POISSON_ITL_MEAN_NEWEST_BUDGET: dict[str, float] = {"0.5": 0.0248, "0.8": 0.0287, "1": 0.0337, "1.3": 0.0351}


def clean_other_runs(runs: dict[str, float], factor: str, exclude: str | None = None) -> dict[str, float]:
    """`runs` (ratio by session stamp at `factor`) without the run checked (`exclude`) and the pace-flagged ones."""
    return {s: r for s, r in runs.items() if not same_instant(s, exclude) and s not in POISSON_PACE_FLAGGED[factor]}


def _clean_itl_means(factor: str, exclude: str | None = None) -> dict[str, float]:
    return clean_other_runs(POISSON_ITL_MEAN[factor], factor, exclude)


def itl_mean_envelope(factor: str, budget: float, exclude: str | None = None,
                      own_shift: float = 1.0) -> tuple[float, float]:
    """The mean-ITL finding's band at `factor` x the C=64 rate: the lowest and highest ratio of the other clean recorded
    sessions (never the one stamped `exclude`, the run checked), widened by `budget` (the checked run's noise budget).
    At the rates pc.PACE_CARRIED lists, each other session's ratio is first taken to the reference prompt pace and the
    envelope then carried to the checked run's (`own_shift`, its pace shift; latency_pace_carry)."""
    runs = _clean_itl_means(factor, exclude)
    if factor not in pc.PACE_CARRIED:
        return envelope(runs.values(), budget)
    lo, hi = envelope(pc.at_reference_pace(factor, runs).values(), budget)
    return (round(lo * own_shift, 4), round(hi * own_shift, 4))


def itl_mean_band(factor: str) -> tuple[float, float]:
    """The band as a replay of the newest recorded run sees it (the static band the marks carry)."""
    newest = max(POISSON_ITL_MEAN[factor])
    shift = pc.POISSON_PACE_SHIFT[factor][newest] if factor in pc.PACE_CARRIED else 1.0
    return itl_mean_envelope(factor, POISSON_ITL_MEAN_NEWEST_BUDGET[factor], exclude=newest, own_shift=shift)


def _pace_carry_sentence(factor: str, newest: str, clean: dict[str, float]) -> str:
    if factor not in pc.PACE_CARRIED:
        return ""
    carried = pc.at_reference_pace(factor, clean).values()
    return (f" At this rate the band is carried to the run's own prompt pace (latency_pace_carry: the sessions' "
            f"ratios move with their lone prompts' compute part): the other sessions' ratios at the reference pace "
            f"({pc.reference_part_ms(factor, POISSON_PACE_FLAGGED[factor]):.1f} ms) span {min(carried):.4f}-"
            f"{max(carried):.4f}, and the envelope is multiplied by the checked run's pace shift "
            f"({pc.POISSON_PACE_SHIFT[factor][newest]:.4f} for the newest run, whose prompts' compute part was "
            f"{pc.POISSON_PROMPT_PART_MS[factor][newest]:.1f} ms).")


def _itl_mean_band_sentence(factor: str) -> str:
    newest = max(POISSON_ITL_MEAN[factor])
    clean = _clean_itl_means(factor, newest)
    flagged = sorted(POISSON_PACE_FLAGGED[factor])
    lo, hi = itl_mean_band(factor)
    return (f" Band at {factor}x: the envelope of the other recorded sessions' mean-ITL ratios at this rate "
            f"({min(clean.values()):.4f}-{max(clean.values()):.4f} over {_count(len(clean))} sessions; the runs the "
            f"prompt-pace checks flag are left out: {_and([f'{x[:10]} {x[11:16]}' for x in flagged])}), never the run "
            f"checked, widened by the checked run's noise budget: {lo:.4f}-{hi:.4f} for the newest run "
            f"({newest[:10]} {newest[11:16]}, {POISSON_ITL_MEAN[factor][newest]:.4f}; budget "
            f"+-{POISSON_ITL_MEAN_NEWEST_BUDGET[factor]:.2%}).{_pace_carry_sentence(factor, newest, clean)}")



# Qwen2.5-7B's 1.3x median ITL, measured / simulated with its own session's setup, by run stamp (oldest first), and the
# newest run's median-ITL noise budget (itl_budget, p50): test_latency_closed_loop.py::
# test_poisson_itl_median_band_is_the_recorded_one recomputes both. The median's finding band at 1.3x is their envelope,
# never the run checked, widened by the checked run's budget (it replaced the typed (1.05, 1.25) on 2026-12-03).
POISSON_ITL_MEDIAN_13: dict[str, float] = {
    "2026-11-30T00:37:45Z": 1.1289, "2026-12-01T04:47:40.416640Z": 1.1227, "2026-12-01T06:44:22.000000Z": 1.1070,
    "2026-12-01T11:24:59.000000Z": 1.1224, "2026-12-02T00:05:58.000000Z": 1.1405, "2026-12-02T02:33:51.000000Z": 1.1251,
    "2026-12-02T04:52:35.000000Z": 1.1367, "2026-12-02T07:14:23.000000Z": 1.1082, "2026-12-02T14:18:58.000000Z": 1.1624,
    "2026-12-02T16:29:14.000000Z": 1.1410, "2026-12-02T23:51:19.000000Z": 1.1378, "2026-12-03T08:29:08.000000Z": 1.1250,
    "2026-12-03T12:06:46.000000Z": 1.1311, "2026-12-03T14:16:33.000000Z": 1.1329, "2026-12-03T21:25:39.000000Z": 1.1621,
    "2026-12-03T23:32:23.000000Z": 1.1357, "2026-12-04T00:09:44.000000Z": 1.1893,
    "2026-12-04T09:53:42.000000Z": 1.1543, "2026-12-04T10:05:35.000000Z": 1.1315}
POISSON_ITL_MEDIAN_13_NEWEST_BUDGET = 0.0331


def itl_median_envelope(budget: float, exclude: str | None = None) -> tuple[float, float]:
    """The 1.3x median's band: the other recorded sessions' ratios (never `exclude`, the run checked), widened by
    `budget` (the checked run's noise budget)."""
    return envelope((r for s, r in POISSON_ITL_MEDIAN_13.items() if not same_instant(s, exclude)), budget)


def itl_median_band_13() -> tuple[float, float]:
    """The band as a replay of the newest recorded run sees it (the static band the mark carries)."""
    return itl_median_envelope(POISSON_ITL_MEDIAN_13_NEWEST_BUDGET, exclude=max(POISSON_ITL_MEDIAN_13, default=None))


def _itl_median_band_sentence() -> str:
    newest = max(POISSON_ITL_MEDIAN_13)
    others = [r for s, r in POISSON_ITL_MEDIAN_13.items() if s != newest]
    lo, hi = itl_median_band_13()
    return (f" Band at 1.3x: the other recorded sessions' median-ITL ratios at this rate ({min(others):.4f}-"
            f"{max(others):.4f} over {_count(len(others))} sessions), never the run checked, widened by the checked "
            f"run's noise budget: {lo:.4f}-{hi:.4f} for the newest run ({newest[:10]} {newest[11:16]}, "
            f"{POISSON_ITL_MEDIAN_13[newest]:.4f}; budget +-{POISSON_ITL_MEDIAN_13_NEWEST_BUDGET:.2%}).")


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
    "2026-12-02T16:29:14.000000Z": ((1.0762, 0.0031), (1.1139, 0.0336), (1.1189, 0.0306), 871, 1050),
    "2026-12-02T23:51:19.000000Z": ((1.0666, 0.0014), (1.1030, 0.0344), (1.1443, 0.0524), 922, 1049),
    "2026-12-03T08:29:08.000000Z": ((1.0793, 0.0035), (1.1026, 0.0322), (1.1022, 0.0409), 921, 1048),
    "2026-12-03T12:06:46.000000Z": ((1.0663, 0.0014), (1.1078, 0.0282), (1.1061, 0.0273), 928, 1052),
    "2026-12-03T14:16:33.000000Z": ((1.0706, 0.0016), (1.1004, 0.0282), (1.1186, 0.0401), 923, 1035),
    "2026-12-03T21:25:39.000000Z": ((1.0743, 0.0018), (1.1091, 0.0359), (1.1294, 0.0412), 894, 1037),
    "2026-12-03T23:32:23.000000Z": ((1.0737, 0.0015), (1.1047, 0.0395), (1.1182, 0.0329), 881, 1043),
    "2026-12-04T00:09:44.000000Z": ((1.0734, 0.0012), (1.1086, 0.0455), (1.1387, 0.0416), 881, 1045),
    "2026-12-04T09:53:42.000000Z": ((1.0676, 0.0015), (1.1149, 0.0189), (1.1344, 0.0267), 964, 1064),
    "2026-12-04T10:05:35.000000Z": ((1.0739, 0.0025), (1.0975, 0.0196), (1.1197, 0.0195), 950, 1041),
}


def neighbour_band(ends: list[tuple[float, float]], own_scatter: float) -> tuple[float, float]:
    """Between the neighbouring loads' ratios, each +- its repeat scatter and the checked run's."""
    return runs_band(ends, own_scatter)


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


# The mean ITL's band is derived at every rate it is marked at (ITL_MEAN_DERIVED). At 0.5x it waited, while the
# 2026-12-03 08:29 run (1.1776) lay outside every other session's ratio with no prompt-pace flag; the next session
# (12:06) is the newest run now, and 08:29 one of the others its band is built from. Why 08:29 sits high (explored
# 2026-12-03, docs/RECORDING.md "fourteenth visit"): its own lone-prompt compute part was 20.9 ms, 1.22x the recorded
# reference, though neither check flags it (its session's other runs were slow too, and the session's median was
# not); the simulation at its own pace puts it at 1.114, inside the other sessions.
ITL_MARKS = {
    (QWEN, "0.5"): (pytest.mark.finding("h200-itl-under-load", hardware=CHECKED_ON, quantity="itl_mean",
                                        reason=ITL_UNDER_LOAD + _itl_mean_band_sentence("0.5") + SESSIONS,
                                        expected=itl_mean_band("0.5"), strict=False, band_from="other-runs"),),
    (QWEN, "0.8"): (pytest.mark.finding("h200-itl-under-load", hardware=CHECKED_ON, quantity="itl_mean",
                                        reason=ITL_UNDER_LOAD + _itl_mean_band_sentence("0.8") + SESSIONS,
                                        expected=itl_mean_band("0.8"), strict=False, band_from="other-runs"),
                    pytest.mark.finding("h200-itl-under-load", hardware=CHECKED_ON, quantity="itl_median",
                                        reason=ITL_MEDIAN_BETWEEN_REASON, strict=False, band_from="other-runs")),
    (QWEN, "1"): (pytest.mark.finding("h200-itl-under-load", hardware=CHECKED_ON, quantity="itl_mean",
                                      reason=ITL_UNDER_LOAD + _itl_mean_band_sentence("1") + SESSIONS,
                                      expected=itl_mean_band("1"), strict=False, band_from="other-runs"),
                  pytest.mark.finding("h200-itl-under-load", hardware=CHECKED_ON, quantity="itl_median",
                                      reason=ITL_UNDER_LOAD + CARRIED["poisson.f1:itl_median"].describe(),
                                      strict="poisson.f1:itl_median" not in STRADDLING_THE_GOAL, band_from="other-runs")),
    # the mean's band derived (itl_mean_band; first: latency_run_validity_findings reads it as the clean band); the
    # median, on its noise budget since 2026-12-05, derived too (itl_median_band_13)
    (QWEN, "1.3"): (pytest.mark.finding("h200-itl-under-load", hardware=CHECKED_ON, quantity="itl_mean",
                                        reason=ITL_UNDER_LOAD + _itl_mean_band_sentence("1.3") + SESSIONS,
                                        expected=itl_mean_band("1.3"), strict=False, band_from="other-runs"),
                    pytest.mark.finding("h200-itl-under-load", hardware=CHECKED_ON, quantity="itl_median",
                                        reason=ITL_UNDER_LOAD + _itl_median_band_sentence(),
                                        expected=itl_median_band_13(), strict=False, band_from="other-runs")),
    (LLAMA, "1.3"): (pytest.mark.finding("h200-itl-under-load", hardware=CHECKED_ON, reason=(
        "Llama-3.1-8B at 1.3x (at its knee; median and mean ITL measured and simulated in the rows beside this "
        f"text): decode steps of 50-90 sequences at ~{marginal_cost_span(LLAMA)}x the roofline's per-sequence cost "
        f"(h200-decode-per-sequence-cost: Llama b=64 {_L64 - 1:+.1%}, b=128 {_L128 - 1:+.1%} in the 2026-11-30 "
        "session), the same mechanism as Qwen's."),
        expected=(1.10, 1.25), band_from="other-runs"),),
}


MIXED_PREFILL = "h200-overload-prefill-in-kv-bound-steps"
# The frontend's ingress + egress per request below the knee (mean client TTFT - mean engine queue - mean engine
# prefill), ms, lowest and highest over every recorded Poisson run below the knee of both models
# (test_latency_findings_reasons.py::test_frontend_below_the_knee_is_the_recorded_one recomputes them).
FRONTEND_MS_BELOW_KNEE = (4.9, 19.3)
MIXED_REASON = ("Under overload a prompt's two chunks (8,192 + 7,921 tokens) share steps with ~125 decodes that each "
                "read ~16,600 tokens of KV (~120 GB, 27 ms a step at 4.47 TB/s). The step model takes max(memory, "
                "compute) and hides that traffic under the chunks' 194-228 ms of compute; the engine's prefill part of "
                "TTFT runs longer than simulated (measured and simulated in the prefill_part_of_ttft row), so the "
                "two overlap only partly (or the steps between chunks are longer). Queueing still dominates TTFT "
                "either way (the queueing_share_of_ttft row).")


# Qwen2.5-7B's overload runs in the heavily oversubscribed regime, oldest first (each from a live session):
# LLAMA_OVERLOAD_REASON says they land inside the bands Llama's run set but for QWEN_HEAVY_OUTSIDE (run stamp ->
# quantity -> its measured/simulated ratio outside that band), and every number it quotes is recomputed by
# test_latency_findings_reasons.py::test_overload_reasons_quote_the_recorded_runs.
QWEN_HEAVY_OVERLOAD = tuple(QWEN_HEAVY_PREFILL_PART)  # the runs of latency_overload_heavy's table
HEAVY_BAND = {"queueing_share_of_ttft": (0.88, 0.96), "prefill_part_of_ttft": (1.6, 2.1)}  # HEAVY_MARKS' bands
# Derived from latency_overload_heavy's table: its runs whose prefill part lies outside Llama's band (the queueing
# shares all lie inside theirs; test_overload_reasons_quote_the_recorded_runs recomputes both quantities).
QWEN_HEAVY_OUTSIDE: dict[str, dict[str, float]] = {
    stamp: {"prefill_part_of_ttft": ratio} for stamp, ratio in QWEN_HEAVY_PREFILL_PART.items()
    if not HEAVY_BAND["prefill_part_of_ttft"][0] <= ratio <= HEAVY_BAND["prefill_part_of_ttft"][1]}


def _heavy_outside() -> str:
    """Which of QWEN_HEAVY_OVERLOAD land outside a band Llama's run set, as LLAMA_OVERLOAD_REASON says it."""
    inside = len(QWEN_HEAVY_OVERLOAD) - len(QWEN_HEAVY_OUTSIDE)
    if not QWEN_HEAVY_OUTSIDE:
        return ""
    return f" in {_count(inside)} of them (" + "; ".join(
        f"{stamp[:10]} {stamp[11:16]}: " + ", ".join(f"{q.replace('_', ' ')} {r:.2f}x, outside "
                                                    f"{HEAVY_BAND[q][0]:.2f}-{HEAVY_BAND[q][1]:.2f}"
                                                    for q, r in runs.items())
        for stamp, runs in QWEN_HEAVY_OUTSIDE.items()) + ")"



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
    f"224,688-token pool, 1.58x) lands inside the bands this run set{_heavy_outside()}: the regime, not the model, "
    "sets the split.")
OVERLOAD_MARKS = {
    QWEN: (pytest.mark.finding(MIXED_PREFILL, hardware=CHECKED_ON, quantity="prefill_part_of_ttft", reason=MIXED_REASON,
                               expected=(1.3, 1.6), band_from="checked-run"),
           pytest.mark.finding(MIXED_PREFILL, hardware=CHECKED_ON, quantity="queueing_share_of_ttft", expected=(0.97, 1.0),
                               band_from="checked-run", reason=(
               "The measured queueing share falls below the simulated one by more than its noise budget (both, and "
               "the budget's terms, in the row beside this text; a fixed 1 pp until 2026-12-05, narrower since: the "
               "prefill part is a small share of this run's ~29 s mean TTFT, so its noise moves the share little): "
               "the engine's prefill part of TTFT is longer than simulated ("
               + MIXED_REASON.split(";")[0] + ") and the frontend's ingress + egress, which the simulation omits, "
               f"grows under overload from its {FRONTEND_MS_BELOW_KNEE[0]:.0f}-{FRONTEND_MS_BELOW_KNEE[1]:.0f} ms below "
               "the knee."))),
}
# Overload ITL: the same decode steps of ~70-125 sequences as under Poisson load, in either pool regime.
OVERLOAD_ITL_MARKS = {
    QWEN: (pytest.mark.finding("h200-itl-under-load", hardware=CHECKED_ON, quantity="itl_mean",
                               reason=ITL_UNDER_LOAD + CARRIED["overload:itl_mean"].describe(),
                               strict="overload:itl_mean" not in STRADDLING_THE_GOAL, band_from="other-runs"),
           pytest.mark.finding("h200-prompt-steps-slower-than-modeled", hardware=CHECKED_ON, quantity="output_throughput",
                               reason=("Under overload (128 prompts of 16,113 + 1,024 tokens) the run delivers less than "
                                       "simulated, for the reason its closed loop at C=64 does: " + PROMPT_STEPS_SLOWER
                                       + CARRIED["overload:output_throughput"].describe()),
                               strict="overload:output_throughput" not in STRADDLING_THE_GOAL, band_from="other-runs"),
           pytest.mark.finding(MIXED_PREFILL, hardware=CHECKED_ON, quantity="ttft_p50",
                               reason=MIXED_REASON + CARRIED["overload:ttft_p50"].describe(),
                               strict="overload:ttft_p50" not in STRADDLING_THE_GOAL, band_from="other-runs"),),
}
# A pool oversubscribed ~1.6x (128 prompts against a pinned ~225k-token pool) queues differently from one
# oversubscribed 1.06x (the whole 2M-token pool): its quantities carry the regime in their name, and its
# bands come from the first run of that regime (Llama-3.1-8B, 2026-11-30), so the second model's run
# (Qwen2.5-7B, live, 2026-12-01) is checked against a band it did not set.
HEAVY_MARKS = (pytest.mark.finding(MIXED_PREFILL, hardware=CHECKED_ON, quantity="queueing_share_of_ttft" + HEAVY,
                                   expected=HEAVY_BAND["queueing_share_of_ttft"], reason=LLAMA_OVERLOAD_REASON,
                                   band_from="other-runs"),
               pytest.mark.finding(MIXED_PREFILL, hardware=CHECKED_ON, quantity="prefill_part_of_ttft" + HEAVY,
                                   expected=HEAVY_BAND["prefill_part_of_ttft"], reason=LLAMA_OVERLOAD_REASON,
                                   band_from="other-runs"))
# Llama-3.1-8B's only heavy-regime run (2026-11-30), the run that set HEAVY_BAND: both its quantities are banded at
# test time by the Qwen runs' envelopes (latency_overload_heavy.heavy_share_band and heavy_prefill_band: other runs,
# never Llama's), which is what LLAMA_OVERLOAD_REASON claims ("the regime, not the model, sets the split").
LLAMA_HEAVY_MARKS = HEAVY_MARKS


# Runs whose ITL statistic misses its budget by the decode step's per-sequence excess: the band is set at test time from
# the session's decode.b1..b64 slope (sequence_cost.py), measured apart from the run (test_latency_load.sequence_cost_band).
SEQUENCE_COST_ITL: dict[str, frozenset[tuple[str, str]]] = {
    "itl_mean": frozenset({(LLAMA, "poisson.f0.5"), (LLAMA, "poisson.f0.8"), (LLAMA, "poisson.f1"), (LLAMA, "overload")}),
    "itl_median": frozenset({(LLAMA, "poisson.f0.5"), (LLAMA, "poisson.f0.8"), (LLAMA, "poisson.f1"), (QWEN, "overload"),
                             (LLAMA, "overload")}),
}
SEQUENCE_COST_ITL_REASON = (
    "Under load the decode steps carry 20-125 sequences, each costing more than its KV bytes at the read ceiling "
    "(h200-decode-per-sequence-cost); the ITL runs above the plain simulation by what that excess adds. "
    "Band, set at test time: the simulation whose steps carry the session's own excess per sequence (its decode.b1..b64 "
    "OLS slope less the model's, measured apart from this run; sequence_cost.py) over the plain one, +- this check's "
    "budget and the excess's own scatter over its share of the statistic.")


def sequence_cost_itl_marks(model: str, run: str) -> tuple[pytest.MarkDecorator, ...]:
    return tuple(pytest.mark.finding("h200-decode-per-sequence-cost", hardware=CHECKED_ON, quantity=quantity,
                                     reason=SEQUENCE_COST_ITL_REASON, strict=False, band_from="other-runs")
                 for quantity, runs in SEQUENCE_COST_ITL.items() if (model, run) in runs)
