"""llama.cpp's decode and prefill time per weight type, from a GGUF header and a session's ceilings.

**Decode** (llama-bench tgN, batch 1, all layers on the GPU). Each token reads every GPU tensor
once (token_embd stays on the host: one row is gathered there) plus the KV cache written so far:

    t_token = sum over ggml types T of bytes_T / (read_ceiling x attainment[kernel(T)]) + overhead(layers)

- `read_ceiling`: the session's measured read bandwidth (measure/ceilings.py), never the datasheet.
- `attainment[kernel]`: the fraction of the read ceiling llama.cpp's matrix-vector kernel for that
  type reaches. Two named constants: `F16` (the F16 path) and `MMVQ` (ggml-cuda's mul_mat_vec_q,
  which serves every block-quantized type: Q8_0, Q4_0..Q5_1, the k-quants). Each is fitted on one
  model of its own type (F16, Q8_0; the 7B shape, where weights dominate) and the hypothesis that
  one MMVQ constant serves every quantized type is *checked* on Q4_K_M (Q4_K + Q6_K rows), never
  fitted there. F32 tensors (norms, biases: < 0.1% of the bytes) take the F16 constant.
- `overhead(layers)`: the per-token time that does not scale with bytes (graph launch, kernel
  boundaries, the host's embedding gather and the logits copy), measured apart: llama-bench on a
  tiny-hidden model with the same architecture, layer count and vocabulary width, whose roofline term
  is small (its lm_head, ~20 us on an H200) and subtracted at the prior attainment. It is a
  measurement, not the residual of the model under test.

**Prefill** (llama-bench ppN, one sequence of N tokens in ubatches of n_ubatch):

    t_prompt = max(matmul FLOPs / (matmul_ceiling x efficiency[kernel]), bytes / read_ceiling) + attention + overhead

with efficiency `F16` (cuBLAS on dequantized/F16 weights) and `MMQ` (ggml's int8 tensor-core
matmul for quantized weights, measured against the bf16 ceiling, so it may exceed 1), fitted on
F16 and Q8_0 and checked on Q4_K_M, as for decode.

Both are predictions only once their constants come from other runs; `PRIOR` holds the values
written before any llama.cpp run on the H200 (tests_llama/PREREGISTERED.md), from other engines'
measurements on the same card. Which runs fit which constant (`DECODE_FITS`, `PREFILL_FITS`, the tiny
overhead models) and how (`fit_constants`, `tiny_overhead_s`) is written here for `predict latency
--engine llama.cpp`; tests_llama/llama_speed.py keeps its own copy of the recipe, and
tests_llama/test_cli_llama_latency.py holds the two equal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_anatomy.specs.formats import GGML_TYPES
from pytest_anatomy.specs.gguf_file import GgufHeader
from pytest_anatomy.theory.llamacpp_memory import gpu_tensors
from pytest_anatomy.theory.prediction import Prediction, Term

UNQUANTIZED_KERNEL = "F16"
QUANTIZED_DECODE_KERNEL = "MMVQ"
QUANTIZED_PREFILL_KERNEL = "MMQ"
# The overhead models' shape (the llama visit writes them, scripts/device/llama_plan.py; the llama and quant suites
# fit their per-layer overhead lines on them): they keep the vocabulary width of the model they stand beside (its
# lm_head, its logits copied to the host every token: per-token costs that do not shrink with the hidden size) and
# shrink everything else: head_dim 64 (a flash-attention kernel size), rows of 256 (the k-quants apply), a few MB
# per layer.
TINY_OVERHEAD_SHAPE = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2}


def tiny_overhead_header(base: str, layers: int, weights: str) -> GgufHeader:
    """The predicted header of an overhead model: `base`'s config.json with TINY_OVERHEAD_SHAPE and `layers` layers,
    converted to F16, then `weights`' mix (what the llama visit writes and llama-quantize makes of it)."""
    from pytest_anatomy.specs.gguf_file import header_from_config
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory.gguf_mix import quantized_header

    raw = {**load_model(base).raw, **TINY_OVERHEAD_SHAPE, "num_hidden_layers": layers}
    return quantized_header(header_from_config(load_model(raw, f"tiny-{layers}l"), "F16"), weights)

