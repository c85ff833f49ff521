"""Run a rung's CUDA source on the CPU (cuda_emu.h) to prove its indexing and arithmetic.

`build(source)` compiles one .cu file with g++ against cuda_emu.h into a shared library that
exports `emu_launch_<kernel>` for every extern "C" kernel in it; builds are cached on disk by a
hash of the source, the header and the compiler flags. `run(variant, shape, inputs)` launches
the rung's KernelCalls exactly as the GPU runner would (same registry, same bindings) on numpy
arrays and returns the output, which starts poisoned with NaN.

Small shapes only: every CUDA thread is a fiber, so a 1000^3 GEMM would take minutes.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pytest_anatomy.file_lock import exclusive
from pytest_anatomy.kernels.reference import output_shape
from pytest_anatomy.kernels.registry import CUDA_DIR, DeviceFacts, KernelCall, TensorMapBox, Variant

HEADER = Path(__file__).resolve().parent / "cuda_emu.h"
FLAGS = ("-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-x", "c++")
_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+(?:void\s+)?(?:__cluster_dims__\([^)]*\)\s*)?'
                        r'(?:__launch_bounds__\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(')
_LIBS: dict[str, ctypes.CDLL] = {}
_PRECOMPILED: dict[tuple[str, Path], Path] = {}  # (compiler, build cache) -> the header _precompiled gave


class EmulatorUnavailable(RuntimeError):
    """No C++ compiler here: the emulated correctness tests skip with this message."""


def compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        raise EmulatorUnavailable("no C++ compiler (g++ or clang++) on PATH; the CPU emulation of the kernels needs one")
    return cxx


def kernels_in(source: str) -> list[str]:
    return _KERNEL_RE.findall((CUDA_DIR / source).read_text(encoding="utf-8"))


def cache_dir() -> Path:
    base = os.environ.get("PYTEST_ANATOMY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pytest-anatomy")
    path = Path(base) / "emu"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build(source: str, defines: tuple[tuple[str, int], ...] = ()) -> ctypes.CDLL:
    memo = source + "".join(f" -D{k}={v}" for k, v in defines)
    if memo in _LIBS:
        return _LIBS[memo]
    cxx = compiler()
    text = (CUDA_DIR / source).read_text(encoding="utf-8")
    exports = "".join(f"EMU_EXPORT({k})\n" for k in kernels_in(source))
    macros = "".join(f"#define {k} {v}\n" for k, v in defines)  # before the source: its #ifndef defaults yield
    # The source is included by its path under CUDA_DIR (passed with -I), not by its absolute path: the key then hashes
    # what is compiled, not where the checkout lies, and a fresh clone finds the builds its machine already made.
    unit = f'{macros}#include "{source}"\n{exports}'
    key = hashlib.sha256("\0".join((text, HEADER.read_text(), unit, cxx, *FLAGS)).encode()).hexdigest()[:20]
    lib = cache_dir() / f"{Path(source).stem}-{key}.so"
    if not lib.exists():
        with exclusive(lib):  # another process (an xdist worker, the background report build) may be building it
            if not lib.exists():
                _compile(cxx, unit, lib, source)
    _LIBS[memo] = ctypes.CDLL(str(lib))
    return _LIBS[memo]


def _compile(cxx: str, unit: str, lib: Path, source: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "unit.cpp"
        src.write_text(unit)
        out = Path(tmp) / lib.name
        proc = subprocess.run([cxx, *FLAGS, "-I", str(CUDA_DIR), "-include", str(_precompiled(cxx)), str(src),
                               "-o", str(out)], capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"emulator build of {source} failed:\n{proc.stderr[-4000:]}")
        os.replace(out, lib)


def _precompiled(cxx: str) -> Path:
    """The header to -include: a copy of cuda_emu.h beside its precompiled form (cuda_emu.h.gch), which g++ reads
    instead of parsing the header and the standard headers it includes again for every unit: ~0.25 s of each of the
    ~40 builds a cold run makes (24.6 s -> 15.4 s of g++ for the ladders' sources, the libraries byte for byte the
    same). Made once per header, compiler and flags, in the build cache; a compiler that cannot make one (or does not
    read it: clang looks for .pch) gets the header itself, whose text is the same, and so is what it builds."""
    memo = (cxx, cache_dir())
    if memo not in _PRECOMPILED or not _PRECOMPILED[memo].exists():
        _PRECOMPILED[memo] = _make_precompiled(cxx)
    return _PRECOMPILED[memo]


def _make_precompiled(cxx: str) -> Path:
    key = hashlib.sha256("\0".join((HEADER.read_text(), cxx, *FLAGS)).encode()).hexdigest()[:20]
    folder = cache_dir() / f"cuda_emu-{key}"
    header, gch = folder / HEADER.name, folder / f"{HEADER.name}.gch"
    if gch.exists():
        return header
    folder.mkdir(exist_ok=True)
    with exclusive(folder / "pch"):  # one process makes it, the others wait for it
        if gch.exists():
            return header
        shutil.copyfile(HEADER, header)
        tmp = folder / f"{gch.name}.{os.getpid()}.tmp"  # renamed whole over the name g++ looks for
        pch_flags = [f for f in FLAGS if f not in ("-shared", "-x", "c++")]  # the units' flags, for a header
        proc = subprocess.run([cxx, *pch_flags, "-x", "c++-header", str(header), "-o", str(tmp)],
                              capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0 or not tmp.is_file():
            tmp.unlink(missing_ok=True)
            return HEADER
        os.replace(tmp, gch)
    return header


TENSOR_MAP_BYTES = 128


def tensor_map(array: np.ndarray, box: TensorMapBox) -> tuple[Any, int]:
    """cuda_emu.h's emu::TensorMap2D of a row-major 2D array, as 16 int64 (base address, columns, rows, row stride
    in bytes, box columns, box rows, element bytes, swizzle bytes, 8 zeros) in a 64-byte-aligned slot of a buffer:
    (the buffer, which must outlive the launch, and the slot's address)."""
    if array.ndim != 2 or array.strides[1] != array.itemsize or array.itemsize != box.elem_bytes:
        raise ValueError(f"tensor map {box.name}: a row-major 2D array of {box.elem_bytes}-byte elements, got "
                         f"{array.dtype} {array.shape} strides {array.strides}")
    buf = ctypes.create_string_buffer(TENSOR_MAP_BYTES + 64)
    addr = -(-ctypes.addressof(buf) // 64) * 64
    fields = (array.ctypes.data, array.shape[1], array.shape[0], array.strides[0], box.box_cols, box.box_rows,
              box.elem_bytes, box.swizzle) + (0,) * 8
    (ctypes.c_int64 * 16).from_address(addr)[:] = list(fields)
    return buf, addr


def _arg(kind: str, value: Any) -> Any:
    if kind == "ptr":
        return ctypes.c_void_p(value.ctypes.data)
    if kind == "i32":
        return ctypes.c_int32(int(value))
    return ctypes.c_float(float(value))


def _argv(call: KernelCall, bindings: Mapping[str, Any]) -> tuple[list[Any], Any]:
    """The launch's argument holders (kept alive by the caller) and the void* array that points at them."""
    holders: list[Any] = []
    addresses: list[int] = []
    for (kind, name), (_, value) in zip(call.parsed_args(), call.bind(bindings)):
        if kind == "tmap":
            buf, addr = tensor_map(value, call.tensor_map(name))
            holders.append(buf)
            addresses.append(addr)
        else:
            h = _arg(kind, value)
            holders.append(h)
            addresses.append(ctypes.addressof(h))
    return holders, (ctypes.c_void_p * len(addresses))(*addresses)


def run(variant: Variant, shape: Mapping[str, int], inputs: Mapping[str, np.ndarray], *,
        device: DeviceFacts | None = None, eps: float = 1e-6,
        workspace: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """The rung's output on `inputs` (poisoned with NaN before the launches); 4 SMs by default. The workspace is
    NaN, or zeros where the rung asks for it zeroed (Variant.workspace_zeroed); a caller that passes `workspace`
    gets the buffers made into it and the same ones on its next call (a second launch on one workspace, as the GPU
    runner's timing runs make)."""
    calls = variant.calls(shape, device or DeviceFacts(sm_count=4))
    out_dtype = np.uint16 if variant.dtype == "bf16" else np.float32
    out = np.full(output_shape(variant.ladder, shape), np.nan, dtype=np.float32)
    if variant.dtype == "bf16":
        out = np.full(out.shape, 0x7FC0, dtype=out_dtype)  # bf16 NaN
    bindings: dict[str, Any] = {**shape, **inputs, "eps": eps, "C": out, "y": out, "out": out}
    if variant.workspace is not None:
        kept = {} if workspace is None else workspace
        for name, count in variant.workspace(shape, device or DeviceFacts(sm_count=4)).items():
            if name not in kept:
                kept[name] = np.full(count, 0.0 if variant.workspace_zeroed else np.nan, dtype=np.float32)
            bindings[name] = kept[name]
    for call in calls:
        fn = getattr(build(call.source, call.defines), f"emu_launch_{call.kernel}")
        fn.restype = ctypes.c_int
        holders, argv = _argv(call, bindings)
        grid = (ctypes.c_int * 3)(*call.launch.grid)
        block = (ctypes.c_int * 3)(*call.launch.block)
        pool = call.launch.blocks if call.launch.cooperative else call.launch.cluster  # blocks run together
        if call.launch.cooperative and call.launch.grid[1:] != (1, 1):
            raise ValueError(f"{variant.id}: {call.kernel}: the emulator runs a cooperative grid along x only")
        if fn(argv, grid, block, ctypes.c_int(pool)) != 0:
            raise RuntimeError(f"{variant.id}: {call.kernel} deadlocked in the emulator (see stderr)")
    return out
