"""fp8 weights and an fp8 KV cache in the step model: the minimal byte model, in one function.

Deliberately minimal (the full quantization theory is built apart and replaces `apply_fp8`):
- fp8 weights (vLLM's Fp8LinearMethod): every 2-D linear weight at 1 byte plus its fp32 scale,
  lm_head and embeddings kept in bf16 (theory/capacity.weight_bytes with format "fp8"); a step
  streams those bytes instead of bf16's. The fp8 GEMM's higher peak is NOT modelled: a
  compute-bound step keeps the bf16 peak and efficiency (so prefill gains are under-predicted).
- fp8 KV cache (kv_cache_dtype="fp8"): one byte per element instead of two, read and written.
"""

from __future__ import annotations

from dataclasses import replace

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.latency import StepModel


def apply_fp8(model: ModelSpec, steps: StepModel, *, weights: bool, kv_cache: bool, tp: int = 1) -> StepModel:
    """`steps` (one rank's of `tp`) with its weight bytes and/or KV bytes at fp8: the only place the
    ladder's and `plan`'s fp8 lives. The KV written per token is shifted by the bytes saved rather than
    replaced, so a tensor-parallel rank's all-reduce bytes folded into it (theory/transfer.py) stay."""
    out = steps
    if weights:
        out = replace(out, weight_bytes=cap.weight_bytes(model, "fp8", matmul_only=True, tp=tp).value,
                      calibration=out.calibration + ("fp8 weights: linear weight bytes at 1 B + scales; bf16 peak kept",))
    if kv_cache:
        saved = cap.kv_bytes_per_token(model, tp=tp).value - cap.kv_bytes_per_token(model, "fp8", tp).value
        out = replace(out, kv_layer_bytes=cap.kv_layer_bytes_per_token(model, "fp8", tp).value,
                      kv_token_bytes=out.kv_token_bytes - saved,
                      calibration=out.calibration + ("fp8 KV cache: 1 B per element",))
    return out
