"""SGEMM rung s18 (issue 17's fp32 target at 32 rows): a small-M split-K kernel and its launch.

Every other fp32 rung spends a 128-row block tile on the 32-row FFN shape (75% of its FFMAs on rows that do not
exist) and launches 148 blocks on 132 SMs. s18's block tile is 32 x 128 x 16 (all of a 32-row M in one tile, 2 warps
of 32 x 64, s9's 8 x 8 thread tile and fragment code, s9's two cp.async stages, s17's unguarded main-loop copies with
immediate offsets), 8 blocks = 16 warps per SM, and it splits K into S slices so the grid fills the SMs: S = the
largest that keeps ceil(M / 32) x ceil(N / 128) x S within 8 blocks on every SM (one wave), at most one slice per
k-tile. Each slice writes its partial to a workspace, and a second kernel sums the S partials in slice order (the
same bits every run: no atomics). Where the tiles alone fill 8 blocks per SM (S = 1: 2,048 rows, 4096^3) the one
kernel writes C and nothing else is launched.

The prediction (s18's header, recomputed by tests_kernels/test_kernels_s18.py from the recordings it names) prices
the main loop's compiled instructions on the busiest SM at s9's achieved issue rate, beside B's bytes at the read
ceiling, plus the partials' store, a kernel boundary and the reduction's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_anatomy.kernels.registry import DeviceFacts, KernelCall, Launch, cdiv

S18_SOURCE = "sgemm/s18_fp32_small_m_splitk.cu"
S18_KERNEL = "sgemm_fp32_small_m_splitk"
S18_REDUCE_KERNEL = "sgemm_splitk_reduce"
S18_TILE = (32, 128, 16)  # (bm, bn, bk): the .cu's S18_BM, S18_BN, S18_BK
S18_THREADS = 64
S18_BLOCKS_PER_SM = 8  # __launch_bounds__(64, 8): 128 registers, 20,992 bytes of static shared memory a block
S18_REDUCE_THREADS = 256
S18_ARGS = ("i32:M", "i32:N", "i32:K", "ptr:A", "ptr:B")
# The shape s18 is built for, checked on the device before it is timed there (its Variant.check_shapes): the odd
# shapes split K 4-6 ways, but only this one runs the device's own split of 3,584 (S = 7 on 132 SMs) at full width.
S18_CHECKED_AT = ({"M": 32, "N": 18944, "K": 3584},)


def splits(shape: Mapping[str, int], device: DeviceFacts) -> int:
    """K slices: as many as keep the grid within one wave of S18_BLOCKS_PER_SM blocks per SM, at most one per k-tile,
    at least one (7 at 32 x 18944 x 3584 on 132 SMs: 148 tiles x 7 = 1,036 blocks of 1,056 slots)."""
    bm, bn, bk = S18_TILE
    tiles = cdiv(shape["M"], bm) * cdiv(shape["N"], bn)
    return max(1, min(cdiv(shape["K"], bk), S18_BLOCKS_PER_SM * device.sm_count // tiles))


def launch(shape: Mapping[str, int], device: DeviceFacts) -> tuple[KernelCall, ...]:
    """The split-K kernel (grid x: column tiles, y: row tiles, z: K slices) writing C when S = 1, else the workspace's
    S partials and the reduction that sums them into C."""
    bm, bn, _ = S18_TILE
    m, n, s = shape["M"], shape["N"], splits(shape, device)
    grid = (cdiv(n, bn), cdiv(m, bm), s)
    main = KernelCall(S18_SOURCE, S18_KERNEL, Launch(grid, (S18_THREADS, 1, 1)),
                      (*S18_ARGS, "ptr:C" if s == 1 else "ptr:partials"))
    if s == 1:
        return (main,)
    reduce = KernelCall(S18_SOURCE, S18_REDUCE_KERNEL,
                        Launch((cdiv(m * n, 4 * S18_REDUCE_THREADS), 1, 1), (S18_REDUCE_THREADS, 1, 1)),
                        ("i32:M", "i32:N", f"i32:{s}", "ptr:partials", "ptr:C"))
    return (main, reduce)


def workspace(shape: Mapping[str, int], device: DeviceFacts) -> dict[str, int]:
    """The S partials (float32 elements), none when S = 1."""
    s = splits(shape, device)
    return {"partials": s * shape["M"] * shape["N"]} if s > 1 else {}


# --- the prediction, written 2026-12-04 before any s18 run (no GPU that session) -------------------------------------
# The main K loop under the device's NVRTC 13.0.88 (whole k-tiles of a whole block tile, N % 4 == 0), per warp and
# 16-deep k-tile: (FFMA, instructions); test_kernels_s18 checks it against the compiler.
S18_LOOP = (1024, 1141)
S18_FFMA_SHARE = 0.8975  # 1,024 / 1,141
S18_WARPS = S18_THREADS // 32
S18_CLOCK_HZ = 1.98e9  # the boost clock every fp32 rung's header prices at
# Issue rates (Nsight Compute's Executed Ipc Elapsed at 4096^3) in this profile, never a newer one: s9's kernel, whose
# thread tile, fragment code and 16 warps per SM s18 keeps, and cuBLAS fp32's (alternative b).
S18_PACE_NCU_STAMP = "20261204T203849Z"
S18_PACE_OF = "s9-cp-async-pipeline"
S18_FAST_PACE_OF = "s0-cublas"
# The read and copy ceilings of this run (the newest that timed s9 beside cuBLAS fp32; its cuBLAS sets the target).
S18_CEILING_RUN = "20261204T202122Z"
# The split-K boundary: one more back-to-back kernel, priced as flash-decoding's pre-registration priced its reduction
# kernel's (kernels/flashattn/registry.DECODE_LAUNCH_S: stated, not fitted).
S18_BOUNDARY_S = 4e-6
# The header's times (ms), rounded as written, and its alternatives: (a) the B stream not hidden under the issue,
# (b) the SMs at cuBLAS fp32's issue rate. test_kernels_s18 recomputes all three from the recordings named above.
S18_PREREGISTERED: dict[str, float] = {"4096x4096x4096": 2.969, "2048x18944x3584": 5.845, "32x18944x3584": 0.1053}
S18_ALT_UNHIDDEN: dict[str, float] = {"4096x4096x4096": 3.000, "2048x18944x3584": 5.914, "32x18944x3584": 0.1673}
S18_ALT_CUBLAS_PACE: dict[str, float] = {"4096x4096x4096": 2.721, "2048x18944x3584": 5.357, "32x18944x3584": 0.0976}


@dataclass(frozen=True)
class S18Cost:
    """The parts of s18's time at one shape (seconds): the main loop's issue on the busiest SM, A's and B's compulsory
    bytes at the read ceiling, and the split-K side (partials written and read back, C written, at the copy ceiling,
    plus one kernel boundary; 0 when S = 1)."""

    issue_s: float
    bytes_s: float
    split_s: float
    instructions: int  # warp instructions of the main loop on the busiest SM

    @property
    def predicted_s(self) -> float:
        """The stream hidden under the issue: max(issue, bytes) + split."""
        return max(self.issue_s, self.bytes_s) + self.split_s

    @property
    def unhidden_s(self) -> float:
        """Alternative (a): the B stream not hidden under the issue at all, issue + bytes + split."""
        return self.issue_s + self.bytes_s + self.split_s


def s18_cost(shape: Mapping[str, int], device: DeviceFacts, ipc: float, read_bw: float, copy_bw: float) -> S18Cost:
    """s18's time parts at `shape`: the busiest SM's blocks (ceil(blocks / SMs), all in one wave at 32 rows) x 2 warps x
    its k-tiles (ceil(T / S)) x the loop's 1,141 instructions, at `ipc` warp instructions per SM clock and the boost
    clock; 4(MK + KN) bytes over `read_bw`; with S > 1, 4(2 S M N + M N) bytes over `copy_bw` plus the boundary."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    s = splits(shape, device)
    (main, *_) = launch(shape, device)
    per_sm = cdiv(main.launch.blocks, device.sm_count)
    instructions = per_sm * S18_WARPS * cdiv(cdiv(k, S18_TILE[2]), s) * S18_LOOP[1]
    split = 4.0 * (2 * s * m * n + m * n) / copy_bw + S18_BOUNDARY_S if s > 1 else 0.0
    return S18Cost(instructions / ipc / S18_CLOCK_HZ, 4.0 * (m * k + k * n) / read_bw, split, instructions)
