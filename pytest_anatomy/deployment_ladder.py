"""The tuning ladder's predictions for the planned H200 run (issue 14), as committed before it ran.

tests_deployment/preregistered.json holds, per model and workload, every rung's configuration, its
predicted metrics and its predicted gains against its parent, computed by theory/deployment.py
from the calibration of the newest recorded H200 session (its constants are stored in the file,
so the file can be recomputed from them whatever sessions are recorded later). The n-gram rung's
gains are not numbers until the run measures the acceptance: the file gives t_decode and t_verify,
and the gain is E x t_decode / t_verify with E from the engine's counters.

    python -m pytest_anatomy.deployment_ladder > tests_deployment/preregistered.json

tests_deployment/replan.json is `plan`'s recommendation as it stands after cause test graphs-to-budget (CUDA graphs
captured to the budget), from the same calibration, pre-registered before its device run (step `replan`):

    python -m pytest_anatomy.deployment_ladder replan > tests_deployment/replan.json
"""

from __future__ import annotations

import hashlib
import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.specs import workload_file as wf
from pytest_anatomy.theory import deployment as dp
from pytest_anatomy.theory.latency import Ceilings, EngineCalibration

REPO = Path(__file__).resolve().parents[1]
WORKLOAD_DIR = REPO / "tests_deployment" / "workloads"
MODELS = ("qwen2.5-7b", "llama-3.1-8b")
WORKLOADS = ("chat", "rag")
HARDWARE = "h200"


def workload_path(name_or_path: str) -> Path:
    """A workload file: a path, or a name in tests_deployment/workloads/."""
    p = Path(name_or_path)
    return p if p.suffix == ".json" or p.exists() else WORKLOAD_DIR / f"{name_or_path}.json"


def generated(name_or_path: str) -> wf.GeneratedWorkload:
    """A workload file's seeded requests (workload_file.generate), generated once per distinct parsed file: a ladder,
    each n-gram rung's ladder at its measured E and each error-budget ladder generated the same two workloads again
    (2026-12-06: 201 generations, ~6 s of tests_deployment)."""
    return _generated(wf.load(workload_path(name_or_path)))


@lru_cache(maxsize=None)
def _generated(spec: wf.WorkloadSpec) -> wf.GeneratedWorkload:
    # Keyed on the whole parsed file, which alone determines the requests; the result is frozen (tuples), so sharing
    # it cannot leak one caller's change into another's
    return wf.generate(spec)


def calibration_record(ceilings: Ceilings, calib: EngineCalibration, recordings: tuple[str, ...]) -> dict[str, Any]:
    return {"recordings": list(recordings), "bandwidth": ceilings.bandwidth, "peak": ceilings.peak,
            "step_overhead_s": calib.step_overhead_s, "compute_efficiency": calib.compute_efficiency,
            "efficiency_by_tokens": [list(p) for p in calib.efficiency_by_tokens], "name": calib.name}


def calibration_from_record(calibration: dict[str, Any]) -> tuple[Ceilings, EngineCalibration]:
    hw = get_hardware(HARDWARE)
    ceilings = Ceilings.measured(hw, bandwidth=calibration["bandwidth"], peak=calibration["peak"],
                                 source=", ".join(calibration["recordings"]))
    calib = EngineCalibration(calibration["name"], calibration["step_overhead_s"], calibration["compute_efficiency"],
                              efficiency_by_tokens=tuple((int(t), float(e)) for t, e in calibration["efficiency_by_tokens"]))
    return ceilings, calib


def newest_calibration(results: Path) -> dict[str, Any]:
    """The newest recorded H200 session's calibration (cli_calibration's recipe), as a record."""
    from pytest_anatomy.cli_calibration import RecordedCalibration, recorded_calibration

    rc = recorded_calibration(results, get_hardware(HARDWARE))
    if not isinstance(rc, RecordedCalibration):
        raise ValueError(f"no recorded {HARDWARE} calibration under {results}: {rc}")
    return calibration_record(rc.ceilings, rc.calib, rc.recordings)


