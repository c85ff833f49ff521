"""What a kernel needs of the GPU's architecture, and what a live session does on a card without it.

A kernel that uses an architecture's own instructions cannot run on an older card (cp.async and bf16
mma.sync need sm_80, thread-block clusters sm_90) and, for the arch-specific targets, on a newer one
either: wgmma and setmaxnreg exist on sm_90a only (Blackwell has tcgen05 instead). On such a card
the kernel does not fail as a finding; it is not applicable, and the live session skips it with
the reason instead of spending a compile (or, for a Gluon kernel, an LLVM abort) on it.

A requirement is written where the kernel is: a CUDA rung's file says `// requires: sm_90 (why)`
(kernels/registry.py reads it, and NVRTC compiles an `sm_90a` file for the arch-specific target);
an attention rung names it in its registry entry. tests_kernels/test_kernels_arch.py compiles each
file on both sides of its boundary, so a requirement that is missing or too strict fails CI.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_ARCH_RE = re.compile(r"^sm_(\d+)(\d)(a?)$")
_LINE_RE = re.compile(r"^// requires: (sm_\d+a?)(?: \((.*)\))?\s*$", re.MULTILINE)

ComputeCapability = tuple[int, int]


class NotOnThisGPU(Exception):
    """The live GPU's architecture cannot run this kernel (the fixtures turn it into a skip with the message)."""


@dataclass(frozen=True)
class Requirement:
    """`sm_XY`: compute capability X.Y or newer; `sm_XYa`: exactly X.Y (an arch-specific target)."""

    arch: str
    why: str = ""

    def __post_init__(self) -> None:
        if not _ARCH_RE.match(self.arch):
            raise ValueError(f"{self.arch!r} is not an architecture like sm_80 or sm_90a")

    @property
    def compute_capability(self) -> ComputeCapability:
        m = _ARCH_RE.match(self.arch)
        assert m is not None  # checked in __post_init__
        return int(m.group(1)), int(m.group(2))

    @property
    def arch_specific(self) -> bool:
        return self.arch.endswith("a")

    def met_by(self, cc: ComputeCapability) -> bool:
        if self.arch_specific:
            return tuple(cc) == self.compute_capability
        return tuple(cc) >= self.compute_capability

    def describe(self) -> str:
        major, minor = self.compute_capability
        which = f"compute capability {major}.{minor} exactly" if self.arch_specific else f"{major}.{minor} or newer"
        return f"{self.arch} ({which}{': ' + self.why if self.why else ''})"


def arch_name(cc: ComputeCapability) -> str:
    return f"sm_{cc[0]}{cc[1]}"


def parse_source(text: str) -> tuple[Requirement, ...]:
    """Every `// requires: sm_XY[a] (why)` line of a kernel source (none: it runs on any CUDA GPU)."""
    return tuple(Requirement(m.group(1), (m.group(2) or "").strip()) for m in _LINE_RE.finditer(text))


def compile_target(requirements: Iterable[Requirement], arch: str) -> str:
    """The NVRTC target for a source on an `arch` machine: its arch-specific variant (sm_90a) where the source
    requires that and the machine is that architecture, else `arch` itself."""
    for r in requirements:
        if r.arch_specific and r.arch[:-1] == arch:
            return r.arch
    return arch


def unmet(requirements: Iterable[Requirement], cc: ComputeCapability | None) -> Requirement | None:
    """The first requirement the card does not meet; None when all are met or the card's architecture is unknown
    (then the kernel is tried, and a real incompatibility fails as the compiler says)."""
    if cc is None:
        return None
    return next((r for r in requirements if not r.met_by(cc)), None)


def not_here_message(what: str, requirement: Requirement, cc: ComputeCapability) -> str:
    return (f"{what} needs {requirement.describe()}; this GPU is {arch_name(cc)}, so it is not measured here "
            "(not a finding: the kernel cannot run on this architecture)")


_MESSAGE_RE = re.compile(r"^(?P<what>.+?)(?: at \S+)? needs (?P<arch>sm_\d+a?) \(")


def summarize(reasons: Iterable[str]) -> str:
    """The kernels behind not_here_message skips, by the architecture they need, in one line:
    "sm_90a: sgemm rung s12-bf16-wgmma, ...; sm_90: softmax rung x6-cluster-row, ..." (other reasons counted)."""
    by_arch: dict[str, list[str]] = {}
    other = 0
    for reason in reasons:
        m = _MESSAGE_RE.match(reason)
        if m is None:
            other += 1
            continue
        names = by_arch.setdefault(m.group("arch"), [])
        if m.group("what") not in names:
            names.append(m.group("what"))
    parts = [f"{arch}: {', '.join(names)}" for arch, names in sorted(by_arch.items(), reverse=True)]
    return "; ".join(parts + ([f"{other} other reason{'s' if other > 1 else ''}"] if other else []))


def check(what: str, requirements: Iterable[Requirement], cc: ComputeCapability | None) -> None:
    """Raise NotOnThisGPU when the card cannot run `what`."""
    missing = unmet(requirements, cc)
    if missing is not None and cc is not None:
        raise NotOnThisGPU(not_here_message(what, missing, cc))


def check_shared_memory(what: str, need_bytes: int, limit_bytes: int | None) -> None:
    """Raise NotOnThisGPU when a launch asks for more dynamic shared memory than one block may opt in to on this card
    (227 KiB on Hopper, 99 KiB on Ada and consumer Blackwell): an architecture fact the requirement lines do not
    carry, known only to the driver, so it is checked in the runner, not at collection."""
    if limit_bytes is not None and need_bytes > limit_bytes:
        raise NotOnThisGPU(f"{what} asks for {need_bytes / 1024:.0f} KiB of shared memory a block; this GPU allows "
                           f"{limit_bytes / 1024:.0f} KiB, so it is not measured here (not a finding: the kernel "
                           "cannot run on this card)")


def skip_reason(what: str, requirements: Iterable[Requirement], target: object) -> str | None:
    """For collection: the skip reason of a live target's case whose kernel the card cannot run, else None
    (replayed targets run what their recordings hold)."""
    if not getattr(target, "live", False):
        return None
    cc = getattr(target, "compute_capability", None)
    missing = unmet(requirements, cc)
    return None if missing is None or cc is None else not_here_message(what, missing, cc)
