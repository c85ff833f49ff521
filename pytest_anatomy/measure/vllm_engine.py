"""Start vLLM once from a config.json (dummy weights) and record its whole memory ledger.

`measure_memory_ledger(config, settings, timeout_s=..., workdir=...)` runs ONE engine start in a
fresh subprocess (`python -m pytest_anatomy.measure.vllm_engine --worker`, its own process
group), so that GPU memory is clean, a hang is bounded by killing the group, and everything vLLM
prints is captured. It never raises: failures come back as data, status "error" plus a class.

What the worker records, and why from where (vLLM 0.26.0, read from its source):
- `llm.llm_engine.vllm_config` in this (front-end) process. The engine core runs in a child
  process, but its ready handshake (`EngineCoreReadyResponse` -> `MPClient._apply_ready_response`)
  copies num_gpu_blocks, block_size, max_model_len, kv_cache_size_tokens and
  kv_cache_max_concurrency back here, so these are exact.
- The ledger terms in bytes, read inside the engine-core worker by `llm.collective_rpc(probe)`:
  `Worker.init_snapshot`, `requested_memory`, `non_torch_memory`, `peak_activation_memory`,
  `cudagraph_memory_estimate`, `available_kv_cache_memory_bytes`,
  `model_runner.model_memory_usage` and `model_runner.kv_cache_config`, plus that process's
  `mem_get_info` and allocator stats. The log rounds all of these to 0.01 GiB; the probe does not.
  Sending a function needs VLLM_ALLOW_INSECURE_SERIALIZATION=1 (set for the worker only).
- The log, parsed by vllm_log.parse_vllm_log (DEBUG level adds the profile-result line).
- NVML used memory before start, after start, after generate and after shutdown. The front end
  never touches CUDA (so the engine core is forked and no second CUDA context distorts the
  readings); mem_get_info is therefore taken inside the engine-core process by the probe.

The settings a start takes are engine_settings.EngineSettings; the record it returns, with its
failure class and the ledger identity, is assembled by engine_result.py. The worker side stays in
this module: run as `-m ...vllm_engine --worker` it is __main__, so cloudpickle sends the probe to
the engine core by value.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_anatomy.gpu_query import gpu_identity, read_gpu_memory
from pytest_anatomy.measure.engine_result import assemble
from pytest_anatomy.measure.engine_settings import EngineSettings
from pytest_anatomy.units import GiB

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]

# Forced for every worker. The bundle's env.sh sets the first five too; a worker must not depend on it.
WORKER_ENV: dict[str, str] = {
    "VLLM_USE_FLASHINFER_SAMPLER": "0",  # flashinfer is not in the device bundle
    "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    "VLLM_ALLOW_INSECURE_SERIALIZATION": "1",  # lets collective_rpc carry the probe function
    "VLLM_ENABLE_STARTUP_PLAN": "0",  # a persisted plan would skip the profiling we measure
    "NO_COLOR": "1", "VLLM_LOGGING_COLOR": "0", "PYTHONUNBUFFERED": "1",
    # NVLink multicast off on multi-GPU machines (a program using it can take a shared host's GPUs
    # out of service); the lent machines set these too, but a worker must not depend on that.
    "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
}


# ------------------------------------------------------------------ parent side
def measure_memory_ledger(config: Mapping[str, Any], settings: EngineSettings, *, timeout_s: float,
                          workdir: str | os.PathLike[str], model_dir: str | os.PathLike[str] | None = None,
                          log_level: str = "DEBUG", sanity_generate: bool = True,
                          worker_command: Sequence[str] | None = None,
                          extra_env: Mapping[str, str] | None = None,
                          release_wait_s: float = 30.0) -> dict[str, Any]:
    """One engine start in a fresh process group; returns a JSON-ready dict and never raises.

    model_dir: where config.json goes; keep it stable per model, because vLLM's torch.compile
    cache key includes the model path. worker_command replaces the worker (tests use fakes).
    """
    t0 = time.perf_counter()
    try:
        return _measure(config, settings, timeout_s=timeout_s, workdir=workdir, model_dir=model_dir,
                        log_level=log_level, sanity_generate=sanity_generate, worker_command=worker_command,
                        extra_env=extra_env, release_wait_s=release_wait_s)
    except Exception as exc:  # noqa: BLE001 - a harness bug is data too, never a lost batch
        result = assemble(settings, None, "", timed_out=False, timeout_s=timeout_s, returncode=None)
        result.update(error_class="other", error_message=f"harness error: {type(exc).__name__}: {exc}"[:500])
        result["timings"]["wall_s"] = round(time.perf_counter() - t0, 3)
        return result


def _measure(config: Mapping[str, Any], settings: EngineSettings, *, timeout_s: float,
             workdir: str | os.PathLike[str], model_dir: str | os.PathLike[str] | None, log_level: str,
             sanity_generate: bool, worker_command: Sequence[str] | None, extra_env: Mapping[str, str] | None,
             release_wait_s: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    spec_path, result_path, log_path = work / "spec.json", work / "result.json", work / "engine.log"
    for stale in (result_path, log_path):
        stale.unlink(missing_ok=True)
    spec = {"config": dict(config), "settings": settings.to_dict(), "sanity_generate": sanity_generate,
            "model_dir": str(model_dir if model_dir is not None else work / "model")}
    spec_path.write_text(json.dumps(spec, indent=1))
    command = list(worker_command or [sys.executable, "-m", "pytest_anatomy.measure.vllm_engine", "--worker"])
    command += ["--spec", str(spec_path), "--result", str(result_path)]
    env = {**os.environ, **WORKER_ENV, **settings.worker_env(), "VLLM_LOGGING_LEVEL": log_level}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(extra_env or {})
    before = read_gpu_memory()
    returncode, timed_out = None, False
    with open(log_path, "wb") as log_file:
        try:
            proc = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env,
                                    cwd=str(_PACKAGE_ROOT), start_new_session=True)
        except OSError as exc:
            log_file.write(f"cannot start worker {command!r}: {exc}\n".encode())
            proc = None
        if proc is not None:
            try:
                returncode = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_group(proc)  # also reaps an engine core that outlived its front end
            returncode = proc.returncode if returncode is None else returncode
    released = _wait_for_release(before, release_wait_s)
    text = log_path.read_text(errors="replace")
    worker = _read_json(result_path)
    result = assemble(settings, worker, text, timed_out=timed_out, timeout_s=timeout_s, returncode=returncode)
    result["env"] = {k: v for k, v in sorted(env.items()) if k.startswith(("VLLM_", "PYTORCH_", "CUDA_", "NCCL_"))}
    result["memory"]["parent_before"] = before
    result["memory"]["parent_after_release"], result["memory"]["release_wait_s"] = released
    result["timings"]["wall_s"] = round(time.perf_counter() - t0, 3)
    return result


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=5)
            if sig == signal.SIGTERM:
                time.sleep(0.5)  # let children of the group handle SIGTERM before the SIGKILL sweep
        except subprocess.TimeoutExpired:
            continue
    if proc.returncode is None:
        proc.wait()


def _wait_for_release(before: dict[str, Any] | None, limit_s: float) -> tuple[dict[str, Any] | None, float]:
    """Wait until device memory is back near its level before the start: the next start checks
    free memory against its request, so leftovers from this one would corrupt it."""
    t0 = time.perf_counter()
    now = read_gpu_memory()
    while (before is not None and now is not None and now["used_bytes"] > before["used_bytes"] + GiB
           and time.perf_counter() - t0 < limit_s):
        time.sleep(1.0)
        now = read_gpu_memory()
    return now, round(time.perf_counter() - t0, 2)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ------------------------------------------------------------------ worker side (runs on the GPU box)
def _engine_probe(wrapper: Any) -> str:
    """Runs INSIDE the engine-core worker via collective_rpc. Self-contained (cloudpickle sends it
    by value when this module is __main__): no module globals, imports inside."""
    import json as _json
    import os as _os

    import torch

    worker = getattr(wrapper, "worker", None) or wrapper
    runner: Any = getattr(worker, "model_runner", None)
    out: dict[str, Any] = {"pid": _os.getpid()}

    def grab(name: str, fn: Any) -> None:
        try:
            out[name] = fn()
        except Exception as exc:  # noqa: BLE001 - record and go on: partial facts beat none
            out.setdefault("probe_errors", {})[name] = f"{type(exc).__name__}: {exc}"[:300]

    def as_int(name: str) -> int | None:
        value = getattr(worker, name, None)
        return None if value is None else int(value)

    snapshot_keys = ("torch_peak", "free_memory", "total_memory", "cuda_memory", "torch_memory", "non_torch_memory")
    grab("init_snapshot", lambda: {k: int(getattr(worker.init_snapshot, k)) for k in snapshot_keys})
    for name in ("requested_memory", "non_torch_memory", "peak_activation_memory", "cudagraph_memory_estimate",
                 "available_kv_cache_memory_bytes"):
        grab(name, lambda name=name: as_int(name))
    grab("model_memory_usage", lambda: int(runner.model_memory_usage))
    grab("use_v2_model_runner", lambda: bool(getattr(worker, "use_v2_model_runner", False)))
    grab("runner_class", lambda: f"{type(runner).__module__}.{type(runner).__qualname__}")

    def kv_config() -> dict[str, Any]:
        config = runner.kv_cache_config
        sizes = [int(t.size) for t in config.kv_cache_tensors]
        groups = [{"layers": len(g.layer_names), "spec": type(g.kv_cache_spec).__name__,
                   "block_size": int(g.kv_cache_spec.block_size),
                   "page_size_bytes": int(g.kv_cache_spec.page_size_bytes),
                   "num_kv_heads": getattr(g.kv_cache_spec, "num_kv_heads", None),
                   "head_size": getattr(g.kv_cache_spec, "head_size", None),
                   "dtype": str(getattr(g.kv_cache_spec, "dtype", None))} for g in config.kv_cache_groups]
        return {"num_blocks": int(config.num_blocks), "num_tensors": len(sizes), "total_tensor_bytes": sum(sizes),
                "tensor_bytes_first": sizes[:1], "groups": groups}

    grab("kv_cache_config", kv_config)
    grab("mem_get_info", lambda: [int(x) for x in torch.cuda.mem_get_info(worker.device)])
    stat_keys = ("allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
                 "reserved_bytes.all.peak", "active_bytes.all.current", "inactive_split_bytes.all.current",
                 "num_alloc_retries", "num_ooms")
    grab("memory_stats",
         lambda: {k: int(v) for k, v in torch.cuda.memory_stats(worker.device).items() if k in stat_keys})
    grab("attention_backends", lambda: sorted({g.backend.get_name() for groups in runner.attn_groups for g in groups}))

    def compilation() -> dict[str, Any]:
        cc = worker.vllm_config.compilation_config
        return {"mode": str(cc.mode), "cudagraph_mode": str(cc.cudagraph_mode),
                "cudagraph_capture_sizes": [int(s) for s in (cc.cudagraph_capture_sizes or [])],
                "compilation_time_s": float(getattr(cc, "compilation_time", 0.0))}

    grab("compilation", compilation)
    grab("cache_config", lambda: {"num_gpu_blocks": worker.cache_config.num_gpu_blocks,
                                  "block_size": worker.cache_config.block_size,
                                  "cache_dtype": str(worker.cache_config.cache_dtype)})
    return _json.dumps(out, default=str)


def _safe(fn: Any) -> Any:
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001
        return f"<unavailable: {type(exc).__name__}: {exc}>"[:300]
    if isinstance(value, (list, tuple)):
        return [v if isinstance(v, (int, float, str, bool)) or v is None else str(v) for v in value]
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def _resolved_facts(llm: Any) -> dict[str, Any]:
    cfg = llm.llm_engine.vllm_config
    cache, sched, model, comp, par = (cfg.cache_config, cfg.scheduler_config, cfg.model_config,
                                      cfg.compilation_config, cfg.parallel_config)
    getters = {
        "num_gpu_blocks": lambda: cache.num_gpu_blocks, "block_size": lambda: cache.block_size,
        "cache_dtype": lambda: cache.cache_dtype, "kv_cache_size_tokens": lambda: cache.kv_cache_size_tokens,
        "kv_cache_max_concurrency": lambda: cache.kv_cache_max_concurrency,
        "gpu_memory_utilization": lambda: cache.gpu_memory_utilization,
        "kv_cache_memory_bytes": lambda: cache.kv_cache_memory_bytes,
        "enable_prefix_caching": lambda: cache.enable_prefix_caching,
        "max_num_batched_tokens": lambda: sched.max_num_batched_tokens, "max_num_seqs": lambda: sched.max_num_seqs,
        "enable_chunked_prefill": lambda: sched.enable_chunked_prefill,
        "async_scheduling": lambda: sched.async_scheduling, "max_model_len": lambda: model.max_model_len,
        "dtype": lambda: model.dtype, "num_layers": lambda: model.get_num_layers(par),
        "num_kv_heads": lambda: model.get_num_kv_heads(par), "head_size": lambda: model.get_head_size(),
        "vocab_size": lambda: model.get_vocab_size(), "tensor_parallel_size": lambda: par.tensor_parallel_size,
        "compilation_mode": lambda: comp.mode, "cudagraph_mode": lambda: comp.cudagraph_mode,
        "cudagraph_capture_sizes": lambda: list(comp.cudagraph_capture_sizes or []),
        "max_cudagraph_capture_size": lambda: comp.max_cudagraph_capture_size,
        "use_v2_model_runner": lambda: cfg.use_v2_model_runner,
    }
    return {name: _safe(fn) for name, fn in getters.items()}


def _sanity_generate(llm: Any, sampling_params_cls: Any, vocab_size: int) -> dict[str, Any]:
    prompt = [1000 + (37 * i) % max(vocab_size - 2000, 1) for i in range(8)]
    params = sampling_params_cls(max_tokens=4, ignore_eos=True, detokenize=False, temperature=0.0)
    t0 = time.perf_counter()
    try:
        outputs = llm.generate([{"prompt_token_ids": prompt}], params, use_tqdm=False)
        tokens = [int(t) for t in outputs[0].outputs[0].token_ids]
    except Exception as exc:  # noqa: BLE001 - the ledger is still valid; say why generate failed
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500], "seconds": time.perf_counter() - t0}
    return {"ok": len(tokens) == 4, "tokens": tokens, "seconds": round(time.perf_counter() - t0, 3)}


def prepare_model_dir(config: Mapping[str, Any], model_dir: str | os.PathLike[str]) -> Path:
    """config.json alone is a complete model for load_format="dummy" with skip_tokenizer_init."""
    path = Path(model_dir)
    path.mkdir(parents=True, exist_ok=True)
    text = json.dumps(dict(config), indent=2, sort_keys=True) + "\n"
    target = path / "config.json"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
    return path


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)


def _worker_main(spec_path: Path, result_path: Path) -> int:
    spec = json.loads(spec_path.read_text())
    out: dict[str, Any] = {"status": "error", "stage": "import", "timings": {}, "memory": {}, "notes": []}
    timings, memory = out["timings"], out["memory"]
    for key, value in WORKER_ENV.items():
        os.environ.setdefault(key, value)
    _write_json(result_path, out)
    t0 = time.perf_counter()
    try:
        import torch
        import vllm
        from vllm import LLM, SamplingParams
    except BaseException as exc:  # noqa: BLE001 - an extension that fails to load raises OSError, not ImportError
        out["error"] = {"type": type(exc).__name__, "message": str(exc)[:2000]}
        _write_json(result_path, out)
        return 3
    timings["import_s"] = round(time.perf_counter() - t0, 3)
    out["versions"] = {"vllm": getattr(vllm, "__version__", None), "torch": getattr(torch, "__version__", None),
                       "torch_cuda": getattr(getattr(torch, "version", None), "cuda", None),
                       "python": sys.version.split()[0], "gpu": gpu_identity()}
    memory["before_start"] = read_gpu_memory()
    settings = EngineSettings.from_dict(spec["settings"])
    model_dir = prepare_model_dir(spec["config"], spec["model_dir"])
    kwargs = settings.to_llm_kwargs()
    out.update(stage="engine_start", llm_kwargs=kwargs)
    _write_json(result_path, out)
    t_start = time.perf_counter()
    try:
        llm = LLM(model=str(model_dir), load_format="dummy", skip_tokenizer_init=True, generation_config="vllm",
                  **kwargs)
    except BaseException as exc:  # noqa: BLE001 - vLLM wraps engine-core failures; the log has the cause
        import traceback

        out["error"] = {"type": type(exc).__name__, "message": str(exc)[:2000],
                        "traceback_tail": traceback.format_exc().splitlines()[-15:]}
        timings["engine_start_s"] = round(time.perf_counter() - t_start, 3)
        _write_json(result_path, out)
        return 4
    timings["engine_start_s"] = round(time.perf_counter() - t_start, 3)
    out["stage"] = "probe"
    try:
        out["resolved"] = _resolved_facts(llm)
    except Exception as exc:  # noqa: BLE001 - never lose a started engine's ledger to a renamed attribute
        out["notes"].append(f"resolved facts unavailable: {type(exc).__name__}: {exc}"[:500])
    t = time.perf_counter()
    try:
        replies = llm.collective_rpc(_engine_probe, timeout=120)
        workers = [json.loads(reply) for reply in replies]
        out["engine"] = workers[0] if workers else None
        if len(workers) > 1:
            out["engine_other_ranks"] = workers[1:]
    except Exception as exc:  # noqa: BLE001 - the log still has every term to 0.01 GiB
        out["notes"].append(f"engine probe failed: {type(exc).__name__}: {exc}"[:500])
    timings["probe_s"] = round(time.perf_counter() - t, 3)
    memory["after_start"] = read_gpu_memory(processes=True)
    if spec.get("sanity_generate", True):
        out["stage"] = "generate"
        vocab = int(spec["config"].get("vocab_size", 32000))
        out["generate"] = _sanity_generate(llm, SamplingParams, vocab)
        timings["generate_s"] = out["generate"].get("seconds")
        memory["after_generate"] = read_gpu_memory()
    out.update(status="ok", stage="shutdown")
    _write_json(result_path, out)  # saved before shutdown: a hung shutdown must not lose the ledger
    t = time.perf_counter()
    try:
        llm.llm_engine.engine_core.shutdown()  # MPClient.shutdown() stops the engine-core process
    except Exception as exc:  # noqa: BLE001
        out["notes"].append(f"shutdown raised {type(exc).__name__}: {exc}"[:300])
    del llm
    gc.collect()
    timings["shutdown_s"] = round(time.perf_counter() - t, 3)
    memory["after_shutdown"] = read_gpu_memory()
    timings["worker_total_s"] = round(time.perf_counter() - t0, 3)
    out["stage"] = "done"
    _write_json(result_path, out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one vLLM engine start (worker of measure_memory_ledger)")
    parser.add_argument("--worker", action="store_true", required=True)
    parser.add_argument("--spec", type=Path, required=True)
    parser.add_argument("--result", type=Path, required=True)
    args = parser.parse_args(argv)
    code = _worker_main(args.spec, args.result)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: vLLM's atexit hooks can hang after shutdown


if __name__ == "__main__":
    main()