def ladders(calibration: dict[str, Any]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """model -> workload -> the ladder's rows (theory/deployment.run_ladder)."""
    ceilings, calib = calibration_from_record(calibration)
    hw = get_hardware(HARDWARE)
    return {m: {w: dp.run_ladder(load_model(m), hw, ceilings, calib, generated(w))
                for w in WORKLOADS} for m in MODELS}


def plan_tops(calibration: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """model -> workload -> `plan`'s top configuration on one GPU for the workload's own SLO: the
    recommendation the device run checks (its measured TTFT p99 and ITL p99 within the SLO)."""
    from pytest_anatomy.theory import deployment_plan as pl

    ceilings, calib = calibration_from_record(calibration)
    hw = get_hardware(HARDWARE)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for m in MODELS:
        for w in WORKLOADS:
            work = generated(w)
            best = pl.ranked(pl.evaluate(load_model(m), m, hw, ceilings, calib, work, 1), work.spec.slo)
            out.setdefault(m, {})[w] = pl.describe(best[0]) if best else {"none": "no configuration meets the SLO"}
    return out


# The recorded engines of preregistered.json's plan_top (the same arguments less the graph capture): model -> batch. Their
# KV pools are what replan's engines should get: with the V2 runner the graph pool lands on top of
# gpu_memory_utilization, and Llama's pool was 118,699 blocks with graphs to 512 (batches 20261203T142608Z, 143336Z) and
# to 8,192 (cause test graphs-to-budget, 20261203T184616Z) alike.
PLAN_TOP_ENGINES = {"qwen2.5-7b": "20261203T001319Z", "llama-3.1-8b": "20261203T143336Z"}
REPLAN_START_S = 150.0  # an engine start capturing 614 graphs: cause test graphs-to-budget's 149 s (imports included)


def recorded_pool_blocks(model: str, engine_kwargs: dict[str, Any], results: Path = REPO / "results") -> int:
    """The KV pool (blocks) the recorded plan_top engine of `model` resolved: its arguments are `engine_kwargs` less the
    graph capture (PLAN_TOP_ENGINES names the kept batch)."""
    want = {k: v for k, v in engine_kwargs.items() if k != "max_cudagraph_capture_size"}
    batch = results / HARDWARE / "batches" / PLAN_TOP_ENGINES[model] / "deployment.json"
    runs = json.loads(batch.read_text())["runs"]
    engine = next(r for r in runs if r["id"].startswith(f"{model}.engine.") and r.get("engine_kwargs") == want)
    return int(engine["result"]["resolved"]["num_gpu_blocks"])


def replan(pre: dict[str, Any]) -> dict[str, Any]:
    """replan.json: plan_tops from preregistered.json's calibration as the planner recommends them now, each with its
    KV pool (the capacity ledger's, and the recorded pool of the same engine less the graph capture) and the engine
    start the device plan budgets for it."""
    from pytest_anatomy.theory import capacity as cap

    tops = json.loads(json.dumps(plan_tops(pre["calibration"])))
    for m, by_w in tops.items():
        for w, top in by_w.items():
            kw = top["engine_kwargs"]
            block = cap.kv_bytes_per_token(load_model(m), kw.get("kv_cache_dtype", "auto")).value * 16
            recorded = recorded_pool_blocks(m, kw)
            top["kv_pool"] = {
                "ledger_blocks": top["kv_pool_blocks"], "ledger_bytes": top["kv_pool_blocks"] * block,
                "expected_blocks": recorded, "expected_bytes": recorded * block, "block_bytes": block,
                "expected_from": f"batch {PLAN_TOP_ENGINES[m]}: the same engine arguments less the graph capture",
                "why": "the V2 runner's graph pool lands on top of gpu_memory_utilization, so capturing to the budget "
                       "leaves the KV pool as it was: expected_blocks exactly. The capacity ledger's pool (the one "
                       "plan simulates) replays bf16 weights, a lower bound with fp8 weights (docs/DEPLOYMENT.md)"}
            top["start_s_estimate"] = REPLAN_START_S
            top["changed_from_plan_top"] = {k: v for k, v in kw.items()
                                            if pre["plan_top"][m][w]["engine_kwargs"].get(k) != v}
    return {
        "what": "plan's recommendation after cause test graphs-to-budget (CUDA graphs captured to the token budget), "
                "on vLLM 0.26.0, H200, dummy weights: predictions written before the run (step replan)",
        "target": "TTFT p99 and ITL p99 at or under the workload's SLO (one-sided); the KV pool exactly expected_blocks",
        "hardware": HARDWARE, "calibration": pre["calibration"],
        "workload_sha256": {w: hashlib.sha256(workload_path(w).read_bytes()).hexdigest() for w in WORKLOADS},
        "plan_top": tops}


def ladder_with_acceptance(calibration: dict[str, Any], model: str, workload: str, tokens_per_step: float,
                           draft_fraction: float = 1.0) -> list[dict[str, Any]]:
    """One ladder with the n-gram rung simulated at a measured E (tokens per verify step) and share of
    decode steps that drafted: the prediction a recorded n-gram run is reconciled with (its acceptance
    measured, never predicted)."""
    ceilings, calib = calibration_from_record(calibration)
    return dp.run_ladder(load_model(model), get_hardware(HARDWARE), ceilings, calib,
                         generated(workload), tokens_per_step, draft_fraction)


def preregistration(results: Path = REPO / "results") -> dict[str, Any]:
    calibration = newest_calibration(results)
    return {
        "what": "issue 14's tuning ladder on vLLM 0.26.0, H200, dummy weights: predictions written before the run",
        "target": "each rung's predicted gain (metric / parent's metric) within 20% of the measured gain",
        "hardware": HARDWARE,
        "calibration": calibration,
        "assumed": {"eager_launches_per_layer": dp.EAGER_LAUNCHES_PER_LAYER, "eager_launch_s": dp.EAGER_LAUNCH_S},
        "workload_sha256": {w: hashlib.sha256(workload_path(w).read_bytes()).hexdigest() for w in WORKLOADS},
        "ngram": "gains need the measured E: the rung is simulated with it (deployment_ladder.ladder_with_acceptance); "
                 "closed form at the parent's batch: speedup = E x terms.t_decode_s / terms.t_verify_s",
        "ladders": ladders(calibration),
        "plan_top": plan_tops(calibration),
    }


if __name__ == "__main__":
    if sys.argv[1:] == ["replan"]:
        print(json.dumps(replan(json.loads((REPO / "tests_deployment" / "preregistered.json").read_text())), indent=1))
    else:
        print(json.dumps(preregistration(), indent=1))
