"""The switch for the CPU tests of the Triton kernels: called by their module-scoped fixture,
before any kernel module is imported."""

from __future__ import annotations

import os
import sys

import pytest

from pytest_anatomy.kernels.flashattn import registry


def interpreted_rungs() -> list:
    """Every rung as a parameter; a Gluon rung skipped with the reason (the interpreter runs triton.language only;
    its correctness is checked on the GPU, its sm_90a compile in test_flashattn_sm90.py)."""
    return [pytest.param(r, id=r.id, marks=() if r.dialect == "triton" else pytest.mark.skip(
        reason=f"{r.id}: {registry.NOT_INTERPRETED}")) for r in registry.LADDER]


def use_interpreter_or_skip() -> None:
    """Select Triton's interpreter for this process, or skip the calling module with the reason.

    TRITON_INTERPRET must be set before triton itself is first imported: triton.language's own
    jit helpers (tl.zeros, tl.cdiv, ...) are decorated at that import."""
    torch = pytest.importorskip("torch", reason="the interpreter tests need torch (CPU build): pip install -e '.[dev]'")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: this process compiles the kernels for it (the GPU tests check them "
                    "at full shapes), so the interpreter tests, which need TRITON_INTERPRET=1 before triton is "
                    "imported, run on CPU-only machines")
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("triton was imported before TRITON_INTERPRET=1 could be set in this process; run the "
                    "interpreter tests in their own pytest process (or with TRITON_INTERPRET=1)")
    os.environ["TRITON_INTERPRET"] = "1"
    pytest.importorskip("triton", reason="the interpreter tests need triton: pip install -e '.[dev]'")
    from pytest_anatomy.kernels.flashattn import interpreter

    interpreter.enable()
