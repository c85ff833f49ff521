"""Number and verdict formatting shared by every renderer (terminal, HTML, CI summary, pytest-html).

One place decides how a gap, a tolerance or a quantity reads, so '+5.46%' or '57.92 GiB' is spelled
the same in the terminal table, the HTML page and the markdown summary. Pure functions of the ledger's
plain values: nothing here imports pytest or jinja2."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_anatomy.units import format_quantity

# Most urgent first: a divergence fails the run, a finding is a known gap worth re-reading,
# a resolved finding asks for the finding to be retired.
VERDICTS: tuple[str, ...] = ("diverge", "finding", "resolved", "agree")
_URGENCY = {verdict: rank for rank, verdict in enumerate(VERDICTS)}

Recon = Mapping[str, Any]  # one entry of the ledger's "reconciliations" (glossary: reconciliation, `recon`)

# Units format_quantity rescales with a prefix (GiB, ms, TFLOP/s); kept in step with units.py.
SCALED_UNITS: tuple[str, ...] = ("B", "s", "B/s", "FLOP", "FLOP/s")


def plural(count: int, word: str, many: str | None = None) -> str:
    """'1 finding', '2 findings' (or the irregular `many`)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def verdict_counts(recons: Iterable[Recon]) -> dict[str, int]:
    """Counts per verdict, always with the four known verdicts present (zero when absent)."""
    counts = {verdict: 0 for verdict in VERDICTS}
    for recon in recons:
        verdict = str(recon.get("verdict", "?"))
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts


def prose_summary(ledger: Mapping[str, Any]) -> str:
    """'12 reconciliations: 12 predictions (9 agree, 2 findings, 0 resolved, 1 diverge); 4 from recordings, 8 live'.

    The verdicts counted are the predictions' (ledger_counts.headline); identities, settings, fit
    points and replays are listed apart: '40 reconciliations: 8 predictions (...); apart: 32
    identities; 40 from recordings, 0 live'."""
    from pytest_anatomy.ledger_counts import headline

    recons: Sequence[Recon] = ledger.get("reconciliations") or []
    skips: Sequence[Mapping[str, Any]] = ledger.get("skips") or []
    if not recons:
        tail = f"; {plural(len(skips), 'test')} skipped" if skips else ""
        return f"no reconciliations ran{tail}"
    recorded = sum(1 for recon in recons if recon.get("source") == "recorded")
    live = sum(1 for recon in recons if recon.get("source") == "live")
    given = len(recons) - recorded - live
    tail = f", {given} given numbers" if given else ""
    return f"{headline(recons)}; {recorded} from recordings, {live} live{tail}"


def review_order(recons: Iterable[Recon]) -> list[Recon]:
    """Diverge first, then findings, then resolved, then the rest; worst |gap| first within each."""

    def key(recon: Recon) -> tuple[int, float]:
        gap = recon.get("gap_rel")
        # no relative gap (predicted 0, or NaN): after every measurable gap of the same verdict
        size = abs(gap) if isinstance(gap, (int, float)) and math.isfinite(gap) else -1.0
        return (_URGENCY.get(str(recon.get("verdict")), len(VERDICTS)), -size)

    return sorted(recons, key=key)


