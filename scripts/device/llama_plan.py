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
  measure  (after the build) each run appended to $OUT/llama.json as it ends: a background thread runs
           llama-quantize (Q8_0, Q4_K_M) on the 0.5B and 7B files, then gguf-py's header reads (class
           Background); the GPU runs go in MEASURE_ORDER, each waiting only for its own file: llama-bench
           pp512/tg128 (-fa 1, -r 5) on the tiny models and the 7B F16 (the fits every speed test needs), the
           0.5B files and their llama-server load ledgers (-lv 4, nvidia-smi's memory.used while loaded), the 7B
           Q8_0 and Q4_K_M as their files appear, a concurrency sweep (C = 1, 2, 4 ... 64 requests of 1024
           token ids + 256 tokens at once, vLLM's recorded shape) on the 7B Q4_K_M, then C = 1, 8, 32, 64 on the
           7B F16. The tiny files are quantized in the foreground first (a second each).
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

from pytest_anatomy.measure.llama_cpp import ENGINE_BUILD  # noqa: E402
from pytest_anatomy.theory.llamacpp_latency import TINY_OVERHEAD_SHAPE  # noqa: E402

SCHEMA = "pytest-anatomy/device-batch/v1"
ENGINE = ENGINE_BUILD  # the build the device makes (pytest_anatomy/measure/llama_cpp.py says which)
QUANT_TYPES = ("Q8_0", "Q4_K_M")
TINY = TINY_OVERHEAD_SHAPE  # the tiny models' shape: theory/llamacpp_latency.py says why
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
# (rows padded to 512 elements), a unified cache with a small ubatch and a padded n_ctx, the 7B's Q6_K rows.
SERVERS = (
    ServerCase("qwen2.5-0.5b", "F16", ("-c", "8000", "-np", "3", "-fa", "on")),
    ServerCase("qwen2.5-0.5b", "Q8_0", ("-c", "4096", "-np", "1", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0")),
    # -c 16000: not a multiple of 256, so the unified cache shows n_ctx's own padding (16,128 cells), which no
    # per-slot load can (2026-12-02: 8000 // 3 and 8192 // 3 both pad to 2,816)
    ServerCase("qwen2.5-0.5b", "Q4_K_M", ("-c", "16000", "-np", "4", "-fa", "on", "--kv-unified", "-ub", "256")),
    ServerCase("qwen2.5-7b", "Q8_0", ("-c", "8192", "-np", "1", "-fa", "off")),
    # -c 81920 -np 64: 1280 cells per slot, room for 1024 + 256
    ServerCase("qwen2.5-7b", "Q4_K_M", ("-c", "81920", "-np", "64", "-fa", "on"), sweep=True),
    ServerCase("qwen2.5-7b", "F16", ("-c", "81920", "-np", "64", "-fa", "on"), sweep=True, levels=(1, 8, 32, 64)),
)

# Planning estimates in seconds. "measured": the longest elapsed_s of that kind on the 2026-12-02 05:07 visit
# (results/h200/batches/20261202T050740Z/llama.json), rounded up; the rest are not measured yet (the 7B benches,
# the 7B loads and the sweeps were skipped on budget) and stay conservative guesses.
EST = {"quantize-small": 4,  # measured 0.9-3.3 s of llama-quantize (tiny, 0.5B)
       "header": 1,  # measured 0.03 s: gguf-py on a file without a tokenizer (the tiny models)
       "header-vocab": 21,  # measured 14.6-20.8 s: gguf-py reading the 151k-token vocabulary and merges
       "quantize-7b-Q8_0": 24, "quantize-7b-Q4_K_M": 84,  # measured 23.8 s and 83.1 s (12 threads, nice 10)
       "bench-tiny": 2, "bench-small": 2,  # measured 1.0-1.2 s and 1.7-2.0 s
       "bench-7b": 16,  # guess: 15 GB from the page cache, 5 x (pp512 + tg128) at ~100 tok/s for F16
       "server-load-small": 2,  # measured 1.3-1.5 s (0.5B)
       "server-load": 10, "sweep-level": 6}  # guesses (7B)


def est_sweep(case: ServerCase) -> float:
    return EST["sweep-level"] * len(case.levels) if case.sweep else 0.0


def est_server(case: ServerCase) -> float:
    return EST["server-load" if case.model == "qwen2.5-7b" else "server-load-small"] + est_sweep(case)


def est_bench(m: Model) -> float:
    return EST["bench-7b"] if m.id == "qwen2.5-7b" else EST["bench-tiny"] if m.tiny else EST["bench-small"]


def est_header(m: Model) -> float:
    return EST["header"] if m.tiny else EST["header-vocab"]


def est_quantize(m: Model, weights: str) -> float:
    """llama-quantize and the header read after it (a quantize run records both)."""
    if m.tiny:
        return EST["quantize-small"] + EST["header"]
    quant = EST[f"quantize-7b-{weights}"] if m.id == "qwen2.5-7b" else EST["quantize-small"]
    return quant + EST["header-vocab"]


# The GPU runs in order of value, each as (kind, model or server id, weights): the 2026-12-02 visit quantized the
# 7B (144 s) before any 7B bench and then had no budget left for them, so every speed test (all calibrated on the
# 7B F16 and Q8_0 benches) skipped. Now: the tiny overheads and the 7B F16 fit (no quantization needed), the 0.5B
# files (ready seconds in), the 0.5B loads, then each 7B quantized file's bench and server as soon as it exists
# (Q8_0 ~24 s in, the second fit; Q4_K_M ~110 s in, checked, with its sweep for the crossover), the F16 sweep last.
_LOADS = {c.id: c for c in SERVERS}
MEASURE_ORDER: tuple[tuple[str, str, str], ...] = (
    *(("bench", m, w) for m in ("tiny-24l", "tiny-28l") for w in ("F16", "Q8_0", "Q4_K_M")),
    ("bench", "qwen2.5-7b", "F16"),
    *(("bench", "qwen2.5-0.5b", w) for w in ("F16", "Q8_0", "Q4_K_M")),
    *(("server", c.id, c.weights) for c in SERVERS if c.model == "qwen2.5-0.5b"),
    ("bench", "qwen2.5-7b", "Q8_0"),
    *(("server", c.id, c.weights) for c in SERVERS if c.model == "qwen2.5-7b" and c.weights == "Q8_0"),
    ("bench", "qwen2.5-7b", "Q4_K_M"),
    *(("server", c.id, c.weights) for c in SERVERS if c.model == "qwen2.5-7b" and c.weights == "Q4_K_M"),
    *(("server", c.id, c.weights) for c in SERVERS if c.model == "qwen2.5-7b" and c.weights == "F16"),
)


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


def phase_models(args: argparse.Namespace) -> int:
    """The models phase (scripts/device/llama_models.py, beside this file: kept apart for size)."""
    from llama_models import phase_models as write_all

    return write_all(args, MODELS, TINY)


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

    def skip(self, run_id: str, kind: str, settings: dict[str, Any], est: float) -> None:
        self.batch.add({"id": run_id, "kind": kind, "settings": settings,
                        "result": {"status": "skipped", "reason": f"estimate {est:.0f} s > {self.left():.0f} s left"}})
        print(f"[skip] {run_id}", flush=True)

    def record(self, run_id: str, kind: str, settings: dict[str, Any], result: dict[str, Any],
               elapsed: float) -> dict[str, Any]:
        run = {"id": run_id, "kind": kind, "settings": settings, "result": {**result, "elapsed_s": elapsed}}
        self.batch.add(run)
        print(f"[{result['status']}] {run_id} {elapsed:.1f} s ({self.left():.0f} s left)", flush=True)
        return run

    def run(self, run_id: str, kind: str, settings: dict[str, Any], est: float,
            body: Callable[[], dict[str, Any]], spent: float = 0.0) -> dict[str, Any] | None:
        """body() recorded with its status and elapsed_s (plus `spent`: work done for it earlier), or skipped
        when its estimate does not fit what is left of the budget."""
        if est > self.left():
            self.skip(run_id, kind, settings, est)
            return None
        t0 = time.monotonic()
        try:
            result = {"status": "ok", **body()}
        except Exception as exc:  # noqa: BLE001 - the run is recorded as failed, the plan goes on
            result = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:4000]}
        return self.record(run_id, kind, settings, result, spent + time.monotonic() - t0)


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
            LEVEL_METRICS,
            LEVEL_SAMPLES,
            LlamaServer,
            concurrency_sweep,
            load_log_dict,
        )

        before = nvidia_smi().get("memory_used_bytes")
        log_path = out / f"{case.id}.log"
        with LlamaServer(path, list(case.args), log_path=log_path) as srv:
            loaded = nvidia_smi().get("memory_used_bytes")
            log = load_log_dict(srv.load_log())
            try:  # /slots' n_ctx is checked against the KV layout; a failure must not cost the sweep
                slots = srv.slots()
            except Exception as exc:  # noqa: BLE001 - kept in the run's result
                slots = {"count": None, "n_ctx": [], "error": f"{type(exc).__name__}: {exc}"[:400]}
            levels = (concurrency_sweep(srv, list(case.levels), SWEEP_PROMPT, SWEEP_GEN, deadline=deadline)
                      if case.sweep else [])
            metrics_after = srv.metrics()
        if log_path.stat().st_size > 4 << 20:  # keep $OUT small: the buffer lines are parsed above
            log_path.write_text("\n".join(srv.log_text().splitlines()[:400]))
        metrics = {"load": {"buffers_bytes": log["buffers_bytes"], "file_size_bytes": log["file_size_bytes"],
                            "gpu_memory_used_bytes": loaded, "gpu_memory_before_bytes": before, "ready_s": srv.ready_s,
                            "slots": slots["count"], "slot_ctx_tokens": min(slots["n_ctx"], default=None)}}
        for lv in levels:  # output_tokens / throughput: the server's count, the client's beside it (llama_cpp.py)
            metrics[f"c{lv['concurrency']}"] = {k: lv[k] for k in LEVEL_METRICS}
        # per-request values behind each level's medians (the scatter the sweep's tolerances are built from) and counts
        samples = {f"c{lv['concurrency']}.{q}": lv["samples"][key] for lv in levels for q, key in LEVEL_SAMPLES}
        return {"metrics": metrics, "samples": samples, "load_log": log, "slots": slots["count"],
                "slots_detail": slots, "sweep": levels, "server_metrics": metrics_after, "command": srv.cmd}
    return body


class Background:
    """CPU work beside the GPU runs, in one thread, so that no GPU run waits on what it does not need.

    First llama-quantize for the 0.5B and 7B files (each uses QUANT_THREADS cores; `ready(m, w)` is set the moment
    a file is written, so its bench starts then), then gguf-py's header reads of those files and of the F16 files
    with a vocabulary. On the 2026-12-02 visit those reads took 14.6-20.8 s each (108 s of its 240 s budget) in
    the foreground, before the 7B quantizations even started. A quantize run's elapsed_s is its own work
    (llama-quantize + header read), not the wall time it waited in between."""

    def __init__(self, r: Runner, quant: list[tuple[Model, str]], headers: list[Model]) -> None:
        self.r, self.quant, self.headers = r, quant, headers
        self._ready = {(m.id, w): threading.Event() for m, w in quant}
        self.thread = threading.Thread(target=self._work, daemon=True)

    def ready(self, m: Model, w: str) -> bool:
        """Wait for the file (or its quantize to be skipped or fail); True if it exists."""
        event = self._ready.get((m.id, w))
        if event is not None:
            event.wait()
        return m.path(self.r.models, w).is_file()

    def _work(self) -> None:
        done = []
        for m, w in self.quant:
            rid, settings = f"{m.id}.{w.lower()}.quantize", {"model": m.id, "weights": w}
            try:
                est = est_quantize(m, w)
                if est > self.r.left():
                    self.r.skip(rid, "quantize", settings, est)
                    continue
                t0 = time.monotonic()
                try:
                    res = quantize(m.path(self.r.models, "F16"), m.path(self.r.models, w), w)
                except Exception as exc:  # noqa: BLE001 - recorded; the plan goes on without the file
                    self.r.record(rid, "quantize", settings, {"status": "error", "error": f"{type(exc).__name__}: {exc}"},
                                  time.monotonic() - t0)
                    continue
                done.append((m, w, rid, settings, res))
            finally:
                self._ready[(m.id, w)].set()
        for m, w, rid, settings, res in done:
            self.r.run(rid, "quantize", settings, 0.0,
                       lambda m=m, w=w, res=res: {**res, **header_body(m.path(self.r.models, w))}, spent=res["seconds"])
        for m in self.headers:
            self.r.run(f"{m.id}.f16.header", "header", {"model": m.id, "weights": "F16"}, est_header(m),
                       lambda m=m: header_body(m.path(self.r.models, "F16")))


def header_body(path: Path) -> dict[str, Any]:
    h = header_summary(path)
    return {"header": h, "metrics": {"tensor_bytes": h["tensor_bytes"], "file_bytes": h["file_bytes"]}}


def phase_measure(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    batch = Batch(out, provenance(args))
    r = Runner(args, batch)
    add_ceilings(batch, out / "ceilings.json")
    models = {m.id: m for m in MODELS}
    have = [m for m in MODELS if m.path(r.models, "F16").is_file()]
    # 1. the tiny files in the foreground (a second each, and their benches come first); the rest in the background
    bg = Background(r, [(m, q) for m in have if not m.tiny for q in QUANT_TYPES], [m for m in have if not m.tiny])
    bg.thread.start()
    for m in (m for m in have if m.tiny):
        for q in QUANT_TYPES:
            r.run(f"{m.id}.{q.lower()}.quantize", "quantize", {"model": m.id, "weights": q}, EST["quantize-small"],
                  lambda m=m, q=q: {**quantize(m.path(r.models, "F16"), m.path(r.models, q), q),
                                    **header_body(m.path(r.models, q))})
        r.run(f"{m.id}.f16.header", "header", {"model": m.id, "weights": "F16"}, est_header(m),
              lambda m=m: header_body(m.path(r.models, "F16")))

    def bench(m: Model, w: str) -> None:
        if not bg.ready(m, w):
            return
        beside = f"{bg.thread.name}: llama-quantize (nice 10, {QUANT_THREADS} threads) or a header read" \
            if bg.thread.is_alive() else None
        r.run(f"{m.id}.{w.lower()}.bench", "bench",
              {"model": m.id, "weights": w, "n_prompt": 512, "n_gen": 128, "repetitions": 5, "flash_attn": True,
               "n_gpu_layers": 99, "running_beside": beside}, est_bench(m), bench_body(m.path(r.models, w)))

    def server(case: ServerCase) -> None:
        m = models[case.model]
        if not bg.ready(m, case.weights):
            return
        deadline = time.monotonic() + max(0.0, r.left() - 10)
        r.run(case.id, "server", {"model": case.model, "weights": case.weights, "args": list(case.args),
                                  "sweep": {"levels": list(case.levels), "n_prompt": SWEEP_PROMPT, "n_gen": SWEEP_GEN}
                                  if case.sweep else None},
              est_server(case), server_body(case, m.path(r.models, case.weights), out, deadline))

    # 2. GPU runs by value (docs/LLAMA.md): every speed prediction needs the tiny overheads and the 7B F16 fit,
    # the 7B Q8_0 fit next; each waits only for its own file
    servers = {c.id: c for c in SERVERS}  # a case MEASURE_ORDER does not name runs last (the fake-tools test's)
    for kind, name, weights in (*MEASURE_ORDER, *(("server", c.id, c.weights) for c in SERVERS
                                                 if ("server", c.id, c.weights) not in MEASURE_ORDER)):
        if kind == "bench":
            bench(models[name], weights)
        elif name in servers:
            server(servers[name])
    bg.thread.join()
    print(f"[done] {len(batch.doc['runs'])} runs, {r.left():.0f} s of the budget left", flush=True)
    return 0


def add_ceilings(batch: Batch, ceilings: Path) -> None:
    """The session's ceilings (measured during the build by llama_visit.sh): the rooflines' denominators."""
    if not ceilings.is_file():
        return
    try:
        batch.add({"id": "ceilings", "kind": "ceilings", "settings": {}, "result": json.loads(ceilings.read_text())})
    except json.JSONDecodeError as exc:
        batch.add({"id": "ceilings", "kind": "ceilings", "settings": {},
                   "result": {"status": "error", "error": f"ceilings.json: {exc}"}})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--phase", choices=("models", "measure"), default="measure")
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    p.add_argument("--models-dir", default="/root/llama/models")
    p.add_argument("--writer-dir", default=".devcarry-llama", help="folder holding make_random_gguf.py")
    # 300: the estimate of the whole plan (--dry-run) with its background header reads; llama_visit.sh passes what
    # its deadline leaves (~540 s with a prebuilt carry: the 2026-12-02 visit ended 340 s before its deadline)
    p.add_argument("--budget-s", type=float, default=300.0)
    p.add_argument("--models", default="", help="models phase: comma-separated model ids (default: all)")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--preregister", action="store_true", help="print the visit's pre-registered predictions (JSON)")
    args = p.parse_args(argv)
    if args.preregister:
        from llama_prereg import preregister

        print(json.dumps(preregister(), indent=1))
        return 0
    if args.budget_s <= 0:
        p.error("--budget-s must be positive")
    if args.dry_run:  # scripts/device/llama_dry_run.py, beside this file (kept apart for size)
        from llama_dry_run import dry_run

        return dry_run(sys.modules[__name__], args)
    if args.phase == "models":
        return phase_models(args)
    if shutil.which("nvidia-smi") is None:
        print("no nvidia-smi: the measure phase needs the GPU machine (use --dry-run here)", file=sys.stderr)
        return 2
    return phase_measure(args)


if __name__ == "__main__":
    sys.exit(main())
