"""exp2 with the softmax scale folded in (the kernel is r4_causal_split.split_fwd with EXP2=True).

What changes: scores are scaled by sm_scale*log2(e) in the one multiply after the QK^T MMA,
and the softmax uses exp2 (one MUFU.EX2 per element) instead of exp (which compiles to a
multiply by log2(e) plus EX2); the running max and sum live in the log2 domain and the
log-sum-exp is converted back once per row (x ln 2). On Hopper the softmax's MUFU and FMA work
per tile competes with the MMA issue of the same warps, so fewer instructions per score matter.

Predicted effect: bf16 tensor-core efficiency 0.28-0.58 (mid 0.43) of the measured GEMM peak
on executed FLOPs, ~10% faster than r4 at the target shape.

Measured outcome: (H200, 2026-12-01 06:50, B=4 H=32 N=4096 D=128 bf16; 128x128
tiles, 8 warps): 3.07 ms full (358 TF/s), 1.74 ms causal, 0.95 and 1.04 of the prediction: 20% /
19% faster than r4 at the same tiling, twice the ~10% predicted. Nsight Compute: DRAM reads 0.403
GB (compulsory); L2 5.93 GB full against 8.86 GB tiled (0.67, below the pre-registered 0.8: the
L2 request coalescer merges co-running programs' reads of one K/V line, finding
h200-l2-request-coalescer-merges-kv-reads), 4.53 GB causal against 4.70 (0.96).
"""

from __future__ import annotations

from pytest_anatomy.kernels.flashattn.r4_causal_split import CONFIGS, INTERPRETER_CONFIG, split_fwd

__all__ = ["CONFIGS", "INTERPRETER_CONFIG", "split_fwd"]
