"""Flash-decoding: a batch of single-token queries over long KV caches, split-K then a reduction.

What changes: a decode step has one query row per sequence, so one program per (sequence, head)
would leave most SMs idle and read K/V at a fraction of the bandwidth. The KV sequence is cut
into SPLITS contiguous chunks; program (b, kv head, split) streams its chunk of K and V once
and computes, for all GROUP query heads that share the KV head (GQA: the rows of one small
MMA, padded to 16), a partial output normalised within the chunk and its log-sum-exp. A second
kernel merges the SPLITS partials per (b, head): O = sum_s exp(lse_s - lse) O_s with
lse = logsumexp_s lse_s.

Predicted effect: memory-bound: time = K+V bytes / (f x measured read bandwidth) + the
partials' round trip + one kernel boundary (4 us, stated). f = 0.75-0.95 (mid 0.85): one pass
over K/V in 64-token tiles with 4 programs per SM in flight. Contexts >= 8k keep the
partials under 1% of the K/V bytes.

Measured outcome: (H200, 2026-12-01; B=8 H=32 H_kv=8 D=128 bf16, BLOCK_N=64,
9 splits): 8k context 72.0 us (live session) and 71.6 us (NVML-spec session), 0.94 / 0.93 of the
prediction, i.e. 84.96% and 85.5% of the session's read ceiling against the >= 85% target: on the
line within noise (finding h200-flash-decoding-8k-at-the-85pct-line, strict=False). 64k context
499 / 502 us, 4.3 TB/s, 0.86 of the prediction (the first run's finding: above the 75-95% band).
torch's sdpa on the same inputs: 70.7-74.0 us at 8k, 482-491 us at 64k.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import triton
import triton.language as tl

from pytest_anatomy.kernels.flashattn.decode_rules import BLOCK_N, splits_for

INTERPRETER_BLOCK_N = 16
__all__ = ["BLOCK_N", "decode", "splits_for", "workspace_for"]


@triton.jit
def decode_split(Q, K, V, PO, PL, sqb, sqh, skb, skh, skn, svb, svh, svn, H, GROUP, CTX, SPLITS, chunk, sm_scale,
                 D: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr):
    bk = tl.program_id(0)
    split = tl.program_id(1)
    hkv = H // GROUP
    b = bk // hkv
    hk = bk % hkv
    offs_g = tl.arange(0, BLOCK_H)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    heads = hk * GROUP + offs_g
    g_ok = offs_g < GROUP
    q = tl.load(Q + b * sqb + heads[:, None] * sqh + offs_d[None, :], mask=g_ok[:, None], other=0.0)
    k_base = K + b * skb + hk * skh
    v_base = V + b * svb + hk * svh
    lo = split * chunk
    hi = tl.minimum(lo + chunk, CTX)
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, D], tl.float32)
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        ok = cols < hi
        k = tl.load(k_base + cols[:, None].to(tl.int64) * skn + offs_d[None, :], mask=ok[:, None], other=0.0)
        v = tl.load(v_base + cols[:, None].to(tl.int64) * svn + offs_d[None, :], mask=ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    l_div = tl.where(l_i > 0, l_i, 1.0)
    row = (b * H + heads) * SPLITS + split  # partials [B, H, SPLITS, D] and [B, H, SPLITS]
    tl.store(PO + row[:, None] * D + offs_d[None, :], acc / l_div[:, None], mask=g_ok[:, None])
    lse2 = tl.where(l_i > 0, m_i + tl.math.log2(l_div), float("-inf"))  # an empty split weighs nothing
    tl.store(PL + row, lse2, mask=g_ok)


@triton.jit
def decode_reduce(PO, PL, O, LSE, sob, soh, H, SPLITS, D: tl.constexpr, BLOCK_S: tl.constexpr):
    bh = tl.program_id(0)
    b = bh // H
    h = bh % H
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, D)
    s_ok = offs_s < SPLITS
    lse2 = tl.load(PL + bh * SPLITS + offs_s, mask=s_ok, other=float("-inf"))
    m = tl.max(lse2, 0)
    w = tl.math.exp2(lse2 - m)
    total = tl.sum(w, 0)
    po = tl.load(PO + (bh * SPLITS + offs_s[:, None]) * D + offs_d[None, :], mask=s_ok[:, None], other=0.0)
    o = tl.sum(po * (w / total)[:, None], 0)
    tl.store(O + b * sob + h * soh + offs_d, o.to(O.dtype.element_ty))
    tl.store(LSE + bh, (m + tl.math.log2(total)) * 0.6931471805599453)


def workspace_for(q: Any, splits: int) -> dict[str, Any]:
    import torch

    b, h, _, d = q.shape
    return {"PO": torch.empty(b * h * splits * d, dtype=torch.float32, device=q.device),
            "PL": torch.empty(b * h * splits, dtype=torch.float32, device=q.device)}


def decode(q: Any, k: Any, v: Any, o: Any, lse: Any, *, sm_scale: float, splits: int,
           workspace: Mapping[str, Any] | None = None, block_n: int = BLOCK_N, num_warps: int = 4) -> dict[str, Any]:
    """q [B, H, 1, D]; k, v [B, H_kv, L, D]; o [B, H, 1, D]; lse [B, H, 1] fp32."""
    from pytest_anatomy.kernels.flashattn.launch import BadAttentionInput

    b, h, one, d = q.shape
    hkv, ctx = k.shape[1], k.shape[2]
    if one != 1:
        raise BadAttentionInput(f"flash-decoding takes one query token per sequence; q has {one} (use a prefill rung)")
    if h % hkv or tuple(v.shape) != tuple(k.shape) or k.shape[0] != b or k.shape[3] != d:
        raise BadAttentionInput(f"k, v must be [B={b}, H_kv | H={h}, L, D={d}]; got {tuple(k.shape)}, {tuple(v.shape)}")
    if splits < 1:
        raise BadAttentionInput(f"splits must be >= 1, got {splits}")
    group = h // hkv
    chunk = -(-(-(-ctx // splits)) // block_n) * block_n  # a whole number of tiles per split
    splits = -(-ctx // chunk)
    ws = workspace if workspace is not None else workspace_for(q, splits)
    block_h = max(16, triton.next_power_of_2(group))
    decode_split[(b * hkv, splits)](q, k, v, ws["PO"], ws["PL"], q.stride(0), q.stride(1), k.stride(0), k.stride(1),
                                    k.stride(2), v.stride(0), v.stride(1), v.stride(2), h, group, ctx, splits, chunk,
                                    sm_scale, D=d, BLOCK_H=block_h, BLOCK_N=block_n, num_warps=num_warps, num_stages=2)
    decode_reduce[(b * h,)](ws["PO"], ws["PL"], o, lse, o.stride(0), o.stride(1), h, splits, D=d,
                            BLOCK_S=max(2, triton.next_power_of_2(splits)), num_warps=4)
    return {"BLOCK_N": block_n, "BLOCK_H": block_h, "splits": splits, "chunk": chunk, "num_warps": num_warps}
