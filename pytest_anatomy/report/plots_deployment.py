"""The tuning ladder per card, model and workload: each rung's measured gain over its parent beside
the gain predicted before the run (tests_deployment/test_ladder_replay.py's reconciliations, named
`<workload>.<rung>.<metric>.gain`). Drawn only from those reconciliations: absent until the ladder
has been measured."""

from __future__ import annotations

import re
from collections.abc import Sequence

from markupsafe import Markup

from pytest_anatomy.report.formatting import format_value
from pytest_anatomy.report.plot_common import MEASURED, PREDICTION_SHAPES, Recon, _colour, _num, _tip, _verdict_colour_keys
from pytest_anatomy.report.svg import Axis, Chart

GAIN_NAME = re.compile(r"^(?P<workload>[a-z0-9_-]+)\.(?P<rung>[a-z0-9_]+)\.(?P<metric>[a-z0-9_]+)\.gain$")
# the ladder's order (theory/deployment.ladder); a rung not listed goes last
RUNGS = ("limits", "prefix_cache", "fp8_weights", "fp8_kv", "eager", "ngram")


def tuning_ladders(recons: Sequence[Recon]) -> list[Markup]:
    """One chart per (card, model, workload): rungs across, gain (metric / parent's metric) up on a log
    axis, 1 dashed; per metric a measured dot and a predicted mark (one shape per metric) in its verdict's colour."""
    groups: dict[tuple[str, str, str], dict[tuple[str, str], Recon]] = {}
    for recon in recons:
        match = GAIN_NAME.match(str(recon.get("name", "")))
        if recon.get("suite") != "deployment" or not match:
            continue
        if not (_num(recon.get("predicted")) or 0) > 0 or not (_num(recon.get("measured")) or 0) > 0:
            continue
        key = (str(recon.get("hardware")), str(recon.get("model") or "?"), match["workload"])
        groups.setdefault(key, {})[(match["rung"], match["metric"])] = recon
    out = []
    for n, ((hardware, model, workload), cells) in enumerate(sorted(groups.items())):
        rungs = sorted({r for r, _ in cells}, key=lambda r: (RUNGS.index(r) if r in RUNGS else len(RUNGS), r))
        metrics = sorted({m for _, m in cells})
        values = [float(v) for recon in cells.values() for v in (recon["predicted"], recon["measured"])] + [1.0]
        chart = Chart(Axis.categorical(rungs, label="rung"), Axis.fit(values, log=True, label="gain over the parent rung"),
                      title=f"tuning ladder on {hardware} · {model} · {workload}",
                      aria=f"tuning ladder of {model} on {hardware}, workload {workload}: each rung's measured gain "
                           "over its parent beside the gain predicted before the run",
                      width=max(300, 60 * len(rungs)))
        chart.hline(1.0, "#8c959f", "no change")
        for x, rung in enumerate(rungs):
            for i, metric in enumerate(metrics):
                cell = cells.get((rung, metric))
                if cell is None:
                    continue
                offset = (i - (len(metrics) - 1) / 2) * 0.13
                measured = float(cell["measured"])
                chart.point(x + offset, measured, MEASURED, f"{rung} {metric}: measured x{format_value(measured, '')}",
                            r=3.0)
                chart.point(x + offset, float(cell["predicted"]), _colour(cell), _tip(cell, f"{rung} {metric} predicted"),
                            shape=PREDICTION_SHAPES[i % len(PREDICTION_SHAPES)], r=3.6)
        for i, metric in enumerate(metrics):
            chart.key(PREDICTION_SHAPES[i % len(PREDICTION_SHAPES)], "#8c959f", metric)
        chart.key("dot", MEASURED, "measured")
        _verdict_colour_keys(chart, list(cells.values()))
        out.append(chart.svg(f"clip-tuning-{n}"))
    return out
