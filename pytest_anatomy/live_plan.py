"""`--anatomy-plan`: what a live session would measure, with time estimates, before anything runs.

Each suite's conftest answers the `pytest_anatomy_live_plan` hook for its selected items; this
module prints the union as a table and a total, per target. Estimates are planning numbers
(measured on the H200: engine starts, plan runs, kernel timings), not predictions.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_anatomy.gpu_arch import summarize
from pytest_anatomy.option_names import SOURCE_OPTION
from pytest_anatomy.session import get_session


def live_items(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items that would measure on the live target: not those marked skip at collection (a kernel the card's
    architecture cannot run), which measure nothing."""
    return [i for i in _on_live_target(items) if i.get_closest_marker("skip") is None]


def _on_live_target(items: list[pytest.Item]) -> list[pytest.Item]:
    return [i for i in items if getattr(getattr(getattr(i, "callspec", None), "params", {}).get("target"), "live", False)]


def skipped_here(items: list[pytest.Item]) -> list[str]:
    """The distinct reasons of the live target's items marked skip at collection."""
    reasons = {str(m.kwargs.get("reason") or (m.args[0] if m.args else "")) for i in _on_live_target(items)
               for m in [i.get_closest_marker("skip")] if m is not None}
    return sorted(reasons)


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
    if state.planned_only:
        gpu = state.live_gpu
        cc = gpu.compute_capability
        write(f"  no GPU here: planned for the catalog's {gpu.name} ({gpu.memory_total_bytes / 2**30:.1f} GiB"
              f"{f', compute capability {cc[0]}.{cc[1]}' if cc else ''}) as detection would report it; "
              "run this on the card to measure")
    skipped = [i for i in _on_live_target(items) if i not in live]
    if skipped:
        write(f"  {len(skipped)} tests skip on this card and measure nothing; kernels it cannot run, by the "
              f"architecture they need: {summarize(skipped_here(items))}")
    entries = [SESSION_ENTRY, *plan_entries(config, items)]
    low = high = 0.0
    write(f"  {'suite':10s} {'estimate':>13s} {'ends at':>13s}  what")
    for e in entries:
        lo, hi = estimate_range(e)
        low, high = low + lo, high + hi
        write(f"  {e['suite']:10s} {_span(lo, hi):>13s} {_span(low, high):>13s}  {e['what']}")
    write(f"  total {low / 60:.1f}-{high / 60:.1f} min ({low:.0f}-{high:.0f} s; fitted on two H200 sessions, "
          "the low end the faster machine's, the high end the slower one's; other cards differ)")
    warning = limit_warning(high, full=any(i.get_closest_marker("slow") for i in live))
    if warning:
        write(f"  {warning}")


def limit_warning(high: float, *, full: bool) -> str | None:
    """The warning line when the plan's high end exceeds its limit (15 minutes for a session with slow
    tests, 5 for the fast subset), else None."""
    limit, name = (FULL_LIMIT_S, "the whole live session") if full else (FAST_LIMIT_S, '`-m "gpu and not slow"`')
    if high <= limit:
        return None
    return (f"WARNING: the high end, {high:.0f} s, exceeds the {limit / 60:.0f}-minute limit for {name} "
            f"({limit:.0f} s): a machine as slow as the slower one would overrun it")


# The session's own time outside every suite's measurements: start-up, collection, the first live test's
# setup and the end (terminal summary, report writing): 7.5 s and 9.7 s in the two full sessions fitted
# below (results/h200/live-runs/20261201T235925Z.full.log.xz, 873 s, and 20261202T022605Z.full.log.xz,
# 957 s, whose CPU was ~20% slower at vLLM imports and engine starts).
SESSION_ENTRY = {"suite": "session", "what": "start-up, collection and the end of the session",
                 "estimate_s": 8.0, "estimate_high_s": 10.0}
FULL_LIMIT_S = 900.0  # the whole live session on one H200
FAST_LIMIT_S = 300.0  # `-m "gpu and not slow"`


def estimate_range(entry: dict[str, Any]) -> tuple[float, float]:
    """(low, high) seconds of a plan entry: estimate_s, and estimate_high_s where the suite gave one."""
    low = float(entry["estimate_s"])
    return low, max(low, float(entry.get("estimate_high_s", low)))


def _span(low: float, high: float) -> str:
    return f"{low:.0f}s" if round(low) == round(high) else f"{low:.0f}-{high:.0f}s"
