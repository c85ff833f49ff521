"""Load scripts/device/*.py as modules for CPU tests, once per session each.

They are scripts, not package modules; registering them in sys.modules under one name matters
because dataclasses look their module up while a class is built."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts" / "device"


@cache
def load(stem: str) -> ModuleType:
    """`load("latency_plan")` -> scripts/device/latency_plan.py as module `device_script_latency_plan`."""
    name = f"device_script_{stem}"
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{stem}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
