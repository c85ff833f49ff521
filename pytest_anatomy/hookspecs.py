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