# Priors, written before the first llama.cpp run on the H200 (see the module docstring):
# - decode attainment 0.86: a CUDA-graphed chain of cuBLAS GEMVs over Qwen2.5-7B's weights reached
#   3.52 TB/s against the session's 4.08 TB/s read ceiling (docs/DESIGN.md "Hardware");
# - prefill efficiency 0.79: vLLM's prefill efficiency on the same card (docs/RECORDING.md, 0.792).
PRIOR_ATTAINMENT: Mapping[str, float] = {UNQUANTIZED_KERNEL: 0.86, QUANTIZED_DECODE_KERNEL: 0.86}
PRIOR_EFFICIENCY: Mapping[str, float] = {UNQUANTIZED_KERNEL: 0.79, QUANTIZED_PREFILL_KERNEL: 0.79}
# - decode overhead per layer: the device README's one llama.cpp run on the H200 (Qwen2.5-0.5B, -fa 1,
#   tg128: F16 775.2, Q4_K_M 822.3 tok/s) less its roofline at the priors above, over its 24 layers
#   (scripts/device/llama_plan.py --preregister derives them; H200 only).
PRIOR_OVERHEAD_PER_LAYER_S: Mapping[str, float] = {"F16": 42.8e-6, "quantized": 46.3e-6}


def decode_kernel(ggml_type: str) -> str:
    return UNQUANTIZED_KERNEL if ggml_type in ("F32", "F16", "BF16") else QUANTIZED_DECODE_KERNEL


def prefill_kernel(ggml_type: str) -> str:
    return UNQUANTIZED_KERNEL if ggml_type in ("F32", "F16", "BF16") else QUANTIZED_PREFILL_KERNEL


@dataclass(frozen=True)
class LlamaCalibration:
    """A session's constants: ceilings measured in it, overhead from a tiny model, kernel constants."""

    read_bandwidth: float  # B/s
    matmul_flops: float  # FLOP/s, the session's bf16 matmul ceiling
    overhead_s: float  # per decode token at this layer count
    attainment: Mapping[str, float] = field(default_factory=lambda: dict(PRIOR_ATTAINMENT))
    efficiency: Mapping[str, float] = field(default_factory=lambda: dict(PRIOR_EFFICIENCY))
    source: str = "priors"


def weight_bytes_by_kernel(header: GgufHeader) -> dict[str, dict[str, int]]:
    """{kernel: {ggml type: bytes}} of the tensors a decode step reads on the GPU."""
    out: dict[str, dict[str, int]] = {}
    for t in gpu_tensors(header):
        k = decode_kernel(t.ggml_type)
        out.setdefault(k, {})
        out[k][t.ggml_type] = out[k].get(t.ggml_type, 0) + t.nbytes
    return out


def kv_read_bytes(header: GgufHeader, context: float, type_k: str = "f16", type_v: str = "f16") -> float:
    """KV bytes one decode token reads at `context` cached tokens (K and V rows of every layer)."""
    k_row = GGML_TYPES[type_k.upper()].bytes_for(header.head_count_kv * header.key_length)
    v_row = GGML_TYPES[type_v.upper()].bytes_for(header.head_count_kv * header.value_length)
    return context * header.block_count * (k_row + v_row)


def decode_time(header: GgufHeader, calib: LlamaCalibration, *, context: float = 0.0) -> Prediction:
    """Seconds per decode token at batch 1 with `context` tokens already cached (llama-bench tgN from
    depth 0 averages context = (N - 1) / 2).
    No recording pins the weights term apart from the fitted constants: every recorded decode it predicts is a
    finding whose band moves with this function, and the fit benches are not reconciled (theory mutation
    llamacpp-decode-weight-bytes-x1.05 survives)."""
    terms = []
    total = 0.0
    for kernel, by_type in sorted(weight_bytes_by_kernel(header).items()):
        att = calib.attainment[kernel]
        for t, b in sorted(by_type.items()):
            s = b / (calib.read_bandwidth * att)
            total += s
            terms.append(Term(f"{t} weights ({b / 1e6:,.1f} MB)", s, "s", f"at {att:.3f} x read ceiling ({kernel})"))
    kv = kv_read_bytes(header, context)
    kv_s = kv / (calib.read_bandwidth * calib.attainment[UNQUANTIZED_KERNEL])
    total += kv_s + calib.overhead_s
    terms += [Term("KV read", kv_s, "s", f"{kv / 1e6:,.2f} MB at context {context:g}"),
              Term("overhead (tiny model, same layers)", calib.overhead_s, "s")]
    return Prediction(
        total, "s", "sum_T bytes_T / (read_ceiling x attainment[kernel(T)]) + KV / (read_ceiling x att_F16) + overhead",
        {"read_bandwidth": calib.read_bandwidth, "attainment": dict(calib.attainment), "context": context,
         "calibration": calib.source},
        terms=tuple(terms))


