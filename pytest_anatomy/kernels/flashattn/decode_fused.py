"""Flash-decoding with the reduction fused (fd2): the split-K kernel's last program per (sequence, KV head) reduces.

What changes: decode.py launches two kernels, split-K then a reduction over the SPLITS partials. Here there is one.
Every (b, kv head, split) program streams its chunk of K/V and stores its partials exactly as decode.py's does (the
same jit body, split_partials), then, after a CTA barrier (every thread's stores ordered before the release), one
thread adds 1 to the (b, kv head)'s counter with an acq_rel atomic at GPU scope. The program that reads SPLITS - 1
back is the last of its group: every other split's partials are visible to it (their releases, its acquire), so it
merges the SPLITS partials of its GROUP query heads (loaded past L1, .cg), writes O and the LSE, and sets the counter
back to 0, so the next call needs no memset: the counters (int32, one per (b, kv head), in the workspace) are zeroed
once, when the workspace is allocated. Selected by decode.decode(..., fused_reduce=True); recordings
`fd2.b{B}h{H}kv{H_kv}l{L}d{D}` beside the two-kernel variant's `fd.` ones (registry.DECODE_VARIANTS).

Predicted effect: memory-bound as decode.py, with one kernel boundary fewer. On the recorded line
(flashattn_decode_line: each of 25 H200 sessions' 8k and 64k calls, B=8 H=32 H_kv=8 D=128 bf16) the two-kernel
variant costs a fixed 10.6 us (9.6-11.5) plus K/V streamed at 0.996-1.032 of the read ceiling. The fusion takes 2.5
us off the fixed part (band 1.0-5.0 us: the reduction kernel's launch gap and run (4 us as stated for it; 2.5-6 us)
gone, the last split's serialised tail (atomic, partials from L2, O stores: 1-1.5 us) added), so the fixed part
falls to 8.1 us and, the stream unchanged (the same split_partials body; 255 registers a program in both, 2 programs
per SM), 8k runs in 68.9 (66.8-69.5) us, at 88.6% (87.6%-91.0%) of the read ceiling over the 25 lines, where the
two-kernel variant ran in 71.4 (69.3-72.0) us, at 85.5% (84.5%-87.8%) (20/25 at >= 85%); at the band's ends 86.7%
(85.7%-89.0%) (25/25) and 92.0% (90.9%-94.4%) (25/25); 64k at 98.7% (98.1%-101.5%) (two kernels: 98.2%
(97.6%-101.0%)). Alternative, outside the band: nothing gained (under 1.0 us), if the release each program now waits
on before it retires (its partial stores acknowledged, ~0.5-1 us, in each of the 2.2 waves of 576 programs at 2 per
SM) or the last program's serialised merge costs what the launch saved; 8k then stays on the 85% line. Judged live
(test_flashattn_gpu.py): beside the two-kernel variant, in the same session on the same inputs, fd2 takes its time
less 1.0-5.0 us (mid 2.5) at 8k and 64k, the band widened by both calls' timing noise
(test_fused_reduction_saves_its_stated_time); and >= 85% of the session's read ceiling at 8k-128k
(test_flash_decoding_at_least_85pct_of_read_bandwidth, fd2's ids).

Measured outcome: H200, 2026-12-05 02:55 (live session fd2, results/h200/live-runs/20261205T025548Z.fd2): 8k
69.5 us (repeat 68.6), 86.6% of the session's read ceiling on the 85% target's line (70.8 us): the target is met,
below the predicted 87.6-91.0% band (66-69 us); the two-kernel call beside it 70.6 / 69.9 us, so the fused
reduction saved 1.1-1.3 us, the low end of the stated 1.0-5.0 us (time_vs_two_kernels agrees). 16k 128.9, 32k 248.9,
64k 489.0 (two-kernel 489.4), 128k 966.1 us: every context from 8k meets the 85% target; sdpa's default backend took
68.9, 127.5, 242.0, 472.3 and 935.1 us on the same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import triton
import triton.language as tl

from pytest_anatomy.kernels.flashattn.decode_partials import split_partials

MERGE_ROWS = 64  # (query head, split) rows the last program merges per step: 64 x D fp32, 64 registers a thread at D=128


@triton.jit
def decode_split_fused(Q, K, V, PO, PL, CNT, O, LSE, sqb, sqh, skb, skh, skn, svb, svh, svn, sob, soh, H, GROUP, CTX,
                       SPLITS, chunk, sm_scale, D: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_G: tl.constexpr, BLOCK_S: tl.constexpr):
    split_partials(Q, K, V, PO, PL, sqb, sqh, skb, skh, skn, svb, svh, svn, H, GROUP, CTX, SPLITS, chunk, sm_scale,
                   D, BLOCK_H, BLOCK_N)
    bk = tl.program_id(0)
    tl.debug_barrier()  # all of this program's partial stores before the release below (one thread issues it)
    arrived = tl.atomic_add(CNT + bk, 1, sem="acq_rel", scope="gpu")
    if arrived == SPLITS - 1:  # the last split of (b, kv head): every other split's partials are visible now
        merge_group(PO, PL, O, LSE, bk, sob, soh, H, GROUP, SPLITS, D, BLOCK_G, BLOCK_S)
        tl.store(CNT + bk, 0)  # self-cleaning: every split has arrived; the next launch is stream-ordered after this


@triton.jit
def merge_group(PO, PL, O, LSE, bk, sob, soh, H, GROUP, SPLITS, D: tl.constexpr, BLOCK_G: tl.constexpr,
                BLOCK_S: tl.constexpr):
    """O = sum_s exp(lse_s - lse) O_s, lse = logsumexp_s lse_s, for the GROUP heads of (b, kv head) = bk, BLOCK_S
    splits a step (one step where SPLITS <= BLOCK_S), merged online across steps."""
    hkv = H // GROUP
    b = bk // hkv
    offs_g = tl.arange(0, BLOCK_G)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, D)
    heads = (bk % hkv) * GROUP + offs_g
    g_ok = offs_g < GROUP
    m = tl.full([BLOCK_G], float("-inf"), tl.float32)
    total = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, D], tl.float32)
    for s0 in range(0, SPLITS, BLOCK_S):
        s = s0 + offs_s
        ok = g_ok[:, None] & (s < SPLITS)[None, :]
        row = (b * H + heads)[:, None] * SPLITS + s[None, :]  # partials [B, H, SPLITS, D] and [B, H, SPLITS]
        lse2 = tl.load(PL + row, mask=ok, other=float("-inf"), cache_modifier=".cg")
        po = tl.load(PO + row[:, :, None] * D + offs_d[None, None, :], mask=ok[:, :, None], other=0.0,
                     cache_modifier=".cg")
        m_new = tl.maximum(m, tl.max(lse2, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a padded head (g >= GROUP) has no split at all
        alpha = tl.math.exp2(m - m_safe)
        w = tl.math.exp2(lse2 - m_safe[:, None])
        total = total * alpha + tl.sum(w, 1)
        acc = acc * alpha[:, None] + tl.sum(po * w[:, :, None], 1)
        m = m_new
    t_div = tl.where(total > 0, total, 1.0)
    tl.store(O + b * sob + heads[:, None] * soh + offs_d[None, :], (acc / t_div[:, None]).to(O.dtype.element_ty),
             mask=g_ok[:, None])
    tl.store(LSE + b * H + heads, (m + tl.math.log2(t_div)) * 0.6931471805599453, mask=g_ok)


def merge_blocks(group: int, splits: int) -> tuple[int, int]:
    """(BLOCK_G, BLOCK_S): the query heads of a group padded to a power of two, and the splits merged a step, so that
    BLOCK_G * BLOCK_S <= MERGE_ROWS (every split in one step at the H200 shape: 4 heads x 16 >= 9 splits)."""
    block_g = triton.next_power_of_2(group)
    return block_g, max(1, min(triton.next_power_of_2(splits), MERGE_ROWS // block_g))


def launch(q: Any, k: Any, v: Any, o: Any, lse: Any, ws: Mapping[str, Any], *, sm_scale: float, group: int,
           splits: int, chunk: int, block_h: int, block_n: int, num_warps: int) -> None:
    """One launch over (B * H_kv, SPLITS) programs; decode.decode checks the inputs and sizes the split."""
    from pytest_anatomy.kernels.flashattn.launch import BadAttentionInput

    b, hkv = q.shape[0], k.shape[1]
    if "CNT" not in ws or ws["CNT"].numel() < b * hkv:
        raise BadAttentionInput("the fused reduction needs the workspace's zeroed counters: "
                                "decode.workspace_for(q, splits, fused_reduce=True)")
    block_g, block_s = merge_blocks(group, splits)
    decode_split_fused[(b * hkv, splits)](
        q, k, v, ws["PO"], ws["PL"], ws["CNT"], o, lse, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
        k.stride(2), v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), q.shape[1], group,
        k.shape[2], splits, chunk, sm_scale, D=q.shape[3], BLOCK_H=block_h, BLOCK_N=block_n, BLOCK_G=block_g,
        BLOCK_S=block_s, num_warps=num_warps, num_stages=2)
