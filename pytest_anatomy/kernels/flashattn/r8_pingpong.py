"""FA-3's ping-pong in Gluon: two consumer warpgroups as two partitions, taking turns at the tensor cores.

What changes: r7's two consumer warpgroups were one 8-warp partition running one instruction stream, so their
softmaxes ran at the same time and the tensor cores idled while both did exp2 (Nsight Compute: issue slots a third
busy, 8.9 cycles per issued instruction). r8 gives each warpgroup its own partition (gl.warp_specialize: the default
partition is warpgroup 0, a 4-warp worker is warpgroup 1, a 1-warp worker is the TMA producer), each owning 64 of
the program's 128 query rows and reading the same K/V ring (its "empty" barriers count two arrivals, one per
warpgroup). The two warpgroups take turns issuing their GEMMs, FA-3's inter-warpgroup ping-pong: a warpgroup waits
for its turn, issues S(j) = Q K(j)^T and O += P(j-1) V(j-1) (async wgmma), then hands the turn to the other, so one
warpgroup's softmax runs while the other's GEMMs occupy the tensor cores. FA-3 orders the turns with named barriers
(bar.sync id, 256); Gluon on Triton 3.6 exposes no named barrier (only gl.thread_barrier, the whole CTA's), so the
turns are a pair of shared-memory mbarriers, each warpgroup waiting on its own and arriving on the other's (strict
alternation: an mbarrier cannot be two phases ahead of its waiter). Inside a warpgroup, FA-3's intra-warpgroup
overlap: PV(j-1) stays in flight under softmax(j) (retired by warpgroup_mma_wait(0) before O is rescaled). QK^T
takes both operands from shared memory (Q's 64-row slice and K, by TMA), PV takes P from registers (the wgmma RS
form). The softmax folds the scale into exp2's argument on raw scores (one FMA per score: p = 2^(s*c - m*c)). Tiles
are 128 x 128 (two stages, or three where shared memory allows); the causal split as r4-r7 (unmasked tiles below the
diagonal, the diagonal tile masked, nothing above it). Not done: a persistent scheduler, FA-3's FP8 path, and FA-3's
176-key tiles for the full mask (a Gluon tensor's dimensions are powers of two, as gl.arange's are, and the causal
split needs BLOCK_N to divide BLOCK_M; 256 keys would need S, P and O in ~256 registers a thread, over the 240
given). Masks, GQA, D 64/128, bf16/fp16, O and the LSE as r6-r7; Triton's interpreter cannot run Gluon, so on the
CPU r8 is checked by its sm_90a compile, on the GPU against the fp32 reference after its child-process preflight.

Predicted effect: bf16 tensor-core efficiency 0.58-0.90 (mid 0.74) of the measured GEMM peak on executed FLOPs (the
registry's unit: the session's cuBLAS 8192^3 bf16 GEMM; the planning ceiling is 780 TF/s on the H200). Written
2026-12-04 before any run of r8. At the planning ceiling r7 ran at 0.65 / 0.59 (full / causal) in its first session
(2.164 / 1.229 ms), cuDNN's Hopper kernel (warp-specialised) at 0.87 / 0.78 (1.619 / 0.927 ms) and the
FLASH_ATTENTION backend at 0.44 / 0.43 (3.204 / 1.683 ms), all at the target shape. Nsight Compute says r7 is not
memory-bound (DRAM = Q + K + V once) and issues a third of the time; what remains is work in series: r7's two
warpgroups run one instruction stream, so both do softmax(j) at the same time, with only the QK^T(j+1) and PV(j-1)
issued before it to keep the tensor cores busy. Per 128 x 128 tile one warpgroup's two GEMMs are 2 x 2 x 64 x 128 x
128 = 4.2 MFLOP, ~1,020 cycles at the SM's 4,096 dense bf16 FLOP per cycle (989 TF/s over 132 SMs at 1.83 GHz); its
softmax is 8,192 exp2 at the SM's 16 per cycle (~510 cycles) plus the FMAs, row max and row sum: half or more of
that. In step, the two warpgroups' softmaxes coincide and the tensor cores wait through them; in turns, one's
softmax hides under the other's GEMMs. FA-3's paper (Shah et al. 2024, section 3.1) reports ping-pong alone taking
its D=128 forward from ~570 to 620-640 TF/s on the H100 (1.09-1.12x). The mid takes 1.14x r7's measured full-mask
speed (ping-pong's 1.12x and a little from the softmax's one FMA per score): 0.65 x 1.14 = 0.74, about 40% of r7's
gap to cuDNN; the registry states one range per rung, and the same 0.74 for causal (1.25x r7's 0.59) assumes its
diagonal tile costs r8 no more than it cost r7, which may be optimistic. Range: 0.58 (no gain over r7 at either
mask: the turns serialise as much as they hide) to 0.90 (a little past cuDNN's full-mask speed). At the target shape
(B=4 H=32 N=4096 D=128 bf16), at the planning ceiling: 1.905 ms full, 0.982 ms causal at the mid (band 0.822-1.276
of it). Against the first r7 session's backends: 1.68x / 1.71x FLASH_ATTENTION (the 1.5x target, 2.136 / 1.122 ms,
met at the mid and at any efficiency above 0.66 / 0.65), and 0.850x / 0.944x cuDNN: the 0.85x target (1.904 / 1.090
ms) sits exactly on the mid for the full mask (met or missed within noise) and is met causal (with 10% to spare).

Measured outcome: H200, live session of 2026-12-04 18:47 (results/h200/live-runs/20261204T184728Z.r8.*, with r6 and r7
timed in the same session and both targets judged): correct on its first run (the child-process preflight and the
float64 reference), 1.679 / 0.976 ms full / causal bf16 at the target shape (1.753 / 1.009 fp16, 4.4% / 3.4% slower),
0.890 / 1.003x the mid at the session's ceilings (0.882 / 0.994x the 1.905 / 0.982 ms above), inside the 0.822-1.276
band: 0.83 / 0.74 of the session's GEMM ceiling on executed FLOPs, the full mask near the range's top (655 TF/s), causal
at the mid. 1.86x / 1.72x torch's FLASH_ATTENTION backend and 0.964x / 0.948x cuDNN in the same calls: issue 22's
targets met, full and causal (the finding h200-fa2-without-warp-specialization is retired on the H200, kept for the
H100, where r8 has not run); 1.28x / 1.27x r7's speed and 1.45x / 1.25x r6's, each timed in the same session.
A second session (2026-12-04 20:23, results/h200/live-runs/20261204T202249Z.r8again.*): 1.662 / 0.971 ms, 1.87x /
1.73x FLASH_ATTENTION and 0.963x / 0.938x cuDNN, both targets met again. Nsight Compute at the target shape (2026-12-04
20:24, results/h200/flashattn/ncu.fa2.r8-pingpong.*@20261204T202449Z): every pre-registered counter band held: DRAM
reads Q + K + V once (1.00x), writes 0.94 / 0.95x O + LSE, L2 bytes 0.84 / 1.09x the tiled count (~0.85 / ~1.09
expected), one 12-warp program per SM (theoretical occupancy 18.75%, 168 registers); SM throughput 69 / 62% and issue
slots 36 / 34% busy against r7's 52 / 48% and 33 / 32%, 8.1 / 8.4 warp cycles per issued instruction (r7: 8.9 / 9.0):
the tensor cores busier at about the same issue rate, which is what the turns should show, though no counter isolates
the softmax's overlap. N sweep (2026-12-04 20:25, results/h200/live-runs/20261204T202500Z.r8sweep.*; BLOCK_N=128 at
every shape): inside the band at N=1024 full, N=2048-16k and GQA 4096; N=512 (1.50 / 2.07x full / causal), N=1024
causal (1.55x) and N=512 D=64 (2.26 / 3.19x) above it, each where the sweep's header wrote it before the run (finding
h200-r8-one-program-per-sm-pays-its-fixed-part); 32k D=128 under the DRAM-priced 1.000 edge, causal where written
(0.918 / 0.911x MHA / GQA; h200-r8-32k-under-the-dram-priced-edge), full slower than written (0.898 / 0.902x against
0.85: its first calls ran at 0.81, then stepped down as cuDNN's do; h200-r8-32k-full-slows-as-cudnn-does); 32k D=64
above the 1.0-1.3 written (1.35 / 1.38x: at D=64 the softmax no longer fits under the other warpgroup's GEMMs;
h200-r8-head-dim-64-softmax-not-hidden).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait


def _set_blocks(nargs: Mapping[str, Any]) -> None:
    bm, bn = nargs["BLOCK_M"], nargs["BLOCK_N"]
    nargs["desc_q"].block_shape = [bm, nargs["D"]]
    nargs["desc_k"].block_shape = [bn, nargs["D"]]
    nargs["desc_v"].block_shape = [bn, nargs["D"]]


WARPGROUP_WARPS = 4  # one consumer warpgroup: the default partition (num_warps) and the second consumer worker
WORKER_WARPS = gl.constexpr(WARPGROUP_WARPS)
FIRST, SECOND = gl.constexpr(0), gl.constexpr(1)  # the consumer warpgroups' ids (WG): the first takes turn 0
PRODUCER_REGS = gl.constexpr(24)  # the fewest a warp may be given: it only issues TMA copies and waits on barriers
CONSUMER_REGS = gl.constexpr(240)  # the second consumer warpgroup's registers (the default one gets what is left)
MAXNREG = 168  # 12 warps (4 + 4 + 1 padded to a warpgroup) of 32 threads at 168 = 64,512 of 65,536 registers
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "STAGES": 2}, num_warps=WARPGROUP_WARPS, num_stages=1,
                  maxnreg=MAXNREG, pre_hook=_set_blocks),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "STAGES": 3}, num_warps=WARPGROUP_WARPS, num_stages=1,
                  maxnreg=MAXNREG, pre_hook=_set_blocks),
]
INTERPRETER_CONFIG = None  # Gluon kernels do not run in Triton's interpreter (registry.NOT_INTERPRETED)


@gluon.jit
def _producer(desc_q, desc_k, desc_v, q_smem, k_bufs, v_bufs, q_bar, k_ready, v_ready, k_empty, v_empty,
              q_row, kv_row0, hi, BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """One warp: Q once, then K and V of every tile, each into the next ring slot both warpgroups have released."""
    mbarrier.expect(q_bar, desc_q.block_type.nbytes)
    tma.async_copy_global_to_shared(desc_q, [q_row, 0], q_bar, q_smem)
    for start_n in range(0, hi, BLOCK_N):
        it = start_n // BLOCK_N
        stage = it % STAGES
        free = ((it // STAGES) & 1) ^ 1  # a fresh mbarrier counts as having completed the phase before phase 0
        mbarrier.wait(k_empty.index(stage), free)
        mbarrier.expect(k_ready.index(stage), desc_k.block_type.nbytes)
        tma.async_copy_global_to_shared(desc_k, [kv_row0 + start_n, 0], k_ready.index(stage), k_bufs.index(stage))
        mbarrier.wait(v_empty.index(stage), free)
        mbarrier.expect(v_ready.index(stage), desc_v.block_type.nbytes)
        tma.async_copy_global_to_shared(desc_v, [kv_row0 + start_n, 0], v_ready.index(stage), v_bufs.index(stage))


@gluon.jit
def _softmax(s, m_i, l_i, offs_m, offs_n, start_n, N, qk_scale, MASKED: gl.constexpr, CAUSAL: gl.constexpr):
    """Online softmax of one tile on raw scores (the scale folded into exp2's FMA): P, the rescale of O, m, l."""
    if MASKED:
        cols = start_n + offs_n
        visible = gl.expand_dims(cols, 0) < N
        if CAUSAL:
            visible = visible & (gl.expand_dims(cols, 0) <= gl.expand_dims(offs_m, 1))
        s = gl.where(visible, s, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1))
    alpha = gl.exp2((m_i - m_new) * qk_scale)
    p = gl.exp2(s * qk_scale - gl.expand_dims(m_new * qk_scale, 1))
    l_i = l_i * alpha + gl.sum(p, 1)
    return p, alpha, m_new, l_i


