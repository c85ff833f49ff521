"""The SGEMM ladder: rung 0 is cuBLAS fp32 (TF32 off), rungs s1-s7, s9, s13 and s15-s18 hand-written fp32 (s18: small-M
split-K, kernels/small_m.py), s8, s10-s12 and s14 bf16 tensor cores against cuBLAS bf16 (s12: wgmma, s14: TMA +
warp-specialised wgmma, sm_90a). C = A @ B, row-major, M x K times K x N (s8: A @ Bt^T)."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_anatomy.kernels import autotune as at
from pytest_anatomy.kernels import small_m
from pytest_anatomy.kernels.registry import (
    DeviceFacts,
    KernelCall,
    Launch,
    TensorMapBox,
    Variant,
    cdiv,
)
from pytest_anatomy.kernels.access import (
    coalesced_access,
    naive_access,
    tensor_core_access,
    tiled_access,
)

ARGS = ("i32:M", "i32:N", "i32:K", "ptr:A", "ptr:B", "ptr:C")
TIMING_SHAPE = {"M": 4096, "N": 4096, "K": 4096}
# Odd sizes: partial tiles in every dimension, K not a multiple of 4 or 8 (scalar paths).
CORRECTNESS_SHAPES = ({"M": 1000, "N": 1000, "K": 1000}, {"M": 4097, "N": 1000, "K": 129},
                      {"M": 129, "N": 4097, "K": 4097})
EXTRA_SHAPES = ({"M": 2048, "N": 18944, "K": 3584}, {"M": 32, "N": 18944, "K": 3584})  # Qwen2.5-7B FFN up
# A rung that refuses K % 8 != 0 (TMA tensor maps, s14) is also checked at the odd shapes with K rounded to a multiple
# of 8 and at the 32-row FFN shape (its tensor maps zero-fill 96 of a tile's 128 rows).
K_ALIGNED_CORRECTNESS_SHAPES = ({"M": 4097, "N": 1000, "K": 136}, {"M": 129, "N": 4097, "K": 4096},
                                {"M": 32, "N": 18944, "K": 3584})
# Rungs whose first launches on a device run in a child process of the kernels plan (scripts/device/kernels_plan.py
# --preflight): a kernel that places its own barriers (mbarrier phases, TMA byte counts) can hang or fault the GPU,
# which would take every later rung's measurement down with the plan's CUDA context.
CHILD_PREFLIGHT = frozenset({"s14-bf16-wgmma-tma", "x8-tma-ring"})  # x8: the softmax ladder's mbarrier ring


def _grid_tiles(src: str, kernel: str, bm: int, bn: int, block: tuple[int, int, int], args: tuple[str, ...] = ARGS):
    def launch(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
        return (KernelCall(src, kernel, Launch((cdiv(s["N"], bn), cdiv(s["M"], bm), 1), block), args),)
    return launch


def _naive(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    return (KernelCall("sgemm/s1_naive.cu", "sgemm_naive", Launch((cdiv(s["M"], 32), cdiv(s["N"], 32), 1), (32, 32, 1)),
                       ARGS),)


# s14: A and Bt reach shared memory through TMA tensor maps (boxes of 128 and 256 rows x 64 bf16, 128-byte swizzle)
S14_SOURCE = "sgemm/s14_bf16_wgmma_tma.cu"
S14_TILE = (128, 256, 64)
S14_STAGES = 4
S14_THREADS = 384  # a producer warpgroup and two consumer warpgroups
# The dynamic window: 4 stages of A and B tiles, 8 mbarriers, 1 KB of slack to start it on a 1,024-byte boundary
# (the .cu's static_assert spells the same number).
S14_SMEM_BYTES = S14_STAGES * (S14_TILE[0] + S14_TILE[1]) * S14_TILE[2] * 2 + 2 * S14_STAGES * 8 + 1024
S14_ARGS = ("i32:M", "i32:N", "i32:K", "tmap:A", "tmap:B", "ptr:C")


def _tma_wgmma(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    bm, bn, bk = S14_TILE
    return (KernelCall(S14_SOURCE, "sgemm_bf16_wgmma_tma",
                       Launch((cdiv(s["N"], bn), cdiv(s["M"], bm), 1), (S14_THREADS, 1, 1), shmem=S14_SMEM_BYTES),
                       S14_ARGS, tensor_maps=(TensorMapBox("A", bm, bk), TensorMapBox("B", bn, bk))),)


# s15 (issue 17): cuBLAS fp32's thread tile and occupancy (8 x 16 outputs per thread, 8 warps per SM) on s9's
# pipeline. Its prediction is the issue ledger (theory/kernel_issue.issue_time) at the pace cuBLAS fp32's own kernel
# was counted to keep in that regime (warp cycles per issued instruction, Nsight Compute run below, never a newer
# one), its compiled FFMA share and its block tile; ms at the 1.98 GHz boost clock, written before any s15 run. A
# CPU test recomputes them from the recording.
S15_SOURCE = "sgemm/s15_fp32_thread_tile_8x16.cu"
S15_PACE_FIT = "s0-cublas"
S15_PACE_NCU_STAMP = "20261202T001813Z"
S15_PREREGISTERED: dict[str, float] = {"4096x4096x4096": 2.683, "2048x18944x3584": 5.281, "32x18944x3584": 0.587}

# s16 (issue 17): s9 with a 32-deep k-tile (s9: 16): half the k-tiles, so half the barrier pairs, cp.async waits and
# copy-loop setups per FMA; the two stages (66,560 bytes) are a dynamic window above the 48 KB static limit. Its
# prediction splits s9's time into an issue part that scales with 1 / FFMA share and a stall part per k-tile, solved
# from s9's kernel at 8- and 16-deep k-tiles in one tuner run (never a newer run) with their compiled shares
# (S9_TILE_SPACE), then priced at s16's compiled share and half the k-tiles. A CPU test recomputes the numbers.
S16_SOURCE = "sgemm/s16_fp32_ktile32.cu"
S16_SMEM_BYTES = 2 * 32 * ((128 + 4) + 128) * 4
S16_FFMA_SHARE = 0.8862  # its compiled K loop on the whole-k-tile, N % 4 == 0 side: 2,048 FFMA of 2,311
S16_TILE_COST_RUN = "20261201T215110Z"
S16_TILE_COST_PAIR = ("s9-tile-128x128x8-b2", "s9-tile-128x128x16-b2")
S16_PREREGISTERED: dict[str, float] = {"4096x4096x4096": 2.958, "2048x18944x3584": 5.825, "32x18944x3584": 0.651}


def _ktile32(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    return (KernelCall(S16_SOURCE, "sgemm_fp32_ktile32",
                       Launch((cdiv(s["N"], 128), cdiv(s["M"], 128), 1), (256, 1, 1), shmem=S16_SMEM_BYTES), ARGS),)


# s17 (issue 17): s16 without the device's spill. NVRTC 13.0.88 (the device's compiler) spilled s16's copy addresses
# at the 128-register cap: 16 per-copy shared-memory offsets, row guards and fallback selects, reloaded from local memory
# in the main loop. s17's main loop copies whole k-tiles without a guard (rows past M and columns past N read a clamped
# in-range row or column whose products are never stored) and puts each copy's offsets in the instruction as
# immediates: one shared base, four A row pointers and one B pointer stay live. Its prediction is s16's method at the
# device's compiled shares: s9's time split as X / share + S x 16 / bk from the same two tuner recordings, with the
# shares NVRTC 13.0.88 compiles for them (nvrtc_facts.TILE_LOOPS), priced at s17's compiled share and depth. A CPU test
# recomputes every number.
S17_SOURCE = "sgemm/s17_fp32_ktile32_lean.cu"
S17_FFMA_SHARE = 0.9176  # its main K loop under NVRTC 13.0.88 (whole k-tiles, N % 4 == 0): 2,048 FFMA of 2,232
S17_PREREGISTERED: dict[str, float] = {"4096x4096x4096": 2.868, "2048x18944x3584": 5.648, "32x18944x3584": 0.631}
# Its alternatives, written with it: (a) the spill goes and s16's pace stays: s9's time in that tuner run x s9's / s17's
# compiled share x s16's / s9's warp cycles per issue at 4096^3 in the profile below; (b) the instructions only,
# X / share + S (the stall part not halved).
S17_PACE_NCU_STAMP = "20261204T203849Z"
S17_ALT_S16_PACE: dict[str, float] = {"4096x4096x4096": 3.085, "2048x18944x3584": 6.033, "32x18944x3584": 0.670}
S17_ALT_INSTRUCTIONS: dict[str, float] = {"4096x4096x4096": 2.920, "2048x18944x3584": 5.703, "32x18944x3584": 0.633}


def _ktile32_lean(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    return (KernelCall(S17_SOURCE, "sgemm_fp32_ktile32_lean",
                       Launch((cdiv(s["N"], 128), cdiv(s["M"], 128), 1), (256, 1, 1), shmem=S16_SMEM_BYTES), ARGS),)


LADDER: tuple[Variant, ...] = (
    Variant("s0-cublas", "cuBLAS fp32 via torch.matmul, TF32 off", None, None,
            "the library baseline every rung is compared with", None, "sgemm", baseline="torch.matmul"),
    Variant("s1-naive", "naive, lanes walk rows (uncoalesced A)", "sgemm/s1_naive.cu", _naive,
            "textbook triple loop, one output per thread", naive_access(), "sgemm",
            h200_ms=(("4096x4096x4096", 260.0),)),
    Variant("s2-coalesced", "lanes walk columns (coalesced B)", "sgemm/s2_coalesced.cu",
            _grid_tiles("sgemm/s2_coalesced.cu", "sgemm_coalesced", 32, 32, (32, 32, 1)),
            "swap the thread-to-output mapping: 33 -> 2 transactions per warp-FMA", coalesced_access(), "sgemm",
            h200_ms=(("4096x4096x4096", 32.0),)),
    Variant("s3-smem-tiling", "32x32 shared-memory tiles", "sgemm/s3_smem_tiling.cu",
            _grid_tiles("sgemm/s3_smem_tiling.cu", "sgemm_smem_tiling", 32, 32, (32, 32, 1)),
            "stage tiles in shared memory: global loads per FMA 2 -> 1/16", tiled_access("s3", 32, 32), "sgemm",
            h200_ms=(("4096x4096x4096", 27.0),)),
    Variant("s4-1d-regtile", "1D register tile (64x64x8, 8 outputs per thread)", "sgemm/s4_1d_regtile.cu",
            _grid_tiles("sgemm/s4_1d_regtile.cu", "sgemm_1d_regtile", 64, 64, (512, 1, 1)),
            "reuse a B value from a register for 8 FMAs", tiled_access("s4", 64, 64, tm=8, tn=1), "sgemm",
            h200_ms=(("4096x4096x4096", 7.7),)),
    Variant("s5-2d-regtile", "2D register tile (128x128x8, 8x8 outputs per thread)", "sgemm/s5_2d_regtile.cu",
            _grid_tiles("sgemm/s5_2d_regtile.cu", "sgemm_2d_regtile", 128, 128, (256, 1, 1)),
            "an 8x8 outer product per k: shared loads per FMA 1.125 -> 0.25", tiled_access("s5", 128, 128, 8, 8),
            "sgemm", h200_ms=(("4096x4096x4096", 3.6),)),
    Variant("s6-vectorized", "s5 with float4 global and shared loads", "sgemm/s6_vectorized.cu",
            _grid_tiles("sgemm/s6_vectorized.cu", "sgemm_vectorized", 128, 128, (256, 1, 1)),
            "128-bit loads: a quarter of the load instructions, same bytes",
            tiled_access("s6", 128, 128, 8, 8, vector=4), "sgemm",
            h200_ms=(("4096x4096x4096", 3.3),)),
    Variant("s7-warptiling", "warp tiling (128x128x16, 64x64 per warp, 8x16 per thread)", "sgemm/s7_warptiling.cu",
            _grid_tiles("sgemm/s7_warptiling.cu", "sgemm_warptiling", 128, 128, (128, 1, 1)),
            "a warp-level tile: mostly-broadcast shared reads, BK=16 halves barriers per FMA",
            tiled_access("s7", 128, 128, 8, 16, vector=4, a_loads_per_k=8, b_loads_per_k=16), "sgemm",
            h200_ms=(("4096x4096x4096", 3.0),)),
    Variant("s9-cp-async-pipeline", "s7's block tile, 8 warps at 2 blocks/SM, cp.async two-stage pipeline, "
            "register double-buffered fragments", "sgemm/s9_cp_async_pipeline.cu",
            _grid_tiles("sgemm/s9_cp_async_pipeline.cu", "sgemm_cp_async_pipeline", 128, 128, (256, 1, 1)),
            "tile t+1 copied global->shared by cp.async while tile t multiplies; 64 accumulators per thread under "
            "128 registers so 16 warps share an SM (s7: 8)",
            tiled_access("s9", 128, 128, 8, 8, vector=4, warps_per_sm=16, ffma_share=0.84), "sgemm",
            notes=("A is copied 4 bytes at a time into its transposed place: 8 LDGSTS.32 + 2 LDGSTS.128 per thread "
                   "per 1,024 FMAs, where the access pattern counts 4 float4 loads (same bytes, more instructions)",),
            h200_ms=(("4096x4096x4096", 2.9), ("2048x18944x3584", 5.6), ("32x18944x3584", 0.62))),
    Variant("s13-fp32-multistage", "s9's warp and thread tiles, cp.async three-stage ring, one barrier per k-tile, "
            "fragments prefetched across k-tiles, A swizzled unpadded (48 KB static)", "sgemm/s13_fp32_multistage.cu",
            _grid_tiles("sgemm/s13_fp32_multistage.cu", "sgemm_fp32_multistage", 128, 128, (256, 1, 1)),
            "tiles t+1 and t+2 in flight while t multiplies (s9: t+1), one barrier per k-tile (s9: two), the first "
            "fragment of tile t+1 loaded during tile t's last FMAs; same 64 accumulators, 16 warps per SM",
            tiled_access("s13", 128, 128, 8, 8, vector=4, warps_per_sm=16, ffma_share=0.8218), "sgemm",
            notes=("A is copied 4 bytes at a time into an XOR-swizzled [k][m] layout (a warp's copies hit 32 banks): "
                   "8 LDGSTS.32 + 2 LDGSTS.128 per thread per 1,024 FMAs, as in s9",),
            h200_ms=(("4096x4096x4096", 3.042), ("2048x18944x3584", 5.988), ("32x18944x3584", 0.665))),
    Variant("s15-fp32-thread-tile-8x16", "8x16 thread tile (128 accumulators), 64x64 warp tiles in a 128x256x8 block, "
            "one 8-warp block per SM, s9's two-stage cp.async", S15_SOURCE,
            _grid_tiles(S15_SOURCE, "sgemm_fp32_thread_tile_8x16", 128, 256, (256, 1, 1)),
            "cuBLAS fp32's regime: 128 outputs per thread at up to 255 registers (s9: 64 under 128), 6 conflict-free "
            "LDS.128 per 128 FMAs (s9: 4 per 64, the A pair 2-way conflicted), 6 copies per 1,024 FMAs (s9: 10)",
            tiled_access("s15", 128, 256, 8, 16, vector=4, warps_per_sm=8, ffma_share=0.8805), "sgemm",
            notes=("A is copied 4 bytes at a time into its transposed place, as in s9: 4 LDGSTS.32 + 2 LDGSTS.128 per "
                   "thread per 1,024 FMAs, where the access pattern counts float4 loads (same bytes)",),
            h200_ms=(("4096x4096x4096", S15_PREREGISTERED["4096x4096x4096"]),
                     ("2048x18944x3584", S15_PREREGISTERED["2048x18944x3584"]),
                     ("32x18944x3584", S15_PREREGISTERED["32x18944x3584"]))),
    Variant("s16-fp32-ktile32", "s9 with a 32-deep k-tile: half the k-tiles, barrier pairs and cp.async waits per "
            "FMA, two 33 KB stages in a dynamic window", S16_SOURCE, _ktile32,
            "s9's per-k-tile cost halved (its tuner ran the same kernel 6.6% slower at 8-deep k-tiles than at 16) and "
            "FFMA share 0.8862 (s9: 0.8505); warp tile, thread tile, 16 warps per SM, register double-buffering kept",
            tiled_access("s16", 128, 128, 8, 8, vector=4, warps_per_sm=16, ffma_share=S16_FFMA_SHARE), "sgemm",
            notes=("A is copied 4 bytes at a time into its transposed place as in s9, 4 rows x 8 k per warp copy (32 "
                   "banks; s9's one-row mapping would be 4-way conflicted at this depth): 16 LDGSTS.32 + 4 LDGSTS.128 "
                   "per thread per 2,048 FMAs",
                   "128 registers and no spill from nvcc 13.0 here; the H200's NVRTC 13.0.88 spilled it (96-byte "
                   "frame, 19 LDL + 3 STL in the main K loop: 2,407 instructions per 2,048 FFMA there)"),
            h200_ms=tuple((lab, ms) for lab, ms in S16_PREREGISTERED.items())),
    Variant("s17-fp32-ktile32-lean", "s16 without the spill: whole k-tiles copied unguarded, each copy's offsets "
            "immediates of its instruction", S17_SOURCE, _ktile32_lean,
            "s16's 32-deep k-tile at 128 registers without local memory under the device's NVRTC 13.0.88: no per-copy "
            "address, guard or select left in the main loop, FFMA share 0.9176 (s16 on the device: 0.8509, s9: 0.8498)",
            tiled_access("s17", 128, 128, 8, 8, vector=4, warps_per_sm=16, ffma_share=S17_FFMA_SHARE), "sgemm",
            notes=("A is copied 4 bytes at a time into its transposed place with s16's 4 rows x 8 k per warp copy: "
                   "16 LDGSTS.32 + 4 LDGSTS.128 per thread per 2,048 FMAs, where the access pattern counts float4 "
                   "loads (same bytes)",),
            h200_ms=tuple((lab, ms) for lab, ms in S17_PREREGISTERED.items())),
    Variant("s18-fp32-small-m-splitk", "small-M split-K: a 32 x 128 x 16 block tile of 2 warps, K split across blocks "
            "to fill the SMs, the partials summed in order by a second kernel", small_m.S18_SOURCE, small_m.launch,
            "all of a 32-row M in one block tile (no FFMA on padding), a grid of 1,036 blocks in one wave at 32 rows "
            "(s9: 148 blocks of 128 rows); B streamed from DRAM once; FFMA share 0.8975 under the device's NVRTC",
            tiled_access("s18", 32, 128, 8, 8, vector=4, warps_per_sm=16, ffma_share=small_m.S18_FFMA_SHARE), "sgemm",
            workspace=small_m.workspace,
            notes=("A is copied 4 bytes at a time into its transposed place, 4 rows x 8 k per warp copy: 8 LDGSTS.32 + "
                   "8 LDGSTS.128 per thread per 1,024 FMAs, where the access pattern counts float4 loads (same bytes)",
                   "S > 1 adds a kernel: the S partials (4 S M N bytes written and read back) summed into C"),
            check_shapes=small_m.S18_CHECKED_AT,
            h200_ms=tuple((lab, ms) for lab, ms in small_m.S18_PREREGISTERED.items())),
    Variant("s8-bf16-mma", "bf16 tensor cores, mma.sync m16n8k16, cp.async double buffer", "sgemm/s8_bf16_mma.cu",
            _grid_tiles("sgemm/s8_bf16_mma.cu", "sgemm_bf16_mma", 128, 128, (256, 1, 1)),
            "move the FMAs to the tensor cores (bf16 in, fp32 accumulate, bf16 out); baseline cuBLAS bf16",
            tensor_core_access("s8", 128, 128), "sgemm", dtype="bf16",
            h200_ms=(("4096x4096x4096", 0.45),)),
    Variant("s10-bf16-ldmatrix", "bf16 mma.sync fed by ldmatrix, XOR-swizzled shared memory, 3-stage cp.async",
            "sgemm/s10_bf16_ldmatrix.cu",
            _grid_tiles("sgemm/s10_bf16_ldmatrix.cu", "sgemm_bf16_ldmatrix", 128, 128, (256, 1, 1)),
            "fragments by ldmatrix.x4 (6 per warp k-step instead of 24 LDS.32), swizzled unpadded tiles, a third "
            "pipeline stage and one barrier per k-tile", tensor_core_access("s10", 128, 128, mma_tiles=16, warps_per_sm=16),
            "sgemm", dtype="bf16",
            h200_ms=(("4096x4096x4096", 0.34),)),
    Variant("s11-bf16-warp64", "s10 with 64x64 warp tiles (4 warps), both k-steps' fragments loaded first, "
            "index arithmetic hoisted", "sgemm/s11_bf16_warp64.cu",
            _grid_tiles("sgemm/s11_bf16_warp64.cu", "sgemm_bf16_warp64", 128, 128, (128, 1, 1)),
            "2.6 instructions per mma instead of 4.9: 32 accumulator tiles per warp, 8 ldmatrix.x4 per 32 mma, "
            "copy and fragment addresses as immediate offsets; 8 warps per SM instead of 16",
            tensor_core_access("s11", 128, 128, mma_tiles=32, warps_per_sm=8), "sgemm", dtype="bf16",
            h200_ms=(("4096x4096x4096", 0.294), ("2048x18944x3584", 0.579), ("32x18944x3584", 0.064))),
    Variant("s12-bf16-wgmma", "wgmma.mma_async m64n128k16 from 64-byte-swizzled shared memory (sm_90a), 2 warpgroups, "
            "s10's cp.async three-stage copies", "sgemm/s12_bf16_wgmma.cu",
            _grid_tiles("sgemm/s12_bf16_wgmma.cu", "sgemm_bf16_wgmma", 128, 128, (256, 1, 1)),
            "the warpgroup MMA reads both operands from shared memory by descriptor: no ldmatrix, no fragment "
            "registers, 2 HMMA.64x128x16 per warp and k-tile where s10 issues 32 mma.sync and 12 ldmatrix",
            tensor_core_access("s12", 128, 128, mma_tiles=16, warps_per_sm=16), "sgemm", dtype="bf16",
            h200_ms=(("4096x4096x4096", 0.328), ("2048x18944x3584", 0.646), ("32x18944x3584", 0.072))),
    Variant("s14-bf16-wgmma-tma", "TMA loads into a 4-stage mbarrier ring, a producer warpgroup and 2 consumer "
            "warpgroups of wgmma.mma_async m64n256k16 (128-byte swizzle, sm_90a), one wgmma group in flight",
            S14_SOURCE, _tma_wgmma,
            "the copies leave the computing warps: one producer thread issues two TMA boxes per 128x256x64 k-tile, "
            "the consumers wait on mbarriers instead of a block barrier and retire k-tile t-1 while t runs",
            tensor_core_access("s14", 128, 256, mma_tiles=32, warps_per_sm=12), "sgemm", dtype="bf16",
            h200_ms=(("4096x4096x4096", 0.1805), ("2048x18944x3584", 0.3553), ("32x18944x3584", 0.0395)),
            k_multiple=8),
)
BF16_BASELINE = Variant("s0-cublas-bf16", "cuBLAS bf16 via torch.matmul (A @ Bt.T)", None, None,
                        "the tensor-core rung's baseline", None, "sgemm", dtype="bf16", baseline="torch.matmul.bf16")
# Instruction-ledger fit: the seed's choice (coalesced, shared tiling, 1D register tile); the
# other fp32 rungs are held out. s1 belongs to the request ledger, fitted on s2.
INSTRUCTION_FIT = ("s2-coalesced", "s3-smem-tiling", "s4-1d-regtile")
# The fp32 rungs the instruction ledger predicts without having been fitted on them.
INSTRUCTION_HELD_OUT = ("s5-2d-regtile", "s6-vectorized", "s7-warptiling")
REQUEST_FIT = ("s2-coalesced",)

# The issue ledger's latency term (theory/kernel_issue.py) is fitted on these rungs' Nsight Compute
# counters (warp cycles per issued instruction against their accumulators): the three register-tiled
# rungs the load-price ledger missed, two ilp values (64, 128).
ISSUE_FIT = ("s5-2d-regtile", "s6-vectorized", "s7-warptiling")
# Block tiles (bm, bn, bk) the issue ledger counts whole on the busiest SM.
BLOCK_TILES = {"s5-2d-regtile": (128, 128, 8), "s6-vectorized": (128, 128, 8), "s7-warptiling": (128, 128, 16),
               "s9-cp-async-pipeline": (128, 128, 16), "s13-fp32-multistage": (128, 128, 16),
               "s15-fp32-thread-tile-8x16": (128, 256, 8), "s16-fp32-ktile32": (128, 128, 32),
               "s17-fp32-ktile32-lean": (128, 128, 32), "s18-fp32-small-m-splitk": small_m.S18_TILE}
# What the issue ledger, fitted on ISSUE_FIT's 2026-11-30 counters, predicted for the rungs written
# after it (ms on the H200 at its 1.98 GHz boost clock), before any of them ran: a CPU test recomputes
# these from the recorded counters, the ladder tests reconcile them with the measured times within 15%.
ISSUE_PREREGISTERED: dict[tuple[str, str], float] = {
    ("s9-cp-async-pipeline", "4096x4096x4096"): 4.37,
    ("s9-cp-async-pipeline", "2048x18944x3584"): 8.60,
    ("s9-cp-async-pipeline", "32x18944x3584"): 0.96,
}

# The mma issue ledger (theory/kernel_issue.mma_issue_time): c0 from ISSUE_FIT, L re-fitted on this rung's
# Nsight Compute counters (the run below, never a newer one: a pre-registration must not move), and the
# counted / compiled instruction ratio of its K loop.
MMA_ISSUE_FIT = "s10-bf16-ldmatrix"
MMA_FIT_NCU_STAMP = "20261201T111138Z"
# The K loop as compiled for sm_90 on the timing shapes' side of the uniform K % 8 branch (the loop holds
# both sides; the scalar side never runs at K = 4096 or 3584), per warp and k-tile: (instructions, HMMA).
MMA_LOOP_SIDE = (("const bool aligned = (K % 8) == 0;", "const bool aligned = true;"),)
# (s12: its 2 HGMMA.64x128x16, each a warpgroup instruction every warp of the warpgroup issues.)
MMA_LOOP_BODY = {"s10-bf16-ldmatrix": (157, 32), "s11-bf16-warp64": (168, 64), "s12-bf16-wgmma": (133, 2)}
MMA_WARPS_PER_BLOCK = {"s10-bf16-ldmatrix": 8, "s11-bf16-warp64": 4, "s12-bf16-wgmma": 8}
MMA_BLOCK_TILES = {"s10-bf16-ldmatrix": (128, 128, 32), "s11-bf16-warp64": (128, 128, 32),
                   "s12-bf16-wgmma": (128, 128, 32)}
# What that ledger predicted for the mma rungs written after it (ms on the H200 at its 1.98 GHz boost
# clock), before any of them ran; reconciled within 15% by test_kernels_ladders once measured.
MMA_ISSUE_PREREGISTERED: dict[tuple[str, str], float] = {
    ("s11-bf16-warp64", "4096x4096x4096"): 0.294,
    ("s11-bf16-warp64", "2048x18944x3584"): 0.579,
    ("s11-bf16-warp64", "32x18944x3584"): 0.064,
    ("s12-bf16-wgmma", "4096x4096x4096"): 0.328,
    ("s12-bf16-wgmma", "2048x18944x3584"): 0.646,
    ("s12-bf16-wgmma", "32x18944x3584"): 0.072,
}

# The tensor-pipe ledger (theory/kernel_issue.tensor_pipe_time) for a rung whose warps issue next to nothing but
# their MMAs: efficiency and clock from cuBLAS bf16 at 4096^3, its Nsight Compute elapsed cycles (the run below)
# over its tensor work, and those cycles over the same kernel's timed median in the live session just before it.
TENSOR_PIPE_FIT = "s0-cublas-bf16"
TENSOR_PIPE_FIT_NCU_STAMP = "20261202T001813Z"
TENSOR_PIPE_FIT_TIMING_STAMP = "20261202T001748.202899Z"
TENSOR_PIPE_TILES = {"s14-bf16-wgmma-tma": S14_TILE}
# What that ledger predicted for s14 (ms on the H200), before it ran; a CPU test recomputes them from the
# recordings, test_kernels_ladders's test_preregistered_time reconciles them (the header's numbers) once measured.
TENSOR_PIPE_PREREGISTERED: dict[tuple[str, str], float] = {
    ("s14-bf16-wgmma-tma", "4096x4096x4096"): 0.1805,
    ("s14-bf16-wgmma-tma", "2048x18944x3584"): 0.3553,
    ("s14-bf16-wgmma-tma", "32x18944x3584"): 0.0395,
}

# --- the fp32 autotuner (issue 17): s9's kernel at other block tiles -----------------------------------
# The search space, each shape with the compiled facts its prediction reads: warps per SM (ptxas's registers
# and shared memory, sm_90) and the FFMA share of its compiled K loop on the N % 4 == 0 side
# (test_kernels_autotune checks both against the compiler). The first is s9 itself.
S9_TILE_SPACE: tuple[tuple[at.TileShape, int, float], ...] = (
    (at.TileShape(128, 128, 16, 2), 16, 0.8505),
    (at.TileShape(128, 128, 8, 2), 16, 0.8298),   # half the shared memory, twice the barriers per FMA
    (at.TileShape(128, 64, 16, 4), 16, 0.8172),   # 4 warps per block: finer waves on wide shapes
    (at.TileShape(64, 128, 16, 4), 16, 0.8050),   # 64-row tiles: half the idle rows at M = 32
    (at.TileShape(128, 256, 8, 1), 16, 0.8519),   # one 16-warp block per SM: B reused over 256 columns
    (at.TileShape(256, 64, 16, 2), 16, 0.8318),
    (at.TileShape(64, 64, 32, 4), 12, 0.7275),    # 2 warps per block, 167 registers: 6 blocks
    (at.TileShape(128, 128, 16, 1), 8, 0.8505),   # no register cap: 161 registers, one block per SM
)
S9_CANDIDATES: tuple[Variant, ...] = tuple(at.candidate(t, w, f) for t, w, f in S9_TILE_SPACE)
S9_TILE_LOOP_SIDE = (("const bool vec = (N % 4) == 0;", "const bool vec = true;"),)
AUTOTUNE_SHAPES = (TIMING_SHAPE, *EXTRA_SHAPES)
# The candidates' prediction: the issue ledger with c0 from ISSUE_FIT and L re-fitted on s9's counted pace
# (all candidates share its pipeline and its 64 accumulators), at each candidate's warps, FFMA share and
# block tile (wave quantisation on the busiest SM), ms at the 1.98 GHz boost clock. Written before any
# candidate but s9 itself ran; the same ledger on s9's own counters reads 2.939 ms against its measured
# 3.144 ms (ncu ran at 1.78 GHz): a 7% bias every candidate shares, which the choice does not depend on.
S9_TILE_FIT = "s9-cp-async-pipeline"
S9_TILE_FIT_NCU_STAMP = "20261201T111138Z"
S9_TILE_PREREGISTERED: dict[tuple[str, str], float] = {
    ("s9-tile-128x128x16-b2", "4096x4096x4096"): 2.939, ("s9-tile-128x128x16-b2", "2048x18944x3584"): 5.786,
    ("s9-tile-128x128x16-b2", "32x18944x3584"): 0.643,
    ("s9-tile-128x128x8-b2", "4096x4096x4096"): 3.012, ("s9-tile-128x128x8-b2", "2048x18944x3584"): 5.931,
    ("s9-tile-128x128x8-b2", "32x18944x3584"): 0.659,
    ("s9-tile-128x64x16-b4", "4096x4096x4096"): 3.059, ("s9-tile-128x64x16-b4", "2048x18944x3584"): 6.022,
    ("s9-tile-128x64x16-b4", "32x18944x3584"): 0.502,
    ("s9-tile-64x128x16-b4", "4096x4096x4096"): 3.105, ("s9-tile-64x128x16-b4", "2048x18944x3584"): 6.113,
    ("s9-tile-64x128x16-b4", "32x18944x3584"): 0.340,
    ("s9-tile-128x256x8-b1", "4096x4096x4096"): 2.934, ("s9-tile-128x256x8-b1", "2048x18944x3584"): 5.777,
    ("s9-tile-128x256x8-b1", "32x18944x3584"): 0.642,
    ("s9-tile-256x64x16-b2", "4096x4096x4096"): 3.005, ("s9-tile-256x64x16-b2", "2048x18944x3584"): 5.916,
    ("s9-tile-256x64x16-b2", "32x18944x3584"): 0.986,
    ("s9-tile-64x64x32-b4", "4096x4096x4096"): 4.581, ("s9-tile-64x64x32-b4", "2048x18944x3584"): 9.019,
    ("s9-tile-64x64x32-b4", "32x18944x3584"): 0.376,
    ("s9-tile-128x128x16-b1", "4096x4096x4096"): 5.878, ("s9-tile-128x128x16-b1", "2048x18944x3584"): 11.572,
    ("s9-tile-128x128x16-b1", "32x18944x3584"): 1.286,
}
# Issue 17's fp32 targets for the tuned choice: of cuBLAS fp32's time at the square shape, at the FFN shapes.
AUTOTUNE_TARGETS = {"4096x4096x4096": 0.90, "2048x18944x3584": 0.80, "32x18944x3584": 0.80}

# --- rung s13's autotuner space (issue 17): s13's kernel at other block tiles and pipeline depths ---------------------
# Each shape with the compiled facts its prediction reads, as in S9_TILE_SPACE (test_kernels_autotune checks both
# against the compiler). The first is s13 itself: of the four, the ledger ranks 128x256x8-s3-b1 0.5% ahead at 4096^3,
# inside the ledger's own error, and s9's kernel at that tile ran 19% over its ledger (2026-12-01 21:51,
# h200-tile-ledger-clock-bias-and-more), so the rung keeps the 128 x 128 tile; the plan's choice is recorded.
S13_TILE_SPACE: tuple[tuple[at.StagedTileShape, int, float], ...] = (
    (at.StagedTileShape(128, 128, 16, 3, 2), 16, 0.8218),  # 48 KB: three stages exactly fill the static limit
    (at.StagedTileShape(128, 128, 8, 4, 2), 16, 0.7926),   # four shallower stages, 32 KB
    (at.StagedTileShape(64, 128, 16, 4, 4), 16, 0.8101),   # 4 warps per block: half the idle rows at M = 32
    (at.StagedTileShape(128, 256, 8, 3, 1), 16, 0.8258),   # one 16-warp block per SM, B reused over 256 columns
)
S13_CANDIDATES: tuple[Variant, ...] = tuple(at.staged_candidate(t, w, f) for t, w, f in S13_TILE_SPACE)
S13_TILE_LOOP_SIDE = (("const bool vec = (N % 4) == 0;", "const bool vec = true;"),)
# The candidates' prediction: the same ledger as S9_TILE_PREREGISTERED (c0 from ISSUE_FIT, L re-fitted on s9's
# counted 4.72 cycles per issue, which sees no pipeline depth) at each candidate's warps, FFMA share and block tile,
# ms at the 1.98 GHz boost clock, written before any s13 candidate ran. The first is rung s13's header.
S13_TILE_PREREGISTERED: dict[tuple[str, str], float] = {
    ("s13-tile-128x128x16-s3-b2", "4096x4096x4096"): 3.042, ("s13-tile-128x128x16-s3-b2", "2048x18944x3584"): 5.988,
    ("s13-tile-128x128x16-s3-b2", "32x18944x3584"): 0.665,
    ("s13-tile-128x128x8-s4-b2", "4096x4096x4096"): 3.154, ("s13-tile-128x128x8-s4-b2", "2048x18944x3584"): 6.209,
    ("s13-tile-128x128x8-s4-b2", "32x18944x3584"): 0.690,
    ("s13-tile-64x128x16-s4-b4", "4096x4096x4096"): 3.086, ("s13-tile-64x128x16-s4-b4", "2048x18944x3584"): 6.075,
    ("s13-tile-64x128x16-s4-b4", "32x18944x3584"): 0.337,
    ("s13-tile-128x256x8-s3-b1", "4096x4096x4096"): 3.027, ("s13-tile-128x256x8-s3-b1", "2048x18944x3584"): 5.959,
    ("s13-tile-128x256x8-s3-b1", "32x18944x3584"): 0.662,
}
# The autotuner's families: recording prefix -> (candidates, pre-registered ms). kernels_plan times each family and
# records its choice as autotune.sgemm.<family>.<shape>.
TILE_FAMILIES: dict[str, tuple[tuple[Variant, ...], dict[tuple[str, str], float]]] = {
    "s9-tile": (S9_CANDIDATES, S9_TILE_PREREGISTERED), "s13-tile": (S13_CANDIDATES, S13_TILE_PREREGISTERED)}
