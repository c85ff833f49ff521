"""CPU tests of the vLLM ledger harness: settings, the capacity plan, the subprocess and its
error paths (fake workers), and the real worker driven by fake `torch` and `vllm` packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import device_scripts
import pytest

from pytest_anatomy.measure.engine_result import ERROR_CLASSES, classify_failure, derive
from pytest_anatomy.measure.engine_settings import EngineSettings
from pytest_anatomy.measure.vllm_engine import measure_memory_ledger

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "device" / "capacity_plan.py"
TINY = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 4000}


@pytest.fixture(scope="module")
def plan() -> ModuleType:
    return device_scripts.load("capacity_plan")


# ------------------------------------------------------------------ settings
def test_settings_defaults_and_llm_kwargs() -> None:
    s = EngineSettings()
    kwargs = s.to_llm_kwargs()
    assert kwargs == {"gpu_memory_utilization": 0.9, "max_model_len": 8192, "kv_cache_dtype": "auto",
                      "enforce_eager": False, "tensor_parallel_size": 1, "enable_prefix_caching": False,
                      "dtype": "bfloat16", "seed": 0}
    assert s.worker_env() == {} and s.tag() == "u0.90.len8192.graphs"
    s2 = EngineSettings(gpu_memory_utilization=0.5, max_model_len=2048, enforce_eager=True, kv_cache_dtype="fp8",
                        max_num_batched_tokens=4096, max_num_seqs=256, block_size=32, model_runner="v1",
                        kv_cache_memory_bytes=40 * 2**30)
    assert s2.tag() == "u0.50.len2048.eager.fp8.mbt4096.seqs256.bs32.kv40g.v1runner"
    assert s2.worker_env() == {"VLLM_USE_V2_MODEL_RUNNER": "0"}
    assert "model_runner" not in s2.to_llm_kwargs() and s2.to_llm_kwargs()["block_size"] == 32
    assert EngineSettings.from_dict(s2.to_dict()) == s2


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"gpu_memory_utilization": 0.0}, "gpu_memory_utilization=0.0 must be in (0, 1]"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization=1.5"),
    ({"max_model_len": 0}, "max_model_len=0 must be a positive integer"),
    ({"max_num_seqs": 2.5}, "max_num_seqs=2.5"),
    ({"enforce_eager": "yes"}, "enforce_eager='yes' must be True or False"),
    ({"kv_cache_dtype": "fp9"}, "did you mean 'fp8'?"),
    ({"dtype": "bf16"}, "EngineSettings.dtype='bf16'"),
    ({"model_runner": "v3"}, "model_runner='v3'"),
    ({"max_num_batched_tokens": 512}, "below max_num_seqs=1024"),
    ({"max_num_batched_tokens": 128, "max_num_seqs": 256}, "below max_num_seqs=256"),
])
def test_settings_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="EngineSettings") as info:
        EngineSettings(**kwargs)
    assert message in str(info.value)


def test_from_dict_unknown_key_suggests() -> None:
    with pytest.raises(ValueError, match="did you mean 'max_model_len'"):
        EngineSettings.from_dict({"max_model_length": 4096})


# ------------------------------------------------------------------ the plan
def test_plan_ids_unique_stable_and_balanced(plan: ModuleType) -> None:
    ids = [e.id for e in plan.PLAN]
    assert len(ids) == len(set(ids))
    assert ids[:7] == ["qwen2.5-0.5b.u0.90.len8192.eager", "qwen2.5-7b.u0.90.len8192.eager",
                       "llama-3.1-8b.u0.90.len8192.eager", "mistral-7b-v0.3.u0.90.len8192.eager",
                       "qwen2.5-7b.u0.90.len8192.graphs", "qwen2.5-32b.u0.90.len8192.eager",
                       "qwen2.5-14b.u0.90.len8192.eager"]
    by_model: dict[str, int] = {}
    for e in plan.PLAN:
        if e.settings.tensor_parallel_size == 1:  # the single-GPU plan: >= 3 settings per model
            by_model[e.model] = by_model.get(e.model, 0) + 1
        assert e.id == f"{e.model}.{e.settings.tag()}"
        if e.model == "qwen2.5-32b":
            assert e.settings.gpu_memory_utilization >= 0.6
    assert len(by_model) >= 5 and min(by_model.values()) >= 3
    # Phases 1-7 (up to TP2) fit and test; phase 8 (TP4/8) exists to test the TP terms found at TP2,
    # so every entry of it is held out and it stays out of the balance.
    fit_and_test = [e for e in plan.PLAN if e.settings.tensor_parallel_size <= 2]
    held = sum(e.held_out for e in fit_and_test) / len(fit_and_test)
    assert 0.25 <= held <= 0.4
    assert all(e.held_out for e in plan.PLAN if e.settings.tensor_parallel_size > 2)
    assert len({e.model for e in plan.PLAN[:6]}) >= 5  # interleaved: a partial run covers most models
    varied = {(e.settings.gpu_memory_utilization, e.settings.max_model_len, e.settings.kv_cache_dtype,
               e.settings.enforce_eager, e.settings.max_num_batched_tokens) for e in plan.PLAN}
    assert {0.5, 0.9} <= {v[0] for v in varied} and {2048, 8192, 32768} <= {v[1] for v in varied}
    assert "fp8" in {v[2] for v in varied} and {True, False} == {v[3] for v in varied}


def test_model_configs_have_the_documented_shapes(plan: ModuleType) -> None:
    for name, fallback in plan.FALLBACK_CONFIGS.items():
        config, source = plan.load_model_config(name)
        assert "differs" not in source, source  # catalog and embedded facts agree
        for key in plan.SHAPE_KEYS:
            assert config[key] == fallback[key], (name, key)
    assert abs(plan.weight_bytes(plan.FALLBACK_CONFIGS["qwen2.5-7b"]) - 15_231_233_024) < 0.01 * 15.2e9


def test_dry_run_needs_no_gpu_stack(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"done": {"qwen2.5-7b.u0.90.len8192.graphs": {"status": "ok"}}, "parts": [1]}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--budget-s", "500", "--state", str(state)],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "qwen2.5-7b.u0.90.len8192.graphs" in proc.stdout and " ok" in proc.stdout
    assert "held out" in proc.stdout  # this CPU box has neither torch nor vllm: the dry run needs neither


def test_select_rejects_unknown_ids_with_a_suggestion(plan: ModuleType) -> None:
    with pytest.raises(SystemExit, match="did you mean 'qwen2.5-7b.u0.90.len8192.graphs'"):
        plan.select(plan.PLAN, ["qwen2.5-7b.u0.90.len8192.graph"], None)
    chosen = plan.select(plan.PLAN, None, ["qwen2.5-14b"])
    assert {e.model for e in chosen} == {"qwen2.5-14b"}
    assert [e.id for e in chosen] == [e.id for e in plan.PLAN if e.model == "qwen2.5-14b"]  # all of them, in plan order


def _args(plan: ModuleType, tmp_path: Path, budget: float, *flags: str) -> Any:
    return plan.parse_args(["--budget-s", str(budget), "--state", str(tmp_path / "state.json"),
                            "--out", str(tmp_path / "out"), "--workdir", str(tmp_path / "work"), *flags])


def test_run_plan_budget_state_and_output_shape(plan: ModuleType, tmp_path: Path) -> None:
    now = [0.0]
    calls: list[str] = []

    def fake_measure(config: dict[str, Any], settings: EngineSettings, **kw: Any) -> dict[str, Any]:
        assert kw["timeout_s"] >= plan.estimate_s(plan.PlanEntry("x", settings), config)
        calls.append(settings.tag())
        now[0] += 70.0
        status = "error" if len(calls) == 2 else "ok"
        return {"status": status, "error_class": "oom" if status == "error" else None, "error_message": "x",
                "resolved": {"num_gpu_blocks": 1234}, "log": {"available_kv_cache_gib": 1.0}}

    entries = list(plan.PLAN[:7])
    doc = plan.run_plan(_args(plan, tmp_path, 300), entries, measure=fake_measure, clock=lambda: now[0], start=0.0)
    # 300 s: four starts of 70 s fit (each needs its ~63 s estimate + 10 s reserve), a fifth does not
    assert [r["id"] for r in doc["runs"]] == [e.id for e in entries[:4]]
    written = json.loads((tmp_path / "out" / "capacity-1.json").read_text())
    assert written["schema"] == "pytest-anatomy/device-batch/v1"
    assert written["provenance"]["part"] == 1 and len(written["provenance"]["plan"]) == 7
    assert set(written["runs"][0]) >= {"id", "model", "held_out", "settings", "result"}
    assert written["runs"][1]["result"]["error_class"] == "oom"
    state = json.loads((tmp_path / "state.json").read_text())
    assert len(state["done"]) == 4 and state["parts"] == [1]
    # the next call continues where this one stopped, in a new part file
    now[0] = 0.0
    doc2 = plan.run_plan(_args(plan, tmp_path, 200), entries, measure=fake_measure, clock=lambda: now[0], start=0.0)
    assert [r["id"] for r in doc2["runs"]] == [entries[4].id, entries[5].id]
    assert (tmp_path / "out" / "capacity-2.json").exists() and len(list((tmp_path / "out").iterdir())) <= 8
    # --retry-errors runs the failed one again, before the pending ones
    now[0] = 0.0
    doc3 = plan.run_plan(_args(plan, tmp_path, 90, "--retry-errors"), entries, measure=fake_measure,
                         clock=lambda: now[0], start=0.0)
    assert [r["id"] for r in doc3["runs"]] == [entries[1].id]


def test_parse_nvidia_smi_q(plan: ModuleType) -> None:
    text = textwrap.dedent("""\
        ==============NVSMI LOG==============

        Timestamp                                 : Sat Nov 29 10:00:00 2025
        Driver Version                            : 570.133.20
        CUDA Version                              : 12.8

        Attached GPUs                             : 1
        GPU 00000000:18:00.0
            Product Name                          : NVIDIA H200
            MIG Mode
                Current                           : Disabled
                Pending                           : Disabled
            FB Memory Usage
                Total                             : 143771 MiB
                Reserved                          : 551 MiB
            GPU Power Readings
                Current Power Limit               : 700.00 W
            Clocks
                Graphics                          : 1980 MHz
                SM                                : 1980 MHz
            Max Clocks
                SM                                : 1980 MHz
        """)
    flat = plan.parse_nvidia_smi_q(text)
    assert flat["Driver Version"] == "570.133.20" and flat["gpu/Product Name"] == "NVIDIA H200"
    assert flat["gpu/MIG Mode/Current"] == "Disabled" and flat["gpu/Clocks/SM"] == "1980 MHz"
    assert flat["gpu/GPU Power Readings/Current Power Limit"] == "700.00 W"
    assert flat["gpu/Max Clocks/SM"] == "1980 MHz" and flat["gpu/FB Memory Usage/Total"] == "143771 MiB"


def test_installed_version_reads_without_importing(plan: ModuleType, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "fakepkg_anatomy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (pkg / "version.py").write_text("__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plan.installed_version("fakepkg_anatomy") == {"version": "2.11.0+cu130", "cuda": "13.0"}


# ------------------------------------------------------------------ the subprocess and its failures
def _fake(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def _measure(tmp_path: Path, command: list[str] | None, timeout_s: float = 30, **kw: Any) -> dict[str, Any]:
    return measure_memory_ledger(TINY, EngineSettings(enforce_eager=True), timeout_s=timeout_s,
                                 workdir=tmp_path / "run", worker_command=command, release_wait_s=0, **kw)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    code = """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        open(sys.argv[-1] + ".child", "w").write(str(child.pid))
        print("(EngineCore pid=1) INFO Model loading took 1.5 GiB and 0.1 seconds", flush=True)
        time.sleep(120)
    """
    t0 = time.monotonic()
    result = _measure(tmp_path, _fake(code), timeout_s=3)
    assert time.monotonic() - t0 < 30
    assert (result["status"], result["error_class"], result["timed_out"]) == ("error", "timeout", True)
    assert "no result within 3 s" in result["error_message"]
    assert result["log"]["model_loading_gib"] == 1.5  # the partial log is still parsed
    child = int((tmp_path / "run" / "result.json.child").read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


@pytest.mark.parametrize(("printed", "error_class", "needle"), [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "oom", "CUDA out of memory"),
    (("(EngineCore pid=7) ValueError: Free memory on device cuda:0 (10.0/139.8 GiB) on startup is less than desired "
      "GPU memory utilization (0.9, 125.82 GiB)."), "oom", "on startup is less than desired"),
    (("(EngineCore pid=7) ValueError: To serve at least one request with the model's max seq len (32768), (4.0 GiB KV "
      "cache is needed, which is larger than the available KV cache memory (2.18 GiB).\nRuntimeError: Engine core "
      "initialization failed. See root cause above."), "max_model_len too long for memory", "max seq len (32768)"),
    (("(EngineCore pid=7) ModuleNotFoundError: No module named 'flashinfer'\nRuntimeError: Engine core initialization "
      "failed. See root cause above."), "import error", "flashinfer"),
    ("(EngineCore pid=7) AssertionError: boom\nRuntimeError: Engine core initialization failed. See root cause above.",
     "other", "AssertionError: boom"),
], ids=["torch-oom", "less-than-desired", "max-seq-len", "missing-module", "other"])
def test_worker_failures_are_classified(tmp_path: Path, printed: str, error_class: str, needle: str) -> None:
    result = _measure(tmp_path, _fake(f"import sys; print({printed!r}, flush=True); sys.exit(1)"))
    assert (result["status"], result["error_class"]) == ("error", error_class)
    assert needle in result["error_message"] and result["returncode"] == 1
    assert error_class in ERROR_CLASSES
    json.dumps(result)  # JSON-ready


def test_import_failure_reported_by_the_worker(tmp_path: Path) -> None:
    code = """
        import json, sys
        json.dump({"status": "error", "stage": "import", "error": {"type": "ModuleNotFoundError",
                   "message": "No module named 'vllm'"}}, open(sys.argv[-1], "w"))
        sys.exit(3)
    """
    result = _measure(tmp_path, _fake(code))
    assert (result["error_class"], result["stage"]) == ("import error", "import")
    assert "No module named 'vllm'" in result["error_message"]


def test_unstartable_worker_and_bad_input_never_raise(tmp_path: Path) -> None:
    result = _measure(tmp_path, ["/nonexistent/python-for-anatomy"])
    assert (result["status"], result["error_class"]) == ("error", "other")
    assert "cannot start worker" in "\n".join(result["log_tail"])
    broken = measure_memory_ledger({"bad": object()}, EngineSettings(), timeout_s=5, workdir=tmp_path / "b")
    assert (broken["status"], broken["error_class"]) == ("error", "other")
    assert broken["error_message"].startswith("harness error: TypeError")


def test_classify_failure_without_any_clue() -> None:
    expected = "worker exited with code -9 and wrote no result (see log_tail)"
    assert classify_failure("", None, returncode=-9) == ("other", expected)
    died = classify_failure("", {"stage": "import"}, returncode=-11)
    assert died == ("import error", "worker died while importing torch/vllm (exit code -11)")


def test_derive_checks_the_ledger_identity() -> None:
    engine = {"requested_memory": 1000, "model_memory_usage": 300, "peak_activation_memory": 100,
              "non_torch_memory": 50, "available_kv_cache_memory_bytes": 550,
              "kv_cache_config": {"num_blocks": 5, "total_tensor_bytes": 500,
                                  "groups": [{"layers": 2, "page_size_bytes": 50}]}}
    assert derive(engine) == {"non_kv_bytes": 450, "requested_minus_non_kv_bytes": 550, "unexplained_bytes": 0,
                              "kv_bytes_per_block": 100, "kv_allocated_bytes": 500, "kv_unused_bytes": 50}
    assert derive(None) is None


# ------------------------------------------------------------------ the real worker, fake torch and vllm
FAKE_TORCH = """
__version__ = "2.11.0+fake"
class version:
    cuda = "13.0"
