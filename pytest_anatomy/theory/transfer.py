"""Predicting step times on GPUs we do not have: the H200 calibration transferred, tensor parallel
ranks, and the two schedules the third-party measurements ran (docs/VALIDATION.md, declared before
any comparison).

Transfer rule (nothing fitted on the target card):
    t_overhead           = the H200's fitted step overhead, in seconds, as is
    effective peak       = (eta x measured_peak / datasheet_peak)_H200 x datasheet_peak_target(dtype)
    effective bandwidth  = (measured_read_bw / datasheet_bw)_H200 x datasheet_bw_target

Tensor parallel (per rank): matmul weights, FLOPs and attention / TP; KV heads per rank
max(1, kv_heads // TP); per step two all-reduces per layer of tokens x hidden x 2 B, ring traffic
2 (TP - 1) / TP of it over NVLink (per direction), counted in the memory term as the HBM bytes that
would take as long; plus a fixed latency per all-reduce (unknown: swept).

Schedules, as closed forms over latency.StepModel (no per-request simulation: thousands of rows):
- `closed_loop`: C requests of fixed ISL/OSL kept in flight. Synchronized waves (every wave's C
  prompts prefilled back to back under the token budget, decodes of those already started sharing
  the steps) or desynchronized (each prompt's chunks in steps with the C - 1 running decodes).
- `offline_batch`: vLLM's benchmark_throughput (all B prompts at once, prefill-first scheduling,
  whole prompts per step up to the budget), then L - 1 decode steps.
- `llamacpp_single`: one sequence, the prompt in chunks of n_batch, then decode steps at batch 1.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

from pytest_anatomy.specs.hardware import HardwareSpec, get_hardware
from pytest_anatomy.specs.model import ModelSpec, load_model
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.latency import Ceilings, EngineCalibration, StepModel

# NVLink bandwidth per GPU, both directions together, from each card's datasheet (the catalog's
# sources); a ring all-reduce uses one direction's half.
NVLINK_TOTAL_BPS: dict[str, tuple[float, str]] = {
    "a100-40gb": (600e9, "A100 datasheet: NVLink 600 GB/s"),
    "a100-80gb": (600e9, "A100 datasheet: NVLink 600 GB/s"),
    "h100-sxm": (900e9, "H100 datasheet, SXM: NVLink 900 GB/s"),
    "h100-pcie": (600e9, "H100 datasheet, PCIe: NVLink bridge 600 GB/s"),
    "h200": (900e9, "H200 datasheet: NVLink 900 GB/s"),
    "b200": (1800e9, "HGX B200 / GB200 NVL72 datasheet: fifth-generation NVLink 1.8 TB/s"),
    "b300": (1800e9, "HGX B300 page: NVLink 1.8 TB/s"),
    "gb200": (1800e9, "GB200 NVL72 datasheet: 1.8 TB/s per GPU"),
}
ALLREDUCE_LATENCY_S = (5e-6, 10e-6, 20e-6)  # swept range and central value (docs/VALIDATION.md)


@dataclass(frozen=True)
class Transfer:
    """The H200's calibration as fractions that carry to another card."""

    step_overhead_s: float
    compute_fraction: float  # eta x measured peak / datasheet peak on the H200
    bandwidth_fraction: float  # measured read bandwidth / datasheet bandwidth on the H200
    source: str

    @classmethod
    def from_calibration(cls, calib: EngineCalibration, ceilings: Ceilings) -> Transfer:
        """The one place the H200's datasheet enters a prediction (its own run on measured ceilings). Its bandwidth
        is seen only at a third-party band's edge, its peak by no recording: the compute-bound rows it moves sit
        inside bands of unknown settings (theory mutations catalog-hbm-bandwidth-x1.05, catalog-peak-flops-x1.05)."""
        if ceilings.datasheet_peak is None or ceilings.datasheet_bandwidth is None:
            raise ValueError("the calibration's ceilings carry no datasheet numbers: cannot express them as fractions")
        return cls(calib.step_overhead_s, calib.compute_efficiency * ceilings.peak / ceilings.datasheet_peak,
                   ceilings.bandwidth / ceilings.datasheet_bandwidth,
                   f"{calib.describe()}; ceilings {ceilings.bandwidth_source}")

    def describe(self) -> str:
        return (f"transferred from the H200: t_overhead {self.step_overhead_s * 1e3:.3f} ms, effective peak "
                f"{self.compute_fraction:.3f} x datasheet, bandwidth {self.bandwidth_fraction:.3f} x datasheet "
                f"({self.source})")


