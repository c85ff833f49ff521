"""Helpers every report figure shares: reading a reconciliation's numbers and the recording it
names, colours and outlines by verdict, tooltips and tick formats."""

from __future__ import annotations

import re

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any


from pytest_anatomy.report.formatting import (
    format_gap,
    format_value,
    short_name,
    tick_label,
)
from pytest_anatomy.report.svg import VERDICT_COLOURS, Chart

Recon = Mapping[str, Any]  # one entry of the ledger's "reconciliations" (glossary: reconciliation, `recon`)
MEASURED = "#24292f"
PREDICTION_SHAPES = ("diamond", "triangle", "square", "wedge", "ring", "cross")  # measured points without a verdict of their own (a recording, a baseline)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def _inputs(recon: Recon) -> Mapping[str, Any]:
    return (recon.get("prediction") or {}).get("inputs") or {}


def _terms(recon: Recon) -> dict[str, float]:
    out: dict[str, float] = {}
    for term in (recon.get("prediction") or {}).get("terms") or []:
        value = _num(term.get("value"))
        if value is not None:
            out[str(term.get("name", ""))] = value
    return out


def _colour(recon: Recon) -> str:
    return VERDICT_COLOURS.get(str(recon.get("verdict")), "#616161")


def _outline(recon: Recon) -> str:
    """A verdict ring around a series-coloured point: none for agree, the verdict's colour otherwise."""
    return "" if recon.get("verdict") == "agree" else _colour(recon)


# The page's table rows of the reconciliations being drawn (id(recon) -> row, html.py's anchor rec-<row>), set by
# html.build_view around the plots: a mark of a reconciliation with a row carries the row (and its label, `what`), and
# the page's script makes its tooltip from that row instead of a <title> written into the page.
_TABLE_ROWS: ContextVar[Mapping[int, int]] = ContextVar("table_rows", default={})


@contextmanager
def table_rows(rows: Mapping[int, int]) -> Iterator[None]:
    token = _TABLE_ROWS.set(rows)
    try:
        yield
    finally:
        _TABLE_ROWS.reset(token)


def mark(recon: Recon, what: str = "") -> dict[str, Any]:
    """Chart.point's tooltip arguments for a reconciliation's mark: its row and label where the page has a row for
    it (the script writes the tooltip), else the tooltip itself (_tip)."""
    return {"tip": _tip(recon, what), "row": _TABLE_ROWS.get().get(id(recon)), "what": what}


def _tip(recon: Recon, what: str = "") -> str:
    unit = str(recon.get("unit", ""))
    return (f"{what or short_name(recon)} ({recon.get('verdict')}): predicted {format_value(recon.get('predicted'), unit)}, "
            f"measured {format_value(recon.get('measured'), unit)}, gap {format_gap(recon)}")


def _fmt(unit: str):
    return lambda v: tick_label(v, unit)


# Recording paths in a ledger are relative to the folder the run started in (the checkout);
# a report rendered elsewhere finds them beside this package's checkout.
_CHECKOUT = Path(__file__).resolve().parents[2]


def _resolve(path: str) -> Path:
    candidate = Path(path)
    if candidate.is_absolute() or candidate.exists() or not (_CHECKOUT / candidate).exists():
        return candidate
    return _CHECKOUT / candidate


def _recording(recon: Recon) -> Path | None:
    path = (recon.get("provenance") or {}).get("recording")
    if not path:
        return None
    candidate = _resolve(str(path))
    return candidate if candidate.is_file() else None


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _measurement(recording: Mapping[str, Any] | None, key: str) -> float | None:
    value = ((recording or {}).get("measurements") or {}).get(key)
    return _num(value.get("value")) if isinstance(value, Mapping) else None


def _newest(folder: Path, stem: str) -> dict[str, Any] | None:
    """The newest recording named `stem` in `folder` (names sort by their UTC timestamp)."""
    files = sorted(folder.glob(f"{stem}@*.json"))
    return _load(files[-1]) if files else None



def _verdict_colour_keys(chart: Chart, recons: Sequence[Recon]) -> None:
    """Legend entries for the verdict colours the predictions in `recons` are drawn in."""
    for verdict in ("agree", "finding", "resolved", "diverge"):
        if any(r.get("verdict") == verdict for r in recons):
            chart.key("box", VERDICT_COLOURS[verdict], verdict)


def _verdict_keys(chart: Chart, recons: Sequence[Recon]) -> None:
    for verdict in ("finding", "resolved", "diverge"):
        if any(r.get("verdict") == verdict for r in recons):
            chart.key("ring", VERDICT_COLOURS[verdict], f"ringed: {verdict}")




_RUNG_CODE = re.compile(r"^([a-z]+)(\d+)")


def _rung_order(rung: str) -> tuple[int, str]:
    code = _RUNG_CODE.match(rung)
    return (int(code[2]) if code else 99, rung)


