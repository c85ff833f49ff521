"""Causal split: off-diagonal tiles without any mask, the diagonal band masked.

What changes: each program's KV sweep is split in two loops. Off-diagonal tiles (keys left of
the block's first query row) are fully visible and need no mask at all: no iota compare, no
select, no load predicate. The diagonal band (keys within the block's own rows) is the only
masked loop. Without a causal mask the same split puts the ragged last KV tile (N not a multiple
of BLOCK_N) in the masked loop, so interior tiles never pay for edges either. BLOCK_M must be a
multiple of BLOCK_N. The kernel also carries the next rung's change behind EXP2 (False here).

Predicted effect: full mask: a few percent faster than r3 (interior tiles drop r3's edge compare
and select); causal: no mask work on the 94% of tiles left of the diagonal at N=4096. bf16 tensor-core
efficiency 0.25-0.52 (mid 0.40) of the measured GEMM peak on executed FLOPs.

Measured outcome: (H200, 2026-12-01 06:50, B=4 H=32 N=4096 D=128 bf16; the
autotuner chose BLOCK_M=128 BLOCK_N=128, 8 warps): 3.86 ms full, 2.14 ms causal, 1.11 and 1.20 of
the prediction: slower than r3 (3.49 / 1.99 ms), not faster. The split itself costs nothing
measurable; its 128x128 tile at one stage takes 237-255 registers per thread and leaves one
program per SM (ncu), so nothing hides its unpipelined K/V loads (issue slots 25% busy against
r3's 38%). Nsight Compute: DRAM reads 0.403 GB (compulsory), L2 7.16 GB full against
8.86 GB tiled (0.81), 4.76 GB causal against 4.70 (1.01).
"""

from __future__ import annotations

import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=1),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=1),
]
INTERPRETER_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1}

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def _tiles(acc, l_i, m_i, q, k_base, v_base, skn, svn, offs_m, offs_n, offs_d, lo, hi, N, qk_scale,
           MASKED: tl.constexpr, CAUSAL: tl.constexpr, EXP2: tl.constexpr, BLOCK_N: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if MASKED:
            k = tl.load(k_base + cols[:, None] * skn + offs_d[None, :], mask=cols[:, None] < N, other=0.0)
            v = tl.load(v_base + cols[:, None] * svn + offs_d[None, :], mask=cols[:, None] < N, other=0.0)
        else:
            k = tl.load(k_base + cols[:, None] * skn + offs_d[None, :])
            v = tl.load(v_base + cols[:, None] * svn + offs_d[None, :])
        s = tl.dot(q, tl.trans(k)) * qk_scale  # with EXP2, qk_scale = sm_scale * log2(e)
        if MASKED:
            visible = cols[None, :] < N
            if CAUSAL:
                visible = visible & (cols[None, :] <= offs_m[:, None])
            s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        if EXP2:
            alpha = tl.math.exp2(m_i - m_new)
            p = tl.math.exp2(s - m_new[:, None])
        else:
            alpha = tl.exp(m_i - m_new)
            p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def split_fwd(Q, K, V, O, LSE, sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sob, soh, son,
              H, GROUP, N, sm_scale,
              D: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              EXP2: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqn + offs_d[None, :], mask=offs_m[:, None] < N, other=0.0)
    k_base = K + b * skb + hk * skh
    v_base = V + b * svb + hk * svh
    qk_scale = sm_scale
    if EXP2:
        qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        # off-diagonal: keys < start_m*BLOCK_M <= N, all visible to every row of the block
        lo = start_m * BLOCK_M
        hi = tl.minimum(lo + BLOCK_M, N)
    else:
        lo = (N // BLOCK_N) * BLOCK_N  # whole tiles unmasked, the ragged last one masked
        hi = N
    acc, l_i, m_i = _tiles(acc, l_i, m_i, q, k_base, v_base, skn, svn, offs_m, offs_n, offs_d, 0, lo, N, qk_scale,
                           False, CAUSAL, EXP2, BLOCK_N)
    acc, l_i, m_i = _tiles(acc, l_i, m_i, q, k_base, v_base, skn, svn, offs_m, offs_n, offs_d, lo, hi, N, qk_scale,
                           True, CAUSAL, EXP2, BLOCK_N)
    acc = acc / l_i[:, None]
    if EXP2:
        lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
    else:
        lse = m_i + tl.log(l_i)
    row_ok = offs_m < N
    tl.store(O + b * sob + h * soh + offs_m[:, None] * son + offs_d[None, :], acc.to(O.dtype.element_ty),
             mask=row_ok[:, None])
    tl.store(LSE + bh * N + offs_m, lse, mask=row_ok)