@dataclass(frozen=True)
class Deployment:
    """What a step model needs besides the transfer: card, model, weights, parallelism."""

    hardware: str
    model: str  # catalog name
    weight_format: str  # "auto" (model dtype), "fp8"
    compute_dtype: str  # catalog peak key: "bf16", "fp16", "fp8"
    tp: int = 1
    allreduce_latency_s: float = ALLREDUCE_LATENCY_S[1]


@functools.lru_cache(maxsize=256)
def matmul_weight_bytes(model: str, weight_format: str, tp: int) -> float:
    """One rank's matmul weights (cached: summing a tensor inventory in a format is slow)."""
    return cap.weight_bytes(load_model(model), weight_format, matmul_only=True, tp=tp).value


@functools.lru_cache(maxsize=512)
def step_model(transfer: Transfer, dep: Deployment) -> StepModel:
    """One rank's StepModel on the target card (cached: a sweep asks the same deployment often)."""
    hw: HardwareSpec = get_hardware(dep.hardware)
    model: ModelSpec = load_model(dep.model)
    ceilings = Ceilings(hw.name, transfer.bandwidth_fraction * hw.require("memory_bandwidth"),
                        hw.peak(dep.compute_dtype), "H200 attainment x datasheet", "datasheet",
                        hw.memory_bandwidth, hw.peak(dep.compute_dtype))
    calib = EngineCalibration("transferred from the H200", transfer.step_overhead_s, transfer.compute_fraction)
    base = StepModel.build(model, ceilings, calib)
    tp = dep.tp
    weights = matmul_weight_bytes(dep.model, dep.weight_format, tp)
    if tp == 1:
        return replace(base, weight_bytes=weights)
    nvlink, _ = NVLINK_TOTAL_BPS[hw.name]
    ring = 2 * (tp - 1) / tp
    comm_per_token = 2 * model.num_layers * model.hidden_size * 2 * ring  # bytes over one NVLink direction
    return replace(
        base, weight_bytes=weights,
        kv_layer_bytes=cap.kv_layer_bytes_per_token(model, tp=tp).value,
        kv_token_bytes=cap.kv_bytes_per_token(model, tp=tp).value + comm_per_token * ceilings.bandwidth / (nvlink / 2),
        trunk_flops=base.trunk_flops / tp, head_flops=base.head_flops / tp, attn_layer_coef=base.attn_layer_coef / tp,
        overhead_s=base.overhead_s + 2 * model.num_layers * dep.allreduce_latency_s)


def _sum_steps(f: Callable[[int], float], k0: int, k1: int) -> float:
    """sum of f(k) for k in [k0, k1] where f is a max of linear functions of k (convex, piecewise
    linear): exact, by halving until a piece is linear (three points on a line)."""
    n = k1 - k0 + 1
    if n <= 0:
        return 0.0
    if n <= 8:
        return sum(f(k) for k in range(k0, k1 + 1))
    a, b = f(k0), f(k1)
    mid = (k0 + k1) // 2
    m = f(mid)
    line = a + (b - a) * (mid - k0) / (k1 - k0)
    if abs(m - line) <= 1e-12 * max(abs(line), 1e-30):
        return n * (a + b) / 2
    return _sum_steps(f, k0, mid) + _sum_steps(f, mid + 1, k1)


@dataclass(frozen=True)
class LoadResult:
    ttft_mean_s: float
    tpot_mean_s: float
    latency_s: float  # until the last request's last token


