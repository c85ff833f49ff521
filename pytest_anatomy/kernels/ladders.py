"""Every ladder by name (LADDERS), its timing shape, and a lookup by rung id."""

from __future__ import annotations

from pytest_anatomy.kernels import fused, reduction, sgemm
from pytest_anatomy.kernels.registry import (
    DeviceFacts,
    KernelCall,
    Launch,
    RungRefused,
    Variant,
)

LADDERS: dict[str, tuple[Variant, ...]] = {
    "sgemm": sgemm.LADDER,
    "reduction": reduction.LADDER,
    "rmsnorm": fused.RMSNORM,
    "softmax": fused.SOFTMAX,
}
TIMING_SHAPES = {"sgemm": sgemm.TIMING_SHAPE, "reduction": reduction.TIMING_SHAPE,
                 "rmsnorm": fused.RMSNORM_TIMING_SHAPE, "softmax": fused.SOFTMAX_TIMING_SHAPE}


def variant(ladder: str, rung: str) -> Variant:
    for v in LADDERS[ladder]:
        if v.id == rung:
            return v
    raise KeyError(f"ladder {ladder!r} has no rung {rung!r}; rungs: {[v.id for v in LADDERS[ladder]]}")


__all__ = ["LADDERS", "TIMING_SHAPES", "DeviceFacts", "KernelCall", "Launch", "RungRefused", "Variant", "variant"]
