"""Step times of an inference engine: decode, prefill, chunked prefill, closed-loop ITL.

One model for every engine step (decode, prefill chunk, or both mixed):

    t_step = max(bytes / BW, FLOPs / (eta x peak)) + t_overhead

- bytes: the matmul weights (read once per step, whatever the batch) + the KV cache every
  sequence attends to + the KV written; activations are left out (< 2% at the shapes here).
- FLOPs: theory/flops.py (trunk x new tokens, lm_head where logits are needed, attention).
- BW, peak: `Ceilings` -- measured in the same session when there is a measurement (a large
  read and a large bf16 matmul, measure/ceilings.py), else the datasheet, which is then an
  upper bound; the datasheet number is always carried beside the one used.
- t_overhead and eta: an `EngineCalibration`, named per engine + GPU, fitted on named
  in-sample points (fit_step_overhead / fit_compute_efficiency) and never on the point it
  then predicts. UNCALIBRATED (t_overhead = 0, eta = 1) is the pure roofline.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.flops import (
    StepWork,
    attention_flops_per_layer,
    lm_head_flops_per_token,
    step_flops,
    trunk_matmul_flops_per_token,
    visible_keys,
)
from pytest_anatomy.theory.prediction import Prediction, Term


@dataclass(frozen=True)
class Ceilings:
    """The bandwidth and peak a roofline divides by, with where they come from."""

    hardware: str
    bandwidth: float  # B/s
    peak: float  # FLOP/s
    bandwidth_source: str
    peak_source: str
    datasheet_bandwidth: float | None = None
    datasheet_peak: float | None = None

    @classmethod
    def datasheet(cls, hw: HardwareSpec, dtype: str = "bf16") -> "Ceilings":
        bw = float(hw.require("memory_bandwidth"))
        peak = hw.peak(dtype)
        return cls(hw.name, bw, peak, f"datasheet ({hw.sources.get('memory_bandwidth', '?')})",
                   f"datasheet {dtype} dense ({hw.sources.get('peak_flops.' + dtype, '?')})", bw, peak)

    @classmethod
    def measured(cls, hw: HardwareSpec, *, bandwidth: float, peak: float, source: str,
                 dtype: str = "bf16") -> "Ceilings":
        """Ceilings measured in a session (source names the recording), datasheet kept beside."""
        if bandwidth <= 0 or peak <= 0:
            raise ValueError(f"measured ceilings must be > 0, got bandwidth={bandwidth!r} peak={peak!r}")
        return cls(hw.name, bandwidth, peak, f"measured: {source}", f"measured: {source}",
                   hw.memory_bandwidth, hw.peak_flops.get(dtype))

    def terms(self) -> tuple[Term, ...]:
        def beside(ds: float | None, unit: str) -> str:
            return "" if ds is None else f"datasheet {ds / (1e12 if unit == 'FLOP/s' else 1e9):.4g} " + \
                ("TFLOP/s" if unit == "FLOP/s" else "GB/s")
        bw_note = f"{self.bandwidth_source}; {beside(self.datasheet_bandwidth, 'B/s')}"
        return (Term("bandwidth", self.bandwidth, "B/s", bw_note),
                Term("peak", self.peak, "FLOP/s", f"{self.peak_source}; {beside(self.datasheet_peak, 'FLOP/s')}"))


@dataclass(frozen=True)
class EngineCalibration:
    """Per-engine, per-GPU constants of the step model, named as such.

    step_overhead_s    -- added to every step (kernel gaps, sampling, scheduling not hidden)
    compute_efficiency -- eta: the fraction of the peak a compute-bound step reaches
    efficiency_by_tokens -- (tokens, eta) measured at the step's own GEMM shapes (the session's
                          cuBLAS timings); when given, a step of n new tokens runs at eta_at(n)
                          instead of the one compute_efficiency
    fitted_on          -- the in-sample points (recording names); predictions of these are
                          not tests of the model
    """

    name: str
    step_overhead_s: float = 0.0
    compute_efficiency: float = 1.0
    fitted_on: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    efficiency_by_tokens: tuple[tuple[int, float], ...] = ()

    def eta_at(self, tokens: int) -> float:
        """eta for a step of `tokens` new tokens: linear in log(tokens) between the measured token
        counts, the nearest one's outside them; compute_efficiency when none was measured."""
        points = self.efficiency_by_tokens
        if not points:
            return self.compute_efficiency
        if tokens <= points[0][0]:
            return points[0][1]
        for (m0, e0), (m1, e1) in zip(points, points[1:]):
            if tokens <= m1:
                w = math.log(tokens / m0) / math.log(m1 / m0)
                return e0 + w * (e1 - e0)
        return points[-1][1]

    def __post_init__(self) -> None:
        if not 0 < self.compute_efficiency <= 1.5:
            raise ValueError(f"{self.name}: compute_efficiency must be in (0, 1.5], got {self.compute_efficiency!r}")
        if any(not 0 < e <= 1.5 for _, e in self.efficiency_by_tokens) or \
                list(self.efficiency_by_tokens) != sorted(self.efficiency_by_tokens):
            raise ValueError(f"{self.name}: efficiency_by_tokens must be (tokens, eta) sorted by tokens with eta in "
                             f"(0, 1.5], got {self.efficiency_by_tokens!r}")
        if self.step_overhead_s < 0:
            raise ValueError(f"{self.name}: step_overhead_s must be >= 0, got {self.step_overhead_s!r}; "
                             "a negative overhead means the ceilings are too low for this point")

    def describe(self) -> str:
        fit = (f"fitted on {', '.join(self.fitted_on)}: in-sample points, no test of the model"
               if self.fitted_on else "not fitted")
        return (f"{self.name}: step overhead {self.step_overhead_s * 1e3:.3f} ms, "
                f"compute efficiency {self.compute_efficiency:.3f} ({fit})")