def closed_loop(sm: StepModel, concurrency: int, isl: int, osl: int, budget: int, *, synchronized: bool) -> LoadResult:
    if synchronized:
        return wave(sm, concurrency, isl, osl, budget, chunked=True)
    c = concurrency
    room = max(1, budget - (c - 1))
    k = math.ceil(isl / room)
    ctx = isl + osl / 2
    t_decode = sm.seconds(c, c * ctx)
    chunk = min(isl, room)
    t_mixed = sm.seconds(c - 1, (c - 1) * ctx, ((chunk, 0),))
    f = min(1.0, (c - 1) * k / max(1, osl - 1))
    ttft = k * t_mixed
    tpot = (1 - f) * t_decode + f * t_mixed
    return LoadResult(ttft, tpot, ttft + (osl - 1) * tpot)


def wave(sm: StepModel, batch: int, isl: int, osl: int, budget: int, *, chunked: bool) -> LoadResult:
    """All `batch` requests arrive at once. Prefill phase: each step takes the running decodes
    first, then prompt tokens in arrival order up to `budget` (chunked: a prompt may be split;
    not chunked (vLLM before chunked prefill): whole prompts only, and no decode while prompts
    wait, prefill-first). A request's first token ends the step that completes its prompt; it then
    needs osl - 1 decode steps. After the prefill phase the batch only decodes and shrinks as
    requests finish: summed in closed form per stretch of constant batch."""
    remaining = [isl] * batch
    first_step: list[int] = [0] * batch
    t, step, nxt = 0.0, 0, 0
    times = [0.0]  # time at the end of each step (index = step number)
    # The requests decoding (past their first token, tokens still to produce) in the order their prompts finished, and
    # their context summed (isl + tokens produced each). All of them produce one token a step, so the first to finish
    # are the first done, and the sum moves by whole numbers: kept as it goes instead of summed over every decoding
    # request at every step (the third-party rows' waves, up to 144 requests, spent most of their time in those sums).
    decoding: deque[int] = deque()
    ctx_sum = 0
    done_at: dict[int, float] = {}  # requests whose last token came during the prefill phase
    while nxt < batch:
        step += 1
        n_decodes = len(decoding)
        left = budget - n_decodes
        chunks: list[tuple[int, int]] = []
        finished: list[int] = []
        while nxt < batch and left > 0:
            take = min(remaining[nxt], left) if chunked else (remaining[nxt] if remaining[nxt] <= left else 0)
            if take == 0:
                break
            chunks.append((take, isl - remaining[nxt]))
            remaining[nxt] -= take
            left -= take
            if remaining[nxt] == 0:
                finished.append(nxt)
                nxt += 1
        if not chunks and not n_decodes:
            raise ValueError(f"budget {budget} cannot hold one prompt of {isl} tokens without chunked prefill")
        t += sm.seconds(n_decodes, ctx_sum, tuple(chunks))
        times.append(t)
        ctx_sum += n_decodes  # each decoding request produced a token
        while decoding and step - first_step[decoding[0]] == osl - 1:  # its last one
            done_at[decoding.popleft()] = t
            ctx_sum -= isl + osl - 1
        for i in finished:
            first_step[i] = step
            if chunked and osl > 1:  # not chunked: no decode while prompts wait
                decoding.append(i)
                ctx_sum += isl
    # decode phase: step s > P; request i still decoding while produced < osl - 1
    p = step
    produced = [max(0, min(osl - 1, p - first_step[i])) if chunked else 0 for i in range(batch)]
    # per last step (p + tokens still to produce), its requests and their context: a stretch ending at `end` runs the
    # requests whose last step is `end` or later
    count: dict[int, int] = {}
    ctx_of: dict[int, int] = {}
    for i in range(batch):
        last = p + (osl - 1 - produced[i])
        count[last] = count.get(last, 0) + 1
        ctx_of[last] = ctx_of.get(last, 0) + isl + produced[i]
    n_act, base_ctx = batch, sum(ctx_of.values())
    cum = {p: t}
    lo = p + 1
    for end in sorted(count):
        if end < lo:
            cum[end] = cum.get(end, t)
        else:
            def f(k: int, n_act: int = n_act, base_ctx: int = base_ctx) -> float:
                return sm.seconds(n_act, base_ctx + n_act * (k - p))
            t += _sum_steps(f, lo, end)
            cum[end] = t
            lo = end + 1
        n_act -= count[end]
        base_ctx -= ctx_of[end]
    ttft = [times[first_step[i]] for i in range(batch)]
    done = [done_at[i] if i in done_at else cum[p + (osl - 1 - produced[i])] if osl > 1 else times[first_step[i]]
            for i in range(batch)]
    # TPOT as benchmark clients compute it: (e2e - ttft) / (osl - 1), averaged over requests
    tpot = [(d - f0) / (osl - 1) for d, f0 in zip(done, ttft, strict=True)] if osl > 1 else [0.0] * batch
    return LoadResult(sum(ttft) / batch, sum(tpot) / batch, max(done))


