#!/usr/bin/env python3
"""vLLM 0.26.0 memory-ledger capacity plan for the H200: many engine starts, dummy weights.

Each configuration starts vLLM ONCE from a catalog config.json (load_format="dummy", no tokenizer)
in a fresh subprocess (pytest_anatomy.measure.vllm_engine.measure_memory_ledger), records the whole
memory ledger (log facts, exact bytes from inside the engine, NVML readings), runs one 4-token
generate as a sanity check, shuts the engine down and waits for the memory to come back. About a
third of the configurations are `held_out`: never used to fit, only to test the fitted ledger.

Device commands (shared/device/vllm/README.md, "Two device calls"; make call 2 right after call 1):
  call 1  carry [".devcarry/c1"], timeout_s 120:
          mkdir -p /root/stage && cp .devcarry/c1/* /root/stage/ && cd /root/stage && sha256sum -c c1.sha256
  call 2  carry [".devcarry/c2"], timeout_s 600:
          bash .devcarry/c2/install.sh && source /root/stage/env.sh && python3 scripts/device/capacity_plan.py \\
            --budget-s 500 --state /root/stage/capacity-state.json --out $OUT
  later calls to the same warm machine (nothing carried), each continuing where the last stopped:
          source /root/stage/env.sh && python3 scripts/device/capacity_plan.py \\
            --budget-s 500 --state /root/stage/capacity-state.json --out $OUT
Anywhere, without torch or vllm (prints the plan with planning estimates):
          python3 scripts/device/capacity_plan.py --dry-run [--budget-s 500]

Budget: counted from this script's start. A configuration is started only if its planning
estimate (import vllm + engine start + graphs + generate + shutdown) fits the remaining budget;
a later, cheaper one may still start. Results go to $OUT/capacity-<part>.json, rewritten after
every configuration, so a killed call still returns what it finished. The state file lists the
ids already done, and <part> counts the calls, so files of later calls never overwrite earlier ones.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pytest_anatomy import suggest
from pytest_anatomy.gpu_query import read_gpu_memory
from pytest_anatomy.measure.vllm_engine import EngineSettings, measure_memory_ledger
from pytest_anatomy.units import GiB

SCHEMA = "pytest-anatomy/device-batch/v1"
CATALOG = REPO / "pytest_anatomy" / "specs" / "configs"
T_START = time.monotonic()

# Planning estimates (seconds), from the device README: `import vllm` ~20 s, engine start ~26-44 s
# eager, +~25 s for torch.compile and CUDA graphs; padded for bigger models and capture sizes.
IMPORT_S, ENGINE_EAGER_S, GRAPHS_S, AFTER_START_S, PER_WEIGHT_GIB_S = 20.0, 30.0, 45.0, 10.0, 0.2
RESERVE_S = 10.0  # never start a configuration that would end closer than this to the budget


def _qwen2(hidden: int, layers: int, heads: int, kv: int, inter: int, vocab: int, tied: bool) -> dict[str, Any]:
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": hidden,
            "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
            "intermediate_size": inter, "vocab_size": vocab, "tie_word_embeddings": tied,
            "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "hidden_act": "silu",
            "use_sliding_window": False, "bos_token_id": 151643, "eos_token_id": 151645, "torch_dtype": "bfloat16"}


# Used only when pytest_anatomy/specs/configs/<name>.json is missing (the catalog is preferred).
FALLBACK_CONFIGS: dict[str, dict[str, Any]] = {
    "qwen2.5-0.5b": _qwen2(896, 24, 14, 2, 4864, 151936, True),
    "qwen2.5-7b": _qwen2(3584, 28, 28, 4, 18944, 152064, False),
    "qwen2.5-14b": _qwen2(5120, 48, 40, 8, 13824, 152064, False),
    "qwen2.5-32b": _qwen2(5120, 64, 40, 8, 27648, 152064, False),
    "llama-3.1-8b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
        "tie_word_embeddings": False, "max_position_embeddings": 131072, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rms_norm_eps": 1e-5, "hidden_act": "silu", "bos_token_id": 128000, "eos_token_id": 128001,
        "torch_dtype": "bfloat16"},
    "mistral-7b-v0.3": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
        "vocab_size": 32768, "tie_word_embeddings": False, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-5, "hidden_act": "silu", "sliding_window": None, "bos_token_id": 1, "eos_token_id": 2,
        "torch_dtype": "bfloat16"},
}
SHAPE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
              "intermediate_size", "vocab_size", "tie_word_embeddings")


@dataclass(frozen=True)
class PlanEntry:
    model: str
    settings: EngineSettings
    held_out: bool = False

    @property
    def id(self) -> str:
        return f"{self.model}.{self.settings.tag()}"


def _e(model: str, held_out: bool = False, **kw: Any) -> PlanEntry:
    return PlanEntry(model, EngineSettings(**kw), held_out)


EAGER = {"enforce_eager": True}
# Cheap first, models interleaved, so that a partial run still covers many models. Phase 1 is one
# eager start per model plus the graphs reference (qwen2.5-7b u0.90 len8192 graphs); later phases
# vary utilization, max_model_len, max_num_batched_tokens/max_num_seqs, fp8 KV, graphs, the V1
# runner (the only one that estimates CUDA graph memory in 0.26.0), kv_cache_memory_bytes, block size.
# qwen2.5-14b is held out entirely: an unseen shape tests the fit hardest.
PLAN: tuple[PlanEntry, ...] = (
    _e("qwen2.5-0.5b", gpu_memory_utilization=0.9, max_model_len=8192, **EAGER),
    _e("qwen2.5-7b", gpu_memory_utilization=0.9, max_model_len=8192, **EAGER),
    _e("llama-3.1-8b", gpu_memory_utilization=0.9, max_model_len=8192, **EAGER),
    _e("mistral-7b-v0.3", gpu_memory_utilization=0.9, max_model_len=8192, **EAGER),
    _e("qwen2.5-7b", gpu_memory_utilization=0.9, max_model_len=8192),
    _e("qwen2.5-32b", gpu_memory_utilization=0.9, max_model_len=8192, **EAGER),
    _e("qwen2.5-14b", True, gpu_memory_utilization=0.9, max_model_len=8192, **EAGER),
    # phase 2: utilization and max_model_len
    _e("qwen2.5-0.5b", gpu_memory_utilization=0.5, max_model_len=2048, **EAGER),
    _e("llama-3.1-8b", gpu_memory_utilization=0.5, max_model_len=32768, **EAGER),
    _e("mistral-7b-v0.3", True, gpu_memory_utilization=0.5, max_model_len=2048, **EAGER),
    _e("qwen2.5-32b", gpu_memory_utilization=0.6, max_model_len=2048, **EAGER),
    _e("qwen2.5-7b", True, gpu_memory_utilization=0.5, max_model_len=32768, **EAGER),
    # phase 3: batch-token budget, sequence count, fp8 KV
    _e("qwen2.5-0.5b", gpu_memory_utilization=0.9, max_model_len=8192, kv_cache_dtype="fp8", **EAGER),
    _e("llama-3.1-8b", gpu_memory_utilization=0.9, max_model_len=8192, max_num_batched_tokens=4096, **EAGER),
    _e("qwen2.5-7b", True, gpu_memory_utilization=0.9, max_model_len=8192, max_num_batched_tokens=32768, **EAGER),
    _e("mistral-7b-v0.3", gpu_memory_utilization=0.9, max_model_len=32768, kv_cache_dtype="fp8", **EAGER),
    _e("qwen2.5-32b", True, gpu_memory_utilization=0.9, max_model_len=32768, kv_cache_dtype="fp8", **EAGER),
    _e("qwen2.5-14b", True, gpu_memory_utilization=0.5, max_model_len=2048, max_num_batched_tokens=2048,
       max_num_seqs=256, **EAGER),
    # phase 4: torch.compile + CUDA graphs
    _e("llama-3.1-8b", gpu_memory_utilization=0.9, max_model_len=8192),
    _e("qwen2.5-0.5b", True, gpu_memory_utilization=0.9, max_model_len=8192),
    _e("mistral-7b-v0.3", gpu_memory_utilization=0.9, max_model_len=8192),
    _e("qwen2.5-32b", gpu_memory_utilization=0.9, max_model_len=8192),
    _e("qwen2.5-7b", gpu_memory_utilization=0.9, max_model_len=8192, model_runner="v1"),
    _e("qwen2.5-14b", True, gpu_memory_utilization=0.9, max_model_len=32768, kv_cache_dtype="fp8"),
    # phase 5: the other ways to size the pool
    _e("llama-3.1-8b", gpu_memory_utilization=0.9, max_model_len=8192, kv_cache_memory_bytes=40 * GiB, **EAGER),
    _e("qwen2.5-0.5b", True, gpu_memory_utilization=0.9, max_model_len=8192, block_size=32, **EAGER),
    _e("qwen2.5-7b", gpu_memory_utilization=0.9, max_model_len=8192, max_num_seqs=64, **EAGER),
    # phase 6, two-GPU machine only (nvidia-h200-x2; NCCL NVLink multicast stays off): tensor parallel,
    # where per-rank weights, KV heads per rank (4 -> 2 for qwen2.5-7b) and the min over ranks matter.
    # Entries needing more GPUs than are visible are skipped with a reason, never started.
    _e("qwen2.5-7b", gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=2, **EAGER),
    _e("qwen2.5-72b", gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=2, **EAGER),
    _e("llama-3.1-70b", True, gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=2, **EAGER),
    # phase 7, added after the first TP2 runs identified the all-reduce term of the peak and the TP2
    # non-torch constant (on qwen2.5-7b/72b): held-out shapes, settings and CUDA graphs under TP.
    _e("qwen2.5-32b", True, gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=2, **EAGER),
    _e("qwen2.5-14b", True, gpu_memory_utilization=0.5, max_model_len=32768, tensor_parallel_size=2, **EAGER),
    _e("mistral-7b-v0.3", True, gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=2),
    # phase 8, four- and eight-GPU machines only (nvidia-h200-x4 / -x8): the held-out test of the
    # all-reduce term of the profile peak where Llama's down_proj moment (I/tp + 5h) overtakes its
    # gate_up moment (3I/tp + 3h), i.e. once I/tp < h, and of the non-torch growth beyond TP2.
    # Predictions written before any run: docs/RECORDING.md, "Tensor parallel 4 and 8".
    _e("llama-3.1-70b", True, gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=4, **EAGER),
    _e("qwen2.5-72b", True, gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=4, **EAGER),
    _e("qwen2.5-32b", True, gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=4, **EAGER),
    _e("llama-3.1-70b", True, gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=8, **EAGER),
    _e("qwen2.5-72b", True, gpu_memory_utilization=0.9, max_model_len=8192, tensor_parallel_size=8, **EAGER),
)


def visible_gpus() -> int:
    """GPUs this process may use: CUDA_VISIBLE_DEVICES if set, else `nvidia-smi -L` (0 on failure)."""
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        return len([d for d in cvd.split(",") if d.strip()])
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def runnable(entries: list[PlanEntry], gpus: int) -> tuple[list[PlanEntry], list[str]]:
    """Entries that fit on `gpus` GPUs, and a reason line for each one that does not."""
    keep, skipped = [], []
    for e in entries:
        tp = e.settings.tensor_parallel_size
        if tp > gpus:
            skipped.append(f"skip {e.id}: needs {tp} GPUs, {gpus} visible (run it on nvidia-h200-x{tp})")
        else:
            keep.append(e)
    return keep, skipped


def load_model_config(name: str) -> tuple[dict[str, Any], str]:
    """Catalog file first; the embedded shape only when it is missing. A shape disagreement is
    reported, not fatal: the device run must not die on a catalog edit."""
    path = CATALOG / f"{name}.json"
    if not path.exists():
        return dict(FALLBACK_CONFIGS[name]), "embedded fallback (catalog file missing)"
    config = json.loads(path.read_text())
    config = {k: v for k, v in config.items() if not k.startswith("_") or k == "_name_or_path"}
    fallback = FALLBACK_CONFIGS.get(name, {})
    diff = {k: (config.get(k), fallback[k]) for k in SHAPE_KEYS if k in fallback and config.get(k) != fallback[k]}
    source = str(path.relative_to(REPO))
    return config, source + (f" (differs from the embedded shape: {diff})" if diff else "")


def weight_bytes(config: dict[str, Any]) -> float:
    """bf16 parameter bytes of a dense decoder, for planning only."""
    h, layers, inter = config["hidden_size"], config["num_hidden_layers"], config["intermediate_size"]
    heads, kv, vocab = config["num_attention_heads"], config["num_key_value_heads"], config["vocab_size"]
    head_dim = config.get("head_dim") or h // heads
    per_layer = h * (heads + 2 * kv) * head_dim + heads * head_dim * h + 3 * h * inter
    embeddings = vocab * h * (1 if config.get("tie_word_embeddings") else 2)
    return 2.0 * float(layers * per_layer + embeddings)


def estimate_s(entry: PlanEntry, config: dict[str, Any]) -> float:
    graphs = 0.0 if entry.settings.enforce_eager else GRAPHS_S
    return IMPORT_S + ENGINE_EAGER_S + graphs + AFTER_START_S + PER_WEIGHT_GIB_S * weight_bytes(config) / GiB


def select(plan: tuple[PlanEntry, ...], only: list[str] | None, models: list[str] | None) -> list[PlanEntry]:
    ids = [e.id for e in plan]
    for wanted in only or []:
        if wanted not in ids:
            hint = suggest.did_you_mean(wanted, ids)
            raise SystemExit(f"--only: no plan entry {wanted!r}" + (f"; {hint}" if hint else "")
                             + " (--dry-run lists the ids)")
    names = sorted({e.model for e in plan})
    for wanted in models or []:
        if wanted not in names:
            raise SystemExit(f"--models: unknown model {wanted!r}; plan models are {names}")
    return [e for e in plan if (not only or e.id in only) and (not models or e.model in models)]


# ------------------------------------------------------------------ provenance
def parse_nvidia_smi_q(text: str) -> dict[str, str]:
    """`nvidia-smi -q` as flat "Section/Key" -> value; the per-GPU header becomes "gpu"."""
    flat: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip())
        key, sep, value = raw.strip().partition(" : ")
        if not sep and raw.rstrip().endswith(":"):  # "Key : " with an empty value
            key, sep, value = raw.strip()[:-1], ":", ""
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = "gpu" if re.match(r"GPU [0-9A-Fa-f:.]+$", key) else key.strip()
        if sep:
            flat["/".join([s for _, s in stack] + [key])] = value.strip()
        else:
            stack.append((indent, key))
    return flat


SMI_SUMMARY = {
    "name": ("gpu/Product Name",), "driver": ("Driver Version",), "cuda": ("CUDA Version",),
    "mig_mode": ("gpu/MIG Mode/Current",), "persistence": ("gpu/Persistence Mode",),
    "pstate": ("gpu/Performance State",), "memory_total": ("gpu/FB Memory Usage/Total",),
    "memory_reserved": ("gpu/FB Memory Usage/Reserved",), "memory_used": ("gpu/FB Memory Usage/Used",),
    "power_limit": ("gpu/GPU Power Readings/Current Power Limit", "gpu/Power Readings/Power Limit"),
    "power_default_limit": ("gpu/GPU Power Readings/Default Power Limit", "gpu/Power Readings/Default Power Limit"),
    "clock_graphics": ("gpu/Clocks/Graphics",), "clock_sm": ("gpu/Clocks/SM",), "clock_memory": ("gpu/Clocks/Memory",),
    "max_clock_sm": ("gpu/Max Clocks/SM",), "max_clock_memory": ("gpu/Max Clocks/Memory",),
    "app_clock_graphics": ("gpu/Applications Clocks/Graphics",),
}


def nvidia_smi_summary() -> dict[str, Any]:
    try:
        text = subprocess.run(["nvidia-smi", "-q"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    flat = parse_nvidia_smi_q(text)
    summary = {name: next((flat[k] for k in keys if k in flat), None) for name, keys in SMI_SUMMARY.items()}
    return {"summary": summary, "all": flat}


def installed_version(package: str) -> dict[str, str | None]:
    """Version without importing (import vllm costs ~20 s): read the package's version file."""
    import importlib.util
    from importlib import metadata

    out: dict[str, str | None] = {"version": None}
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        for name in ("_version.py", "version.py"):
            path = Path(spec.origin).parent / name
            text = path.read_text(errors="replace") if path.exists() else ""
            found = re.search(r"__version__\s*(?::\s*\w+\s*)?=\s*(?:version\s*=\s*)?['\"]([^'\"]+)", text)
            if found:
                out["version"] = found.group(1)
                cuda = re.search(r"^cuda(?::\s*[\w\[\]]+)?\s*=\s*['\"]([^'\"]+)", text, re.MULTILINE)
                if cuda:
                    out["cuda"] = cuda.group(1)
                break
    if out["version"] is None:
        try:
            out["version"] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return out


