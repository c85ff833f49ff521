"""scripts/device/kernels_plan.py's child-process preflight of a new kind of kernel (sgemm.CHILD_PREFLIGHT: s14's
mbarrier / TMA pipeline), on the CPU with stand-ins: a child that hangs, faults or raises becomes that rung's check
error, the rung is not timed, and every other rung is checked and timed as before; a TMA rung is checked at K-aligned
odd shapes besides the ladder's own (which it refuses)."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_kernels_plan_autotune import StandInRunner, _plan

from pytest_anatomy.kernels import sgemm

S14 = "s14-bf16-wgmma-tma"


def _variant(rid: str) -> Any:
    return next(v for v in sgemm.LADDER if v.id == rid)


def test_tma_rung_is_checked_at_k_aligned_shapes_too():
    plan = _plan()
    s14, s12 = plan.check_shapes("sgemm", _variant(S14)), plan.check_shapes("sgemm", _variant("s12-bf16-wgmma"))
    assert all(s in s14 for s in sgemm.K_ALIGNED_CORRECTNESS_SHAPES) and not any(
        s in s12 for s in sgemm.K_ALIGNED_CORRECTNESS_SHAPES)
    assert sum(1 for s in s14 if s["K"] % 8 == 0) >= 4 and dict(sgemm.TIMING_SHAPE) in s14


@pytest.mark.parametrize("outcome", ["timeout", "fault", "ok"])
def test_preflight_reports_a_hang_or_a_fault_and_passes_a_clean_child(outcome: str):
    plan = _plan()

    def run(cmd: list[str], **kw: Any) -> Any:
        assert cmd[-2:] == ["--preflight", S14] and kw["timeout"] == plan.PREFLIGHT_TIMEOUT_S
        if outcome == "timeout":
            raise subprocess.TimeoutExpired(cmd, kw["timeout"])
        return SimpleNamespace(returncode=1 if outcome == "fault" else 0, stdout="", stderr="CUDA_ERROR_ILLEGAL_ADDRESS")

    why = plan.preflight(_variant(S14), run=run)
    if outcome == "ok":
        assert why is None
    else:
        assert why and ("hang" in why if outcome == "timeout" else "ILLEGAL_ADDRESS" in why)


def test_a_failed_preflight_fails_only_its_rung(tmp_path: Path):
    """--rungs s12,s14: s14's child faulted, so its checks are errors (the runner never launches it here) and it is
    not timed; s12 and cuBLAS bf16 are checked and timed as always."""
    plan = _plan()
    plan.RUNGS.update({S14, "s12-bf16-wgmma"})
    try:
        runner = StandInRunner({}, broken="")
        launched: list[str] = []
        check = runner.check

        def spy(v: Any, shape: dict[str, int], seed: int) -> dict[str, Any]:
            launched.append(v.id)
            return check(v, shape, seed)

        runner.check = spy  # type: ignore[method-assign]
        checks = plan.check_ladder(runner, "sgemm", 1000, preflight_fn=lambda v: "preflight exited -6: abort")
        assert S14 not in launched and "s12-bf16-wgmma" in launched
        assert all(c["status"] == "error" for c in checks[S14]) and all(
            c["status"] == "ok" for c in checks["s12-bf16-wgmma"])
        batch = plan.Batch(tmp_path, argparse.Namespace(budget_s=60.0))
        plan.time_shape(runner, batch, "sgemm", dict(sgemm.TIMING_SHAPE), checks, runner.resources, 3, float("inf"))
        assert S14 not in runner.timed and "s12-bf16-wgmma" in runner.timed and "s0-cublas-bf16" in runner.timed
        s14_run = next(r for r in batch.doc["runs"] if r["id"].startswith(f"sgemm.{S14}."))
        assert s14_run["result"]["status"] == "error"
    finally:
        plan.RUNGS.clear()