UNCALIBRATED = EngineCalibration("uncalibrated (pure roofline)")


# --- bytes of a step ------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def matmul_weight_bytes(model: ModelSpec) -> float:
    """Weights one step streams: every matmul weight (lm_head included, embedding excluded).
    Cached: summing a model's tensor inventory takes ~1 ms and a simulation asks thousands of times."""
    return cap.weight_bytes(model, matmul_only=True).value


def kv_read_bytes(model: ModelSpec, context: float) -> float:
    """KV bytes one sequence's attention reads at `context` tokens (sliding layers capped)."""
    per_layer = cap.kv_layer_bytes_per_token(model).value
    return per_layer * sum(context if la.window is None else min(context, la.window)
                           for la in model.layer_attention)


def step_bytes(model: ModelSpec, work: StepWork) -> Prediction:
    """The bytes a step streams. No recording can see the KV written: under 0.1% of a decode step's bytes, and a step
    with enough new tokens for it to count is compute-bound (theory mutation latency-drop-kv-write survives)."""
    weights = matmul_weight_bytes(model)
    mean = work.decode_context_sum / work.decode_tokens if work.decode_tokens else 0.0
    kv_decode = work.decode_tokens * kv_read_bytes(model, mean)
    kv_prefill = sum(kv_read_bytes(model, past) for _, past in work.prefill)
    kv_write = work.new_tokens * cap.kv_bytes_per_token(model).value
    return Prediction(
        weights + kv_decode + kv_prefill + kv_write, "B",
        "matmul weights + KV read (decode contexts, prefill pasts) + KV written",
        terms=(Term("matmul weights", weights, "B"), Term("KV read, decode", kv_decode, "B"),
               Term("KV read, prefill past", kv_prefill, "B"), Term("KV written", kv_write, "B")),
        notes=("activations not counted",))


# --- one step ------------------------------------------------------------------------

def step_time(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, work: StepWork) -> Prediction:
    """max(bytes / BW, FLOPs / (eta x peak)) + t_overhead for one engine step."""
    b = step_bytes(model, work)
    f = step_flops(model, work)
    memory_s = b.value / ceilings.bandwidth
    eta = calib.eta_at(work.new_tokens)
    compute_s = f.value / (eta * ceilings.peak)
    bound = "memory" if memory_s >= compute_s else "compute"
    return Prediction(
        max(memory_s, compute_s) + calib.step_overhead_s, "s",
        "max(bytes / BW, FLOPs / (eta x peak)) + t_overhead",
        {"new_tokens": work.new_tokens, "decode_tokens": work.decode_tokens,
         "prefill_chunks": len(work.prefill), "calibration": calib.name},
        terms=(*b.terms, Term("bytes / BW", memory_s, "s"), *f.terms,
               Term("FLOPs / (eta x peak)", compute_s, "s", f"eta = {eta:.3f}"),
               Term("t_overhead", calib.step_overhead_s, "s", calib.name), *ceilings.terms()),
        notes=(f"{bound}-bound", calib.describe(), *calib.notes))


