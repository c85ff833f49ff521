"""The quantization suite's figure: quality against bits per weight, the noise model's predicted curve
through the file types and each measured KLD as a point (issue 13's report). Drawn from the `kld[...]`
reconciliations whose prediction names the file's bits per weight; absent without them."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from pytest_anatomy.report.plot_common import Rec, _fmt, _inputs, _num, _outline, _tip, _verdict_keys
from pytest_anatomy.report.svg import PALETTE, Axis, Chart


def _points(recs: Sequence[Rec]) -> dict[str, list[tuple[float, Rec]]]:
    """{hardware: [(bits per weight, reconciliation)]} of the quant suite's KLD reconciliations."""
    out: dict[str, list[tuple[float, Rec]]] = {}
    for rec in recs:
        bpw = _num(_inputs(rec).get("bits_per_weight"))
        if (rec.get("suite") == "quant" and str(rec.get("name", "")).startswith("kld[") and bpw
                and _num(rec.get("measured")) and _num(rec.get("predicted"))):
            out.setdefault(str(rec.get("hardware")), []).append((bpw, rec))
    return out


def quality_vs_bpw(recs: Sequence[Rec]) -> list[Markup]:
    charts = []
    for n, (hardware, pts) in enumerate(sorted(_points(recs).items())):
        if len(pts) < 2:
            continue
        pts = sorted(pts, key=lambda p: p[0])
        ys = [v for _, r in pts for v in (r["predicted"], r["measured"]) if v > 0]
        chart = Chart(Axis.fit([x for x, _ in pts], label="bits per weight", format_tick=_fmt("")),
                      Axis.fit(ys, log=True, label="KLD vs reference (nat)", format_tick=_fmt("")),
                      title=f"quality vs bits per weight ({hardware})", width=400, height=250,
                      aria=f"KL divergence against bits per weight on {hardware}: the noise model's predicted curve "
                           "through the file types, measured points")
        colour = PALETTE[0]
        chart.line([(x, r["predicted"]) for x, r in pts], colour, tip="predicted: c x S")
        for x, rec in pts:
            chart.point(x, rec["measured"], colour, _tip(rec), outline=_outline(rec))
        chart.key("line", colour, "predicted (c x exact noise S), dots measured")
        _verdict_keys(chart, [r for _, r in pts])
        charts.append(chart.svg(f"clip-quant-bpw-{n}"))
    return charts
