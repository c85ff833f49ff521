"""A pytest plugin that replays one recorded live H200 session of the kernel ladders and the attention suite as a
live session on CPU, for rehearsing their live path (fake_h200.py does the same for capacity and latency).

The session is a report under results/h200/live-runs/ (ANATOMY_REHEARSE_SESSION, its file name without `.json`;
default SESSION): its recordings are the kernels, flashattn and ceilings recordings stamped between its start (the
report's name) and its end (the report's `created`). NVML detection answers with the GPU its kernels-ceilings
recording names in its provenance; kernel_runner.live_rung / live_ceilings and flashattn_runner.live_case /
live_decode / live_ceilings return that session's recording of the requested rung, case or ceilings, as the live
function returned it (what the live path adds to the provenance is taken off, so it adds it again), and skip a
rung or case the session did not measure. Everything between those measurements and the verdicts (targets, the
case sets, the session cache, recording, the suites' aggregates and finding marks) runs for real, so the live
session can be checked on CPU against the replay of the same recordings (tests_plugin/test_live_path_cpu.py).
Use: `PYTHONPATH=tests_plugin/live_rehearsal pytest -p recorded_kernels -m gpu --anatomy-source=live
tests_kernels/test_kernels_ladders.py tests_flashattn/test_flashattn_gpu.py tests_flashattn/test_flashattn_sweep.py`.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.machinery
import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy import gpu_query
from pytest_anatomy.kernels.registry import shape_label
from pytest_anatomy.specs import hardware

REPO = Path(__file__).resolve().parents[2]
# The newest live session on the catalog's H200 that measured both suites (2026-12-04 10:02, the full session:
# 83 kernel and 65 attention reconciliations); later H200 visits measured attention rungs only, or ran device plans.
SESSION = "20261204T100203Z.full"
SUITES = ("kernels", "flashattn", "ceilings")
# What Measured._run_live (source, hardware, gpu, hardware_spec_source) and the attention suite's live_with_ceilings
# (ceilings_recorded_at) add to a live function's provenance: taken off, so the rehearsed live path adds them again.
ADDED_LIVE = ("source", "hardware", "gpu", "hardware_spec_source", "ceilings_recorded_at")


def session_name() -> str:
    return os.environ.get("ANATOMY_REHEARSE_SESSION") or SESSION


@functools.cache
def session_card(name: str) -> str:
    """The card whose results/<card>/live-runs/ holds the session: the card is the recording's, never named here."""
    found = sorted(REPO.glob(f"results/*/live-runs/{name}.json"))
    if len(found) != 1:
        raise RuntimeError(f"recorded_kernels: {len(found)} live sessions named {name} under results/*/live-runs/")
    return found[0].parent.parent.name


@functools.cache
def session_files(name: str | None = None) -> dict[tuple[str, str], Path]:
    """(suite, recording name) -> file of every kernels, flashattn and ceilings recording of the session."""
    name = name or session_name()
    card = session_card(name)
    report = json.loads((REPO / "results" / card / "live-runs" / f"{name}.json").read_text())
    start, end = name.split(".", 1)[0][:15], report["created"].replace("-", "").replace(":", "")[:15]
    found: dict[tuple[str, str], Path] = {}
    for suite in SUITES:
        for path in sorted((REPO / "results" / card / suite).glob("*@*.json")):
            rec_name, stamp = path.name[: -len(".json")].rsplit("@", 1)
            if start <= stamp[:15] <= end:
                if (suite, rec_name) in found:
                    raise RuntimeError(f"recorded_kernels: two {suite}/{rec_name} recordings in session {name}")
                found[(suite, rec_name)] = path
    if not any(suite == "kernels" for suite, _ in found):
        raise RuntimeError(f"recorded_kernels: session {name} recorded no kernels under results/{card}/kernels")
    return found


