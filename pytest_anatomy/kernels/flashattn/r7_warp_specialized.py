"""Warp specialisation in Gluon: a TMA producer warp and consumer warpgroups (exp2, the causal split, TMA kept).

What changes: the kernel is written in Triton 3.6's experimental Gluon dialect (triton.experimental.gluon, explicit
layouts, shared memory and barriers) instead of triton.language, so that it can be warp-specialised on Hopper:
gl.warp_specialize splits each program into a producer partition (one warp, 24 registers) that issues the TMA copies
of Q and of every K and V tile into a ring of STAGES shared-memory slots, each slot guarded by mbarriers (K and V
"ready" on the copy's byte count, "empty" when the consumers are done with it), and a consumer partition of two
warpgroups (8 warps, 64 query rows each, the registers the producer gave up) that issues the wgmma instructions and
runs the online softmax. The consumers also overlap inside a warpgroup, FA-3's intra-warpgroup pipelining: QK^T of
tile j+1 and PV of tile j-1 are in flight on the tensor cores (async wgmma, warpgroup_mma_wait(1)) while the softmax
of tile j runs, so neither the loads nor (most of) the softmax wait in line with the MMAs. Triton 3.6's own
`tl.range(warp_specialize=True)` is Blackwell-only (registry.py); Gluon's gl.warp_specialize is not gated on the
architecture and lowers for sm_90a (aot.py compiles it on the CPU). Not done: the inter-warpgroup ping-pong (named
barriers ordering one warpgroup's softmax against the other's GEMMs), a persistent tile scheduler, and the FP8 path
of FA-3. Masks, GQA, D 64/128, bf16/fp16, O and the LSE as r6; Triton's interpreter cannot run Gluon kernels, so
the CPU checks of this rung are its sm_90a compile only, and its correctness is checked on the GPU.

Predicted effect: bf16 tensor-core efficiency 0.55-0.88 (mid 0.71) of the measured GEMM peak on executed FLOPs
(the registry's unit: the session's cuBLAS 8192^3 bf16 GEMM, ~780 TF/s on the H200, not the 989 TF/s datasheet
peak, against which r6's 467 TF/s is 0.47). In that unit r6 ran at 0.55-0.65 (median 0.58 full, 0.59 causal) over
its 33 recorded H200 sessions of the target shape, and cuDNN's Hopper kernel, warp-specialised, at 1.47x / 1.30x r6's
speed (medians, full / causal): ~0.85 / ~0.76, so the MMAs leave room up to about 0.85. What warp specialisation
removes from r6 is the part of each tile's softmax that the two MMAs waited for, and the loads' issue: in r6 both
warpgroups load, multiply and do the softmax in line (7.4 / 5.3 cycles of stall per issued instruction, SM throughput
46-47%); here the loads leave the consumers and QK^T(j+1) and PV(j-1) run under softmax(j). What r7 does not do
(ping-pong between the warpgroups, so their softmaxes may still coincide; hand-tuned register split; a persistent
schedule) and Gluon's first lowering of it leave part of that exposed, so the mid assumes half of r6's gap to cuDNN's
0.85 closed: 0.58 + (0.85 - 0.58) / 2 = 0.71, 1.22x r6's median speed. Range: 0.55 (no gain: r6's slowest sessions)
to 0.88 (cuDNN's full-mask speed and a little past it). At the target shape (B=4 H=32 N=4096 D=128 bf16), at the
first H200 session's 780 TF/s: 1.99 ms full, 1.02 ms causal at the mid; the 1.5x-FLASH_ATTENTION target (~2.27 / 1.13
ms in the NVML-spec session) is met at the mid, the 0.85x-cuDNN target (~1.94 / 1.08 ms) met causal and missed full
by ~3%.

Measured outcome: H200, live session of 2026-12-04 14:57 (results/h200/live-runs/20261204T145709Z.r7.*): correct on its
first run (the child-process preflight and the float64 reference), 2.164 / 1.229 ms full / causal bf16 at the target
shape (2.154 / 1.225 fp16), 1.09x / 1.20x the mid prediction, inside its 0.807-1.291 band; 1.48x / 1.37x torch's
FLASH_ATTENTION backend and 0.75x / 0.75x cuDNN in the same session: no faster than r6's best runs, both targets
missed (finding h200-fa2-without-warp-specialization). Nsight Compute at the target shape (2026-12-04 16:38,
results/h200/flashattn/ncu.fa2.r7-warp-specialized.*@20261204T163848Z): every pre-registered counter band held: DRAM
reads 0.403 GB full and causal (Q + K + V once, 1.00x), writes 0.94 / 0.95x O + LSE, L2 bytes 0.85 / 1.09x the tiled
count (bands 0.45-0.9 / 0.85-1.2), one 12-warp program per SM (theoretical occupancy 18.75%, 168 registers); SM
throughput 52 / 48%, issue slots 33 / 32% busy, 8.9 / 9.0 warp cycles per issued instruction (r6: 7.4 / 5.3): not
memory-bound, and not issuing more than r6. N sweep (live session 2026-12-04 16:39, results/h200/live-runs/
20261204T163916Z.r7sweep.*; every config BLOCK_M=128 BLOCK_N=128, 2 stages): 1.08-1.23x the mid at N >= 4096 D=128
and GQA, inside the band; outside it at N=512 (1.72 / 2.20x full / causal), N=1024 (1.41 / 1.71x), N=2048 causal
(1.40x), and at D=64 (N=512: 2.46 / 3.17x; N=32k: 1.53 / 1.51x), slower than r6 at each of those shapes. Short
sequences: one program per SM pays its fixed part (Q load, ring fill, the unoverlapped first QK^T and last PV, the
epilogue) in series, 4.9-7.9 us per program as r6's one-program-per-SM sessions measure it (finding
h200-r7-one-program-per-sm-pays-its-fixed-part); D=64: cause not established (h200-r7-head-dim-64-slower-cause-unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_init
from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma_wait


def _set_blocks(nargs: Mapping[str, Any]) -> None:
    bm, bn = nargs["BLOCK_M"], nargs["BLOCK_N"]
    nargs["desc_q"].block_shape = [bm, nargs["D"]]
    nargs["desc_k"].block_shape = [bn, nargs["D"]]
    nargs["desc_v"].block_shape = [bn, nargs["D"]]


CONSUMER_WARPS = 8  # two warpgroups of 64 query rows each; the producer is one more warp (a warpgroup's registers)
PRODUCER_REGS = gl.constexpr(24)  # the fewest a warp may be given: it only issues TMA copies and waits on barriers
MAXNREG = 168  # 12 warps of 32 threads at 168 = 64,512 of 65,536 registers; the consumers get ~240 each
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "STAGES": 2}, num_warps=CONSUMER_WARPS, num_stages=1,
                  maxnreg=MAXNREG, pre_hook=_set_blocks),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "STAGES": 3}, num_warps=CONSUMER_WARPS, num_stages=1,
                  maxnreg=MAXNREG, pre_hook=_set_blocks),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "STAGES": 2}, num_warps=CONSUMER_WARPS, num_stages=1,
                  maxnreg=MAXNREG, pre_hook=_set_blocks),
]
INTERPRETER_CONFIG = None  # Gluon kernels do not run in Triton's interpreter (registry.NOT_INTERPRETED)


@gluon.jit
def _producer(desc_q, desc_k, desc_v, q_smem, k_bufs, v_bufs, q_bar, k_ready, v_ready, k_empty, v_empty,
              q_row, kv_row0, hi, BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """One warp: Q once, then K and V of every tile the consumers visit, each into the next free ring slot."""
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
def _tile(s, acc, m_i, l_i, q_smem, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, start_n, offs_m, offs_n,
          N, qk_scale, MASKED: gl.constexpr, CAUSAL: gl.constexpr, ISSUE_NEXT: gl.constexpr,
          BLOCK_N: gl.constexpr, STAGES: gl.constexpr, P_LAYOUT: gl.constexpr, O_ROW: gl.constexpr):
    """Tile j = start_n / BLOCK_N, entered with S_j in registers and PV(j-1) possibly still in flight (acc is its
    token): issue QK^T(j+1), do softmax(j) under it, retire PV(j-1), issue PV(j), retire QK^T(j+1)."""
    it = start_n // BLOCK_N
    if ISSUE_NEXT:
        nxt = (it + 1) % STAGES
        mbarrier.wait(k_ready.index(nxt), ((it + 1) // STAGES) & 1)
        s_next = warpgroup_mma(q_smem, k_bufs.index(nxt).permute((1, 0)), gl.zeros_like(s), use_acc=False,
                               is_async=True)
    s = s * qk_scale
    if MASKED:
        cols = start_n + offs_n
        visible = gl.expand_dims(cols, 0) < N
        if CAUSAL:
            visible = visible & (gl.expand_dims(cols, 0) <= gl.expand_dims(offs_m, 1))
        s = gl.where(visible, s, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1))
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(s - gl.expand_dims(m_new, 1))
    l_i = l_i * alpha + gl.sum(p, 1)
    # PV(j-1) was issued before QK^T(j+1): waiting until at most one group is outstanding retires it alone
    o = warpgroup_mma_wait(1 if ISSUE_NEXT else 0, deps=(acc,))
    prev = (it + STAGES - 1) % STAGES
    mbarrier.arrive(v_empty.index(prev), count=1, pred=it > 0)
    o = o * gl.expand_dims(gl.convert_layout(alpha, O_ROW), 1)
    stage = it % STAGES
    mbarrier.wait(v_ready.index(stage), (it // STAGES) & 1)
    p_op = gl.convert_layout(p.to(q_smem.dtype), P_LAYOUT)
    acc = warpgroup_mma(p_op, v_bufs.index(stage), o, is_async=True)
    if ISSUE_NEXT:
        s = warpgroup_mma_wait(1, deps=(s_next,))  # QK^T(j+1) done; PV(j) keeps running into the next tile
        mbarrier.arrive(k_empty.index(nxt), count=1)
    return s, acc, m_new, l_i


@gluon.jit
def _consumer(q_smem, k_bufs, v_bufs, q_bar, k_ready, v_ready, k_empty, v_empty, O, LSE, o_base, lse_base, son,
              start_m, lo, hi, N, sm_scale, D: gl.constexpr, CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr,
              BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    NW: gl.constexpr = gl.num_warps()
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NW, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NW, 1],
                                                       instr_shape=[16, D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    s_row: gl.constexpr = gl.SliceLayout(1, s_layout)
    o_row: gl.constexpr = gl.SliceLayout(1, o_layout)
    offs_m = start_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=s_row)
    offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    qk_scale = sm_scale * 1.4426950408889634
    m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=s_row)
    l_i = gl.zeros([BLOCK_M], gl.float32, layout=s_row)
    acc = warpgroup_mma_init(gl.zeros([BLOCK_M, D], gl.float32, layout=o_layout))
    mbarrier.wait(q_bar, 0)
    mbarrier.wait(k_ready.index(0), 0)
    s = warpgroup_mma(q_smem, k_bufs.index(0).permute((1, 0)), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout),
                      use_acc=False, is_async=True)
    s = warpgroup_mma_wait(0, deps=(s,))
    mbarrier.arrive(k_empty.index(0), count=1)
    # the masked range [lo, hi) is never empty (lo is the diagonal's first tile, or the last tile when full), so
    # every unmasked tile has a next one; the masked range's last tile issues nothing after it
    last = lo + ((hi - lo - 1) // BLOCK_N) * BLOCK_N
    for start_n in range(0, lo, BLOCK_N):
        s, acc, m_i, l_i = _tile(s, acc, m_i, l_i, q_smem, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty,
                                 start_n, offs_m, offs_n, N, qk_scale, False, CAUSAL, True, BLOCK_N, STAGES,
                                 p_layout, o_row)
    for start_n in range(lo, last, BLOCK_N):
        s, acc, m_i, l_i = _tile(s, acc, m_i, l_i, q_smem, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty,
                                 start_n, offs_m, offs_n, N, qk_scale, True, CAUSAL, True, BLOCK_N, STAGES,
                                 p_layout, o_row)
    s, acc, m_i, l_i = _tile(s, acc, m_i, l_i, q_smem, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty,
                             last, offs_m, offs_n, N, qk_scale, True, CAUSAL, False, BLOCK_N, STAGES, p_layout, o_row)
    o = warpgroup_mma_wait(0, deps=(acc,))
    o = o / gl.expand_dims(gl.convert_layout(l_i, o_row), 1)
    rows = start_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=o_row)
    offs_d = gl.arange(0, D, layout=gl.SliceLayout(0, o_layout))
    ptrs = O + o_base + gl.expand_dims(rows, 1) * son + gl.expand_dims(offs_d, 0)
    gl.store(ptrs, o.to(O.dtype.element_ty), mask=gl.expand_dims(rows < N, 1))
    lse = (m_i + gl.log2(l_i)) * 0.6931471805599453
    gl.store(LSE + lse_base + offs_m, lse, mask=offs_m < N)


@gluon.jit
def ws_fwd(desc_q, desc_k, desc_v, O, LSE, sob, soh, son, H, GROUP, N, sm_scale,
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
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=1)
        mbarrier.init(v_empty.index(i), count=1)
    if CAUSAL:
        lo = start_m * BLOCK_M
        hi = gl.minimum(lo + BLOCK_M, N)
    else:
        lo = ((N - 1) // BLOCK_N) * BLOCK_N  # the last tile, masked for a ragged N
        hi = N
    gl.warp_specialize([
        (_consumer, (q_smem, k_bufs, v_bufs, q_bar, k_ready, v_ready, k_empty, v_empty, O, LSE,
                     b * sob + h * soh, bh * N, son, start_m, lo, hi, N, sm_scale, D, CAUSAL, BLOCK_M, BLOCK_N,
                     STAGES)),
        (_producer, (desc_q, desc_k, desc_v, q_smem, k_bufs, v_bufs, q_bar, k_ready, v_ready, k_empty, v_empty,
                     bh * N + start_m * BLOCK_M, kv_row0, hi, BLOCK_N, STAGES)),
    ], [1], [PRODUCER_REGS])


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
    bm, bn = (config["BLOCK_M"], config["BLOCK_N"]) if config is not None else (128, 64)  # the hook resets them
    desc_q = TensorDescriptor.from_tensor(q.view(b * h * n, d), [bm, d], descriptor_layout([bm, d], gdt))
    desc_k = TensorDescriptor.from_tensor(k.view(b * hkv * n, d), [bn, d], descriptor_layout([bn, d], gdt))
    desc_v = TensorDescriptor.from_tensor(v.view(b * hkv * n, d), [bn, d], descriptor_layout([bn, d], gdt))
    args = (desc_q, desc_k, desc_v, o, lse, o.stride(0), o.stride(1), o.stride(2), h, h // hkv, n, sm_scale)
    if config is not None:
        ws_fwd[(triton.cdiv(n, bm), b * h)](*args, D=d, CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn,
                                            STAGES=config.get("STAGES", 2),
                                            num_warps=config.get("num_warps", CONSUMER_WARPS),
                                            maxnreg=config.get("maxnreg", MAXNREG))
        return dict(config)
    tuned = autotuned("r7-warp-specialized", ws_fwd, CONFIGS, key=["N", "D", "CAUSAL", "GROUP"])
    tuned[lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), b * h)](*args, D=d, CAUSAL=causal)
    return chosen(tuned)
