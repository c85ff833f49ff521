"""The tuning ladder: engine configurations, each one change against its parent, and what each is
predicted to serve a workload (TTFT p50/p99, ITL p50/p99, output throughput, goodput under the SLO).

Every configuration is simulated (theory/serving.py) over the workload's own seeded requests
(specs/workload_file.py), with the step model (theory/latency.py) changed by the configuration:
- max_num_seqs / max_num_batched_tokens: the scheduler's limits;
- prefix cache: each request's block-granular hit (theory/prefix_cache.py) is skipped by its prefill;
  the shared prefixes are warmed first (the device plan sends each once before the timed run);
- fp8 weights / fp8 KV cache: theory/fp8.apply_fp8 (bytes only);
- no CUDA graphs (enforce_eager): every step pays its kernels' host launches (EAGER_* below);
- n-gram speculation: simulated with E and the share of decode steps that draft measured (dummy
  weights: acceptance is never predicted): a drafting decode verifies 1 + k tokens and gains E on
  average, pure decode/verify steps padded to the
  spec-adjusted CUDA-graph sizes; without E its gains are left as the closed form's coefficients
  (t_decode, t_verify at the parent's mean running batch: speedup = E x t_decode / t_verify).

ITL here is per output token: a streamed chunk of k tokens after a gap d counts k gaps of d / k
(what speculation is for); without speculation every chunk is one token and the two agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.specs.workload_file import GeneratedWorkload, goodput
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.theory.fp8 import apply_fp8
from pytest_anatomy.theory.latency import Ceilings, EngineCalibration, StepModel, mixed_step_time
from pytest_anatomy.theory.prediction import Prediction
from pytest_anatomy.theory.prefix_cache import hit_tokens
from pytest_anatomy.theory.speculative import spec_default_capture_sizes, verify_step
from pytest_anatomy.theory.vllm_settings import LedgerSettings, resolve

METRICS = ("ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s", "output_throughput", "goodput")
# Host-side launches of an eager decoder layer in vLLM (input norm, QKV, rope, KV write, attention,
# o_proj, residual + norm, gate_up, SiLU x mul, down, and two small bookkeeping kernels) and the
# time one costs the CPU in eager PyTorch. Assumed, not fitted: the ladder's eager step tests it.
EAGER_LAUNCHES_PER_LAYER = 12
EAGER_LAUNCH_S = 6e-6


@dataclass(frozen=True)
class EngineKnobs:
    max_num_seqs: int
    max_num_batched_tokens: int
    prefix_caching: bool = False
    fp8_weights: bool = False
    fp8_kv: bool = False
    cudagraphs: bool = True
    spec_tokens: int = 0  # n-gram num_speculative_tokens (0: off)
    block_size: int = 16
    max_capture: int | None = None  # max_cudagraph_capture_size (None: vLLM's default, min(2 x max_num_seqs, 512))

    def engine_kwargs(self) -> dict[str, Any]:
        """What vLLM's LLM(...) is given for this configuration (the device plan passes it verbatim)."""
        kw: dict[str, Any] = {"max_num_seqs": self.max_num_seqs,
                              "max_num_batched_tokens": self.max_num_batched_tokens,
                              "enable_prefix_caching": self.prefix_caching, "enforce_eager": not self.cudagraphs}
        if self.fp8_weights:
            kw["quantization"] = "fp8"
        if self.fp8_kv:
            kw["kv_cache_dtype"] = "fp8"
        if self.max_capture is not None and self.cudagraphs:
            kw["max_cudagraph_capture_size"] = self.max_capture
        if self.spec_tokens:
            kw["speculative_config"] = {"method": "ngram", "num_speculative_tokens": self.spec_tokens,
                                        "prompt_lookup_min": 2, "prompt_lookup_max": 4}
        return kw


@dataclass(frozen=True)
class LadderStep:
    name: str
    change: str  # the one knob changed against the parent, in words
    knobs: EngineKnobs
    parent: str | None


