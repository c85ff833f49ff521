"""The tuning ladder's predictions for the planned H200 run (issue 14), as committed before it ran.

tests_deployment/preregistered.json holds, per model and workload, every rung's configuration, its
predicted metrics and its predicted gains against its parent, computed by theory/deployment.py
from the calibration of the newest recorded H200 session (its constants are stored in the file,
so the file can be recomputed from them whatever sessions are recorded later). The n-gram rung's
gains are not numbers until the run measures the acceptance: the file gives t_decode and t_verify,
and the gain is E x t_decode / t_verify with E from the engine's counters.

    python -m pytest_anatomy.deployment_ladder > tests_deployment/preregistered.json
"""

from __future__ import annotations

import hashlib
import json
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
    return {m: {w: dp.run_ladder(load_model(m), hw, ceilings, calib, wf.generate(wf.load(workload_path(w))))
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
            work = wf.generate(wf.load(workload_path(w)))
            best = pl.ranked(pl.evaluate(load_model(m), m, hw, ceilings, calib, work, 1), work.spec.slo)
            out.setdefault(m, {})[w] = pl.describe(best[0]) if best else {"none": "no configuration meets the SLO"}
    return out


def ladder_with_acceptance(calibration: dict[str, Any], model: str, workload: str, tokens_per_step: float,
                           draft_fraction: float = 1.0) -> list[dict[str, Any]]:
    """One ladder with the n-gram rung simulated at a measured E (tokens per verify step) and share of
    decode steps that drafted: the prediction a recorded n-gram run is reconciled with (its acceptance
    measured, never predicted)."""
    ceilings, calib = calibration_from_record(calibration)
    return dp.run_ladder(load_model(model), get_hardware(HARDWARE), ceilings, calib,
                         wf.generate(wf.load(workload_path(workload))), tokens_per_step, draft_fraction)


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
    print(json.dumps(preregistration(), indent=1))
