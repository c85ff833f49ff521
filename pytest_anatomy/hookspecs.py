"""Hooks other plugins and conftest.py files can implement."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_anatomy_reconciled(config: pytest.Config, reconciliation: Any) -> None:
    """Called after each reconciliation is recorded (before its assertion).

    Example, in conftest.py, to stream results to a dashboard::

        def pytest_anatomy_reconciled(config, reconciliation):
            print(reconciliation.name, reconciliation.verdict.value, reconciliation.gap_rel)
    """


@pytest.hookspec
def pytest_anatomy_update_environment(config: pytest.Config, environment: dict[str, Any]) -> None:
    """Add or redact entries of the report's environment section.

    Example::

        def pytest_anatomy_update_environment(config, environment):
            environment["cluster"] = "lab-a"
            environment.pop("command", None)
    """


@pytest.hookspec
def pytest_anatomy_live_plan(config: pytest.Config, items: list[pytest.Item]) -> list[dict[str, Any]]:  # type: ignore[empty-body]
    """What the selected `items` will measure on the live target, for `--anatomy-plan` and progress.

    Return a list of {"suite", "what", "estimate_s"} (one entry per engine start, plan run or
    batch of kernels), with "estimate_high_s" where the time depends on the machine's CPU (vLLM
    imports and engine starts): estimate_s is then the faster machine's, estimate_high_s the
    slower one's. Each suite's conftest answers for its own items.

    Example::

        def pytest_anatomy_live_plan(config, items):
            mine = [i for i in items if "tests_mysuite" in i.nodeid]
            return [{"suite": "mysuite", "what": f"{len(mine)} cases", "estimate_s": 2.0 * len(mine)}]
    """