def provenance(args: argparse.Namespace, part: int, entries: list[PlanEntry],
               configs: dict[str, tuple[dict[str, Any], str]]) -> dict[str, Any]:
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=False).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "host": socket.gethostname(),
        "command": " ".join([sys.executable, *sys.argv]), "python": platform.python_version(), "git_commit": commit,
        "part": part, "budget_s": args.budget_s, "state_file": args.state, "worker_log_level": args.log_level,
        "versions": {name: installed_version(name) for name in ("vllm", "torch", "transformers", "triton")},
        "nvidia_smi": nvidia_smi_summary(), "gpu_memory_at_start": read_gpu_memory(),
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(("VLLM_", "CUDA_", "PYTORCH_", "NCCL_"))},
        "weights": "random (load_format=dummy): exact for memory",
        "models": {name: {"config_source": source, "config": config} for name, (config, source) in configs.items()},
        "plan": [{"id": e.id, "held_out": e.held_out} for e in entries],
    }


# ------------------------------------------------------------------ state and output
def load_state(path: Path | None) -> dict[str, Any]:
    if path is None or not path.exists():
        return {"done": {}, "parts": []}
    state: dict[str, Any] = json.loads(path.read_text())
    state.setdefault("done", {})
    state.setdefault("parts", [])
    return state


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    os.replace(tmp, path)