def format_value(value: Any, unit: str) -> str:
    """A measured or predicted number for display; never scientific notation for counts.

    `format_quantity` keeps 4 significant digits, which turns 120025.4 tokens into
    '1.2e+05 tokens' and hides exactly the digits a capacity reconciliation is about."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value} {unit}".rstrip()
    if not math.isfinite(value) or value == 0:
        return f"{value:g} {unit}".rstrip()  # '0 s', not format_quantity's '0 ns'
    numerator, slash, denominator = unit.partition("/")
    if slash and unit not in SCALED_UNITS and numerator in SCALED_UNITS:
        return f"{format_quantity(value, numerator)}/{denominator}"  # 910.2 ns/token, not 9.102e-07 s/token
    shown = format_quantity(value, unit)
    if "e+" in shown:
        shown = f"{value:,.1f} {unit}".rstrip()
    return shown


def format_signed(value: float, unit: str) -> str:
    """format_value with an explicit '+' for positive gaps."""
    shown = format_value(value, unit)
    return shown if value <= 0 or shown.startswith("-") else "+" + shown


def format_percent(fraction: float) -> str:
    """Signed percent with precision that shrinks as the number grows: +0.03%, +12.4%, +312%."""
    pct = fraction * 100.0
    if pct == 0:
        return "0.00%"
    if abs(pct) < 10:
        return f"{pct:+.2f}%"
    if abs(pct) < 1000:
        return f"{pct:+.1f}%"
    return f"{pct:+,.0f}%"


def format_gap(recon: Recon) -> str:
    """The gap as a percent of the prediction, or absolute when the prediction is zero."""
    gap_rel = recon.get("gap_rel")
    if isinstance(gap_rel, (int, float)) and math.isfinite(gap_rel):
        return format_percent(gap_rel)
    gap_abs = recon.get("gap_abs")
    if isinstance(gap_abs, (int, float)) and math.isfinite(gap_abs):
        return format_signed(gap_abs, str(recon.get("unit", "")))
    return "n/a"


def _trim_number(value: float) -> str:
    return f"{value:.3g}"


def format_tolerance(tolerance: Mapping[str, Any] | None, unit: str) -> str:
    """'±0.1%', '±0.1% or ±16 tokens', 'ratio 0.85–1.1' -- what the verdict was judged against."""
    if not tolerance:
        return "—"
    parts: list[str] = []
    ratio = tolerance.get("ratio")
    if ratio:
        lo, hi = ratio
        parts.append(f"ratio {_trim_number(lo)}–{_trim_number(hi)}")
    rel = tolerance.get("rel") or 0.0
    if rel:
        parts.append(f"±{_trim_number(rel * 100)}%")
    abs_tol = tolerance.get("abs") or 0.0
    if abs_tol:
        parts.append("±" + format_value(abs_tol, unit))
    return " or ".join(parts) if parts else "exact"


def allowed_interval(recon: Recon) -> tuple[float, float] | None:
    """The measured values that would have agreed with the prediction, for plots.

    Mirrors reconcile.Tolerance.accepts: |gap| <= rel*|predicted| + abs, or a ratio band on
    measured/predicted (the two are exclusive there)."""
    predicted = recon.get("predicted")
    tolerance = recon.get("tolerance") or {}
    if not isinstance(predicted, (int, float)) or not math.isfinite(predicted):
        return None
    half = (tolerance.get("rel") or 0.0) * abs(predicted) + (tolerance.get("abs") or 0.0)
    lo, hi = predicted - half, predicted + half
    ratio = tolerance.get("ratio")
    if ratio:
        ends = sorted((ratio[0] * predicted, ratio[1] * predicted))
        lo, hi = min(lo, ends[0]), max(hi, ends[1])
    return lo, hi


def short_name(recon: Recon) -> str:
    """Reconciliation name plus the test's parameter id: 'kv_tokens[round2]'."""
    name = str(recon.get("name", "?"))
    test_id = str(recon.get("test_id", ""))
    if test_id.endswith("]") and "[" in test_id:
        name += test_id[test_id.index("[") :]
    return name




def exact_value(value: Any) -> str:
    """A number as typed, with thousands separators, so the arithmetic can be redone by hand."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        text = repr(value)
        if "e" in text or "n" in text:
            return text
        whole, _, frac = text.partition(".")
        whole = f"{int(whole):,}" if whole not in ("-0", "") else whole
        return f"{whole}.{frac}" if frac and frac != "0" else whole
    if isinstance(value, (list, tuple, Mapping)):
        return json.dumps(value, default=str)
    return str(value)


def tick_label(value: float, unit: str) -> str:
    """A short axis label: '2 GiB', '500 us', '1.5k', with 3 significant digits at most."""
    if unit in SCALED_UNITS:  # 4 digits past 999 of the largest prefix: '1000 TFLOP/s', not '1e+03 TFLOP/s'
        text = format_quantity(value, unit, digits=3)
        return format_quantity(value, unit, digits=4) if "e+" in text else text
    numerator, slash, denominator = unit.partition("/")
    if slash and numerator in SCALED_UNITS:
        return f"{tick_label(value, numerator)}/{denominator}"
    for divisor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= divisor:
            return f"{value / divisor:g}{suffix}"
    return f"{value:g}"


def fit(text: str, width: int) -> str:
    """`text` cut to `width` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def band_sources_line(recons: Iterable[Mapping[str, Any]]) -> str | None:
    """One line: the findings' bands by where they come from (findings.BAND_SOURCES), counted over every finding,
    resolved and diverge verdict of a finding mark, so a reader sees how many test nothing yet (checked-run) without
    opening the report; a verdict whose mark has no band is counted as "no band", never left out (issue 10: a
    bandless finding accepts any gap, so it must not hide from the count). None where no verdict has a mark."""
    from pytest_anatomy.findings import BAND_SOURCES

    counts: dict[str, int] = {}
    for r in recons:
        finding = r.get("finding")
        if isinstance(finding, Mapping) and r.get("verdict") != "agree":
            source = str(finding.get("band_from") or "not stated") if finding.get("expected") else "no band"
            counts[source] = counts.get(source, 0) + 1
    if not counts:
        return None
    said = ", ".join(f"{counts[k]} {k}" for k in [*BAND_SOURCES, "not stated", "no band"] if k in counts)
    return f"Finding bands by source: {said} (checked-run: read off the run it judges, so it tests nothing yet)."
