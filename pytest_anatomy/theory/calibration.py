"""The engine calibration of one measuring session, fitted from its numbers.

One recipe, used by the latency suite (tests_latency: its engine setup) and by `predict latency`
(its calibrated default), so both answer with the same constants: t_overhead from a b=1 decode
step, then eta from a lone long prefill at the session's ceilings (theory/latency.py's fits).
The numbers come in as plain floats: reading recordings is the caller's business."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import latency as lat


@dataclass(frozen=True)
class SessionPoints:
    """What a session measured that the calibration is fitted on."""

    decode_step_s: float  # steady step of one sequence
    decode_context: float  # its mean KV context (input + output / 2)
    decode_name: str  # recording:quantity, for fitted_on
    prefill_tokens: int  # a lone prompt long enough to be compute-bound (8,192)
    prefill_s: float
    prefill_name: str
    max_num_batched_tokens: int  # the engine's chunk budget of that prefill


def fit_engine(model: ModelSpec, ceilings: lat.Ceilings, points: SessionPoints, *, name: str) -> lat.EngineCalibration:
    """t_overhead from the b=1 decode step, then eta from the prefill with that overhead kept."""
    calib = lat.fit_step_overhead(model, ceilings, 1, points.decode_context, points.decode_step_s,
                                  name=name, fitted_on=points.decode_name)
    return lat.fit_compute_efficiency(model, ceilings, lat.prefill_work(points.prefill_tokens,
                                                                        points.max_num_batched_tokens),
                                      points.prefill_s, calib, fitted_on=points.prefill_name)


# --- the step overhead measured apart: tiny-hidden models in the same engine ---------------------

@dataclass(frozen=True)
class OverheadStep:
    """One decode step of a tiny-hidden overhead model (scripts/device/latency_plan.py
    --overhead-models): its roofline is subtracted, so what is left is the engine's overhead."""

    layers: int
    batch: int
    step_s: float  # measured (median steady ITL)
    roofline_s: float  # the tiny model's own bytes / BW at that batch and context
    name: str  # recording:quantity
    scatter_s: float = 0.0  # the measured step's own repeat scatter (2 standard errors), seconds

    @property
    def overhead_s(self) -> float:
        return self.step_s - self.roofline_s


def overhead_step(tiny: ModelSpec, batch: int, step_s: float, input_len: int, output_len: int,
                  ceilings: lat.Ceilings, name: str, scatter_s: float = 0.0) -> OverheadStep:
    """A tiny model's measured decode step with its roofline subtracted at the request's mean KV
    context over its decode (input + output / 2): the one recipe of the suite and the CLI."""
    roof = lat.decode_step_time(tiny, ceilings, lat.UNCALIBRATED, batch, input_len + output_len / 2)
    return OverheadStep(tiny.num_layers, batch, step_s, roof.value, name, scatter_s)


def gemm_seconds(measurements: Mapping[str, Mapping[str, Any]]) -> dict[tuple[int, int, int], float]:
    """(m, k, n) -> median seconds of a session's bf16 GEMM timings, from a ceilings recording's
    measurements named gemm.m<M>_k<K>_n<N>.seconds_median (measure/ceilings.py --gemm-shapes)."""
    out: dict[tuple[int, int, int], float] = {}
    for name, m in measurements.items():
        parts = name.split(".")
        if len(parts) == 3 and parts[0] == "gemm" and parts[2] == "seconds_median":
            dims = {p[0]: int(p[1:]) for p in parts[1].split("_")}
            out[(dims["m"], dims["k"], dims["n"])] = float(m["value"])
    return out


