"""The tuning ladder per card, model and workload: each rung's measured gain over its parent beside
the gain predicted before the run (tests_deployment/test_ladder_replay.py's reconciliations, named
`<workload>.<rung>.<metric>.gain`). Drawn only from those reconciliations: absent until the ladder
has been measured."""

from __future__ import annotations

import re
from collections.abc import Sequence

from markupsafe import Markup

from pytest_anatomy.report.formatting import format_value
from pytest_anatomy.report.plot_common import (MEASURED, PREDICTION_SHAPES, Recon, _colour, _num, _outline, mark,
                                                _verdict_colour_keys)
from pytest_anatomy.report.svg import Axis, Chart

GAIN_NAME = re.compile(r"^(?P<workload>[a-z0-9_-]+)\.(?P<rung>[a-z0-9_]+)\.(?P<metric>[a-z0-9_]+)\.gain$")
# the ladder's order (theory/deployment.ladder); a rung not listed goes last
MEASURED_AGAIN = "#7b1fa2"  # a later run's measured gain: no verdict colour, no prediction shape uses it
RUNGS = ("limits", "prefix_cache", "fp8_weights", "fp8_kv", "eager", "ngram")


def _run_stamp(recon: Recon) -> str:
    """The run a gain was measured in (its recording's stamp, test_ladder_replay's prediction input "run")."""
    inputs = (recon.get("prediction") or {}).get("inputs") or {}
    return str(inputs.get("run") or "")


def tuning_ladders(recons: Sequence[Recon]) -> list[Markup]:
    """One chart per (card, model, workload): rungs across, gain (metric / parent's metric) up on a log
    axis, 1 dashed; per metric a measured dot and a predicted mark (one shape per metric) in its verdict's colour. A
    rung run again on another engine start (its recorded runs, oldest first) adds a dot per later run in its own
    colour, ringed in that run's verdict colour unless it agrees: the prediction is the same, the sizes not always."""
    groups: dict[tuple[str, str, str], dict[tuple[str, str], list[Recon]]] = {}
    for recon in recons:
        match = GAIN_NAME.match(str(recon.get("name", "")))
        if recon.get("suite") != "deployment" or not match:
            continue
        if not (_num(recon.get("predicted")) or 0) > 0 or not (_num(recon.get("measured")) or 0) > 0:
            continue
        key = (str(recon.get("hardware")), str(recon.get("model") or "?"), match["workload"])
        groups.setdefault(key, {}).setdefault((match["rung"], match["metric"]), []).append(recon)
    out = []
    for n, ((hardware, model, workload), cells) in enumerate(sorted(groups.items())):
        rungs = sorted({r for r, _ in cells}, key=lambda r: (RUNGS.index(r) if r in RUNGS else len(RUNGS), r))
        metrics = sorted({m for _, m in cells})
        for runs in cells.values():
            runs.sort(key=_run_stamp)
        values = [float(v) for runs in cells.values() for recon in runs for v in (recon["predicted"], recon["measured"])]
        values.append(1.0)
        chart = Chart(Axis.categorical(rungs, label="rung"), Axis.fit(values, log=True, label="gain over the parent rung"),
                      title=f"tuning ladder on {hardware} · {model} · {workload}",
                      aria=f"tuning ladder of {model} on {hardware}, workload {workload}: each rung's measured gain "
                           "over its parent beside the gain predicted before the run",
                      width=max(300, 60 * len(rungs)))
        chart.hline(1.0, "#8c959f", "no change")
        for x, rung in enumerate(rungs):
            for i, metric in enumerate(metrics):
                found = cells.get((rung, metric))
                if not found:
                    continue
                cell = found[0]
                offset = (i - (len(metrics) - 1) / 2) * 0.13
                measured = float(cell["measured"])
                chart.point(x + offset, measured, MEASURED, f"{rung} {metric}: measured x{format_value(measured, '')}",
                            r=3.0)
                for k, again in enumerate(found[1:], start=2):
                    chart.point(x + offset, float(again["measured"]), MEASURED_AGAIN,
                                **mark(again, f"{rung} {metric} run {k} ({_run_stamp(again)})"), r=3.0,
                                outline=_outline(again))
                chart.point(x + offset, float(cell["predicted"]), _colour(cell), **mark(cell, f"{rung} {metric} predicted"),
                            shape=PREDICTION_SHAPES[i % len(PREDICTION_SHAPES)], r=3.6)
        for i, metric in enumerate(metrics):
            chart.key(PREDICTION_SHAPES[i % len(PREDICTION_SHAPES)], "#8c959f", metric)
        chart.key("dot", MEASURED, "measured")
        if any(len(runs) > 1 for runs in cells.values()):
            chart.key("dot", MEASURED_AGAIN, "measured again (another engine start; ringed unless it agrees)")
        _verdict_colour_keys(chart, [recon for runs in cells.values() for recon in runs])
        out.append(chart.svg(f"clip-tuning-{n}"))
    return out
