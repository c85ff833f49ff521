"""Terminal summary of a run's reconciliations.

The plugin prints `summary_lines(ledger)` from `pytest_terminal_summary`. The lines carry no
colour codes (the plugin may colour them through terminalreporter) and never exceed
`MAX_WIDTH` columns, so they survive CI logs and `| tee`. Numbers are spelled by
report/formatting.py, which the HTML page and the CI summary share."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_anatomy.report.formatting import (
    Recon,
    band_sources_line,
    fit,
    format_gap,
    format_tolerance,
    format_value,
    plural,
    prose_summary,
    review_order,
    short_name,
)

MAX_WIDTH = 120
MAX_ROWS = 20

# (header, width, right-aligned); the name column takes whatever MAX_WIDTH leaves over.
_COLUMNS: tuple[tuple[str, int, bool], ...] = (
    ("suite", 10, False),
    ("name", 0, False),
    ("predicted", 15, True),
    ("measured", 15, True),
    ("gap", 8, True),
    ("tolerance", 14, False),
    ("verdict", 8, False),
)


def _widths(suite_width: int) -> list[int]:
    widths = [suite_width if head == "suite" else width for head, width, _ in _COLUMNS]
    widths[1] = MAX_WIDTH - sum(widths) - 2 * (len(widths) - 1)
    return widths


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    out = []
    for text, width, (_, _, right) in zip(cells, widths, _COLUMNS):
        text = fit(text, width)
        out.append(text.rjust(width) if right else text.ljust(width))
    return "  ".join(out).rstrip()


def table_lines(recons: Sequence[Recon], max_rows: int = MAX_ROWS) -> list[str]:
    """Fixed-width table of the most urgent reconciliations, with a note on what was left out."""
    ordered = review_order(recons)
    widths = _widths(min(10, max(5, *(len(str(recon.get("suite", ""))) for recon in ordered[:max_rows]))))
    lines = [_row([h for h, _, _ in _COLUMNS], widths), _row(["-" * w for w in widths], widths)]
    for recon in ordered[:max_rows]:
        unit = str(recon.get("unit", ""))
        lines.append(
            _row(
                [
                    str(recon.get("suite", "")),
                    short_name(recon),
                    format_value(recon.get("predicted"), unit),
                    format_value(recon.get("measured"), unit),
                    format_gap(recon),
                    format_tolerance(recon.get("tolerance"), unit),
                    str(recon.get("verdict", "?")),
                ],
                widths,
            )
        )
    omitted = len(ordered) - max_rows
    if omitted > 0:
        lines.append(f"... {plural(omitted, 'more reconciliation')} omitted (all agree or smaller gaps); see the report")
    return lines


def _written_on(finding: Mapping[str, Any]) -> str | None:
    """The card a finding mark naming several cards was written on (the first), or None for one card or any."""
    cards = finding.get("hardware")
    return str(cards[0]) if isinstance(cards, list) and len(cards) > 1 else None


def finding_lines(recons: Iterable[Recon], max_lines: int = 3) -> list[str]:
    """'FINDING <id>: <name> off by +x.x% — <reason>' once per finding id (and RESOLVED lines).

    Reconciliations that share a finding id share its reason, so they share one entry; each
    entry is wrapped to MAX_WIDTH and cut after `max_lines` (the report has the full text)."""
    groups: dict[tuple[str, str], list[Recon]] = {}
    for recon in recons:
        finding = recon.get("finding")
        if finding:
            kind = "RESOLVED" if recon.get("verdict") == "resolved" else "FINDING"
            groups.setdefault((kind, str(finding.get("id", "?"))), []).append(recon)
    lines: list[str] = []
    for (kind, finding_id), members in groups.items():
        gaps = ", ".join(f"{short_name(recon)} {'now' if kind == 'RESOLVED' else 'off by'} {format_gap(recon)}" for recon in members)
        reason = " ".join(str(members[0]["finding"].get("reason") or "").split())
        tail = "; retire the finding" if kind == "RESOLVED" else ""
        written_on = _written_on(members[0]["finding"])
        if kind == "RESOLVED" and written_on and all(r.get("hardware") != written_on for r in members):
            # a band carried to another card that this card does not need: the finding stays its first card's
            tail = f"; not needed on {', '.join(sorted({str(r.get('hardware')) for r in members}))} (written on {written_on})"
        text = f"{kind} {finding_id}: {gaps}{tail}" + (f" — {reason}" if reason else "")
        wrapped = textwrap.wrap(text, MAX_WIDTH, subsequent_indent="    ", break_on_hyphens=False)
        if len(wrapped) > max_lines:
            wrapped = wrapped[:max_lines]
            wrapped[-1] = fit(wrapped[-1] + " …", MAX_WIDTH)
        lines += wrapped
    return lines


def summary_lines(ledger: Mapping[str, Any]) -> list[str]:
    """Everything the plugin prints in the terminal summary, one string per line, no colour."""
    recons: Sequence[Recon] = ledger.get("reconciliations") or []
    # The headline may list kinds apart from predictions: wrapped, never cut (it carries the counts).
    lines = textwrap.wrap(prose_summary(ledger), MAX_WIDTH, subsequent_indent="    ", break_on_hyphens=False)
    if recons:
        lines += table_lines(recons)
        lines += finding_lines(recon for recon in review_order(recons) if recon.get("verdict") in ("finding", "resolved"))
        sources = band_sources_line(recons)
        if sources:
            lines += textwrap.wrap(sources, MAX_WIDTH, subsequent_indent="    ", break_on_hyphens=False)
    skips: Sequence[Mapping[str, Any]] = ledger.get("skips") or []
    if skips and recons:
        lines.append(f"{plural(len(skips), 'reconciliation test')} skipped; reasons are in the report and in -rs output")
    return [fit(line, MAX_WIDTH) for line in lines]
