"""The load runs' shared arithmetic, for test_latency_load.py and the load suites that read the same runs
(test_latency_closed_loop.py, test_latency_closed_throughput.py, test_latency_sequence_cost.py and the checks of the
load findings' tables): a run's workload as designed (designed_workload, overload_workload, run_workload), its label,
simulation and setup (run_label, simulate_run, simulate_overload, load_setup, setup_kw, run_of), its noise budgets
(mean_scatter, itl_budget, ttft_budget) and its measured/simulated ratio with that ratio's repeat scatter
(engine_ttft_p50_s, load_ratio, load_scatter). Split out of test_latency_load.py on 2026-12-07 to keep modules
under 500 lines.
"""

from __future__ import annotations

from latency_setups import median_scatter, step_budget

from pytest_anatomy.theory import serving as sv


def designed_workload(rec) -> sv.Workload:
    s = rec.data["run"]["settings"]
    if rec.data["run"]["kind"] == "poisson":
        return sv.Workload.poisson(s["rate"], s["requests"], s["input_len"], s["output_len"], s["seed"],
                                   normalize=bool(s.get("normalized_like_bench_serve")))
    return sv.Workload.closed(s.get("concurrency") or s["requests"], s["requests"], s["input_len"], s["output_len"])


def run_workload(rec) -> sv.Workload:
    """Any load run's workload as designed: closed, Poisson, or the overload wave."""
    return overload_workload(rec) if rec.data["run"]["kind"] == "overload" else designed_workload(rec)


def overload_workload(rec) -> sv.Workload:
    """The overload run as one closed wave of every request."""
    s = rec.data["run"]["settings"]
    return sv.Workload.closed(s["requests"], s["requests"], s["input_len"], s["output_len"])


def run_label(rec) -> str:
    return f"{rec.name}: {rec.data['run']['settings']}"


def simulate_run(setup, rec) -> sv.SimResult:
    return setup.simulate(designed_workload(rec))


def simulate_overload(setup, rec) -> sv.SimResult:
    return setup.simulate(overload_workload(rec))


def setup_kw(setup) -> dict[str, str]:
    return {"model": setup.model.name, "hardware": setup.label}


def load_setup(request, model: str, rec):
    """The model's setup built from the session that measured `rec` (its ceilings, engine and, for
    the model the calibration is fitted on, its fit points): a run is never predicted with another
    session's engine limits or clocks."""
    return request.getfixturevalue("setup_beside")(model, rec)


def run_of(setup, rec) -> str:
    """The run's name without its model ("closed.c8", "poisson.f0.5", "overload"): model names hold dots."""
    return rec.name.removeprefix(f"{setup.model.name}.")


def mean_scatter(rec, stat: str) -> float:
    """2 standard errors of a recording's mean `stat`, relative to it (std / sqrt(n) of its samples)."""
    m = rec.measurements
    return 2 * m[f"{stat}.std"]["value"] / m[f"{stat}.n"]["value"] ** 0.5 / m[f"{stat}.mean"]["value"]


def itl_budget(setup, res: sv.SimResult, rec, stat: str) -> dict[str, float]:
    """The noise budget of a simulated ITL statistic ("p50" or "mean"): the median is a decode step
    (memory-bound: the bandwidth ceiling's scatter); the mean adds prompt-carrying steps, compute-bound, whose
    share of it is the simulation's own (1 - simulated median / simulated mean), never the measurement's."""
    setup.priced_in_its_session(rec)
    pred = sv.as_prediction(res, "itl", stat, "s", run_label(rec))
    if stat == "p50":
        return step_budget(setup, pred, median_scatter(rec, "aggregate.itl_s"), compute_share=0.0)
    share = max(0.0, 1 - res.stat("itl", "p50") / res.stat("itl", "mean"))
    return step_budget(setup, pred, mean_scatter(rec, "aggregate.itl_s"), compute_share=share)


def ttft_budget(setup, pred, rec, quantity: str) -> dict[str, float]:
    """The noise budget of a TTFT median below the knee (`quantity`: "ttft_p50", the client's, or "engine_ttft_p50"):
    the run's repeat scatter (load_ratio's: 2 standard errors of the median) and the session's ceilings and
    calibration spread, the TTFT priced as compute-bound (a 1,024-token prefill; step_budget)."""
    return step_budget(setup, pred, load_scatter(rec, quantity), compute_share=1.0)


# --- bands carried over from the sessions calibrated before GEMM timings existed -----------------------
def engine_ttft_p50_s(rec) -> float:
    """A load run's engine-side TTFT (no frontend): its median queue + median prefill, engine clock."""
    return rec["aggregate.engine.queue_s.median"].value + rec["aggregate.engine.prefill_s.median"].value


def load_ratio(setup, rec, quantity: str) -> tuple[float, float]:
    """(measured / predicted, the measurement's repeat scatter: 2 standard errors, relative) of one load run's
    `quantity` ("ttft_p50", "engine_ttft_p50", "itl_median", "itl_mean", "output_throughput") under `setup`."""
    res = setup.simulate(run_workload(rec))
    if quantity == "output_throughput":
        return rec["aggregate.output_throughput_tok_per_s"].value / res.output_throughput, load_scatter(rec, quantity)
    if quantity == "engine_ttft_p50":
        return engine_ttft_p50_s(rec) / res.stat("ttft", "p50"), load_scatter(rec, quantity)
    stat, key, spread = _LOAD_STATS[quantity]
    return (rec[f"{spread}.{'median' if stat != 'itl' or key == 'p50' else 'mean'}"].value / res.stat(stat, key),
            load_scatter(rec, quantity))


_LOAD_STATS = {"ttft_p50": ("ttft", "p50", "aggregate.ttft_s"), "itl_median": ("itl", "p50", "aggregate.itl_s"),
               "itl_mean": ("itl", "mean", "aggregate.itl_s")}


def load_scatter(rec, quantity: str) -> float:
    """load_ratio's repeat scatter of `quantity` (any it takes): the measurement's alone, no simulation needed."""
    if quantity in ("itl_mean", "output_throughput"):  # the mean's own standard error (the throughput's: the run's
        return mean_scatter(rec, "aggregate.itl_s")    # time is mostly its decode steps)
    if quantity == "engine_ttft_p50":  # below the knee the engine's TTFT is its prefill (queue ~10 us)
        return median_scatter(rec, "aggregate.engine.prefill_s")
    return median_scatter(rec, _LOAD_STATS[quantity][2])