def decode_work(batch: int, context: float) -> StepWork:
    """`batch` sequences each decoding one token with `context` tokens in its KV (new one included)."""
    if batch < 1 or context < 1:
        raise ValueError(f"decode needs batch >= 1 and context >= 1, got batch={batch!r} context={context!r}")
    return StepWork(decode_tokens=batch, decode_context_sum=batch * context)


def decode_step_time(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration,
                     batch: int, context: float) -> Prediction:
    """Time of one pure-decode step = the steady ITL at this batch and mean context."""
    return step_time(model, ceilings, calib, decode_work(batch, context))


def prefill_chunks(tokens: int, max_num_batched_tokens: int | None) -> list[tuple[int, int]]:
    """(chunk tokens, tokens already cached) per step when one prompt is prefilled alone."""
    if tokens < 1:
        raise ValueError(f"prefill needs >= 1 token, got {tokens!r}")
    size = tokens if max_num_batched_tokens is None else max_num_batched_tokens
    if size < 1:
        raise ValueError(f"max_num_batched_tokens must be >= 1, got {max_num_batched_tokens!r}")
    return [(min(size, tokens - start), start) for start in range(0, tokens, size)]


def prefill_time(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, tokens: int,
                 max_num_batched_tokens: int | None = None) -> Prediction:
    """A lone prompt of `tokens`, split in chunks of max_num_batched_tokens (one step each);
    logits only at the last chunk. Compute-bound above ~BW ridge tokens (~180 on an H200)."""
    chunks = prefill_chunks(tokens, max_num_batched_tokens)
    steps = [step_time(model, ceilings, calib, w) for w in prefill_work(tokens, max_num_batched_tokens)]
    terms = [Term(f"chunk {i + 1}: {n} tokens after {past}", s.value, "s", s.notes[0])
             for i, ((n, past), s) in enumerate(zip(chunks, steps, strict=True))]
    flops = sum(next(t.value for t in s.terms if t.name == "trunk matmuls") for s in steps)
    attn = sum(next(t.value for t in s.terms if t.name == "attention, prefill") for s in steps)
    return Prediction(
        sum(s.value for s in steps), "s", "sum over chunks of [max(bytes/BW, FLOPs/(eta x peak)) + t_overhead]",
        {"tokens": tokens, "max_num_batched_tokens": max_num_batched_tokens, "chunks": len(chunks),
         "calibration": calib.name},
        terms=(*terms[:8], Term("trunk matmul FLOPs", flops, "FLOP"), Term("attention FLOPs", attn, "FLOP"),
               *ceilings.terms()),
        notes=(calib.describe(), *calib.notes) + (("only the first 8 chunks are listed",) if len(terms) > 8 else ()))


# --- fitting the calibration (on named in-sample points only) -------------------------

def fit_step_overhead(model: ModelSpec, ceilings: Ceilings, batch: int, context: float,
                      measured_step_s: float, *, name: str, fitted_on: str,
                      base: EngineCalibration = UNCALIBRATED) -> EngineCalibration:
    """t_overhead = measured decode step - roofline at (batch, context)."""
    roof = decode_step_time(model, ceilings, replace(base, step_overhead_s=0.0), batch, context).value
    return replace(base, name=name, step_overhead_s=measured_step_s - roof,
                   fitted_on=base.fitted_on + (fitted_on,),
                   notes=base.notes + (f"t_overhead = {measured_step_s * 1e3:.4g} ms measured - "
                                       f"{roof * 1e3:.4g} ms roofline at b={batch}, context {context:g}",))


