"""llama.cpp's q8_1 activation rounding, in numpy: what the CUDA MMQ/MMVQ kernels do to the activations entering
every matmul with a quantized weight (ggml/src/ggml-cuda/quantize.cu, quantize_mmq_q8_1): per block of 32
consecutive values along the row, d = amax / 127 and q = round(x / d), int8; the kernel then multiplies integer codes.
An F16 weight takes cuBLAS with the activations in f16 instead (no q8_1): the reference sees none of this noise.

Symmetric weight types (Q8_0, Q4_0 and Q5_0 once MMQ's tile loader has subtracted their offset, Q3_K, Q6_K) multiply
the rounded activations by the weight itself: the error of a product is sum_i W_i e_i (e = rounded - exact), which
`q8_1_round` prices. Types with a block minimum (Q4_1, Q5_1, Q4_K, Q5_K; Q2_K's layout too) store W = d*q + m with
codes q >= 0; MMQ multiplies the rounded activations by the codes and adds m times the block's sum of the activations
taken *before* rounding (quantize.cu stores that sum beside d; mmq.cuh vec_dot_q8_1_q8_1_mma adds dm.y * ds.y). The
error is then sum_i (W_i - m) e_i: each weight's offset from its block minimum, up to twice the block's range, takes
the place of the weight. `AsymmetricMmq` prices that.

Two details left out, both far below the int8 step: Q2_K's layout keeps one d per 64 values (D2S6), and the
DS4 layouts (Q4_0, Q4_1, Q5_1, Q4_K, Q5_K) store d and the block sum in half precision (2^-11 relative).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

QK8_1 = 32


def q8_1_round(x: np.ndarray) -> np.ndarray:
    """x [..., n] float32, n a multiple of 32 -> x rounded through q8_1 and back (float32)."""
    shape = x.shape
    blocks = x.reshape(*shape[:-1], shape[-1] // QK8_1, QK8_1)
    amax = np.abs(blocks).max(axis=-1, keepdims=True)
    d = amax / np.float32(127)
    safe = np.where(d == 0, np.float32(1), d)
    # np.rint rounds halves to even where CUDA's roundf rounds them away from zero: ties have measure zero here
    return (np.rint(blocks / safe) * d).reshape(shape).astype(np.float32)


def block_minimum(w: np.ndarray) -> np.ndarray:
    """W [rows, n] -> m [rows, n / 32]: the minimum of each 32-block as Q4_1 / Q5_1 store it (f16). For a weight
    already on such a grid (requantized by gguf-py or llama-quantize) it is the m the kernel adds back."""
    rows, n = w.shape
    return w.reshape(rows, n // QK8_1, QK8_1).min(axis=-1).astype(np.float16).astype(np.float32)


class AsymmetricMmq:
    """The activation rounding of llama.cpp's MMQ for a file whose tensors in `minimum` have a block minimum
    (name -> block_minimum of the weight); every other weight takes the symmetric rounding. An `act` for
    numpy_llama with a matmul of its own."""

    def __init__(self, minimum: Mapping[str, np.ndarray]) -> None:
        self.minimum = dict(minimum)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return q8_1_round(x)

    def matmul(self, x: np.ndarray, name: str, w: np.ndarray) -> np.ndarray:
        xq = q8_1_round(x)
        y = xq @ w.T
        m = self.minimum.get(name)
        if m is None:
            return y
        # codes x rounded activations + m x the exact block sum = W.xq - m.(sum of the rounding error per block)
        err = (xq - x).reshape(*x.shape[:-1], x.shape[-1] // QK8_1, QK8_1).sum(axis=-1)
        return (y - err @ m.T).astype(np.float32)
