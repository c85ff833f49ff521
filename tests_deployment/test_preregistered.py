"""tests_deployment/preregistered.json: the ladder's predictions for the planned H200 run, committed
before it. It must equal what the theory computes today from the calibration it names; a change to
the theory that moves a number fails here, and is then either a mistake or a new preregistration
(regenerate: python -m pytest_anatomy.deployment_ladder > tests_deployment/preregistered.json,
before any run it is checked against)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy import deployment_ladder as dl
from pytest_anatomy.theory import deployment as dp

FILE = Path(__file__).parent / "preregistered.json"
PRE = json.loads(FILE.read_text())
REPLAN = json.loads((Path(__file__).parent / "replan.json").read_text())
# What replan.json's plans add to the plan_top preregistered.json froze (the planner before graphs-to-budget): the graph
# capture to the budget in the engine arguments, its price, the KV pool and the start the device plan budgets.
CAPTURE_KEYS = ("cudagraphs", "kv_pool_blocks", "kv_pool", "start_s_estimate", "changed_from_plan_top")


def _same(a: Any, b: Any, where: str = "") -> list[str]:
    """Differences between two JSON trees; floats to 1e-9 relative (a libm's last bit, not a model change)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in _same(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _same(x, y, f"{where}[{i}]")]
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return [] if math.isclose(a, b, rel_tol=1e-9) else [f"{where}: {a!r} != {b!r}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def test_the_file_is_what_the_theory_computes_today() -> None:
    today = json.loads(json.dumps(dl.ladders(PRE["calibration"])))
    assert _same(PRE["ladders"], today) == []
    assert PRE["assumed"] == {"eager_launches_per_layer": dp.EAGER_LAUNCHES_PER_LAYER,
                              "eager_launch_s": dp.EAGER_LAUNCH_S}


def _without_notes(plan_tops: dict[str, Any]) -> dict[str, Any]:
    """plan_top without its notes: commentary on what the simulation leaves unpriced, which grows as causes are found
    (the CUDA-graph note came after the file, 2026-12-03), not a prediction or an engine argument."""
    return {m: {w: {k: v for k, v in top.items() if k != "notes"} for w, top in by_w.items()}
            for m, by_w in plan_tops.items()}


def _without_capture(plan_tops: dict[str, Any]) -> dict[str, Any]:
    """A plan as the planner made it before it captured graphs to the budget."""
    return {m: {w: {**{k: v for k, v in top.items() if k not in CAPTURE_KEYS}, "engine_kwargs": {
        k: v for k, v in top["engine_kwargs"].items() if k != "max_cudagraph_capture_size"}}
        for w, top in by_w.items()} for m, by_w in plan_tops.items()}


def test_the_recommended_plans_are_todays() -> None:
    """replan.json holds today's recommendations (from preregistered.json's calibration); preregistered.json's plan_top,
    which its runs were judged by, is the same plan less the graph capture and its price: the predicted metrics and the
    KV pool plan simulated are unchanged (the step model prices every step as captured; the V2 runner's graph pool is
    not taken from the KV pool)."""
    assert _same(REPLAN["calibration"], PRE["calibration"]) == []
    today = json.loads(json.dumps(dl.replan(PRE)))
    assert _same(_without_notes(REPLAN["plan_top"]), _without_notes(today["plan_top"])) == []
    assert _same(_without_notes(PRE["plan_top"]), _without_capture(_without_notes(today["plan_top"]))) == []
    for doc in (PRE, REPLAN):
        for model, by_workload in doc["plan_top"].items():
            for workload, top in by_workload.items():
                slo = json.loads(dl.workload_path(workload).read_text())["slo"]
                assert top["predicted"]["ttft_p99_s"] * 1e3 <= slo["ttft_ms"], (model, workload)
                assert top["predicted"]["itl_p99_s"] * 1e3 <= slo["itl_ms"], (model, workload)


@pytest.mark.parametrize("model", dl.MODELS)
@pytest.mark.parametrize("workload", dl.WORKLOADS)
def test_the_replan_captures_graphs_to_its_budget_and_prices_them(model: str, workload: str) -> None:
    """Each re-planned engine differs from the old plan_top only by max_cudagraph_capture_size = its budget; its graphs
    (531 PIECEWISE + 83 FULL at 8,192 tokens and max_num_seqs 1,024, as vLLM resolved them on the H200) fit in what
    gpu_memory_utilization leaves, and its pool is priced at the graphs-to-budget run's 4.31 GiB."""
    top = REPLAN["plan_top"][model][workload]
    budget = top["engine_kwargs"]["max_num_batched_tokens"]
    assert top["changed_from_plan_top"] == {"max_cudagraph_capture_size": budget}
    g = top["cudagraphs"]
    assert (g["piecewise_graphs"], g["full_graphs"], g["fits"]) == (531, 83, True)
    assert round(g["pool_bytes"] / 2**30, 2) == 4.31 and g["pool_bytes"] < g["headroom_bytes"]
    pool = top["kv_pool"]
    assert pool["expected_bytes"] == pool["expected_blocks"] * pool["block_bytes"]
    assert pool["ledger_blocks"] < pool["expected_blocks"]  # bf16 weights replayed: a lower bound with fp8 weights


def test_the_workload_files_are_the_ones_predicted() -> None:
    assert REPLAN["workload_sha256"] == PRE["workload_sha256"]
    assert PRE["workload_sha256"] == {w: hashlib.sha256(dl.workload_path(w).read_bytes()).hexdigest()
                                      for w in dl.WORKLOADS}


def test_the_calibration_is_the_newest_recorded_sessions() -> None:
    newest = dl.newest_calibration(dl.REPO / "results")
    if newest["recordings"] != PRE["calibration"]["recordings"]:
        pytest.skip("a newer H200 session is recorded; the preregistration stays pinned to the calibration it names")
    assert _same(PRE["calibration"], newest) == []


@pytest.mark.parametrize("model", dl.MODELS)
@pytest.mark.parametrize("workload", dl.WORKLOADS)
def test_every_rung_has_a_parent_and_a_predicted_gain(model: str, workload: str) -> None:
    rows = PRE["ladders"][model][workload]
    names = [r["step"] for r in rows]
    assert names == ["baseline", "limits", "prefix_cache", "fp8_weights", "fp8_kv", "eager", "ngram"]
    for r in rows[1:]:
        assert r["parent"] in names[:names.index(r["step"])]
        if r["step"] == "ngram":  # needs the measured acceptance: coefficients, no numbers
            assert all(v is None for v in r["gain"].values())
            assert r["terms"]["t_verify_s"] > r["terms"]["t_decode_s"] > 0
        else:
            assert all(r["gain"][m] is not None for m in dp.METRICS)
