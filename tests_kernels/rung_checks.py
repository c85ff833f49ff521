"""Checks a new CUDA rung's tests share: the CPU emulator against float64 at edge shapes, and kernels_plan.py's dry
run of the device call that times it (test_kernels_s15.py, test_kernels_s16.py)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_anatomy.kernels import emulator
from pytest_anatomy.kernels.reference import TOLERANCE, make_inputs, reference, rel_error

ROOT = Path(__file__).resolve().parents[1]


def assert_matches_float64(rung: Any, ladder: str, shapes: tuple[dict[str, int], ...], seed: int) -> None:
    """The rung run by the CPU emulator at each shape, against the float64 reference within the fp32 tolerance; a skip
    saying why where the emulator cannot build here."""
    try:
        emulator.compiler()
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(seed)
    for shape in shapes:
        inputs = make_inputs(ladder, shape, "fp32", rng)
        err = rel_error(emulator.run(rung, shape, inputs), reference(ladder, inputs, "fp32"))
        assert err <= TOLERANCE["fp32"], f"{rung.id} at {shape}: relative error {err:.3g}"


def plan_dry_run(*argv: str) -> str:
    """scripts/device/kernels_plan.py --dry-run ARGV: what it prints (asserting it exits 0)."""
    spec = importlib.util.spec_from_file_location("kernels_plan_dry_run", ROOT / "scripts" / "device" / "kernels_plan.py")
    assert spec and spec.loader
    plan = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plan)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = plan.main(["--dry-run", *argv])
    assert rc == 0, out.getvalue()
    return out.getvalue()
