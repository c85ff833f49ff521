"""NVRTC's cubin of a kernel source, compiled once per test run (pytest_anatomy/run_share.py).

The same sources are compiled by both xdist workers' share of the tests, by the background build of the report of
every suite and by the mutation catalogue's baseline replay: ~4 s of NVRTC in each. The cubin is a pure function of
the source text and the options, none of them theory, so the first process compiles it and the others read its bytes.
"""

from __future__ import annotations

from typing import Any

from pytest_anatomy import run_share


def cubin(program: Any, source: str, text: str, arch: str, defines: tuple[tuple[str, str], ...] = ()) -> bytes:
    """`program.compile("cubin")`'s bytes; `source`, `text`, `arch` and `defines` are what `program` was built from
    (with std c++17), the key under which a compile is shared."""
    key = run_share.key_of("nvrtc-cubin", source, text, arch, "c++17", *(f"{k}={v}" for k, v in defines))
    return run_share.once(key, lambda: bytes(program.compile("cubin").code))
