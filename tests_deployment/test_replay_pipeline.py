"""The path a device run takes to a verdict, on a CPU with a synthetic batch (made here, labelled
synthetic, never filed under results/): the device plan's output imported by import-device into
results/<hw>/deployment/, then test_ladder_replay.py reconciling it. The synthetic batch holds no raw requests, so
the gain checks have no resampled interval to budget (gain_budget.py) and skip saying so: the 20% target is no
tolerance to fall back on. (Before the budget, 2026-12-05: a rung at 1.1 x its predicted gain agreed, one at 1.5 x
failed; a synthetic raw file that would restore that check is not yet written.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_anatomy import recordings
from pytest_anatomy.importers.device import import_files
from pytest_anatomy.deployment_ladder import HARDWARE

HERE = Path(__file__).parent
PRE = json.loads((HERE / "preregistered.json").read_text())
MODEL, WORKLOAD = "qwen2.5-7b", "chat"


def _run(step: str, metrics: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"{MODEL}.{WORKLOAD}.{step}", "model": MODEL, "workload": WORKLOAD, "step": step,
            "engine_kwargs": {}, "result": {"metrics": metrics, "counters": {
                "vllm:prefix_cache_hits": 0.0, "vllm:spec_decode_num_accepted_tokens_per_pos": {"0": 3.0}}}}


def _batch() -> dict[str, Any]:
    rows = {r["step"]: r for r in PRE["ladders"][MODEL][WORKLOAD]}
    base = {k: v for k, v in rows["baseline"]["predicted"].items()}
    limits = {k: v * rows["limits"]["gain"][k] * 1.1 for k, v in base.items()}
    prefix = {k: v * rows["prefix_cache"]["gain"][k] * 1.5 for k, v in limits.items()}
    return {"schema": "pytest-anatomy/device-batch/v1",
            "provenance": {"kind": "deployment", "date_utc": "2026-12-01T12:00:00+00:00",
                           "nvidia_smi": {"summary": {"name": "NVIDIA H200"}}, "synthetic": "test_replay_pipeline"},
            "runs": [{"id": f"{MODEL}.engine.0", "result": {"startup_s": 50.0, "resolved": {}}},
                     _run("baseline", base), _run("limits", limits), _run("prefix_cache", prefix),
                     {"id": f"{MODEL}.{WORKLOAD}.ngram", "skipped": "budget"}]}


def test_import_files_one_recording_per_run(tmp_path: Path) -> None:
    batch = tmp_path / "deployment.json"
    batch.write_text(json.dumps(_batch()))
    import_files([batch], tmp_path / "results")
    rec = recordings.load_latest(tmp_path / "results", HARDWARE, "deployment", f"{MODEL}.{WORKLOAD}.limits")
    assert rec["metrics.goodput"].unit == "requests/s"
    assert rec["counters.vllm:spec_decode_num_accepted_tokens_per_pos.0"].value == 3.0
    assert rec.provenance["step"] == "limits"
    names = {p.name.split("@")[0] for p in (tmp_path / "results" / HARDWARE / "deployment").glob("*.json")}
    assert names == {f"{MODEL}.engine.0", *(f"{MODEL}.{WORKLOAD}.{s}" for s in ("baseline", "limits", "prefix_cache"))}


def test_replay_without_raw_requests_skips_the_gain_checks(tmp_path: Path) -> None:
    batch = tmp_path / "deployment.json"
    batch.write_text(json.dumps(_batch()))
    import_files([batch], tmp_path / "results")
    run = subprocess.run([sys.executable, "-m", "pytest", str(HERE / "test_ladder_replay.py"), "-q", "-p",
                          "no:cacheprovider", "-o", f"anatomy_results_dir={tmp_path / 'results'}", "-o",
                          "anatomy_source=recorded", "-k", "rung_gain"],  # replayed even on a GPU machine
                         cwd=HERE.parent, capture_output=True, text=True, timeout=300)
    out = run.stdout
    assert "passed" not in out and "failed" not in out, out[-3000:]  # every rung: no recording or no raw batch
    assert "the kept batch of it or its parent is missing" in out, out[-3000:]


def test_a_batch_planned_from_uncommitted_predictions_is_refused_or_filed_as_such(tmp_path: Path) -> None:
    """import-device holds a deployment batch to the prediction files it names: content no commit holds is refused in
    one line, and with --in-sample filed with held_out False and the reason."""
    import pytest

    from pytest_anatomy.importers.device import DeviceImportError

    doc = _batch()
    doc["provenance"]["preregistered"] = {"file": "tests_deployment/preregistered.json", "sha256": "0" * 64}
    batch = tmp_path / "deployment.json"
    batch.write_text(json.dumps(doc))
    with pytest.raises(DeviceImportError, match="is in no commit"):
        import_files([batch], tmp_path / "results")
    import_files([batch], tmp_path / "results", in_sample=True)
    rec = recordings.load_latest(tmp_path / "results", HARDWARE, "deployment", f"{MODEL}.{WORKLOAD}.limits")
    assert rec.provenance["held_out"] is False and "is in no commit" in rec.provenance["held_out_refused"]
