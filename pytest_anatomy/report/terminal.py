"""Terminal summary of a run's reconciliations, plus the formatting both renderers share.

The plugin prints `summary_lines(ledger)` from `pytest_terminal_summary`. The lines carry no
colour codes (the plugin may colour them through terminalreporter) and never exceed
`MAX_WIDTH` columns, so they survive CI logs and `| tee`. The HTML renderer imports the
formatting helpers below so that a number reads the same in both places."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_anatomy.ledger_counts import headline
from pytest_anatomy.units import format_quantity

MAX_WIDTH = 120
MAX_ROWS = 20

# Most urgent first: a divergence fails the run, a finding is a known gap worth re-reading,
# a resolved finding asks for the finding to be retired.
VERDICTS: tuple[str, ...] = ("diverge", "finding", "resolved", "agree")
_URGENCY = {verdict: rank for rank, verdict in enumerate(VERDICTS)}

Rec = Mapping[str, Any]

# Units format_quantity rescales with a prefix (GiB, ms, TFLOP/s); kept in step with units.py.
SCALED_UNITS: tuple[str, ...] = ("B", "s", "B/s", "FLOP", "FLOP/s")


def plural(count: int, word: str, many: str | None = None) -> str:
    """'1 finding', '2 findings' (or the irregular `many`)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def verdict_counts(recs: Iterable[Rec]) -> dict[str, int]:
    """Counts per verdict, always with the four known verdicts present (zero when absent)."""
    counts = {verdict: 0 for verdict in VERDICTS}
    for rec in recs:
        verdict = str(rec.get("verdict", "?"))
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts


def prose_summary(ledger: Mapping[str, Any]) -> str:
    """'12 reconciliations: 9 agree, 2 findings, 0 resolved, 1 diverge; 4 from recordings, 8 live'.

    The verdicts counted are the predictions' (ledger_counts.headline); identities, settings, fit
    points and replays are listed apart: '40 reconciliations: 8 predictions (...); apart: 32
    identities; 40 from recordings, 0 live'."""
    recs: Sequence[Rec] = ledger.get("reconciliations") or []
    skips: Sequence[Rec] = ledger.get("skips") or []
    if not recs:
        tail = f"; {plural(len(skips), 'test')} skipped" if skips else ""
        return f"no reconciliations ran{tail}"
    recorded = sum(1 for rec in recs if rec.get("source") == "recorded")
    live = sum(1 for rec in recs if rec.get("source") == "live")
    given = len(recs) - recorded - live
    tail = f", {given} given numbers" if given else ""
    return f"{headline(recs)}; {recorded} from recordings, {live} live{tail}"


def review_order(recs: Iterable[Rec]) -> list[Rec]:
    """Diverge first, then findings, then resolved, then the rest; worst |gap| first within each."""

    def key(rec: Rec) -> tuple[int, float]:
        gap = rec.get("gap_rel")
        # no relative gap (predicted 0, or NaN): after every measurable gap of the same verdict
        size = abs(gap) if isinstance(gap, (int, float)) and math.isfinite(gap) else -1.0
        return (_URGENCY.get(str(rec.get("verdict")), len(VERDICTS)), -size)

    return sorted(recs, key=key)


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


def format_gap(rec: Rec) -> str:
    """The gap as a percent of the prediction, or absolute when the prediction is zero."""
    gap_rel = rec.get("gap_rel")
    if isinstance(gap_rel, (int, float)) and math.isfinite(gap_rel):
        return format_percent(gap_rel)
    gap_abs = rec.get("gap_abs")
    if isinstance(gap_abs, (int, float)) and math.isfinite(gap_abs):
        return format_signed(gap_abs, str(rec.get("unit", "")))
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


def allowed_interval(rec: Rec) -> tuple[float, float] | None:
    """The measured values that would have agreed with the prediction, for plots.

    Mirrors reconcile.Tolerance.accepts: |gap| <= rel*|predicted| + abs, or a ratio band on
    measured/predicted (the two are exclusive there)."""
    predicted = rec.get("predicted")
    tolerance = rec.get("tolerance") or {}
    if not isinstance(predicted, (int, float)) or not math.isfinite(predicted):
        return None
    half = (tolerance.get("rel") or 0.0) * abs(predicted) + (tolerance.get("abs") or 0.0)
    lo, hi = predicted - half, predicted + half
    ratio = tolerance.get("ratio")
    if ratio:
        ends = sorted((ratio[0] * predicted, ratio[1] * predicted))
        lo, hi = min(lo, ends[0]), max(hi, ends[1])
    return lo, hi


