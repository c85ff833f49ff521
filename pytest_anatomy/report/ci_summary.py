"""A short markdown summary of a run for CI pages (`--anatomy-summary=PATH`, $GITHUB_STEP_SUMMARY).

What a reviewer of a CI run needs at a glance, in a few tables: the predictions' verdict counts per
suite and hardware (identities, settings, fit points and replays counted apart), the findings that
drifted out of their explained band or closed (resolved), the diverges with both numbers, and the
tests that failed. Everything else is in the HTML report.
Pure: `render_summary(ledger)` returns the text; `write_summary` only writes it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_anatomy.option_names import REPORT_OPTION
from pytest_anatomy.ledger_counts import KIND_PLURALS, counts_by_kind
from pytest_anatomy.reconcile import RECONCILIATION_KINDS
from pytest_anatomy.report.formatting import (
    band_sources_line,
    format_gap,
    format_tolerance,
    format_value,
    plural,
    prose_summary,
    review_order,
    short_name,
)

MAX_ROWS = 30  # per table: a step summary is read, not searched; the report holds the rest
_COUNT_ORDER = ("agree", "finding", "resolved", "diverge")

Recon = Mapping[str, Any]  # one entry of the ledger's "reconciliations" (glossary: reconciliation, `recon`)


def _cell(value: Any) -> str:
    """One table cell: a single line, pipes escaped (markdown has no other way to hold them)."""
    return " ".join(str(value).split()).replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = ()) -> list[str]:
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---:" if i in right else "---" for i in range(len(header))) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        lines.append(f"\n… and {len(rows) - MAX_ROWS} more; see the HTML report (`{REPORT_OPTION}`).")
    return lines


def _counts_table(recons: Sequence[Recon]) -> list[str]:
    """Per suite and hardware: the predictions' verdicts, then each other kind's total (an
    identity or a setting is listed, never counted as agreement)."""
    groups: dict[tuple[str, str], list[Recon]] = {}
    for recon in recons:
        groups.setdefault((str(recon.get("suite") or "other"), str(recon.get("hardware") or "—")), []).append(recon)
    by_group = {key: counts_by_kind(members) for key, members in groups.items()}
    extra = sorted({v for c in by_group.values() for v in c.get("prediction", {}) if v not in _COUNT_ORDER})
    kinds = [k for k in RECONCILIATION_KINDS if k != "prediction" and any(k in c for c in by_group.values())]
    columns = [*_COUNT_ORDER, *extra]
    rows = [[suite, hw, *(c.get("prediction", {}).get(v, 0) for v in columns),
             *(sum(c.get(k, {}).values()) for k in kinds)] for (suite, hw), c in sorted(by_group.items())]
    header = ["suite", "hardware", *columns, *(KIND_PLURALS[k][1] if k in KIND_PLURALS else k for k in kinds)]
    return _table(header, rows, right=range(2, len(header)))


def _ratio(recon: Recon) -> str:
    ratio = recon.get("ratio")
    return f"{ratio:.4g}" if isinstance(ratio, (int, float)) and math.isfinite(ratio) else "n/a"


def _band(finding: Mapping[str, Any]) -> str:
    expected, source = finding.get("expected"), finding.get("band_from")
    if not expected:
        return "—"
    return f"{expected[0]:g}–{expected[1]:g}" + (f" ({source})" if source else "")


def _moved_findings(recons: Sequence[Recon]) -> list[str]:
    moved = [r for r in review_order(recons) if r.get("finding") and r.get("verdict") in ("diverge", "resolved")]
    if not moved:
        return []
    rows = [[f"`{r['finding'].get('id', '?')}`", short_name(r), "drifted" if r["verdict"] == "diverge" else "resolved",
             _ratio(r), _band(r["finding"]), r.get("test_id", "")] for r in moved]
    return ["", "#### Findings that drifted or resolved", "",
            *_table(["finding", "reconciliation", "what", "measured/predicted", "explained band", "test"], rows,
                    right=(3,))]


def _diverges(recons: Sequence[Recon]) -> list[str]:
    diverged = [r for r in review_order(recons) if r.get("verdict") == "diverge"]
    if not diverged:
        return []
    rows = []
    for r in diverged:
        unit = str(r.get("unit", ""))
        rows.append([short_name(r), r.get("suite", ""), r.get("hardware") or "—", format_value(r.get("predicted"), unit),
                     format_value(r.get("measured"), unit), format_gap(r), format_tolerance(r.get("tolerance"), unit),
                     r.get("test_id", "")])
    return ["", "#### Diverges", "",
            *_table(["reconciliation", "suite", "hardware", "predicted", "measured", "gap", "tolerance", "test"], rows,
                    right=(3, 4, 5))]


def _failures(failures: Sequence[Mapping[str, Any]]) -> list[str]:
    if not failures:
        return []
    rows = [[f.get("test_id", ""), f.get("when", ""), (str(f.get("message") or "").strip().splitlines() or [""])[0]]
            for f in failures]
    return ["", f"#### {plural(len(failures), 'failed test')}", "", *_table(["test", "when", "message"], rows)]


def _band_sources(recons: Sequence[Recon]) -> list[str]:
    line = band_sources_line(recons)
    return [line, ""] if line else []


def render_summary(ledger: Mapping[str, Any]) -> str:
    """The markdown text: a heading with the prose summary, then the tables that have rows."""
    recons: Sequence[Recon] = ledger.get("reconciliations") or []
    tests = ledger.get("tests") or {}
    lines = [f"### pytest-anatomy: {prose_summary(ledger)}", ""]
    if tests:
        # pytest's own words: outcomes are verbs ("2 passed"), a finding or an error is counted as a noun
        lines += ["pytest: " + ", ".join(plural(n, k) if k in ("finding", "error") else f"{n} {k}"
                                         for k, n in tests.items()), ""]
    lines += _band_sources(recons)
    if recons:
        lines += _counts_table(recons)
    lines += _moved_findings(recons) + _diverges(recons) + _failures(ledger.get("failures") or [])
    return "\n".join(lines) + "\n"


def write_summary(ledger: Mapping[str, Any], path: Path, *, append: bool = False) -> Path:
    """Write (or, for $GITHUB_STEP_SUMMARY, append) the summary; returns the path written."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8", newline="\n") as handle:
        handle.write(render_summary(ledger))
    return path


__all__ = ["MAX_ROWS", "render_summary", "write_summary"]
