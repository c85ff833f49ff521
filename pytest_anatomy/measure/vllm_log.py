"""Parse a vLLM start-up log into the facts of its memory ledger. Pure Python, no vLLM needed.

vLLM prints its memory budget as log lines, and the wording changed between releases. The
patterns below cover:

- vLLM 0.26.0, read from its source: `gpu_worker.py`, `gpu_model_runner.py` (V1 runner),
  `v1/worker/gpu/model_runner.py` (V2 runner, the default for dense models in 0.26.0),
  `utils/mem_utils.py`, `v1/core/kv_cache_utils.py`, `v1/engine/core.py`, `platforms/cuda.py`.
- The newer main-branch wording listed in shared/REFERENCE.md section 1 (one-line KV size and
  concurrency, "consumed memory (weights + non-torch)", "total consumed (from mem_get_info)").
- The V1 engine of about 0.8 ("Memory profiling takes ... the rest of the memory reserved for
  KV Cache is ...") and the V0 engine ("# GPU blocks: N, # CPU blocks: M").

Every field is optional: None when its line is absent. Values keep the unit vLLM logged
(the `_gib` and `_s` suffixes) because vLLM rounds them to 0.01 GiB; converting to bytes
would invent precision. Exact byte counts come from the engine's own objects (vllm_engine.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUM = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"  # format_gib() is str(round(x, 2)): "14.19", "-7.83", "0.0"
_INT = r"([\d,]+)"  # "2,042,016" (V1) or "2042016" (V0)

FIELDS: tuple[str, ...] = (
    # weights
    "model_loading_gib", "model_loading_s",
    # the budget
    "init_free_gib", "init_total_gib", "gpu_memory_utilization", "requested_gib",
    "init_snapshot_gib", "after_profile_free_gib", "after_profile_free_within_requested_gib",
    # memory_profiling() result (DEBUG in V1, INFO in V0 and early V1)
    "profile_s", "profile_non_kv_gib", "profile_torch_peak_increase_gib",
    "profile_non_torch_increase_gib", "profile_total_consumed_gib", "profile_weights_gib",
    # KV pool
    "available_kv_cache_gib", "kv_cache_memory_reserved_gib", "kv_cache_size_tokens",
    "max_concurrency_tokens_per_request", "max_concurrency_x",
    "v0_num_gpu_blocks", "v0_num_cpu_blocks", "num_gpu_blocks_override",
    "max_model_len_autofit_from", "max_model_len_autofit_to",
    "kv_needed_gib", "kv_needed_max_model_len", "kv_needed_available_gib", "kv_estimated_max_model_len",
    # CUDA graphs
    "cudagraph_profile_groups", "cudagraph_estimate_gib", "cudagraph_estimate_per_mode",
    "cudagraph_profiling_enabled", "cudagraph_util_current", "cudagraph_util_equivalent",
    "cudagraph_util_suggested", "cudagraph_capture_s", "cudagraph_capture_gib",
    "cudagraph_pool_actual_gib", "cudagraph_pool_estimated_gib", "cudagraph_pool_diff_gib",
    "cudagraph_pool_diff_pct",
    # the "Free memory on device ... Actual usage is ..." ledger line
    "ledger_free_gib", "ledger_total_gib", "ledger_util", "ledger_requested_gib",
    "ledger_weights_gib", "ledger_consumed_gib", "ledger_peak_activation_gib",
    "ledger_non_torch_gib", "ledger_cudagraph_gib", "ledger_kv_fit_requested_bytes",
    "ledger_kv_fit_requested_gib", "ledger_kv_fit_gpu_bytes", "ledger_kv_fit_gpu_gib",
    "ledger_kv_in_use_gib",
    # timings, choices
    "init_engine_s", "compilation_s", "torch_compile_s", "dynamo_s", "initial_profiling_run_s",
    "attention_backend", "attention_backend_candidates", "model_runner", "block_size_set_by_backend",
    "warnings",
)

Handler = Callable[[re.Match[str], dict[str, Any]], None]


def _f(text: str | None) -> float | None:
    return None if text is None else float(text)


def _i(text: str | None) -> int | None:
    return None if text is None else int(text.replace(",", ""))


def _set(facts: dict[str, Any], key: str, value: Any) -> None:
    """First occurrence wins: later repeats (DP ranks, re-logs) never overwrite."""
    if facts.get(key) is None and value is not None:
        facts[key] = value


def _setter(**groups: tuple[int, Callable[[str | None], Any]]) -> Handler:
    def handle(m: re.Match[str], facts: dict[str, Any]) -> None:
        for key, (index, convert) in groups.items():
            _set(facts, key, convert(m.group(index)))

    return handle


def _gib_pairs(text: str) -> dict[str, float]:
    return {k: float(v) for k, v in re.findall(r"(\w+)=" + _NUM + r"\s*GiB", text)}


def _init_snapshot(m: re.Match[str], facts: dict[str, Any]) -> None:
    # repr of MemorySnapshot: "torch_peak=0.0GiB, free_memory=139.3GiB, total_memory=139.8GiB,
    # cuda_memory=0.5GiB, torch_memory=0.0GiB, non_torch_memory=0.5GiB, timestamp=..., auto_measure=True"
    pairs = _gib_pairs(m.group(1))
    _set(facts, "init_snapshot_gib", pairs or None)
    _set(facts, "init_free_gib", pairs.get("free_memory"))
    _set(facts, "init_total_gib", pairs.get("total_memory"))


def _cudagraph_groups(m: re.Match[str], facts: dict[str, Any]) -> None:
    groups = {
        mode: {"count": int(count), "largest": int(largest)}
        for mode, count, largest in re.findall(r"(\w+)=(\d+)\s*\(largest=(\d+)\)", m.group(1))
    }
    _set(facts, "cudagraph_profile_groups", groups or None)


def _cudagraph_per_mode(m: re.Match[str], facts: dict[str, Any]) -> None:
    per_mode = facts.get("cudagraph_estimate_per_mode") or {}
    per_mode.setdefault(m.group(1), {
        "first_capture_mib": float(m.group(2)), "num_graphs": int(m.group(3)),
        "per_graph_mib": float(m.group(4)),
    })
    facts["cudagraph_estimate_per_mode"] = per_mode


def _ledger(m: re.Match[str], facts: dict[str, Any]) -> None:
    line = m.string
    _set(facts, "ledger_free_gib", float(m.group(1)))
    _set(facts, "ledger_total_gib", float(m.group(2)))
    _set(facts, "ledger_util", float(m.group(3)))
    _set(facts, "ledger_requested_gib", float(m.group(4)))
    terms = {  # 0.26.0: "for weight", "for non-torch memory"; newer main: "for consumed memory (weights + non-torch)"
        "ledger_weights_gib": r"GiB for weight\b", "ledger_consumed_gib": r"GiB for consumed memory",
        "ledger_peak_activation_gib": r"GiB for peak activation", "ledger_non_torch_gib": r"GiB for non-torch memory",
        "ledger_cudagraph_gib": r"GiB for CUDAGraph memory",
    }
    for key, tail in terms.items():
        found = re.search(_NUM + r"\s*" + tail, line)
        _set(facts, key, _f(found.group(1)) if found else None)
    for key, tail in (("ledger_kv_fit_requested", "to fit into requested memory"),
                      ("ledger_kv_fit_gpu", "to fully utilize gpu memory")):
        found = re.search(r"--kv-cache-memory=(-?\d+)`?\s*\(" + _NUM + r"\s*GiB\)\s*" + tail, line)
        if found:
            _set(facts, key + "_bytes", int(found.group(1)))
            _set(facts, key + "_gib", float(found.group(2)))
    found = re.search(r"Current kv cache memory in use is " + _NUM + r"\s*GiB", line)
    _set(facts, "ledger_kv_in_use_gib", _f(found.group(1)) if found else None)


def _profile_line(m: re.Match[str], facts: dict[str, Any]) -> None:
    line = m.string
    _set(facts, "profile_s", float(m.group(1)))
    terms = {  # 0.26.0 repr of MemoryProfilingResult, plus newer main's "total consumed"
        "profile_non_kv_gib": r"Total non KV cache memory:\s*",
        "profile_torch_peak_increase_gib": r"torch peak memory increase:\s*",
        "profile_non_torch_increase_gib": r"non-torch forward increase memory:\s*",
        "profile_total_consumed_gib": r"total consumed \(from mem_get_info\):\s*",
        "profile_weights_gib": r"weights memory:\s*",
    }
    for key, head in terms.items():
        found = re.search(head + _NUM + r"\s*GiB", line)
        _set(facts, key, _f(found.group(1)) if found else None)


def _v0_profiling_results(m: re.Match[str], facts: dict[str, Any]) -> None:
    # V0 (~0.6): "Memory profiling results: duration=4.1 seconds, total_gpu_memory=79.1GiB, ...
    # peak_torch_memory=..GiB, non_torch_memory=..GiB, kv_cache_size=..GiB, gpu_memory_utilization=0.90."
    pairs = _gib_pairs(m.group(1))
    _set(facts, "init_total_gib", pairs.get("total_gpu_memory"))
    _set(facts, "profile_non_torch_increase_gib", pairs.get("non_torch_memory"))
    _set(facts, "available_kv_cache_gib", pairs.get("kv_cache_size"))
    util = re.search(r"gpu_memory_utilization=" + _NUM, m.group(1))
    _set(facts, "gpu_memory_utilization", _f(util.group(1)) if util else None)
    duration = re.search(r"duration=" + _NUM, m.group(1))
    _set(facts, "profile_s", _f(duration.group(1)) if duration else None)


def _backend(m: re.Match[str], facts: dict[str, Any]) -> None:
    _set(facts, "attention_backend", m.group(1))
    _set(facts, "attention_backend_candidates", re.findall(r"'(\w+)'", m.group(2)) or None)


def _flag(key: str, value: Any) -> Handler:
    return lambda m, facts: _set(facts, key, value)


# (pattern, handler). Each pattern is searched in every line; a line may feed several fields.
_RULES: list[tuple[re.Pattern[str], Handler]] = [(re.compile(p), h) for p, h in [
    # V1/V2 runner: "Model loading took 14.19 GiB and 5.310000 seconds" (V2),
    # "... GiB memory and ..." (V1 0.26.0); V0: "Loading model weights took 8.5107 GB".
    (r"(?:Model loading|Loading model weights) took\s+" + _NUM + r"\s*Gi?B(?:\s+memory)?(?:\s+and\s+" + _NUM
     + r"\s*s)?",
     _setter(model_loading_gib=(1, _f), model_loading_s=(2, _f))),
    (r"Available KV cache memory:\s*" + _NUM + r"\s*GiB", _setter(available_kv_cache_gib=(1, _f))),
    (r"GPU KV cache size:\s*" + _INT + r"\s*tokens", _setter(kv_cache_size_tokens=(1, _i))),
    (r"Maximum concurrency for\s*" + _INT + r"\s*tokens per request:\s*" + _NUM + r"x",
     _setter(max_concurrency_tokens_per_request=(1, _i), max_concurrency_x=(2, _f))),
    (r"(?i)#\s*(?:GPU|CUDA) blocks:\s*(\d+),\s*#\s*CPU blocks:\s*(\d+)",
     _setter(v0_num_gpu_blocks=(1, _i), v0_num_cpu_blocks=(2, _i))),
    (r"Overriding num_gpu_blocks=\d+ with num_gpu_blocks_override=(\d+)", _setter(num_gpu_blocks_override=(1, _i))),
    (r"Auto-fit max_model_len: reduced from (\d+) to (\d+)",
     _setter(max_model_len_autofit_from=(1, _i), max_model_len_autofit_to=(2, _i))),
    (r"max seq len \((\d+)\), \(" + _NUM + r" GiB KV cache is needed, which is larger than the available KV cache "
     r"memory \(" + _NUM + r" GiB\)",
     _setter(kv_needed_max_model_len=(1, _i), kv_needed_gib=(2, _f), kv_needed_available_gib=(3, _f))),
    (r"estimated maximum model length is (\d+)", _setter(kv_estimated_max_model_len=(1, _i))),
    # budget (DEBUG lines of gpu_worker.py)
    (r"worker init memory snapshot:\s*(.*)$", _init_snapshot),
    (r"worker requested memory:\s*" + _NUM + r"\s*GiB", _setter(requested_gib=(1, _f))),
    (r"Initial free memory:\s*" + _NUM + r"\s*GiB; Requested memory:\s*" + _NUM + r"\s*\(util\),\s*" + _NUM + r"\s*GiB",
     _setter(init_free_gib=(1, _f), gpu_memory_utilization=(2, _f), requested_gib=(3, _f))),
    (r"Free memory after profiling:\s*" + _NUM + r"\s*GiB \(total\),\s*" + _NUM + r"\s*GiB \(within requested\)",
     _setter(after_profile_free_gib=(1, _f), after_profile_free_within_requested_gib=(2, _f))),
    (r"Initial free memory " + _NUM + r" GiB, reserved " + _NUM + r" GiB memory for KV Cache",
     _setter(init_free_gib=(1, _f), kv_cache_memory_reserved_gib=(2, _f))),
    # memory_profiling() result, all eras
    (r"Memory profiling takes " + _NUM + r" seconds", _profile_line),
    (r"Memory profiling results:\s*(.*)$", _v0_profiling_results),
    (r"total_gpu_memory \(" + _NUM + r"\s*GiB\) x gpu_memory_utilization \(" + _NUM + r"\) = " + _NUM + r"\s*GiB",
     _setter(init_total_gib=(1, _f), gpu_memory_utilization=(2, _f), requested_gib=(3, _f))),
    (r"model weights take " + _NUM + r"\s*GiB", _setter(profile_weights_gib=(1, _f))),
    (r"non_torch_memory takes " + _NUM + r"\s*GiB", _setter(profile_non_torch_increase_gib=(1, _f))),
    (r"PyTorch activation peak memory takes " + _NUM + r"\s*GiB", _setter(profile_torch_peak_increase_gib=(1, _f))),
    (r"the rest of the memory reserved for KV Cache is " + _NUM + r"\s*GiB", _setter(available_kv_cache_gib=(1, _f))),
    # CUDA graphs (estimate: V1 runner only; the V2 runner's profile_cudagraph_memory() returns 0 in 0.26.0)
    (r"Profiling CUDA graph memory:\s*(.+)$", _cudagraph_groups),
    (r"Estimated CUDA graph memory:\s*" + _NUM + r"\s*GiB total", _setter(cudagraph_estimate_gib=(1, _f))),
    (r"Estimated (\w+) CUDA graph memory:\s*" + _NUM + r"\s*MiB first-capture \+ \((\d+)-1\)\s*\S\s*" + _NUM
     + r"\s*MiB per-graph", _cudagraph_per_mode),
    (r"CUDA graph memory profiling is enabled.*?--gpu-memory-utilization=" + _NUM + r" is equivalent to "
     r"--gpu-memory-utilization=" + _NUM + r".*?increase --gpu-memory-utilization to " + _NUM,
     _setter(cudagraph_util_current=(1, _f), cudagraph_util_equivalent=(2, _f), cudagraph_util_suggested=(3, _f))),
    (r"CUDA graph memory profiling is enabled", _flag("cudagraph_profiling_enabled", True)),
    (r"CUDA graph memory profiling is disabled.*?--gpu-memory-utilization from " + _NUM + r" to " + _NUM,
     _setter(cudagraph_util_current=(1, _f), cudagraph_util_suggested=(2, _f))),
    (r"CUDA graph memory profiling is disabled", _flag("cudagraph_profiling_enabled", False)),
    (r"Graph capturing finished in\s*" + _NUM + r"\s*secs?, took\s*" + _NUM + r"\s*GiB",
     _setter(cudagraph_capture_s=(1, _f), cudagraph_capture_gib=(2, _f))),
    (r"CUDA graph pool memory:\s*" + _NUM + r"\s*GiB \(actual\),\s*" + _NUM + r"\s*GiB \(estimated\),\s*difference:\s*"
     + _NUM + r"\s*GiB\s*\(" + _NUM + r"%\)",
     _setter(cudagraph_pool_actual_gib=(1, _f), cudagraph_pool_estimated_gib=(2, _f),
             cudagraph_pool_diff_gib=(3, _f), cudagraph_pool_diff_pct=(4, _f))),
    # the one-line ledger, INFO in 0.26.0
    (r"Free memory on device \(" + _NUM + r"/" + _NUM + r" GiB\) on startup\. Desired GPU memory utilization is \("
     + _NUM + r", " + _NUM + r" GiB\)", _ledger),
    # timings
    (r"init engine \(profile, create kv cache, warmup model\) took " + _NUM + r"\s*s(?:econds)?(?: \(compilation: "
     + _NUM + r" s)?", _setter(init_engine_s=(1, _f), compilation_s=(2, _f))),
    (r"torch\.compile (?:and initial profiling/warmup run together )?took " + _NUM + r" s in total",
     _setter(torch_compile_s=(1, _f))),
    (r"Dynamo bytecode transform time: " + _NUM + r" s", _setter(dynamo_s=(1, _f))),
    (r"Initial profiling/warmup run took " + _NUM + r" s", _setter(initial_profiling_run_s=(1, _f))),
    # choices the engine made
    (r"Using (\w+) attention backend out of potential backends: \[(.*?)\]", _backend),
    (r"Using V2 Model Runner", _flag("model_runner", "v2")),
    (r"using the V1 model runner instead", _flag("model_runner", "v1")),
    (r"Setting kv cache block size to (\d+) for \w+ backend", _setter(block_size_set_by_backend=(1, _i))),
]]

_MAX_WARNINGS = 30


def parse_vllm_log(text: str) -> dict[str, Any]:
    """Every FIELDS key, None where its line is absent; `warnings` lists distinct WARNING lines.

    >>> parse_vllm_log("INFO 11-30 [gpu_worker.py:560] Available KV cache memory: 109.41 GiB")["available_kv_cache_gib"]
    109.41
    """
    facts: dict[str, Any] = dict.fromkeys(FIELDS)
    warnings: list[str] = []
    for raw in _ANSI.sub("", text).splitlines():  # splitlines() also splits tqdm's "\r" updates
        line = raw.strip()
        if not line:
            continue
        for pattern, handle in _RULES:
            found = pattern.search(line)
            if found:
                handle(found, facts)
        if ("WARNING" in line or "WARN " in line) and len(warnings) < _MAX_WARNINGS:
            message = re.sub(r"^.*?\] ", "", line)  # drop "(EngineCore pid=1) WARNING 11-30 12:00:00 [x.py:1] "
            if message not in warnings:
                warnings.append(message)
    facts["warnings"] = warnings
    return facts


_KEY_WORDS = ("GiB", "KV cache", "CUDA graph", "Memory profiling", "concurrency", "took", "backend",
              "Model Runner", "Error", "error", "Traceback")


def ledger_lines(text: str, limit: int = 150) -> list[str]:
    """The lines worth keeping from a long DEBUG log, so that a pattern missed today can be
    re-parsed later from the stored result without the full log."""
    kept: list[str] = []
    for raw in _ANSI.sub("", text).splitlines():
        line = raw.strip()
        if line and any(word in line for word in _KEY_WORDS) and line not in kept:
            kept.append(line[:2000])
            if len(kept) >= limit:
                break
    return kept