def short_name(rec: Rec) -> str:
    """Reconciliation name plus the test's parameter id: 'kv_tokens[round2]'."""
    name = str(rec.get("name", "?"))
    test_id = str(rec.get("test_id", ""))
    if test_id.endswith("]") and "[" in test_id:
        name += test_id[test_id.index("[") :]
    return name


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


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
        text = _fit(text, width)
        out.append(text.rjust(width) if right else text.ljust(width))
    return "  ".join(out).rstrip()


def table_lines(recs: Sequence[Rec], max_rows: int = MAX_ROWS) -> list[str]:
    """Fixed-width table of the most urgent reconciliations, with a note on what was left out."""
    ordered = review_order(recs)
    widths = _widths(min(10, max(5, *(len(str(rec.get("suite", ""))) for rec in ordered[:max_rows]))))
    lines = [_row([h for h, _, _ in _COLUMNS], widths), _row(["-" * w for w in widths], widths)]
    for rec in ordered[:max_rows]:
        unit = str(rec.get("unit", ""))
        lines.append(
            _row(
                [
                    str(rec.get("suite", "")),
                    short_name(rec),
                    format_value(rec.get("predicted"), unit),
                    format_value(rec.get("measured"), unit),
                    format_gap(rec),
                    format_tolerance(rec.get("tolerance"), unit),
                    str(rec.get("verdict", "?")),
                ],
                widths,
            )
        )
    omitted = len(ordered) - max_rows
    if omitted > 0:
        lines.append(f"... {plural(omitted, 'more reconciliation')} omitted (all agree or smaller gaps); see the report")
    return lines


def finding_lines(recs: Iterable[Rec], max_lines: int = 3) -> list[str]:
    """'FINDING <id>: <name> off by +x.x% — <reason>' once per finding id (and RESOLVED lines).

    Reconciliations that share a finding id share its reason, so they share one entry; each
    entry is wrapped to MAX_WIDTH and cut after `max_lines` (the report has the full text)."""
    groups: dict[tuple[str, str], list[Rec]] = {}
    for rec in recs:
        finding = rec.get("finding")
        if finding:
            kind = "RESOLVED" if rec.get("verdict") == "resolved" else "FINDING"
            groups.setdefault((kind, str(finding.get("id", "?"))), []).append(rec)
    lines: list[str] = []
    for (kind, finding_id), members in groups.items():
        gaps = ", ".join(f"{short_name(rec)} {'now' if kind == 'RESOLVED' else 'off by'} {format_gap(rec)}" for rec in members)
        reason = " ".join(str(members[0]["finding"].get("reason") or "").split())
        tail = "; retire the finding" if kind == "RESOLVED" else ""
        text = f"{kind} {finding_id}: {gaps}{tail}" + (f" — {reason}" if reason else "")
        wrapped = textwrap.wrap(text, MAX_WIDTH, subsequent_indent="    ", break_on_hyphens=False)
        if len(wrapped) > max_lines:
            wrapped = wrapped[:max_lines]
            wrapped[-1] = _fit(wrapped[-1] + " …", MAX_WIDTH)
        lines += wrapped
    return lines


def summary_lines(ledger: Mapping[str, Any]) -> list[str]:
    """Everything the plugin prints in the terminal summary, one string per line, no colour."""
    recs: Sequence[Rec] = ledger.get("reconciliations") or []
    # The headline may list kinds apart from predictions: wrapped, never cut (it carries the counts).
    lines = textwrap.wrap(prose_summary(ledger), MAX_WIDTH, subsequent_indent="    ", break_on_hyphens=False)
    if recs:
        lines += table_lines(recs)
        lines += finding_lines(rec for rec in review_order(recs) if rec.get("verdict") in ("finding", "resolved"))
    skips: Sequence[Rec] = ledger.get("skips") or []
    if skips and recs:
        lines.append(f"{plural(len(skips), 'reconciliation test')} skipped; reasons are in the report and in -rs output")
    return [_fit(line, MAX_WIDTH) for line in lines]
