"""Each kernel file's `// requires:` line is where NVRTC itself stops: not missing, not stricter than the compiler.

A live session skips a rung on a card whose architecture its files' requirements exclude (gpu_arch), and compiles it
everywhere else. So a file that needs sm_80 and does not say so fails on an older card as a compile error instead of
a skip, and a requirement stricter than the instructions used hides a rung from cards that could run it. NVRTC
13.0 (the device's compiler, pinned here) compiles for any target without a GPU, so both sides of every boundary
are checked on the CPU: the file compiles at its requirement and fails just below it (for an arch-specific sm_90a,
also just above), and a file without a requirement compiles for the oldest target NVRTC 13 has.
"""

from __future__ import annotations

import pytest

from pytest_anatomy.gpu_arch import Requirement
from pytest_anatomy.kernels.compile import check_compiles, resource_report
from pytest_anatomy.kernels.registry import CUDA_DIR, requirements_of

# CUDA 13's targets, oldest (Turing) to newest; the architectures a file's requirement is checked between
NVRTC_TARGETS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
SOURCES = sorted(str(p.relative_to(CUDA_DIR)) for p in CUDA_DIR.rglob("*.cu"))


def _cc(arch: str) -> tuple[int, int]:
    return Requirement(arch).compute_capability


def _compiles(source: str, arch: str) -> bool:
    try:
        check_compiles(source, arch)  # one NVRTC compile, not resource_report's confirmed two: only the answer counts
    except RuntimeError as exc:
        assert "NVRTC failed" in str(exc), exc  # a compile error, not a missing tool
        return False
    return True


@pytest.fixture(scope="module", autouse=True)
def _nvrtc() -> None:
    try:
        resource_report("reduction/r1_interleaved.cu", "sm_90")
    except Exception as exc:  # noqa: BLE001 - ImportError or NVRTC's library missing: both mean "cannot check here"
        pytest.skip(f"NVRTC unavailable ({type(exc).__name__}); pip install cuda-core nvidia-cuda-nvrtc")


@pytest.mark.parametrize("source", SOURCES)
def test_a_kernel_files_requirement_is_where_nvrtc_stops(source: str) -> None:
    reqs = requirements_of(source)
    if not reqs:
        assert _compiles(source, NVRTC_TARGETS[0]), f"{source} needs more than {NVRTC_TARGETS[0]}: say which in a " \
                                                    "`// requires: sm_XY (why)` line after its header"
        return
    for r in reqs:
        base = r.arch.rstrip("a")
        below = [a for a in NVRTC_TARGETS if _cc(a) < r.compute_capability][-1]
        assert _compiles(source, base), f"{source} does not compile at its own requirement {r.arch}"
        assert not _compiles(source, below), f"{source} compiles at {below}: its requirement {r.arch} is too strict"
        if r.arch_specific:
            above = next(a for a in NVRTC_TARGETS if _cc(a) > r.compute_capability)
            assert not _compiles(source, above), f"{source} compiles at {above}: drop the 'a' from {r.arch}"
        else:
            assert _compiles(source, NVRTC_TARGETS[-1]), f"{source} fails at {NVRTC_TARGETS[-1]}: its requirement " \
                                                         f"{r.arch} claims every newer architecture"
