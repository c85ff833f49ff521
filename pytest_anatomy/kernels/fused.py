"""The fused-kernel ladders: RMSNorm (y = x / rms(x) * w) and softmax over rows, fp32.

Shapes: the seed's Qwen2.5-7B shapes (M=8192 rows; RMSNorm N=3584 = hidden size, softmax
N=2048) and a vocabulary-wide softmax row (N=152,064, Qwen2.5's vocab) with 128 rows, so x
(78 MB) is larger than the H200's 60 MB L2. Register-resident rungs hold at most 8,192 columns
(a block per row) or 2,048 (a warp per row) and refuse the vocabulary row (RungRefused); x6 holds a
row in the registers of an 8-block cluster (163,840 columns), the vocabulary row included; x7 picks its kernel
by row length (a warp per row up to 2,048 columns, a persistent pipelined cluster above); x8 keeps x7's warp per row
and streams longer rows through a ring of TMA bulk copies in each cluster block's dynamic shared memory; x9 keeps it too
and holds longer rows as x6 does, half of each block's slice in shared memory, on a cluster of 4 blocks; x10 keeps it
and cuts longer rows into 1,152-column tiles dealt to the warps of a cooperative grid of one block per SM, the tiles'
(max, sum) pairs exchanged through L2."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_anatomy.kernels.registry import (
    DeviceFacts,
    KernelCall,
    Launch,
    Variant,
    cdiv,
)
from pytest_anatomy.kernels.access import StreamAccess

BLOCK = 256
MAX_COLS = 8192  # 256 threads x 32 registers of row data
EPS = 1e-6
RMSNORM_TIMING_SHAPE = {"M": 8192, "N": 3584}
SOFTMAX_TIMING_SHAPE = {"M": 8192, "N": 2048}
VOCAB_SHAPE = {"M": 128, "N": 152_064}
# 2,047: the longest odd row a warp-per-row rung holds (its scalar path), 37 rows over 8-row blocks
CORRECTNESS_SHAPES = ({"M": 64, "N": 1000}, {"M": 33, "N": 4097}, {"M": 8, "N": 8192}, {"M": 37, "N": 2047})


def _rows(src: str, kernel: str, args: tuple[str, ...]):
    def launch(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
        return (KernelCall(src, kernel, Launch((s["M"], 1, 1), (BLOCK, 1, 1)), args),)
    return launch


def _rms_two_pass(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    src = "rmsnorm/n1_two_pass.cu"
    return (KernelCall(src, "rmsnorm_rstd", Launch((s["M"], 1, 1), (BLOCK, 1, 1)), ("ptr:x", "ptr:rstd", "i32:N", "f32:eps")),
            KernelCall(src, "rmsnorm_apply", Launch((cdiv(s["N"], BLOCK), s["M"], 1), (BLOCK, 1, 1)),
                       ("ptr:x", "ptr:w", "ptr:rstd", "ptr:y", "i32:N")))


def _softmax_three_pass(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    src = "softmax/x1_three_pass.cu"
    rows = Launch((s["M"], 1, 1), (BLOCK, 1, 1))
    return (KernelCall(src, "softmax_row_max", rows, ("ptr:x", "ptr:row_max", "i32:N")),
            KernelCall(src, "softmax_row_sum", rows, ("ptr:x", "ptr:row_max", "ptr:row_sum", "i32:N")),
            KernelCall(src, "softmax_normalize", Launch((cdiv(s["N"], BLOCK), s["M"], 1), (BLOCK, 1, 1)),
                       ("ptr:x", "ptr:row_max", "ptr:row_sum", "ptr:y", "i32:N")))


WARP_ROWS = 8  # rows (warps) per 256-thread block of the warp-per-row rung
WARP_ROW_MAX_COLS = 2048  # 32 lanes x 64 registers of row data


def _warp_rows(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    return (KernelCall("softmax/x5_warp_row.cu", "softmax_warp_row", Launch((cdiv(s["M"], WARP_ROWS), 1, 1),
                                                                           (32 * WARP_ROWS, 1, 1)),
                       ("ptr:x", "ptr:y", "i32:M", "i32:N")),)


CLUSTER_BLOCKS = 8  # x6: blocks per row, its __cluster_dims__
CLUSTER_MAX_THREADS = 512
CLUSTER_PER_THREAD = 40  # values a thread holds in registers (10 float4)
CLUSTER_MAX_COLS = CLUSTER_BLOCKS * CLUSTER_MAX_THREADS * CLUSTER_PER_THREAD  # 163,840


def cluster_threads(n: int) -> int:
    """x6's block size for rows of n columns: the smallest multiple of 32 whose threads hold the block's
    slice (4 ceil(n / 32) columns) at 40 values each, at least one warp, at most 512 threads."""
    slice_cols = 4 * cdiv(n, 32)
    return min(CLUSTER_MAX_THREADS, max(32, 32 * cdiv(cdiv(slice_cols, CLUSTER_PER_THREAD), 32)))


def _cluster_rows(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    return (KernelCall("softmax/x6_cluster_row.cu", "softmax_cluster_row",
                       Launch((s["M"] * CLUSTER_BLOCKS, 1, 1), (cluster_threads(s["N"]), 1, 1),
                              cluster=CLUSTER_BLOCKS), ("ptr:x", "ptr:y", "i32:M", "i32:N")),)


# x7: a warp per row up to 2,048 columns; longer rows a persistent grid of 8-block clusters, one block per SM.
# Two cluster slots fewer than SMs / 8: x6's 30 active clusters at 2 blocks per SM on 132 SMs (Nsight Compute) fit
# only GPC splits that hold 14 clusters at 1 block per SM; a cluster beyond those would wait for another's rows.
STREAM_CLUSTER_SPARE = 2
X7_ROWS = 4  # rows (warps) per block of x7's warp-row kernel


def stream_clusters(m: int, sm_count: int) -> int:
    """x7's persistent grid, in clusters: the clusters resident at once at one block per SM, at most one per row."""
    return max(1, min(m, sm_count // CLUSTER_BLOCKS - STREAM_CLUSTER_SPARE))


def _x7_warp_rows(s: Mapping[str, int]) -> tuple[KernelCall, ...]:
    """x7's warp-row kernel, which x8, x9 and x10 keep for rows of 2,048 columns or fewer."""
    return (KernelCall("softmax/x7_pipelined.cu", "softmax_warp_rows", Launch((cdiv(s["M"], X7_ROWS), 1, 1),
                                                                             (32 * X7_ROWS, 1, 1)),
                       ("ptr:x", "ptr:y", "i32:M", "i32:N")),)


def _pipelined(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    src, args = "softmax/x7_pipelined.cu", ("ptr:x", "ptr:y", "i32:M", "i32:N")
    if s["N"] <= WARP_ROW_MAX_COLS:
        return _x7_warp_rows(s)
    g = stream_clusters(s["M"], d.sm_count)
    return (KernelCall(src, "softmax_cluster_stream", Launch((g * CLUSTER_BLOCKS, 1, 1), (cluster_threads(s["N"]), 1, 1),
                                                             cluster=CLUSTER_BLOCKS), args),)


# x8: x7's persistent grid of 8-block clusters, each block's slices of the next rows in a ring of dynamic shared memory
# filled by TMA bulk copies. RING_SMEM_OPTIN is sm_90's per-block opt-in (sharedMemPerBlockOptin, 227 KB); the
# kernel's static arrays (warp partials, pairs, mbarriers: under 300 B) are kept out of it with RING_STATIC_RESERVE.
RING_SMEM_OPTIN = 227 * 1024
RING_STATIC_RESERVE = 1024
RING_MAX_STAGES = 3


def ring_stages(n: int) -> int:
    """x8's ring depth for rows of n columns: the slices (4 ceil(n / 32) floats each) the opt-in window holds, <= 3."""
    slice_bytes = 16 * cdiv(n, 32)
    return min(RING_MAX_STAGES, (RING_SMEM_OPTIN - RING_STATIC_RESERVE) // slice_bytes)


def _ring(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    args = ("ptr:x", "ptr:y", "i32:M", "i32:N")
    if s["N"] <= WARP_ROW_MAX_COLS:  # x7's warp-row kernel, unchanged
        return _x7_warp_rows(s)
    g, stages = stream_clusters(s["M"], d.sm_count), ring_stages(s["N"])
    return (KernelCall("softmax/x8_tma_ring.cu", "softmax_cluster_ring",
                       Launch((g * CLUSTER_BLOCKS, 1, 1), (cluster_threads(s["N"]), 1, 1),
                              shmem=stages * 16 * cdiv(s["N"], 32), cluster=CLUSTER_BLOCKS),
                       (*args, f"i32:{stages}")),)

# x9: x6 with each block's slice half in registers, half in dynamic shared memory (cp.async), so a row is a cluster
# of 4 blocks (2 SMs at 2 blocks per SM) and 66 clusters were to fit 132 SMs whose GPCs are whole TPCs: 128 rows in
# 2 waves. Nsight Compute counted 62 on the H200 (2026-12-04 20:38): 3 waves (tests_kernels/kernel_s16_x9_findings.py).
SMEM_CLUSTER_BLOCKS = 4  # its __cluster_dims__
SMEM_PER_THREAD = 80  # values a thread holds: 10 float4 in registers, 10 in shared memory
SMEM_BYTES_PER_THREAD = 176  # the shared half: 10 float4 at a pitch of 11 (no bank conflicts)
SMEM_CLUSTER_MAX_COLS = SMEM_CLUSTER_BLOCKS * CLUSTER_MAX_THREADS * SMEM_PER_THREAD  # 163,840


def smem_cluster_threads(n: int) -> int:
    """x9's block size for rows of n columns: the smallest multiple of 32 whose threads hold the block's slice
    (4 ceil(n / 16) columns) at 80 values each, at least one warp, at most 512 threads."""
    slice_cols = 4 * cdiv(n, 16)
    return min(CLUSTER_MAX_THREADS, max(32, 32 * cdiv(cdiv(slice_cols, SMEM_PER_THREAD), 32)))


def _half_smem(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    args = ("ptr:x", "ptr:y", "i32:M", "i32:N")
    if s["N"] <= WARP_ROW_MAX_COLS:  # x7's warp-row kernel, unchanged
        return _x7_warp_rows(s)
    t = smem_cluster_threads(s["N"])
    return (KernelCall("softmax/x9_cluster4_smem.cu", "softmax_cluster4_smem",
                       Launch((s["M"] * SMEM_CLUSTER_BLOCKS, 1, 1), (t, 1, 1), shmem=SMEM_BYTES_PER_THREAD * t,
                              cluster=SMEM_CLUSTER_BLOCKS), args),)


# x10: a persistent cooperative grid of one 16-warp block per SM. A row is cut into tiles of 1,152 columns (32 lanes x
# 9 float4), tile q of the M x T goes to warp q mod 16G (block q mod G), and the tiles' (max, sum) pairs meet in a
# workspace in L2 with one counter per row (zeroed once, then reused by every launch): at 152,064 columns T = 132, one
# tile of every row per SM of a 132-SM card. G = max(SMs, ceil(T / 16)): no warp holds two tiles of one row.
GRID_TILE_COLS = 1152
GRID_WARPS = 16
# Softmax rungs whose first device launches run in a child process of the kernels plan (scripts/device/kernels_plan.py
# --preflight; sgemm.CHILD_PREFLIGHT holds the others): x10's warps spin on counters other SMs' warps raise, so a
# protocol error hangs the GPU instead of failing a check.
CHILD_PREFLIGHT = frozenset({"x10-grid-tiles"})


def grid_tiles(n: int) -> int:
    """x10's tiles per row of n columns."""
    return cdiv(n, GRID_TILE_COLS)


def grid_blocks(n: int, sm_count: int) -> int:
    """x10's grid for rows of n columns: a block per SM, more where a row has more tiles than the grid has warps (the
    emulator's few SMs; on a card the cooperative launch then refuses it)."""
    return max(sm_count, cdiv(grid_tiles(n), GRID_WARPS))


def _grid(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
    if s["N"] <= WARP_ROW_MAX_COLS:  # x7's warp-row kernel, unchanged
        return _x7_warp_rows(s)
    kernel = "softmax_grid_tiles" if s["N"] % 4 == 0 else "softmax_grid_tiles_scalar"  # float4 rows or not
    return (KernelCall("softmax/x10_grid_tiles.cu", kernel,
                       Launch((grid_blocks(s["N"], d.sm_count), 1, 1), (32 * GRID_WARPS, 1, 1), cooperative=True),
                       ("ptr:x", "ptr:y", "ptr:part", "ptr:count", "i32:M", "i32:N")),)


def _grid_workspace(s: Mapping[str, int], d: DeviceFacts) -> dict[str, int]:
    """x10's pairs (2 floats per tile, rows of pairs at an even stride: 16-byte aligned) and a counter per row."""
    if s["N"] <= WARP_ROW_MAX_COLS:
        return {}
    return {"part": 2 * s["M"] * 2 * cdiv(grid_tiles(s["N"]), 2), "count": s["M"]}


def _per_row(*names: str):
    def ws(s: Mapping[str, int], d: DeviceFacts) -> dict[str, int]:
        return {n: s["M"] for n in names}
    return ws


RMS_ARGS = ("ptr:x", "ptr:w", "ptr:y", "i32:N", "f32:eps")
RMSNORM: tuple[Variant, ...] = (
    Variant("n0-torch", "torch.nn.functional.rms_norm", None, None, "the library baseline", None, "rmsnorm",
            baseline="torch.rms_norm"),
    Variant("n1-two-pass", "two kernels: 1/rms per row, then apply", "rmsnorm/n1_two_pass.cu", _rms_two_pass,
            "unfused: x read twice from DRAM", StreamAccess("n1", reads=2, writes=1, dram_reads=2, aux_bytes_row=8,
                                                            weight=True), "rmsnorm", workspace=_per_row("rstd"),
            h200_ms=(("8192x3584", 0.090),)),
    Variant("n2-fused", "one kernel, two passes over the row", "rmsnorm/n2_fused.cu",
            _rows("rmsnorm/n2_fused.cu", "rmsnorm_fused", RMS_ARGS),
            "fuse: the re-read hits L1/L2", StreamAccess("n2", reads=2, writes=1, dram_reads=1, weight=True), "rmsnorm",
            h200_ms=(("8192x3584", 0.062),)),
    Variant("n3-registers", "one pass, row in registers", "rmsnorm/n3_registers.cu",
            _rows("rmsnorm/n3_registers.cu", "rmsnorm_registers", RMS_ARGS),
            "keep the row in registers: read once", StreamAccess("n3", reads=1, writes=1, dram_reads=1, weight=True),
            "rmsnorm", max_cols=MAX_COLS, h200_ms=(("8192x3584", 0.060),)),
    Variant("n4-vectorized", "registers + float4", "rmsnorm/n4_vectorized.cu",
            _rows("rmsnorm/n4_vectorized.cu", "rmsnorm_vectorized", RMS_ARGS),
            "128-bit loads and stores", StreamAccess("n4", reads=1, writes=1, dram_reads=1, weight=True),
            "rmsnorm", max_cols=MAX_COLS, h200_ms=(("8192x3584", 0.059),)),
)

SOFTMAX: tuple[Variant, ...] = (
    Variant("x0-torch", "torch.softmax", None, None, "the library baseline", None, "softmax", baseline="torch.softmax"),
    Variant("x1-three-pass", "three kernels: max, sum of exp, normalize", "softmax/x1_three_pass.cu",
            _softmax_three_pass, "unfused, numerically safe",
            StreamAccess("x1", reads=3, writes=1, dram_reads=3, aux_bytes_row=16), "softmax",
            workspace=_per_row("row_max", "row_sum"), h200_ms=(("8192x2048", 0.060), ("128x152064", 0.24))),
    Variant("x2-online", "online (max, sum) in one pass + normalize pass", "softmax/x2_online.cu",
            _rows("softmax/x2_online.cu", "softmax_online", ("ptr:x", "ptr:y", "i32:N")),
            "online softmax: max and sum from one read", StreamAccess("x2", reads=2, writes=1, dram_reads=1), "softmax",
            h200_ms=(("8192x2048", 0.036), ("128x152064", 0.30))),
    Variant("x3-registers", "one pass, row in registers", "softmax/x3_registers.cu",
            _rows("softmax/x3_registers.cu", "softmax_registers", ("ptr:x", "ptr:y", "i32:N")),
            "keep the row in registers", StreamAccess("x3", reads=1, writes=1, dram_reads=1), "softmax",
            max_cols=MAX_COLS, h200_ms=(("8192x2048", 0.034),)),
    Variant("x4-vectorized", "registers + float4", "softmax/x4_vectorized.cu",
            _rows("softmax/x4_vectorized.cu", "softmax_vectorized", ("ptr:x", "ptr:y", "i32:N")),
            "128-bit loads and stores", StreamAccess("x4", reads=1, writes=1, dram_reads=1), "softmax",
            max_cols=MAX_COLS, h200_ms=(("8192x2048", 0.034),)),
    Variant("x5-warp-row", "a warp per row, exp2 with the scale folded in", "softmax/x5_warp_row.cu",
            _warp_rows, "no block barrier: two 5-shuffle warp reductions per row, one FFMA + EX2 per element",
            StreamAccess("x5", reads=1, writes=1, dram_reads=1), "softmax", max_cols=WARP_ROW_MAX_COLS, row_threads=32,
            h200_ms=(("8192x2048", 0.034),)),
    Variant("x6-cluster-row", "a row per 8-block cluster, in registers, (max, sum) merged through DSMEM",
            "softmax/x6_cluster_row.cu", _cluster_rows,
            "one DRAM read and one write of any row up to 163,840 columns: 8 blocks hold it in registers and "
            "exchange their (max, sum) pairs over distributed shared memory, one EX2 per element",
            StreamAccess("x6", reads=1, writes=1, dram_reads=1), "softmax", max_cols=CLUSTER_MAX_COLS,
            row_threads=CLUSTER_BLOCKS * CLUSTER_MAX_THREADS,
            h200_ms=(("8192x2048", 0.045), ("128x152064", 0.040))),
    Variant("x7-pipelined", "by row length: a warp per row, or a persistent cluster loading the next row",
            "softmax/x7_pipelined.cu", _pipelined,
            "rows <= 2,048: x5's warp per row, 4 rows per block, evict-first loads and stores; longer rows: a "
            "persistent grid of 8-block clusters (one block per SM) whose blocks load their slice of the next row "
            "into a second register set while this row is reduced, exchanged over DSMEM and written",
            StreamAccess("x7", reads=1, writes=1, dram_reads=1), "softmax", max_cols=CLUSTER_MAX_COLS,
            row_threads=CLUSTER_BLOCKS * CLUSTER_MAX_THREADS,
            h200_ms=(("8192x2048", 0.034), ("128x152064", 0.040))),
    Variant("x8-tma-ring", "by row length: x7's warp per row, or clusters streaming rows through a TMA ring",
            "softmax/x8_tma_ring.cu", _ring,
            "rows <= 2,048: x7's warp-row kernel; longer rows: x7's persistent grid of 8-block clusters, each block's "
            "slices of the next rows requested by one cp.async.bulk each into a ring of up to 3 stages of dynamic "
            "shared memory, the stage re-armed with the row 3 ahead as soon as it is read into registers, so 2 rows "
            "stay in flight per SM while a row is reduced, exchanged over DSMEM and written",
            StreamAccess("x8", reads=1, writes=1, dram_reads=1), "softmax", max_cols=CLUSTER_MAX_COLS,
            row_threads=CLUSTER_BLOCKS * CLUSTER_MAX_THREADS,
            h200_ms=(("8192x2048", 0.034), ("128x152064", 0.040))),
    Variant("x9-cluster4-smem", "by row length: x7's warp per row, or x6 with half of each slice in shared memory",
            "softmax/x9_cluster4_smem.cu", _half_smem,
            "rows <= 2,048: x7's warp-row kernel; longer rows: x6's row on chip between one read and one write, each "
            "thread holding 10 float4 in registers and 10 in dynamic shared memory (cp.async, requested first), so "
            "a row is a cluster of 4 blocks on 2 SMs, 66 clusters to fit at once: 128 rows in 2 waves, not x6's 5 "
            "(Nsight Compute counted 62 on the H200: 3 waves)",
            StreamAccess("x9", reads=1, writes=1, dram_reads=1), "softmax", max_cols=SMEM_CLUSTER_MAX_COLS,
            row_threads=SMEM_CLUSTER_BLOCKS * CLUSTER_MAX_THREADS,
            h200_ms=(("8192x2048", 0.034), ("128x152064", 0.042))),
    Variant("x10-grid-tiles", "by row length: x7's warp per row, or a cooperative grid of 1,152-column tiles",
            "softmax/x10_grid_tiles.cu", _grid,
            "rows <= 2,048: x7's warp-row kernel; longer rows: every SM a 1,152-column tile of every row, one block of "
            "16 warps per SM in a cooperative persistent grid, each warp reducing one tile in registers while its "
            "next loads, the tiles' (max, sum) pairs exchanged through L2 (a counter per row), no waves: 1/132 of "
            "the bytes per SM at the vocabulary row",
            StreamAccess("x10", reads=1, writes=1, dram_reads=1), "softmax", max_cols=CLUSTER_MAX_COLS,
            row_threads=32 * cdiv(CLUSTER_MAX_COLS, GRID_TILE_COLS), workspace=_grid_workspace,
            workspace_zeroed=True, h200_ms=(("8192x2048", 0.034), ("128x152064", 0.041))),
)
