"""Online softmax in the FA-1 loop order: KV tiles outer, query blocks inner, O kept in HBM.

What changes: from the naive rung, S is never stored: each (KV tile, query block) pair computes
its scores, takes the tile's row max and sum, and folds them into running statistics with the
online-softmax rescaling. In FlashAttention-1's order the KV loop is the outer one, so the
running O (fp32), m and l of every query block are read from and written back to HBM on every
KV step, and O is renormalised by the new l each time. A program owns a group of Q_GROUP query
blocks (programs are still independent: they own disjoint rows) and finishes by converting its
rows to the output dtype and the log-sum-exp.

Predicted effect: the O/m/l round trip (about 2 x BLOCK_M x D x 4 bytes per tile, the same as
the K/V tile it consumes, twice) stays in L2 (a program's group is 4 x 128 x 128 x 4 = 256 KiB),
so DRAM sees about the compulsory bytes; the cost is load/store latency and the extra rescale,
in a loop whose MMAs wait on them. bf16 tensor-core efficiency 0.08-0.30 (mid 0.15) of the
measured GEMM peak on executed FLOPs.

Measured outcome: (H200, 2026-12-01 06:50, B=4 H=32 N=4096 D=128 bf16,
BLOCK_M=128 BLOCK_N=64 Q_GROUP=4): 15.64 ms full, 8.53 ms causal, 1.69 and 1.78 of the mid
prediction (inside 0.5-1.88, near its slow end). The predicted effect on bytes was wrong: Nsight
Compute counted 20.70 GB read and 16.15 GB written full (9.81 / 7.47 GB causal), not ~0.68 GB: the
O32/m/l round trip of every (KV tile, query block) step went to DRAM (262,144 steps x 65 KiB =
17.45 GB each way full), because a step's working set (132 programs x 4 blocks x (64 KiB O32 +
1 KiB m/l + 32 KiB Q) = 50 MiB) exceeds what the L2 keeps between two touches (hit rate 51%).
A finding in tests_flashattn/flashattn_counter_findings.py (h200-fa1-workspace-round-trips-reach-dram).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "Q_GROUP": 4}, num_warps=8, num_stages=1)]
INTERPRETER_CONFIG = {"BLOCK_M": 16, "BLOCK_N": 16, "Q_GROUP": 2, "num_warps": 4, "num_stages": 1}


@triton.jit
def fa1_fwd(Q, K, V, O, LSE, O32, M, L, sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sob, soh, son,
            H, GROUP, N, sm_scale,
            D: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
            Q_GROUP: tl.constexpr):
    group = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // GROUP
    n_qblocks = tl.cdiv(N, BLOCK_M)
    qb0 = group * Q_GROUP
    qb1 = tl.minimum(qb0 + Q_GROUP, n_qblocks)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    k_base = K + b * skb + hk * skh
    v_base = V + b * svb + hk * svh
    q_base = Q + b * sqb + h * sqh
    row_base = bh * N  # rows of O32 / M / L / LSE ([B*H, N] layouts)
    kv_end = N
    if CAUSAL:
        kv_end = tl.minimum(qb1 * BLOCK_M, N)
    for start_n in range(0, kv_end, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_base + cols[:, None] * skn + offs_d[None, :], mask=cols[:, None] < N, other=0.0)
        v = tl.load(v_base + cols[:, None] * svn + offs_d[None, :], mask=cols[:, None] < N, other=0.0)
        first = qb0
        if CAUSAL:
            first = tl.maximum(qb0, start_n // BLOCK_M)  # blocks whose rows all precede the tile see none of it
        for qb in range(first, qb1):
            offs_m = qb * BLOCK_M + tl.arange(0, BLOCK_M)
            row_ok = offs_m < N
            q = tl.load(q_base + offs_m[:, None] * sqn + offs_d[None, :], mask=row_ok[:, None], other=0.0)
            s = tl.dot(q, tl.trans(k)) * sm_scale
            visible = cols[None, :] < N
            if CAUSAL:
                visible = visible & (cols[None, :] <= offs_m[:, None])
            s = tl.where(visible, s, float("-inf"))
            m_tile = tl.max(s, 1)
            m_safe = tl.where(m_tile == float("-inf"), 0.0, m_tile)  # rows the tile hides entirely
            p = tl.exp(s - m_safe[:, None])
            l_tile = tl.sum(p, 1)
            pv = tl.dot(p.to(v.dtype), v)
            o_ptrs = O32 + (row_base + offs_m[:, None]) * D + offs_d[None, :]
            m_old = tl.load(M + row_base + offs_m, mask=row_ok, other=0.0)
            l_old = tl.load(L + row_base + offs_m, mask=row_ok, other=0.0)
            o_old = tl.load(o_ptrs, mask=row_ok[:, None], other=0.0)
            m_new = tl.maximum(m_old, m_tile)
            a_old = tl.exp(m_old - m_new)
            a_tile = tl.exp(m_tile - m_new)
            a_old = tl.where(l_old > 0, a_old, 0.0)
            l_new = a_old * l_old + a_tile * l_tile
            l_div = tl.where(l_new > 0, l_new, 1.0)
            o_new = ((a_old * l_old)[:, None] * o_old + a_tile[:, None] * pv) / l_div[:, None]
            tl.store(o_ptrs, o_new, mask=row_ok[:, None])
            tl.store(M + row_base + offs_m, m_new, mask=row_ok)
            tl.store(L + row_base + offs_m, l_new, mask=row_ok)
            tl.debug_barrier()  # the next KV step's loads of these rows must see these stores
    for qb in range(qb0, qb1):
        offs_m = qb * BLOCK_M + tl.arange(0, BLOCK_M)
        row_ok = offs_m < N
        o = tl.load(O32 + (row_base + offs_m[:, None]) * D + offs_d[None, :], mask=row_ok[:, None], other=0.0)
        m = tl.load(M + row_base + offs_m, mask=row_ok, other=0.0)
        ll = tl.load(L + row_base + offs_m, mask=row_ok, other=1.0)
        tl.store(O + b * sob + h * soh + offs_m[:, None] * son + offs_d[None, :], o.to(O.dtype.element_ty),
                 mask=row_ok[:, None])
        tl.store(LSE + row_base + offs_m, m + tl.log(ll), mask=row_ok)


def workspace_for(q: Any) -> dict[str, Any]:
    import torch

    b, h, n, d = q.shape
    return {"O32": torch.empty(b * h * n * d, dtype=torch.float32, device=q.device),
            "M": torch.empty(b * h * n, dtype=torch.float32, device=q.device),
            "L": torch.empty(b * h * n, dtype=torch.float32, device=q.device)}


def launch(q: Any, k: Any, v: Any, o: Any, lse: Any, *, causal: bool, sm_scale: float,
           config: Mapping[str, int] | None, dims: tuple[int, int, int, int, int],
           workspace: Mapping[str, Any] | None = None) -> dict[str, Any]:
    from pytest_anatomy.kernels.flashattn.launch import pointer_args

    b, h, hkv, n, d = dims
    ws = workspace if workspace is not None else workspace_for(q)
    ws["O32"].zero_()  # FA-1 initialises O, l and m in HBM: part of the algorithm, inside the timing
    ws["L"].zero_()
    ws["M"].fill_(float("-inf"))
    cfg = dict(config) if config is not None else {**CONFIGS[0].kwargs, "num_warps": CONFIGS[0].num_warps,
                                                    "num_stages": CONFIGS[0].num_stages}
    grid = (triton.cdiv(triton.cdiv(n, cfg["BLOCK_M"]), cfg["Q_GROUP"]), b * h)
    fa1_fwd[grid](q, k, v, o, lse, ws["O32"], ws["M"], ws["L"], *pointer_args(q, k, v, o), h, h // hkv, n, sm_scale,
                  D=d, CAUSAL=causal, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], Q_GROUP=cfg["Q_GROUP"],
                  num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return cfg