def log(message: str) -> None:
    print(f"[capacity {time.monotonic() - T_START:6.1f}s] {message}", flush=True)


def headline(result: dict[str, Any]) -> str:
    if result.get("status") != "ok":
        return f"ERROR {result.get('error_class')}: {result.get('error_message')}"
    blocks = (result.get("resolved") or {}).get("num_gpu_blocks")
    kv = (result.get("log") or {}).get("available_kv_cache_gib")
    gen = result.get("generate") or {}
    return (f"ok num_gpu_blocks={blocks:,} kv={kv} GiB" if isinstance(blocks, int) else f"ok num_gpu_blocks={blocks}") \
        + ("" if gen.get("ok", True) else f" (generate failed: {gen.get('error')})")


Measure = Callable[..., dict[str, Any]]


def run_plan(args: argparse.Namespace, entries: list[PlanEntry], measure: Measure = measure_memory_ledger,
             clock: Callable[[], float] = time.monotonic, start: float | None = None) -> dict[str, Any]:
    """Run what fits in the budget; write the batch file and the state after every configuration."""
    start = T_START if start is None else start
    state_path = Path(args.state) if args.state else None
    state = load_state(state_path)
    part = args.part or len(state["parts"]) + 1
    state["parts"].append(part)
    configs = {name: load_model_config(name) for name in sorted({e.model for e in entries})}
    out_path = Path(args.out) / f"capacity-{part}.json"
    doc: dict[str, Any] = {"schema": SCHEMA, "provenance": provenance(args, part, entries, configs), "runs": []}
    write_json(out_path, doc)
    retry = {"error"} if args.retry_errors else set()
    pending = [e for e in entries if e.id not in state["done"] or state["done"][e.id].get("status") in retry]
    log(f"part {part}: {len(pending)} of {len(entries)} configurations pending, "
        f"budget {args.budget_s:g} s -> {out_path}")
    while pending:
        remaining = args.budget_s - (clock() - start)
        fitting = [e for e in pending if estimate_s(e, configs[e.model][0]) + RESERVE_S <= remaining]
        if not fitting:
            log(f"stopping: {remaining:.0f} s left, the cheapest pending configuration needs "
                f"{min(estimate_s(e, configs[e.model][0]) for e in pending) + RESERVE_S:.0f} s; {len(pending)} left")
            break
        entry = fitting[0]
        pending.remove(entry)
        config, source = configs[entry.model]
        est = estimate_s(entry, config)
        timeout = max(min(3 * est, remaining - RESERVE_S), est)
        log(f"start {entry.id}{' [held out]' if entry.held_out else ''} (estimate {est:.0f} s, limit {timeout:.0f} s)")
        t0 = clock()
        result = measure(config, entry.settings, timeout_s=timeout, workdir=Path(args.workdir) / "runs" / entry.id,
                         model_dir=Path(args.workdir) / "models" / entry.model, log_level=args.log_level)
        log(f"done  {entry.id} in {clock() - t0:.1f} s: {headline(result)}")
        doc["runs"].append({"id": entry.id, "model": entry.model, "held_out": entry.held_out,
                            "settings": entry.settings.to_dict(), "config_source": source,
                            "estimate_s": round(est, 1), "result": result})
        doc["provenance"]["wall_s"] = round(clock() - start, 1)
        write_json(out_path, doc)
        state["done"][entry.id] = {"status": result.get("status"), "error_class": result.get("error_class"),
                                   "part": part, "num_gpu_blocks": (result.get("resolved") or {}).get("num_gpu_blocks")}
        if state_path is not None:
            write_json(state_path, state)
    if state_path is not None:
        write_json(state_path, state)
    ok = sum(r["result"].get("status") == "ok" for r in doc["runs"])
    log(f"part {part} finished: {len(doc['runs'])} run(s), {ok} ok; {len(pending)} still pending -> {out_path}")
    return doc


