"""A pytest plugin that makes a CPU machine look like any card with recorded vLLM ledgers, for rehearsing the
capacity suite's live path on it (fake_h200.py does the same for the H200 from its device batches, latency included).

ANATOMY_REHEARSE_CARD names a folder under results/ (ANATOMY_REHEARSE_RESULTS, default the repository's). NVML
detection answers with the GPU the card's newest ledger recording names in its provenance (its CUDA total, SMs
and L2 as the driver reported them); each engine start returns the newest recording of the same model and
settings on that card, the one the replay reads (recordings.load_latest). Everything between those measurements
and the verdicts runs for real, so a live session on the card can be checked on CPU against the replay of the
same recordings. Capacity only: the latency plan is not answered.
Use: `ANATOMY_REHEARSE_CARD=<card> PYTHONPATH=tests_plugin/live_rehearsal pytest -p recorded_card -m gpu
--anatomy-source=live tests_capacity`.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from pytest_anatomy import gpu_query, recordings
from pytest_anatomy.specs import hardware

REPO = Path(__file__).resolve().parents[2]
PREFIX = "vllm-ledger."
MATCHED_KEYS = ("hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size")


def _card() -> tuple[Path, str]:
    card = os.environ.get("ANATOMY_REHEARSE_CARD")
    if not card:
        raise RuntimeError("recorded_card: set ANATOMY_REHEARSE_CARD to a folder under results/")
    return Path(os.environ.get("ANATOMY_REHEARSE_RESULTS") or REPO / "results"), card


def _ledgers() -> list[recordings.Recording]:
    results, card = _card()
    recs = [recordings.load_latest(results, card, "capacity", n)
            for n in recordings.list_recordings(results, card, "capacity", PREFIX)]
    if not recs:
        raise RuntimeError(f"recorded_card: no {PREFIX}* recordings under {results}/{card}/capacity")
    return recs


def pytest_configure(config: Any) -> None:
    newest = max(_ledgers(), key=lambda r: r.recorded_at)
    gpu = dict(newest.provenance["gpu"])
    known = {f.name for f in dataclasses.fields(hardware.DetectedGPU)}
    gpu = {k: v for k, v in gpu.items() if k in known}
    gpu["compute_capability"] = tuple(gpu["compute_capability"])
    gpu["backend"] = "nvml"
    detected = hardware.DetectedGPU(**gpu)
    hardware.detect = lambda *a, **k: detected
    facts = {"sm_count": gpu["sm_count"], "l2_bytes": gpu["l2_bytes"],
             "cuda_memory_total_bytes": gpu["cuda_memory_total_bytes"],
             "compute_capability": list(gpu["compute_capability"])}
    gpu_query.cuda_device_facts = lambda *a, **k: facts
    hardware.visible_gpu_count = lambda: 1


def fake_measure_memory_ledger(config: dict, settings: Any, timeout_s: int = 600, workdir: Any = None,
                               model_dir: Any = None) -> dict:
    from pytest_anatomy.specs import catalog

    tag = settings.tag()
    for rec in _ledgers():
        model = str(rec.provenance["model"])
        recorded = catalog.load_config(model)
        if rec.name == f"{PREFIX}{model}.{tag}" and all(recorded.get(k) == config.get(k) for k in MATCHED_KEYS):
            return dict(rec.data["run"]["result"])
    _, card = _card()
    return {"status": "error", "error_class": "not-recorded", "error_message": f"no {card} ledger for {tag}",
            "log_tail": []}


def pytest_sessionstart(session: Any) -> None:
    import importlib.machinery
    import sys
    import types

    from pytest_anatomy.measure import vllm_engine

    vllm_engine.measure_memory_ledger = fake_measure_memory_ledger
    mod = types.ModuleType("vllm")
    mod.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    sys.modules["vllm"] = mod