def offline_batch(sm: StepModel, batch: int, length: int, budget: int) -> LoadResult:
    """vLLM's benchmark_throughput with input = output = length, prefill-first, no chunking."""
    return wave(sm, batch, length, length, max(budget, length), chunked=False)


def kv_limited_offline_batch(sm: StepModel, batch: int, length: int, budget: int, kv_tokens: float,
                             tokens_per_request: float) -> float:
    """offline_batch's latency (s) when the KV pool holds only n = kv_tokens / tokens_per_request of the batch's
    sequences: the batch runs as waves of n (the last one the rest), each an offline_batch. vLLM's V0 scheduler admits
    prompts while their blocks fit and, once the growing decodes run out of blocks, preempts the latest arrivals by
    recompute until the rest fit; the survivors finish and the preempted run after them. Waves leave out the
    recompute's repeated prefill (a few percent of a decode-bound batch) and the first phase at full batch.
    No reconciliation can see the waves: the third-party rows they move fall inside bands of an unknown engine
    version either way; their evidence is the rows' pattern (theory mutation offline-kv-waves-dropped survives)."""
    n = max(1, min(batch, int(kv_tokens // tokens_per_request)))
    full, rest = divmod(batch, n)
    last = offline_batch(sm, rest, length, budget).latency_s if rest else 0.0
    return full * offline_batch(sm, n, length, budget).latency_s + last  # the full waves are one batch priced once


def llamacpp_single(sm: StepModel, length: int, n_batch: int) -> float:
    """One sequence: the prompt in ceil(L / n_batch) chunks (logits at the last), then L - 1
    decode steps at batch 1 whose context grows from L + 1."""
    full, last = divmod(length, n_batch)
    if last == 0:
        full, last = full - 1, n_batch

    def chunk(k: int) -> float:  # the k-th full chunk: linear in its past, so summed in closed form
        return sm.seconds(0, 0.0, ((n_batch, k * n_batch),), logits_rows=0)
    t = _sum_steps(chunk, 0, full - 1) + sm.seconds(0, 0.0, ((last, full * n_batch),), logits_rows=1)

    def f(k: int) -> float:
        return sm.seconds(1, float(length + k))
    return t + _sum_steps(f, 1, length - 1)


def kv_limited_closed_loop(sm: StepModel, concurrency: int, isl: int, osl: int, budget: int, kv_tokens: float,
                           tokens_per_request: float, *, synchronized: bool) -> LoadResult:
    """A closed loop of C clients when the KV pool holds only n = kv_tokens / tokens_per_request
    requests: n are served (as closed_loop at concurrency n) and C - n wait for a slot. By Little's
    law every request then spends C / n service times in the system, so TTFT gains (C / n - 1)
    service times of queueing; TPOT is the one at concurrency n."""
    n = max(1, min(concurrency, int(kv_tokens // tokens_per_request)))
    served = closed_loop(sm, n, isl, osl, budget, synchronized=synchronized)
    if n >= concurrency:
        return served
    service = served.ttft_mean_s + (osl - 1) * served.tpot_mean_s
    wait = (concurrency / n - 1) * service
    return LoadResult(served.ttft_mean_s + wait, served.tpot_mean_s, served.latency_s + wait)