def fit_compute_efficiency(model: ModelSpec, ceilings: Ceilings, steps: list[StepWork], measured_s: float,
                           calib: EngineCalibration, *, fitted_on: str) -> EngineCalibration:
    """eta such that these compute-bound steps take `measured_s` in total (overhead kept)."""
    flops = sum(step_flops(model, w).value for w in steps)
    compute_s = measured_s - len(steps) * calib.step_overhead_s
    if compute_s <= 0:
        raise ValueError(f"{fitted_on}: measured {measured_s!r} s is not above {len(steps)} step overheads")
    eta = flops / ceilings.peak / compute_s
    fitted = replace(calib, compute_efficiency=eta, fitted_on=calib.fitted_on + (fitted_on,),
                     notes=calib.notes + (f"eta = {eta:.4f}: {flops / 1e12:.4g} TFLOP in {measured_s * 1e3:.4g} ms "
                                          f"({len(steps)} step(s)) at peak {ceilings.peak / 1e12:.4g} TFLOP/s",))
    for w in steps:  # at the full peak: a memory-bound step says nothing about compute efficiency
        if step_time(model, ceilings, replace(calib, compute_efficiency=1.0), w).notes[0] != "compute-bound":
            raise ValueError(f"{fitted_on}: a step of {w.new_tokens} tokens is memory-bound at the peak; "
                             "eta can only be fitted on compute-bound steps")
    return fitted


def prefill_work(tokens: int, max_num_batched_tokens: int | None = None) -> list[StepWork]:
    """The steps of a lone prefill (logits only at the last chunk)."""
    chunks = prefill_chunks(tokens, max_num_batched_tokens)
    return [StepWork(prefill=(c,), logits=1 if i == len(chunks) - 1 else 0) for i, c in enumerate(chunks)]


def batch_prefill_work(batch: int, tokens: int, max_num_batched_tokens: int | None = None,
                       first_step_prompts: int | None = None) -> list[StepWork]:
    """The steps when `batch` prompts of `tokens` each arrive together and nothing else runs.

    The rule, vLLM V1's Scheduler.schedule (vllm/v1/core/sched/scheduler.py): each step's token_budget is
    max_num_batched_tokens; the running requests are served first, then the waiting ones in arrival order, each
    given num_new_tokens = min(its tokens not yet computed, the budget left), and the budget shrinks by it
    (long_prefill_token_threshold is 0, off, by default). So whole prompts pack greedily; the prompt that does not
    fit in what is left gets the rest of the budget as a chunk, and its remainder opens the next step (it is
    running by then). Logits: one row per prompt whose last token is in the step (a chunk that does not end its
    prompt keeps no sample, as prefill_work). max_num_seqs is not modelled (it binds only above 128 prompts).
    first_step_prompts: only that many had reached the engine when it first scheduled (a partially-filled first
    step); the later steps see them all."""
    if batch < 1 or tokens < 1:
        raise ValueError(f"a batched prefill needs batch >= 1 and tokens >= 1, got {batch!r} x {tokens!r}")
    budget = batch * tokens if max_num_batched_tokens is None else max_num_batched_tokens
    if budget < 1:
        raise ValueError(f"max_num_batched_tokens must be >= 1, got {max_num_batched_tokens!r}")
    arrived = batch if first_step_prompts is None else max(1, min(batch, first_step_prompts))
    done: list[int] = [0] * batch  # tokens computed per prompt
    steps: list[StepWork] = []
    nxt = 0  # the first prompt not finished
    while nxt < batch:
        left, logits = budget, 0
        chunks: list[tuple[int, int]] = []
        while nxt < (arrived if not steps else batch) and left > 0:
            n = min(tokens - done[nxt], left)
            chunks.append((n, done[nxt]))
            done[nxt] += n
            left -= n
            if done[nxt] < tokens:
                break
            logits += 1
            nxt += 1
        steps.append(StepWork(prefill=tuple(chunks), logits=logits))
    return steps


def batch_prefill_time(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, batch: int, tokens: int,
                       max_num_batched_tokens: int | None = None, first_step_prompts: int | None = None) -> Prediction:
    """`batch` prompts of `tokens` arriving together: the sum of batch_prefill_work's steps, first schedule to the
    last first token (the engine span)."""
    works = batch_prefill_work(batch, tokens, max_num_batched_tokens, first_step_prompts)
    return sum_of_steps([step_time(model, ceilings, calib, w) for w in works], works,
                        "sum over steps of [max(bytes/BW, FLOPs/(eta x peak)) + t_overhead]",
                        {"batch": batch, "tokens": tokens, "max_num_batched_tokens": max_num_batched_tokens,
                         "calibration": calib.name})


