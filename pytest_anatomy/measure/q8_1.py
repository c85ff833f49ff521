"""llama.cpp's q8_1 activation rounding, in numpy: what the CUDA MMQ/MMVQ kernels do to the activations entering
every matmul with a quantized weight (ggml/src/ggml-cuda/quantize.cu, quantize_mmq_q8_1): per block of 32
consecutive values along the row, d = amax / 127 and q = round(x / d), int8; the kernel then multiplies integer codes.
An F16 weight takes cuBLAS with the activations in f16 instead (no q8_1): the reference sees none of this noise.

Two details left out, both far below the int8 step: Q2_K's layout keeps one d per 64 values (D2S6), and the
DS4 layouts (Q4_0, Q4_1, Q5_1, Q4_K, Q5_K) store d and the block sum in half precision (2^-11 relative).
"""

from __future__ import annotations

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
