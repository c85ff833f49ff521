"""`--anatomy-plan`: what a live session would measure, with time estimates, before anything runs.

Each suite's conftest answers the `pytest_anatomy_live_plan` hook for its selected items; this
module prints the union as a table and a total, per target. Estimates are planning numbers
(measured on the H200: engine starts, plan runs, kernel timings), not predictions.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_anatomy.option_names import SOURCE_OPTION
from pytest_anatomy.session import get_session


def live_items(items: list[pytest.Item]) -> list[pytest.Item]:
    return [i for i in items if getattr(getattr(getattr(i, "callspec", None), "params", {}).get("target"), "live", False)]


def plan_entries(config: pytest.Config, items: list[pytest.Item]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for answer in config.hook.pytest_anatomy_live_plan(config=config, items=live_items(items)):
        entries.extend(answer or [])
    return entries


def print_plan(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = get_session(config)
    writer = config.pluginmanager.getplugin("terminalreporter")
    write = writer.write_line if writer is not None else print
    target = state.live_target() if state.settings.source != "recorded" else None
    live = live_items(items)
    write("")
    if target is None:
        write(f"anatomy live plan: no live GPU ({SOURCE_OPTION}={state.settings.source}); nothing would be "
              f"measured, {len(items)} selected tests replay recordings or run on the CPU")
        return
    write(f"anatomy live plan on {target.name} (spec: {target.spec_source}): {len(live)} of {len(items)} selected "
          "tests measure live")
    entries = plan_entries(config, items)
    total = 0.0
    write(f"  {'suite':10s} {'estimate':>9s} {'ends at':>8s}  what")
    for e in entries:
        total += float(e["estimate_s"])
        write(f"  {e['suite']:10s} {e['estimate_s']:8.0f}s {total:7.0f}s  {e['what']}")
    write(f"  total ~{total / 60:.1f} min (estimates from the H200; other cards differ)")