@dataclass(frozen=True)
class StepOutcome:
    """Predicted numbers of one configuration on one workload (None: not predicted, see `why`)."""

    metrics: dict[str, float | None]
    terms: dict[str, float]
    why: tuple[str, ...] = ()


def in_flight(work: GeneratedWorkload) -> int:
    """The decodes a chunk shares a step with: a closed loop's users; an open loop's are not known
    before simulating, and the chunk dominates such a step, so one."""
    return work.spec.concurrency or 1


def tuned_limits(work: GeneratedWorkload, decode_mixed_s: dict[int, float], slo_itl_s: float,
                 default_seqs: int = 1024) -> tuple[int, int]:
    """max_num_seqs and max_num_batched_tokens chosen for the workload: a closed loop's users (an open
    loop keeps `default_seqs`), and the largest budget whose step carrying a chunk beside the in-flight
    decodes still meets the ITL SLO (`decode_mixed_s`: budget -> that step's time); the smallest if none does."""
    c = in_flight(work)
    fitting = [b for b, t in sorted(decode_mixed_s.items()) if t <= slo_itl_s and b > c]
    budget = fitting[-1] if fitting else min(b for b in decode_mixed_s if b > c)
    return work.spec.concurrency or default_seqs, budget


BUDGETS = (512, 1024, 2048, 4096, 8192, 16384)


def ladder(default_seqs: int, default_budget: int, tuned: tuple[int, int], spec_tokens: int = 4) -> list[LadderStep]:
    """The rungs: baseline (vLLM defaults, prefix cache explicitly off: V1 enables it by default and the
    ladder adds it as its own step), then one change each; 'eager' and 'ngram' branch off 'fp8_kv'."""
    base = EngineKnobs(default_seqs, default_budget)
    limits = replace(base, max_num_seqs=tuned[0], max_num_batched_tokens=tuned[1])
    prefix = replace(limits, prefix_caching=True)
    fp8w = replace(prefix, fp8_weights=True)
    fp8kv = replace(fp8w, fp8_kv=True)
    return [LadderStep("baseline", "vLLM defaults (prefix cache off)", base, None),
            LadderStep("limits", f"max_num_seqs {tuned[0]}, max_num_batched_tokens {tuned[1]}", limits, "baseline"),
            LadderStep("prefix_cache", "enable_prefix_caching", prefix, "limits"),
            LadderStep("fp8_weights", "quantization=fp8", fp8w, "prefix_cache"),
            LadderStep("fp8_kv", "kv_cache_dtype=fp8", fp8kv, "fp8_weights"),
            LadderStep("eager", "enforce_eager (no CUDA graphs, no torch.compile)", replace(fp8kv, cudagraphs=False),
                       "fp8_kv"),
            LadderStep("ngram", f"n-gram speculation, {spec_tokens} tokens", replace(fp8kv, spec_tokens=spec_tokens),
                       "fp8_kv")]


def step_model(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, knobs: EngineKnobs) -> StepModel:
    """The step model of a configuration: fp8 bytes, and the eager launches added to every step."""
    sm = apply_fp8(model, StepModel.build(model, ceilings, calib), weights=knobs.fp8_weights, kv_cache=knobs.fp8_kv)
    if not knobs.cudagraphs:
        extra = model.num_layers * EAGER_LAUNCHES_PER_LAYER * EAGER_LAUNCH_S
        sm = replace(sm, overhead_s=sm.overhead_s + extra, calibration=sm.calibration + (
            f"eager: + {extra * 1e3:.3g} ms per step ({model.num_layers} layers x {EAGER_LAUNCHES_PER_LAYER} launches "
            f"x {EAGER_LAUNCH_S * 1e6:g} us, assumed)",))
    return sm


def simulated_workload(work: GeneratedWorkload, knobs: EngineKnobs) -> sv.Workload:
    """The requests as the simulator takes them, with prefix hits when the cache is on (warm)."""
    cached = tuple(hit_tokens(len(r.prompt), r.prefix_len, knobs.block_size) if knobs.prefix_caching else 0
                   for r in work.requests)
    return sv.Workload.of_requests(work.prompt_lens, work.output_lens, cached, concurrency=work.spec.concurrency,
                                   arrivals=work.arrivals)


