"""What of a TMA rung's launch the CPU can check (measure/tma_launch.py, registry.TensorMapBox, the emulator's map).

The GPU run builds each tensor map with the driver's cuTensorMapEncodeTiled and launches through cuLaunchKernel with
an explicit void* array; neither runs here. What does: the encode arguments the runner passes for s14's two maps
(dimensions, strides, box, swizzle and fill enums, named as cuda.bindings names them), the refusals the driver would
make, the packing of the parameter array (each slot points at its value; the 128-byte map in a 64-byte-aligned slot),
which calls take the raw path, and the emulator's own map of the same arrays.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from pytest_anatomy.kernels import emulator, sgemm
from pytest_anatomy.kernels.ladders import LADDERS, TIMING_SHAPES
from pytest_anatomy.kernels.registry import CUDA_DIR, DeviceFacts, KernelCall, Launch, TensorMapBox
from pytest_anatomy.measure import tma_launch as tl

S14 = next(v for v in LADDERS["sgemm"] if v.id == "s14-bf16-wgmma-tma")


def _call(shape=None) -> KernelCall:
    (call,) = S14.calls(shape or TIMING_SHAPES["sgemm"], DeviceFacts(132))
    return call


@pytest.mark.parametrize("shape", [TIMING_SHAPES["sgemm"], *sgemm.EXTRA_SHAPES], ids=lambda s: f"{s['M']}x{s['N']}")
def test_s14_maps_encode_its_operands_as_k_major_boxes(shape):
    """A (M x K) and Bt (N x K), row-major bf16: dim 0 is K (contiguous), dim 1 the rows; the row stride 2K bytes;
    boxes of 64 x 128 and 64 x 256 elements (128-byte rows, the swizzle's width), unit element strides, zero fill."""
    call = _call(shape)
    m, n, k = shape["M"], shape["N"], shape["K"]
    for name, rows in (("A", m), ("B", n)):
        box = call.tensor_map(name)
        a = tl.encode_args(rows, k, 2 * k, 0x7F0000000000, box)
        assert (a.rank, a.dims, a.strides, a.element_strides) == (2, (k, rows), (2 * k,), (1, 1)), a
        assert a.box == (sgemm.S14_TILE[2], sgemm.S14_TILE[0] if name == "A" else sgemm.S14_TILE[1]), a
        assert a.swizzle == "CU_TENSOR_MAP_SWIZZLE_128B" and a.data_type == "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", a
        assert a.oob_fill == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE" and a.interleave == "CU_TENSOR_MAP_INTERLEAVE_NONE", a


def test_encode_refuses_what_the_driver_would():
    box = TensorMapBox("A", 128, 64)
    with pytest.raises(ValueError, match="16 bytes"):
        tl.encode_args(100, 129, 258, 0x1000, box)  # K = 129: a 258-byte row stride
    with pytest.raises(ValueError, match="16 bytes"):
        tl.encode_args(100, 128, 256, 0x1008, box)  # an address off 16 bytes


def test_enum_names_are_cuda_bindings():
    """Every enum name the runner looks up exists in the installed cuda.bindings (no driver needed to list them)."""
    driver = pytest.importorskip("cuda.bindings.driver")
    a = tl.encode_args(4096, 4096, 8192, 0x1000, TensorMapBox("A", 128, 64))
    assert hasattr(driver.CUtensorMapDataType, a.data_type) and hasattr(driver.CUtensorMapInterleave, a.interleave)
    assert hasattr(driver.CUtensorMapL2promotion, a.l2_promotion)
    assert hasattr(driver.CUtensorMapFloatOOBfill, a.oob_fill)
    assert all(hasattr(driver.CUtensorMapSwizzle, e) for e in tl.SWIZZLE_ENUM.values())
    assert hasattr(driver.CUfunction_attribute, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES")


def test_params_point_at_their_values_and_the_map_is_aligned():
    tmap = bytes(range(128))
    holders, argv = tl.pack_params([("i32", -7), ("ptr", 0xDEADBEEF000), ("tmap", tmap), ("f32", 0.5)])
    assert len(argv) == 4 and argv in holders
    assert ctypes.c_int32.from_address(argv[0]).value == -7
    assert ctypes.c_uint64.from_address(argv[1]).value == 0xDEADBEEF000
    assert argv[2] % tl.TENSOR_MAP_ALIGN == 0 and ctypes.string_at(argv[2], 128) == tmap
    assert ctypes.c_float.from_address(argv[3]).value == 0.5
    with pytest.raises(ValueError, match="128 bytes"):
        tl.pack_params([("tmap", b"\0" * 64)])


# The rungs whose launch at the ladders' timing shapes cuda.core cannot make: s14 (tensor maps, a 193 KB window), s16
# and s17 (two 32-deep fp32 stages, a 65 KB window). x8's vocabulary-row window (228 KB) is past the limit too, at the
# vocab shape only (test_kernels_tma_ring.py checks that launch).
RAW_AT_TIMING_SHAPES = {"s14-bf16-wgmma-tma", "s16-fp32-ktile32", "s17-fp32-ktile32-lean"}


def test_raw_launch_is_for_tensor_maps_and_big_windows_only():
    """The rungs named above go through cuLaunchKernel; every other rung keeps cuda.core's launch at these shapes (x10's
    cooperative grid takes the raw path at longer rows only: test_cooperative_grid_is_raw)."""
    assert tl.needs_raw_launch(_call()) and _call().launch.shmem > tl.STATIC_SMEM_LIMIT
    raw = {v.id for lad, vs in LADDERS.items() for v in vs if not v.is_baseline
           for c in v.calls(TIMING_SHAPES[lad], DeviceFacts(132)) if tl.needs_raw_launch(c)}
    assert raw == RAW_AT_TIMING_SHAPES


def test_cooperative_grid_is_raw():
    """A cooperative grid (Launch.cooperative: x10's) goes through the driver's cuLaunchCooperativeKernel, which the
    installed cuda.bindings has (the call RawLaunch makes for it); without the flag, the same call keeps cuda.core."""
    plain = KernelCall("softmax/x.cu", "k", Launch((132, 1, 1), (512, 1, 1)), ("ptr:x",))
    coop = KernelCall("softmax/x.cu", "k", Launch((132, 1, 1), (512, 1, 1), cooperative=True), ("ptr:x",))
    assert tl.needs_raw_launch(coop) and not tl.needs_raw_launch(plain)
    driver = pytest.importorskip("cuda.bindings.driver")
    assert callable(driver.cuLaunchCooperativeKernel)


def test_s14_window_is_the_sources():
    """The launch's dynamic shared memory is the number the .cu's static_assert spells (4 stages of 48 KB, 8
    mbarriers, 1 KB to align the window), so a changed pipeline cannot launch with the old window."""
    text = (CUDA_DIR / sgemm.S14_SOURCE).read_text(encoding="utf-8")
    assert f"static_assert(S14_SMEM_BYTES == {sgemm.S14_SMEM_BYTES}," in text
    assert _call().launch.shmem == sgemm.S14_SMEM_BYTES


def test_a_tensor_map_argument_needs_its_box():
    with pytest.raises(ValueError, match="TensorMapBox"):
        KernelCall("sgemm/x.cu", "k", Launch((1, 1, 1), (1, 1, 1)), ("tmap:A",))
    with pytest.raises(ValueError, match="swizzle's width"):
        TensorMapBox("A", 128, 32)  # 64-byte rows under a 128-byte swizzle
    with pytest.raises(ValueError, match="1..256"):
        TensorMapBox("A", 512, 64)


def test_emulator_map_reads_the_array_as_the_kernel_expects():
    """emu::TensorMap2D's 16 words: base, columns, rows, row stride in bytes, box columns, box rows, element bytes,
    swizzle, then zeros; in a 64-byte-aligned slot (the parameter's alignment)."""
    a = np.zeros((130, 200), dtype=np.uint16)
    buf, addr = emulator.tensor_map(a, TensorMapBox("A", 128, 64))
    words = list((ctypes.c_int64 * 16).from_address(addr))
    assert addr % 64 == 0 and ctypes.sizeof(buf) >= 128 + 64
    assert words == [a.ctypes.data, 200, 130, 400, 64, 128, 2, 128] + [0] * 8
