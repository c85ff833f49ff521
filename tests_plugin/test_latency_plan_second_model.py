"""scripts/device/latency_plan.py's second model (issue 4: the step overhead calibrated on one
model must be tested on another): planning, settings, its own importable batch file, budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import device_scripts
import pytest

from pytest_anatomy.importers.device import import_files

REPO = Path(__file__).resolve().parents[1]


plan = device_scripts.load("latency_plan")
CEILINGS = {"id": "ceilings", "kind": "ceilings", "result": {
    "facts": {"name": "NVIDIA H200", "sm_count": 132},
    "read_bandwidth": {"value": 4.47e12, "unit": "B/s"}}}


def test_dry_run_plans_the_second_model_after_the_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert plan.main(["--dry-run", "--kv-cache-gib", "12"]) == 0
    text = capsys.readouterr().out
    assert text.index("qwen2.5-7b.overload") < text.index("llama-3.1-8b engine start")
    for b in plan.DECODE_BATCHES:
        assert f"llama-3.1-8b.decode.b{b} " in text
    assert "llama-3.1-8b.closed" not in text and "llama-3.1-8b.overload" not in text
    assert "[SKIP" not in text  # with the small pinned pool everything fits in 540 s
    assert plan.main(["--dry-run", "--second-model", "none"]) == 0
    assert "llama" not in capsys.readouterr().out


def test_main_model_runs_are_named_after_its_config(capsys: pytest.CaptureFixture[str]) -> None:
    """--config of another model labels every run with that model (the runs become recordings
    named by these ids; a llama run labelled qwen2.5-7b would be checked against Qwen's theory)."""
    config = REPO / "pytest_anatomy" / "specs" / "configs" / "llama-3.1-8b.json"
    assert plan.main(["--dry-run", "--config", str(config), "--second-model", "none"]) == 0
    text = capsys.readouterr().out
    assert "llama-3.1-8b.decode.b1 " in text and "llama-3.1-8b.overload" in text
    assert "qwen2.5-7b" not in text
    assert plan.main_model_id(plan.parse_args(["--config", "/x/mistral-7b-v0.3/config.json"])) == "mistral-7b-v0.3"
    assert plan.main_model_id(plan.parse_args([])) == "qwen2.5-7b"


def test_second_model_settings_and_parts() -> None:
    args = plan.parse_args(["--kv-cache-gib", "12", "--max-model-len", "200000"])
    config, source = plan.second_model_config("llama-3.1-8b")
    margs = plan.second_model_args(args, config)
    assert margs.max_model_len == config["max_position_embeddings"] and margs.kv_cache_gib is None
    assert args.kv_cache_gib == 12  # the first model keeps its pinned pool
    parts = plan.build_plan(margs, plan.CostModel.from_config(config), "llama-3.1-8b", plan.second_model_kinds(args))
    assert {p.kind for p in parts} == {"warmup", "decode", "prefill"}
    assert all(p.id.startswith("llama-3.1-8b.") for p in parts) and source.endswith("llama-3.1-8b.json")
    with pytest.raises(FileNotFoundError, match="catalog names: .*qwen2.5-7b"):
        plan.second_model_config("llama-9")
    with pytest.raises(SystemExit):
        plan.parse_args(["--second-model-kinds", "decode,prefil"])


def _main_output(tmp_path: Path) -> Any:
    main = plan.Output(tmp_path, {"date_utc": "2026-12-01T00:00:00+00:00", "gpu": CEILINGS["result"]["facts"],
                                  "model": {"id": "qwen2.5-7b"}, "versions": {"vllm": "0.26.0"}})
    main.add(dict(CEILINGS))
    main.add({"id": "qwen2.5-7b.decode.b1", "kind": "decode", "settings": {}, "result": {"step_time_s": 0.0047}})
    return main


def test_second_model_writes_its_own_importable_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    async def fake_execute(args, out, budget, cfg, model_dir, cost, model, kinds):  # type: ignore[no-untyped-def]
        seen.update(model=model, kinds=kinds, max_model_len=args.max_model_len, kv=args.kv_cache_gib,
                    config=json.loads((Path(model_dir) / "config.json").read_text()))
        out.add({"id": f"{model}.decode.b1", "kind": "decode", "settings": {"batch": 1},
                 "result": {"step_time_s": 0.005}})
        return 0

    monkeypatch.setattr(plan, "execute", fake_execute)
    args = plan.parse_args(["--out-dir", str(tmp_path), "--kv-cache-gib", "12"])
    main = _main_output(tmp_path)
    assert plan.run_second_model(args, plan.Budget(540.0), main, "llama-3.1-8b") == 0
    assert seen["model"] == "llama-3.1-8b" and seen["kinds"] == {"decode", "prefill"} and seen["kv"] is None
    assert seen["config"]["num_key_value_heads"] == 8
    doc = json.loads((tmp_path / "latency-llama-3.1-8b.json").read_text())
    assert doc["provenance"]["model"]["id"] == "llama-3.1-8b"
    assert doc["provenance"]["date_utc"] == main.doc["provenance"]["date_utc"]  # same session stamp
    assert [r["id"] for r in doc["runs"]] == ["ceilings", "llama-3.1-8b.decode.b1"]
    done = import_files([tmp_path / "latency.json", tmp_path / "latency-llama-3.1-8b.json"], tmp_path / "results")
    wrote = {Path(p).name.split("@")[0] for status, p in done if status == "wrote" and p.endswith(".json")}
    assert {"ceilings", "qwen2.5-7b.decode.b1", "llama-3.1-8b.decode.b1"} <= wrote
    rec = json.loads(next((tmp_path / "results/h200/latency").glob("llama-3.1-8b.decode.b1@*.json")).read_text())
    assert rec["provenance"]["model"] == "llama-3.1-8b" and rec["measurements"]["step_time_s"]["value"] == 0.005


def test_second_model_is_skipped_not_started_when_the_budget_is_spent(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan, "execute", lambda *a, **k: pytest.fail("must not start an engine"))
    args = plan.parse_args(["--out-dir", str(tmp_path)])
    spent = plan.Budget(540.0, start=0.0, clock=lambda: 500.0)
    assert plan.run_second_model(args, spent, _main_output(tmp_path), "llama-3.1-8b") == 0
    doc = json.loads((tmp_path / "latency-llama-3.1-8b.json").read_text())
    assert "budget" in doc["runs"][-1]["skipped"] and doc["runs"][-1]["id"] == "llama-3.1-8b.engine"