def simulate(sm: StepModel, work: GeneratedWorkload, knobs: EngineKnobs, pool_blocks: int | None,
             tokens_per_step: float = 1.0, draft_fraction: float = 1.0) -> StepOutcome:
    """Simulate one configuration and read the ladder's metrics off it; speculating, each verify gains
    `tokens_per_step` (E) and pure decode/verify steps are padded to the spec-adjusted graph sizes."""
    sizes = spec_default_capture_sizes(knobs.max_num_seqs, knobs.max_num_batched_tokens, knobs.spec_tokens) \
        if knobs.spec_tokens and knobs.cudagraphs else ()
    sched = sv.SchedulerConfig(knobs.max_num_seqs, knobs.max_num_batched_tokens, pool_blocks, knobs.block_size,
                               spec_tokens=knobs.spec_tokens, spec_tokens_per_step=tokens_per_step,
                               spec_draft_fraction=draft_fraction, capture_sizes=sizes)
    res = sv.simulate(sm, sched, simulated_workload(work, knobs))
    out = {"ttft_p50_s": res.stat("ttft", "p50"), "ttft_p99_s": res.stat("ttft", "p99"),
           "itl_p50_s": res.stat("itl", "p50"), "itl_p99_s": res.stat("itl", "p99"), "output_throughput": res.output_throughput,
           "goodput": goodput(work.spec.slo, res.ttft, res.e2e, work.output_lens, res.duration)}
    terms = {"duration_s": res.duration, "steps": float(res.steps), "mean_running": res.mean_running,
             "preemptions": float(res.preemptions), "prompt_tokens": float(res.prompt_tokens),
             "hit_tokens": float(res.hit_tokens), "mixed_steps": float(res.mixed_steps)}
    return StepOutcome(dict(out), terms)


def speculate(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, work: GeneratedWorkload,
              parent: StepOutcome, knobs: EngineKnobs, tokens_per_step: float | None,
              pool: int | None = None, draft_fraction: float = 1.0) -> StepOutcome:
    """The n-gram rung: simulated with the measured E (every decode verifies its drafts and gains E
    tokens on average). Its terms always carry the closed form at the parent's mean running batch
    (t_decode, t_verify: speedup = E x t_decode / t_verify), the only prediction without a measured E."""
    batch = max(1, round(parent.terms["mean_running"]))
    reqs = work.requests
    context = sum(len(r.prompt) for r in reqs) / len(reqs) + sum(r.output_len for r in reqs) / len(reqs) / 2
    sizes = spec_default_capture_sizes(knobs.max_num_seqs, knobs.max_num_batched_tokens, knobs.spec_tokens) \
        if knobs.cudagraphs else ()
    e = tokens_per_step if tokens_per_step is not None else 1.0
    spec = verify_step(model, ceilings, calib, batch, context, knobs.spec_tokens, e, sizes)
    t_dec = next(t.value for t in spec.speedup.terms if t.name == "t_decode")
    t_ver = spec.verify.value
    terms = {"batch": float(batch), "context": context, "t_decode_s": t_dec, "t_verify_s": t_ver}
    if tokens_per_step is None:
        return StepOutcome({m: None for m in METRICS}, terms, (
            "acceptance not measured: speedup = E x t_decode / t_verify, E from the engine's counters",))
    sim = simulate(step_model(model, ceilings, calib, knobs), work, knobs, pool, tokens_per_step, draft_fraction)
    return StepOutcome(sim.metrics, {**sim.terms, **terms, "E": e, "draft_fraction": draft_fraction,
                                     "speedup": spec.speedup.value}, (
        "E and the share of decode steps that draft measured (dummy weights: inputs, not predictions)",))


