"""Verdict and Gap columns for pytest-html >= 4.

The plugin registers `AnatomyHtmlColumns()` only when the `html` plugin is active: hookimpls
named `pytest_html_*` on a plugin without pytest-html's hookspecs are an unknown-hook error.
This module therefore imports nothing from pytest-html, and `optionalhook=True` keeps even a
stray registration harmless.

Each test's reconciliations travel on the report as `user_properties` entries
`("anatomy_reconciliation", <JSON of one ledger entry>)`: user_properties are serialised with
the report, so they survive xdist workers. (JUnit XML gets the short `anatomy.<name>.<field>`
properties instead: see outcome.junit_properties.)"""

from __future__ import annotations

import html
import json
from collections.abc import MutableSequence
from typing import Any

import pytest

from pytest_anatomy.report.formatting import VERDICTS, format_gap, short_name
from pytest_anatomy.report.html import (
    VERDICT_COLOURS as _COLOURS,  # pytest-html's CSS knows nothing of ours
)

USER_PROPERTY = "anatomy_reconciliation"
_URGENCY = {verdict: rank for rank, verdict in enumerate(VERDICTS)}


def reconciliations_from_report(report: Any) -> list[dict[str, Any]]:
    """The ledger entries a test recorded, in recording order.

    Accepts a JSON string (what the plugin stores) or an already-decoded dict (what a
    conftest might store); any other property name is ignored."""
    entries: list[dict[str, Any]] = []
    for prop in getattr(report, "user_properties", None) or ():
        if not isinstance(prop, (tuple, list)) or len(prop) != 2 or prop[0] != USER_PROPERTY:
            continue
        value = prop[1]
        if isinstance(value, dict):
            entries.append(value)
            continue
        try:
            entry = json.loads(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"user property {USER_PROPERTY!r} of {getattr(report, 'nodeid', '?')!r} is not JSON "
                f"({exc}): {str(value)[:80]!r}; record reconciliations through the reconcile fixture"
            ) from exc
        if not isinstance(entry, dict):
            raise ValueError(
                f"user property {USER_PROPERTY!r} of {getattr(report, 'nodeid', '?')!r} holds "
                f"{type(entry).__name__}, expected one ledger entry (a JSON object)"
            )
        entries.append(entry)
    return entries


def worst_verdict(entries: list[dict[str, Any]]) -> str:
    """diverge > finding > resolved > agree; '' when the test reconciled nothing."""
    verdicts = [str(e.get("verdict", "?")) for e in entries]
    return min(verdicts, key=lambda v: _URGENCY.get(v, len(VERDICTS)), default="")


class AnatomyHtmlColumns:
    """pytest-html hookimpls: 'Verdict' (sortable) and 'Gap' columns after 'Test'."""

    # pytest-html sorts a column by the text inside <td class="col-NAME">, found with a
    # single-line regex: keep the verdict cell's content plain text on one line.
    header_cells = (
        '<th class="sortable" data-column-type="anatomyVerdict">Verdict</th>',
        '<th data-column-type="anatomyGap">Gap</th>',
    )

    @staticmethod
    def _position(cells: MutableSequence[str]) -> int:
        return min(2, len(cells))  # after Result, Test; before Duration, Links

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: MutableSequence[str]) -> None:
        at = self._position(cells)
        cells[at:at] = list(self.header_cells)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: Any, cells: MutableSequence[str]) -> None:
        # setup/teardown rows get empty cells: the reconciliations belong to the call.
        entries = reconciliations_from_report(report) if getattr(report, "when", "call") == "call" else []
        verdict = worst_verdict(entries)
        style = f' style="color:{_COLOURS[verdict]};font-weight:600"' if verdict in _COLOURS else ""
        if len(entries) > 1:
            shown = sum(1 for e in entries if e.get("verdict") == verdict)
            verdict_text = f"{verdict} ({shown} of {len(entries)})"
        else:
            verdict_text = verdict
        gaps = "<br>".join(
            html.escape(f"{short_name(e)} {format_gap(e)}" if len(entries) > 1 else format_gap(e)) for e in entries
        )
        at = self._position(cells)
        cells[at:at] = [
            f'<td class="col-anatomyVerdict"{style}>{html.escape(verdict_text)}</td>',
            f'<td class="col-anatomyGap" style="font-family:monospace;text-align:right">{gaps}</td>',
        ]
