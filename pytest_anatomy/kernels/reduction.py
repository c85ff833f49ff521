"""The reduction ladder: sum of 2^28 fp32 values, every rung at full size (Harris's steps)."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_anatomy.kernels.registry import (
    DeviceFacts,
    KernelCall,
    Launch,
    Variant,
    cdiv,
)

TIMING_SHAPE = {"n": 2**28}
CORRECTNESS_SHAPES = ({"n": 1000}, {"n": 4097}, {"n": 1_000_003}, {"n": 2**28})
BLOCK = 256
FINISH = "reduction/finish.cu"
FINISH_BLOCK = (1024, 1, 1)


def blocks_per_sm_grid(d: DeviceFacts) -> int:
    """Grid-stride rungs launch 8 blocks of 256 per SM: 2048 threads, a full Hopper SM."""
    return 8 * d.sm_count


def _tree(src: str, kernel: str, elems_per_block: int):
    """One block per chunk writes `partials`; two finishing launches sum them (P -> <=2 x SMs -> 1)."""
    def launch(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
        p = cdiv(s["n"], elems_per_block)
        g2 = min(2 * d.sm_count, cdiv(p, FINISH_BLOCK[0]))
        return (KernelCall(src, kernel, Launch((p, 1, 1), (BLOCK, 1, 1)), ("ptr:x", "ptr:partials", "i32:n")),
                KernelCall(FINISH, "reduce_finish", Launch((g2, 1, 1), FINISH_BLOCK), ("ptr:partials", "ptr:partials2", f"i32:{p}")),
                KernelCall(FINISH, "reduce_finish", Launch((1, 1, 1), FINISH_BLOCK), ("ptr:partials2", "ptr:out", f"i32:{g2}")))
    return launch


def _grid_stride(src: str, kernel: str):
    def launch(s: Mapping[str, int], d: DeviceFacts) -> tuple[KernelCall, ...]:
        g = blocks_per_sm_grid(d)
        return (KernelCall(src, kernel, Launch((g, 1, 1), (BLOCK, 1, 1)), ("ptr:x", "ptr:partials", "i32:n")),
                KernelCall(FINISH, "reduce_finish", Launch((1, 1, 1), FINISH_BLOCK), ("ptr:partials", "ptr:out", f"i32:{g}")))
    return launch


def partials_of(calls: tuple[KernelCall, ...]) -> int:
    """Partials the byte ledger charges: every value a launch writes for the next one to read."""
    return sum(c.launch.blocks for c in calls[:-1])


def workspace(s: Mapping[str, int], d: DeviceFacts) -> dict[str, int]:
    return {"partials": max(cdiv(s["n"], BLOCK), blocks_per_sm_grid(d)), "partials2": 2 * d.sm_count}


def _v(rid: str, title: str, src: str, launch, changes: str, per_thread: int, h200_ms: float) -> Variant:
    """h200_ms: the time pre-registered in the rung's header at TIMING_SHAPE."""
    return Variant(rid, title, src, launch, changes, {"elements_per_thread_first_pass": per_thread},
                   "reduction", workspace=workspace, h200_ms=((f"n{TIMING_SHAPE['n']}", h200_ms),))


LADDER: tuple[Variant, ...] = (
    Variant("r0-torch-sum", "torch.sum", None, None, "the library baseline", None, "reduction", baseline="torch.sum"),
    _v("r1-interleaved", "interleaved addressing, divergent modulo", "reduction/r1_interleaved.cu",
       _tree("reduction/r1_interleaved.cu", "reduce_interleaved", BLOCK), "Harris #1", 1, 0.90),
    _v("r2-sequential", "sequential addressing", "reduction/r2_sequential.cu",
       _tree("reduction/r2_sequential.cu", "reduce_sequential", BLOCK), "active threads contiguous: no divergence", 1, 0.55),
    _v("r3-first-add", "first add during load (2 per thread)", "reduction/r3_first_add.cu",
       _tree("reduction/r3_first_add.cu", "reduce_first_add", 2 * BLOCK), "halve the blocks and the tree work", 2, 0.32),
    _v("r4-unrolled-warp", "unrolled last warp (__syncwarp)", "reduction/r4_unrolled_warp.cu",
       _tree("reduction/r4_unrolled_warp.cu", "reduce_unrolled_warp", 2 * BLOCK), "no block barrier in the last 6 steps", 2, 0.29),
    _v("r5-grid-stride", "grid-stride, ~1000 elements per thread", "reduction/r5_grid_stride.cu",
       _grid_stride("reduction/r5_grid_stride.cu", "reduce_grid_stride"), "sum in registers, one tree per block", 0, 0.26),
    _v("r6-warp-shuffle", "grid-stride + warp shuffles", "reduction/r6_warp_shuffle.cu",
       _grid_stride("reduction/r6_warp_shuffle.cu", "reduce_warp_shuffle"), "shuffles replace the shared tree", 0, 0.255),
    _v("r7-vectorized", "grid-stride + shuffles + float4 loads", "reduction/r7_vectorized.cu",
       _grid_stride("reduction/r7_vectorized.cu", "reduce_vectorized"), "LDG.128, four accumulators", 0, 0.250),
)