def decode_tokens_per_s(header: GgufHeader, calib: LlamaCalibration, *, n_gen: int = 128) -> Prediction:
    t = decode_time(header, calib, context=(n_gen - 1) / 2)
    return Prediction(1.0 / t.value, "tokens/s", f"1 / t_token at the mean context of tg{n_gen}", t.inputs,
                      terms=t.terms, notes=t.notes)


def matmul_flops_by_kernel(header: GgufHeader, n_tokens: int, n_outputs: int = 1) -> dict[str, float]:
    """2 x rows x cols x tokens for every 2-D GPU tensor, by prefill kernel; the output matrix (a tied
    model's duplicated token_embd) only for the `n_outputs` tokens whose logits are asked for: llama.cpp
    drops the other rows before the lm_head, and llama-bench's pp test asks for the last token's."""
    out: dict[str, float] = {}
    output = "token_embd.weight" if header.tied_embeddings else "output.weight"
    for t in gpu_tensors(header):
        if t.n_dims >= 2:
            k = prefill_kernel(t.ggml_type)
            out[k] = out.get(k, 0.0) + 2.0 * t.numel * (n_outputs if t.name == output else n_tokens)
    return out


def attention_flops(header: GgufHeader, n_tokens: int) -> float:
    """Causal attention of one sequence from empty: QK^T and PV over n(n+1)/2 visible pairs."""
    pairs = n_tokens * (n_tokens + 1) / 2
    return 2.0 * 2.0 * header.block_count * header.head_count * header.key_length * pairs


def prefill_time(header: GgufHeader, calib: LlamaCalibration, n_tokens: int) -> Prediction:
    compute = 0.0
    terms = []
    for kernel, flops in sorted(matmul_flops_by_kernel(header, n_tokens).items()):
        eff = calib.efficiency[kernel]
        s = flops / (calib.matmul_flops * eff)
        compute += s
        terms.append(Term(f"{kernel} matmuls ({flops / 1e12:,.2f} TFLOP)", s, "s", f"at {eff:.3f} x matmul ceiling"))
    attn = attention_flops(header, n_tokens) / (calib.matmul_flops * calib.efficiency[UNQUANTIZED_KERNEL])
    weights = sum(t.nbytes for t in gpu_tensors(header)) / calib.read_bandwidth
    body = max(compute + attn, weights)
    total = body + calib.overhead_s
    terms += [Term("attention", attn, "s"), Term("weights read once (bound if larger)", weights, "s"),
              Term("overhead (tiny model, same layers)", calib.overhead_s, "s")]
    return Prediction(total, "s", "max(matmuls / (ceiling x eff[kernel]) + attention, weights / read) + overhead",
                      {"n_tokens": n_tokens, "matmul_flops": calib.matmul_flops, "efficiency": dict(calib.efficiency),
                       "calibration": calib.source}, terms=tuple(terms))


def prefill_tokens_per_s(header: GgufHeader, calib: LlamaCalibration, n_tokens: int = 512) -> Prediction:
    t = prefill_time(header, calib, n_tokens)
    return Prediction(n_tokens / t.value, "tokens/s", f"{n_tokens} / t_prompt", t.inputs, terms=t.terms)


# --- a session's calibration: which runs fit which constant, and how (the recipe of tests_llama/llama_speed.py) -------
# The speed suite fits `F16` on the 7B F16 bench and the quantized kernel on the 7B Q8_0 bench of one session (F16
# first: the Q8_0 file's F32 norms take the F16 constant), each after the overhead of the tiny model with the 7B's
# layers and the same weight type. The CLI (cli_llama.py) fits the same runs with these functions, so that what it
# answers on a card with those runs is the prediction the speed suite reconciles (test_cli_llama_latency.py).
FIT_MODEL = "qwen2.5-7b"
DECODE_FITS: tuple[tuple[str, str], ...] = ((UNQUANTIZED_KERNEL, "F16"), (QUANTIZED_DECODE_KERNEL, "Q8_0"))
PREFILL_FITS: tuple[tuple[str, str], ...] = ((UNQUANTIZED_KERNEL, "F16"), (QUANTIZED_PREFILL_KERNEL, "Q8_0"))
BENCH_N_GEN, BENCH_N_PROMPT = 128, 512  # llama-bench tg128 / pp512, the tests the fits are made on
# The models the llama visit writes a tiny overhead model beside (scripts/device/llama_plan.py MODELS): the overhead
# model of `base` is f"tiny-{its layers}l".
OVERHEAD_MODEL_BASES = ("qwen2.5-0.5b", "qwen2.5-7b")