def sum_of_steps(steps: list[Prediction], works: list[StepWork], formula: str, inputs: dict) -> Prediction:
    """A sequence of steps as one Prediction: the first 8 steps as terms, each with its prompts and tokens."""
    terms = tuple(Term(f"step {i + 1}: {len(w.prefill)} prompt(s), {w.new_tokens} tokens", s.value, "s", s.notes[0])
                  for i, (s, w) in enumerate(zip(steps[:8], works, strict=False)))
    return Prediction(sum(s.value for s in steps), "s", formula, {**inputs, "steps": len(steps)}, terms=terms,
                      notes=(*steps[0].notes[1:],) + (("only the first 8 steps are listed",) if len(steps) > 8 else ()))


# --- chunked prefill in a closed loop: what it does to ITL percentiles -----------------

def mixed_step_time(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, decode_batch: int,
                    context: float, prefill_tokens: int, prefill_past: int = 0) -> Prediction:
    """A step carrying `decode_batch` decodes and one prefill chunk of `prefill_tokens`."""
    work = StepWork(decode_tokens=decode_batch, decode_context_sum=decode_batch * context,
                    prefill=((prefill_tokens, prefill_past),) if prefill_tokens else ())
    return step_time(model, ceilings, calib, work)


@dataclass(frozen=True)
class ClosedLoopITL:
    decode_step: Prediction  # a step with only decodes: the ITL most samples see
    mixed_step: Prediction  # a step that also carries a prefill chunk
    mixed_fraction: float  # share of ITL samples that span a mixed step
    steps_per_prefill: int

    def percentile(self, q: float) -> Prediction:
        """q in [0, 100]: the mixed step once more than (100 - q)% of ITLs are mixed."""
        mixed = self.mixed_fraction > 1 - q / 100
        src = self.mixed_step if mixed else self.decode_step
        return replace(src, notes=src.notes + (
            f"p{q:g}: {'mixed' if mixed else 'pure decode'} step, {self.mixed_fraction:.1%} of ITLs are mixed",))

    def mean(self) -> Prediction:
        f, d, m = self.mixed_fraction, self.decode_step.value, self.mixed_step.value
        return Prediction((1 - f) * d + f * m, "s", "(1 - f) x t_decode + f x t_mixed",
                          {"f": f}, terms=(Term("t_decode", d, "s"), Term("t_mixed", m, "s"),
                                           Term("f (mixed share)", f, "")))


def closed_loop_itl(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, concurrency: int,
                    input_len: int, output_len: int, max_num_batched_tokens: int) -> ClosedLoopITL:
    """Steady closed loop, prefills spread out in time (no two at once).

    During one request's O - 1 ITLs the other C - 1 requests are each replaced once, and each
    replacement's prompt takes ceil(L / (budget - (C - 1))) steps carrying a chunk, so a share
    f = (C - 1) x k / (O - 1) of the ITLs are mixed steps. p50 stays a pure decode step while
    f < 50%; p99 becomes the mixed step once f > 1% (the seed's C = 8 jump, claim 7)."""
    c = concurrency
    ctx = input_len + output_len / 2
    room = max(1, max_num_batched_tokens - (c - 1))
    k = math.ceil(input_len / room)
    f = min(1.0, (c - 1) * k / max(1, output_len - 1))
    chunk = min(input_len, room)
    return ClosedLoopITL(
        decode_step=decode_step_time(model, ceilings, calib, c, ctx),
        mixed_step=mixed_step_time(model, ceilings, calib, c - 1, ctx, chunk),
        mixed_fraction=f, steps_per_prefill=k)