@dataclass(frozen=True)
class LayerOverhead:
    """t_overhead = c0 + c_layer x layers, from b=1 steps of tiny models at two or more layer counts;
    per_sequence_s is the slope with batch of the same residual (reported, not used in a prediction)."""

    c0_s: float
    per_layer_s: float
    per_sequence_s: float | None
    fitted_on: tuple[str, ...]
    spread_s: float = 0.0  # the b=1 steps' repeat scatter, the largest: how far t_overhead may be off


    def at(self, layers: int) -> float:
        return self.c0_s + self.per_layer_s * layers

    def describe(self) -> str:
        seq = "" if self.per_sequence_s is None else f", +{self.per_sequence_s * 1e6:.2f} us per extra sequence"
        return (f"t_overhead = {self.c0_s * 1e3:.4g} ms + {self.per_layer_s * 1e6:.3g} us x layers{seq} "
                f"(tiny-hidden models: {', '.join(self.fitted_on)})")


# Whether the tiny-hidden models' fitted overhead replaces the b=1 residual as a step's additive overhead. It does
# not: the first session that ran them at two layer counts (2026-12-01 11:18, the full live session) fitted
# 1.761 ms + 25.5 us x layers = 2.475 ms at Qwen2.5-7B's 28 layers, where Qwen2.5-7B's own b=1 step left ~1.5 ms
# above its roofline in every session; every decode step it predicted came out 0.8-0.9x measured. A tiny model's step
# is the engine's async scheduling loop on the CPU (~1.8-2.5 ms), which a 7B model's ~3.2 ms of GPU work hides:
# the floor is not additive (h200-tiny-model-step-is-the-cpu-loop). The calibration keeps the b=1 residual, a fit
# point labelled as such, until a GPU-side overhead measurement exists.
TINY_OVERHEAD_IS_ADDITIVE = False
TINY_OVERHEAD_NOT_USED = (
    "t_overhead is not from the tiny-hidden models although this session ran them: their step is the engine's CPU "
    "loop, which a full model's GPU work hides, so it is not an additive overhead "
    "(calibration.TINY_OVERHEAD_IS_ADDITIVE); Qwen2.5-7B's b=1 residual stays the calibration")


def fit_layer_overhead(steps: list[OverheadStep]) -> LayerOverhead:
    """Least squares of the b=1 residuals over layers (two layer counts at least); the per-sequence
    slope from each layer count's residual between its smallest and largest batch, averaged.
    No recording can see the layer term: no setup takes this fit as t_overhead (TINY_OVERHEAD_IS_ADDITIVE), and its
    one check is a finding whose band moves with it (theory mutation calibration-drop-layer-term survives)."""
    ones = [s for s in steps if s.batch == 1]
    layers = sorted({s.layers for s in ones})
    if len(layers) < 2:
        raise ValueError(f"the layer term needs b=1 steps at two layer counts, got {layers!r}")
    n = len(ones)
    mx = sum(s.layers for s in ones) / n
    my = sum(s.overhead_s for s in ones) / n
    slope = (sum((s.layers - mx) * (s.overhead_s - my) for s in ones)
             / sum((s.layers - mx) ** 2 for s in ones))
    slopes = []
    for count in layers:
        mine = sorted((s for s in steps if s.layers == count), key=lambda s: s.batch)
        if len(mine) >= 2 and mine[-1].batch > mine[0].batch:
            slopes.append((mine[-1].overhead_s - mine[0].overhead_s) / (mine[-1].batch - mine[0].batch))
    return LayerOverhead(my - slope * mx, slope, sum(slopes) / len(slopes) if slopes else None,
                         tuple(s.name for s in steps), max(s.scatter_s for s in ones))


def engine_from_overhead(model: ModelSpec, overhead: LayerOverhead, *, name: str,
                         compute_efficiency: float = 1.0, eta_source: str = "") -> lat.EngineCalibration:
    """An engine calibration whose t_overhead was measured on other (tiny) models, never on `model`:
    every check of `model` is then held out."""
    value = overhead.at(model.num_layers)
    if value < 0:
        raise ValueError(f"{name}: the tiny models give a negative overhead at {model.num_layers} layers "
                         f"({overhead.describe()})")
    notes: tuple[str, ...] = (f"t_overhead = {value * 1e3:.4g} ms at {model.num_layers} layers: {overhead.describe()}",)
    if eta_source:
        notes += (eta_source,)
    return lat.EngineCalibration(name, value, compute_efficiency, fitted_on=(), notes=notes)