@gluon.jit
def _step(p, o, m_i, l_i, q_wg, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, mine, other, start_n, offs_m,
          offs_n, N, qk_scale, WG: gl.constexpr, MASKED: gl.constexpr, CAUSAL: gl.constexpr,
          ROWS: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, S_LAYOUT: gl.constexpr,
          P_LAYOUT: gl.constexpr, O_ROW: gl.constexpr):
    """Tile j = start_n / BLOCK_N (j >= 1), entered with P(j-1): on this warpgroup's turn issue S(j) and PV(j-1),
    hand the turn over, softmax(j) under PV(j-1) (and under the other warpgroup's GEMMs), then rescale O."""
    it = start_n // BLOCK_N
    stage = it % STAGES
    prev = (it - 1) % STAGES
    mbarrier.wait(k_ready.index(stage), (it // STAGES) & 1)
    mbarrier.wait(v_ready.index(prev), ((it - 1) // STAGES) & 1)
    mbarrier.wait(mine, (it + 1 - WG) & 1)  # turn `it`: warpgroup 0 goes first
    s = warpgroup_mma(q_wg, k_bufs.index(stage).permute((1, 0)), gl.zeros([ROWS, BLOCK_N], gl.float32, S_LAYOUT),
                      use_acc=False, is_async=True)
    acc = warpgroup_mma(p, v_bufs.index(prev), o, is_async=True)
    mbarrier.arrive(other, count=1)
    s = warpgroup_mma_wait(1, deps=(s,))  # S(j) was issued first: it retires while PV(j-1) may still run
    mbarrier.arrive(k_empty.index(stage), count=1)
    p_new, alpha, m_i, l_i = _softmax(s, m_i, l_i, offs_m, offs_n, start_n, N, qk_scale, MASKED, CAUSAL)
    o = warpgroup_mma_wait(0, deps=(acc,))
    mbarrier.arrive(v_empty.index(prev), count=1)
    o = o * gl.expand_dims(gl.convert_layout(alpha, O_ROW), 1)
    return gl.convert_layout(p_new.to(q_wg.dtype), P_LAYOUT), o, m_i, l_i


@gluon.jit
def _consumer(q_smem, k_bufs, v_bufs, q_bar, k_ready, v_ready, k_empty, v_empty, turns, O, LSE, o_base, lse_base,
              son, start_m, lo, hi, N, sm_scale, WG: gl.constexpr, D: gl.constexpr, CAUSAL: gl.constexpr,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """One warpgroup: rows [WG * BLOCK_M/2, (WG + 1) * BLOCK_M/2) of the program's query tile."""
    NW: gl.constexpr = gl.num_warps()
    ROWS: gl.constexpr = BLOCK_M // 2
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NW, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NW, 1],
                                                       instr_shape=[16, D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    s_row: gl.constexpr = gl.SliceLayout(1, s_layout)
    o_row: gl.constexpr = gl.SliceLayout(1, o_layout)
    row0 = start_m * BLOCK_M + WG * ROWS
    offs_m = row0 + gl.arange(0, ROWS, layout=s_row)
    offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    qk_scale = sm_scale * 1.4426950408889634
    q_wg = q_smem.slice(WG * ROWS, ROWS, dim=0)
    mine = turns.index(WG)
    other = turns.index(1 - WG)
    m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=s_row)
    l_i = gl.zeros([ROWS], gl.float32, layout=s_row)
    # tile 0: S(0) on turn 0, its softmax with no PV in flight yet
    mbarrier.wait(q_bar, 0)
    mbarrier.wait(k_ready.index(0), 0)
    mbarrier.wait(mine, (1 - WG) & 1)
    s = warpgroup_mma(q_wg, k_bufs.index(0).permute((1, 0)), gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout),
                      use_acc=False, is_async=True)
    mbarrier.arrive(other, count=1)
    s = warpgroup_mma_wait(0, deps=(s,))
    mbarrier.arrive(k_empty.index(0), count=1)
    if lo == 0:  # the first tile is the diagonal's (causal) or the only one (full, N <= BLOCK_N)
        p, alpha, m_i, l_i = _softmax(s, m_i, l_i, offs_m, offs_n, 0, N, qk_scale, True, CAUSAL)
    else:
        p, alpha, m_i, l_i = _softmax(s, m_i, l_i, offs_m, offs_n, 0, N, qk_scale, False, CAUSAL)
    p = gl.convert_layout(p.to(q_smem.dtype), p_layout)
    o = gl.zeros([ROWS, D], gl.float32, o_layout)
    for start_n in range(BLOCK_N, lo, BLOCK_N):
        p, o, m_i, l_i = _step(p, o, m_i, l_i, q_wg, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, mine, other,
                               start_n, offs_m, offs_n, N, qk_scale, WG, False, CAUSAL, ROWS, BLOCK_N, STAGES, s_layout,
                               p_layout, o_row)
    for start_n in range(gl.maximum(lo, BLOCK_N), hi, BLOCK_N):
        p, o, m_i, l_i = _step(p, o, m_i, l_i, q_wg, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, mine, other,
                               start_n, offs_m, offs_n, N, qk_scale, WG, True, CAUSAL, ROWS, BLOCK_N, STAGES, s_layout,
                               p_layout, o_row)
    # the last tile's PV, on the last turn
    last = (hi - 1) // BLOCK_N
    mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
    mbarrier.wait(mine, (last + 2 - WG) & 1)
    acc = warpgroup_mma(p, v_bufs.index(last % STAGES), o, is_async=True)
    mbarrier.arrive(other, count=1)
    o = warpgroup_mma_wait(0, deps=(acc,))
    o = o / gl.expand_dims(gl.convert_layout(l_i, o_row), 1)
    rows = row0 + gl.arange(0, ROWS, layout=o_row)
    offs_d = gl.arange(0, D, layout=gl.SliceLayout(0, o_layout))
    ptrs = O + o_base + gl.expand_dims(rows, 1) * son + gl.expand_dims(offs_d, 0)
    gl.store(ptrs, o.to(O.dtype.element_ty), mask=gl.expand_dims(rows < N, 1))
    lse = (m_i * qk_scale + gl.log2(l_i)) * 0.6931471805599453
    gl.store(LSE + lse_base + offs_m, lse, mask=offs_m < N)


@gluon.jit
def pingpong_fwd(desc_q, desc_k, desc_v, O, LSE, sob, soh, son, H, GROUP, N, sm_scale,
                 D: gl.constexpr, CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                 STAGES: gl.constexpr):
    start_m = gl.program_id(0)
    bh = gl.program_id(1)
    b = bh // H
    h = bh % H
    kv_row0 = (b * (H // GROUP) + h // GROUP) * N
    q_smem = gl.allocate_shared_memory(desc_q.dtype, [BLOCK_M, D], desc_q.layout)
    k_bufs = gl.allocate_shared_memory(desc_k.dtype, [STAGES, BLOCK_N, D], desc_k.layout)
    v_bufs = gl.allocate_shared_memory(desc_v.dtype, [STAGES, BLOCK_N, D], desc_v.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turns = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)  # a slot is free once both warpgroups are done with it
        mbarrier.init(v_empty.index(i), count=2)
    for i in gl.static_range(2):
        mbarrier.init(turns.index(i), count=1)
    if CAUSAL:
        lo = start_m * BLOCK_M
        hi = gl.minimum(lo + BLOCK_M, N)
    else:
        lo = ((N - 1) // BLOCK_N) * BLOCK_N  # the last tile, masked for a ragged N
        hi = N
    o_base = b * sob + h * soh
    gl.warp_specialize([
        (_consumer, (q_smem, k_bufs, v_bufs, q_bar, k_ready, v_ready, k_empty, v_empty, turns, O, LSE, o_base,
                     bh * N, son, start_m, lo, hi, N, sm_scale, FIRST, D, CAUSAL, BLOCK_M, BLOCK_N, STAGES)),
        (_consumer, (q_smem, k_bufs, v_bufs, q_bar, k_ready, v_ready, k_empty, v_empty, turns, O, LSE, o_base,
                     bh * N, son, start_m, lo, hi, N, sm_scale, SECOND, D, CAUSAL, BLOCK_M, BLOCK_N, STAGES)),
        (_producer, (desc_q, desc_k, desc_v, q_smem, k_bufs, v_bufs, q_bar, k_ready, v_ready, k_empty, v_empty,
                     bh * N + start_m * BLOCK_M, kv_row0, hi, BLOCK_N, STAGES)),
    ], [WORKER_WARPS, 1], [CONSUMER_REGS, PRODUCER_REGS])


def descriptor_layout(block: list[int], dtype: Any) -> Any:
    """The shared-memory layout of a [rows, D] tile (the widest swizzle the row allows)."""
    return gl.NVMMASharedLayout.get_default_for(block, dtype)


def launch(q: Any, k: Any, v: Any, o: Any, lse: Any, *, causal: bool, sm_scale: float,
           config: Mapping[str, int] | None, dims: tuple[int, int, int, int, int],
           workspace: Any = None) -> dict[str, Any]:
    import os

    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from pytest_anatomy.kernels.flashattn.launch import BadAttentionInput, autotuned, chosen
    from pytest_anatomy.kernels.flashattn.registry import NOT_INTERPRETED

    if os.environ.get("TRITON_INTERPRET") == "1" or not q.is_cuda:
        raise BadAttentionInput(NOT_INTERPRETED)
    b, h, hkv, n, d = dims
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not t.is_contiguous():
            raise BadAttentionInput(f"the TMA rung needs contiguous {name} (a 2-D [rows, D] view); call .contiguous()")
    gdt = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16}.get(q.dtype)
    if gdt is None:
        raise BadAttentionInput(f"the Gluon rung takes bf16 or fp16 (wgmma on 16-bit inputs), got {q.dtype}")
    bm, bn = (config["BLOCK_M"], config["BLOCK_N"]) if config is not None else (128, 128)  # the hook resets them
    desc_q = TensorDescriptor.from_tensor(q.view(b * h * n, d), [bm, d], descriptor_layout([bm, d], gdt))
    desc_k = TensorDescriptor.from_tensor(k.view(b * hkv * n, d), [bn, d], descriptor_layout([bn, d], gdt))
    desc_v = TensorDescriptor.from_tensor(v.view(b * hkv * n, d), [bn, d], descriptor_layout([bn, d], gdt))
    args = (desc_q, desc_k, desc_v, o, lse, o.stride(0), o.stride(1), o.stride(2), h, h // hkv, n, sm_scale)
    if config is not None:
        pingpong_fwd[(triton.cdiv(n, bm), b * h)](*args, D=d, CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn,
                                                  STAGES=config.get("STAGES", 2),
                                                  num_warps=config.get("num_warps", WARPGROUP_WARPS),
                                                  maxnreg=config.get("maxnreg", MAXNREG))
        return dict(config)
    tuned = autotuned("r8-pingpong", pingpong_fwd, CONFIGS, key=["N", "D", "CAUSAL", "GROUP"])
    tuned[lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), b * h)](*args, D=d, CAUSAL=causal)
    return chosen(tuned)
