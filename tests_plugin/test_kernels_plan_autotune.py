"""scripts/device/kernels_plan.py's autotuner part and its error guard, on the CPU with a stand-in runner:
what it writes imports into the recordings test_kernels_autotune replays, the choice is the fastest correct
candidate, and a candidate whose launch raises is recorded as rejected instead of ending the plan."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy import recordings
from pytest_anatomy.importers.device import import_files
from pytest_anatomy.kernels import sgemm
from pytest_anatomy.kernels.registry import DeviceFacts, shape_label
from pytest_anatomy.specs.hardware import match_catalog

# The device name a batch's nvidia-smi reports, and the results folder the importer files it under
GPU = "NVIDIA H200"
CARD = match_catalog(GPU)

PLAN = Path(__file__).resolve().parents[1] / "scripts" / "device" / "kernels_plan.py"


def _plan() -> Any:
    spec = importlib.util.spec_from_file_location("kernels_plan_under_test", PLAN)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class StandInRunner:
    """Times every candidate at its pre-registered prediction x a per-candidate factor; `broken` raises at launch."""

    gpu_name = GPU
    facts = DeviceFacts(sm_count=132)

    def __init__(self, factor: dict[str, float], broken: str) -> None:
        self.factor, self.broken = factor, broken
        self.timed: list[str] = []

    def check(self, v: Any, shape: dict[str, int], seed: int) -> dict[str, Any]:
        if v.id == self.broken:
            raise RuntimeError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (stand-in)")
        return {"shape": dict(shape), "seed": seed, "status": "ok", "rel_error": 1e-7}

    def inputs(self, ladder: str, shape: dict[str, int], dtype: str, seed: int) -> dict[str, Any]:
        return {}

    def prepare(self, v: Any, shape: dict[str, int], inputs: Any) -> tuple[str, str]:
        return (v.id, shape_label(shape))

    def time(self, fn: tuple[str, str], *, runs: int, warmup: int) -> dict[str, Any]:
        self.timed.append(fn[0])
        base = {**sgemm.S9_TILE_PREREGISTERED, **sgemm.S13_TILE_PREREGISTERED}.get(fn, 2.68)  # cuBLAS fp32's recorded 4096^3 time for rung 0
        ms = base * self.factor.get(fn[0], 1.0)
        return {"ms_median": ms, "samples_ms": [ms]}

    def resources(self, v: Any, shape: dict[str, int]) -> list[dict[str, Any]]:
        return []


@pytest.mark.parametrize("family", list(sgemm.TILE_FAMILIES))
def test_autotune_part_records_the_fastest_correct_candidate(tmp_path: Path, family: str):
    plan = _plan()
    cands, table = sgemm.TILE_FAMILIES[family]
    ids = [v.id for v in cands]
    # make the slowest-predicted candidate the fastest measured one, so the choice is not the prediction's
    factor = {ids[-1]: 0.1}  # 0.1 x its prediction is under every other prediction at every shape
    runner = StandInRunner(factor, broken=ids[1])
    args = argparse.Namespace(budget_s=60.0)
    batch = plan.Batch(tmp_path, args)
    batch.doc["provenance"]["nvidia_smi"] = {"summary": {"name": GPU, "driver": "580.159.04"}}
    plan.autotune_sgemm(runner, batch, runs=3, deadline=float("inf"), family=family)
    assert ids[1] not in runner.timed, "a candidate whose check raised was timed"
    import_files([batch.path], tmp_path / "results")
    for shape in sgemm.AUTOTUNE_SHAPES:
        lab = shape_label(shape)
        rec = recordings.load_latest(tmp_path / "results", CARD, "kernels", f"autotune.sgemm.{family}.{lab}")
        assert rec.data["choice"] == ids[-1], rec.data["candidates_ms"]
        assert rec.data["candidates_ms"][ids[1]] is None and ids[1] in rec.data["rejected"]
        assert rec.data["predicted_ms"][ids[0]] == table[(ids[0], lab)]
        cand = recordings.load_latest(tmp_path / "results", CARD, "kernels", f"sgemm.{ids[0]}.{lab}")
        assert cand["time"].value > 0 and cand.data["baseline_rung"] == "s0-cublas"
    assert json.loads(batch.path.read_text())["runs"], "nothing written"


def test_a_raising_check_is_recorded_not_fatal():
    plan = _plan()
    v = sgemm.S9_CANDIDATES[2]
    out = plan._guarded_check(StandInRunner({}, broken=v.id), v, dict(sgemm.TIMING_SHAPE), 1)
    assert out["status"] == "error" and "LAUNCH_OUT_OF_RESOURCES" in out["error"]


def test_rungs_option_checks_and_times_only_the_named_rung_beside_its_baseline():
    """--rungs s13-fp32-multistage: the ladder parts keep cuBLAS fp32 and s13 only, the autotuner s13's family only."""
    plan = _plan()
    plan.RUNGS.update({"s13-fp32-multistage"})
    try:
        assert [v.id for v in plan.selected(list(sgemm.LADDER) + [sgemm.BF16_BASELINE])] == ["s0-cublas",
                                                                                             "s13-fp32-multistage"]
        assert plan.tuned_families() == ["s13-tile"]
    finally:
        plan.RUNGS.clear()
    assert plan.tuned_families() == list(sgemm.TILE_FAMILIES)