class cuda:
    @staticmethod
    def mem_get_info(device=None):
        return (12 * 2**30, 150109880320)
    @staticmethod
    def memory_stats(device=None):
        return {"allocated_bytes.all.current": 130 * 2**30, "num_ooms": 0, "unrelated": 1}
"""

FAKE_VLLM = '''
import json, os
__version__ = "0.26.0+fake"
P = "(EngineCore pid=4242) "
REQ, W, PEAK, NT = 135098892288, 15237000000, 2170000000, 215000000
AVAIL = REQ - W - PEAK - NT
PAGE, LAYERS = 32768, 28
BLOCKS = AVAIL // (PAGE * LAYERS)

class NS:
    def __init__(self, **kw):
        self.__dict__.update(kw)

class SamplingParams:
    def __init__(self, **kw):
        self.kw = kw

class LLM:
    def __init__(self, model, **kw):
        config = json.load(open(os.path.join(model, "config.json")))
        assert kw["load_format"] == "dummy" and kw["skip_tokenizer_init"] and kw["generation_config"] == "vllm"
        if os.environ.get("FAKE_VLLM_FAIL"):
            print(P + "ValueError: To serve at least one request with the model's max seq len (32768), (4.0 GiB KV "
                  "cache is needed, which is larger than the available KV cache memory (2.18 GiB).", flush=True)
            raise RuntimeError("Engine core initialization failed. See root cause above.")
        print(P + "INFO [v1/worker/gpu_worker.py:340] Using V2 Model Runner", flush=True)
        print(P + "INFO [v1/worker/gpu/model_runner.py:305] Model loading took 14.19 GiB and 3.2 seconds", flush=True)
        print(P + "INFO [v1/worker/gpu_worker.py:559] Available KV cache memory: 109.41 GiB", flush=True)
        print(P + "INFO [v1/core/kv_cache_utils.py:2177] GPU KV cache size: %s tokens" % f"{BLOCKS * 16:,}", flush=True)
        self.kw = kw
        cache = NS(num_gpu_blocks=BLOCKS, block_size=16, cache_dtype=kw["kv_cache_dtype"],
                   kv_cache_size_tokens=BLOCKS * 16, kv_cache_max_concurrency=BLOCKS / 512,
                   gpu_memory_utilization=kw["gpu_memory_utilization"], kv_cache_memory_bytes=None,
                   enable_prefix_caching=kw["enable_prefix_caching"])
        sched = NS(max_num_batched_tokens=16384, max_num_seqs=1024, enable_chunked_prefill=True, async_scheduling=True)
        mcfg = NS(max_model_len=kw["max_model_len"], dtype="torch.bfloat16",
                  get_num_layers=lambda par: config["num_hidden_layers"],
                  get_num_kv_heads=lambda par: config["num_key_value_heads"], get_head_size=lambda: 128,
                  get_vocab_size=lambda: config["vocab_size"])
        comp = NS(mode="CompilationMode.NONE", cudagraph_mode="CUDAGraphMode.NONE", cudagraph_capture_sizes=[],
                  max_cudagraph_capture_size=None, compilation_time=0.0)
        self.vllm_config = NS(cache_config=cache, scheduler_config=sched, model_config=mcfg, compilation_config=comp,
                              parallel_config=NS(tensor_parallel_size=1), use_v2_model_runner=True)
        self.llm_engine = NS(vllm_config=self.vllm_config,
                             engine_core=NS(shutdown=lambda: print("[shutdown] MPClient: complete", flush=True)))

    def collective_rpc(self, method, timeout=None):
        spec = NS(block_size=16, page_size_bytes=PAGE, num_kv_heads=4, head_size=128, dtype="torch.bfloat16")
        kv = NS(num_blocks=BLOCKS, kv_cache_tensors=[NS(size=BLOCKS * PAGE)] * LAYERS,
                kv_cache_groups=[NS(layer_names=[f"l{i}" for i in range(LAYERS)], kv_cache_spec=spec)])
        runner = NS(model_memory_usage=W, kv_cache_config=kv,
                    attn_groups=[[NS(backend=NS(get_name=lambda: "FLASH_ATTN"))]])
        snapshot = NS(torch_peak=0, free_memory=149_500_000_000, total_memory=150109880320, cuda_memory=600_000_000,
                      torch_memory=0, non_torch_memory=600_000_000)
        worker = NS(init_snapshot=snapshot, requested_memory=REQ, non_torch_memory=NT, peak_activation_memory=PEAK,
                    cudagraph_memory_estimate=0, available_kv_cache_memory_bytes=AVAIL, model_runner=runner,
                    device="cuda:0", use_v2_model_runner=True, vllm_config=self.vllm_config,
                    cache_config=self.vllm_config.cache_config)
        return [method(NS(worker=worker))]

    def generate(self, prompts, params, use_tqdm=False):
        assert params.kw["detokenize"] is False and len(prompts[0]["prompt_token_ids"]) == 8
        return [NS(outputs=[NS(token_ids=[5, 6, 7, 8][: params.kw["max_tokens"]])])]
'''


@pytest.fixture
def fake_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    for name, body in (("torch", FAKE_TORCH), ("vllm", FAKE_VLLM)):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(textwrap.dedent(body))
    return site


def test_real_worker_with_fake_vllm_records_the_ledger(tmp_path: Path, fake_site: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(fake_site), str(REPO)])}
    result = measure_memory_ledger(TINY, EngineSettings(max_model_len=8192), timeout_s=60, workdir=tmp_path / "run",
                                   model_dir=tmp_path / "models" / "tiny", extra_env=env, release_wait_s=0)
    assert result["status"] == "ok", result["log_tail"]
    assert (result["stage"], result["error_class"], result["timed_out"]) == ("done", None, False)
    blocks = result["resolved"]["num_gpu_blocks"]
    assert blocks == (135098892288 - 15237000000 - 2170000000 - 215000000) // (32768 * 28)
    assert result["resolved"]["num_layers"] == 2 and result["resolved"]["use_v2_model_runner"] is True
    engine = result["engine"]
    assert engine["requested_memory"] == 135098892288 and engine["model_memory_usage"] == 15237000000
    assert engine["init_snapshot"]["total_memory"] == 150109880320
    assert engine["attention_backends"] == ["FLASH_ATTN"] and engine["mem_get_info"][1] == 150109880320
    assert engine["memory_stats"] == {"allocated_bytes.all.current": 130 * 2**30, "num_ooms": 0}
    assert engine["kv_cache_config"]["groups"][0]["layers"] == 28 and "probe_errors" not in engine
    assert result["derived"]["unexplained_bytes"] == 0 and result["derived"]["kv_bytes_per_block"] == 917504
    assert 0 <= result["derived"]["kv_unused_bytes"] < 917504
    assert result["log"]["available_kv_cache_gib"] == 109.41 and result["log"]["model_runner"] == "v2"
    assert result["log"]["kv_cache_size_tokens"] == blocks * 16
    assert result["generate"]["ok"] and result["generate"]["tokens"] == [5, 6, 7, 8]
    assert result["versions"]["vllm"] == "0.26.0+fake" and result["versions"]["torch_cuda"] == "13.0"
    assert result["llm_kwargs"]["enable_prefix_caching"] is False
    assert result["env"]["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert result["env"]["VLLM_ALLOW_INSECURE_SERIALIZATION"] == "1"
    assert set(result["timings"]) >= {"import_s", "engine_start_s", "probe_s", "generate_s", "shutdown_s", "wall_s"}
    assert json.loads((tmp_path / "models" / "tiny" / "config.json").read_text()) == TINY
    json.dumps(result)


def test_real_worker_engine_failure_is_classified(tmp_path: Path, fake_site: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(fake_site), str(REPO)]), "FAKE_VLLM_FAIL": "1"}
    result = measure_memory_ledger(TINY, EngineSettings(), timeout_s=60, workdir=tmp_path / "run", extra_env=env,
                                   release_wait_s=0)
    assert (result["status"], result["error_class"], result["stage"]) == \
        ("error", "max_model_len too long for memory", "engine_start")
    assert result["log"]["kv_needed_gib"] == 4.0 and result["returncode"] == 4


def test_tensor_parallel_entries_are_skipped_without_enough_gpus(plan: ModuleType) -> None:
    tp = {n: [e for e in plan.PLAN if e.settings.tensor_parallel_size == n] for n in (2, 4, 8)}
    assert {e.model for e in tp[2]} >= {"qwen2.5-72b", "llama-3.1-70b"}
    assert {e.model for e in tp[4]} >= {"qwen2.5-72b", "llama-3.1-70b"} and tp[8]
    keep, skipped = plan.runnable(list(plan.PLAN), gpus=1)
    assert not [e for e in keep if e.settings.tensor_parallel_size > 1]
    assert len(skipped) == sum(len(v) for v in tp.values())
    assert all(f"needs {e.settings.tensor_parallel_size} GPUs" in line and
               f"nvidia-h200-x{e.settings.tensor_parallel_size}" in line
               for e, line in zip([e for e in plan.PLAN if e.settings.tensor_parallel_size > 1], skipped))
    keep2, skipped2 = plan.runnable(list(plan.PLAN), gpus=2)
    assert len(skipped2) == len(tp[4]) + len(tp[8])
    keep8, skipped8 = plan.runnable(list(plan.PLAN), gpus=8)
    assert len(keep8) == len(plan.PLAN) and not skipped8


def test_worker_keeps_nvlink_multicast_off() -> None:
    from pytest_anatomy.measure.vllm_engine import WORKER_ENV

    assert WORKER_ENV["NCCL_NVLS_ENABLE"] == "0" and WORKER_ENV["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
