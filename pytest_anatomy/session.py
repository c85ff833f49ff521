"""Per-session state kept in `config.stash`: settings, the lazily detected GPU, the ledger.

On xdist the controller and each worker have their own AnatomySession; reconciliations reach
the controller through `report.user_properties` (JSON strings), so the ledger and the report
are built exactly once, on the controller."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy.option_names import HARDWARE_OPTION
from pytest_anatomy.options import AnatomySettings
from pytest_anatomy.targets import Target, live_target, session_targets

USER_PROPERTY = "anatomy_reconciliation"
LEDGER_SCHEMA = "pytest-anatomy/report/v1"
_TRACKED_PACKAGES = ("pytest-anatomy", "numpy", "jinja2", "hypothesis", "pytest-xdist", "pytest-html",
                     "torch", "triton", "vllm", "cuda-python", "nvidia-ml-py")
_UNSET = object()


PLANNED_BACKEND = "catalog (planned: no GPU detected)"


def planned_gpu(name: str) -> Any:
    """The catalog card `name` as detection would report it, for `--anatomy-plan --anatomy-hardware NAME` on a
    machine without that card: what a live session there would measure and skip (its memory picks the capacity
    runs, its compute capability the kernels it can run). Never measured: the plan runs nothing."""
    from pytest_anatomy.specs.hardware import DetectedGPU, get_hardware

    spec = get_hardware(name)
    return DetectedGPU(index=0, name=spec.display_name, backend=PLANNED_BACKEND,
                       memory_total_bytes=int(spec.nvml_memory_bytes or spec.require("memory_bytes")),
                       cuda_memory_total_bytes=spec.cuda_visible_memory_bytes, sm_count=spec.sm_count,
                       l2_bytes=spec.l2_bytes, compute_capability=spec.compute_capability, catalog_name=spec.name)


@dataclass
class AnatomySession:
    settings: AnatomySettings
    is_worker: bool = False
    started: float = field(default_factory=time.monotonic)
    no_case_on_targets: int = 0  # tests deselected for want of a case on this session's targets
    no_case_targets: tuple[str, ...] = ()  # ... and those targets' names (from the workers under xdist)
    entries: list[dict[str, Any]] = field(default_factory=list)
    skips: list[dict[str, str]] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    # Live measurements of this session, each made once: (target, suite, name) -> Recording.
    live_cache: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    # Which tool took each live timing (recording name -> text), for the report.
    timing_tools: dict[str, str] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)  # outcome.failure_entry of each failed report
    _gpu: Any = _UNSET
    _live_target: Any = _UNSET
    _targets: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def live_gpu(self) -> Any:
        """The detected GPU (DetectedGPU) or None. Never probes when source=recorded. The CUDA
        driver's attributes (SM count, L2, CUDA-visible memory) are read in a subprocess so this
        process stays CUDA-free for vLLM's engine workers."""
        if self._gpu is _UNSET:
            if self.settings.source == "recorded":
                self._gpu = None
            else:
                from pytest_anatomy.gpu_query import cuda_device_facts
                from pytest_anatomy.specs.hardware import detect

                gpu = detect()
                with_facts = getattr(gpu, "with_cuda_facts", None)  # test doubles may lack it
                self._gpu = with_facts(cuda_device_facts()) if with_facts is not None else gpu
                if self._gpu is None and self.settings.show_plan and self.settings.hardware != "auto":
                    self._gpu = planned_gpu(self.settings.hardware)
        return self._gpu

    @property
    def planned_only(self) -> bool:
        """True when the live GPU is the catalog's card of --anatomy-hardware on a machine without one
        (`--anatomy-plan` only: nothing can be measured)."""
        return getattr(self.live_gpu, "backend", None) == PLANNED_BACKEND

    def live_target(self) -> Any:
        """The Target of this machine's GPU (targets.live_target), or None without one."""
        if self._live_target is _UNSET:
            gpu = self.live_gpu
            self._live_target = (None if gpu is None else
                                 live_target(gpu, self.settings.hardware, self.settings.spec_source))
        return self._live_target

    def targets(self, suite: str) -> list[Any]:
        """The targets a suite's tests are parametrized over (targets.session_targets)."""
        if suite not in self._targets:
            self._targets[suite] = session_targets(
                live=self.live_target(), source=self.settings.source, hardware_option=self.settings.hardware,
                results_dir=self.settings.results_dir, suite=suite)
        return self._targets[suite]

    def live_hardware_name(self) -> str | None:
        target = self.live_target()
        return None if target is None else target.name

    def target_hardware(self) -> str | None:
        """Explicit --anatomy-hardware, else the live GPU's catalog name, else None."""
        if self.settings.hardware != "auto":
            return self.settings.hardware
        return self.live_hardware_name()

    def add_from_report(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key == USER_PROPERTY:
                self.entries.append(json.loads(str(value)))  # a JSON string: outcome.py writes it

    def _live_spec_source(self) -> str | None:
        """'catalog' or 'nvml' for the live target's spec; None without a live GPU."""
        target = self.live_target() if self.settings.source != "recorded" else None
        if target is None:
            return None
        return "nvml" if target.spec_source.startswith("nvml") else "catalog"

    def _hardware_spec_origin(self) -> dict[str, Any] | None:
        """Which HardwareSpec the `hardware` fixture resolves to, and where its numbers come from.
        Replayed reconciliations use their recording's hardware (the `hardware` column per entry)."""
        from pytest_anatomy.specs.hardware import get_hardware, spec_for_detected

        if self.settings.hardware != "auto":
            return _spec_origin(get_hardware(self.settings.hardware), HARDWARE_OPTION)
        if self.live_gpu is not None:
            try:
                target = self.live_target()
                if target is not None and target.spec is not None:
                    origin = _spec_origin(target.spec, "detected GPU")
                    origin["from"] = target.spec_source
                    return origin
                return _spec_origin(spec_for_detected(self.live_gpu), "detected GPU")
            except Exception as exc:  # noqa: BLE001 - the report must not fail on an odd device object
                return {"name": getattr(self.live_gpu, "name", "?"), "from": f"unresolved ({exc!r})",
                        "selected_by": "detected GPU"}
        return None

    def ledger(self, config: pytest.Config) -> dict[str, Any]:
        from pytest_anatomy.ledger_counts import ledger_block

        return {
            "schema": LEDGER_SCHEMA,
            "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "version": _version("pytest-anatomy"),
            "environment": self.environment(config),
            "reconciliations": list(self.entries),
            **ledger_block(self.entries),  # "verdicts": predictions only; "kinds": every kind's verdicts
            "session_duration_s": round(time.monotonic() - self.started, 3),
            "tests": dict(self.outcomes),
            "skips": list(self.skips),
            "failures": list(self.failures),
        }

    def environment(self, config: pytest.Config) -> dict[str, Any]:
        gpu = self.live_gpu
        env: dict[str, Any] = {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "pytest": pytest.__version__,
            "packages": {name: _version(name) for name in _TRACKED_PACKAGES},
            "git_commit": _git_commit(config),
            "hardware_option": self.settings.hardware,
            "source_option": self.settings.source,
            "model_option": self.settings.model,
            "live_gpu": gpu.to_dict() if gpu is not None and hasattr(gpu, "to_dict") else None,
            "hardware_spec": self._hardware_spec_origin(),
            "hardware_spec_source": self._live_spec_source(),
            "targets": sorted({t.describe()["name"]: t.describe() for ts in self._targets.values() for t in ts}.values(),
                              key=lambda d: (d["kind"] != "live", d["name"])),
            "timing_tools": dict(self.timing_tools),
            "command": " ".join([_basename(sys.argv[0]), *sys.argv[1:]]),
        }
        if gpu is not None:  # a live session's host: its CPU loop's speed moves the engine's host-bound step times
            from pytest_anatomy.host_facts import host_facts

            env["host"] = host_facts()
        config.hook.pytest_anatomy_update_environment(config=config, environment=env)
        return env


def _spec_origin(spec: Any, how: str) -> dict[str, Any]:
    from_catalog = bool(getattr(spec, "from_catalog", True))
    return {"name": spec.name, "from": "catalog" if from_catalog else "device (not in the catalog)", "selected_by": how}


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _git_commit(config: pytest.Config) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=config.rootpath,
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


SESSION_KEY = pytest.StashKey[AnatomySession]()


def get_session(config: pytest.Config) -> AnatomySession:
    return config.stash[SESSION_KEY]


def of_config(config: pytest.Config, suite: str) -> tuple[list[Target], Path]:
    """(the suite's targets, the results folder) of a pytest config: for pytest_generate_tests."""
    session = get_session(config)
    return session.targets(suite), session.settings.results_dir
