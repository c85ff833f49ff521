#!/usr/bin/env python3
"""One device call: H200 ceilings, then Qwen2.5-7B latency anatomy under vLLM 0.26.0, then the
step overhead measured on tiny-hidden models, then a second model's decode and prefill steps on a
fresh engine (default llama-3.1-8b).

Parts, in priority order (each written to $OUT/latency.json as soon as it ends):
  ceilings      copy/read bandwidth, bf16/fp32 matmul peak, and bf16 x @ W^T at every linear shape
                the main and second model's steps run (each decode batch, each prefill chunk;
                gemm-shapes.json lists them): a subprocess that overlaps `import vllm`
  engine        AsyncLLM start (dummy weights, CUDA graphs) and its resolved settings
  warmup        a few requests through every path, not reported as results
  decode.bB     B requests of 1024 in / 128 out sent at once; step time = median steady ITL. A run the
                validity check flags (load_stats.decode_validity: an engine-core stall) is measured once
                more (--no-decode-recheck to skip); the run kept is the first the check passes, else
                the last, with the other inside it ("other_attempts"; raw lines labelled by attempt). A batch
                whose sequences the engine's pool cannot hold at once is not run ([SKIP: pool];
                pytest_anatomy/latency_fit.py says the rule); every recorded plan's parts fit
  prefill.LN    one request of N tokens, max_tokens=1, 1 warm-up + repeats; TTFT median
  prefill.bB.LN (only when --only names prefill_batch) B fresh prompts of N tokens sent at once,
                max_tokens=1, 1 warm-up round + 3; per round the engine span (the last first token less
                the first schedule, engine clock) and the client span (the last TTFT from the round's
                first send); --prefill-batch B (64), N = 512
  closed.cC     closed loop at concurrency C, 1024/256 (the seed's sweep)
  poisson.fF    open loop, Poisson at F x the C=64 request throughput, 1024/256
  overload      KV pool oversubscribed by long prompts: preemptions, TTFT under overload
  overhead models (--overhead-models, default qwen2.5-7b-tiny-l28 then -l2; `none` to skip) each on
                its own engine with the main model's settings (CUDA graphs, async scheduling,
                max_num_seqs, the 8,192-token budget, the 1024/128 decode shape), CUDA graphs
                captured at the measured batches only (--overhead-batches 1,16,64,128),
                max_model_len 2048, 10% of the memory; <= --overhead-budget-s (100) in all, a
                section the main model's parts leave free (engine starts measured on this H200:
                56 s for the first, torch.compile cold, 31 s for the second). Their roofline is ~0.02-0.5 ms, so
                their decode step is the engine's overhead, per step and per layer
  second model  (--second-model, default llama-3.1-8b; a comma list runs each in turn; `none` to skip) its own engine, then only
                the kinds in --second-model-kinds (decode,prefill): a model the overhead was
                never measured or fitted on (32 layers where Qwen has 28), predicted from it
A part starts only if its planning estimate fits the remaining budget (default 540 s, counted
from this script's start, `import vllm` and engine start included). Estimates are rough and
conservative; they are not predictions and are never compared with results.

Files under --out-dir ($OUT): latency.json (schema pytest-anatomy/device-batch/v1: provenance
and one entry per part, rewritten after every part), latency-raw.jsonl (one line per part:
every request's token arrival times in our and the engine's clock, and the step timeline),
ceilings.json (the ceilings subprocess's own output), gemm-shapes.json (the linear shapes it
timed), and for the second model and each overhead model latency-<model>.json /
latency-<model>-raw.jsonl: the same schema with that model in the provenance (and "role") and the
session's ceilings run repeated, so each file imports on its own
(`pytest-anatomy import-device $OUT/*.json ...`; the shared ceilings recording is written once).

The KV pool at gpu_memory_utilization 0.9 holds ~2M tokens on an H200, so the overload part can
only oversubscribe it ~1.07x, and costs ~100 s. --kv-cache-gib 12 pins a ~225k-token pool
(still enough for every other part) and makes it ~1.6x in ~20 s, which leaves the overhead
models (~95 s) and the second model's engine start (~60 s) and its decode and prefill parts
(~40 s) inside the budget; the second model always gets the utilization-derived pool.

Predictions for the overhead models, written before their first run (2026-12-01, from the three
recorded Qwen2.5-7B sessions; steps in ms at the 1024/128 shape, context 1,088; roofline at the
recorded read ceilings, 4.39-4.47 TB/s). The theory as it stands fits t_overhead as Qwen's b=1
residual (1.487, 1.508, 1.535 ms: mean 1.51) and says it is a per-step constant, the same for any
model, layer count and batch. The roofline subtracted (theory/latency.py's decode bytes): matmul
weights 80.2 MB (2 layers) and 110.9 MB (28), of which the lm_head is 77.9 MB (256 x 152,064 bf16);
KV 512 B per token per layer (one KV head of 128), 1.09 GB read per step at b=64 and 28 layers:
                       b=1    b=16   b=64   b=128
  roofline  tiny-l28   0.029  0.082  0.25   0.48    (KV read dominates above b=16)
            tiny-l2    0.019  0.022  0.035  0.051   (lm_head's 77.9 MB dominates)
  constant  tiny-l28   1.54   1.59   1.76   1.99    (roofline + 1.51; 1.52-1.56 over the sessions)
            tiny-l2    1.53   1.53   1.54   1.56
A per-sequence term taken from Qwen's residual at each batch (1.67, 1.81, 2.36 ms at 16, 64, 128)
would add 0.16, 0.30, 0.85 ms at those batches to both. What would falsify the constant: tiny-l2
well below tiny-l28 (a per-layer floor: ~10 kernels per layer even at hidden 256, a few us each),
and tiny-l28 below Qwen's 1.51 ms. Expected by this plan's author, as an alternative stated now:
tiny-l28 ~0.7-1.0 ms and tiny-l2 ~0.2-0.4 ms at b=1, i.e. c_layer ~25-30 us and c0 ~0.2 ms, with
the rest of Qwen's 1.51 ms residual being its large GEMVs streaming below the 4.4 TB/s sum-read
ceiling (a CUDA-graphed GEMV chain over Qwen's weights ran at 3.52 TB/s on this H200): the
decode-shape timings of the ceilings part measure that rate at m = 1..128.

On the device (after the bundle's install.sh, see shared/device/vllm/README.md):
    source /root/stage/env.sh && set -o pipefail && \\
      PYTHONUNBUFFERED=1 python3 scripts/device/latency_plan.py --kv-cache-gib 12 2>&1 | tee $OUT/latency.log
Anywhere, without torch or vllm:
    python3 scripts/device/latency_plan.py --dry-run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pytest_anatomy.measure import load_stats as ls  # noqa: E402  (needs REPO on sys.path)
from pytest_anatomy.measure.gpu_sampler import GpuSampler  # noqa: E402
from pytest_anatomy.latency_fit import decode_pool_skip  # noqa: E402

SCHEMA = "pytest-anatomy/device-batch/v1"
MODEL = "qwen2.5-7b"
CONFIG_PATH = REPO / "pytest_anatomy" / "specs" / "configs" / f"{MODEL}.json"
T_START = time.monotonic()

# Used only when the catalog file is missing. The fields that set speed are checked against
# the file when it exists (KEY_FACTS), so the two can never silently disagree.
QWEN25_7B_FALLBACK: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768,
    "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
    "hidden_act": "silu", "use_sliding_window": False, "max_window_layers": 28,
    "bos_token_id": 151643, "eos_token_id": 151643, "torch_dtype": "bfloat16",
}
KEY_FACTS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
             "num_key_value_heads", "vocab_size", "tie_word_embeddings")

DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)
DECODE_SHAPE = (1024, 128)                     # input, output tokens
PREFILL_LENS = (128, 512, 2048, 8192, 16384, 32000)
PREFILL_REPEATS = 5                            # after one discarded warm-up request
PREFILL_BATCH, PREFILL_BATCH_LEN = 64, 512     # prompts sent at once, tokens each (the prefill_batch part)
PREFILL_BATCH_REPEATS = 3                      # rounds after one discarded warm-up round
OPT_IN_KINDS = frozenset({"prefill_batch"})    # planned only where --only (or the kinds given) names them
CLOSED = ((1, 12), (8, 48), (32, 128), (64, 192))   # (concurrency, requests)
SERVE_SHAPE = (1024, 256)                      # the seed's concurrency sweep shape
POISSON_FACTORS = (0.25, 0.5, 0.8, 1.0, 1.3)
OVERLOAD_OUTPUT = 1024
# Tiny-hidden twins of Qwen2.5-7B (pytest_anatomy/specs/configs/overhead/): the step overhead measured
# apart from any model it predicts. 28 layers first: Qwen's own layer count, the direct check.
OVERHEAD_MODELS = ("qwen2.5-7b-tiny-l28", "qwen2.5-7b-tiny-l2")
OVERHEAD_BATCHES = (1, 16, 64, 128)
OVERHEAD_MAX_MODEL_LEN = 2048          # 1024 + 128 tokens per request, and the warm-up's prompts
OVERHEAD_GPU_MEMORY_UTILIZATION = 0.1  # ~14 GiB: a 0.2 GB model and a pool far above 128 x 1152 tokens
CONFIG_DIRS = (REPO / "pytest_anatomy" / "specs" / "configs", REPO / "pytest_anatomy" / "specs" / "configs" / "overhead")
ENV_DEFAULTS = {"VLLM_USE_FLASHINFER_SAMPLER": "0", "VLLM_NO_USAGE_STATS": "1",
                "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T_START:6.1f}s] {msg}", flush=True)


# --- planning estimates -------------------------------------------------------------------

@dataclass(frozen=True)
class CostModel:
    """Rough, deliberately pessimistic times for budgeting only (bandwidth 3.5 TB/s as a
    CUDA-graphed GEMV chain reached on this H200; 450 TFLOP/s ~ 57% of the measured bf16 peak)."""

    weight_bytes: float
    kv_bytes_per_token: float
    flops_per_token: float
    attn_flops_coef: float
    bandwidth: float = 3.5e12
    flops: float = 450e12
    step_overhead_s: float = 0.5e-3
    request_s: float = 0.01  # per request sent: scheduling, the first step, streaming back

    @classmethod
    def from_config(cls, c: dict[str, Any]) -> "CostModel":
        h, i, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
        heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
        d = c.get("head_dim") or h // heads
        per_layer = h * heads * d + 2 * h * kv * d + heads * d * h + 3 * h * i
        lm_head = h * c["vocab_size"]
        weights = 2.0 * (layers * per_layer + lm_head)
        # a tiny overhead model's requests cost a fifth of a real one's (measured: four decode parts in 1.5-2.3 s)
        return cls(weight_bytes=weights, request_s=0.01 if weights > 1e9 else 0.002,
                   kv_bytes_per_token=2.0 * 2 * layers * kv * d,
                   flops_per_token=2.0 * layers * per_layer,
                   attn_flops_coef=2.0 * layers * heads * d)

    def decode_step_s(self, batch: int, context: float) -> float:
        return (self.weight_bytes + batch * context * self.kv_bytes_per_token) / self.bandwidth \
            + self.step_overhead_s

    def prefill_s(self, tokens: int) -> float:
        return (self.flops_per_token * tokens + self.attn_flops_coef * tokens**2) / self.flops + self.request_s


@dataclass(frozen=True)
class Part:
    id: str
    kind: str
    settings: dict[str, Any]
    estimate_s: float


def estimate(kind: str, s: dict[str, Any], cost: CostModel) -> float:
    return float(_estimate(kind, s, cost))


def _estimate(kind: str, s: dict[str, Any], cost: CostModel) -> Any:
    n_in, n_out = s.get("input_len") or 0, s.get("output_len") or 0  # None until resolved
    ctx = n_in + n_out / 2  # mean context over a request's decode
    pad = 100 * cost.request_s  # 1 s per part for a real model, 0.2 s for a tiny one
    if kind == "warmup":  # 8 x 1024/32 and one long prompt (run_part), padded for the first graphs' replays
        return 2 * pad + 8 * cost.prefill_s(1024) + 32 * cost.decode_step_s(8, 1040) + cost.prefill_s(s.get("long", 8192))
    if kind == "decode":
        return s["batch"] * cost.prefill_s(n_in) + n_out * cost.decode_step_s(s["batch"], ctx) + pad
    if kind == "prefill":
        return (s["repeats"] + 1) * (cost.prefill_s(n_in) + 0.03) + 0.5
    if kind == "prefill_batch":
        return (s["repeats"] + 1) * s["batch"] * cost.prefill_s(n_in) + pad
    if kind == "closed":
        n, c = s["requests"], s["concurrency"]
        return n * cost.prefill_s(n_in) + math.ceil(n / c) * n_out * cost.decode_step_s(c, ctx) + 1.0
    if kind == "poisson":
        if s.get("rate") is None:
            return 20.0
        tail = cost.prefill_s(n_in) + n_out * cost.decode_step_s(64, ctx)
        return s["requests"] / s["rate"] + 1.5 * tail + 1.0
    if kind == "overload":
        if s.get("requests") is None:
            return 120.0
        n = s["requests"]
        return 1.1 * n * cost.prefill_s(n_in) + 1.2 * n_out * cost.decode_step_s(n, ctx) + 2.0
    raise ValueError(f"unknown part kind {kind!r}")


def poisson_requests(rate: float) -> int:
    """About 8 s of arrivals, kept within 60..100 requests."""
    return max(60, min(100, round(rate * 8)))


def overload_shape(pool_tokens: int, max_num_seqs: int, max_model_len: int,
                   output_len: int) -> tuple[int, int, float]:
    """(requests, input_len, demand/pool): max_num_seqs prompts that alone fill the KV pool, so
    every decode step needs blocks that are not there and the newest request is preempted."""
    n = max_num_seqs
    input_len = min(max_model_len - output_len, pool_tokens // n)
    if input_len < 1:
        raise ValueError(f"pool of {pool_tokens} tokens cannot hold {n} requests")
    return n, input_len, n * (input_len + output_len) / pool_tokens


def build_plan(args: argparse.Namespace, cost: CostModel, model: str = MODEL,
               kinds: frozenset[str] | None = None) -> list[Part]:
    """Every part with its settings; poisson rates and overload shapes stay open (None) until
    the run knows the C=64 throughput and the KV pool (resolve_part). `kinds` restricts the
    parts (the second model's runs); --only restricts both models."""
    parts = [Part("warmup" if model == MODEL else f"{model}.warmup", "warmup",
                  {"long": min(8192, args.max_model_len - 2)}, 0.0)]
    n_in, n_out = DECODE_SHAPE
    parts += [Part(f"{model}.decode.b{b}", "decode",
                   {"batch": b, "input_len": n_in, "output_len": n_out, "seed": 100 + b}, 0.0)
              for b in _listed(args, "decode_batches", DECODE_BATCHES) if b <= args.max_num_seqs]
    # Seeds follow the position in the full PREFILL_LENS / POISSON_FACTORS lists, so a subset
    # (--prefill-lens, --poisson-factors) sends the same prompts as the full plan does.
    parts += [Part(f"{model}.prefill.L{n}", "prefill",
                   {"input_len": n, "output_len": 1, "repeats": PREFILL_REPEATS, "seed": 200 + _seat(PREFILL_LENS, n),
                    "chunks": math.ceil(n / args.max_num_batched_tokens)}, 0.0)
              for n in _listed(args, "prefill_lens", PREFILL_LENS) if n + 1 <= args.max_model_len]
    b = getattr(args, "prefill_batch", None) or PREFILL_BATCH
    parts += [Part(f"{model}.prefill.b{b}.L{PREFILL_BATCH_LEN}", "prefill_batch",
                   {"batch": b, "input_len": PREFILL_BATCH_LEN, "output_len": 1, "repeats": PREFILL_BATCH_REPEATS,
                    "seed": 600 + b}, 0.0)] if PREFILL_BATCH_LEN + 1 <= args.max_model_len else []
    n_in, n_out = SERVE_SHAPE
    requests_for = dict(CLOSED)
    parts += [Part(f"{model}.closed.c{c}", "closed",
                   {"concurrency": c, "requests": requests_for.get(c, 3 * c), "input_len": n_in, "output_len": n_out,
                    "seed": 300 + c}, 0.0)
              for c in _listed(args, "closed", tuple(requests_for)) if c <= args.max_num_seqs]
    parts += [Part(f"{model}.poisson.f{f:g}", "poisson",
                   {"factor": f, "rate": None, "requests": None, "input_len": n_in, "output_len": n_out,
                    "seed": 400 + _seat(POISSON_FACTORS, f), "normalized_like_bench_serve": True}, 0.0)
              for f in _listed(args, "poisson_factors", POISSON_FACTORS)]
    parts.append(Part(f"{model}.overload", "overload",
                      {"requests": None, "input_len": None, "output_len": OVERLOAD_OUTPUT,
                       "seed": 500}, 0.0))
    asked = set(args.only.split(",")) if args.only else set()
    if kinds is not None:
        asked |= kinds
    parts = [p for p in parts if p.kind not in OPT_IN_KINDS or p.kind in asked]
    if args.only:
        wanted = set(args.only.split(","))
        parts = [p for p in parts if p.kind in wanted or p.kind == "warmup"]
    if kinds is not None:
        parts = [p for p in parts if p.kind in kinds or p.kind == "warmup"]
    return [replace(p, estimate_s=estimate(p.kind, p.settings, cost)) for p in parts]


def _listed(args: argparse.Namespace, name: str, default: tuple[Any, ...]) -> tuple[Any, ...]:
    """A list option (--decode-batches 1,8,64) or the module default."""
    value = getattr(args, name, None)
    return tuple(value) if value else default


def _seat(values: tuple[Any, ...], v: Any) -> int:
    return values.index(v) if v in values else len(values) + int(v)


def pool_skip(part: Part, pool_tokens: int | None, block_size: int | None, where: str) -> str | None:
    """Why a decode part is not run: its sequences cannot all hold their KV at once in the engine's pool of
    `pool_tokens` (latency_fit.decode_pool_skip says the rule and why), so vLLM would queue or preempt them and
    the part would measure no steady step. None for any other part, or when the pool is not known. Every decode
    part of every recorded plan fits its engine's pool (test_latency_plan_pool), so no recorded plan changes."""
    if part.kind != "decode" or not pool_tokens:
        return None
    s = part.settings
    return decode_pool_skip(s["batch"], int(pool_tokens), block_size=int(block_size or 16),
                            shape=(s["input_len"], s["output_len"]), where=where)


def resolve_part(part: Part, state: dict[str, Any], cost: CostModel) -> Part:
    """Fill in what depends on earlier results: Poisson rate from the closed C=64 throughput,
    the overload shape from the engine's KV pool."""
    s = dict(part.settings)
    if part.kind == "poisson" and state.get("saturation_rps"):
        s["rate"] = part.settings["factor"] * state["saturation_rps"]
        s["requests"] = poisson_requests(s["rate"])
        s["saturation_rps"] = state["saturation_rps"]
    elif part.kind == "overload" and state.get("pool_tokens"):
        n, L, ratio = overload_shape(state["pool_tokens"], state["max_num_seqs"],
                                     state["max_model_len"], s["output_len"])
        s.update(requests=n, input_len=L, demand_over_pool=ratio, pool_tokens=state["pool_tokens"])
    return replace(part, settings=s, estimate_s=estimate(part.kind, s, cost))


class Budget:
    """Wall-clock budget counted from `start`; `reserve_s` is kept for engine shutdown."""

    def __init__(self, total_s: float, start: float | None = None, reserve_s: float = 15.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total_s, self.reserve_s, self.clock = total_s, reserve_s, clock
        self.start = clock() if start is None else start

    def remaining(self) -> float:
        return self.total_s - (self.clock() - self.start)

    def fits(self, estimate_s: float) -> bool:
        return self.remaining() - self.reserve_s >= estimate_s

    def deadline_for(self, estimate_s: float) -> float:
        """A part may overrun its estimate 2x (+20 s) but never the budget."""
        hard = self.start + self.total_s - self.reserve_s
        return min(self.clock() + 2.0 * estimate_s + 20.0, hard)


# --- output -------------------------------------------------------------------------------

def jsonable(x: Any) -> Any:
    """NaN/inf -> None (strict JSON), tuples -> lists, anything else unknown -> str, recursively,
    so one odd value from an engine config can never stop the file from being written."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if x is None or isinstance(x, (str, int, bool)):
        return x
    return str(x)


class Output:
    """latency.json (the summary: small, rewritten atomically after every part, so a killed
    call still returns everything measured so far) and latency-raw.jsonl (per-request streams
    and step timelines: one line appended per part, never rewritten)."""

    def __init__(self, directory: Path, provenance: dict[str, Any], name: str = "latency") -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.doc: dict[str, Any] = {"schema": SCHEMA, "provenance": provenance, "runs": []}
        self.raw_path = self.dir / f"{name}-raw.jsonl"
        self.raw_path.write_text("")

    def add(self, run: dict[str, Any], raw: dict[str, Any] | None = None) -> None:
        self.doc["runs"].append(run)
        if raw is not None:
            self.add_raw(run["id"], raw)
        self.write()

    def add_raw(self, run_id: str, raw: dict[str, Any]) -> None:
        """One line of latency-raw.jsonl (a repeated decode part writes one per attempt, each labelled)."""
        line = json.dumps(jsonable({"id": run_id, **raw}), allow_nan=False, separators=(",", ":"))
        with self.raw_path.open("a") as fh:
            fh.write(line + "\n")

    def write(self) -> None:
        tmp = self.dir / f"{self.name}.json.tmp"
        tmp.write_text(json.dumps(jsonable(self.doc), indent=1, allow_nan=False) + "\n")
        tmp.replace(self.dir / f"{self.name}.json")


# --- the parts ----------------------------------------------------------------------------

def load_run_result(run: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Summary and raw payload shared by every load-driven part."""
    agg = ls.aggregate(run.records, run.expected_requests, start_time=run.start_time)
    result = {
        "aggregate": agg,
        "timeline": ls.timeline_summary(run.timeline),
        "preemptions_prometheus": run.preemptions_prometheus,
        "per_request": ls.per_request_columns(run.records),
        "truncated": run.truncated,
    }
    checks = {
        "exact_output_tokens": agg["exact_output_tokens"],
        "no_prefix_cache_hits": agg["prefix_cache_hit_tokens"] == 0,
        "not_truncated": not run.truncated,
        "clock_decomposition_nonnegative": agg["engine"]["negative_parts"] == 0,
    }
    t0 = run.start_time
    raw = {"start": t0, "requests": [r.to_raw() for r in run.records],
           "timeline": {key: [round(getattr(s, key) - t0, 6) if key == "t" else getattr(s, key)
                              for s in run.timeline]
                        for key in ("t", "ctx_tokens", "gen_requests", "gen_tokens", "running",
                                    "waiting", "kv_usage", "preempted")}}
    raw["timeline"]["engine_t"] = [None if s.engine_t is None else round(s.engine_t - t0, 6)
                                   for s in run.timeline]
    return {"result": result, "checks": checks}, raw


async def run_part(driver: Any, part: Part, deadline: float, cfg: dict[str, Any],
                   state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    s = part.settings
    vocab = cfg["vocab_size"]
    if part.kind == "warmup":
        await driver.run("warmup", ls.token_id_prompts(8, 1024, vocab, 1), 32, deadline=deadline)
        long = s.get("long", 8192)  # a tiny overhead model's engine has a 2,048-token max_model_len
        await driver.run("warmup-long", ls.token_id_prompts(1, long, vocab, 2), 2, deadline=deadline)
        return {"result": {"note": "not a measurement"}}, None
    n_in, n_out = s["input_len"], s["output_len"]
    if part.kind == "prefill":
        prompts = ls.token_id_prompts(s["repeats"] + 1, n_in, vocab, s["seed"])
        records = []
        for ids in prompts:  # one at a time: TTFT of a lone request is the prefill time
            run = await driver.run(part.id, [ids], n_out, deadline=deadline, progress_every_s=60)
            records += run.records
        kept = [r for r in records[1:] if r.ok]
        brk = [b for b in (r.engine_breakdown() for r in kept) if b]
        ttft = ls.summarize([r.ttft for r in kept if r.ttft is not None])
        return {"result": {
            "ttft_s": ttft,
            "engine_prefill_s": ls.summarize([b["prefill_s"] for b in brk]),
            # the repeats themselves, so a live pytest session reports them as a benchmark's rounds
            "samples": {"engine_prefill_s": [b["prefill_s"] for b in brk]},
            "engine_queue_s": ls.summarize([b["queue_s"] for b in brk]),
            "tokens_per_s": n_in / ttft["median"] if ttft["median"] else None,
            "warmup_discarded": 1,
        }, "checks": {"exact_output_tokens": all(r.ok for r in records),
                      "no_prefix_cache_hits": all(not r.num_cached_tokens for r in records)}}, \
            {"requests": [r.to_raw() for r in records]}
    if part.kind == "prefill_batch":
        return await run_prefill_batch(driver, part, deadline, vocab)
    prompts = ls.token_id_prompts(s.get("batch") or s["requests"], n_in, vocab, s["seed"])
    if part.kind == "decode":
        run = await driver.run(part.id, prompts, n_out, deadline=deadline)
        out, raw = load_run_result(run)
        window = ls.steady_window(run.records)
        steady = ls.steady_itls(run.records, window) if window else []
        engine_steps = ls.decode_step_intervals(run.timeline, s["batch"], engine_clock=True)
        validity = ls.decode_validity(engine_steps)
        out["validity"] = None if validity is None else validity.as_dict()  # beside "result": no measurement
        out["result"].update({
            "step_time_s": ls.percentile(steady, 50) if steady else None,
            "itl_steady_s": ls.summarize(steady),
            # the engine-clock step intervals travel too (since 2026-12-02): the validity check's input
            "samples": {"step_time_s": list(steady), "step_interval_engine_s": list(engine_steps)},
            "itl_steady_engine_clock_s": ls.summarize(
                ls.steady_itls(run.records, window, engine_clock=True) if window else []),
            "tpot_steady_s": ls.summarize(ls.steady_tpots(run.records, window) if window else []),
            "step_interval_frontend_s": ls.summarize(ls.decode_step_intervals(run.timeline, s["batch"])),
            "step_interval_engine_s": ls.summarize(engine_steps),
            "steady_window_s": None if window is None else window[1] - window[0],
        })
        return out, raw
    if part.kind == "closed":
        run = await driver.run(part.id, prompts, n_out, concurrency=s["concurrency"], deadline=deadline)
        out, raw = load_run_result(run)
        if s["concurrency"] == max(c for c, _ in CLOSED) and not run.truncated:
            state["saturation_rps"] = out["result"]["aggregate"]["request_throughput_per_s"]
        return out, raw
    if part.kind == "poisson":
        arrivals = ls.poisson_arrivals(s["rate"], s["requests"], s["seed"], normalize=True)
        run = await driver.run(part.id, prompts, n_out, arrivals=arrivals, deadline=deadline)
        return load_run_result(run)
    if part.kind == "overload":
        run = await driver.run(part.id, prompts, n_out, deadline=deadline, progress_every_s=15)
        return load_run_result(run)
    raise ValueError(f"unknown part kind {part.kind!r}")


def prefill_batch_round(records: list[Any], batch: int, input_len: int) -> dict[str, Any]:
    """One round of the batched prefill: the client span (the last TTFT, from the round's first send), the engine
    span (the last first_token_ts less the first scheduled_ts, the engine core's clock), tokens/s over each, and how
    many requests were queued after the engine's first schedule of the round (a partially-filled first step)."""
    ok = [r for r in records if r.ok and r.chunk_times]
    engine = [r.engine for r in ok if r.engine.get("scheduled_ts") and r.engine.get("first_token_ts")]
    span = max(r.chunk_times[0] for r in ok) - min(r.send_time for r in records) if len(ok) == batch else None
    first = min(e["scheduled_ts"] for e in engine) if engine else None
    complete = first is not None and len(engine) == batch
    engine_span = max(e["first_token_ts"] for e in engine) - first if complete else None
    queued = [e["queued_ts"] for e in engine if e.get("queued_ts")]
    return {"span_s": span, "engine_span_s": engine_span,
            "tokens_per_s": batch * input_len / span if span else None,
            "engine_tokens_per_s": batch * input_len / engine_span if engine_span else None,
            "queued_after_first_schedule": sum(q > first for q in queued) if first is not None else None,
            "queued_spread_s": max(queued) - min(queued) if queued else None}


async def run_prefill_batch(driver: Any, part: Part, deadline: float,
                            vocab: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """`batch` fresh prompts sent at once, max_tokens=1, once per round (the first round discarded): the
    engine's time to prefill them together (prefill_batch_round), medians over the kept rounds."""
    s = part.settings
    b, n_in = s["batch"], s["input_len"]
    prompts = ls.token_id_prompts((s["repeats"] + 1) * b, n_in, vocab, s["seed"])  # every round's own prompts
    records, rounds = [], []
    for k in range(s["repeats"] + 1):
        run = await driver.run(f"{part.id}.r{k}", prompts[k * b:(k + 1) * b], s["output_len"], deadline=deadline,
                               progress_every_s=60)
        records += run.records
        rounds.append(prefill_batch_round(list(run.records), b, n_in))
    kept = rounds[1:]

    def col(key: str) -> list[float]:
        return [r[key] for r in kept if r[key] is not None]

    result = {key: ls.summarize(col(key)) for key in ("span_s", "engine_span_s", "tokens_per_s",
                                                      "engine_tokens_per_s")}
    result.update({"samples": {"engine_span_s": col("engine_span_s"), "span_s": col("span_s")},
                   "queued_after_first_schedule_max": max(col("queued_after_first_schedule"), default=None),
                   "rounds": rounds, "warmup_discarded": 1})
    checks = {"exact_output_tokens": all(r.ok for r in records) and len(records) == len(prompts),
              "no_prefix_cache_hits": all(not r.num_cached_tokens for r in records),
              "engine_span_every_round": len(col("engine_span_s")) == len(kept)}
    return {"result": result, "checks": checks}, {"requests": [r.to_raw() for r in records]}


# --- provenance and the main flow ---------------------------------------------------------

def load_model_config(path: Path | None) -> tuple[dict[str, Any], str]:
    target = path or CONFIG_PATH
    if not target.exists():
        if path is not None:
            raise FileNotFoundError(f"--config {str(path)!r} does not exist")
        return dict(QWEN25_7B_FALLBACK), "built-in fallback (catalog file missing)"
    # keys starting with "_" (a stored config's comment, the catalog's provenance) are not the model's
    config = {k: v for k, v in json.loads(target.read_text()).items() if not k.startswith("_")}
    if path is None:  # the catalog file must agree with the facts this plan was sized for
        bad = {k: (config.get(k), QWEN25_7B_FALLBACK[k]) for k in KEY_FACTS
               if config.get(k) != QWEN25_7B_FALLBACK[k]}
        if bad:
            raise ValueError(f"{target} disagrees with Qwen2.5-7B facts {bad} (file, expected)")
    return config, str(target.relative_to(REPO) if target.is_relative_to(REPO) else target)


def main_model_id(args: argparse.Namespace) -> str:
    """The name run ids carry: the catalog stem of --config (a bare `config.json` is named by its
    folder), so a llama config's runs are `llama-3.1-8b.decode.b1`, never `qwen2.5-7b.…`."""
    if args.config is None:
        return MODEL
    return args.config.parent.name if args.config.stem == "config" else args.config.stem


def base_provenance(args: argparse.Namespace, config: dict[str, Any], source: str,
                    cost: CostModel, model: str = MODEL) -> dict[str, Any]:
    from pytest_anatomy.gpu_query import nvidia_smi_snapshot
    from pytest_anatomy.host_facts import host_facts

    return {
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable, *sys.argv]),
        "host": socket.gethostname(),
        # the CPU beside the GPU: a session whose host-side work grew (2026-12-06 09:41) is told apart by its machine
        "host_facts": host_facts(),
        "python": platform.python_version(),
        "budget_s": args.budget_s,
        "model": {"id": model, "config_source": source, "config": config,
                  "weights": "random (load_format=dummy): exact for time and memory"},
        "clock": "time.monotonic (CLOCK_MONOTONIC) in this process and vLLM's engine core",
        "definitions": "vllm bench serve: TTFT, ITL per streamed chunk, TPOT=(E2E-TTFT)/(O-1)",
        "planning_cost_model": vars(cost),
        "nvidia_smi_start": nvidia_smi_snapshot(),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("VLLM_", "CUDA_", "PYTORCH_"))},
    }


