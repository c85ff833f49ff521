"""Launches cuda.core cannot make: a TMA tensor map passed by value, dynamic shared memory above 48 KB, and a
cooperative grid (every block resident: cuLaunchCooperativeKernel, the same on every cuda-bindings version).

A rung that loads its tiles with cp.async.bulk.tensor (sgemm s14) takes a `CUtensorMap` -- 128 opaque bytes the
driver's cuTensorMapEncodeTiled builds on the host -- as a `__grid_constant__` kernel parameter, and a 4-stage
pipeline needs ~193 KB of dynamic shared memory, which a kernel may use only after the
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES opt-in. cuda.core's launch passes pointers and scalars only, so
such a call is launched here through cuda.bindings' cuLaunchKernel with an explicit void* array of its
arguments, on torch's current stream like every other launch (measure/kernel_runner.py).

What the CPU can check is split out as pure functions (tests_kernels/test_kernels_tma_launch.py): the encode
arguments (dims, strides, box, swizzle enum) and the parameter packing. cuda.bindings and torch are imported
inside functions only.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_anatomy.kernels.registry import KernelCall, TensorMapBox

STATIC_SMEM_LIMIT = 48 * 1024  # above this a launch needs the dynamic shared memory opt-in
TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGN = 64
SWIZZLE_ENUM = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B", 64: "CU_TENSOR_MAP_SWIZZLE_64B",
                128: "CU_TENSOR_MAP_SWIZZLE_128B"}
DATA_TYPE_ENUM = {2: "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"}  # element bytes -> the maps the ladder builds (bf16)


def needs_raw_launch(call: KernelCall) -> bool:
    """A call this module launches: a tensor map argument, dynamic shared memory past 48 KB, or a cooperative grid
    (Launch.cooperative: the driver's own cooperative launch, whatever cuda.core's version names its flag)."""
    return (any(kind == "tmap" for kind, _ in call.parsed_args()) or call.launch.shmem > STATIC_SMEM_LIMIT
            or call.launch.cooperative)


@dataclass(frozen=True)
class EncodeArgs:
    """cuTensorMapEncodeTiled's arguments for a row-major rows x cols tensor (dim 0 the contiguous columns)."""

    data_type: str
    rank: int
    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]  # bytes, for dims 1.. (dim 0 is contiguous)
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: str
    swizzle: str
    l2_promotion: str
    oob_fill: str


def encode_args(rows: int, cols: int, row_stride_bytes: int, address: int, box: TensorMapBox) -> EncodeArgs:
    """The tiled map of one 2D tensor; raises ValueError on what the driver would refuse (an address or row stride
    off 16 bytes, a dimension past 2^32). Out-of-bounds elements of a box read as zeros (OOB fill NONE)."""
    if address % 16 or row_stride_bytes % 16:
        raise ValueError(f"tensor map {box.name}: the global address ({address:#x}) and the row stride "
                         f"({row_stride_bytes} B) must be multiples of 16 bytes")
    if not (0 < rows <= 2**32 and 0 < cols <= 2**32):
        raise ValueError(f"tensor map {box.name}: dimensions {rows} x {cols} outside 1..2^32")
    return EncodeArgs(DATA_TYPE_ENUM[box.elem_bytes], 2, address, (cols, rows), (row_stride_bytes,),
                      (box.box_cols, box.box_rows), (1, 1), "CU_TENSOR_MAP_INTERLEAVE_NONE", SWIZZLE_ENUM[box.swizzle],
                      "CU_TENSOR_MAP_L2_PROMOTION_L2_256B", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")


def _check(result: Any, what: str) -> Any:
    """cuda.bindings returns (CUresult, values...): raise on an error, return the values."""
    from cuda.bindings import driver

    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


def encode(tensor: Any, box: TensorMapBox) -> bytes:
    """The 128 bytes of the driver's tensor map of a 2D torch tensor (row-major, contiguous rows)."""
    from cuda.bindings import driver

    if tensor.dim() != 2 or tensor.stride(1) != 1 or tensor.element_size() != box.elem_bytes:
        raise ValueError(f"tensor map {box.name}: a row-major 2D tensor of {box.elem_bytes}-byte elements, got "
                         f"{tensor.dtype} {tuple(tensor.shape)} strides {tensor.stride()}")
    a = encode_args(tensor.shape[0], tensor.shape[1], tensor.stride(0) * tensor.element_size(), tensor.data_ptr(),
                    box)
    tmap = _check(driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, a.data_type), a.rank, a.address,
        [driver.cuuint64_t(x) for x in a.dims], [driver.cuuint64_t(x) for x in a.strides],
        [driver.cuuint32_t(x) for x in a.box], [driver.cuuint32_t(x) for x in a.element_strides],
        getattr(driver.CUtensorMapInterleave, a.interleave), getattr(driver.CUtensorMapSwizzle, a.swizzle),
        getattr(driver.CUtensorMapL2promotion, a.l2_promotion), getattr(driver.CUtensorMapFloatOOBfill, a.oob_fill)),
        f"cuTensorMapEncodeTiled({box.name})")
    return ctypes.string_at(tmap.getPtr(), TENSOR_MAP_BYTES)


