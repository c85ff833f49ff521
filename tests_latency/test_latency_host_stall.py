"""h200-decode-stalled-run's numbers (lf.HOST_STALL) recomputed from the recordings and their raw timelines: the
flagged decode runs of test_latency_steps.py, beside the same visit's clean runs."""

from __future__ import annotations

import latency_findings as lf
import pytest
from latency_setups import raw_timeline, run_validity, step_intervals


def _frontend_lags(rec) -> list[float]:
    """t - engine_t on a decode run's pure full-batch steps, from its session's raw timeline (results/<hw>/batches)."""
    steps = raw_timeline(rec)
    if steps is None:
        raise AssertionError(f"{rec.name}@{rec.recorded_at}: no raw timeline")
    batch = rec.data["run"]["settings"]["batch"]
    return [s.t - s.engine_t for s in steps if s.ctx_tokens == 0 and s.gen_requests == batch and s.engine_t is not None]


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False)
def test_host_stall_numbers_are_the_recorded_ones(session_rec):
    """lf.HOST_STALL (every number h200-decode-stalled-run's reason quotes) recomputed from the recordings and their
    raw timelines: each flagged run's engine-clock steps, how many fall under its session's b=1 step, the frontend's
    lag on them, the same visit's clean run at that batch and 8,192-token prefill beside it, and where the runs carry
    NVML samples (their conditions), the lowest SM clock of each."""
    import statistics

    from pytest_anatomy.stats import percentile

    model = lf.QWEN
    for stamp, numbers in lf.HOST_STALL.items():
        same = lf.HOST_STALL_SAME_VISIT[stamp]
        b = int(numbers["batch"])
        run = session_rec(f"{model}.decode.b{b}", not_after=stamp)
        clean = session_rec(f"{model}.decode.b{b}", not_after=same)
        assert (run.recorded_at, clean.recorded_at) == (stamp, same)
        assert (model, stamp, b) in lf.STALLED_DECODE_RUNS and not run_validity(clean).flagged
        steps, clean_steps = step_intervals(run), step_intervals(clean)
        b1 = statistics.median(step_intervals(session_rec(f"{model}.decode.b1", beside=run)))
        check = run_validity(run)
        lags, clean_lags = _frontend_lags(run), _frontend_lags(clean)
        prefill = [session_rec(f"{model}.prefill.l8192", beside=r)["engine_prefill_s.median"].value for r in (run, clean)]
        got = {"batch": b, "steps": len(steps), "median_ms": check.median_s * 1e3, "mean_ms": statistics.fmean(steps) * 1e3,
               "std_ms": statistics.pstdev(steps) * 1e3, "min_ms": min(steps) * 1e3, "max_ms": max(steps) * 1e3,
               "mean_over_median": check.mean_over_median, "short_share": check.short_share,
               "below_b1": sum(x < b1 for x in steps), "b1_ms": b1 * 1e3, "lag_median_ms": percentile(lags, 50) * 1e3,
               "lag_p90_ms": percentile(lags, 90) * 1e3, "lag_max_ms": max(lags) * 1e3,
               "clean_median_ms": statistics.median(clean_steps) * 1e3, "clean_std_ms": statistics.pstdev(clean_steps) * 1e3,
               "clean_lag_p90_ms": percentile(clean_lags, 90) * 1e3, "prefill_8192_apart": abs(prefill[0] / prefill[1] - 1)}
        attempts = [bool(o.get("flagged")) for o in run.data["run"].get("other_attempts") or ()] + [check.flagged]
        got["attempts"], got["flagged_attempts"] = len(attempts), sum(attempts)
        if "sm_mhz_min" in numbers:
            got["sm_mhz_min"], got["clean_sm_mhz_min"] = (r.data["run"]["conditions"]["sm_mhz_min"] for r in (run, clean))
        assert got == pytest.approx(numbers, abs=5e-4), stamp