def overhead_model(base: str, layers: int) -> str | None:
    """The name of `base`'s tiny overhead model (`layers`: base's), None when the visit writes none for it."""
    return f"tiny-{layers}l" if base in OVERHEAD_MODEL_BASES else None


def tiny_overhead_s(tiny: GgufHeader, tok_per_s: float, read_bandwidth: float, matmul_flops: float,
                    phase: str) -> float:
    """The tiny model's time per decode token (`phase` "decode", from tg128) or per pp512 prompt ("prefill"), less
    its own small roofline at the prior constants: the overhead a model with its layers and vocabulary pays."""
    zero = LlamaCalibration(read_bandwidth, matmul_flops, 0.0, source="priors")
    if phase == "decode":
        return 1 / tok_per_s - decode_time(tiny, zero, context=(BENCH_N_GEN - 1) / 2).value
    return BENCH_N_PROMPT / tok_per_s - prefill_time(tiny, zero, BENCH_N_PROMPT).value


def fit_constants(phase: str, read_bandwidth: float, matmul_flops: float,
                  fits: Sequence[tuple[str, GgufHeader, float, float]]) -> tuple[dict[str, float], dict[str, float]]:
    """(attainment, efficiency) after fitting each (kernel, fit run's header, its tg128 or pp512 tok/s, its overhead)
    in order, from the priors; `phase` "decode" fits attainments, "prefill" efficiencies. Each fit sees the
    constants the earlier ones fitted."""
    att, eff = dict(PRIOR_ATTAINMENT), dict(PRIOR_EFFICIENCY)
    for kernel, header, tok_per_s, overhead in fits:
        c = LlamaCalibration(read_bandwidth, matmul_flops, overhead, att, eff)
        if phase == "decode":
            att[kernel] = fit_attainment(header, tok_per_s, c, kernel, n_gen=BENCH_N_GEN)
        else:
            eff[kernel] = fit_efficiency(header, tok_per_s, c, kernel, BENCH_N_PROMPT)
    return att, eff


def prompt_overhead_s(per_ubatch_s: float, n_tokens: int, n_ubatch: int) -> float:
    """A prompt's overhead: llama.cpp evaluates it in ceil(n / n_ubatch) graph runs, each paying the per-run overhead
    the tiny model's pp512 measured (one run at the default n_ubatch 512)."""
    return per_ubatch_s * math.ceil(n_tokens / n_ubatch)


# --- fits: each constant from the one run it is named after -----------------------------------
def fit_attainment(header: GgufHeader, measured_tok_per_s: float, calib: LlamaCalibration, kernel: str,
                   *, n_gen: int = 128) -> float:
    """The attainment of `kernel` that makes decode_tokens_per_s equal the measurement on `header`,
    the other kernels' bytes taken at their current constants."""
    t = 1.0 / measured_tok_per_s
    other = calib.overhead_s + kv_read_bytes(header, (n_gen - 1) / 2) / (
        calib.read_bandwidth * calib.attainment[UNQUANTIZED_KERNEL])
    mine = 0
    for k, by_type in weight_bytes_by_kernel(header).items():
        b = sum(by_type.values())
        if k == kernel:
            mine += b
        else:
            other += b / (calib.read_bandwidth * calib.attainment[k])
    if mine == 0:
        raise ValueError(f"{header.source}: no {kernel} tensors to fit that kernel's attainment on")
    if t <= other:
        raise ValueError(f"{header.source}: the measured {measured_tok_per_s:.1f} tok/s leaves no time for the "
                         f"{kernel} weights after overhead and the other kernels; the overhead is too large")
    return mine / (calib.read_bandwidth * (t - other))


def fit_efficiency(header: GgufHeader, measured_tok_per_s: float, calib: LlamaCalibration, kernel: str,
                   n_tokens: int = 512) -> float:
    t = n_tokens / measured_tok_per_s - calib.overhead_s
    flops = matmul_flops_by_kernel(header, n_tokens)
    other = attention_flops(header, n_tokens) / (calib.matmul_flops * calib.efficiency[UNQUANTIZED_KERNEL])
    other += sum(f / (calib.matmul_flops * calib.efficiency[k]) for k, f in flops.items() if k != kernel)
    if kernel not in flops or t <= other:
        raise ValueError(f"{header.source}: cannot fit the {kernel} efficiency on this prefill")
    return flops[kernel] / (calib.matmul_flops * (t - other))


