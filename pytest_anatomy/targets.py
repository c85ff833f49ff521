"""Measurement targets: the hardware a session reconciles, as a session fact.

A *target* is one card whose measurements a test reconciles:

- the **live** target: the GPU this machine has (NVML), measured in this session. Its name is
  the catalog key when the card is in the catalog ("h200"), else a slug of its NVML name
  ("nvidia-rtx-a6000"). The name says which card it is (its recordings folder, its findings);
  where its spec's numbers come from is separate: with the catalog bypassed
  (ANATOMY_SPEC_SOURCE=nvml or --anatomy-spec-source=nvml) a catalog card keeps its name but
  gets the spec an unknown card would get, every number derived from the driver;
- the **replay** targets: every hardware folder under results/ that holds recordings of the
  suite (the seed's rtx4090, our h200, a colleague's card).

`--anatomy-source` decides which of them a session has: live -> the live target only; recorded
-> the replay targets only; auto -> the live target (if a GPU is present) plus every replay
target of another name, so one report shows the user's card beside the recorded ones.
`--anatomy-hardware=NAME` narrows the replay targets to NAME and, on a live machine, says which
catalog spec the live card is (for a card NVML names differently).

Tests never name a hardware: a test that takes the `target` fixture is parametrized over the
session's targets (ids are target names), and a module that needs (target, case) pairs builds
them in `pytest_generate_tests` with `targets_for(config, suite)`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_anatomy import recordings
from pytest_anatomy.option_names import HARDWARE_OPTION

# Where the live target's HardwareSpec comes from: "catalog" (datasheet numbers, the default for
# a catalog card) or "nvml" (numbers derived from what the driver reports, as for a card that is
# not in the catalog). Environment, so a CI job can set it without editing its command line.
SPEC_SOURCE_ENV = "ANATOMY_SPEC_SOURCE"
SPEC_SOURCES = ("catalog", "nvml")


@dataclass(frozen=True)
class Target:
    """One card a test reconciles. `spec` is None when no spec can be built (then tests that need
    one skip with `spec_problem`)."""

    name: str
    live: bool
    spec: Any = field(default=None, compare=False, hash=False)
    spec_source: str = "catalog"
    spec_problem: str = ""
    # The live card's compute capability as the driver reports it (None: replayed, or not reported): which of a
    # suite's kernels it can run (gpu_arch.skip_reason)
    compute_capability: tuple[int, int] | None = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        return self.name

    @property
    def kind(self) -> str:
        return "live" if self.live else "recorded"

    def require_spec(self) -> Any:
        """The HardwareSpec, or skip the calling test saying why there is none."""
        if self.spec is None:
            import pytest

            pytest.skip(f"target {self.name}: {self.spec_problem or 'no hardware spec'}")
        return self.spec

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "spec": getattr(self.spec, "name", None),
                "spec_source": self.spec_source, "spec_problem": self.spec_problem or None}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-") or "unknown-gpu"


def spec_source_setting() -> str:
    value = os.environ.get(SPEC_SOURCE_ENV, "catalog").strip().lower() or "catalog"
    if value not in SPEC_SOURCES:
        raise ValueError(f"{SPEC_SOURCE_ENV}={value!r} is not one of {', '.join(SPEC_SOURCES)}")
    return value


def live_target(gpu: Any, hardware_option: str, spec_source: str) -> Target:
    """The target of the detected GPU. `hardware_option` ('auto' or a catalog name) names the
    catalog spec explicitly; spec_source 'nvml' ignores the catalog entirely."""
    cc = getattr(gpu, "compute_capability", None)
    return dataclasses.replace(_live_target_spec(gpu, hardware_option, spec_source),
                               compute_capability=None if cc is None else (int(cc[0]), int(cc[1])))


def _live_target_spec(gpu: Any, hardware_option: str, spec_source: str) -> Target:
    from pytest_anatomy.specs.hardware import get_hardware, spec_from_nvml, with_card_memory

    def catalog(name: str) -> Any:
        # the catalog's numbers, with this card's own CUDA-visible total: what vLLM budgets from on this machine
        return with_card_memory(get_hardware(name), getattr(gpu, "cuda_memory_total_bytes", None))

    if spec_source == "nvml":
        name = gpu.catalog_name or slug(gpu.name)
        try:
            return Target(name, True, spec_from_nvml(gpu), "nvml")
        except ValueError as exc:
            return Target(name, True, None, "nvml", str(exc))
    if hardware_option != "auto":
        return Target(hardware_option, True, catalog(hardware_option), f"catalog ({HARDWARE_OPTION})")
    if gpu.catalog_name is not None:
        return Target(gpu.catalog_name, True, catalog(gpu.catalog_name), "catalog")
    try:  # a card the catalog does not know: its numbers from the driver
        return Target(slug(gpu.name), True, spec_from_nvml(gpu), "nvml (not in the catalog)")
    except ValueError as exc:
        return Target(slug(gpu.name), True, None, "nvml (not in the catalog)", str(exc))


def replay_target(name: str) -> Target:
    from pytest_anatomy.specs.hardware import UnknownHardwareError, get_hardware

    try:
        return Target(name, False, get_hardware(name), "catalog")
    except UnknownHardwareError:
        return Target(name, False, None, "none",
                      f"results/{name}/ is not a catalog card; add it to specs/hardware.py to predict for it")


def recorded_hardware(results_dir: Path, suite: str) -> list[str]:
    """Hardware folders under results/ with at least one recording of `suite`, sorted."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if p.is_dir() and any((p / suite).glob("*@*.json")))


def session_targets(*, live: Target | None, source: str, hardware_option: str, results_dir: Path,
                    suite: str) -> list[Target]:
    """The targets of one suite in a session, live first (see the module docstring)."""
    out: list[Target] = []
    if live is not None and source in ("live", "auto"):
        out.append(live)
    if source == "live":
        return out
    names = recorded_hardware(results_dir, suite)
    if hardware_option != "auto":
        names = [n for n in names if n == hardware_option]
    taken = {t.name for t in out}
    out += [replay_target(n) for n in names if n not in taken]
    return out


def has_recording(results_dir: Path, target: Target, suite: str, name: str) -> bool:
    """Whether `target` has something to reconcile for `name`: the live target always (it
    measures), a replay target when results/<target>/<suite>/<name>@*.json exists."""
    return target.live or recordings.has_named_files(Path(results_dir) / target.name / suite, name)
