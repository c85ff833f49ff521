"""`plan`: every configuration worth trying for a workload and an SLO, each simulated, ranked.

Candidates: tensor parallel sizes up to the GPUs given (those that split the model; the GPUs left over
run as gpus // tp replicas, the requests dealt round-robin), vLLM's default
limits or limits chosen for the workload (theory/deployment.tuned_limits), the prefix cache (when
the workload shares prefixes), fp8 weights, an fp8 KV cache, and n-gram speculation when an
acceptance is given (the theory does not predict acceptance). Each is simulated over the workload's
own seeded requests; a configuration meets the SLO when its simulated TTFT p99 and ITL p99 are within
it. Ranked by goodput per GPU, then output throughput per GPU (every candidate uses all the GPUs). The knob that buys each gain: for
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
from pytest_anatomy.theory.vllm_settings import LedgerSettings, default_capture_sizes, resolve

TP_SIZES = (1, 2, 4, 8)
KNOBS = ("limits", "prefix_caching", "fp8_weights", "fp8_kv", "speculation")


@dataclass(frozen=True)
class Candidate:
    tp: int
    knobs: dp.EngineKnobs
    tuned_limits: bool
    outcome: dp.StepOutcome  # throughput and goodput of all replicas together; latencies of one
    max_concurrency: float | None  # requests of the workload's mean length one replica's KV pool holds
    replicas: int = 1  # engines of tp GPUs each, the requests dealt round-robin

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
        blocks = dp.pool_blocks(model, hw, knobs, tp)
        if blocks is not None and blocks - 1 < longest:
            continue  # the pool cannot hold the workload's longest request (or the weights do not fit)
        outcome = dp.simulate(step_model(model, model_name, hw, ceilings, calib, knobs, tp), work, knobs, blocks)
        conc = None if blocks is None else (blocks - 1) * knobs.block_size / mean_tokens
        out.append(Candidate(tp, knobs, tuned_on, _scaled(outcome, replicas, notes + graph_note(knobs)), conc,
                             replicas))
        if acceptance is not None and tp == 1:
            from pytest_anatomy.theory.speculative import expected_tokens

            sk = replace(knobs, spec_tokens=4)
            spec = dp.speculate(model, ceilings, calib, work, outcome, sk, expected_tokens(acceptance, 4), blocks)
            out.append(Candidate(tp, sk, tuned_on, _scaled(spec, replicas, notes + graph_note(sk)), conc, replicas))
    return out


def graph_note(knobs: dp.EngineKnobs) -> tuple[str, ...]:
    """What the simulation leaves unpriced for this engine: steps larger than vLLM's largest captured CUDA graph run
    outside the graphs, and the step model prices every step as captured. The largest size is vLLM's default for the
    engine's max_num_seqs (theory/vllm_settings.default_capture_sizes; speculation's list when it speculates)."""
    if not knobs.cudagraphs:
        return ()
    seqs, budget = knobs.max_num_seqs, knobs.max_num_batched_tokens
    sizes = spec_default_capture_sizes(seqs, budget, knobs.spec_tokens) if knobs.spec_tokens else \
        default_capture_sizes(seqs, budget)
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
            "max_concurrency": c.max_concurrency, "notes": list(c.outcome.why)}