def versions() -> dict[str, str | None]:
    """Module __version__ first: the device bundle unpacks vLLM without a dist-info."""
    import importlib
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in ("vllm", "torch", "triton", "transformers", "numpy"):
        try:
            out[name] = str(importlib.import_module(name).__version__)
        except Exception:
            try:
                out[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                out[name] = None
    return out


async def execute(args: argparse.Namespace, out: Output, budget: Budget, cfg: dict[str, Any],
                  model_dir: str, cost: CostModel, model: str = MODEL,
                  kinds: frozenset[str] | None = None) -> int:
    from pytest_anatomy.measure.load_driver import EngineConfig, LoadDriver

    engine_cfg = EngineConfig(
        model_dir=model_dir, max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization, max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens, enforce_eager=args.enforce_eager,
        kv_cache_memory_bytes=None if args.kv_cache_gib is None else int(args.kv_cache_gib * 2**30),
        # only the overhead models limit their CUDA graphs (to the batches they measure): a shorter start
        extra={} if not getattr(args, "cudagraph_capture_sizes", None)
        else {"compilation_config": {"cudagraph_capture_sizes": list(args.cudagraph_capture_sizes)}})
    settings = {k: v for k, v in engine_cfg.engine_kwargs().items() if k != "model"}
    log(f"[plan] starting the engine: {settings}")
    try:
        driver = LoadDriver.start(engine_cfg, log=log)
    except Exception:
        out.add({"id": f"{model}.engine", "settings": settings, "error": traceback.format_exc()})
        log("[plan] engine start FAILED; see latency.json")
        return 3
    try:
        resolved = driver.resolved_settings()
    except Exception:  # a renamed config field must not cost the whole device call
        resolved = {"error": traceback.format_exc(), "max_num_seqs": args.max_num_seqs,
                    "max_model_len": args.max_model_len}
    out.add({"id": f"{model}.engine", "settings": settings,
             "result": {"startup_s": driver.startup_s, "resolved": resolved,
                        "engine_clock_tapped": driver.engine_clock_tapped}})
    log(f"[plan] engine up in {driver.startup_s:.1f} s: {resolved}")
    state: dict[str, Any] = {"pool_tokens": resolved.get("kv_cache_tokens"), "block_size": resolved.get("block_size"),
                             "max_num_seqs": resolved["max_num_seqs"],
                             "max_model_len": resolved["max_model_len"]}
    try:
        for planned in build_plan(args, cost, model, kinds):
            part = resolve_part(planned, state, cost)
            if getattr(driver.engine, "errored", False):
                out.add({"id": part.id, "skipped": "engine is dead"})
                continue
            if part.kind == "poisson" and part.settings["rate"] is None:
                out.add({"id": part.id, "skipped": f"needs {model}.closed.c{CLOSED[-1][0]}'s throughput"})
                continue
            if part.kind == "overload" and part.settings["requests"] is None:
                out.add({"id": part.id, "skipped": "the engine reported no KV pool size"})
                continue
            why = pool_skip(part, state["pool_tokens"], state["block_size"], "the engine's pool")
            if why:
                out.add({"id": part.id, "settings": part.settings, "skipped": f"pool: {why}"})
                log(f"[plan] [SKIP: pool] {part.id}: {why}")
                continue
            if not budget.fits(part.estimate_s):
                out.add({"id": part.id, "settings": part.settings, "estimate_s": part.estimate_s,
                         "skipped": f"budget: {budget.remaining():.0f} s left"})
                log(f"[plan] skip {part.id}: needs ~{part.estimate_s:.0f} s, {budget.remaining():.0f} s left")
                continue
            log(f"[plan] {part.id}: start (estimate {part.estimate_s:.0f} s) {part.settings}")
            run, raw = await measure_part(driver, part, budget, cfg, state)
            if part.kind == "decode" and _stalled(run) and getattr(args, "decode_recheck", True):
                run, raw = await recheck_decode(driver, part, run, raw, out, budget, cfg, state)
            out.add(run, raw)
            log(f"[plan] {part.id}: {headline(run)}; {budget.remaining():.0f} s left")
    finally:
        out.doc["provenance"]["timeline_steps_total"] = len(driver.timeline)
        driver.shutdown()
        out.write()
    return 0


async def measure_part(driver: Any, part: Part, budget: Budget, cfg: dict[str, Any], state: dict[str, Any]
                       ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One attempt at a part: its run record (an "error" with the traceback if it raised) and its raw line."""
    t0 = time.monotonic()
    # the GPU's clocks/power/throttle reasons and the host's CPU, sampled through the part (gpu_sampler.py says why)
    with GpuSampler() if part.kind != "warmup" else contextlib.nullcontext() as sampler:
        try:
            body, raw = await run_part(driver, part, budget.deadline_for(part.estimate_s), cfg, state)
        except Exception:
            body, raw = {"error": traceback.format_exc()}, None
    if sampler is not None:
        body["conditions"] = sampler.summary()  # beside "result": not a measurement, no importer reads it as one
        if raw is not None:
            raw["gpu_samples"] = sampler.columns(raw.get("start", t0))
    return ({"id": part.id, "kind": part.kind, "settings": part.settings, "estimate_s": part.estimate_s,
             "wall_s": time.monotonic() - t0, **body}, raw)


def _stalled(run: dict[str, Any]) -> bool:
    """Whether the run-validity check flags a decode run (ls.decode_validity: an engine-core stall)."""
    return bool((run.get("validity") or {}).get("flagged"))


async def recheck_decode(driver: Any, part: Part, first: dict[str, Any], first_raw: dict[str, Any] | None,
                         out: Output, budget: Budget, cfg: dict[str, Any],
                         state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A decode part the validity check flags is measured once more (budget permitting). Returned, as the part's
    run: the first attempt the check passes, else the last that did not fail; the other attempt is kept inside it
    under "other_attempts" (labelled with its number and its validity check) and its raw line written now,
    labelled alike. The run's own fields stay where they were, so an importer (and every recorded test) reads the
    returned attempt exactly as it read a part measured once; "attempt"/"attempts" say which one it is."""
    if not budget.fits(part.estimate_s):
        first["recheck"] = f"skipped: budget: {budget.remaining():.0f} s left"
        log(f"[plan] {part.id}: flagged by the validity check, no budget to measure it again")
        return first, first_raw
    log(f"[plan] {part.id}: flagged by the validity check ({'; '.join(first['validity']['reasons'])}): again")
    second, raw = await measure_part(driver, part, budget, cfg, state)
    attempts = [(first, first_raw), (second, raw)]
    ok = [i for i, (r, _) in enumerate(attempts) if "error" not in r]
    keep = next((i for i in ok if not _stalled(attempts[i][0])), ok[-1] if ok else 0)
    others = []
    for i, (r, r_raw) in enumerate(attempts):
        if i == keep:
            continue
        label = {"attempt": i + 1, "reconciled": False, "flagged": _stalled(r)}
        if r_raw is not None:
            out.add_raw(part.id, {**label, **r_raw})
        others.append({**label, **r})
    run, run_raw = attempts[keep]
    label = {"attempt": keep + 1, "attempts": len(attempts), "reconciled": True, "flagged": _stalled(run)}
    return {**run, **label, "other_attempts": others}, None if run_raw is None else {**label, **run_raw}


def headline(run: dict[str, Any]) -> str:
    """One line per part for the log: the number a reader looks for first."""
    if "error" in run:
        return "ERROR " + str(run["error"]).strip().splitlines()[-1]
    r = run.get("result", {})
    ok = all(run.get("checks", {}).values())
    if run["kind"] == "decode" and r.get("step_time_s"):
        attempt = f", attempt {run['attempt']} of {run['attempts']}" if run.get("attempts") else ""
        return (f"step {r['step_time_s'] * 1e3:.3f} ms (mean ITL {r['itl_steady_s']['mean'] * 1e3:.3f} ms), "
                f"checks {'ok' if ok else 'FAILED'}, validity {'FLAGGED' if _stalled(run) else 'ok'}{attempt}")
    if run["kind"] == "prefill_batch" and r.get("engine_span_s", {}).get("median"):
        return (f"engine span {r['engine_span_s']['median'] * 1e3:.1f} ms, client span "
                f"{(r['span_s']['median'] or 0) * 1e3:.1f} ms, checks {'ok' if ok else 'FAILED'}")
    if run["kind"] == "prefill" and r.get("ttft_s", {}).get("median"):
        return f"TTFT {r['ttft_s']['median'] * 1e3:.1f} ms, checks {'ok' if ok else 'FAILED'}"
    agg = r.get("aggregate")
    if agg and agg.get("output_throughput_tok_per_s"):
        return (f"{agg['output_throughput_tok_per_s']:.0f} tok/s, TTFT p50 "
                f"{(agg['ttft_s']['median'] or 0) * 1e3:.0f} ms, ITL p50 "
                f"{(agg['itl_s']['median'] or 0) * 1e3:.2f} ms, preemptions "
                f"{r['timeline'].get('preemptions', 0)}, checks {'ok' if ok else 'FAILED'}")
    return f"done in {run['wall_s']:.1f} s"


def print_plan(args: argparse.Namespace, cost: CostModel) -> None:
    """The plan with estimates, simulated against the budget (no torch, no vllm)."""
    pool = (args.assumed_pool_tokens if args.kv_cache_gib is None
            else int(args.kv_cache_gib * 2**30 // cost.kv_bytes_per_token))
    state = {"saturation_rps": None, "pool_tokens": pool,
             "max_num_seqs": args.max_num_seqs, "max_model_len": args.max_model_len}
    c, n = CLOSED[-1]  # the saturation point: its estimated requests/s stands in for the measured one
    closed = {"concurrency": c, "requests": n, "input_len": SERVE_SHAPE[0], "output_len": SERVE_SHAPE[1]}
    state["saturation_rps"] = n / estimate("closed", closed, cost)
    shapes = gemm_shapes(args, plan_configs(args, load_model_config(args.config)[0]))
    ceilings_s = args.assumed_ceilings_s + gemm_estimate_s(shapes, cost)
    first = max(args.assumed_import_s, ceilings_s)
    t = first + args.assumed_engine_s
    reserved = overhead_reserve_s(args)
    print(f"budget {args.budget_s:.0f} s (reserve 15 s for shutdown); planning cost model: "
          f"weights {cost.weight_bytes / 1e9:.2f} GB at {cost.bandwidth / 1e12:.1f} TB/s, "
          f"{cost.flops_per_token / 1e9:.2f} GFLOP/token at {cost.flops / 1e12:.0f} TFLOP/s")
    if reserved:
        print(f"the main model's parts leave {reserved:.0f} s for the overhead models (--overhead-budget-s)")
    print(f"{'part':34s} {'estimate':>9s} {'ends at':>8s}  settings")
    print(f"{'import vllm || ceilings':34s} {first:8.0f}s {first:7.0f}s  ceilings ~{ceilings_s:.0f} s with "
          f"{len({(x['m'], x['k'], x['n']) for x in shapes})} linear shapes ({', '.join(plan_configs(args, {}))})")
    print(f"{'engine start (graphs)':34s} {args.assumed_engine_s:8.0f}s {t:7.0f}s")
    for part in build_plan(args, cost, main_model_id(args)):
        part = resolve_part(part, state, cost)
        why = pool_skip(part, pool, 16, "the assumed pool")
        fits = not why and t + part.estimate_s <= args.budget_s - 15 - reserved
        t += part.estimate_s if fits else 0
        shown = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in part.settings.items()}
        print(f"{part.id:34s} {part.estimate_s:8.1f}s {t:7.0f}s  {_skip_tag(fits, why)}{shown}")
    t = print_overhead_plan(args, t)
    for name in second_models(args):
        config, _ = second_model_config(name)
        extra_cost = CostModel.from_config(config)
        started = t + args.assumed_engine_s <= args.budget_s - 15
        t += args.assumed_engine_s if started else 0
        print(f"{name + ' engine start':34s} {args.assumed_engine_s:8.0f}s {t:7.0f}s  "
              f"{'' if started else '[SKIP: budget]'}")
        for part in build_plan(second_model_args(args, config), extra_cost, name, second_model_kinds(args)):
            why = pool_skip(part, args.assumed_pool_tokens, 16, "the assumed pool")  # its pool is never pinned
            fits = not why and started and t + part.estimate_s <= args.budget_s - 15
            t += part.estimate_s if fits else 0
            shown = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in part.settings.items()}
            print(f"{part.id:34s} {part.estimate_s:8.1f}s {t:7.0f}s  {_skip_tag(fits, why)}{shown}")
    print(f"total planned: {t:.0f} s of {args.budget_s:.0f} s (C={c} saturation assumed "
          f"{state['saturation_rps']:.1f} req/s, pool assumed {pool:,} tokens)")


def _skip_tag(fits: bool, pool_why: str | None) -> str:
    """A dry-run line's tag: a part the assumed pool cannot hold, or one the budget leaves out."""
    return f"[SKIP: pool] {pool_why.split(';')[0]}: " if pool_why else "" if fits else "[SKIP: budget] "


def print_overhead_plan(args: argparse.Namespace, t: float) -> float:
    """The overhead models' lines of the dry run, inside their own section budget; returns the end."""
    section_end = min(t + args.overhead_budget_s, args.budget_s - 15)
    margs = overhead_model_args(args)
    for name in overhead_models(args):
        config, _ = second_model_config(name)
        cost = CostModel.from_config(config)
        parts = build_plan(margs, cost, name, frozenset({"decode"}))
        essential = sum(p.estimate_s for p in parts if p.kind == "decode")
        engine_s = overhead_engine_s(args, name)
        started = t + engine_s + essential <= section_end
        t += engine_s if started else 0
        print(f"{name + ' engine start':34s} {engine_s:8.0f}s {t:7.0f}s  "
              f"{'' if started else '[SKIP: budget]'}{{'max_model_len': {margs.max_model_len}, "
              f"'gpu_memory_utilization': {margs.gpu_memory_utilization:g}, "
              f"'cudagraph_capture_sizes': {list(margs.cudagraph_capture_sizes)}}}")
        for part in parts:
            fits = started and t + part.estimate_s <= section_end
            t += part.estimate_s if fits else 0
            print(f"{part.id:34s} {part.estimate_s:8.1f}s {t:7.0f}s  {'' if fits else '[SKIP: budget] '}{part.settings}")
    return t


# --- the second model: another config on the same engine and GPU --------------------------

def second_models(args: argparse.Namespace) -> list[str]:
    """--second-model's models in order (a comma list: each on its own fresh engine after the one before)."""
    return [] if args.second_model.lower() == "none" else [m for m in args.second_model.split(",") if m]


def second_model_kinds(args: argparse.Namespace) -> frozenset[str]:
    return frozenset(args.second_model_kinds.split(","))


def second_model_config(name: str) -> tuple[dict[str, Any], str]:
    """A catalog name (pytest_anatomy/specs/configs/<name>.json, or configs/overhead/ for the tiny
    overhead models) or a path to a config.json. Keys starting with "_" (a stored config's comment)
    are not the model's and are dropped before vLLM reads the file."""
    candidates = [Path(name)] if name.endswith(".json") else [d / f"{name}.json" for d in CONFIG_DIRS]
    path = next((c for c in candidates if c.exists()), None)
    if path is None:
        known = sorted(p.stem for d in CONFIG_DIRS for p in d.glob("*.json"))
        raise FileNotFoundError(f"model {name!r}: no {candidates[0]}; catalog names: {', '.join(known)}")
    config = {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("_")}
    return config, str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


def second_model_args(args: argparse.Namespace, config: dict[str, Any]) -> argparse.Namespace:
    """The main run's settings, with max_model_len capped at what the model supports and the
    KV pool left to gpu_memory_utilization (--kv-cache-gib is sized for the first model's
    overload part; a larger model's decode.b128 would not fit a pool pinned that small)."""
    limit = config.get("max_position_embeddings") or args.max_model_len
    batches = getattr(args, "second_model_decode_batches", None) or getattr(args, "decode_batches", None)
    return argparse.Namespace(**{**vars(args), "max_model_len": min(args.max_model_len, int(limit)),
                                 "kv_cache_gib": None, "decode_batches": batches})


def run_second_model(args: argparse.Namespace, budget: Budget, main: Output, name: str) -> int:
    """The second model on a fresh engine: its own batch file, the session's ceilings repeated."""
    config, _ = second_model_config(name)
    return run_extra_model(args, budget, main, name, second_model_args(args, config), second_model_kinds(args),
                           args.assumed_engine_s, "second model")


def run_extra_model(args: argparse.Namespace, budget: Budget, main: Output, name: str, margs: argparse.Namespace,
                    kinds: frozenset[str], engine_s: float, role: str) -> int:
    """Another model on a fresh engine after the main one: its own batch file (latency-<model>.json,
    the session's ceilings repeated so it imports on its own), started only if the engine and its
    decode parts fit `budget`."""
    config, source = second_model_config(name)
    cost = CostModel.from_config(config)
    model_id = Path(name).stem if name.endswith(".json") else name
    prov = {**main.doc["provenance"], "planning_cost_model": vars(cost), "second_model_of": f"{main.name}.json",
            "role": role,
            "model": {"id": model_id, "config_source": source, "config": config,
                      "weights": "random (load_format=dummy): exact for time and memory"}}
    out = Output(main.dir, prov, name=f"latency-{model_id}")
    out.doc["runs"] += [r for r in main.doc["runs"] if r["id"] == "ceilings"]  # imports on its own
    out.write()
    essential = sum(p.estimate_s for p in build_plan(margs, cost, model_id, kinds) if p.kind == "decode")
    if not budget.fits(engine_s + essential):
        out.add({"id": f"{model_id}.engine", "skipped": f"budget: {budget.remaining():.0f} s left, the engine and "
                 f"its decode parts need ~{engine_s + essential:.0f} s"})
        log(f"[plan] skip {role} {model_id}: {budget.remaining():.0f} s left")
        return 0
    model_dir = tempfile.mkdtemp(prefix=f"{model_id}-dummy-")
    (Path(model_dir) / "config.json").write_text(json.dumps(config, indent=2))
    log(f"[plan] {role} {model_id}: {sorted(kinds)} on a fresh engine")
    return asyncio.run(execute(margs, out, budget, config, model_dir, cost, model_id, kinds))


# --- the overhead models: the step overhead measured apart from the models it predicts -----

def overhead_models(args: argparse.Namespace) -> list[str]:
    return [] if args.overhead_models.lower() == "none" else [m for m in args.overhead_models.split(",") if m]


def overhead_model_args(args: argparse.Namespace) -> argparse.Namespace:
    """The main run's engine settings (CUDA graphs, async scheduling, max_num_seqs, the 8,192-token
    budget), its decode shape, with what only bounds the start: a 2,048-token max_model_len, 10% of
    the memory, CUDA graphs captured at the measured batches only. No decode recheck: a tiny model's
    step is the engine's CPU loop, which the validity check is not for (ls.decode_validity)."""
    return argparse.Namespace(**{
        **vars(args), "max_model_len": OVERHEAD_MAX_MODEL_LEN, "kv_cache_gib": None, "only": None,
        "decode_recheck": False,
        "gpu_memory_utilization": args.overhead_gpu_memory_utilization, "decode_batches": args.overhead_batches,
        "cudagraph_capture_sizes": tuple(b for b in args.overhead_batches if b <= args.max_num_seqs)})


def overhead_section(args: argparse.Namespace, budget: Budget) -> Budget:
    """The overhead models' own budget: at most --overhead-budget-s of the session, engine starts
    included, and never past the session's budget."""
    return Budget(min(args.overhead_budget_s, budget.remaining() - budget.reserve_s), reserve_s=0.0,
                  clock=budget.clock)


def overhead_engine_s(args: argparse.Namespace, name: str) -> float:
    """A tiny engine's start: torch.compile cold for the first (56 s measured on the H200, 2026-12-01),
    the same layer graph already in inductor's cache for the next (31 s); ~14 s of each is vLLM's warm-up."""
    first = overhead_models(args)[:1] == [name]
    return args.assumed_overhead_engine_s if first else args.assumed_overhead_next_engine_s


def overhead_reserve_s(args: argparse.Namespace) -> float:
    """What the overhead models' engines and parts are planned to take, at most their section budget:
    kept free by the main model's parts, which run first on an engine that must stop before theirs."""
    need = 0.0
    for name in overhead_models(args):
        cost = CostModel.from_config(second_model_config(name)[0])
        need += overhead_engine_s(args, name) + sum(
            p.estimate_s for p in build_plan(overhead_model_args(args), cost, name, frozenset({"decode"})))
    return min(need, args.overhead_budget_s)


def run_overhead_models(args: argparse.Namespace, budget: Budget, main: Output) -> int:
    section = overhead_section(args, budget)
    code = 0
    for name in overhead_models(args):
        code = max(code, run_extra_model(args, section, main, name, overhead_model_args(args),
                                         frozenset({"decode"}), overhead_engine_s(args, name), "overhead model"))
    return code


def gemm_shapes(args: argparse.Namespace, configs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The linear layers' (m tokens, k in, n out) at every token count the plan's steps run: each
    decode batch (m = batch, lm_head included) and each prefill chunk (a lone prompt split at
    max_num_batched_tokens; the lm_head then sees one row). The ceilings part times them (bf16)."""
    decode = set(_listed(args, "decode_batches", DECODE_BATCHES))
    chunks = {min(args.max_num_batched_tokens, n - start)
              for n in _listed(args, "prefill_lens", PREFILL_LENS) if n + 1 <= args.max_model_len
              for start in range(0, n, args.max_num_batched_tokens)}
    if "prefill_batch" in (args.only or "").split(","):  # its steps' token counts (theory's batch_prefill_work)
        total = (getattr(args, "prefill_batch", None) or PREFILL_BATCH) * PREFILL_BATCH_LEN
        chunks |= {min(args.max_num_batched_tokens, total - start)
                   for start in range(0, total, args.max_num_batched_tokens)}
    out: list[dict[str, Any]] = []
    for model, c in configs.items():
        h, heads, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        d = c.get("head_dim") or h // heads
        trunk = (("qkv", h, (heads + 2 * kv) * d), ("o", heads * d, h),
                 ("gate_up", h, 2 * c["intermediate_size"]), ("down", c["intermediate_size"], h))
        for m in sorted(decode | chunks):
            out += [{"model": model, "layer": layer, "m": m, "k": k, "n": n} for layer, k, n in trunk]
        out += [{"model": model, "layer": "lm_head", "m": m, "k": h, "n": c["vocab_size"]}
                for m in sorted(decode | {1})]
    return out


def plan_configs(args: argparse.Namespace, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The configs whose linear shapes the ceilings part times: the main model and the second."""
    return {main_model_id(args): config, **{name: second_model_config(name)[0] for name in second_models(args)}}


def gemm_estimate_s(shapes: list[dict[str, Any]], cost: CostModel) -> float:
    """Timed runs + warm-up of every distinct shape at the planning rates, plus allocation."""
    distinct = {(s["m"], s["k"], s["n"]) for s in shapes}
    per_run = sum(max(2.0 * m * k * n / cost.flops, 2.0 * (k * n + m * k + m * n) / cost.bandwidth)
                  for m, k, n in distinct)
    return 23 * per_run + 0.05 * len(distinct)


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma list of integers") from None


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma list of numbers") from None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dry-run", action="store_true", help="print the plan and exit (no GPU)")
    p.add_argument("--budget-s", type=float, default=540.0)
    p.add_argument("--out-dir", default=os.environ.get("OUT") or "latency-out")
    p.add_argument("--config", type=Path, default=None, help=f"config.json (default {CONFIG_PATH.name})")
    p.add_argument("--max-model-len", type=int, default=33024)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--kv-cache-gib", type=float, default=None,
                   help="pin the KV pool (vLLM kv_cache_memory_bytes); makes the overload part cheap")
    p.add_argument("--max-num-seqs", type=int, default=128, help="the seed's value")
    p.add_argument("--max-num-batched-tokens", type=int, default=8192,
                   help="`vllm serve`'s default on a >= 70 GiB GPU in vLLM 0.26.0")
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--skip-ceilings", action="store_true")
    p.add_argument("--no-decode-recheck", dest="decode_recheck", action="store_false",
                   help="keep a decode part the run-validity check flags (an engine-core stall) without measuring "
                        "it again")
    p.add_argument("--only", default=None,
                   help="comma list of kinds: decode,prefill,prefill_batch,closed,poisson,overload "
                        "(prefill_batch only when named here)")
    p.add_argument("--decode-batches", type=_ints, default=None, help="comma list (default: all of the plan's)")
    p.add_argument("--prefill-lens", type=_ints, default=None, help="comma list of prompt lengths")
    p.add_argument("--prefill-batch", type=int, default=PREFILL_BATCH,
                   help=f"prompts of {PREFILL_BATCH_LEN} tokens the prefill_batch part sends at once")
    p.add_argument("--closed", type=_ints, default=None, help="comma list of closed-loop concurrencies")
    p.add_argument("--poisson-factors", type=_floats, default=None,
                   help="comma list of Poisson rates as fractions of the largest closed loop's throughput")
    p.add_argument("--second-model", default="llama-3.1-8b",
                   help="catalog name or config.json path of a second model run after the first on a fresh "
                        "engine, or a comma list of them, each on its own engine in order (`none` to skip)")
    p.add_argument("--second-model-kinds", default="decode,prefill",
                   help="the second model's parts (comma list of kinds)")
    p.add_argument("--second-model-decode-batches", type=_ints, default=None,
                   help="the second model's decode batches where they differ (a card whose predicted pool for it "
                        "is smaller: tests_latency's live plan passes them); default --decode-batches")
    p.add_argument("--overhead-models", default=",".join(OVERHEAD_MODELS),
                   help="comma list of tiny-hidden models (configs/overhead/ names or config.json paths) whose decode "
                        "steps measure the engine's step overhead, each on a fresh engine after the main model "
                        "(`none` to skip)")
    p.add_argument("--overhead-batches", type=_ints, default=OVERHEAD_BATCHES,
                   help="the overhead models' decode batches (also their only CUDA-graph capture sizes)")
    p.add_argument("--overhead-budget-s", type=float, default=100.0,
                   help="device seconds the overhead models may take in all, engine starts included")
    p.add_argument("--overhead-gpu-memory-utilization", type=float, default=OVERHEAD_GPU_MEMORY_UTILIZATION)
    p.add_argument("--assumed-import-s", type=float, default=25.0, help=argparse.SUPPRESS)
    p.add_argument("--assumed-ceilings-s", type=float, default=30.0, help=argparse.SUPPRESS)
    p.add_argument("--assumed-engine-s", type=float, default=90.0, help=argparse.SUPPRESS)
    p.add_argument("--assumed-overhead-engine-s", type=float, default=56.0, help=argparse.SUPPRESS)
    p.add_argument("--assumed-overhead-next-engine-s", type=float, default=31.0, help=argparse.SUPPRESS)
    p.add_argument("--assumed-pool-tokens", type=int, default=2_000_000, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    kinds = {"decode", "prefill", "prefill_batch", "closed", "poisson", "overload"}
    for flag, value in (("--only", args.only), ("--second-model-kinds", args.second_model_kinds)):
        if value and not set(value.split(",")) <= kinds:
            p.error(f"{flag} {value!r}: unknown kind(s) {sorted(set(value.split(',')) - kinds)}; "
                    f"choose from {sorted(kinds)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config, source = load_model_config(args.config)
    cost = CostModel.from_config(config)
    if args.dry_run:
        print_plan(args, cost)
        return 0
    for key, value in ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    budget = Budget(args.budget_s, start=T_START)
    model = main_model_id(args)
    out = Output(Path(args.out_dir), base_provenance(args, config, source, cost, model))
    out.write()
    ceilings_json = Path(args.out_dir) / "ceilings.json"
    proc = None
    if not args.skip_ceilings:  # a fresh process: this one must stay CUDA-free for vLLM's fork
        shapes_json = Path(args.out_dir) / "gemm-shapes.json"
        shapes_json.write_text(json.dumps(gemm_shapes(args, plan_configs(args, config)), indent=0) + "\n")
        proc = subprocess.Popen([sys.executable, "-m", "pytest_anatomy.measure.ceilings",
                                 "--json", str(ceilings_json), "--gemm-shapes", str(shapes_json)], cwd=REPO)
    t0 = time.monotonic()
    try:
        import vllm  # timed: ~20 s on the device
    except ImportError as exc:
        out.doc["provenance"]["error"] = f"import vllm failed: {exc}"
        out.write()
        log(f"[plan] cannot import vllm ({exc}): run the bundle's install.sh and "
            "`source /root/stage/env.sh` first (shared/device/vllm/README.md)")
        if proc is not None:
            proc.wait()
        return 2

    out.doc["provenance"]["import_vllm_s"] = time.monotonic() - t0
    out.doc["provenance"]["versions"] = versions()
    log(f"[plan] vllm {vllm.__version__} imported in {time.monotonic() - t0:.1f} s")
    if proc is not None:
        t1 = time.monotonic()
        body: dict[str, Any]
        try:
            code = proc.wait(timeout=max(10.0, min(180.0, budget.remaining() - 200)))
            body = ({"result": json.loads(ceilings_json.read_text())} if code == 0
                    else {"error": f"ceilings subprocess exited with {code}"})
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            body = {"error": "ceilings subprocess timed out and was killed"}
            if ceilings_json.exists():  # its checkpoint: the four ceilings, written before the linear shapes
                body = {"result": json.loads(ceilings_json.read_text()),
                        "note": "ceilings subprocess timed out during the linear shapes and was killed"}
        out.add({"id": "ceilings", "kind": "ceilings", "wall_waited_s": time.monotonic() - t1, **body})
        if "result" in body:
            out.doc["provenance"]["gpu"] = body["result"]["facts"]
    model_dir = tempfile.mkdtemp(prefix=f"{model}-dummy-")
    (Path(model_dir) / "config.json").write_text(json.dumps(config, indent=2))
    # the main model's parts leave the overhead models their section (its load parts are the ones that wait)
    main_budget = Budget(args.budget_s, start=T_START, reserve_s=budget.reserve_s + overhead_reserve_s(args))
    code = asyncio.run(execute(args, out, main_budget, config, model_dir, cost, model))
    try:
        code = max(code, run_overhead_models(args, budget, out))
    except Exception:  # the main model's results are already on disk; never lose them
        log(f"[plan] overhead models FAILED:\n{traceback.format_exc()}")
        code = max(code, 4)
    for name in second_models(args):
        try:
            code = max(code, run_second_model(args, budget, out, name))
        except Exception:  # the first model's results are already on disk; never lose them
            log(f"[plan] second model {name} FAILED:\n{traceback.format_exc()}")
            code = max(code, 4)
    from pytest_anatomy.gpu_query import nvidia_smi_snapshot

    out.doc["provenance"]["nvidia_smi_end"] = nvidia_smi_snapshot()
    out.doc["provenance"]["wall_s"] = time.monotonic() - T_START
    out.write()
    log(f"[plan] wrote {out.dir / 'latency.json'} ({len(out.doc['runs'])} runs), exit {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