def _answer(suite: str, name: str) -> dict[str, Any]:
    """The session's recording of `name` as its live function returned it, stamped as it was: a live recording is
    stamped when it is measured, and here that was the session's time (the checkout holds this very run, which a
    live session's results never do: stamped now, its copy in results/ would count as another session's run)."""
    path = session_files().get((suite, name))
    if path is None:
        session = session_name()
        pytest.skip(f"recorded_kernels: the {session_card(session)} session {session} measured no {suite}/{name}")
    doc = json.loads(path.read_text())
    return {"measurements": doc["measurements"], "data": doc.get("data", {}), "recorded_at": doc["recorded_at"],
            "provenance": {k: v for k, v in doc["provenance"].items() if k not in ADDED_LIVE}}


def live_rung(variant: Any, baseline: Any, shape: Any, **_: Any) -> dict[str, Any]:
    out = _answer("kernels", f"{variant.ladder}.{variant.id}.{shape_label(shape)}")
    recorded = out["data"].get("baseline_rung")
    if recorded is not None and recorded != baseline.id:
        raise AssertionError(f"{variant.ladder}.{variant.id}: the live path asked for baseline {baseline.id}, "
                             f"the session timed it beside {recorded}")
    return out


def live_case(rung_id: str, *, batch: int, heads: int, n: int, head_dim: int, causal: bool,
              kv_heads: int | None = None, dtype: str = "bf16", **_: Any) -> dict[str, Any]:
    from pytest_anatomy.measure.flashattn_runner import case_name

    return _answer("flashattn", case_name(rung_id, batch, heads, n, head_dim, causal, kv_heads=kv_heads, dtype=dtype))


def live_decode(*, batch: int, heads: int, kv_heads: int, context: int, head_dim: int, **kw: Any) -> dict[str, Any]:
    from pytest_anatomy.measure.flashattn_runner import decode_name

    named = {k: kw[k] for k in ("variant", "splits") if k in kw}  # what the live call's recording name carries
    return _answer("flashattn", decode_name(batch, heads, kv_heads, context, head_dim, **named))


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def pytest_configure(config: Any) -> None:
    ceilings = session_files().get(("kernels", "kernels-ceilings"))
    if ceilings is None:
        raise RuntimeError(f"recorded_kernels: session {session_name()} recorded no kernels-ceilings, whose "
                           "provenance names the GPU detection answers with")
    gpu = dict(json.loads(ceilings.read_text())["provenance"]["gpu"])
    known = {f.name for f in dataclasses.fields(hardware.DetectedGPU)}
    gpu = {k: v for k, v in gpu.items() if k in known} | {"backend": "nvml"}
    gpu["compute_capability"] = tuple(gpu["compute_capability"])
    detected = hardware.DetectedGPU(**gpu)
    hardware.detect = lambda *a, **k: detected
    facts = {k: gpu[k] for k in ("sm_count", "l2_bytes", "cuda_memory_total_bytes")}
    gpu_query.cuda_device_facts = lambda *a, **k: {**facts, "compute_capability": list(gpu["compute_capability"])}
    hardware.visible_gpu_count = lambda: 1
    # the ladders' live tests first check that torch and cuda.core import (test_kernels_ladders._live_tools): a CPU
    # machine without them gets stand-ins, as fake_h200 gives vllm one; nothing calls into them here
    for module in ("torch", "cuda", "cuda.core"):
        if not _importable(module):
            stand_in = types.ModuleType(module)
            stand_in.__spec__ = importlib.machinery.ModuleSpec(module, None)
            sys.modules[module] = stand_in

    from pytest_anatomy.measure import flashattn_runner, kernel_runner

    kernel_runner.live_rung = live_rung
    kernel_runner.live_ceilings = lambda: _answer("kernels", "kernels-ceilings")
    flashattn_runner.live_case = live_case
    flashattn_runner.live_decode = live_decode
    flashattn_runner.live_ceilings = lambda: _answer("ceilings", "ceilings")
