"""What the new CUDA rungs' tests share: the CPU emulator against float64 at edge shapes, kernels_plan.py's dry run of
the device call that times a rung, and the recorded values and byte counts the softmax rungs' headers are priced from
(test_kernels_s15.py, test_kernels_s16.py, test_kernels_pipelined.py, test_kernels_tma_ring.py,
test_kernels_cluster4_smem.py, test_kernels_x10.py)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_anatomy.kernels import emulator
from pytest_anatomy.kernels.reference import TOLERANCE, make_inputs, reference, rel_error

ROOT = Path(__file__).resolve().parents[1]
# The per-SM rates the softmax rungs' SM work is priced at (x8's, x9's and x10's headers): the SM clock of the
# pre-registered card's Nsight Compute profile of x6 (1,980 MHz), sm_90's EX2 per clock per SM, and shared-memory bytes
# per clock per SM.
SM_CLOCK_HZ = 1.98e9
MUFU_PER_CLK = 16
SMEM_B_PER_CLK = 128


def assert_matches_float64(rung: Any, ladder: str, shapes: tuple[dict[str, int], ...], seed: int,
                           device: Any = None) -> None:
    """The rung run by the CPU emulator at each shape (on `device`'s SM count where given), against the float64
    reference within the fp32 tolerance; a skip saying why where the emulator cannot build here."""
    try:
        emulator.compiler()
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(seed)
    for shape in shapes:
        inputs = make_inputs(ladder, shape, "fp32", rng)
        out = emulator.run(rung, shape, inputs) if device is None else emulator.run(rung, shape, inputs, device=device)
        err = rel_error(out, reference(ladder, inputs, "fp32"))
        where = "" if device is None else f" on {device.sm_count} SMs"
        assert err <= TOLERANCE["fp32"], f"{rung.id} at {shape}{where}: relative error {err:.3g}"


def load_plan() -> Any:
    """scripts/device/kernels_plan.py as a module (a fresh one: its --rungs selection starts empty)."""
    path = ROOT / "scripts" / "device" / "kernels_plan.py"
    spec = importlib.util.spec_from_file_location("kernels_plan_dry_run", path)
    assert spec and spec.loader
    plan = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plan)
    return plan


def plan_dry_run(*argv: str) -> str:
    """scripts/device/kernels_plan.py --dry-run ARGV: what it prints (asserting it exits 0)."""
    plan = load_plan()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = plan.main(["--dry-run", *argv])
    assert rc == 0, out.getvalue()
    return out.getvalue()


RESULTS = Path(__file__).resolve().parents[1] / "results"


def recorded_values(folder: Path, name: str, key: str, not_after: str) -> list[float]:
    """`key`'s value in each recording of `name` in `folder` stamped at or before `not_after` (YYYYMMDDTHHMMSS): the
    sessions a header's prediction could read when it was written."""
    out = []
    for p in sorted(folder.glob(f"{name}@*.json")):
        if p.name.split("@")[1][:15] <= not_after:
            out.append(float(json.loads(p.read_text())["measurements"][key]["value"]))
    return out


def need_tools(*tools: str) -> None:
    """Skip, naming the tool and how to install it, where a compile or disassembly tool is absent."""
    from pytest_anatomy.kernels import compile as kc

    try:
        for t in tools:
            kc.find_tool(t)
    except kc.ToolMissing as exc:
        pytest.skip(str(exc))


def run_value(name: str, when: str, key: str = "time") -> float:
    """`key`'s value (in its recorded unit) in `name`'s kernels recording of the run stamped `when`, on the card the
    kernel findings were measured on; skips, saying which, where this checkout lacks that run."""
    import kernel_findings as kf

    from pytest_anatomy import recordings

    try:
        rec = recordings.load_not_after(RESULTS, kf.MEASURED_ON, "kernels", name, when)
    except recordings.MissingRecording:
        pytest.skip(f"results/{kf.MEASURED_ON}/kernels/{name}@* of {when} is not in this checkout")
    if rec.recorded_at != when:
        pytest.skip(f"{name} of {when} is not in this checkout")
    return float(rec[key].value)


def softmax_bytes(shape: dict[str, int]) -> float:
    """A softmax's DRAM bytes at one pass: fp32 read once, written once."""
    return 2 * 4.0 * shape["M"] * shape["N"]
