"""A pytest plugin that makes a CPU machine look like any catalog card to the live path's collection and plan.

NVML detection answers with the card that ANATOMY_REHEARSE_CARD names (a catalog entry: its name, memory,
compute capability, SMs and L2 from the catalog), so `--anatomy-plan` and collection can be checked for a card
nobody here has: which cases its architecture skips, what the plan counts. Nothing is measured: unlike
fake_h200.py, no measurement is replayed, so run it with `--anatomy-plan` or `--collect-only`.
Use: `ANATOMY_REHEARSE_CARD=a100-80gb PYTHONPATH=tests_plugin/live_rehearsal pytest -p fake_card -m gpu
--anatomy-source=live --anatomy-plan`.
"""

from __future__ import annotations

import os

import pytest

from pytest_anatomy import gpu_query
from pytest_anatomy.specs import hardware


def pytest_configure(config: pytest.Config) -> None:
    spec = hardware.get_hardware(os.environ["ANATOMY_REHEARSE_CARD"])
    gpu = hardware.DetectedGPU(index=0, name=spec.display_name, backend="nvml",
                               memory_total_bytes=spec.nvml_memory_bytes or spec.memory_bytes,
                               catalog_name=spec.name, compute_capability=spec.compute_capability,
                               sm_count=spec.sm_count, l2_bytes=spec.l2_bytes)
    hardware.detect = lambda *a, **k: gpu
    gpu_query.cuda_device_facts = lambda *a, **k: {"sm_count": spec.sm_count, "l2_bytes": spec.l2_bytes,
                                                   "compute_capability": list(spec.compute_capability or ())}
    hardware.visible_gpu_count = lambda: 1