def closed_loop_throughput(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, concurrency: int,
                           input_len: int, output_len: int, max_num_batched_tokens: int) -> Prediction:
    """Steady output tokens/s of C requests in a closed loop: C x O / (prefill + (O - 1) x mean ITL)."""
    itl = closed_loop_itl(model, ceilings, calib, concurrency, input_len, output_len, max_num_batched_tokens)
    mean = itl.mean().value
    first = itl.steps_per_prefill * itl.mixed_step.value
    per_request = first + (output_len - 1) * mean
    return Prediction(
        concurrency * output_len / per_request, "tokens/s", "C x O / (k x t_mixed + (O - 1) x mean ITL)",
        {"concurrency": concurrency, "input_len": input_len, "output_len": output_len,
         "max_num_batched_tokens": max_num_batched_tokens},
        terms=(Term("time to first token", first, "s"), Term("mean ITL", mean, "s"),
               Term("request time", per_request, "s")),
        notes=("steady state: no ramp-up or drain, prefills spread out in time",))


# --- the same step model as plain arithmetic, for simulations (thousands of steps) ----------

@dataclass(frozen=True)
class StepModel:
    """step_time() without building Predictions: the constants folded once. Exactly the same
    formula (tests check both against each other). `calibration` carries the calibration's
    description and fit notes (what t_overhead and eta were fitted on), so that results built
    on these steps (serving.simulate -> as_prediction) keep that provenance."""

    weight_bytes: float
    kv_layer_bytes: float  # one layer, one token
    full_layers: int
    window_layers: tuple[tuple[int, int], ...]  # (window, number of layers with it)
    kv_token_bytes: float  # all layers, one token (written)
    trunk_flops: float
    head_flops: float
    attn_layer_coef: float
    bandwidth: float
    effective_peak: float
    overhead_s: float
    calibration: tuple[str, ...] = ()
    peak: float = 0.0  # the ceiling itself, for eta_at
    efficiency: "EngineCalibration | None" = None  # set when eta depends on the step's token count

    @classmethod
    def build(cls, model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration) -> "StepModel":
        windows: dict[int, int] = {}
        for la in model.layer_attention:
            if la.window is not None:
                windows[la.window] = windows.get(la.window, 0) + 1
        return cls(
            weight_bytes=matmul_weight_bytes(model), kv_layer_bytes=cap.kv_layer_bytes_per_token(model).value,
            full_layers=sum(1 for la in model.layer_attention if la.window is None),
            window_layers=tuple(sorted(windows.items())),
            kv_token_bytes=cap.kv_bytes_per_token(model).value,
            trunk_flops=trunk_matmul_flops_per_token(model).value, head_flops=lm_head_flops_per_token(model).value,
            attn_layer_coef=attention_flops_per_layer(model),
            bandwidth=ceilings.bandwidth, effective_peak=calib.compute_efficiency * ceilings.peak,
            overhead_s=calib.step_overhead_s, calibration=(calib.describe(), *calib.notes), peak=ceilings.peak,
            efficiency=calib if calib.efficiency_by_tokens else None)

    def seconds(self, decode_tokens: int, decode_context_sum: float,
                prefill: tuple[tuple[int, int], ...] = (), logits_rows: int | None = None,
                pad_tokens: int = 0) -> float:
        """pad_tokens: rows a captured CUDA graph adds to reach its size (their matmuls, nothing else)."""
        new = decode_tokens + sum(n for n, _ in prefill)
        rows = decode_tokens + len(prefill) if logits_rows is None else logits_rows
        # keys read and (query, key) pairs, summed over layers; full layers see everything
        kv_keys = self.full_layers * (decode_context_sum + sum(past for _, past in prefill))
        pairs = self.full_layers * (decode_context_sum + sum(visible_keys(past, n, None) for n, past in prefill))
        if self.window_layers:
            mean = decode_context_sum / decode_tokens if decode_tokens else 0.0
            for w, count in self.window_layers:
                seen = decode_tokens * min(mean, w)
                kv_keys += count * (seen + sum(min(past, w) for _, past in prefill))
                pairs += count * (seen + sum(visible_keys(past, n, w) for n, past in prefill))
        nbytes = self.weight_bytes + self.kv_layer_bytes * kv_keys + new * self.kv_token_bytes
        nflops = self.trunk_flops * (new + pad_tokens) + self.head_flops * rows + self.attn_layer_coef * pairs
        peak = self.effective_peak if self.efficiency is None else self.efficiency.eta_at(new + pad_tokens) * self.peak
        return max(nbytes / self.bandwidth, nflops / peak) + self.overhead_s
