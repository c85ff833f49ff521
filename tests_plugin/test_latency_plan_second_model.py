"""scripts/device/latency_plan.py's second model (the step overhead calibrated on one
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
    # the overhead models run between the two; with them, only the lowest-priority llama prefills may not fit
    assert text.index("qwen2.5-7b.overload") < text.index("qwen2.5-7b-tiny-l28 engine start") \
        < text.index("llama-3.1-8b engine start")
    skipped = [line.split()[0] for line in text.splitlines() if "[SKIP" in line]
    assert all(s.startswith("llama-3.1-8b.prefill.L") for s in skipped), skipped
    assert plan.main(["--dry-run", "--kv-cache-gib", "12", "--overhead-models", "none"]) == 0
    text = capsys.readouterr().out
    assert "[SKIP" not in text and "tiny" not in text  # with the small pinned pool everything fits in 540 s
    assert plan.main(["--dry-run", "--second-model", "none"]) == 0
    assert "llama" not in capsys.readouterr().out


def test_main_model_runs_are_named_after_its_config(capsys: pytest.CaptureFixture[str]) -> None:
    """--config of another model labels every run with that model (the runs become recordings
    named by these ids; a llama run labelled qwen2.5-7b would be checked against Qwen's theory)."""
    config = REPO / "pytest_anatomy" / "specs" / "configs" / "llama-3.1-8b.json"
    assert plan.main(["--dry-run", "--config", str(config), "--second-model", "none", "--overhead-models", "none"]) == 0
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
    with pytest.raises(FileNotFoundError, match="catalog names: .*qwen2.5-7b-tiny-l2.*qwen2.5-7b"):
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


# --- the overhead models: tiny-hidden twins of the main model, the step overhead measured apart ---------

def _dry_run_lines(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert plan.main(["--dry-run", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def _ends_at(line: str) -> float:
    """The 'ends at' column of a dry-run line: `<part> <estimate>s <ends at>s ...`."""
    return float(line.split()[2].rstrip("s"))


def test_dry_run_shows_the_overhead_models_inside_their_100_s(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _dry_run_lines(capsys, "--kv-cache-gib", "12")
    mine = [line for line in lines if line.startswith("qwen2.5-7b-tiny-l")]
    for layers in (28, 2):
        assert any(line.startswith(f"qwen2.5-7b-tiny-l{layers} engine start") for line in mine)
        for b in plan.OVERHEAD_BATCHES:
            assert any(line.startswith(f"qwen2.5-7b-tiny-l{layers}.decode.b{b} ") for line in mine)
    assert not any("[SKIP" in line for line in mine)
    before = next(i for i, line in enumerate(lines) if line.startswith("qwen2.5-7b-tiny-l28 engine")) - 1
    start, end = _ends_at(lines[before]), _ends_at(mine[-1])
    assert 0 < end - start <= 100, (start, end)
    assert "'cudagraph_capture_sizes': [1, 16, 64, 128]" in mine[0] and "'max_model_len': 2048" in mine[0]
    # a section budget too small for one engine skips both, and says so
    mine = [line for line in _dry_run_lines(capsys, "--overhead-budget-s", "25") if line.startswith("qwen2.5-7b-tiny")]
    assert mine and all("[SKIP" in line for line in mine)


def test_overhead_model_configs_differ_from_the_main_model_only_in_size() -> None:
    main, _ = plan.second_model_config("qwen2.5-7b")
    for name in plan.OVERHEAD_MODELS:
        config, source = plan.second_model_config(name)
        assert source.startswith("pytest_anatomy/specs/configs/overhead/") and "_comment" not in config
        changed = {k for k in set(main) | set(config) if main.get(k) != config.get(k)}
        assert changed <= {"hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                           "num_hidden_layers", "max_window_layers"}, changed
        assert config["vocab_size"] == main["vocab_size"]  # token-id prompts and the sampler's vocabulary
        assert config["hidden_size"] // config["num_attention_heads"] == main["hidden_size"] // main["num_attention_heads"]
    assert {plan.second_model_config(n)[0]["num_hidden_layers"] for n in plan.OVERHEAD_MODELS} == {2, 28}


def test_overhead_model_args_keep_the_engine_settings_and_bound_the_start() -> None:
    args = plan.parse_args(["--kv-cache-gib", "12", "--only", "decode,prefill"])
    margs = plan.overhead_model_args(args)
    for same in ("max_num_seqs", "max_num_batched_tokens", "enforce_eager"):
        assert getattr(margs, same) == getattr(args, same)
    assert margs.max_model_len == 2048 and margs.kv_cache_gib is None and margs.only is None
    assert margs.gpu_memory_utilization == 0.1 and margs.cudagraph_capture_sizes == (1, 16, 64, 128)
    parts = plan.build_plan(margs, plan.CostModel.from_config(plan.second_model_config(plan.OVERHEAD_MODELS[0])[0]),
                            plan.OVERHEAD_MODELS[0], frozenset({"decode"}))
    assert [p.id for p in parts] == ["qwen2.5-7b-tiny-l28.warmup"] + [
        f"qwen2.5-7b-tiny-l28.decode.b{b}" for b in (1, 16, 64, 128)]
    assert parts[0].settings["long"] == 2046  # the warm-up's long prompt fits the small max_model_len
    assert all(p.settings["input_len"] == 1024 and p.settings["output_len"] == 128 for p in parts[1:])
    assert plan.overhead_models(plan.parse_args(["--overhead-models", "none"])) == []


def test_overhead_models_run_in_their_own_budget_and_write_importable_batches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    async def fake_execute(args, out, budget, cfg, model_dir, cost, model, kinds):  # type: ignore[no-untyped-def]
        seen.append({"model": model, "kinds": kinds, "sizes": args.cudagraph_capture_sizes, "left": budget.remaining(),
                         "layers": json.loads((Path(model_dir) / "config.json").read_text())["num_hidden_layers"]})
        out.add({"id": f"{model}.decode.b1", "kind": "decode", "settings": {"batch": 1},
                 "result": {"step_time_s": 0.0012}})
        return 0

    monkeypatch.setattr(plan, "execute", fake_execute)
    args = plan.parse_args(["--out-dir", str(tmp_path)])
    assert plan.run_overhead_models(args, plan.Budget(540.0), _main_output(tmp_path)) == 0
    assert [(s["model"], s["layers"]) for s in seen] == [("qwen2.5-7b-tiny-l28", 28), ("qwen2.5-7b-tiny-l2", 2)]
    assert all(s["kinds"] == {"decode"} and s["sizes"] == (1, 16, 64, 128) and s["left"] <= 100 for s in seen)
    doc = json.loads((tmp_path / "latency-qwen2.5-7b-tiny-l2.json").read_text())
    assert doc["provenance"]["role"] == "overhead model" and doc["provenance"]["model"]["config"]["hidden_size"] == 256
    done = import_files([tmp_path / "latency.json", tmp_path / "latency-qwen2.5-7b-tiny-l28.json",
                         tmp_path / "latency-qwen2.5-7b-tiny-l2.json"], tmp_path / "results")
    wrote = {Path(p).name.split("@")[0] for status, p in done if status == "wrote" and p.endswith(".json")}
    assert {"qwen2.5-7b-tiny-l28.decode.b1", "qwen2.5-7b-tiny-l2.decode.b1"} <= wrote
    # with less than one engine's worth left in the session, neither starts
    seen.clear()
    spent = plan.Budget(540.0, start=0.0, clock=lambda: 500.0)
    assert plan.run_overhead_models(args, spent, _main_output(tmp_path)) == 0 and seen == []


def test_the_ceilings_part_times_the_linear_shapes_the_steps_run() -> None:
    args = plan.parse_args([])
    shapes = plan.gemm_shapes(args, plan.plan_configs(args, plan.load_model_config(None)[0]))
    qwen = {(s["layer"], s["m"], s["k"], s["n"]) for s in shapes if s["model"] == "qwen2.5-7b"}
    for m in (128, 512, 2048, 8192, 32000 - 3 * 8192) + plan.DECODE_BATCHES:  # prefill chunks and decode batches
        assert {("qkv", m, 3584, 4608), ("o", m, 3584, 3584), ("gate_up", m, 3584, 37888),
                ("down", m, 18944, 3584)} <= qwen
    assert ("lm_head", 1, 3584, 152064) in qwen and ("lm_head", 128, 3584, 152064) in qwen
    assert not any(s["layer"] == "lm_head" and s["m"] > 128 for s in shapes)  # a prefill's logits are one row
    assert {s["model"] for s in shapes} == {"qwen2.5-7b", "llama-3.1-8b"}
    assert ("qkv", 1, 4096, 6144) in {(s["layer"], s["m"], s["k"], s["n"]) for s in shapes if s["model"] == "llama-3.1-8b"}


def test_ceilings_reads_gemm_shapes_and_refuses_bad_ones(tmp_path: Path) -> None:
    from pytest_anatomy.measure import ceilings

    good = tmp_path / "shapes.json"
    good.write_text(json.dumps([{"m": 1, "k": 3584, "n": 4608, "layer": "qkv"}]))
    assert ceilings.read_gemm_shapes(str(good)) == [(1, 3584, 4608)]
    assert ceilings.gemm_key(1, 3584, 4608) == "m1_k3584_n4608"
    for bad in ([{"m": 1, "k": 3584}], [{"m": 0, "k": 1, "n": 1}], {"m": 1}):
        good.write_text(json.dumps(bad))
        with pytest.raises(SystemExit, match="--gemm-shapes"):
            ceilings.read_gemm_shapes(str(good))


def test_ceilings_checkpoint_before_the_linear_shapes_and_skip_what_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The four ceilings reach the checkpoint before any linear shape is timed (a process killed during
    those still leaves them); a shape that fails, or one past the time budget, is named, not fatal."""
    from pytest_anatomy.measure import ceilings

    monkeypatch.setattr(ceilings, "gpu_facts", lambda: {"l2_cache_bytes": 0})
    monkeypatch.setattr(ceilings, "nvidia_smi_snapshot", lambda *a, **k: None)
    for name in ("copy_bandwidth", "read_bandwidth"):
        monkeypatch.setattr(ceilings, name, lambda *a: {"value": 4e12, "unit": "B/s"})
    monkeypatch.setattr(ceilings, "matmul_peak", lambda *a: {"value": 8e14, "unit": "FLOP/s"})

    def rate(m: int, k: int, n: int) -> dict[str, Any]:
        if m == 3:
            raise RuntimeError("CUDA out of memory")
        return {"value": 1e14, "unit": "FLOP/s", "seconds_median": 2.0 * m * k * n / 1e14}

    monkeypatch.setattr(ceilings, "linear_rate", rate)
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    seen: list[list[str]] = []
    result = ceilings.measure_all(runs=20, gemm_shapes=[(2, 8, 16), (3, 8, 16), (2, 8, 16)], log=lambda s: None,
                                  checkpoint=lambda r: seen.append(sorted(r)))
    assert seen and "read_bandwidth" in seen[0] and "gemm" not in seen[0]
    assert sorted(result["gemm"]) == ["m2_k8_n16"] and "out of memory" in result["gemm_not_timed"]["m3_k8_n16"]
    monkeypatch.setattr(ceilings, "GEMM_BUDGET_S", -1.0)
    result = ceilings.measure_all(runs=20, gemm_shapes=[(2, 8, 16)], log=lambda s: None)
    assert result["gemm"] == {} and "spent" in result["gemm_not_timed"]["m2_k8_n16"]
