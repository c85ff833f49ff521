"""Mean TTFT and mean TPOT at a fixed concurrency (AIConfigurator's measured vLLM rows on H100,
H200 and B200), predicted with the H200 calibration transferred (theory/transfer.py)."""

from __future__ import annotations

from typing import Any

import pytest
from sweeps import (SPREAD_WHY, Case, cases, closed_loop, kv_queue_band, parametrize, ratio_band, replay_targets,
                    serial_allreduce_band, transfer_for)
from validation_findings import (KV_QUEUE_REASON, SERIAL_ALLREDUCE_REASON, SERVING_CANDIDATES, TPOT_APART,
                                 finding_marks, route, set_apart)

from pytest_anatomy.theory.prediction import Prediction, Term

SOURCE = "aiconfigurator"


def _args(case: Case) -> tuple[Any, ...]:
    return (case.hardware, case.s("catalog_model"), case.s("precision"), case.s("tp"), case.s("concurrency"),
            case.s("isl"), case.s("osl"))


def _routes(transfer: Any, case: Case) -> list[Any]:
    meas = dict(case.measured)
    routes = []
    for metric, (central, lo, hi) in closed_loop(transfer, *_args(case)).items():
        causes: tuple[Any, ...] = ()
        band = ratio_band(central, lo, hi)
        if metric == "ttft_mean" and not band[0] <= meas[metric] / central <= band[1]:  # only misses need it
            q_lo, q_hi = kv_queue_band(transfer, *_args(case), case.s("engine_version"))
            causes = (("kv-pool-smaller-than-concurrency", KV_QUEUE_REASON,
                       ratio_band(central, min(lo, q_lo), max(hi, q_hi))),)
        if metric == "tpot_mean" and case.s("tp") > 1 and not band[0] <= meas[metric] / central <= band[1]:
            s_lo, s_hi = serial_allreduce_band(transfer, *_args(case))
            causes = (("tp-allreduce-serialized-with-compute", SERIAL_ALLREDUCE_REASON,
                       ratio_band(central, min(lo, s_lo), max(hi, s_hi))),)
        group = "tp1" if metric == "tpot_mean" and case.s("tp") == 1 else ""  # no all-reduce (GROUPS)
        routes.append(route(meas[metric], central, band, metric, causes, group))
    return routes


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """(target, case) for every experiment of each card folder holding AIConfigurator recordings."""
    if "target" not in metafunc.fixturenames:
        return
    targets, results = replay_targets(metafunc.config, SOURCE)
    transfer, why_none = transfer_for(targets, results)
    if transfer is None:
        targets = []
    params = []
    for t in targets:
        mine = cases(SOURCE, t.name, results)
        runs = [c.recording for c in mine]
        routes = set_apart(t.name, SOURCE, "vllm", [_routes(transfer, c) for c in mine], [c.id for c in mine], runs,
                           TPOT_APART.get(t.name, ()))
        marks = finding_marks(t.name, SOURCE, "vllm", routes, SERVING_CANDIDATES, runs, [c.id for c in mine])
        params += [pytest.param(t, c, marks=m, id=f"{t.name}-{c.id}") for c, m in zip(mine, marks)]
    parametrize(metafunc, ["target", "case"], params, SOURCE, why_none)


@pytest.mark.gpu
def test_ttft_and_tpot_under_concurrency(target: Any, case: Case, measured: Any, reconcile: Any,
                                         h200_transfer: Any) -> None:
    rec = measured(case.recording, suite=f"third-party/{SOURCE}")
    model = case.s("catalog_model")
    failures = []
    for metric, (central, lo, hi) in closed_loop(h200_transfer, *_args(case)).items():
        pred = Prediction(
            central, "s", "closed loop of C requests, synchronized waves, budget 8192, all-reduce 10 us "
                          "(theory/transfer.closed_loop over latency.StepModel, one TP rank)",
            {"concurrency": case.s("concurrency"), "isl": case.s("isl"), "osl": case.s("osl"), "tp": case.s("tp"),
             "precision": case.s("precision"), "hardware": target.name, "engine": "vllm"},
            terms=(Term("band low", lo, "s", "desynchronized or synchronized, budget 2048-16384, all-reduce 5 us"),
                   Term("band high", hi, "s", "same sweep, all-reduce 20 us")),
            notes=(h200_transfer.describe(),))
        try:  # both metrics are reconciled (and recorded) even when the first diverges
            reconcile(metric, pred, rec[f"{case.key}.{metric}"], ratio=ratio_band(central, lo, hi), why=SPREAD_WHY,
                      model=model)
        except AssertionError as exc:
            failures.append(str(exc))
    if failures:
        raise AssertionError("\n".join(failures))
