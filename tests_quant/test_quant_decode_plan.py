"""The vLLM decode-per-format plan (scripts/device/quant_decode.py), checked on the CPU before its device call: the
quantized configs are the vLLM phase's checkpoint configs on the catalog's Qwen2.5-7B, each method's latency-plan
command plans its decode part inside its budget under run ids apart from the bf16 model's, and the committed
pre-registration covers every (method, batch), was written from a committed theory, and predates every run of it."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import vllm_decode_findings as vf

ROOT = Path(__file__).resolve().parents[1]
qd = vf.qd  # scripts/device/quant_decode.py, loaded once


def test_the_configs_are_the_catalog_model_with_each_methods_checkpoint_config(tmp_path: Path) -> None:
    base = json.loads((ROOT / "pytest_anatomy" / "specs" / "configs" / f"{qd.MODEL}.json").read_text())
    paths = qd.write_configs(tmp_path)
    assert [p.stem for p in paths] == [f"{qd.MODEL}-{m}" for m in qd.METHODS]
    for method, path in zip(qd.METHODS, paths):
        config = json.loads(path.read_text())
        assert config.pop("quantization_config") == qd.QUANT_CONFIGS[method]
        assert config == {k: v for k, v in base.items() if not k.startswith("_")}


def test_each_methods_call_plans_its_decode_part_inside_its_budget(tmp_path: Path) -> None:
    qd.write_configs(tmp_path)
    for method, command in zip(qd.METHODS, qd.commands(tmp_path, tmp_path / "out")):
        stdout, planned, budget = vf.latency_plan_dry_run(command)
        for b in qd.BATCHES:
            assert f"{qd.MODEL}-{method}.decode.b{b} " in stdout, (method, b)
        assert planned <= budget, (method, planned)


def test_the_preregistration_covers_every_case_from_a_committed_theory() -> None:
    doc = json.loads(qd.PREREGISTRATION.read_text())
    assert {m: sorted(int(b) for b in rows) for m, rows in doc["predictions"].items()} == \
        {m: sorted(qd.BATCHES) for m in qd.METHODS}
    ancestor = subprocess.run(["git", "merge-base", "--is-ancestor", doc["theory_commit"], "HEAD"], cwd=ROOT,
                              capture_output=True, timeout=30)
    if ancestor.returncode not in (0, 1):
        pytest.skip("no git history here to check the pre-registration's commit against")
    assert ancestor.returncode == 0, f"the pre-registration's theory commit {doc['theory_commit']} is not in HEAD"
    # written before any run: no recording of these names exists, or every one is later than the pre-registration
    folder = ROOT / "results" / qd.HARDWARE / "latency"
    stamps = [p.name.split("@")[1].removesuffix(".json")
              for m in qd.METHODS for p in folder.glob(f"{qd.MODEL}-{m}.decode.b*@*")]
    written = doc["written_utc"].replace("-", "").replace(":", "")
    assert all(s > written for s in stamps), stamps


def test_the_fp8_sweep_plans_every_batch_inside_its_budget(tmp_path: Path) -> None:
    qd.write_configs(tmp_path)
    argv = shlex.split(qd.sweep_command(tmp_path, tmp_path / "out"))[2:]
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "device" / "latency_plan.py"), "--dry-run", *argv],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    for b in qd.SWEEP_BATCHES:
        assert f"{qd.MODEL}-{qd.SWEEP_METHOD}.decode.b{b} " in out.stdout, b
    planned = float(out.stdout.split("total planned: ")[1].split(" s")[0])
    assert planned <= float(argv[argv.index("--budget-s") + 1])
    assert set(qd.SWEEP_LINE_BATCHES) < set(qd.SWEEP_BATCHES) and 32 not in qd.SWEEP_LINE_BATCHES


def test_the_fp8_sweep_preregistration_predates_the_sweeps_batches() -> None:
    """Written before the sweep: no recording of a batch only the sweep runs predates it, and its expectations are
    what the committed code computes from the recordings that existed when it was written."""
    if not qd.SWEEP_PREREGISTRATION.exists():
        pytest.skip("the sweep is not pre-registered in this checkout")
    doc = json.loads(qd.SWEEP_PREREGISTRATION.read_text())
    written = doc["written_utc"].replace("-", "").replace(":", "")
    folder = ROOT / "results" / qd.HARDWARE / "latency"
    only_sweep = set(qd.SWEEP_BATCHES) - set(qd.BATCHES)
    stamps = [p.name.split("@")[1].removesuffix(".json") for b in only_sweep
              for p in folder.glob(f"{qd.MODEL}-{qd.SWEEP_METHOD}.decode.b{b}@*")]
    assert all(s > written for s in stamps), stamps
    first = {b: v for b, v in doc["expected"]["first_run_ms"].items()}
    runs = {b: sorted(folder.glob(f"{qd.MODEL}-{qd.SWEEP_METHOD}.decode.b{b}@*"))[0] for b in first}
    for b, path in runs.items():  # the first run of each plan batch is the one the expectations were built on
        assert path.name.split("@")[1].removesuffix(".json") < written, (b, path.name)
        step = json.loads(path.read_text())["measurements"]["step_time_s"]["value"] * 1e3
        assert step == pytest.approx(first[b], abs=5e-5), b
