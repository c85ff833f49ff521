"""`plan`: every configuration worth trying for a workload and an SLO, each simulated, ranked.

Candidates: tensor parallel sizes up to the GPUs given (those that split the model; the GPUs left over
run as gpus // tp replicas, the requests dealt round-robin), vLLM's default
limits or limits chosen for the workload (theory/deployment.tuned_limits), the prefix cache (when
the workload shares prefixes), fp8 weights, an fp8 KV cache, and n-gram speculation when an
acceptance is given (the theory does not predict acceptance). Each is simulated over the workload's
own seeded requests; a configuration meets the SLO when its simulated TTFT p99 and ITL p99 are within
it. A configuration whose token budget exceeds vLLM's default CUDA-graph capture (min(2 x max_num_seqs, 512) tokens)
captures graphs up to its budget (max_cudagraph_capture_size), priced by its graph pool (on top of
gpu_memory_utilization with the V2 runner; it must fit in what the request leaves) and its longer engine start; one whose
pool would not fit keeps vLLM's default and says which of its steps run graph-less, unpriced (capture_to_budget). Ranked by goodput per GPU, then output throughput per GPU (every candidate uses all the GPUs). The knob that buys each gain: for
every knob a configuration turns on, the same configuration with that knob off, and the ratio.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.specs import workload_file as wf
from pytest_anatomy.specs.workload_file import GeneratedWorkload, Slo
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory import deployment as dp
from pytest_anatomy.theory.fp8 import apply_fp8
from pytest_anatomy.theory.latency import Ceilings, EngineCalibration, StepModel
from pytest_anatomy.theory.speculative import spec_default_capture_sizes
from pytest_anatomy.theory.vllm_memory import V2_GRAPH_POOL_COST, cudagraph_pool, requested_memory
from pytest_anatomy.theory.vllm_settings import LedgerSettings, ResolvedSettings, default_capture_sizes, resolve
from pytest_anatomy.units import GiB

TP_SIZES = (1, 2, 4, 8)
KNOBS = ("limits", "prefix_caching", "fp8_weights", "fp8_kv", "speculation")
# Seconds of engine start per captured graph: 63 s for 614 graphs (531 PIECEWISE + 83 FULL) on an H200, the same run as
# vllm_memory.V2_GRAPH_POOL_COST; held out, the 102 graphs to 512 tokens took 3-6 s (10.5 priced): high for short lists.
CAPTURE_S_PER_GRAPH = 63.0 / 614


@dataclass(frozen=True)
class GraphCapture:
    """CUDA graphs captured up to a configuration's token budget instead of vLLM's default list, and what that costs:
    the graph pool (the V2 runner's lands on top of gpu_memory_utilization, so the KV pool is unchanged and the pool must
    fit in the `headroom` the request leaves: device total - requested) and the seconds the capture adds to a start."""

    max_capture: int
    default_max: int
    piecewise: int
    full: int
    pool_bytes: float
    headroom_bytes: float
    capture_s: float  # all graphs of the list
    added_s: float  # against vLLM's default list

    def fits(self) -> bool:
        return self.pool_bytes <= self.headroom_bytes

    def to_dict(self) -> dict[str, Any]:
        return {"max_cudagraph_capture_size": self.max_capture, "default_max_capture": self.default_max,
                "piecewise_graphs": self.piecewise, "full_graphs": self.full, "pool_bytes": self.pool_bytes,
                "headroom_bytes": self.headroom_bytes, "fits": self.fits(), "capture_s": self.capture_s,
                "added_start_s": self.added_s}

    def note(self) -> str:
        if not self.fits():
            return (f"CUDA graphs to the {self.max_capture}-token budget do not fit: {self.piecewise + self.full} "
                    f"graphs, a pool of ~{self.pool_bytes / GiB:.2f} GiB, above the {self.headroom_bytes / GiB:.2f} GiB "
                    "gpu_memory_utilization leaves; vLLM's default list is kept")
        return (f"CUDA graphs captured to the {self.max_capture}-token budget (engine argument max_cudagraph_capture_size"
                f"={self.max_capture}; vLLM's default stops at {self.default_max}): {self.piecewise} PIECEWISE + "
                f"{self.full} FULL graphs, a pool of ~{self.pool_bytes / GiB:.2f} GiB on top of gpu_memory_utilization "
                f"(the V2 runner takes it from no budget: the KV pool is unchanged) within the "
                f"{self.headroom_bytes / GiB:.2f} GiB the request leaves, and ~{self.added_s:.0f} s more engine start "
                f"({V2_GRAPH_POOL_COST.note()}). Without them a step above {self.default_max} tokens runs graph-less, "
                "which the step model does not price: on an H200 Llama-3.1-8B's such prompt windows took 24.7 ms "
                "graph-less and 12.4 ms captured, ITL p99 26.59 -> 14.50 ms (docs/DEPLOYMENT.md, cause test "
                "graphs-to-budget)")


def _resolved(hw: HardwareSpec, knobs: dp.EngineKnobs, tp: int, max_capture: int | None) -> ResolvedSettings:
    return resolve(hw, LedgerSettings(max_model_len=dp.MAX_MODEL_LEN, max_num_seqs=knobs.max_num_seqs,
                                      max_num_batched_tokens=knobs.max_num_batched_tokens,
                                      kv_cache_dtype="fp8" if knobs.fp8_kv else "auto", tensor_parallel_size=tp,
                                      max_cudagraph_capture_size=max_capture))


def capture_to_budget(hw: HardwareSpec, knobs: dp.EngineKnobs, tp: int = 1) -> GraphCapture | None:
    """The graphs a configuration would capture to its budget and their price; None where nothing changes (eager, a
    budget inside vLLM's default list, or speculation, whose capture list vLLM sizes its own way)."""
    if not knobs.cudagraphs or knobs.spec_tokens:
        return None
    default = _resolved(hw, knobs, tp, None)
    default_max = max(default.cudagraph_capture_sizes, default=0)
    budget = knobs.max_num_batched_tokens
    if budget <= default_max:
        return None
    rs = _resolved(hw, knobs, tp, budget)
    requested = requested_memory(hw, rs)
    total = hw.cuda_visible_memory_bytes or hw.nvml_memory_bytes or hw.memory_bytes or 0
    graphs = len(rs.cudagraph_capture_sizes) + rs.num_full_graphs
    default_graphs = len(default.cudagraph_capture_sizes) + default.num_full_graphs
    return GraphCapture(budget, default_max, len(rs.cudagraph_capture_sizes), rs.num_full_graphs,
                        float(cudagraph_pool(rs).value), float(total - requested.value), graphs * CAPTURE_S_PER_GRAPH,
                        (graphs - default_graphs) * CAPTURE_S_PER_GRAPH)


@dataclass(frozen=True)
class Candidate:
    tp: int
    knobs: dp.EngineKnobs
    tuned_limits: bool
    outcome: dp.StepOutcome  # throughput and goodput of all replicas together; latencies of one
    max_concurrency: float | None  # requests of the workload's mean length one replica's KV pool holds
    replicas: int = 1  # engines of tp GPUs each, the requests dealt round-robin
    graphs: GraphCapture | None = None  # graphs to the budget: captured when they fit, else vLLM's default kept
    pool_blocks: int | None = None  # one replica's KV pool (the capacity ledger's; bf16 weights: a lower bound)

    def on(self) -> dict[str, bool]:
        k = self.knobs
        return {"limits": self.tuned_limits, "prefix_caching": k.prefix_caching, "fp8_weights": k.fp8_weights,
                "fp8_kv": k.fp8_kv, "speculation": bool(k.spec_tokens)}

    def meets(self, slo: Slo) -> bool:
        m = self.outcome.metrics
        ttft, itl = m.get("ttft_p99_s"), m.get("itl_p99_s") or m.get("itl_p50_s")
        return ttft is not None and itl is not None and ttft * 1e3 <= slo.ttft_ms and itl * 1e3 <= slo.itl_ms

    def score(self) -> tuple[float, float]:
        m, gpus = self.outcome.metrics, self.tp * self.replicas
        return ((m.get("goodput") or 0.0) / gpus, (m.get("output_throughput") or 0.0) / gpus)


def tp_sizes(model: ModelSpec, gpus: int) -> list[int]:
    """The tensor-parallel sizes up to `gpus` that split the model's heads and widths evenly."""
    sizes = []
    for tp in (t for t in TP_SIZES if t <= gpus):
        try:
            cap.kv_bytes_per_token(model, tp=tp)
            cap.weight_bytes(model, tp=tp)
        except (ValueError, cap.NotModeled):
            continue
        if model.num_attention_heads % tp == 0:
            sizes.append(tp)
    return sizes


def step_model(model: ModelSpec, model_name: str, hw: HardwareSpec, ceilings: Ceilings, calib: EngineCalibration,
               knobs: dp.EngineKnobs, tp: int) -> StepModel:
    """One rank's step model: the ladder's at tp = 1; above, theory/transfer.py's tensor-parallel rank
    (weights and KV split, all-reduces added); fp8 by theory/fp8.apply_fp8 either way."""
    if tp == 1:
        return dp.step_model(model, ceilings, calib, knobs)
    from pytest_anatomy.theory import transfer as tr

    sm = tr.step_model(tr.Transfer.from_calibration(calib, ceilings), tr.Deployment(hw.name, model_name, "auto", "bf16", tp))
    return apply_fp8(model, sm, weights=knobs.fp8_weights, kv_cache=knobs.fp8_kv, tp=tp)


def evaluate(model: ModelSpec, model_name: str, hw: HardwareSpec, ceilings: Ceilings, calib: EngineCalibration,
             work: GeneratedWorkload, gpus: int, acceptance: float | None = None) -> list[Candidate]:
    """Every candidate on all `gpus`: gpus // tp replicas of a tp-GPU engine, each simulated on its
    round-robin share of the requests (one replica simulated: they are alike), throughput and
    goodput summed; n-gram speculation (tp = 1) simulated with E from the given acceptance."""
    out: list[Candidate] = []
    for tp in tp_sizes(model, gpus):
        replicas = gpus // tp
        share = work if replicas == 1 else wf.share(work, replicas, 0)
        out += _candidates(model, model_name, hw, ceilings, calib, share, tp, replicas, acceptance)
    return out


def _candidates(model: ModelSpec, model_name: str, hw: HardwareSpec, ceilings: Ceilings, calib: EngineCalibration,
                work: GeneratedWorkload, tp: int, replicas: int, acceptance: float | None) -> list[Candidate]:
    """One replica's configurations (its share of the workload), scaled to the replicas."""
    defaults = resolve(hw, LedgerSettings(max_model_len=dp.MAX_MODEL_LEN, usage_context="openai_api_server"))
    tuned = dp.tuned_limits(work, dp.budget_steps(model, ceilings, calib, work), work.spec.slo.itl_ms * 1e-3,
                            defaults.max_num_seqs)
    shares = work.spec.prefix_tokens > 0 and work.spec.prefix_fraction > 0
    mean_tokens = sum(len(r.prompt) + r.output_len for r in work.requests) / len(work.requests)
    longest = max(-(-(len(r.prompt) + r.output_len) // 16) for r in work.requests)  # blocks
    notes = ((f"tensor parallel {tp}: one rank from theory/transfer.py (the calibration as one efficiency, "
              "all-reduces over NVLink at a 10 us latency each), not the tp = 1 step model",) if tp > 1 else ()) + \
        ((f"{replicas} replicas, requests dealt round-robin: one simulated on its share, throughput and goodput "
          f"x {replicas}",) if replicas > 1 else ())
    out = []
    for tuned_on, prefix, fp8w, fp8kv in itertools.product((False, True), (False, True) if shares else (False,),
                                                          (False, True), (False, True)):
        seqs, budget = tuned if tuned_on else (defaults.max_num_seqs, defaults.max_num_batched_tokens)
        knobs = dp.EngineKnobs(seqs, budget, prefix_caching=prefix, fp8_weights=fp8w, fp8_kv=fp8kv)
        graphs = capture_to_budget(hw, knobs, tp)
        if graphs is not None and graphs.fits():
            knobs = replace(knobs, max_capture=graphs.max_capture)
        blocks = dp.pool_blocks(model, hw, knobs, tp)
        if blocks is not None and blocks - 1 < longest:
            continue  # the pool cannot hold the workload's longest request (or the weights do not fit)
        outcome = dp.simulate(step_model(model, model_name, hw, ceilings, calib, knobs, tp), work, knobs, blocks)
        conc = None if blocks is None else (blocks - 1) * knobs.block_size / mean_tokens
        captured = (graphs.note(),) if graphs is not None else ()
        out.append(Candidate(tp, knobs, tuned_on, _scaled(outcome, replicas, notes + graph_note(knobs) + captured),
                             conc, replicas, graphs, blocks))
        if acceptance is not None and tp == 1:
            from pytest_anatomy.theory.speculative import expected_tokens

            sk = replace(knobs, spec_tokens=4, max_capture=None)  # speculation's capture list is vLLM's own
            spec = dp.speculate(model, ceilings, calib, work, outcome, sk, expected_tokens(acceptance, 4), blocks)
            out.append(Candidate(tp, sk, tuned_on, _scaled(spec, replicas, notes + graph_note(sk)), conc, replicas,
                                 None, blocks))
    return out


def graph_note(knobs: dp.EngineKnobs) -> tuple[str, ...]:
    """What the simulation leaves unpriced for this engine: steps larger than vLLM's largest captured CUDA graph run
    outside the graphs, and the step model prices every step as captured. The largest size is vLLM's default for the
    engine's max_num_seqs (theory/vllm_settings.default_capture_sizes; speculation's list when it speculates)."""
    if not knobs.cudagraphs:
        return ()
    seqs, budget = knobs.max_num_seqs, knobs.max_num_batched_tokens
    sizes = spec_default_capture_sizes(seqs, budget, knobs.spec_tokens) if knobs.spec_tokens else \
        default_capture_sizes(seqs, budget, knobs.max_capture)
    top = max(sizes, default=0)
    if budget <= top:
        return ()
    return (f"CUDA graphs: vLLM captures steps of up to {top} tokens at max_num_seqs {seqs} (its default), so a step "
            f"carrying more (a prompt chunk, up to the {budget}-token budget) runs outside them; the simulation prices "
            "every step as captured. On an H200 such prompt steps took about twice as long and set the ITL tail "
            "(docs/DEPLOYMENT.md, cause test graphs-to-budget); engine argument max_cudagraph_capture_size="
            f"{budget} captures them (more graph memory and a longer engine start)",)


def _scaled(outcome: dp.StepOutcome, replicas: int, notes: tuple[str, ...]) -> dp.StepOutcome:
    m = dict(outcome.metrics)
    for key in ("output_throughput", "goodput"):
        value = m.get(key)
        m[key] = None if value is None else value * replicas
    return replace(outcome, metrics=m, why=outcome.why + notes)


def ranked(cands: list[Candidate], slo: Slo) -> list[Candidate]:
    """The candidates meeting the SLO, best first."""
    return sorted((c for c in cands if c.meets(slo)), key=lambda c: c.score(), reverse=True)


def attribution(best: Candidate, cands: list[Candidate]) -> dict[str, dict[str, float | None]]:
    """For each knob `best` turns on: metric ratios of best against the same configuration without it."""
    out: dict[str, dict[str, float | None]] = {}
    for knob, on in best.on().items():
        if not on:
            continue
        want = {**best.on(), knob: False}
        other = next((c for c in cands if c.tp == best.tp and c.on() == want), None)
        if other is not None:
            out[knob] = dp.gains(best.outcome, other.outcome)
    return out


def describe(c: Candidate) -> dict[str, Any]:
    return {"tp": c.tp, "replicas": c.replicas, "engine_kwargs": {**c.knobs.engine_kwargs(), "tensor_parallel_size": c.tp},
            "knobs_on": [k for k, v in c.on().items() if v], "predicted": c.outcome.metrics,
            "max_concurrency": c.max_concurrency, "kv_pool_blocks": c.pool_blocks,
            "cudagraphs": None if c.graphs is None else c.graphs.to_dict(), "notes": list(c.outcome.why)}
