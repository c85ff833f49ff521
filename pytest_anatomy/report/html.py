"""Self-contained HTML reconciliation report: one file, CSS inlined, no external URLs.

`render_html(ledger)` builds the page from templates/report.html.j2 (Jinja2, autoescape on)
and embeds the ledger itself (gzip-compressed JSON in base64), so the page is also the data:
`pytest_anatomy.report.embedded.read_page` reads it back without the `.json` file. Plots are inline SVG
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

from pytest_anatomy.findings import BAND_SOURCES
from pytest_anatomy.ledger_counts import PREDICTION, apart_phrase, counts_by_kind, kind_of, prediction_counts
from pytest_anatomy.option_names import REPORT_OPTION
from pytest_anatomy.report import plots
from pytest_anatomy.report.embedded import (
    COMPACT_SUITES,
    PAGE_ENCODING,
    embedded_ledger,
    expand_embedded,
    is_compact,
    pack,
)
from pytest_anatomy.report.plot_common import table_rows
from pytest_anatomy.report.formatting import (
    VERDICTS,
    allowed_interval,
    band_sources_line,
    exact_value,
    format_gap,
    format_tolerance,
    format_value,
    plural,
    prose_summary,
    review_order,
    short_name,
    tick_label,
)
from pytest_anatomy.report.svg import VERDICT_COLOURS, Axis, Chart, _n
from pytest_anatomy.units import _DISPLAY

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
    """The ledger as standard JSON (non-finite numbers as null, unknown objects as str); with no indent, without the
    space after each ',' and ':' as well (the page's copy: ~170,000 of them, 0.17 MB)."""
    separators = (",", ":") if indent is None else None
    return json.dumps(_finite(ledger), indent=indent, separators=separators, ensure_ascii=False, default=str,
                      allow_nan=False)


def _reasons_by_reference(groups: list[dict[str, Any]], text_table: Sequence[str]) -> list[dict[str, Any]]:
    """Each finding group's reason as its index in the embedded ledger's text table (`reason_ref`), which the page's
    script writes into the paragraph: ~300 reasons, ~0.3 MB, would otherwise be on the page twice. A reason the
    embedded ledger does not hold (a compact suite's) stays written out (`reason_ref` None)."""
    index = {text: i for i, text in enumerate(text_table)}
    return [{**g, "reason_ref": index.get(str(g.get("reason")))} for g in groups]


def embedded_payload(ledger: Mapping[str, Any]) -> Markup:
    """The embedded ledger as the page's <script id="anatomy-ledger"> carries it (embedded.pack: gzip, base64;
    embedded.read_page reads it back)."""
    return Markup(pack(ledger_to_json(ledger, indent=None)))


def _finding(finding: Any) -> dict[str, Any] | None:
    if not finding:
        return None
    if not isinstance(finding, Mapping):
        return {"id": str(finding), "reason": "", "expected": None, "band_from": None}
    return {"id": str(finding.get("id", "?")), "reason": str(finding.get("reason") or ""),
            "expected": finding.get("expected"), "band_from": finding.get("band_from")}


def _row_view(index: int, recon: Mapping[str, Any]) -> dict[str, Any]:
    """One row's summary line; its derivation is drawn in the browser from the embedded ledger
    (entry `index`), so the page does not carry every derivation twice (as JSON and as HTML)."""
    unit = str(recon.get("unit", ""))
    verdict = str(recon.get("verdict", "?"))
    return {
        "anchor": f"rec-{index}",
        "index": index,
        "suite": str(recon.get("suite") or "other"),
        "name": str(recon.get("name", "?")),
        "label": short_name(recon),
        "params": short_name(recon)[len(str(recon.get("name", "?"))) :],
        "test_id": str(recon.get("test_id", "")),
        "verdict": verdict,
        "kind": kind_of(recon),
        "source": str(recon.get("source", "")),
        "where": " · ".join(str(x) for x in (recon.get("hardware"), recon.get("model")) if x),
        "predicted": format_value(recon.get("predicted"), unit),
        "measured": format_value(recon.get("measured"), unit),
        "gap": format_gap(recon),
        "gap_abs": format_value(recon.get("gap_abs"), unit),
        "ratio": f"×{recon['ratio']:.4f}" if isinstance(recon.get("ratio"), (int, float)) and math.isfinite(recon["ratio"]) else "n/a",
        "tolerance": format_tolerance(recon.get("tolerance") or {}, unit),
        "finding": _finding(recon.get("finding")),
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
            rows.append((str(key), exact_value(_finite(value))))
    return rows


# ---- predicted-vs-measured plots -------------------------------------------------------
def _positive(recon: Mapping[str, Any]) -> bool:
    return all(isinstance(recon.get(k), (int, float)) and math.isfinite(recon[k]) and recon[k] > 0 for k in ("predicted", "measured"))


def _scatter(unit: str, points: Sequence[Mapping[str, Any]], left_out: int, rows: Mapping[int, int]) -> Chart:
    """Predicted vs measured on log-log axes, y=x, tolerance whiskers per point. A point whose reconciliation has a
    table row (`rows`: id of the reconciliation -> its row) takes its tooltip from that row in the page's script."""
    values = [v for r in points for v in (r["predicted"], r["measured"], *(allowed_interval(r) or ())) if v > 0]

    def fmt(v: float) -> str:
        return tick_label(v, unit)

    axis_x = Axis.fit(values, log=True, label="predicted", format_tick=fmt, binary=unit == "B")
    axis_y = Axis(axis_x.lo, axis_x.hi, log=True, label="measured", format_tick=fmt, binary=unit == "B")
    tail = f" (+{left_out} ≤ 0)" if left_out else ""
    chart = Chart(axis_x, axis_y, title=f"{unit or '(no unit)'} · {plural(len(points), 'point')}{tail}",
                  aria=f"{unit or 'unitless'}: predicted versus measured, log-log", width=270, height=270, left=70)
    chart.line([(axis_x.lo, axis_x.lo), (axis_x.hi, axis_x.hi)], "#57606a", dash="5 4", width=1.2, tip="predicted = measured")
    ordered = list(reversed(review_order(points)))  # most urgent drawn last, on top
    spans = [(recon["predicted"], *interval) for recon in ordered if (interval := allowed_interval(recon)) and interval[0] > 0]
    chart.whiskers(spans)  # under every point; each point's tooltip says what its whisker allows
    for recon in ordered:
        interval = allowed_interval(recon)
        allowed = f", allowed {format_tolerance(recon.get('tolerance'), unit)}" if interval and interval[0] > 0 else ""
        tip = (f"{short_name(recon)} ({recon.get('verdict')}): predicted {format_value(recon['predicted'], unit)}, "
               f"measured {format_value(recon['measured'], unit)}, gap {format_gap(recon)}{allowed}")
        chart.point(recon["predicted"], recon["measured"], VERDICT_COLOURS.get(str(recon.get("verdict")), "#616161"), tip,
                    row=rows.get(id(recon)))
    return chart


def scatter_plots(recons: Sequence[Mapping[str, Any]], rows: Mapping[int, int] | None = None) -> list[Markup]:
    """One predicted-vs-measured plot per unit with at least two points: a lone point on a
    diagonal says nothing its table row does not say better. `rows` maps id(reconciliation) to its table row."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for recon in recons:
        groups.setdefault(str(recon.get("unit", "")), []).append(recon)
    out = []
    for i, (unit, group) in enumerate(groups.items()):
        points = [r for r in group if _positive(r)]
        if len(points) >= 2:
            out.append(_scatter(unit, points, len(group) - len(points), rows or {}).svg(f"clip-scatter-{i}"))
    return out


def _symlog(fraction: float) -> float:
    """Symmetric log of a relative gap, linear below 0.1%: shows 0.03% and 300% on one axis."""
    return math.copysign(math.log10(1 + abs(fraction) / 1e-3), fraction)


def gap_bars(recons: Sequence[Mapping[str, Any]], rows_of: Mapping[int, int] | None = None) -> Markup | None:
    """Horizontal bars of gap % per reconciliation that did not simply agree (findings, divergences, resolved
    findings), on its tolerance (grey), coloured by verdict. The agreeing ones are rows of the table: drawn too,
    every recorded card's ~1,600 made one 28,000-pixel chart, half the page's plots by size. `rows_of` maps
    id(reconciliation) to its table row: a cut label then carries data-rec and the page's script writes its tooltip
    from that row, as the scatter plots' marks do."""
    recons = [r for r in recons if r.get("verdict") != "agree"]
    if not recons:
        return None
    suites: dict[str, list[Mapping[str, Any]]] = {}  # the table's order: suites as first seen
    for recon in recons:
        suites.setdefault(str(recon.get("suite") or "other"), []).append(recon)
    rows = [recon for group in suites.values() for recon in group]
    label_w, plot_w, value_w, row_h, top = 430, 400, 80, 18, 30
    width, height = label_w + plot_w + value_w, top + row_h * len(rows) + 8
    spans: list[float] = [0.01]
    for recon in rows:
        gap, interval, pred = recon.get("gap_rel"), allowed_interval(recon), recon.get("predicted")
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
            out.append(f'<line class="grid" x1="{_n(sx(signed))}" y1="{top - 4}" x2="{_n(sx(signed))}" y2="{height - 6}"/>')
            if show:
                out.append(f'<text class="tick" x="{_n(sx(signed))}" y="{top - 8}" text-anchor="middle">'
                           f'{escape(format(signed * 100, "+g"))}%</text>')
    out.append(f'<line class="zero" x1="{centre}" y1="{top - 4}" x2="{centre}" y2="{height - 6}"/>')
    for i, recon in enumerate(rows):
        y = top + i * row_h
        label = f"{recon.get('suite') or 'other'} · {short_name(recon)}" if len(suites) > 1 else short_name(recon)
        # a cut label keeps the parameter id, and its whole test id as a tooltip; a whole one needs none (~0.1 MB)
        # (~0.13 MB of repeated test ids on 2026-12-05: a row's tooltip comes from the row where it has one)
        row = (rows_of or {}).get(id(recon)) if len(label) > 60 else None
        full = f'<title>{escape(str(recon.get("test_id", "")))}</title>' if len(label) > 60 and row is None else ""
        attr = f' data-rec="{row}"' if row is not None else ""
        label = label if len(label) <= 60 else label[:29] + "…" + label[-30:]
        out.append(f'<text class="label" x="{label_w - 8}" y="{y + 12.5}"{attr}>{escape(label)}{full}</text>')
        interval, pred, gap = allowed_interval(recon), recon.get("predicted"), recon.get("gap_rel")
        if interval and pred:
            lo, hi = sorted((interval[0] / pred - 1, interval[1] / pred - 1))
            out.append(f'<rect class="band" x="{_n(sx(lo))}" y="{y + 2}" width="{_n(max(sx(hi) - sx(lo), 1))}" height="{row_h - 4}"/>')
        if isinstance(gap, (int, float)) and math.isfinite(gap):
            x = sx(gap)
            colour = VERDICT_COLOURS.get(str(recon.get("verdict")), "#616161")
            # no tooltip: the gap is the row's value text, the verdict its colour (the legend above the plots)
            out.append(f'<rect x="{_n(min(x, centre))}" y="{y + 5}" width="{_n(max(abs(x - centre), 1.5))}" '
                       f'height="{row_h - 10}" fill="{colour}"/>')
        # right-aligned by style.css (svg.bars .label / .value), not an attribute on each of ~1,600 texts (~27 KB)
        out.append(f'<text class="value" x="{width - 4}" y="{y + 12.5}">{escape(format_gap(recon))}</text>')
    out.append("</svg>")
    return Markup("\n".join(out))


def build_view(ledger: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template needs, pre-formatted; the template only lays it out."""
    recons: Sequence[Mapping[str, Any]] = ledger.get("reconciliations") or []
    rows = [_row_view(i, recon) for i, recon in enumerate(recons)]
    embedded_index = 0  # a row's entry in the embedded ledger, which leaves the compact suites out
    for row, recon in zip(rows, recons):
        if not is_compact(recon):
            row["index"], embedded_index = embedded_index, embedded_index + 1
    suites: dict[str, list[dict[str, Any]]] = {}
    compact: dict[str, list[dict[str, Any]]] = {}
    of_suite: dict[str, list[Mapping[str, Any]]] = {}
    for row, recon in zip(rows, recons):
        (compact if is_compact(recon) else suites).setdefault(row["suite"], []).append(row)
        of_suite.setdefault(row["suite"], []).append(recon)
    # The plots show predictions only: an identity, a setting, a fit point or a replay on a predicted-vs-measured
    # diagonal looks like evidence for the theory and is none (issue 10); the table lists them, marked by kind.
    detailed = [recon for recon in recons if not is_compact(recon) and kind_of(recon) == PREDICTION]
    # The headline cards count predictions only; identities, settings, fit points and replays carry
    # little information about the theory and are one card apart (ledger_counts).
    counts = prediction_counts(recons)
    apart = sum(1 for recon in recons if kind_of(recon) != PREDICTION)
    tests = ledger.get("tests") or {}
    embedded = embedded_ledger(ledger)
    rows_of = {id(recon): i for i, recon in enumerate(recons)}  # a plotted reconciliation's table row (its tooltip)
    with table_rows(rows_of):
        domain = plots.domain_plots(detailed)
    return {
        "created": str(ledger.get("created") or ""),
        "version": str(ledger.get("version") or ""),
        "schema": str(ledger.get("schema") or "pytest-anatomy/report/v1"),
        "summary": prose_summary(ledger),
        "counts": [(verdict, counts[verdict]) for verdict in ("agree", "finding", "resolved", "diverge")]
        + [(v, n) for v, n in counts.items() if v not in VERDICTS],
        "apart": apart,
        "recorded": sum(1 for recon in recons if recon.get("source") == "recorded"),
        "live": sum(1 for recon in recons if recon.get("source") == "live"),
        # pytest's outcomes as it counts them, the finding outcome spelled as a count ('3 findings')
        "tests": [plural(v, str(k)) if k == "finding" and isinstance(v, int) else f"{v} {k}" for k, v in tests.items()],
        "environment": _environment_view(ledger.get("environment") or {}),
        "suites": [{"name": name, "rows": group, "summary": suite_summary(of_suite[name])}
                   for name, group in suites.items()],
        "compact_suites": [{"name": name, "count": len(group), "summary": suite_summary(of_suite[name])}
                           for name, group in compact.items()],
        "findings": _reasons_by_reference(_group_findings(rows), embedded["text_table"]),
        "band_sources": BAND_SOURCES,
        "skips": [(str(s.get("test_id", "")), str(s.get("reason", ""))) for s in ledger.get("skips") or []],
        "skips_by_reason": _skips_by_reason(ledger.get("skips") or []),
        "failures": _failures_view(ledger.get("failures") or []),
        "overview": overview(recons),
        "band_sources_line": band_sources_line(recons),
        "domain": domain,
        "scatter": scatter_plots(detailed, rows_of),
        "bars": gap_bars(detailed, rows_of),
        "bars_agree": sum(1 for r in detailed if r.get("verdict") == "agree"),
        "plural": plural,
        "ledger_payload": embedded_payload(embedded),
        "ledger_encoding": PAGE_ENCODING,
        "units_json": Markup(json.dumps({unit: [[d, shown] for d, shown in scales] for unit, scales in _DISPLAY.items()})),
        "verdicts": VERDICTS,
        "validation": _validation_view(recons),
    }


def _skips_by_reason(skips: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """Skipped tests grouped by their reason, reasons in first-seen order: a CPU run skips ~490 tests for ~100
    reasons (one, no NVRTC, ~190 times), so a row per reason reads better and weighs ~50 KB less (2026-12-05)."""
    groups: dict[str, list[str]] = {}
    for skip in skips:
        groups.setdefault(str(skip.get("reason", "")), []).append(str(skip.get("test_id", "")))
    return list(groups.items())


def suite_summary(recons: Sequence[Mapping[str, Any]]) -> str:
    """A suite's heading: '412 predictions: 400 agree, 12 finding · apart: 33 settings, 4 identities (1 diverge)'.
    The predictions' verdicts, as the page's headline counts them; the other kinds apart (ledger_counts)."""
    by_kind = counts_by_kind(recons)
    predictions = by_kind.get(PREDICTION) or {}
    verdicts = ", ".join(f"{n} {v}" for v, n in predictions.items() if n)
    head = plural(sum(predictions.values()), "prediction") + (f": {verdicts}" if verdicts else "")
    apart = apart_phrase(by_kind)
    return f"{head} · apart: {apart}" if apart else head


def overview(recons: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Verdict counts of the predictions per suite and hardware, the page's first table: where the
    theory holds and where not; the other kinds' count beside them."""
    cells: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for recon in recons:
        cells.setdefault((str(recon.get("suite") or "other"), str(recon.get("hardware") or "unspecified")), []).append(recon)
    rows = []
    for (suite, hardware), group in sorted(cells.items()):
        counts = prediction_counts(group)
        apart = sum(1 for recon in group if kind_of(recon) != PREDICTION)
        rows.append({"suite": suite, "hardware": hardware, "total": len(group) - apart,
                     "counts": [(v, counts[v]) for v in ("agree", "finding", "resolved", "diverge")],
                     "apart": apart, "compact": suite in COMPACT_SUITES})
    return rows


def _validation_view(recons: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The validation table (report/validation.py), one dict of display strings per row."""
    from pytest_anatomy.report import validation

    return [{"source": r.source, "gpu": r.gpu, "engine": r.engine, "metric": r.metric, "count": str(r.count),
             "median": validation._pct(r.median_abs_error), "p90": validation._pct(r.p90_abs_error),
             "above": f"{r.measured_above * 100:.0f}%", "outcomes": f"{r.agree} / {r.finding} / {r.unexplained} / {r.diverge}"}
            for r in validation.rows(recons)]


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


__all__ = ["build_view", "embedded_payload", "expand_embedded", "gap_bars", "ledger_to_json", "render_html", "scatter_plots",
           "suite_summary", "write_report"]


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
                                        "verdicts": [], "rows": [], "count": 0, "band_from": []})
        group["count"] += 1
        source = row["finding"].get("band_from")
        if row["finding"].get("expected") and source not in group["band_from"]:
            group["band_from"].append(source)  # None: a band whose source the mark does not state
        if row["suite"] not in COMPACT_SUITES:  # a compact suite's rows are in the JSON ledger only
            group["rows"].append(row)
        if row["verdict"] not in group["verdicts"]:
            group["verdicts"].append(row["verdict"])
    # Divergent (drifted) findings first, then resolved, then plain findings.
    rank = {"diverge": 0, "resolved": 1, "finding": 2}
    return sorted(groups.values(), key=lambda g: min(rank[v] for v in g["verdicts"]))
