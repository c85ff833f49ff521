"""The fp32 autotuner's search spaces: block-tile shapes of the double-buffered cp.async rung (s9) and of the
multistage rung (s13: block tile and pipeline depth, StagedTileShape below).

A candidate is s9's source compiled with -D S9_BM/S9_BN/S9_BK/S9_MINB (the block tile and the
__launch_bounds__ blocks-per-SM hint); the warp tile (64 x 32) and the thread tile (8 x 8) are fixed by
its fragment code, so a block has (BM / 64) x (BN / 32) warps. `TileShape.problems()` states the rules
the kernel's copy loops and the 48 KB of static shared memory impose; the registry (sgemm.py) lists only
shapes without problems, and a compiled-rung test checks ptxas agrees (no spill, the warps per SM each
candidate's prediction counts on). The device plan (scripts/device/kernels_plan.py) checks and times
every candidate and records the fastest as the choice; nothing here knows a measured time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_anatomy.kernels.access import tiled_access
from pytest_anatomy.kernels.registry import DeviceFacts, KernelCall, Launch, Variant, cdiv

SOURCE = "sgemm/s9_cp_async_pipeline.cu"
KERNEL = "sgemm_cp_async_pipeline"
WARP_TILE = (64, 32)
APAD = 4  # floats of padding per As row (the kernel's S9_APAD)
STATIC_SHARED_LIMIT = 48 * 1024  # bytes of static __shared__ a kernel may declare (no dynamic opt-in)


@dataclass(frozen=True)
class TileShape:
    bm: int
    bn: int
    bk: int
    min_blocks: int  # __launch_bounds__(threads, min_blocks): caps registers at 64K / (threads x min_blocks)

    @property
    def id(self) -> str:
        return f"s9-tile-{self.bm}x{self.bn}x{self.bk}-b{self.min_blocks}"

    @property
    def threads(self) -> int:
        return (self.bm // WARP_TILE[0]) * (self.bn // WARP_TILE[1]) * 32

    @property
    def shared_bytes(self) -> int:
        """Two stages of As[BK][BM + 4] and Bs[BK][BN] floats."""
        return 2 * self.bk * (self.bm + APAD + self.bn) * 4

    @property
    def defines(self) -> tuple[tuple[str, int], ...]:
        return (("S9_BM", self.bm), ("S9_BN", self.bn), ("S9_BK", self.bk), ("S9_MINB", self.min_blocks))

    def problems(self) -> list[str]:
        """Why the kernel cannot be built or would be wrong at this shape; empty when it can."""
        out = []
        if self.bm % WARP_TILE[0] or self.bn % WARP_TILE[1]:
            out.append(f"block tile {self.bm} x {self.bn} is not whole 64 x 32 warp tiles")
            return out
        t = self.threads
        if t > 1024:
            out.append(f"{t} threads per block")
        if t % self.bk or (self.bm * self.bk) % t:
            out.append(f"A's copy loop needs threads % BK == 0 and BM x BK % threads == 0 ({t} threads)")
        if (self.bk * self.bn // 4) % t or self.bk * self.bn // 4 < t:
            out.append(f"B's copy loop needs BK x BN / 4 a multiple of the {t} threads")
        if self.shared_bytes > STATIC_SHARED_LIMIT:
            out.append(f"{self.shared_bytes} bytes of static shared memory > {STATIC_SHARED_LIMIT}")
        return out


def candidate(shape: TileShape, warps_per_sm: int, ffma_share: float) -> Variant:
    """One candidate as a Variant (not a ladder rung: no header of its own; s9's file, -D its shape).

    warps_per_sm and ffma_share are the compiled candidate's facts the issue ledger prices it by (ptxas's
    occupancy; FFMA share of its compiled K loop), stated in the registry and checked by a compiled test."""
    if shape.problems():
        raise ValueError(f"{shape.id}: {'; '.join(shape.problems())}")

    def launch(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
        return (KernelCall(SOURCE, KERNEL, Launch((cdiv(s["N"], shape.bn), cdiv(s["M"], shape.bm), 1),
                                                   (shape.threads, 1, 1)),
                           ("i32:M", "i32:N", "i32:K", "ptr:A", "ptr:B", "ptr:C"), defines=shape.defines),)

    return Variant(shape.id, f"s9 at block tile {shape.bm}x{shape.bn}x{shape.bk}, {shape.min_blocks} blocks/SM hint",
                   SOURCE, launch, "an autotuning candidate: s9's kernel at another block tile",
                   tiled_access(shape.id, shape.bm, shape.bn, 8, 8, vector=4, warps_per_sm=warps_per_sm,
                                ffma_share=ffma_share), "sgemm")


def fastest(times_ms: Mapping[str, float | None]) -> str:
    """The choice: the candidate with the smallest time (None: wrong or not timed, never chosen)."""
    timed = {k: v for k, v in times_ms.items() if v is not None}
    if not timed:
        raise ValueError("no candidate was timed correctly; nothing to choose")
    return min(timed, key=lambda k: timed[k])


# --- rung s13's space: block tile, pipeline depth and blocks-per-SM hint of the multistage kernel ------------------
S13_SOURCE = "sgemm/s13_fp32_multistage.cu"
S13_KERNEL = "sgemm_fp32_multistage"


@dataclass(frozen=True)
class StagedTileShape:
    """A candidate of s13: its source compiled with -D S13_BM/S13_BN/S13_BK/S13_STAGES/S13_MINB. A is stored
    unpadded (swizzled), so a stage is BK x (BM + BN) floats and three 128 x 128 x 16 stages are exactly 48 KB."""

    bm: int
    bn: int
    bk: int
    stages: int
    min_blocks: int

    @property
    def id(self) -> str:
        return f"s13-tile-{self.bm}x{self.bn}x{self.bk}-s{self.stages}-b{self.min_blocks}"

    @property
    def threads(self) -> int:
        return (self.bm // WARP_TILE[0]) * (self.bn // WARP_TILE[1]) * 32

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.bk * (self.bm + self.bn) * 4

    @property
    def defines(self) -> tuple[tuple[str, int], ...]:
        return (("S13_BM", self.bm), ("S13_BN", self.bn), ("S13_BK", self.bk), ("S13_STAGES", self.stages),
                ("S13_MINB", self.min_blocks))

    def problems(self) -> list[str]:
        """Why the kernel cannot be built or would be wrong at this shape; empty when it can."""
        out = []
        if self.bm % WARP_TILE[0] or self.bn % WARP_TILE[1]:
            return [f"block tile {self.bm} x {self.bn} is not whole 64 x 32 warp tiles"]
        t = self.threads
        if t > 1024 or t & (t - 1):
            out.append(f"{t} threads per block: A's copy map splits a copy index into the thread's bits and the "
                       "copy's, which needs a power of two <= 1024")
        if self.bk not in (8, 16):
            out.append(f"BK = {self.bk}: the A swizzle and copy map are written for 8 and 16")
        if self.stages < 2:
            out.append("a ring needs at least 2 stages")
        if (self.bm * self.bk) % t or (self.bk * self.bn // 4) % t or t % (self.bn // 4):
            out.append(f"the copy loops need BM x BK and BK x BN / 4 multiples of the {t} threads, and the threads "
                       "a multiple of BN / 4")
        if self.shared_bytes > STATIC_SHARED_LIMIT:
            out.append(f"{self.shared_bytes} bytes of static shared memory > {STATIC_SHARED_LIMIT}")
        return out


def staged_candidate(shape: StagedTileShape, warps_per_sm: int, ffma_share: float) -> Variant:
    """One s13 candidate as a Variant (s13's file, -D its shape), priced like `candidate`."""
    if shape.problems():
        raise ValueError(f"{shape.id}: {'; '.join(shape.problems())}")

    def launch(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
        return (KernelCall(S13_SOURCE, S13_KERNEL, Launch((cdiv(s["N"], shape.bn), cdiv(s["M"], shape.bm), 1),
                                                           (shape.threads, 1, 1)),
                           ("i32:M", "i32:N", "i32:K", "ptr:A", "ptr:B", "ptr:C"), defines=shape.defines),)

    return Variant(shape.id, f"s13 at block tile {shape.bm}x{shape.bn}x{shape.bk}, {shape.stages} stages, "
                   f"{shape.min_blocks} blocks/SM hint", S13_SOURCE, launch,
                   "an autotuning candidate: s13's kernel at another block tile or pipeline depth",
                   tiled_access(shape.id, shape.bm, shape.bn, 8, 8, vector=4, warps_per_sm=warps_per_sm,
                                ffma_share=ffma_share), "sgemm")
