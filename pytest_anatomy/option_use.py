"""Options that changed nothing: reported in the terminal summary and the report's environment.

An option given explicitly that no collected test reads is most likely a mistake (a typo'd test
selection, or the belief that `--anatomy-hardware=l40s` re-targets replays of H200 recordings,
which it does not: a replay is of its recording's GPU). Collection happens on xdist workers, so
each worker sends what its items use through `workeroutput`; the controller merges them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from pytest_anatomy.option_names import (
    HARDWARE_OPTION,
    MODEL_OPTION,
    RECORD_OPTION,
    SOURCE_OPTION,
    SPEC_SOURCE_OPTION,
    STRICT_FINDINGS_OPTION,
)
from pytest_anatomy.session import get_session

_WORKER_KEY = "anatomy_option_use"
# What each option is read through; an option whose readers no collected test has did nothing.
_USES = ("model_spec", "hardware", "finding")


def uses_of(items: list[pytest.Item]) -> dict[str, int]:
    """How many collected tests request model_spec / hardware, or carry a finding mark."""
    count = dict.fromkeys(_USES, 0)
    for item in items:
        names = getattr(item, "fixturenames", ())
        count["model_spec"] += "model_spec" in names
        count["hardware"] += "hardware" in names
        count["finding"] += item.get_closest_marker("finding") is not None
    return count


def unused_options(config: pytest.Config, uses: dict[str, int], entries: list[dict[str, Any]]) -> list[str]:
    """One line per explicitly given option that no collected test used."""
    out = []
    model = config.getoption(MODEL_OPTION)
    if model and not uses["model_spec"]:
        out.append(f"{MODEL_OPTION}={model} was not used: no collected test requests the model_spec fixture")
    hardware = config.getoption(HARDWARE_OPTION)
    name = get_session(config).settings.hardware
    planned = get_session(config).settings.show_plan  # --anatomy-plan names the card the plan is for: used, run or not
    if (hardware and name != "auto" and not planned and not uses["hardware"]
            and not any(e.get("hardware") == name for e in entries)):
        replayed = Counter(str(e.get("hardware")) for e in entries)
        of = ", ".join(f"{hw} ({n})" for hw, n in sorted(replayed.items()))
        tail = f"; the reconciliations are of their recordings' hardware: {of}" if of else ""
        out.append(f"{HARDWARE_OPTION}={hardware} was not used: no collected test requests the hardware fixture "
                   f"and no reconciliation is of {name}{tail}")
    if config.getoption(RECORD_OPTION) and get_session(config).settings.source == "recorded":
        out.append(f"{RECORD_OPTION} was not used: {SOURCE_OPTION}=recorded measures nothing live to record")
    spec_source = config.getoption(SPEC_SOURCE_OPTION)
    if spec_source and get_session(config).live_gpu is None:  # (recorded: None without probing; else probed already)
        out.append(f"{SPEC_SOURCE_OPTION}={spec_source} was not used: it picks the live GPU's spec, and this session "
                   "has no live GPU")
    if config.getoption(STRICT_FINDINGS_OPTION) and not uses["finding"]:
        out.append(f"{STRICT_FINDINGS_OPTION} was not used: no collected test carries a finding mark")
    return out


class OptionUse:
    """Hooks: count uses at collection (or receive them from xdist workers), report at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.uses = dict.fromkeys(_USES, 0)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        found = uses_of(session.items)
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller reports
            workeroutput[_WORKER_KEY] = found
        else:
            self.uses = found

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        found = (getattr(node, "workeroutput", None) or {}).get(_WORKER_KEY) or {}
        for key in _USES:  # every worker collects every test: the largest count is the session's
            self.uses[key] = max(self.uses[key], int(found.get(key, 0)))

    def lines(self) -> list[str]:
        return unused_options(self.config, self.uses, get_session(self.config).entries)

    def pytest_anatomy_update_environment(self, config: pytest.Config, environment: dict[str, Any]) -> None:
        lines = self.lines()
        if lines:
            environment["unused_options"] = lines
        if environment.get("hardware_spec"):  # the hardware fixture's spec: say how many tests it served
            environment["hardware_spec_used_by"] = (
                f"{self.uses['hardware']} collected tests (the hardware fixture); each reconciliation's "
                "hardware names the GPU it is of")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.lines():
            terminalreporter.write_line(f"anatomy: warning: {line}", yellow=True)
