"""The float64 reference for attention and the tolerances a kernel's output must meet.

Pure numpy: the CPU tests, the GPU runner's tolerance and the theory tests share it.

Tolerance (per element, absolute, in units of max|V|), derived from where a flash kernel rounds
when its inputs are of a dtype with unit roundoff u (fp16 2^-11, bf16 2^-8, fp32 2^-24):
- P is rounded to the input dtype before the PV product: each p_j gets a relative error <= u,
  so sum_j p_j (1+d_j) v_j / l moves by at most u * max|V| (the p_j sum to l);
- the output is rounded to the input dtype: <= u * |O| <= u * max|V|;
- the fp32 accumulations (scores over D, l and O over N): the running sums in fp32 err by at
  most ~ (D + N) * 2^-24 relative; the scores' error moves P by that much again through exp.
  N enters here: at N = 128k and fp32 accumulate this term is 0.008, larger than bf16's u.
So |O - O_ref| <= (2u + 2 * (D + N) * 2^-24) * max|V|, and the bound is doubled as the margin
for exp/exp2 and the 1/l division (each a few fp32 ulps). The log-sum-exp is fp32 from fp32
scores: |LSE - LSE_ref| <= 4 * (D + N) * 2^-24 * (max|s| + 1), s the scaled scores, plus u*max|s|
when the inputs were rounded differently from the reference (never here: both use the same
rounded inputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8, "fp32": 2.0**-24}
FP32_U = 2.0**-24


@dataclass(frozen=True)
class Tolerance:
    o_abs: float  # absolute, same units as O
    lse_abs: float
    why: str


def tolerance(dtype: str, n: int, head_dim: int, v_absmax: float, score_absmax: float) -> Tolerance:
    if dtype not in UNIT_ROUNDOFF:
        raise ValueError(f"dtype must be one of {sorted(UNIT_ROUNDOFF)}, got {dtype!r}")
    u = UNIT_ROUNDOFF[dtype]
    acc = (head_dim + n) * FP32_U
    o_abs = 2.0 * (2.0 * u + 2.0 * acc) * max(v_absmax, 1e-30)
    lse_abs = 4.0 * acc * (score_absmax + 1.0) + 1e-6
    return Tolerance(o_abs, lse_abs,
                     f"{dtype} (u={u:.3g}): 2x(2u + 2(D+N)2^-24) x max|V| = {o_abs:.3g} for O "
                     f"(P and O rounded to {dtype}, fp32 sums over D={head_dim} and N={n}); "
                     f"4(D+N)2^-24 x (max|s|+1) = {lse_abs:.3g} for LSE")


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, sm_scale: float
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """O [B,H,Nq,D], LSE [B,H,Nq] (natural log) and max|scaled score|, all float64.

    q [B,H,Nq,D]; k, v [B,Hkv,Nkv,D] with Hkv dividing H (GQA: query head h uses KV head
    h // (H/Hkv)). Causal aligns the last query with the last key (query i sees keys
    <= i + Nkv - Nq), which for Nq == Nkv is the usual lower triangle."""
    q64, k64, v64 = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    b, h, nq, d = q64.shape
    hkv, nkv = k64.shape[1], k64.shape[2]
    if h % hkv:
        raise ValueError(f"KV heads ({hkv}) must divide query heads ({h})")
    k64 = np.repeat(k64, h // hkv, axis=1)
    v64 = np.repeat(v64, h // hkv, axis=1)
    s = np.einsum("bhmd,bhnd->bhmn", q64, k64) * sm_scale
    smax = float(np.abs(s).max()) if s.size else 0.0
    if causal:
        rows = np.arange(nq)[:, None] + (nkv - nq)
        s = np.where(np.arange(nkv)[None, :] <= rows, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhmn,bhnd->bhmd", p / l, v64)
    lse = (m + np.log(l))[..., 0]
    return o, lse, smax


def default_scale(head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim)
