"""Every kernel the GPU sweep launches compiles for sm_90 on this CPU machine, and fits.

The GPU visit runs unattended: a rung that fails to lower (a TMA descriptor the compiler
refuses, a tile that overflows shared memory) would cost its tests there. Triton compiles ahead
of time for a named target with its bundled ptxas, so each rung's every autotune config is
compiled here, in a fresh process (this one may have TRITON_INTERPRET set), in the sweep's
dtype and head dim (bf16, D=128), both masks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pytest_anatomy.kernels.flashattn.registry import LADDER

SM90_MAX_SHARED = 227 * 1024


@pytest.fixture(scope="module")
def compiled() -> list[dict]:
    pytest.importorskip("triton", reason="compiling for sm_90 needs triton: pip install -e '.[dev]'")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-m", "pytest_anatomy.kernels.flashattn.aot", "--all-configs", "--json"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, f"sm_90 compilation failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout)


def test_every_rung_and_config_compiles_for_sm90_within_shared_memory(compiled: list[dict]) -> None:
    rungs = {row["rung"] for row in compiled}
    assert rungs == {r.id for r in LADDER} | {"flash-decoding"}
    for row in compiled:
        assert row["shared_bytes"] <= SM90_MAX_SHARED, row


def test_forward_rungs_use_hopper_tensor_cores_and_the_tma_rung_uses_tma(compiled: list[dict]) -> None:
    for row in compiled:
        if row["rung"] != "flash-decoding":
            assert row["wgmma"] > 0, f"{row['rung']} {row['kernel']} lowered without wgmma: {row}"
        assert (row["tma_loads"] > 0) == (row["rung"] == "r6-tma-pipelined"), row


FP16_BEST = """
import json
from pytest_anatomy.kernels.flashattn import aot, registry
r = registry.rung(registry.BEST)
rows = [aot.compile_one(fn, cx, dtype="fp16", d=128, num_warps=w, num_stages=s)
        for fn, cx, w, s in aot.rung_jobs(r, True, "fp16")]
print(json.dumps(rows))
"""


def test_the_best_rung_compiles_in_fp16_too() -> None:
    """The fp16 cases the GPU session times (the best rung at the target shape, test_flashattn_gpu.CASES): every
    autotune config lowers for sm_90 in fp16, within shared memory, on wgmma and TMA, as in bf16."""
    pytest.importorskip("triton", reason="compiling for sm_90 needs triton: pip install -e '.[dev]'")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", FP16_BEST], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, f"fp16 sm_90 compilation failed:\n{proc.stderr[-4000:]}"
    rows = json.loads(proc.stdout)
    assert rows and all(r["shared_bytes"] <= SM90_MAX_SHARED and r["wgmma"] > 0 and r["tma_loads"] > 0 for r in rows)