def gains(step: StepOutcome, parent: StepOutcome) -> dict[str, float | None]:
    """metric / parent's metric, per metric (None where either is not predicted or the parent is 0)."""
    out: dict[str, float | None] = {}
    for m in METRICS:
        a, b = step.metrics.get(m), parent.metrics.get(m)
        out[m] = None if a is None or b is None or b == 0 or not math.isfinite(a / b) else a / b
    return out


GAIN_TARGET = 0.2  # issue 14: a rung's predicted gain within 20% of its measured gain


def gain_within(predicted: float, measured: float, tolerance: float = GAIN_TARGET) -> bool:
    """The ladder's target: the predicted gain within 20% of the measured gain, |p - m| <= 0.2 m."""
    return abs(predicted / measured - 1) <= tolerance


def gain_band(tolerance: float = GAIN_TARGET) -> tuple[float, float]:
    """The same target as a band on measured / predicted (reconcile's ratio=): p in [0.8 m, 1.2 m]."""
    return 1 / (1 + tolerance), 1 / (1 - tolerance)


MAX_MODEL_LEN = 8192


def pool_blocks(model: ModelSpec, hw: HardwareSpec, knobs: EngineKnobs, tp: int = 1) -> int | None:
    """The KV pool of this configuration, from the capacity ledger (bf16 weights: with fp8 weights the
    real pool is larger, so this is a lower bound there); None where the ledger is not modelled."""
    from pytest_anatomy.theory.planning import capacity

    answers = capacity(model, hw, max_model_len=MAX_MODEL_LEN, kv_cache_dtype="fp8" if knobs.fp8_kv else "auto",
                       max_num_seqs=knobs.max_num_seqs, max_num_batched_tokens=knobs.max_num_batched_tokens,
                       enforce_eager=not knobs.cudagraphs, tp=tp,
                       max_cudagraph_capture_size=knobs.max_capture if knobs.cudagraphs else None)
    blocks = answers.get("num_gpu_blocks")
    return int(blocks.value) if isinstance(blocks, Prediction) else None


def budget_steps(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, work: GeneratedWorkload) -> dict[int, float]:
    """For each candidate budget, the step carrying a full chunk beside the workload's in-flight decodes."""
    c = in_flight(work)
    reqs = work.requests
    context = sum(len(r.prompt) + r.output_len / 2 for r in reqs) / len(reqs)
    return {b: mixed_step_time(model, ceilings, calib, c, context, b - c).value for b in BUDGETS if b > c}


def run_ladder(model: ModelSpec, hw: HardwareSpec, ceilings: Ceilings, calib: EngineCalibration,
               work: GeneratedWorkload, tokens_per_step: float | None = None,
               draft_fraction: float = 1.0) -> list[dict[str, Any]]:
    """Every rung's configuration, predicted metrics, gains against its parent and terms."""
    defaults = resolve(hw, LedgerSettings(max_model_len=MAX_MODEL_LEN, usage_context="openai_api_server"))
    tuned = tuned_limits(work, budget_steps(model, ceilings, calib, work), work.spec.slo.itl_ms * 1e-3,
                         defaults.max_num_seqs)
    done: dict[str, StepOutcome] = {}
    rows = []
    for step in ladder(defaults.max_num_seqs, defaults.max_num_batched_tokens, tuned):
        if step.knobs.spec_tokens:
            assert step.parent is not None
            outcome = speculate(model, ceilings, calib, work, done[step.parent], step.knobs, tokens_per_step,
                                pool_blocks(model, hw, step.knobs), draft_fraction)
        else:
            sm = step_model(model, ceilings, calib, step.knobs)
            outcome = simulate(sm, work, step.knobs, pool_blocks(model, hw, step.knobs))
        done[step.name] = outcome
        rows.append({"step": step.name, "change": step.change, "parent": step.parent,
                     "engine_kwargs": step.knobs.engine_kwargs(), "predicted": outcome.metrics,
                     "gain": gains(outcome, done[step.parent]) if step.parent else None,
                     "terms": outcome.terms, "notes": list(outcome.why)})
    return rows
