"""float64 references, random inputs and the error metric every rung is checked with (numpy;
the GPU runner computes the same references with torch in float64 on the device).

Inputs are never zeros (docs/FACTS.md M2: zeros hide unwritten outputs and can run faster): GEMM
operands are standard normal, reduction inputs uniform on [0, 1) (a positive sum, so the
relative error is not inflated by cancellation), RMSNorm/softmax rows standard normal x 3.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

# ||out - ref|| / ||ref||. fp32: K-term dot products in a fixed order lose ~sqrt(K) x 6e-8
# relative (4e-6 at K=4097); 1e-4 leaves 25x margin while any indexing error gives O(1).
# bf16 operands and a bf16 output: one rounding of the output is 2^-9 relative (docs/FACTS.md
# M3: bf16 lands between 1e-3 and 1e-2).
TOLERANCE = {"fp32": 1e-4, "bf16": 1e-2}


def rel_error(out: np.ndarray, ref: np.ndarray) -> float:
    """Relative Frobenius error; inf when any output is NaN/inf (e.g. an unwritten poisoned one)."""
    out64 = np.asarray(out, dtype=np.float64)
    if not np.all(np.isfinite(out64)):
        return float("inf")
    den = float(np.linalg.norm(ref))
    return float(np.linalg.norm(out64 - ref) / (den if den else 1.0))


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns (uint16), round to nearest even."""
    u: np.ndarray = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_to_f64(h: np.ndarray) -> np.ndarray:
    return (h.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def make_inputs(ladder: str, shape: Mapping[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if ladder == "sgemm":
        m, n, k = shape["M"], shape["N"], shape["K"]
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        if dtype == "bf16":
            return {"A": bf16_round(a), "B": bf16_round(np.ascontiguousarray(b.T))}  # B holds Bt (N x K)
        return {"A": a, "B": b}
    if ladder == "reduction":
        return {"x": rng.random(shape["n"], dtype=np.float32)}
    if ladder in ("rmsnorm", "softmax"):
        x = 3.0 * rng.standard_normal((shape["M"], shape["N"]), dtype=np.float32)
        out = {"x": x.astype(np.float32)}
        if ladder == "rmsnorm":
            out["w"] = (1.0 + 0.5 * rng.standard_normal(shape["N"], dtype=np.float32)).astype(np.float32)
        return out
    raise ValueError(f"unknown ladder {ladder!r}")


def reference(ladder: str, inputs: Mapping[str, np.ndarray], dtype: str, eps: float = 1e-6) -> np.ndarray:
    if ladder == "sgemm":
        if dtype == "bf16":
            return bf16_to_f64(inputs["A"]) @ bf16_to_f64(inputs["B"]).T
        return inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64)
    if ladder == "reduction":
        return np.array([inputs["x"].astype(np.float64).sum()])
    x = inputs["x"].astype(np.float64)
    if ladder == "rmsnorm":
        return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * inputs["w"].astype(np.float64)
    if ladder == "softmax":
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    raise ValueError(f"unknown ladder {ladder!r}")


def output_shape(ladder: str, shape: Mapping[str, int]) -> tuple[int, ...]:
    if ladder == "sgemm":
        return (shape["M"], shape["N"])
    if ladder == "reduction":
        return (1,)
    return (shape["M"], shape["N"])
