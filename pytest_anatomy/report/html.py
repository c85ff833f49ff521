"""Self-contained HTML reconciliation report: one file, CSS inlined, no external URLs.

`render_html(ledger)` builds the page from templates/report.html.j2 (Jinja2, autoescape on)
and embeds the ledger itself as JSON, so the page is also the data: a dashboard or a later
`pytest-anatomy compare` can read it back without the `.json` file. Plots are inline SVG
drawn here (no matplotlib, no JS libraries) so a CPU-only CI box can build the report."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from pytest_anatomy.option_names import REPORT_OPTION
from pytest_anatomy.report.terminal import (
    SCALED_UNITS,
    VERDICTS,
    allowed_interval,
    format_gap,
    format_tolerance,
    format_value,
    plural,
    prose_summary,
    review_order,
    short_name,
    verdict_counts,
)
from pytest_anatomy.units import format_quantity

_TEMPLATES = Path(__file__).parent / "templates"
_PROVENANCE_ORDER = ("recording", "gpu", "driver", "engine", "engine_version", "date", "source", "command")


def _finite(value: Any) -> Any:
    """JSON-safe copy: NaN/inf become null (JSON has no spelling for them; JSON.parse rejects NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def ledger_to_json(ledger: Mapping[str, Any], indent: int | None = 2) -> str:
    """The ledger as standard JSON (non-finite numbers as null, unknown objects as str)."""
    return json.dumps(_finite(ledger), indent=indent, ensure_ascii=False, default=str, allow_nan=False)


def embedded_json(ledger: Mapping[str, Any]) -> Markup:
    """Ledger JSON safe inside <script type="application/json">.

    '<', '>' and '&' can only occur inside JSON strings, where \\u003c etc. mean the same
    characters; escaping all of them (not just '</') also defuses '<!--' and '<script'."""
    text = ledger_to_json(ledger, indent=None)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def _exact(value: Any) -> str:
    """An input as typed, with thousands separators, so the arithmetic can be redone by hand."""
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
        return json.dumps(_finite(value), default=str)
    return str(value)


def _pairs(mapping: Mapping[str, Any] | None, order: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(key, text) rows with the well-known keys first; nested mappings are flattened a.b."""
    if not mapping:
        return []
    keys = [k for k in order if k in mapping] + [k for k in mapping if k not in order]
    rows: list[tuple[str, str]] = []
    for key in keys:
        value = mapping[key]
        if isinstance(value, Mapping):
            rows += [(f"{key}.{sub}", text) for sub, text in _pairs(value)]
        elif value is not None and value != "":
            rows.append((str(key), _exact(value)))
    return rows


def _finding(finding: Any) -> dict[str, str] | None:
    if not finding:
        return None
    if not isinstance(finding, Mapping):
        return {"id": str(finding), "reason": ""}
    return {"id": str(finding.get("id", "?")), "reason": str(finding.get("reason") or "")}


def _row_view(index: int, rec: Mapping[str, Any]) -> dict[str, Any]:
    unit = str(rec.get("unit", ""))
    prediction = rec.get("prediction") or {}
    tolerance = rec.get("tolerance") or {}
    ratio = rec.get("ratio")
    provenance = dict(rec.get("provenance") or {})
    if provenance.get("engine") and provenance.get("engine_version"):
        provenance["engine"] = f"{provenance['engine']} {provenance.pop('engine_version')}"
    verdict = str(rec.get("verdict", "?"))
    return {
        "anchor": f"rec-{index}",
        "suite": str(rec.get("suite") or "other"),
        "name": str(rec.get("name", "?")),
        "label": short_name(rec),
        "params": short_name(rec)[len(str(rec.get("name", "?"))) :],
        "test_id": str(rec.get("test_id", "")),
        "verdict": verdict,
        "source": str(rec.get("source", "")),
        "where": " · ".join(str(x) for x in (rec.get("hardware"), rec.get("model")) if x),
        "unit": unit,
        "predicted": format_value(rec.get("predicted"), unit),
        "measured": format_value(rec.get("measured"), unit),
        "predicted_exact": _exact(rec.get("predicted")),
        "measured_exact": _exact(rec.get("measured")),
        "gap": format_gap(rec),
        "gap_abs": format_value(rec.get("gap_abs"), unit),
        "ratio": f"×{ratio:.4f}" if isinstance(ratio, (int, float)) and math.isfinite(ratio) else "n/a",
        "tolerance": format_tolerance(tolerance, unit),
        "why": str(tolerance.get("why") or ""),
        "formula": str(prediction.get("formula") or ""),
        "inputs": _pairs(prediction.get("inputs")),
        "terms": [
            {
                "name": str(term.get("name", "")),
                "value": format_value(term.get("value"), str(term.get("unit", ""))),
                "exact": _exact(term.get("value")),
                "note": str(term.get("note") or ""),
            }
            for term in prediction.get("terms") or []
        ],
        "notes": [str(note) for note in prediction.get("notes") or []],
        "provenance": _pairs(provenance, _PROVENANCE_ORDER),
        "finding": _finding(rec.get("finding")),
        "search": " ".join(str(rec.get(k, "")) for k in ("suite", "name", "test_id", "verdict", "hardware", "model")).lower(),
    }


def _environment_view(environment: Mapping[str, Any]) -> dict[str, Any]:
    env = dict(environment)
    packages = env.pop("packages", None) or {}
    live_gpu = env.pop("live_gpu", None)
    return {
        "rows": _pairs(env, ("python", "platform", "pytest", "git_commit", "hardware_option", "source_option", "command")),
        "packages": [(str(name), str(version) if version else "not installed") for name, version in packages.items()],
        "live_gpu": _pairs(live_gpu) if isinstance(live_gpu, Mapping) else [],
    }


# ---- inline SVG plots ------------------------------------------------------------------
# Colours match style.css (--agree etc.); SVG attributes cannot read CSS variables portably
# when the page is saved as a standalone .svg, so they are repeated here.
VERDICT_COLOURS = {"agree": "#2e7d32", "finding": "#b26a00", "resolved": "#1565c0", "diverge": "#c62828"}


def _num(value: float) -> str:
    return f"{value:.1f}"


def _tick_label(value: float, unit: str) -> str:
    if unit in SCALED_UNITS:
        return format_quantity(value, unit, digits=3)
    numerator, slash, denominator = unit.partition("/")
    if slash and numerator in SCALED_UNITS:
        return f"{format_quantity(value, numerator, digits=3)}/{denominator}"
    for divisor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= 10 * divisor:
            return f"{value / divisor:g}{suffix}"
    return f"{value:g}"


def _log_ticks(lo: float, hi: float, unit: str) -> list[float]:
    """Round ticks inside [lo, hi]: powers of two for bytes (GiB reads better), 1-2-5 otherwise."""
    if unit == "B":
        k0, k1 = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
        step = max(1, math.ceil((k1 - k0) / 6))
        ticks = [2.0**k for k in range(k0, k1 + 1, step)]
    else:
        k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        decades = math.log10(hi / lo)
        mults = (1,) if decades > 3 else (1, 2, 5) if decades > 1 else (1, 1.5, 2, 3, 5, 7)
        ticks = [m * 10.0**k for k in range(k0, k1 + 1) for m in mults]
    return [t for t in ticks if lo <= t <= hi]


def _scatter(unit: str, recs: Sequence[Mapping[str, Any]], index: int) -> Markup:
    """Predicted vs measured on log-log axes, y=x, tolerance whiskers (and band when shared)."""
    points = [r for r in recs if all(isinstance(r.get(k), (int, float)) and r[k] > 0 for k in ("predicted", "measured"))]
    left_out = len(recs) - len(points)
    size, ml, mt, mb = 270, 96, 30, 44
    width, height = ml + size + 14, mt + size + mb
    values = [v for r in points for v in (r["predicted"], r["measured"], *(allowed_interval(r) or ())) if v > 0]
    llo, lhi = math.log10(min(values)), math.log10(max(values))
    pad = max(0.08 * (lhi - llo), 0.04)
    llo, lhi = llo - pad, lhi + pad
    if lhi - llo < 0.3:  # a single point, or a cluster: keep the diagonal visibly a line
        mid = (llo + lhi) / 2
        llo, lhi = mid - 0.15, mid + 0.15

    def sx(v: float) -> float:
        return ml + (math.log10(max(v, 10 ** (llo - 3))) - llo) / (lhi - llo) * size

    def sy(v: float) -> float:
        return mt + size - (math.log10(max(v, 10 ** (llo - 3))) - llo) / (lhi - llo) * size

    x0, x1 = 10**llo, 10**lhi
    out = [
        (f'<svg class="plot" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
         f'aria-label="{escape(unit)}: predicted versus measured, log-log">'),
        f'<text class="plot-title" x="{ml}" y="16">{escape(unit or "(no unit)")} · {escape(plural(len(points), "point"))}'
        + (f" ({left_out} not positive, not shown)" if left_out else "") + "</text>",
        f'<clipPath id="clip-{index}"><rect x="{ml}" y="{mt}" width="{size}" height="{size}"/></clipPath>',
        f'<rect class="frame" x="{ml}" y="{mt}" width="{size}" height="{size}"/>',
    ]
    for tick in _log_ticks(x0, x1, unit):
        label = escape(_tick_label(tick, unit))
        out.append(f'<line class="grid" x1="{_num(sx(tick))}" y1="{mt}" x2="{_num(sx(tick))}" y2="{mt + size}"/>')
        out.append(f'<line class="grid" x1="{ml}" y1="{_num(sy(tick))}" x2="{ml + size}" y2="{_num(sy(tick))}"/>')
        out.append(f'<text class="tick" x="{_num(sx(tick))}" y="{mt + size + 14}" text-anchor="middle">{label}</text>')
        out.append(f'<text class="tick" x="{ml - 5}" y="{_num(sy(tick) + 3.5)}" text-anchor="end">{label}</text>')
    bands = {(r["tolerance"].get("rel") or 0.0, tuple(r["tolerance"].get("ratio") or ()))
             for r in points if r.get("tolerance") and not r["tolerance"].get("abs")}
    shared = len(bands) == 1 and len(points) == sum(1 for r in points if r.get("tolerance") and not r["tolerance"].get("abs"))
    if shared:
        rel, ratio = next(iter(bands))
        f_lo, f_hi = min(1 - rel, *(ratio[:1] or (1,))), max(1 + rel, *(ratio[1:] or (1,)))
        corners = [(x0, f_hi * x0), (x1, f_hi * x1), (x1, f_lo * x1), (x0, f_lo * x0)]
        path = " ".join(f"{_num(sx(x))},{_num(sy(y))}" for x, y in corners)
        out.append(f'<polygon class="band" clip-path="url(#clip-{index})" points="{path}"/>')
    out.append(f'<line class="diagonal" clip-path="url(#clip-{index})" x1="{_num(sx(x0))}" y1="{_num(sy(x0))}" '
               f'x2="{_num(sx(x1))}" y2="{_num(sy(x1))}"/>')
    for rec in reversed(review_order(points)):  # most urgent drawn last, on top
        x, y = sx(rec["predicted"]), sy(rec["measured"])
        interval = allowed_interval(rec)
        if interval:
            top, bottom = sy(interval[1]), sy(interval[0])
            out.append(f'<path class="whisker" clip-path="url(#clip-{index})" d="M{_num(x)},{_num(top)}V{_num(bottom)}'
                       f'M{_num(x - 3)},{_num(top)}h6M{_num(x - 3)},{_num(bottom)}h6"/>')
        colour = VERDICT_COLOURS.get(str(rec.get("verdict")), "#616161")
        tip = (f"{short_name(rec)} ({rec.get('verdict')}): predicted {format_value(rec['predicted'], unit)}, "
               f"measured {format_value(rec['measured'], unit)}, gap {format_gap(rec)}")
        out.append(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="4.5" fill="{colour}"><title>{escape(tip)}</title></circle>')
    out.append(f'<text class="axis" x="{ml + size / 2}" y="{height - 8}" text-anchor="middle">predicted</text>')
    out.append(f'<text class="axis" transform="translate(14 {mt + size / 2}) rotate(-90)" text-anchor="middle">measured</text>')
    out.append("</svg>")
    return Markup("\n".join(out))


def scatter_plots(recs: Sequence[Mapping[str, Any]]) -> list[Markup]:
    """One predicted-vs-measured plot per unit (quantities in different units share no axis)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for rec in recs:
        groups.setdefault(str(rec.get("unit", "")), []).append(rec)
    plottable = [(u, g) for u, g in groups.items() if any(
        isinstance(r.get("predicted"), (int, float)) and isinstance(r.get("measured"), (int, float))
        and r["predicted"] > 0 and r["measured"] > 0 for r in g)]
    return [_scatter(unit, group, i) for i, (unit, group) in enumerate(plottable)]


def _symlog(fraction: float) -> float:
    """Symmetric log of a relative gap, linear below 0.1%: shows 0.03% and 300% on one axis."""
    return math.copysign(math.log10(1 + abs(fraction) / 1e-3), fraction)


def gap_bars(recs: Sequence[Mapping[str, Any]]) -> Markup | None:
    """Horizontal bars of gap % per reconciliation, on its tolerance (grey), coloured by verdict."""
    if not recs:
        return None
    suites: dict[str, list[Mapping[str, Any]]] = {}  # the table's order: suites as first seen
    for rec in recs:
        suites.setdefault(str(rec.get("suite") or "other"), []).append(rec)
    rows = [rec for group in suites.values() for rec in group]
    label_w, plot_w, value_w, row_h, top = 430, 400, 80, 18, 30
    width, height = label_w + plot_w + value_w, top + row_h * len(rows) + 8
    spans: list[float] = [0.01]
    for rec in rows:
        gap, interval, pred = rec.get("gap_rel"), allowed_interval(rec), rec.get("predicted")
        if isinstance(gap, (int, float)) and math.isfinite(gap):
            spans.append(abs(gap))
        if interval and pred:
            spans += [abs(interval[0] / pred - 1), abs(interval[1] / pred - 1)]
    limit = _symlog(max(spans)) * 1.05
    centre, half = label_w + plot_w / 2, plot_w / 2 - 6

    def sx(fraction: float) -> float:
        return centre + max(-1.0, min(1.0, _symlog(fraction) / limit)) * half

    out = [(f'<svg class="plot bars" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            'aria-label="gap per reconciliation, symmetric log scale">')]
    labelled = centre + 8.0  # a tick label needs ~40 px; skip labels (not grid lines) that would collide
    out.append(f'<text class="tick" x="{centre}" y="{top - 8}" text-anchor="middle">0</text>')
    for tick in (0.001, 0.01, 0.1, 1.0, 10.0, 100.0):
        if _symlog(tick) > limit:
            break
        show = sx(tick) - labelled >= 40
        labelled = sx(tick) if show else labelled
        for signed in (-tick, tick):
            out.append(f'<line class="grid" x1="{_num(sx(signed))}" y1="{top - 4}" x2="{_num(sx(signed))}" y2="{height - 6}"/>')
            if show:
                out.append(f'<text class="tick" x="{_num(sx(signed))}" y="{top - 8}" text-anchor="middle">'
                           f'{escape(format(signed * 100, "+g"))}%</text>')
    out.append(f'<line class="zero" x1="{centre}" y1="{top - 4}" x2="{centre}" y2="{height - 6}"/>')
    for i, rec in enumerate(rows):
        y = top + i * row_h
        label = f"{rec.get('suite') or 'other'} · {short_name(rec)}" if len(suites) > 1 else short_name(rec)
        label = label if len(label) <= 60 else label[:29] + "…" + label[-30:]  # keep the parameter id
        out.append(f'<text class="label" x="{label_w - 8}" y="{y + 12.5}" text-anchor="end">{escape(label)}'
                   f'<title>{escape(str(rec.get("test_id", "")))}</title></text>')
        interval, pred, gap = allowed_interval(rec), rec.get("predicted"), rec.get("gap_rel")
        if interval and pred:
            lo, hi = sorted((interval[0] / pred - 1, interval[1] / pred - 1))
            out.append(f'<rect class="band" x="{_num(sx(lo))}" y="{y + 2}" width="{_num(max(sx(hi) - sx(lo), 1))}" height="{row_h - 4}"/>')
        if isinstance(gap, (int, float)) and math.isfinite(gap):
            x = sx(gap)
            colour = VERDICT_COLOURS.get(str(rec.get("verdict")), "#616161")
            out.append(f'<rect x="{_num(min(x, centre))}" y="{y + 5}" width="{_num(max(abs(x - centre), 1.5))}" '
                       f'height="{row_h - 10}" fill="{colour}"><title>{escape(rec.get("verdict", ""))}: '
                       f'{escape(format_gap(rec))}</title></rect>')
        out.append(f'<text class="value" x="{width - 4}" y="{y + 12.5}" text-anchor="end">{escape(format_gap(rec))}</text>')
    out.append("</svg>")
    return Markup("\n".join(out))


# Suites shown in the page only through the validation table and their findings: each has
# thousands of reconciliations (other people's published runs), whose derivations and plot rows
# would multiply the page's size. The JSON ledger beside the page keeps every one of them.
COMPACT_SUITES = frozenset({"validation"})


def _compact(rec: Mapping[str, Any]) -> bool:
    return str(rec.get("suite") or "") in COMPACT_SUITES


def _embedded_ledger(ledger: Mapping[str, Any]) -> dict[str, Any]:
    """The ledger embedded in the page: compact suites' reconciliations left out and counted."""
    recs = ledger.get("reconciliations") or []
    left_out = sum(1 for rec in recs if _compact(rec))
    if not left_out:
        return dict(ledger)
    return {**ledger, "reconciliations": [rec for rec in recs if not _compact(rec)],
            "reconciliations_left_out": {"count": left_out, "suites": sorted(COMPACT_SUITES),
                                         "where": "the JSON ledger written beside this page"}}


def build_view(ledger: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template needs, pre-formatted; the template only lays it out."""
    recs: Sequence[Mapping[str, Any]] = ledger.get("reconciliations") or []
    rows = [_row_view(i, rec) for i, rec in enumerate(recs)]
    suites: dict[str, list[dict[str, Any]]] = {}
    compact: dict[str, list[dict[str, Any]]] = {}
    for row, rec in zip(rows, recs):
        (compact if _compact(rec) else suites).setdefault(row["suite"], []).append(row)
    detailed = [rec for rec in recs if not _compact(rec)]
    counts = verdict_counts(recs)
    tests = ledger.get("tests") or {}
    return {
        "created": str(ledger.get("created") or ""),
        "version": str(ledger.get("version") or ""),
        "schema": str(ledger.get("schema") or "pytest-anatomy/report/v1"),
        "summary": prose_summary(ledger),
        "counts": [(verdict, counts[verdict]) for verdict in ("agree", "finding", "resolved", "diverge")]
        + [(v, n) for v, n in counts.items() if v not in VERDICTS],
        "recorded": sum(1 for rec in recs if rec.get("source") == "recorded"),
        "live": sum(1 for rec in recs if rec.get("source") == "live"),
        "tests": [(str(k), v) for k, v in tests.items()],
        "environment": _environment_view(ledger.get("environment") or {}),
        "suites": [
            {"name": name, "rows": group, "summary": ", ".join(f"{n} {v}" for v, n in verdict_counts(
                [{"verdict": r["verdict"]} for r in group]).items() if n)}
            for name, group in suites.items()
        ],
        "compact_suites": [
            {"name": name, "count": len(group), "summary": ", ".join(f"{n} {v}" for v, n in verdict_counts(
                [{"verdict": r["verdict"]} for r in group]).items() if n)}
            for name, group in compact.items()
        ],
        "findings": _group_findings(rows),
        "skips": [(str(s.get("test_id", "")), str(s.get("reason", ""))) for s in ledger.get("skips") or []],
        "failures": _failures_view(ledger.get("failures") or []),
        "scatter": scatter_plots(detailed),
        "bars": gap_bars(detailed),
        "plural": plural,
        "ledger_json": embedded_json(_embedded_ledger(ledger)),
        "verdicts": VERDICTS,
        "validation": _validation_view(recs),
    }


def _validation_view(recs: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The validation table (report/validation.py), one dict of display strings per row."""
    from pytest_anatomy.report import validation

    return [{"source": r.source, "gpu": r.gpu, "engine": r.engine, "metric": r.metric, "count": str(r.count),
             "median": validation._pct(r.median_abs_error), "p90": validation._pct(r.p90_abs_error),
             "above": f"{r.measured_above * 100:.0f}%", "outcomes": f"{r.agree} / {r.finding} / {r.unexplained} / {r.diverge}"}
            for r in validation.rows(recs)]


def render_html(ledger: Mapping[str, Any]) -> str:
    """The whole report page as one string."""
    import jinja2  # lazy: the plugin module imports this file, and most runs never render

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=True,  # every string in the ledger comes from test ids, configs and logs
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(**build_view(ledger))


def _atomic_write(path: Path, text: str) -> None:
    """Write beside the target, then os.replace: a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        umask = os.umask(0)  # mkstemp creates 0600; a report is meant to be shared (0644 under umask 022)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_report(ledger: Mapping[str, Any], html_path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write `<html_path>` and `<stem>.json` beside it; returns both paths (absolute)."""
    html_file = Path(html_path).expanduser().resolve()
    if html_file.is_dir():
        raise IsADirectoryError(
            f"{REPORT_OPTION}={str(html_path)!r} is a directory; give a file name such as "
            f"{str(html_file / 'anatomy-report.html')!r}"
        )
    json_file = html_file.with_suffix(".json")
    if json_file == html_file:
        json_file = html_file.with_name(html_file.name + ".json")
    page = render_html(ledger)  # render before writing anything: a template error leaves no half pair
    _atomic_write(json_file, ledger_to_json(ledger) + "\n")
    _atomic_write(html_file, page)
    return html_file, json_file


__all__ = ["build_view", "embedded_json", "gap_bars", "ledger_to_json", "render_html", "scatter_plots", "write_report"]


def _failures_view(failures: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Every failed or errored test: where it failed, pytest's message and its traceback text."""
    views = []
    for failure in failures:
        message = str(failure.get("message") or "")
        views.append({
            "test_id": str(failure.get("test_id", "")),
            "when": str(failure.get("when", "")),
            "outcome": str(failure.get("outcome", "failed")),
            "headline": (message.strip().splitlines() or [""])[0],
            "message": message,
            "longrepr": str(failure.get("longrepr") or ""),
        })
    return views


def _group_findings(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One card per finding id: the explanation once, then every reconciliation it covers."""
    groups: dict[str, dict[str, Any]] = {}
    for row in rows:
        if not row["finding"] or row["verdict"] not in ("finding", "resolved", "diverge"):
            continue
        fid = row["finding"]["id"]
        group = groups.setdefault(fid, {"id": fid, "reason": row["finding"]["reason"], "suite": row["suite"],
                                        "verdicts": [], "rows": [], "count": 0})
        group["count"] += 1
        if row["suite"] not in COMPACT_SUITES:  # a compact suite's rows are in the JSON ledger only
            group["rows"].append(row)
        if row["verdict"] not in group["verdicts"]:
            group["verdicts"].append(row["verdict"])
    # Divergent (drifted) findings first, then resolved, then plain findings.
    rank = {"diverge": 0, "resolved": 1, "finding": 2}
    return sorted(groups.values(), key=lambda g: min(rank[v] for v in g["verdicts"]))