# --- llama-server under concurrency: slots and continuous batching -------------------------------
# Every server step decodes one token for each busy slot (continuous batching over -np slots) and
# takes prompt tokens of slots still in prefill, up to n_batch per step. A burst of C equal requests
# (the plan's sweep) therefore runs as: all prompts first (C x n_prompt tokens at the prefill rate), then
# n_gen steps at batch C. The step at batch B costs the batch-1 step plus a marginal cost per extra
# sequence: its KV read (the floor) and the rest (per-sequence kernel work and the server's per-slot
# host work: logits copy, sampling), which is the unknown the sweep measures.
#
# Prior for the rest, two bounds (docs/LLAMA.md): the seed's llama.cpp on the 4090 paid 0.468 ms per
# extra request, of which its KV floor was 0.066 ms (STUDY.md item 10): 0.402 ms. If that is host work
# it stays 0.402 ms on the H200; if it is GPU compute it shrinks with the matmul peak (4090 bf16 dense
# 165 TFLOP/s to the H200's measured ~793: x0.21, 0.084 ms).
SEED_MARGINAL_ABOVE_FLOOR_S = 0.402e-3
SEED_RTX4090_BF16_DENSE_FLOPS = 165.2e12


def server_step_time(header: GgufHeader, calib: LlamaCalibration, batch: int, context: float,
                     marginal_s: float) -> Prediction:
    """One llama-server decode step at `batch` busy slots, each with `context` cached tokens."""
    one = decode_time(header, calib, context=context)
    kv = kv_read_bytes(header, context) / (calib.read_bandwidth * calib.attainment[UNQUANTIZED_KERNEL])
    extra = (batch - 1) * (kv + marginal_s)
    return Prediction(one.value + extra, "s", "t_step(1) + (B - 1) x (KV read per sequence + marginal)",
                      {"batch": batch, "context": context, "marginal_s": marginal_s},
                      terms=(Term("batch-1 step", one.value, "s"), Term("extra sequences", extra, "s")))


def fit_server_marginal(header: GgufHeader, calib: LlamaCalibration, itl_1: float, itl_c: float, concurrency: int,
                        context: float) -> float:
    """The marginal (above its KV read) that makes server_step_time's growth from 1 to `concurrency` busy slots equal
    the one a sweep measured (its median ITLs at C = 1 and C), each slot at `context` cached tokens."""
    if concurrency < 2:
        raise ValueError("the server's marginal needs a level of at least two busy slots")
    kv = kv_read_bytes(header, context) / (calib.read_bandwidth * calib.attainment[UNQUANTIZED_KERNEL])
    return (itl_c - itl_1) / (concurrency - 1) - kv


def server_burst(header: GgufHeader, calib: LlamaCalibration, concurrency: int, n_prompt: int, n_gen: int,
                 marginal_s: float, prompt_calib: LlamaCalibration | None = None) -> dict[str, Prediction]:
    """C requests of n_prompt + n_gen sent at once: throughput, median TTFT and ITL. `prompt_calib` (default `calib`)
    prices the prompts, when prefill has its own constants and overhead (a fitted session's)."""
    prefill = concurrency * prefill_time(header, prompt_calib or calib, n_prompt).value
    step = server_step_time(header, calib, concurrency, n_prompt + n_gen / 2, marginal_s)
    total = prefill + n_gen * step.value
    inputs = {"concurrency": concurrency, "n_prompt": n_prompt, "n_gen": n_gen, "marginal_s": marginal_s}
    return {
        "throughput_tok_s": Prediction(concurrency * n_gen / total, "tokens/s",
                                       "C x n_gen / (C x t_prompt + n_gen x t_step(C))", inputs,
                                       terms=(Term("prompts", prefill, "s"), Term("decode", n_gen * step.value, "s"))),
        # prompts are served one after another at the prefill rate: the median request waits for half of them
        "ttft_median_s": Prediction((concurrency + 1) / 2 * prefill / concurrency, "s",
                                    "(C + 1) / 2 x t_prompt", inputs),
        "itl_s": Prediction(step.value, "s", step.formula, inputs, step.terms),
    }
