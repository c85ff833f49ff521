"""How a test's reconciliations become pytest's own outcome, for every tool that reads pytest.

A finding is an expected failure: its call report becomes `skipped` with `wasxfail` carrying the
finding's id, gap and explanation, exactly as pytest's skipping plugin marks an xfail. JUnit
XML, `-rx`, pytest-html and xdist then see it where they look for xfails. A resolved finding is
an unexpected pass, strict by default (`xfail_strict` semantics): it fails, unless the run
passes `--anatomy-allow-resolved` or the mark says `strict=False`, where it is a plain XPASS.
Under `--runxfail` the finding mark is ignored, as pytest ignores xfail marks: a finding fails
with both numbers, a resolved finding simply agrees.

Also here: the short, stable JUnit properties of each reconciliation, the ledger's entry for a
failed test, and the renaming of pytest's summary counts ("2 xfailed" -> "2 findings")."""

from __future__ import annotations

import json
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from pytest_anatomy.option_names import ALLOW_RESOLVED_OPTION
from pytest_anatomy.reconcile import Reconciliation, Verdict
from pytest_anatomy.report.formatting import (
    format_percent,
    format_tolerance,
    format_value,
)

# The Reconciliation objects a test recorded; the `reconcile` fixture fills it, the
# makereport hook reads it (the objects, not their JSON, so a failure can print explain()).
RECONCILED = pytest.StashKey[list[Reconciliation]]()

JUNIT_PREFIX = "anatomy"
# What each reconciliation contributes to its <testcase>'s <properties>, in this order.
JUNIT_FIELDS = ("predicted", "measured", "unit", "gap", "tolerance", "verdict", "kind", "source", "hardware",
                "finding")


@dataclass(frozen=True)
class Outcome:
    """What the call report of a test with reconciliations should say instead of 'passed'."""

    outcome: Literal["passed", "skipped", "failed"]
    wasxfail: str | None = None  # set: pytest's xfailed (skipped) or xpassed (passed)
    longrepr: str | None = None  # set: the failure text

    def apply(self, report: pytest.TestReport) -> None:
        report.outcome = self.outcome
        if self.wasxfail is not None:
            report.wasxfail = self.wasxfail  # type: ignore[attr-defined]
        if self.longrepr is not None:
            report.longrepr = self.longrepr


def settle(recons: Sequence[Reconciliation], *, allow_resolved: bool, runxfail: bool) -> Outcome | None:
    """The outcome of a test whose call passed; None leaves the report as pytest made it.

    A diverge never reaches here: the fixture raised, so the call did not pass."""
    findings = [r for r in recons if r.verdict is Verdict.FINDING]
    resolved = [r for r in recons if r.verdict is Verdict.RESOLVED]
    if runxfail:
        if not findings:
            return None
        text = "\n".join(_runxfail_text(r) for r in findings)
        return Outcome("failed", longrepr=text)
    strict = [r for r in resolved if not allow_resolved and (r.finding or {}).get("strict", True)]
    if strict:
        return Outcome("failed", longrepr="\n".join(_strict_xpass_text(r) for r in strict))
    if findings:
        return Outcome("skipped", wasxfail=xfail_reason([*findings, *resolved]))
    if resolved:
        return Outcome("passed", wasxfail=xfail_reason(resolved))
    return None


def xfail_reason(recons: Sequence[Reconciliation]) -> str:
    """One line per finding id: 'finding ID: NAME off by +5.5% (measured M vs predicted P,
    tolerance T) — REASON'; several ids are joined with ' | '. JUnit puts it in a message
    attribute and `-rx` prints it after the test id, so it stays on one line."""
    groups: dict[str, list[Reconciliation]] = {}
    for recon in recons:
        groups.setdefault(str((recon.finding or {}).get("id", "?")), []).append(recon)
    parts = []
    for finding_id, members in groups.items():
        gaps = ", ".join(_gap_phrase(r) for r in members)
        reason = " ".join(str((members[0].finding or {}).get("reason") or "").split())
        parts.append(f"finding {finding_id}: {gaps}" + (f" — {reason}" if reason else ""))
    return " | ".join(parts)


