"""What one engine start's result says: the JSON-ready record measure/vllm_engine.py returns (schema,
status, ledger, log, memory), the class of a failure read from the log, and the ledger identity
checked in exact bytes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_anatomy.measure.engine_settings import EngineSettings
from pytest_anatomy.measure.vllm_log import ledger_lines, parse_vllm_log

SCHEMA = "pytest-anatomy/vllm-ledger/v1"
ERROR_CLASSES = ("oom", "max_model_len too long for memory", "timeout", "import error", "other")
LOG_TAIL_LINES = 200


def assemble(settings: EngineSettings, worker: dict[str, Any] | None, text: str, *, timed_out: bool,
              timeout_s: float, returncode: int | None) -> dict[str, Any]:
    worker = worker or {}
    ok = worker.get("status") == "ok"  # the worker saves "ok" before shutdown, so a hung shutdown stays ok
    error_class, error_message = (None, None) if ok else classify_failure(text, worker, timed_out=timed_out,
                                                                           timeout_s=timeout_s, returncode=returncode)
    notes = list(worker.get("notes", []))
    if ok and timed_out:
        notes.append(f"shutdown did not finish within the {timeout_s:g} s limit; the process group was killed")
    tail = [line.rsplit("\r", 1)[-1] for line in text.split("\n")]
    return {
        "schema": SCHEMA, "status": "ok" if ok else "error", "error_class": error_class,
        "error_message": error_message, "stage": worker.get("stage"), "notes": notes,
        "settings": settings.to_dict(), "tag": settings.tag(), "llm_kwargs": worker.get("llm_kwargs"),
        "resolved": worker.get("resolved"), "engine": worker.get("engine"), "derived": derive(worker.get("engine")),
        "log": parse_vllm_log(text), "generate": worker.get("generate"), "memory": dict(worker.get("memory", {})),
        "timings": dict(worker.get("timings", {})), "versions": worker.get("versions"),
        "returncode": returncode, "timed_out": timed_out, "timeout_s": timeout_s,
        "ledger_lines": ledger_lines(text), "log_tail": [line for line in tail if line.strip()][-LOG_TAIL_LINES:],
    }


_FAILURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("max_model_len too long for memory", (
        r"To serve at least one request with the model'?s max seq len",
        r"larger than the maximum number of tokens that can be stored in KV cache",
        r"Cannot auto-fit max_model_len")),
    ("oom", (r"CUDA out of memory", r"OutOfMemoryError", r"CUDA error: out of memory",
             r"No available memory for the cache blocks", r"on startup is less than desired GPU memory utilization",
             r"not enough GPU memory")),
)
_EXCEPTION_LINE = re.compile(r"^\s*(?:\(.*?\)\s*)?([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)): (.*)$")


def classify_failure(text: str, worker: Mapping[str, Any] | None = None, *, timed_out: bool = False,
                     timeout_s: float | None = None, returncode: int | None = None) -> tuple[str, str]:
    """(error class, one line saying why) for a start that did not reach status "ok"."""
    worker = worker or {}
    error = worker.get("error") or {}
    if timed_out:
        return "timeout", f"no result within {timeout_s:g} s (worker stage: {worker.get('stage', 'not started')})"
    lines = text.splitlines() + [f"{error.get('type')}: {error.get('message')}"] * bool(error)
    for error_class, patterns in _FAILURES:
        for line in lines:
            if any(re.search(p, line) for p in patterns):
                return error_class, line.strip()[:500]
    exceptions = [m for m in map(_EXCEPTION_LINE.match, lines) if m]
    if worker.get("stage") == "import" or error.get("type") in ("ImportError", "ModuleNotFoundError"):
        detail = f"{error.get('type')}: {error.get('message')}" if error else \
            f"worker died while importing torch/vllm (exit code {returncode})"
        return "import error", detail[:500]
    root = [m for m in exceptions if "Engine core initialization failed" not in m.group(2)]
    if root and root[-1].group(1) in ("ImportError", "ModuleNotFoundError"):
        return "import error", root[-1].group(0).strip()[:500]
    if root:
        return "other", root[-1].group(0).strip()[:500]
    if error:
        return "other", f"{error.get('type')}: {error.get('message')}"[:500]
    return "other", f"worker exited with code {returncode} and wrote no result (see log_tail)"


def derive(engine: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ledger identity in exact bytes: requested - weights - peak - non_torch - applied graph
    estimate = available KV memory; blocks * bytes per block <= available."""
    if not engine:
        return None
    get = engine.get
    terms = [get("model_memory_usage"), get("peak_activation_memory"), get("non_torch_memory")]
    requested, available = get("requested_memory"), get("available_kv_cache_memory_bytes")
    out: dict[str, Any] = {}
    ints = [t for t in terms if isinstance(t, int)]
    if requested is not None and len(ints) == len(terms):
        non_kv = sum(ints)
        out["non_kv_bytes"] = non_kv
        out["requested_minus_non_kv_bytes"] = requested - non_kv
        if available is not None:
            # the remainder is the CUDA graph estimate when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS applied it
            out["unexplained_bytes"] = out["requested_minus_non_kv_bytes"] - available
    kv = get("kv_cache_config") or {}
    groups = kv.get("groups") or []
    if kv.get("num_blocks") and groups:
        per_block = sum(g["page_size_bytes"] * g["layers"] for g in groups if g.get("page_size_bytes"))
        out["kv_bytes_per_block"] = per_block
        out["kv_allocated_bytes"] = kv.get("total_tensor_bytes")
        if available is not None and per_block:
            out["kv_unused_bytes"] = available - kv["num_blocks"] * per_block
    return out or None
