"""Flash-decoding's split-K body, shared by both variants: decode.py's split kernel (then a reduction kernel) and
decode_fused.py's one kernel (whose last program per group reduces). A jit helper, inlined where it is called: the
two-kernel split kernel compiles to the same sm_90 SASS as when this body was written inside it (checked 2026-12-04,
instruction by instruction, when fd2 was added). Its own module so that decode.py may import decode_fused.py lazily
without a cycle.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def split_partials(Q, K, V, PO, PL, sqb, sqh, skb, skh, skn, svb, svh, svn, H, GROUP, CTX, SPLITS, chunk, sm_scale,
                   D: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr):
    """Program (b, kv head, split): its chunk of K/V streamed once for the GROUP query heads, the partial output
    (normalised within the chunk) and its base-2 log-sum-exp stored (decode_split's body; decode_fused's too)."""
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