# --- compute efficiency from the session's GEMMs at the shapes a step runs --------------------------

def linear_shapes(model: ModelSpec) -> tuple[tuple[str, int, int], ...]:
    """(layer, k in, n out) of one transformer layer's matmuls, as the latency plan times them
    (scripts/device/latency_plan.py gemm_shapes): qkv fused, o, gate_up fused, down."""
    h, d = model.hidden_size, model.head_dim
    q, kv, i = model.num_attention_heads * d, model.num_kv_heads * d, model.intermediate_size
    return (("qkv", h, q + 2 * kv), ("o", q, h), ("gate_up", h, 2 * i), ("down", i, h))


def gemm_compute_efficiency(model: ModelSpec, tokens: int, seconds: dict[tuple[int, int, int], float],
                            peak: float) -> float:
    """eta at `tokens` rows: the trunk's matmul FLOPs over the time the session's cuBLAS took for the
    same shapes (seconds keyed by (m, k, n)), as a fraction of `peak`. KeyError names a missing shape.
    No recording checks eta apart from the GEMM timings it is computed from: every compute-bound prefill it predicts
    is a finding banded by the other sessions' ratios, wider than 5% (theory mutation calibration-gemm-eta-x1.05
    survives); a prefill of known non-GEMM work would make it falsifiable."""
    flops = time_s = 0.0
    for layer, k, n in linear_shapes(model):
        key = (tokens, k, n)
        if key not in seconds:
            raise KeyError(f"no GEMM timing for {layer} at m={tokens}, k={k}, n={n}")
        flops += 2.0 * tokens * k * n
        time_s += seconds[key]
    return flops / time_s / peak


# Below this many rows a linear layer's GEMM is bound by streaming its weights (the bytes / BW term
# carries that); from here on its timing measures the compute efficiency the FLOPs term divides by.
COMPUTE_BOUND_ROWS = 512


def gemm_efficiency_by_tokens(model: ModelSpec, seconds: dict[tuple[int, int, int], float],
                              peak: float) -> tuple[tuple[int, float], ...]:
    """(tokens, eta) at every compute-bound token count the session timed all four trunk shapes at."""
    out = []
    for m in sorted({m for m, _, _ in seconds if m >= COMPUTE_BOUND_ROWS}):
        try:
            out.append((m, gemm_compute_efficiency(model, m, seconds, peak)))
        except KeyError:  # a shape of this model missing at this m: that token count says nothing
            continue
    return tuple(out)


def with_gemm_efficiency(calib: lat.EngineCalibration, model: ModelSpec, seconds: dict[tuple[int, int, int], float],
                         peak: float) -> lat.EngineCalibration:
    """`calib` with eta taken from the session's GEMM timings at the step's own token count (none fitted),
    or unchanged when the session timed no compute-bound shape of `model`."""
    points = gemm_efficiency_by_tokens(model, seconds, peak)
    if not points:
        return calib
    shown = ", ".join(f"{m}: {e:.3f}" for m, e in points)
    return replace(calib, compute_efficiency=points[-1][1], efficiency_by_tokens=points,
                   fitted_on=tuple(f for f in calib.fitted_on if "prefill" not in f),
                   notes=tuple(n for n in calib.notes if not n.startswith("eta = "))
                   + (f"eta by new tokens from the session's bf16 GEMMs at {model.name}'s linear shapes: {shown}",))


def gemm_key(m: int, k: int, n: int) -> str:
    """A GEMM timing's name in the session's ceilings recording (measure/ceilings.py gemm_key)."""
    return f"m{m}_k{k}_n{n}"