def _gap_phrase(recon: Reconciliation) -> str:
    unit = recon.prediction.unit
    gap = format_percent(recon.gap_rel) if recon.gap_rel is not None else format_value(recon.gap_abs, unit)
    how = "now agrees at" if recon.verdict is Verdict.RESOLVED else "off by"
    return (f"{recon.name} {how} {gap} (measured {format_value(recon.measured, unit)} vs predicted "
            f"{format_value(recon.predicted, unit)}, tolerance {recon.tolerance.describe(unit)})")


def _mark_id(recon: Reconciliation) -> str:
    return str((recon.finding or {}).get("id", "?"))


def _strict_xpass_text(recon: Reconciliation) -> str:
    ratio = "n/a" if recon.ratio is None else f"{recon.ratio:.6g}"
    return (f"[XPASS(strict)] finding {_mark_id(recon)!r} is resolved: {recon.name} now agrees "
            f"(measured/predicted {ratio}); remove the finding mark, or relax it for a transition "
            f"with strict=False on the mark or {ALLOW_RESOLVED_OPTION}\n{recon.explain()}")


def _runxfail_text(recon: Reconciliation) -> str:
    reason = " ".join(str((recon.finding or {}).get("reason") or "").split())
    return (f"finding {_mark_id(recon)!r} fails under --runxfail (finding marks are ignored): "
            f"reconciliation diverged\n{recon.explain()}\n  finding's explanation: {reason}")


def junit_properties(recons: Iterable[Reconciliation]) -> list[tuple[str, str]]:
    """(name, value) pairs `anatomy.<reconciliation>.<field>` for JUnit's <property> elements.

    Numbers are plain (repr of the float, SI units as in the ledger) so a CI system can chart
    them; gap is (measured - predicted) / |predicted| as a fraction, absent when predicted is 0;
    tolerance is the band as the terminal prints it; kind says what the check is evidence of (a
    dashboard charting predictions filters on it); finding is the mark's id, absent without one."""
    props: list[tuple[str, str]] = []
    for recon in recons:
        values: dict[str, Any] = {
            "predicted": recon.predicted,
            "measured": recon.measured,
            "unit": recon.prediction.unit,
            "gap": recon.gap_rel,
            "tolerance": format_tolerance(recon.tolerance.to_dict(), recon.prediction.unit),
            "verdict": recon.verdict.value,
            "kind": recon.kind,
            "source": recon.measurement.source,
            "hardware": recon.hardware,
            "finding": (recon.finding or {}).get("id"),
        }
        props += [(f"{JUNIT_PREFIX}.{recon.name}.{key}", _text(values[key]))
                  for key in JUNIT_FIELDS if values[key] is not None]
    return props


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def verdicts_of(report: Any, property_name: str) -> list[str]:
    """The verdicts a report's reconciliations carry (the JSON user properties the fixture wrote)."""
    return [json.loads(v)["verdict"] for k, v in getattr(report, "user_properties", ()) if k == property_name]


def failure_entry(report: Any) -> dict[str, Any]:
    """The ledger's record of a failed or errored test: where, the message, the traceback text."""
    when = str(getattr(report, "when", None) or "collect")
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    text = str(getattr(report, "longreprtext", "") or "")
    message = getattr(crash, "message", None) or next((line for line in text.splitlines() if line.strip()), "")
    return {
        "test_id": report.nodeid,
        "when": when,
        "outcome": "failed" if when == "call" else "error",
        "message": str(message),
        "longrepr": text,
    }


def rename_summary_counts(stats: MutableMapping[str, list[Any]], property_name: str) -> bool:
    """Move our xfailed/xpassed reports to 'finding(s)' / 'resolved' in pytest's final counts.

    The reports stay 'xfailed'/'xpassed' while tests run so that `-rx`/`-rX` list them; only the
    counts line is ours. Returns whether anything moved."""
    moved = False
    for pytest_key, verdict in (("xfailed", "finding"), ("xpassed", "resolved")):
        reports = stats.get(pytest_key) or []
        ours = [r for r in reports if verdict in verdicts_of(r, property_name)]
        if not ours:
            continue
        rest = [r for r in reports if not any(r is o for o in ours)]
        if rest:
            stats[pytest_key] = rest
        else:
            del stats[pytest_key]
        key = verdict if verdict == "resolved" or len(ours) == 1 else verdict + "s"
        stats.setdefault(key, []).extend(ours)
        moved = True
    return moved
