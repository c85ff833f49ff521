"""scripts/device/deployment_plan.py on a CPU: it runs exactly the preregistered rungs, each once,
and the counter arithmetic it records is right. (The engine itself runs only on the device.)"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _plan() -> ModuleType:
    name = "device_script_deployment_plan"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "device" / "deployment_plan.py")
        assert spec and spec.loader
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_every_preregistered_run_is_planned_once_on_an_engine_with_its_arguments() -> None:
    plan = _plan()
    pre = json.loads(plan.PREREGISTERED.read_text())
    steps = ["baseline", "limits", "prefix_cache", "fp8_weights", "fp8_kv", "eager", "ngram", "plan_top"]
    engines = plan.engines(pre, list(pre["ladders"]), ["chat", "rag"], steps)
    runs = [(e["model"], r["workload"], r["step"]) for e in engines for r in e["runs"]]
    assert sorted(runs) == sorted([(m, w, row["step"]) for m, ws in pre["ladders"].items() for w, rows in ws.items()
                                   for row in rows] + [(m, w, "plan_top") for m in pre["ladders"] for w in ("chat", "rag")])
    kwargs = {(e["model"], json.dumps(e["engine_kwargs"], sort_keys=True)) for e in engines}
    assert len(kwargs) == len(engines)  # one start per distinct configuration
    for e in engines:
        for r in e["runs"]:
            row = pre["plan_top"][e["model"]][r["workload"]] if r["step"] == "plan_top" else \
                next(x for x in pre["ladders"][e["model"]][r["workload"]] if x["step"] == r["step"])
            assert row["engine_kwargs"] == e["engine_kwargs"]


def test_the_replan_runs_each_models_plan_on_one_engine_with_its_start_estimate(capsys) -> None:
    """Step replan: replan.json's plan_top for each model and workload, one engine per model (both workloads' plans are
    one configuration), budgeted at the file's start estimate; the command docs/DEPLOYMENT.md gives fits 400 s."""
    plan = _plan()
    args = plan.parse_args(["--models", "llama-3.1-8b,qwen2.5-7b", "--steps", "replan"])
    engines = plan.engines(args.pre, args.models, args.workloads, args.steps, args.replan)
    assert [e["model"] for e in engines] == ["llama-3.1-8b", "qwen2.5-7b"]  # Llama's chat plan first
    for e in engines:
        tops = args.replan["plan_top"][e["model"]]
        assert [r["workload"] for r in e["runs"]] == ["chat", "rag"] and {r["step"] for r in e["runs"]} == {"replan"}
        assert e["engine_kwargs"] == tops["chat"]["engine_kwargs"] == tops["rag"]["engine_kwargs"]
        assert e["engine_kwargs"]["max_cudagraph_capture_size"] == e["engine_kwargs"]["max_num_batched_tokens"]
        assert e["start_s"] == tops["chat"]["start_s_estimate"]
    assert plan.main(["--dry-run", "--models", "llama-3.1-8b,qwen2.5-7b", "--steps", "replan"]) == 0
    assert "2 engine starts, 4 runs, ~360 s estimated" in capsys.readouterr().out
    assert plan.provenance(args)["replan"]["file"] == "tests_deployment/replan.json"


def test_counter_deltas_per_label() -> None:
    plan = _plan()
    before = {"vllm:prefix_cache_hits": 10.0, "vllm:num_preemptions": None, plan.PER_POSITION: {"0": 5.0}}
    after = {"vllm:prefix_cache_hits": 250.0, "vllm:num_preemptions": 3.0, plan.PER_POSITION: {"0": 9.0, "1": 2.0}}
    assert plan.delta(before, after) == {"vllm:prefix_cache_hits": 240.0, "vllm:num_preemptions": None,
                                         plan.PER_POSITION: {"0": 4.0, "1": 2.0}}


def test_dry_run_starts_nothing(capsys) -> None:
    assert _plan().main(["--dry-run", "--models", "qwen2.5-7b", "--steps", "baseline"]) == 0
    assert "1 engine starts, 2 runs" in capsys.readouterr().out  # the defaults serve both workloads


def test_a_cause_test_runs_its_base_rung_with_its_override_on_one_engine(capsys) -> None:
    plan = _plan()
    args = plan.parse_args(["--causes", "graphs-to-budget"])
    assert args.steps == []  # --causes alone runs no rung
    engines = plan.cause_engines(args.pre, args.cause_doc, args.causes, args.models)
    cause = args.cause_doc["causes"][0]
    base = args.pre["plan_top"][cause["model"]][cause["workload"]]["engine_kwargs"]
    assert engines == [{"model": cause["model"], "engine_kwargs": {**base, **cause["override"]},
                        "start_s": cause["start_s_estimate"],
                        "runs": [{"workload": "chat", "step": "plan_top+graphs-to-budget", "cause": cause["name"]}]}]
    assert plan.cause_engines(args.pre, args.cause_doc, args.causes, ["qwen2.5-7b"]) == []  # another model's cause
    assert plan.main(["--dry-run", "--causes", "graphs-to-budget"]) == 0
    assert "1 engine starts, 1 runs" in capsys.readouterr().out


def test_an_unknown_cause_is_one_line_naming_the_file(capsys) -> None:
    import pytest

    with pytest.raises(SystemExit) as exc:
        _plan().parse_args(["--causes", "graphs-to-nowhere"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "graphs-to-nowhere" in err and "cause_tests.json" in err


def test_a_batch_names_its_host_beside_the_gpu(tmp_path) -> None:
    """The provenance carries the host's CPU model and CPU counts (a host-bound step moves with them), read from
    /proc/cpuinfo's first 'model name'; without nvidia-smi the GPU's UUID is None, not an error."""
    from pytest_anatomy.host_facts import cpu_model

    plan = _plan()
    host = plan.provenance(plan.parse_args(["--models", "qwen2.5-7b", "--steps", "eager"]))["host"]
    assert set(host) == {"cpu_model", "logical_cpus", "usable_cpus", "kernel", "gpu_uuid"}
    assert isinstance(host["logical_cpus"], int) and host["logical_cpus"] >= 1
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\n"
                    "processor\t: 1\nmodel name\t: other\n")
    assert cpu_model(info) == "Intel(R) Xeon(R) Platinum 8480+"
