"""llama.cpp with many sequences at once (llama-batched-bench): prefill and decode at batch B, from the batch-1 theory.

**Prefill of B prompts** (`-npp N -npl B`, per-sequence KV streams: no `-kvu`). Every prompt is its own sequence with
its own stream, so a token attends only to its own prompt's earlier tokens, and the B x N tokens run as
ceil(B x N / n_ubatch) graph runs whatever way llama.cpp packs the ubatches (one prompt each, or equal slices of
several: llama_batch_allocr's split_equal): the matmul FLOPs, the attention pairs, the outputs (one per prompt) and the
number of graph runs are those of B lone prompts. So the theory's prefill rate at batch B is its batch-1 rate:

    t_prefill(B, N) = B x t_prompt(N)         (llamacpp_latency.prefill_time)

**Decode at batch B** (`-ntg T -npl B`: B tokens per step, one per sequence). ggml-cuda picks the matmul kernel by the
number of columns (ggml-cuda.cu ggml_cuda_mul_mat): up to MMVQ_MAX_BATCH_SIZE = 8 (mmvq.cuh) the batch-1 kernels
(MMVQ for block-quantized weights, the F16 vector kernel), above it (16 for mmf) the prefill kernels: MMQ for
quantized weights, cuBLAS for F16. Each weight matrix is still read once per step, and now multiplied by B rows, so
per tensor the step pays the larger of the two rooflines:

    t_step(B) = sum_tensors max(bytes / (read x attainment[decode kernel]), 2 x elements x B / (matmul x eff[prefill
                kernel])) + B x KV read(context) / (read x attainment[F16]) + overhead

- the weight stream at the kernel's batch-1 attainment (the best rate llama.cpp is measured to stream that type at);
- the multiply at the prefill kernel's efficiency, fitted at 512 rows (pp512): that the efficiency per FLOP holds at
  64 rows is the hypothesis a batch-64 run checks (MMQ tiles of 64 rows fill fewer SMs' worth of work than 512);
- the output matrix multiplies all B rows (every sequence samples), attention's FLOPs at decode are small against its
  KV read and are not priced;
- overhead: the batch-1 per-token overhead (the tiny model's), once per step: the same graph, the same launches.
"""

from __future__ import annotations

from pytest_anatomy.specs.gguf_file import GgufHeader
from pytest_anatomy.theory import llamacpp_latency as ll
from pytest_anatomy.theory.llamacpp_memory import gpu_tensors
from pytest_anatomy.theory.prediction import Prediction, Term

MMVQ_MAX_BATCH = 8  # ggml-cuda/mmvq.cuh MMVQ_MAX_BATCH_SIZE (== MMVF_MAX_BATCH_SIZE): above it, the prefill kernels


def batched_prefill_time(header: GgufHeader, calib: ll.LlamaCalibration, n_seqs: int, n_tokens: int) -> Prediction:
    """B prompts of N tokens in per-sequence streams: B lone prompts' work (module docstring)."""
    if n_seqs < 1:
        raise ValueError(f"a batch needs at least one sequence, got {n_seqs!r}")
    one = ll.prefill_time(header, calib, n_tokens)
    return Prediction(n_seqs * one.value, "s", "B x t_prompt(N): per-sequence streams, the same graph runs and FLOPs",
                      {**one.inputs, "n_seqs": n_seqs}, terms=(Term("t_prompt(N), one sequence", one.value, "s"),
                                                               *one.terms))


def batched_prefill_tokens_per_s(header: GgufHeader, calib: ll.LlamaCalibration, n_seqs: int,
                                 n_tokens: int) -> Prediction:
    t = batched_prefill_time(header, calib, n_seqs, n_tokens)
    return Prediction(n_seqs * n_tokens / t.value, "tokens/s", "B x N / t_prefill(B, N)", t.inputs, terms=t.terms)


def batched_decode_time(header: GgufHeader, calib: ll.LlamaCalibration, batch: int, context: float) -> Prediction:
    """One decode step of `batch` sequences with `context` cached tokens each (module docstring).

    (theory mutation llamacpp-batched-kv-one-sequence survives: the batched run is reconciled only against
    tests_quant/batched_preregistered.json, frozen before it, and its findings' bands are read off that run; the
    identity test_the_theory_still_computes_its_preregistration fails under it.)"""
    if batch < 1:
        raise ValueError(f"a decode step needs at least one sequence, got {batch!r}")
    if batch <= MMVQ_MAX_BATCH:
        raise ValueError(f"batch {batch} runs the batch-1 kernels (<= {MMVQ_MAX_BATCH} columns): their multi-column "
                         "cost is not modelled; use llamacpp_latency.decode_time for batch 1")
    mem_by: dict[str, float] = {}
    comp_by: dict[str, float] = {}
    bound_by: dict[str, float] = {}
    for t in gpu_tensors(header):
        decode_k, prefill_k = ll.decode_kernel(t.ggml_type), ll.prefill_kernel(t.ggml_type)
        mem = t.nbytes / (calib.read_bandwidth * calib.attainment[decode_k])
        comp = 0.0
        if t.n_dims >= 2:
            comp = 2.0 * t.numel * batch / (calib.matmul_flops * calib.efficiency[prefill_k])
        key = f"{t.ggml_type} ({prefill_k})"
        mem_by[key] = mem_by.get(key, 0.0) + mem
        comp_by[key] = comp_by.get(key, 0.0) + comp
        bound_by[key] = bound_by.get(key, 0.0) + max(mem, comp)
    kv = batch * ll.kv_read_bytes(header, context) / (calib.read_bandwidth * calib.attainment[ll.UNQUANTIZED_KERNEL])
    total = sum(bound_by.values()) + kv + calib.overhead_s
    terms = [Term(f"{k} weights", bound_by[k], "s", f"max(read {mem_by[k] * 1e3:.3f} ms, multiply "
                                                      f"{comp_by[k] * 1e3:.3f} ms) per tensor, summed")
             for k in sorted(bound_by)]
    terms += [Term("KV read, all sequences", kv, "s", f"{batch} x context {context:g}"),
              Term("overhead (tiny model, same layers)", calib.overhead_s, "s")]
    return Prediction(total, "s", "sum_tensors max(bytes / (read x att[decode kernel]), 2 x elements x B / (matmul x "
                      "eff[prefill kernel])) + B x KV / (read x att_F16) + overhead",
                      {"batch": batch, "context": context, "read_bandwidth": calib.read_bandwidth,
                       "matmul_flops": calib.matmul_flops, "attainment": dict(calib.attainment),
                       "efficiency": dict(calib.efficiency), "calibration": calib.source}, terms=tuple(terms))


def batched_decode_tokens_per_s(header: GgufHeader, calib: ll.LlamaCalibration, batch: int, n_gen: int,
                                n_prompt: int) -> Prediction:
    """llama-batched-bench's S_TG: B x n_gen tokens over n_gen steps, context from n_prompt to n_prompt + n_gen - 1."""
    t = batched_decode_time(header, calib, batch, n_prompt + (n_gen - 1) / 2)
    return Prediction(batch / t.value, "tokens/s", "B / t_step(B) at the mean context", t.inputs, terms=t.terms)