def pack_params(items: Sequence[tuple[str, Any]]) -> tuple[list[Any], Any]:
    """cuLaunchKernel's kernelParams for [(kind, value)]: kind "ptr" (an address), "i32", "f32" or "tmap" (the
    map's 128 bytes, copied into a 64-byte-aligned slot: the parameter's alignment). Returns the holders, which must
    outlive every launch, and the void* array (pass ctypes.addressof of it)."""
    holders: list[Any] = []
    addresses: list[int] = []
    for kind, value in items:
        if kind == "tmap":
            if len(value) != TENSOR_MAP_BYTES:
                raise ValueError(f"a tensor map is {TENSOR_MAP_BYTES} bytes, got {len(value)}")
            buf = ctypes.create_string_buffer(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN)
            addr = -(-ctypes.addressof(buf) // TENSOR_MAP_ALIGN) * TENSOR_MAP_ALIGN
            ctypes.memmove(addr, bytes(value), TENSOR_MAP_BYTES)
            holders.append(buf)
            addresses.append(addr)
            continue
        h: Any = {"ptr": ctypes.c_uint64, "i32": ctypes.c_int32, "f32": ctypes.c_float}[kind](value)
        holders.append(h)
        addresses.append(ctypes.addressof(h))
    argv = (ctypes.c_void_p * len(addresses))(*addresses)
    holders.append(argv)
    return holders, argv


def function_of(kernel: Any) -> Any:
    """The CUfunction of a cuda.core Kernel in the current context (cuda.core loads libraries: its handle is a
    CUkernel, whose function cuKernelGetFunction gives; an older cuda.core's CUfunction is taken as it is)."""
    from cuda.bindings import driver

    h = kernel.handle
    if isinstance(h, driver.CUkernel):
        return _check(driver.cuKernelGetFunction(h), "cuKernelGetFunction")
    return h


def opt_in_shared(kernel: Any, shmem: int) -> None:
    """Allow `shmem` bytes of dynamic shared memory (needed above 48 KB), on the context's function and, where the
    handle is a library kernel, on the kernel for every device (what cuda.core's occupancy queries read)."""
    from cuda.bindings import driver

    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    _check(driver.cuFuncSetAttribute(function_of(kernel), attr, shmem), "cuFuncSetAttribute")
    if isinstance(kernel.handle, driver.CUkernel):
        dev = _check(driver.cuCtxGetDevice(), "cuCtxGetDevice")
        _check(driver.cuKernelSetAttribute(attr, shmem, kernel.handle, dev), "cuKernelSetAttribute")


class RawLaunch:
    """One prepared launch through cuLaunchKernel: arguments bound and packed once, then launched on a stream."""

    def __init__(self, kernel: Any, call: KernelCall, bindings: dict[str, Any], stream_handle: int) -> None:
        from cuda.bindings import driver

        items: list[tuple[str, Any]] = []
        for (kind, name), (_, value) in zip(call.parsed_args(), call.bind(bindings)):
            if kind == "tmap":
                items.append(("tmap", encode(value, call.tensor_map(name))))
            elif kind == "ptr":
                items.append(("ptr", value.data_ptr()))
            else:
                items.append((kind, value))
        if call.launch.shmem > STATIC_SMEM_LIMIT:
            opt_in_shared(kernel, call.launch.shmem)
        self.holders, self.argv = pack_params(items)
        self.fn = function_of(kernel)
        self.launch = call.launch
        self.stream = driver.CUstream(stream_handle)

    def __call__(self) -> None:
        from cuda.bindings import driver

        g, b = self.launch.grid, self.launch.block
        if self.launch.cooperative:  # refused (COOPERATIVE_LAUNCH_TOO_LARGE) unless every block fits at once
            _check(driver.cuLaunchCooperativeKernel(self.fn, g[0], g[1], g[2], b[0], b[1], b[2], self.launch.shmem,
                                                    self.stream, ctypes.addressof(self.argv)),
                   "cuLaunchCooperativeKernel")
            return
        _check(driver.cuLaunchKernel(self.fn, g[0], g[1], g[2], b[0], b[1], b[2], self.launch.shmem, self.stream,
                                     ctypes.addressof(self.argv), 0), "cuLaunchKernel")
