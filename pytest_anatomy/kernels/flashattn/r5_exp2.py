"""exp2 with the softmax scale folded in (the kernel is r4_causal_split.split_fwd with EXP2=True).

What changes: scores are scaled by sm_scale*log2(e) in the one multiply after the QK^T MMA,
and the softmax uses exp2 (one MUFU.EX2 per element) instead of exp (which compiles to a
multiply by log2(e) plus EX2); the running max and sum live in the log2 domain and the
log-sum-exp is converted back once per row (x ln 2). On Hopper the softmax's MUFU and FMA work
per tile competes with the MMA issue of the same warps, so fewer instructions per score matter.

Predicted effect: bf16 tensor-core efficiency 0.28-0.58 (mid 0.43) of the measured GEMM peak
on executed FLOPs, ~10% faster than r4 at the target shape.

Measured outcome: not measured yet.
"""

from __future__ import annotations

from pytest_anatomy.kernels.flashattn.r4_causal_split import CONFIGS, INTERPRETER_CONFIG, split_fwd

__all__ = ["CONFIGS", "INTERPRETER_CONFIG", "split_fwd"]
