"""The registry's vocabulary: a ladder is a tuple of Variants, a Variant is one rung.

A rung is launched as one or more KernelCalls (a two-pass RMSNorm is two kernels; a reduction
is its rung kernel plus the shared finishing kernel). Everything here is pure Python: tests,
report tables, plots, the CPU emulator and the GPU runner all read the same objects, and none
of them imports torch or CUDA.

Kernel arguments are written as "kind:name" strings -- "ptr:A", "i32:M", "f32:eps" -- and the
name is looked up in the bindings a runner builds for one shape: the tensors it allocated and
the shape's sizes. That keeps the launch description free of any device object. A "tmap:A" argument is a TMA
tensor map of the bound 2D array A, passed by value (128 bytes): its box and swizzle are the call's TensorMapBox
named A, and each runner builds the map its own way (the driver's cuTensorMapEncodeTiled on the GPU,
emu::TensorMap2D in the CPU emulator).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_anatomy.gpu_arch import Requirement, compile_target, parse_source

CUDA_DIR = Path(__file__).resolve().parent / "cuda"
ARG_KINDS = ("ptr", "i32", "f32", "tmap")  # a name is looked up in the bindings; digits are a literal
_ARG_RE = re.compile(r"^(ptr|i32|f32|tmap):([A-Za-z_][A-Za-z0-9_]*|-?[0-9]+(?:\.[0-9]+)?)$")
_HEADER_FIELDS = ("What changes:", "Predicted effect:", "Measured outcome:")


class RungRefused(ValueError):
    """A rung that cannot run a shape by construction (e.g. a row longer than its registers hold)."""


@dataclass(frozen=True)
class DeviceFacts:
    """What a launch configuration may depend on besides the shape."""

    sm_count: int


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shmem: int = 0
    # Blocks per thread-block cluster along x: a fact of the kernel (its __cluster_dims__, fixed at compile
    # time, so the GPU launch passes none); the CPU emulator runs that many blocks together.
    cluster: int = 1
    # Every block resident at once, or no launch: the GPU runner launches cooperatively (the driver refuses a grid
    # that cannot be co-resident rather than let its blocks wait on ones never scheduled); the CPU emulator runs the
    # whole grid as one pool of fibers, so a block may spin on another's global-memory writes.
    cooperative: bool = False

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


SWIZZLES = (0, 32, 64, 128)  # a tensor map's shared-memory swizzle, in bytes (0: none)


@dataclass(frozen=True)
class TensorMapBox:
    """The tile a "tmap:<name>" argument copies: box_rows x box_cols elements of the row-major 2D array bound to
    <name> (its dim 0, the contiguous one, holds the columns), placed in shared memory under `swizzle` bytes."""

    name: str
    box_rows: int
    box_cols: int
    swizzle: int = 128
    elem_bytes: int = 2

    def __post_init__(self) -> None:
        if self.swizzle not in SWIZZLES:
            raise ValueError(f"tensor map {self.name}: swizzle {self.swizzle} not in {SWIZZLES}")
        if not (0 < self.box_rows <= 256 and 0 < self.box_cols <= 256):
            raise ValueError(f"tensor map {self.name}: a TMA box dimension is 1..256 elements, got "
                             f"{self.box_rows} x {self.box_cols}")
        if self.swizzle and self.box_cols * self.elem_bytes != self.swizzle:
            raise ValueError(f"tensor map {self.name}: a swizzled box row is the swizzle's width ({self.swizzle} B), "
                             f"got {self.box_cols} x {self.elem_bytes} B")


@dataclass(frozen=True)
class KernelCall:
    """One kernel launch: which file, which extern "C" symbol, its config and its arguments."""

    source: str  # path relative to kernels/cuda/, e.g. "sgemm/s1_naive.cu"
    kernel: str
    launch: Launch
    args: tuple[str, ...]
    # Preprocessor macros the source is compiled with (an autotuning candidate's tile shape): every
    # compiler of the project -- NVRTC on the device, nvcc here, the emulator's g++ -- passes them as -D.
    defines: tuple[tuple[str, int], ...] = ()
    # The box of every "tmap:<name>" argument, by name.
    tensor_maps: tuple[TensorMapBox, ...] = ()

    def __post_init__(self) -> None:
        for a in self.args:
            if not _ARG_RE.match(a):
                raise ValueError(f"{self.kernel}: argument {a!r} must be 'kind:name' with kind in {ARG_KINDS}")
        named = {m.name for m in self.tensor_maps}
        wanted = {name for kind, name in self.parsed_args() if kind == "tmap"}
        if named != wanted:
            raise ValueError(f"{self.kernel}: tensor map arguments {sorted(wanted)} need exactly one TensorMapBox "
                             f"each, got boxes for {sorted(named)}")

    def tensor_map(self, name: str) -> TensorMapBox:
        return next(m for m in self.tensor_maps if m.name == name)

    def parsed_args(self) -> tuple[tuple[str, str], ...]:
        return tuple((a.split(":", 1)[0], a.split(":", 1)[1]) for a in self.args)

    def bind(self, bindings: Mapping[str, Any]) -> list[tuple[str, Any]]:
        """[(kind, value)] for this launch: names looked up in `bindings`, literals parsed."""
        out: list[tuple[str, Any]] = []
        for kind, name in self.parsed_args():
            if name[0].isdigit() or name[0] == "-":
                out.append((kind, float(name) if kind == "f32" else int(name)))
            elif name in bindings:
                out.append((kind, bindings[name]))
            else:
                raise KeyError(f"{self.kernel}: argument {name!r} has no binding (have {sorted(bindings)})")
        return out


LaunchFn = Callable[[Mapping[str, int], DeviceFacts], tuple[KernelCall, ...]]


# The card whose times the rung headers pre-register (Variant.h200_ms): the tests reconcile those
# times on this card only; another card gets the ledgers, not a 15% band around someone else's guess.
PREREGISTERED_ON = "h200"


@dataclass(frozen=True)
class Variant:
    """One rung of a ladder.

    id        -- stable short id used in recording names ("s3-smem-tiling")
    title     -- one line for tables
    source    -- the rung's own .cu file (relative to kernels/cuda/), or None for the library
                 baseline (rung 0: cuBLAS / torch), which the runner calls by `baseline`
    launch    -- shape, device -> the KernelCalls that make up one run of the rung
    changes   -- what this rung changes relative to the previous one (also in the file header)
    theory    -- the access pattern the ledgers in theory/kernels.py price (frozen dataclass)
    ladder    -- "sgemm", "reduction", "rmsnorm", "softmax"
    dtype     -- operand dtype ("fp32", "bf16")
    baseline  -- for rung 0: the library call ("torch.matmul", "torch.sum", ...)
    max_cols  -- rows longer than this are refused (register-resident rungs)
    row_threads -- threads that share one row's registers (a block of 256, or a warp of 32)
    workspace -- shape, device -> {buffer name: float32 elements} the runner allocates
    check_shapes -- shapes the device plan checks the rung at beside the ladder's (one it is built for and timed at)
    workspace_zeroed -- the runners allocate the workspace zeroed, once per prepared shape (a kernel that counts in
                 it, x10's row counters), instead of uninitialised (the GPU) or NaN (the emulator)
    k_multiple -- K must be a multiple of this, or the shape is refused (a TMA rung: a tensor map's row stride
                 is a multiple of 16 bytes, K % 8 == 0 in bf16)
    h200_ms   -- ((shape label, ms), ...): the PREREGISTERED_ON card's median time pre-registered in the rung's
                 header ("Predicted effect: H200, <shape>: X ms") before any H200 measurement;
                 a registry test keeps the two in sync, the H200 tests reconcile against it
    """

    id: str
    title: str
    source: str | None
    launch: LaunchFn | None
    changes: str
    theory: Any
    ladder: str
    dtype: str = "fp32"
    baseline: str | None = None
    max_cols: int | None = None
    row_threads: int = 256
    workspace: Callable[[Mapping[str, int], DeviceFacts], Mapping[str, int]] | None = None
    notes: tuple[str, ...] = field(default=())
    h200_ms: tuple[tuple[str, float], ...] = ()
    k_multiple: int | None = None
    workspace_zeroed: bool = False
    check_shapes: tuple[dict[str, int], ...] = ()  # shapes the device plan also checks it at (s18: its 32-row split)

    def preregistered_ms(self, shape: Mapping[str, int]) -> float | None:
        """The pre-registered H200 time at `shape` in ms, or None where the header gives none."""
        return dict(self.h200_ms).get(shape_label(shape))

    @property
    def is_baseline(self) -> bool:
        return self.source is None

    @property
    def path(self) -> Path | None:
        return None if self.source is None else CUDA_DIR / self.source

    def calls(self, shape: Mapping[str, int], device: DeviceFacts) -> tuple[KernelCall, ...]:
        """The launches for `shape`; RungRefused when the rung cannot hold it."""
        self.check(shape)
        if self.launch is None:
            return ()
        return self.launch(shape, device)

    def check(self, shape: Mapping[str, int]) -> None:
        if self.k_multiple is not None and shape.get("K", 0) % self.k_multiple:
            raise RungRefused(
                f"{self.ladder} rung {self.id} loads its tiles through TMA tensor maps, whose row stride must be a "
                f"multiple of 16 bytes: K must be a multiple of {self.k_multiple}, got K={shape['K']:,}. Use s12 "
                "(cp.async, any K) for this shape.")
        if self.max_cols is not None and shape.get("N", 0) > self.max_cols:
            raise RungRefused(
                f"{self.ladder} rung {self.id} keeps a whole row in registers and holds at most "
                f"{self.max_cols:,} columns ({self.row_threads} threads x {self.max_cols // self.row_threads} values); "
                f"N={shape['N']:,} would need {-(-shape['N'] // self.row_threads)} registers per thread for the row alone "
                f"(the hardware limit is 255). Use a streaming rung (two-pass or online) for rows this long.")

    def requirements(self, shape: Mapping[str, int], device: DeviceFacts) -> tuple[Requirement, ...]:
        """What the architecture must offer for every kernel the rung launches at `shape` (none for a library
        baseline, or for a shape the rung refuses: the refusal is its outcome there)."""
        try:
            return tuple(r for src in self.sources(shape, device) for r in requirements_of(src))
        except RungRefused:
            return ()

    def sources(self, shape: Mapping[str, int], device: DeviceFacts) -> tuple[str, ...]:
        """Every .cu file the rung's launches need, rung file first."""
        out: list[str] = [] if self.source is None else [self.source]
        for call in self.calls(shape, device):
            if call.source not in out:
                out.append(call.source)
        return tuple(out)


def shape_label(shape: Mapping[str, int]) -> str:
    """The shape part of a recording name: n268435456, 4096x4096x4096, 8192x3584."""
    if "n" in shape:
        return f"n{shape['n']}"
    return "x".join(str(shape[k]) for k in ("M", "N", "K") if k in shape)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def requirements_of(source: str) -> tuple[Requirement, ...]:
    """The architectures a .cu file needs: its `// requires: sm_XY[a] (why)` lines (gpu_arch)."""
    return parse_source((CUDA_DIR / source).read_text(encoding="utf-8"))


def arch_for(source: str, arch: str) -> str:
    """The target to compile `source` for on an `arch` machine: a rung that uses arch-specific instructions
    (wgmma exists on sm_90a only) says so in a line `// requires: sm_90a`, taken when it extends `arch`."""
    return compile_target(requirements_of(source), arch)


def header_of(path: Path) -> dict[str, str]:
    """The llm.c-style header comment of a rung file as {field: text}.

    Raises ValueError naming the file when a field is missing: every rung states what it
    changes, what it predicts and what was measured."""
    text = path.read_text(encoding="utf-8")
    m = re.match(r"\s*/\*(.*?)\*/", text, re.DOTALL)
    if m is None:
        raise ValueError(f"{path}: no header comment; a rung file starts with /* what changes, predicted effect, "
                         "measured outcome */")
    body = m.group(1)
    out = {"title": body.strip().splitlines()[0].strip()}
    for i, name in enumerate(_HEADER_FIELDS):
        start = body.find(name)
        if start < 0:
            raise ValueError(f"{path}: header has no {name!r} paragraph")
        end = min([body.find(n, start + 1) for n in _HEADER_FIELDS[i + 1:] + ("Seed",) if body.find(n, start + 1) > 0]
                  or [len(body)])
        out[name.rstrip(":").lower().replace(" ", "_")] = " ".join(body[start + len(name):end].split())
    return out
