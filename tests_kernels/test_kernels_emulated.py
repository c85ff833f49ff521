"""Every rung computes the right answer -- proven on a CPU by running its CUDA source in
cuda_emu.h (each CUDA thread a fiber, real __syncthreads/__syncwarp/shuffle/mma.sync semantics)
on small odd shapes against float64. Speed is not measured here. Skips without a C++ compiler."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pytest_anatomy.kernels import emulator
from pytest_anatomy.kernels.ladders import LADDERS, TIMING_SHAPES
from pytest_anatomy.kernels.reference import (
    TOLERANCE,
    bf16_to_f64,
    make_inputs,
    reference,
    rel_error,
)
from pytest_anatomy.kernels.registry import DeviceFacts, RungRefused

SHAPES = {
    # partial tiles in M, N, K; K % 4 != 0 and K % 8 != 0 (scalar paths); one aligned K for cp.async
    "sgemm": ({"M": 67, "N": 45, "K": 41}, {"M": 130, "N": 129, "K": 33}, {"M": 200, "N": 136, "K": 72}),
    "reduction": ({"n": 1000}, {"n": 4097}, {"n": 70_001}),
    "rmsnorm": ({"M": 5, "N": 1000}, {"M": 3, "N": 4097}, {"M": 2, "N": 8192}),
    # 2,047 and 2,048: the warp-per-row rung's longest rows (scalar and float4), 9 rows over its 8-row blocks;
    # 20,003 and 40,000: rows whose slices need more than one warp per cluster block in x6 (64 and 128 threads,
    # scalar and float4 paths), so its cross-warp and cross-block (DSMEM) merges both run; the vocabulary row
    # itself: x6's timing launch (8 blocks of 480 threads, 15 warps), register rungs refuse it
    "softmax": ({"M": 5, "N": 1000}, {"M": 3, "N": 4097}, {"M": 2, "N": 8192}, {"M": 9, "N": 2047}, {"M": 9, "N": 2048},
                {"M": 2, "N": 20_003}, {"M": 3, "N": 40_000}, {"M": 1, "N": 152_064}),
}
# A TMA rung refuses K % 8 != 0 (Variant.k_multiple): its three computed shapes, partial tiles in M, N and K (K not a
# multiple of the 64-deep k-tile: the tensor map zero-fills the tail), 32 rows (the FFN decode shape's 96 missing
# rows of a 128-row tile), more k-tiles than pipeline stages (the ring's second round: phases, releases).
K_ALIGNED_SGEMM = ({"M": 130, "N": 300, "K": 200}, {"M": 32, "N": 257, "K": 72}, {"M": 200, "N": 136, "K": 520})
RUNGS = [pytest.param(v, id=f"{lad}.{v.id}") for lad, vs in LADDERS.items() for v in vs if not v.is_baseline]


@pytest.fixture(scope="module", autouse=True)
def prebuilt():
    try:
        emulator.compiler()
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(str(exc))
    sources = {s for vs in LADDERS.values() for v in vs if not v.is_baseline
               for s in v.sources(dict(TIMING_SHAPES[v.ladder]), DeviceFacts(4))}
    with ThreadPoolExecutor(max_workers=2) as pool:  # g++ in parallel; cached on disk afterwards
        list(pool.map(emulator.build, sorted(sources)))


@pytest.mark.parametrize("v", RUNGS)
def test_rung_matches_float64(v):
    rng = np.random.default_rng(abs(hash(v.id)) % 2**32)
    ran = 0
    for shape in SHAPES[v.ladder] + (K_ALIGNED_SGEMM if v.k_multiple else ()):
        if (v.max_cols is not None and shape.get("N", 0) > v.max_cols) or (v.k_multiple and shape["K"] % v.k_multiple):
            with pytest.raises(RungRefused):  # refused by construction, never computed wrong
                emulator.run(v, shape, make_inputs(v.ladder, shape, v.dtype, rng))
            continue
        ran += 1
        inputs = make_inputs(v.ladder, shape, v.dtype, rng)  # fresh, never zeros
        out = emulator.run(v, shape, inputs)
        got = bf16_to_f64(out) if v.dtype == "bf16" else out
        err = rel_error(got, reference(v.ladder, inputs, v.dtype))
        assert err <= TOLERANCE[v.dtype], f"{v.ladder}.{v.id} at {shape}: relative error {err:.3g}"
    assert ran >= 3, f"{v.ladder}.{v.id}: only {ran} shapes computed; each rung is checked on at least three"


def test_register_rung_refuses_rather_than_computing_wrong():
    v = next(x for x in LADDERS["rmsnorm"] if x.id == "n3-registers")
    with pytest.raises(RungRefused):
        emulator.run(v, {"M": 1, "N": 8193}, make_inputs("rmsnorm", {"M": 1, "N": 8193}, "fp32", np.random.default_rng(0)))


def test_tma_rung_refuses_k_off_its_tensor_maps_stride():
    """s14's tensor maps need a row stride that is a multiple of 16 bytes: K % 8 != 0 is refused, with the reason,
    by the registry (the emulator and the GPU runner both ask it), never launched."""
    v = next(x for x in LADDERS["sgemm"] if x.id == "s14-bf16-wgmma-tma")
    shape = {"M": 64, "N": 64, "K": 129}
    with pytest.raises(RungRefused, match="multiple of 8"):
        emulator.run(v, shape, make_inputs("sgemm", shape, "bf16", np.random.default_rng(0)))
