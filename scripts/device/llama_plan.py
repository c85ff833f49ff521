#!/usr/bin/env python3
"""One device visit for llama.cpp on the H200: memory ledger, decode and prefill per weight type,
and llama-server under concurrency. Run by scripts/device/llama_visit.sh (which builds or unpacks
llama.cpp first); `--dry-run` prints the plan and its time estimates anywhere.

Phases (`--phase`):
  models   (during the build; CPU and disk only) random-weight F16 GGUFs: qwen2.5-0.5b and
           qwen2.5-7b shapes with the synthetic BPE vocabulary of make_random_gguf.py, and two
           tiny-hidden models (hidden 256, the same architecture, vocabulary width and 24 / 28 layers,
           no tokenizer)
           whose decode time is the per-token overhead at that layer count (their weights are a few MB).
           The tensors are a repeated random block, not fresh noise: llama.cpp's speed and memory do
           not depend on the values, and 15 GB of fresh normal samples would take minutes.
  measure  (after the build) in priority order, each run appended to $OUT/llama.json as it ends:
           quantize every F16 model to Q8_0 and Q4_K_M (the 7B in the background) and record the
           header llama-quantize wrote (gguf-py); llama-bench pp512/tg128 (-fa 1, -r 5, not verbose) on the
           tiny models, the 0.5B and the 7B in F16, Q8_0 and Q4_K_M; llama-server load ledgers
           (-lv 4) with settings that exercise each ledger rule (per-slot cell padding, a quantized KV cache,
           a unified cache, a small ubatch) with nvidia-smi's memory.used while loaded; a concurrency
           sweep (C = 1, 2, 4 ... 64 requests of 1024 token ids + 256 tokens sent at once, vLLM's recorded
           shape) on the 7B Q4_K_M, then C = 1, 8, 32, 64 on the 7B F16 (last: skipped if the budget is spent).
A run starts only if its estimate fits what is left of --budget-s (counted from the measure
phase's start); the rest are written as skipped. llama-perplexity is not run: the device build
does not make it, and on random weights a perplexity measures nothing.

The batch (schema pytest-anatomy/device-batch/v1, provenance.kind "llama") imports with
`pytest-anatomy import-device $OUT/llama.json $OUT/ceilings.json` into results/h200/llama/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

SCHEMA = "pytest-anatomy/device-batch/v1"
# The llama.cpp the device builds: the copy vendored in the llama-cpp-python 0.3.36 sdist (pinned by sha256 in
# shared/device/llama/make_carry.sh). Its commit is the sdist's .git/modules/vendor/llama.cpp/HEAD; the carry
# drops .git, so the binaries' own build_commit (llama-bench's JSON) may read "unknown".
ENGINE = {"engine": "llama.cpp", "version": "llama-cpp-python 0.3.36 (vendored llama.cpp)", "ggml": "0.25.3",
          "source_commit": "0c1e57098bba43ac29e6e3b677cdceebdd22334f"}
QUANT_TYPES = ("Q8_0", "Q4_K_M")
# The tiny models keep the vocabulary width of the model they stand beside (its lm_head, its logits copied to
# the host every token: per-token costs that do not shrink with the hidden size) and shrink everything else:
# head_dim 64 (a flash-attention kernel size), rows of 256 (the k-quants apply), a few MB per layer.
TINY = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2}
LEVELS = (1, 2, 4, 8, 16, 32, 64)
# vLLM's recorded H200 closed-loop runs (results/h200/latency/qwen2.5-7b.closed.cC) are 1024 in / 256 out
# at C = 1, 8, 32, 64: the same shape here, so the two engines' curves are compared point for point.
SWEEP_PROMPT, SWEEP_GEN = 1024, 256


@dataclass(frozen=True)
class Model:
    id: str  # "qwen2.5-7b", "tiny-28l"
    preset: str  # make_random_gguf.py preset the shape starts from
    layers: int | None = None
    tiny: bool = False

    def path(self, models: Path, weights: str) -> Path:
        return models / f"{self.id}.{weights.lower()}.gguf"


MODELS = (Model("qwen2.5-0.5b", "qwen2.5-0.5b"), Model("qwen2.5-7b", "qwen2.5-7b"),
          Model("tiny-24l", "qwen2.5-0.5b", 24, True), Model("tiny-28l", "qwen2.5-7b", 28, True))


@dataclass(frozen=True)
class ServerCase:
    """One llama-server start: its load ledger, and optionally a concurrency sweep."""

    model: str
    weights: str
    args: tuple[str, ...]
    sweep: bool = False
    levels: tuple[int, ...] = LEVELS

    @property
    def id(self) -> str:
        tag = "sweep" if self.sweep else "load"
        return f"{self.model}.{self.weights.lower()}.server-{tag}.{'_'.join(a.lstrip('-') for a in self.args)}"


# Each load exercises a ledger rule: per-slot cells padded to 256 (8000 / 3 -> 2816 x 3), a q8_0 cache
# (rows padded to 512 elements), a unified cache with a small ubatch, the 7B's Q6_K rows.
SERVERS = (
    ServerCase("qwen2.5-0.5b", "F16", ("-c", "8000", "-np", "3", "-fa", "on")),
    ServerCase("qwen2.5-0.5b", "Q8_0", ("-c", "4096", "-np", "1", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0")),
    ServerCase("qwen2.5-0.5b", "Q4_K_M", ("-c", "16384", "-np", "4", "-fa", "on", "--kv-unified", "-ub", "256")),
    ServerCase("qwen2.5-7b", "Q8_0", ("-c", "8192", "-np", "1", "-fa", "off")),
    # -c 81920 -np 64: 1280 cells per slot, room for 1024 + 256
    ServerCase("qwen2.5-7b", "Q4_K_M", ("-c", "81920", "-np", "64", "-fa", "on"), sweep=True),
    ServerCase("qwen2.5-7b", "F16", ("-c", "81920", "-np", "64", "-fa", "on"), sweep=True, levels=(1, 8, 32, 64)),
)

# Planning estimates in seconds (rough, conservative; never compared with results).
EST = {"quantize-small": 4, "quantize-7b": 60, "bench-tiny": 4, "bench-small": 6, "bench-7b": 16,
       "server-load": 10, "sweep-level": 6, "header": 1}


def est_sweep(case: ServerCase) -> float:
    return EST["sweep-level"] * len(case.levels) if case.sweep else 0.0


def est_bench(m: Model) -> float:
    return EST["bench-7b"] if m.id == "qwen2.5-7b" else EST["bench-tiny"] if m.tiny else EST["bench-small"]


# --- output ---------------------------------------------------------------------------------
class Batch:
    """$OUT/llama.json, rewritten (atomically) after every run, so a cut-short call keeps its runs."""

    def __init__(self, out: Path, provenance: dict[str, Any]) -> None:
        self.path = out / "llama.json"
        self.doc: dict[str, Any] = {"schema": SCHEMA, "provenance": provenance, "runs": []}
        self._lock = threading.Lock()

    def add(self, run: dict[str, Any]) -> None:
        with self._lock:
            self.doc["runs"].append(run)
            build = (run.get("result") or {}).get("build")
            llama = self.doc["provenance"]["versions"]["llama.cpp"]
            if build and llama.get("build_commit") is None:  # the first tool run that reports its build
                llama["build_commit"], llama["build_number"] = build.get("commit"), build.get("number")
            tmp = self.path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(self.doc, indent=1, allow_nan=False) + "\n")
            tmp.replace(self.path)


def nvidia_smi() -> dict[str, Any]:
    fields = "name,driver_version,memory.used,memory.total,clocks.sm,clocks.mem,power.limit"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20, check=True).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return {}
    vals = [v.strip() for v in out.split(",")]
    d = dict(zip(fields.split(","), vals))
    return {"name": d.get("name"), "driver": d.get("driver_version"),
            "memory_used_bytes": float(d["memory.used"]) * 2**20 if d.get("memory.used") else None,
            "memory_total_bytes": float(d["memory.total"]) * 2**20 if d.get("memory.total") else None,
            "clocks_sm_mhz": d.get("clocks.sm"), "clocks_mem_mhz": d.get("clocks.mem"), "power_limit": d.get("power.limit")}


def provenance(args: argparse.Namespace) -> dict[str, Any]:
    smi = nvidia_smi()
    cuda = None
    try:
        cuda = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=20).stdout.split("CUDA Version:")[1].split()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return {
        "kind": "llama", "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable, *sys.argv]), "host": platform.node(), "python": platform.python_version(),
        "budget_s": args.budget_s, "nvidia_smi": {"summary": {**smi, "cuda": cuda}},
        "versions": {"llama.cpp": {**ENGINE, "build_commit": None}},
        "model": {"id": "qwen2.5-0.5b, qwen2.5-7b, tiny-24l, tiny-28l",
                  "weights": "random (repeated random block): exact for time and memory"},
        "definitions": "llama-bench samples_ts per repetition; server TTFT/ITL client-side from the SSE stream",
    }


# --- phase: models ------------------------------------------------------------------------------
def write_f16(model: Model, path: Path, writer_dir: Path) -> dict[str, Any]:
    """An F16 GGUF of the model's shape; make_random_gguf.py's header and tokenizer, fast tensor fill."""
    sys.path.insert(0, str(writer_dir))
    import gguf
    import make_random_gguf as mrg
    import numpy as np

    t0 = time.monotonic()
    cfg = dict(mrg.PRESETS[model.preset])
    if model.tiny:
        cfg.update(TINY)
    s = mrg.shape_from_config(cfg, model.layers)
    w = gguf.GGUFWriter(str(path), s["arch"])
    w.add_name(f"random-{model.id}-f16")
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["H"])
    w.add_block_count(s["L"])
    w.add_feed_forward_length(s["FF"])
    w.add_head_count(s["NH"])
    w.add_head_count_kv(s["NKV"])
    w.add_rope_freq_base(s["theta"])
    w.add_layer_norm_rms_eps(s["eps"])
    w.add_vocab_size(s["V"])
    w.add_file_type(mrg.FTYPE["f16"])
    if model.tiny:
        w.add_tokenizer_model("none")
    else:
        tokens, types, merges = mrg.synthetic_bpe(s["V"])
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(mrg.PRE.get(s["arch"], "default"))
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(s["V"] - 3)
        w.add_eos_token_id(s["V"] - 1)
        w.add_pad_token_id(s["V"] - 3)
        w.add_add_bos_token(False)
        w.add_chat_template(mrg.CHATML)
    plan = mrg.tensor_list(s)
    for name, shape, _ in plan:
        kind, npdt, nbytes, sshape = mrg.storage(shape, "f16")
        w.add_tensor_info(name, sshape, np.dtype(npdt), nbytes, raw_dtype=None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    block = (np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32) * 0.02)
    for name, shape, is_norm in plan:
        n = int(np.prod(shape))
        if is_norm or len(shape) == 1:
            d = np.ones(shape, np.float32) if is_norm else np.resize(block, n).reshape(shape)
        else:
            d = np.resize(block.astype(np.float16), n).reshape(shape)
        w.write_tensor_data(d)
    w.close()
    return {"path": str(path), "seconds": time.monotonic() - t0, "bytes": path.stat().st_size}


def phase_models(args: argparse.Namespace) -> int:
    models = Path(args.models_dir)
    models.mkdir(parents=True, exist_ok=True)
    wanted = set(args.models.split(",")) if args.models else {m.id for m in MODELS}
    order = sorted((m for m in MODELS if m.id in wanted), key=lambda m: m.id == "qwen2.5-7b")  # the 7B last: the small ones are needed first
    report = []
    for m in order:
        p = m.path(models, "F16")
        try:
            r = write_f16(m, p.with_suffix(".part"), Path(args.writer_dir))
            p.with_suffix(".part").replace(p)
            report.append({"model": m.id, **r, "path": str(p)})
        except Exception as exc:  # noqa: BLE001 - reported; the measure phase skips what is missing
            report.append({"model": m.id, "error": f"{type(exc).__name__}: {exc}"})
        print(f"[models] {report[-1]}", flush=True)
    (models / "models.json").write_text(json.dumps(report, indent=1))
    return 0


# --- phase: measure -------------------------------------------------------------------------------
def header_summary(path: Path) -> dict[str, Any]:
    import gguf

    from pytest_anatomy.specs.gguf_file import header_to_dict, read_gguf_header

    # gguf-py's own byte count of each tensor's data (its reader's n_bytes): the measurement the
    # ledger's tensor bytes are checked against, independent of our block-size table
    tensor_bytes = sum(int(t.n_bytes) for t in gguf.GGUFReader(str(path), "r").tensors)
    return {**header_to_dict(read_gguf_header(path)), "file_bytes": path.stat().st_size, "tensor_bytes": tensor_bytes}


# Background quantization leaves cores to the benchmark beside it (llama-bench's host thread launches
# every kernel; a saturated CPU would slow exactly the overhead the tiny models measure).
QUANT_THREADS = max(1, (os.cpu_count() or 8) - 4)


def quantize(src: Path, dst: Path, ftype: str) -> dict[str, Any]:
    from pytest_anatomy.measure.llama_cpp import binary

    t0 = time.monotonic()
    proc = subprocess.run(["nice", "-n", "10", str(binary("llama-quantize")), str(src), str(dst), ftype,
                           str(QUANT_THREADS)],
                          capture_output=True, text=True, timeout=600, check=False)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines()
             if "model size" in ln or "quant size" in ln or "falling back" in ln or "error" in ln.lower()]
    if proc.returncode != 0:
        raise RuntimeError(f"llama-quantize {ftype} exited {proc.returncode}: {lines[-5:]}")
    return {"seconds": time.monotonic() - t0, "log_lines": lines[:200]}


class Runner:
    def __init__(self, args: argparse.Namespace, batch: Batch) -> None:
        self.args, self.batch = args, batch
        self.t0 = time.monotonic()
        self.models = Path(args.models_dir)

    def left(self) -> float:
        return self.args.budget_s - (time.monotonic() - self.t0)

    def run(self, run_id: str, kind: str, settings: dict[str, Any], est: float,
            body: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        if est > self.left():
            self.batch.add({"id": run_id, "kind": kind, "settings": settings,
                            "result": {"status": "skipped", "reason": f"estimate {est:.0f} s > {self.left():.0f} s left"}})
            print(f"[skip] {run_id}", flush=True)
            return None
        t0 = time.monotonic()
        try:
            result = {"status": "ok", **body()}
        except Exception as exc:  # noqa: BLE001 - the run is recorded as failed, the plan goes on
            result = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:4000]}
        result["elapsed_s"] = time.monotonic() - t0
        run = {"id": run_id, "kind": kind, "settings": settings, "result": result}
        self.batch.add(run)
        print(f"[{result['status']}] {run_id} {result['elapsed_s']:.1f} s ({self.left():.0f} s left)", flush=True)
        return run


def bench_body(path: Path) -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        from pytest_anatomy.measure.llama_cpp import run_bench

        r = run_bench(path, n_prompt=512, n_gen=128, repetitions=5, flash_attn=True, timeout_s=240)
        metrics: dict[str, Any] = {}
        samples: dict[str, list[float]] = {}
        build = None
        for t in r["tests"]:
            metrics[t["test"]] = {"tok_per_s": t["tok_per_s"]}
            samples[f"{t['test']}.tok_per_s"] = t["samples"]["tok_per_s"]
            build = t["build"]
        metrics["load"] = {"buffers_bytes": r["load_log"]["buffers_bytes"], "file_size_bytes": r["load_log"]["file_size_bytes"]}
        return {"metrics": metrics, "samples": samples, "tests": r["tests"], "load_log": r["load_log"],
                "build": build, "command": r["command"]}
    return body


def server_body(case: ServerCase, path: Path, out: Path, deadline: float) -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        from pytest_anatomy.measure.llama_cpp import (
            LlamaServer,
            concurrency_sweep,
            load_log_dict,
        )

        before = nvidia_smi().get("memory_used_bytes")
        log_path = out / f"{case.id}.log"
        with LlamaServer(path, list(case.args), log_path=log_path) as srv:
            loaded = nvidia_smi().get("memory_used_bytes")
            log = load_log_dict(srv.load_log())
            slots = srv.slots()
            levels = (concurrency_sweep(srv, list(case.levels), SWEEP_PROMPT, SWEEP_GEN, deadline=deadline)
                      if case.sweep else [])
            metrics_after = srv.metrics()
        if log_path.stat().st_size > 4 << 20:  # keep $OUT small: the buffer lines are parsed above
            log_path.write_text("\n".join(srv.log_text().splitlines()[:400]))
        metrics = {"load": {"buffers_bytes": log["buffers_bytes"], "file_size_bytes": log["file_size_bytes"],
                            "gpu_memory_used_bytes": loaded, "gpu_memory_before_bytes": before, "ready_s": srv.ready_s}}
        for lv in levels:
            metrics[f"c{lv['concurrency']}"] = {k: lv[k] for k in ("throughput_tok_per_s", "ttft_s", "itl_s", "wall_s",
                                                                  "completed", "failed", "output_tokens")}
        # per-request values behind each level's medians: the scatter the sweep's tolerances are built from
        samples = {f"c{lv['concurrency']}.{q}": lv["samples"][key] for lv in levels
                   for q, key in (("itl_s", "itl_median_per_request_s"), ("ttft_s", "ttft_s"))}
        return {"metrics": metrics, "samples": samples, "load_log": log, "slots": len(slots), "sweep": levels,
                "server_metrics": metrics_after, "command": srv.cmd}
    return body


def phase_measure(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    batch = Batch(out, provenance(args))
    r = Runner(args, batch)
    models = {m.id: m for m in MODELS}
    ceilings = out / "ceilings.json"  # measured during the build (llama_visit.sh), the rooflines' denominators
    if ceilings.is_file():
        try:
            batch.add({"id": "ceilings", "kind": "ceilings", "settings": {}, "result": json.loads(ceilings.read_text())})
        except json.JSONDecodeError as exc:
            batch.add({"id": "ceilings", "kind": "ceilings", "settings": {},
                       "result": {"status": "error", "error": f"ceilings.json: {exc}"}})

    def have(m: Model, w: str) -> bool:
        return m.path(r.models, w).is_file()

    # 1. quantize: small models now, the 7B in a background thread (CPU) while the GPU benches the rest
    seven = models["qwen2.5-7b"]
    quant_7b: list[tuple[str, dict[str, Any], Callable[[], dict[str, Any]]]] = []
    for m in MODELS:
        for q in QUANT_TYPES:
            if not have(m, "F16"):
                continue
            rid = f"{m.id}.{q.lower()}.quantize"

            def qbody(m: Model = m, q: str = q) -> dict[str, Any]:
                res = quantize(m.path(r.models, "F16"), m.path(r.models, q), q)
                header = header_summary(m.path(r.models, q))
                return {**res, "header": header, "metrics": {"tensor_bytes": header["tensor_bytes"],
                                                             "file_bytes": header["file_bytes"]}}
            if m is seven:
                quant_7b.append((rid, {"model": m.id, "weights": q}, qbody))
            else:
                r.run(rid, "quantize", {"model": m.id, "weights": q}, EST["quantize-small"], qbody)
    for m in MODELS:  # the F16 headers, as written
        if have(m, "F16"):
            r.run(f"{m.id}.f16.header", "header", {"model": m.id, "weights": "F16"}, EST["header"],
                  lambda m=m: (lambda h: {"header": h, "metrics": {"tensor_bytes": h["tensor_bytes"],
                                                                     "file_bytes": h["file_bytes"]}})(
                      header_summary(m.path(r.models, "F16"))))
    # one after the other in one background thread (each quantize uses every core); both overlap the benches
    background = threading.Thread(target=lambda: [r.run(rid, "quantize", st, EST["quantize-7b"], body)
                                                  for rid, st, body in quant_7b])
    background.start()
    # 2. llama-bench: tiny (overhead), 0.5B, then the 7B (its quantized files may still be in the making)
    for m in (models["tiny-24l"], models["tiny-28l"], models["qwen2.5-0.5b"], seven):
        if m is seven:
            background.join()
        for w in ("F16", "Q8_0", "Q4_K_M"):
            if have(m, w):
                beside = f"llama-quantize (nice 10, {QUANT_THREADS} threads)" if background.is_alive() else None
                r.run(f"{m.id}.{w.lower()}.bench", "bench",
                      {"model": m.id, "weights": w, "n_prompt": 512, "n_gen": 128, "repetitions": 5,
                       "flash_attn": True, "n_gpu_layers": 99, "running_beside": beside},
                      est_bench(m), bench_body(m.path(r.models, w)))
    # 3. llama-server: load ledgers, and the concurrency sweeps
    for case in SERVERS:
        m = models[case.model]
        if have(m, case.weights):
            est = EST["server-load"] + est_sweep(case)
            deadline = time.monotonic() + max(0.0, r.left() - 10)
            r.run(case.id, "server", {"model": case.model, "weights": case.weights, "args": list(case.args),
                                      "sweep": {"levels": list(case.levels), "n_prompt": SWEEP_PROMPT, "n_gen": SWEEP_GEN}
                                      if case.sweep else None},
                  est, server_body(case, m.path(r.models, case.weights), out, deadline))
    print(f"[done] {len(batch.doc['runs'])} runs, {r.left():.0f} s of the budget left", flush=True)
    return 0


def dry_run(args: argparse.Namespace) -> int:
    rows = []
    for m in MODELS:
        for q in QUANT_TYPES:
            rows.append((f"{m.id}.{q.lower()}.quantize", EST["quantize-7b"] if m.id == "qwen2.5-7b" else EST["quantize-small"],
                         "background" if m.id == "qwen2.5-7b" else ""))
    for m in MODELS:
        for w in ("F16", "Q8_0", "Q4_K_M"):
            rows.append((f"{m.id}.{w.lower()}.bench", est_bench(m), ""))
    for c in SERVERS:
        rows.append((c.id, EST["server-load"] + est_sweep(c), ""))
    t = 0.0
    print(f"{'run':70s} {'est s':>6s} {'cum s':>6s}")
    for rid, est, note in rows:
        if note != "background":
            t += est
        print(f"{rid:70s} {est:6.0f} {t:6.0f} {note}")
    print(f"serial estimate {t:.0f} s against --budget-s {args.budget_s:.0f} s "
          f"(the 7B quantizations overlap the benches); runs that do not fit are written as skipped")
    return 0 if t <= args.budget_s else 1


# --- pre-registration: the numbers this visit should measure, written before it -----------------------
# Priors: the newest H200 ceilings recording before the visit, theory/llamacpp_latency.py's PRIOR constants,
# and a per-layer overhead from the device README's one llama.cpp measurement (Qwen2.5-0.5B, -fa 1, tg128:
# F16 775.2, Q4_K_M 822.3 tok/s, minus their roofline at the priors), scaled by layers. The 0.5B F16 and
# Q4_K_M decodes are where that overhead came from, so they are not pre-registered.
PRIOR_CEILINGS = "results/h200/ceilings/ceilings@20261201T051555.000000Z.json"
README_TG128 = {"F16": 775.2, "Q4_K_M": 822.3}
PREREG_BAND = {"attainment": 0.15, "overhead": 0.30}  # the priors' relative uncertainty, summed per term


def preregister() -> dict[str, Any]:
    from dataclasses import replace

    from pytest_anatomy.specs.gguf_file import header_from_config
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import gguf_mix
    from pytest_anatomy.theory import llamacpp_latency as ll

    ceil = json.loads((REPO / PRIOR_CEILINGS).read_text())["measurements"]
    read, mm = ceil["read_bandwidth.value"]["value"], ceil["matmul_bf16.value"]["value"]

    def header(model: str, weights: str):
        f16 = header_from_config(load_model(model))
        return f16 if weights == "F16" else replace(f16, tensors=gguf_mix.quantized_types(f16, weights))

    zero = ll.LlamaCalibration(read, mm, 0.0, source="priors")
    per_layer = {w: (1 / v - ll.decode_time(header("qwen2.5-0.5b", w), zero, context=63.5).value) / 24
                 for w, v in README_TG128.items()}
    rows = []
    for model in ("qwen2.5-0.5b", "qwen2.5-7b"):
        for weights in ("F16", "Q8_0", "Q4_K_M"):
            if model == "qwen2.5-0.5b" and weights in README_TG128:
                continue
            h = header(model, weights)
            overhead = per_layer["F16" if weights == "F16" else "Q4_K_M"] * h.block_count
            t = ll.decode_time(h, replace(zero, overhead_s=overhead), context=63.5)
            bytes_s = t.value - overhead
            band = (PREREG_BAND["attainment"] * bytes_s + PREREG_BAND["overhead"] * overhead) / t.value
            rows.append({"run": f"{model}.{weights.lower()}.bench", "quantity": "tg128.tok_per_s.median",
                         "predicted": 1 / t.value, "ratio": [1 / (1 + band), 1 / (1 - band)],
                         "terms_s": {"bytes": bytes_s, "overhead": overhead}})
    return {"written_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "priors": {"ceilings": PRIOR_CEILINGS, "read_bandwidth": read, "attainment": dict(ll.PRIOR_ATTAINMENT),
                       "overhead_per_layer_s": per_layer, "overhead_source": "shared/device/llama/README.md tg128",
                       "band": PREREG_BAND},
            "predictions": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--phase", choices=("models", "measure"), default="measure")
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    p.add_argument("--models-dir", default="/root/llama/models")
    p.add_argument("--writer-dir", default=".devcarry-llama", help="folder holding make_random_gguf.py")
    p.add_argument("--budget-s", type=float, default=240.0)
    p.add_argument("--models", default="", help="models phase: comma-separated model ids (default: all)")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--preregister", action="store_true", help="print the visit's pre-registered predictions (JSON)")
    args = p.parse_args(argv)
    if args.preregister:
        print(json.dumps(preregister(), indent=1))
        return 0
    if args.budget_s <= 0:
        p.error("--budget-s must be positive")
    if args.dry_run:
        return dry_run(args)
    if args.phase == "models":
        return phase_models(args)
    if shutil.which("nvidia-smi") is None:
        print("no nvidia-smi: the measure phase needs the GPU machine (use --dry-run here)", file=sys.stderr)
        return 2
    return phase_measure(args)


if __name__ == "__main__":
    sys.exit(main())
