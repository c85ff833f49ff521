"""A pre-registered kernel time's tolerance from measured noise (issue 10), in place of the ladders' 15% acceptance
target: the checked run's own timing noise (its two timing blocks) plus the rung's spread over the other recorded
sessions on the card (the card-to-card and session-to-session variation a prediction fixed in milliseconds cannot
know). With fewer than MIN_OTHER_RUNS other sessions (a card met for the first time) the second term is the session
drift of the ladders' rung 0 (cuBLAS and torch kernels that did not change, kernel_findings.spread_terms). The 15%
stays what it was written as: the ladders' goal for a hand prediction, in the rung headers and docs."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import kernel_findings as kf

from pytest_anatomy import recordings

MIN_OTHER_RUNS = 3
RESULTS_ROOT = Path(__file__).resolve().parents[1] / "results"
NOISE_WHY = ("measured noise: the run's two timing blocks (time vs time_repeat) plus the rung's spread over the "
             "card's other recorded sessions (kernel_budget.py); the 15% acceptance target is a goal, not a tolerance")


def other_times(folders: Iterable[Path], hardware: str, name: str, recorded_at: str) -> list[float]:
    """The time of every recorded run of `name` on `hardware` but the one recorded at `recorded_at`."""
    return [float(r.measurements["time"]["value"]) for r in recordings.load_runs(folders, hardware, "kernels", name)
            if r.recorded_at != recorded_at and "time" in r.measurements]


def repeat_scatter(rec: Any) -> float:
    m = rec.measurements
    return abs(m["time"]["value"] / m["time_repeat"]["value"] - 1) if "time_repeat" in m else 0.0


def budget(rec: Any, others: list[float]) -> dict[str, float]:
    """The tolerance's named relative terms (reconcile(budget=...)): the report shows their sum."""
    terms = {"repeat_scatter": repeat_scatter(rec)}
    if len(others) >= MIN_OTHER_RUNS:
        median = statistics.median(others)
        terms["spread_over_other_sessions"] = max(abs(t / median - 1) for t in others)
    else:
        terms["session_drift_of_rung_0"] = kf.spread_terms()["session_drift_of_rung_0"]
    return terms
