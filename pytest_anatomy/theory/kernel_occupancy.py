"""Occupancy from a compiler resource report: how many blocks of a kernel fit on one SM.

Limits per compute capability are from the CUDA C++ Programming Guide, "Technical
Specifications per Compute Capability" (threads, blocks, registers and shared memory per SM)
and its occupancy section (registers are allocated per warp in units of 256; each block
reserves 1 KB of shared memory on compute capability 8.0 and later). The same arithmetic as
the CUDA occupancy calculator, without its per-sub-partition register rounding, which does
not change any block count in this project's kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_anatomy.theory.prediction import Prediction, Term

_GUIDE = "CUDA C++ Programming Guide, Technical Specifications per Compute Capability"


@dataclass(frozen=True)
class SmLimits:
    arch: str
    max_threads: int
    max_blocks: int
    registers: int
    shared_bytes: int  # shared memory per SM available to blocks
    reserved_per_block: int = 1024
    register_unit: int = 256  # registers are allocated per warp in multiples of this
    source: str = _GUIDE


SM_LIMITS = {
    "sm_89": SmLimits("sm_89", max_threads=1536, max_blocks=24, registers=65536, shared_bytes=100 * 1024),
    "sm_90": SmLimits("sm_90", max_threads=2048, max_blocks=32, registers=65536, shared_bytes=228 * 1024),
}


def occupancy(registers: int, shared_bytes: int, threads_per_block: int, arch: str) -> Prediction:
    """Resident blocks per SM (value) with the limiting resource named in the terms; the
    fraction of the SM's thread slots they fill is in inputs['occupancy']."""
    lim = SM_LIMITS[arch]
    warps = -(-threads_per_block // 32)
    regs_per_warp = -(-registers * 32 // lim.register_unit) * lim.register_unit
    by_threads = lim.max_threads // threads_per_block
    by_regs = (lim.registers // regs_per_warp) // warps if registers else lim.max_blocks
    by_smem = lim.shared_bytes // (shared_bytes + lim.reserved_per_block)
    blocks = min(by_threads, by_regs, by_smem, lim.max_blocks)
    limiter = min((("threads", by_threads), ("registers", by_regs), ("shared memory", by_smem),
                   ("blocks", lim.max_blocks)), key=lambda kv: kv[1])[0]
    return Prediction(
        float(blocks), "blocks", "min(threads, registers, shared memory, block slots) per SM",
        {"registers": registers, "shared_bytes": shared_bytes, "threads_per_block": threads_per_block,
         "arch": arch, "limiter": limiter, "occupancy": blocks * threads_per_block / lim.max_threads},
        (Term("by threads", by_threads, "blocks", f"{lim.max_threads} / {threads_per_block}"),
         Term("by registers", by_regs, "blocks", f"{lim.registers} / ({regs_per_warp} per warp x {warps} warps)"),
         Term("by shared memory", by_smem, "blocks",
              f"{lim.shared_bytes} / ({shared_bytes} + {lim.reserved_per_block} reserved)"),
         Term("block slots", lim.max_blocks, "blocks")),
        notes=(f"limits for {arch} from the {lim.source}",),
    )