def print_plan(args: argparse.Namespace, entries: list[PlanEntry]) -> None:
    state = load_state(Path(args.state)) if args.state else {"done": {}}
    configs = {name: load_model_config(name) for name in sorted({e.model for e in entries})}
    total = sum(estimate_s(e, configs[e.model][0]) for e in entries)
    held = sum(e.held_out for e in entries)
    print(f"capacity plan: {len(entries)} configurations ({held} held out), {len(configs)} models, "
          f"~{total:,.0f} s of planning estimates; one call's budget: {args.budget_s:g} s")
    for name, (config, source) in configs.items():
        print(f"  {name:16s} {weight_bytes(config) / GiB:6.1f} GiB bf16 weights  config: {source}")
    print(f"{'#':>3} {'id':58s} {'held':4s} {'est_s':>6s} {'cum_s':>7s}  status")
    cumulative = 0.0
    for i, e in enumerate(entries, 1):
        est = estimate_s(e, configs[e.model][0])
        cumulative += est
        done = state["done"].get(e.id, {}).get("status", "")
        print(f"{i:3d} {e.id:58s} {'yes' if e.held_out else '':4s} {est:6.0f} {cumulative:7.0f}  {done}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget-s", type=float, default=540.0, help="stop STARTING configurations after this (s)")
    p.add_argument("--state", default=None, help="JSON file of ids already done (read and updated)")
    p.add_argument("--out", default=os.environ.get("OUT", "capacity-out"), help="directory for capacity-<part>.json")
    p.add_argument("--workdir", default="/tmp/anatomy-capacity", help="model dirs, logs and worker files")
    p.add_argument("--part", type=int, default=None, help="part number (default: from the state file)")
    p.add_argument("--only", default=None, help="comma-separated plan ids")
    p.add_argument("--models", default=None, help="comma-separated model names")
    p.add_argument("--retry-errors", action="store_true", help="run again the ids whose status was error")
    p.add_argument("--log-level", default="DEBUG", choices=["DEBUG", "INFO"], help="VLLM_LOGGING_LEVEL of workers")
    p.add_argument("--dry-run", action="store_true", help="print the plan and estimates; needs no GPU")
    args = p.parse_args(argv)
    if args.budget_s <= 0:
        p.error("--budget-s must be positive")
    return args


def _split(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    entries = select(PLAN, _split(args.only), _split(args.models))
    if args.dry_run:
        print_plan(args, entries)
        return 0
    entries, skipped = runnable(entries, visible_gpus())
    for line in skipped:
        print(f"[capacity] {line}", flush=True)
    doc = run_plan(args, entries)
    return 0 if doc["runs"] or not entries else 1


if __name__ == "__main__":
    sys.exit(main())
