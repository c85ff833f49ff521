"""scripts/device/flashattn_profile.py's launch path on the CPU, in Triton's interpreter.

What a GPU visit would otherwise test first: for every rung, the inputs and workspace are made,
the rung runs, its outputs are poisoned, the marker kernel and the rung run again (on the GPU
inside the profiler window), and the manifest entry says which config ran and that every output
element was written. Tiny shapes, fp32 and the rungs' interpreter configs; autotuning and the
profiler calls are the GPU's alone. The Gluon rung has no interpreter path: here the profile path
reaches its own launch, which refuses the interpreter in one line (registry.NOT_INTERPRETED); its
compile is checked in test_flashattn_sm90.py and its run on the GPU.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest
from flashattn_interp import use_interpreter_or_skip

from pytest_anatomy.kernels.flashattn import registry

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "device" / "flashattn_profile.py"


@pytest.fixture(autouse=True, scope="module")
def _interpreter() -> None:
    use_interpreter_or_skip()


@pytest.fixture(scope="module")
def script() -> Any:
    spec = importlib.util.spec_from_file_location("flashattn_profile", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("rung", [r.id for r in registry.PROFILED])
def test_each_rung_runs_through_the_profile_path(script: Any, rung: str, causal: bool) -> None:
    import torch

    r = registry.rung(rung)
    mod = importlib.import_module(f"pytest_anatomy.kernels.flashattn.{r.kernel_module or r.module}")
    marker = script._marker_kernel()
    entry = {"marker_grid": 3, "rung": rung,
             "settings": {"batch": 1, "heads": 2, "n": 48, "head_dim": 16, "causal": causal}}
    if r.dialect == "gluon":
        from pytest_anatomy.kernels.flashattn.launch import BadAttentionInput

        with pytest.raises(BadAttentionInput, match=re.escape(registry.NOT_INTERPRETED)):
            script._profile_one(entry, marker, torch.zeros(1), device="cpu", config=mod.INTERPRETER_CONFIG)
        return
    out = script._profile_one(entry, marker, torch.zeros(1), device="cpu", config=mod.INTERPRETER_CONFIG)
    assert out == {"config": {**mod.INTERPRETER_CONFIG}, "all_written": True}
