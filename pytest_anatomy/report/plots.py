"""The pictures an inference engineer looks for, drawn from a ledger's reconciliations.

Each figure takes its numbers from the reconciliations themselves (predicted and measured values,
the prediction's inputs and terms) and, where a picture needs a number no reconciliation carries
(a ladder's rung-0 baseline, sdpa's time beside a flash rung), from the recording the
reconciliation names in its provenance. Nothing is typed in here: with no matching
reconciliations a figure is simply absent. Every figure is a `svg.Chart` with an aria-label
saying what it shows."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from pytest_anatomy.report.formatting import (
    format_gap,
    format_value,
    short_name,
)
from pytest_anatomy.report.svg import PALETTE, Axis, Chart
from pytest_anatomy.units import GiB
from pytest_anatomy.report.plot_common import (
    MEASURED,
    PREDICTION_SHAPES,
    Recon,
    _colour,
    _fmt,
    _inputs,
    _measurement,
    _newest,
    _num,
    _outline,
    _resolve,
    _terms,
    _tip,
    mark,
    _verdict_colour_keys,
    _verdict_keys,
    _rung_order,
)
from pytest_anatomy.report.plots_attention import flash_attention
from pytest_anatomy.report.plots_deployment import tuning_ladders
from pytest_anatomy.report.plots_quant import quality_vs_bpw, speed_vs_bytes, vllm_quality_vs_bpw, vllm_step_vs_bytes


# ---- kernel ladders --------------------------------------------------------------------
# Recording names of kernel rungs: this project's own (ladder.rung.shape, rung 0 the library
# baseline) and the seed's imported ones (seed-sgemm.<set>.<shape>.<rung>, seed-fused.<rung>.m<M>.n<N>,
# seed-reduction.<rung>.n<N>.b<block>). Each pattern names the baseline's recording as a glob.
_LADDER_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(?P<ladder>[a-z]+)\.(?P<rung>(?P<p>[a-z]+)\d+[a-z0-9-]*)\.(?P<shape>[^@]+)$"), "{ladder}.{p}0-*.{shape}"),
    (re.compile(r"^seed-(?P<ladder>sgemm)\.(?P<set>[a-z0-9-]+)\.(?P<shape>\d+x\d+x\d+)\.(?P<rung>(?P<p>k)\d+[a-z]*)$"),
     "seed-sgemm.{set}.{shape}.{p}0"),
    (re.compile(r"^seed-(?P<ladder>fused)\.(?P<rung>(?P<p>[a-z])\d+)\.(?P<shape>m\d+\.n\d+)$"), ""),
    (re.compile(r"^seed-(?P<ladder>reduction)\.(?P<rung>(?P<p>r)\d+)\.(?P<shape>n\d+\.b\d+)$"), ""),
)


def _ladder_key(recon: Recon) -> tuple[str, str, str, Path, str] | None:
    """(ladder, rung, shape, folder, baseline glob) from the recording a kernel reconciliation replays."""
    path = (recon.get("provenance") or {}).get("recording")
    if not path:
        return None
    stem = Path(str(path)).name.split("@")[0]
    for pattern, baseline in _LADDER_NAMES:
        match = pattern.match(stem)
        if match:
            ladder = match["ladder"]
            if ladder == "fused":  # the seed's fused kernels: n* is RMSNorm, s* the softmax
                ladder = "rmsnorm" if match["p"] == "n" else "softmax"
            return ladder, match["rung"], match["shape"], _resolve(str(path)).parent, baseline.format(**match.groupdict())
    return None


def kernel_ladders(recons: Sequence[Recon]) -> list[Markup]:
    """Per GPU, ladder and shape: each rung's measured time, its predictions, and rung 0 (the
    library baseline: cuBLAS, torch) as a line, on a log time axis."""
    ladders: dict[tuple[str, str, str], dict[str, Any]] = {}
    for recon in recons:
        if recon.get("suite") != "kernels" or recon.get("unit") != "s" or _num(recon.get("measured")) is None:
            continue
        key = _ladder_key(recon)
        if key is None:
            continue
        ladder, rung, shape, folder, baseline = key
        entry = ladders.setdefault((str(recon.get("hardware")), ladder, shape), {"folder": folder, "baseline": baseline,
                                                                             "rungs": {}})
        entry["rungs"].setdefault(rung, []).append(recon)
    out = []
    for n, ((hardware, ladder, shape), entry) in enumerate(sorted(ladders.items())):
        rungs = sorted(entry["rungs"], key=_rung_order)
        if len(rungs) < 2:
            continue
        baselines = []
        folder, pattern = entry["folder"], entry["baseline"]
        if pattern and folder.is_dir():
            for stem in sorted({p.name.split("@")[0] for p in folder.glob(f"{pattern}@*.json")}):
                time = _measurement(_newest(folder, stem), "time")
                if time:
                    named = _ladder_key({"provenance": {"recording": stem}})
                    baselines.append((named[1] if named else stem, time))
        values = [v for r in rungs for recon in entry["rungs"][r] for v in (recon["measured"], recon.get("predicted")) if _num(v)]
        values += [t for _, t in baselines]
        chart = Chart(Axis.categorical(rungs, label="rung"), Axis.fit(values, log=True, label="time", format_tick=_fmt("s")),
                      title=f"{ladder} ladder on {hardware} · {shape}",
                      aria=f"{ladder} ladder on {hardware} ({shape}): each rung's measured time with its predictions"
                           + (f", against the {', '.join(b for b, _ in baselines)} baseline" if baselines else ""),
                      width=max(260, 46 * len(rungs)))
        for i, (name, time) in enumerate(baselines):
            colour = PALETTE[i % len(PALETTE)]
            chart.hline(time, colour, f"{name}: {format_value(time, 's')}")
            chart.key("dash", colour, f"{name} (baseline)")
        names = sorted({str(recon.get("name")) for r in rungs for recon in entry["rungs"][r]})
        for x, rung in enumerate(rungs):
            members = entry["rungs"][rung]
            measured = members[0]["measured"]
            chart.point(x, measured, MEASURED, f"{rung}: measured {format_value(measured, 's')}", r=4.6)
            for recon in members:
                predicted = _num(recon.get("predicted"))
                if predicted and predicted > 0:
                    index = names.index(str(recon.get("name")))
                    offset = (index - (len(names) - 1) / 2) * 0.12
                    chart.point(x + offset, predicted, _colour(recon), **mark(recon, f"{rung} {recon.get('name')}"),
                                shape=PREDICTION_SHAPES[index % len(PREDICTION_SHAPES)])
        chart.key("dot", MEASURED, "measured")
        for index, name in enumerate(names):  # one shape per prediction; its colour is its verdict
            chart.key(PREDICTION_SHAPES[index % len(PREDICTION_SHAPES)], "#8c959f", name)
        _verdict_colour_keys(chart, [recon for r in rungs for recon in entry["rungs"][r]])
        out.append(chart.svg(f"clip-ladder-{n}"))
    return out


# ---- rooflines -------------------------------------------------------------------------
def _roof_points(recons: Sequence[Recon]) -> dict[str, dict[str, Any]]:
    """Per GPU: roofs (peak, bandwidth, label) and points (intensity, FLOP/s, colour, tip, kind)."""
    from pytest_anatomy.theory.attention import (
        AttentionShape,
        attention_flops,
        compulsory_bytes,
    )

    gpus: dict[str, dict[str, Any]] = {}
    for recon in recons:
        hardware, measured = str(recon.get("hardware")), _num(recon.get("measured"))
        if measured is None or measured <= 0:
            continue
        inputs, terms = _inputs(recon), _terms(recon)
        gpu = gpus.setdefault(hardware, {"roofs": {}, "points": []})
        if recon.get("name") == "attainable_flop_rate" and _num(inputs.get("arithmetic_intensity")):
            peak, bw = _num(inputs.get("peak_flops")), _num(inputs.get("bandwidth"))
            if peak and bw:
                gpu["roofs"].setdefault("fp32 CUDA cores", (peak, bw))
            gpu["points"].append((inputs["arithmetic_intensity"], measured, _colour(recon),
                                  _tip(recon, f"kernel {inputs.get('rung', short_name(recon))}"), "kernel"))
        elif recon.get("suite") == "latency" and recon.get("name") in ("decode_step", "decode_step_other_model"):
            flops = sum(v for k, v in terms.items() if k in ("trunk matmuls", "lm_head", "attention, decode", "attention, prefill"))
            nbytes = sum(v for k, v in terms.items() if k.startswith(("matmul weights", "KV read", "KV written")))
            if flops and nbytes:
                if terms.get("peak") and terms.get("bandwidth"):
                    gpu["roofs"].setdefault("bf16 tensor cores", (terms["peak"], terms["bandwidth"]))
                gpu["points"].append((flops / nbytes, flops / measured, _colour(recon),
                                      _tip(recon, f"decode step b={inputs.get('decode_tokens')} {recon.get('model')}"), "decode"))
        elif recon.get("suite") == "flashattn" and recon.get("name") == "time" and _num(inputs.get("N_q")):
            try:
                shape = AttentionShape(int(inputs["B"]), int(inputs["H"]), int(inputs["N_q"]), int(inputs["N_kv"]),
                                       int(inputs["D"]), bool(inputs.get("causal")), int(inputs.get("H_kv") or inputs["H"]),
                                       int(inputs.get("bytes_per_element") or 2))
            except (KeyError, TypeError, ValueError):
                continue
            flops, nbytes = attention_flops(shape).value, compulsory_bytes(shape).value
            peak, bw = _num(inputs.get("peak_gemm")), _num(inputs.get("bw_read"))
            if peak and bw:
                gpu["roofs"].setdefault("bf16 tensor cores", (peak, bw))
            gpu["points"].append((flops / nbytes, flops / measured, _colour(recon),
                                  _tip(recon, f"attention {(recon.get('provenance') or {}).get('rung', '')} "
                                            f"{'causal' if shape.causal else 'full'}"), "attention"))
    return {hw: g for hw, g in gpus.items() if g["points"] and g["roofs"]}


def rooflines(recons: Sequence[Recon]) -> list[Markup]:
    """One roofline per GPU (measured ceilings the predictions used), kernels, attention and
    decode steps as points at their arithmetic intensity and achieved FLOP/s."""
    out = []
    shapes = {"kernel": "circle", "decode": "diamond", "attention": "ring"}
    for n, (hardware, gpu) in enumerate(sorted(_roof_points(recons).items())):
        xs = [p[0] for p in gpu["points"]] + [peak / bw for peak, bw in gpu["roofs"].values()]
        ys = [p[1] for p in gpu["points"]] + [peak for peak, _ in gpu["roofs"].values()]
        x_axis = Axis.fit(xs + [min(xs) / 3, max(xs) * 3], log=True, label="arithmetic intensity (FLOP/B)")
        y_axis = Axis.fit(ys + [min(ys) / 2], log=True, label="achieved FLOP/s", format_tick=_fmt("FLOP/s"))
        kinds = sorted({p[4] for p in gpu["points"]})
        chart = Chart(x_axis, y_axis, title=f"roofline on {hardware}",
                      aria=f"roofline on {hardware}: {', '.join(kinds)} at their arithmetic intensity and achieved FLOP/s",
                      width=420, height=280)
        for i, (label, (peak, bw)) in enumerate(gpu["roofs"].items()):
            colour = PALETTE[i % len(PALETTE)]
            ridge = peak / bw
            curve = [(x_axis.lo, x_axis.lo * bw), (ridge, peak), (x_axis.hi, peak)]
            chart.line(curve, colour, tip=f"{label}: {format_value(peak, 'FLOP/s')} peak, {format_value(bw, 'B/s')}")
            chart.key("line", colour, f"{label} roof")
        for x, y, colour, tip, kind in gpu["points"]:
            chart.point(x, y, colour, tip, shape=shapes[kind])
        for kind in kinds:
            chart.key(shapes[kind] if shapes[kind] != "circle" else "dot", "#8c959f", kind)
        out.append(chart.svg(f"clip-roof-{n}"))
    return out


# ---- latency curves --------------------------------------------------------------------
def _curve_chart(series: dict[str, list[tuple[float, Recon]]], *, title: str, aria: str, x_label: str,
                 x_unit: str, clip: str, knees: Mapping[str, float] | None = None) -> Markup:
    knees = knees or {}
    xs = [x for pts in series.values() for x, _ in pts] + list(knees.values())
    ys = [v for pts in series.values() for _, r in pts for v in (r["predicted"], r["measured"]) if _num(v) and v > 0]
    chart = Chart(Axis.fit(xs, log=True, label=x_label, format_tick=_fmt(x_unit)),
                  Axis.fit(ys, log=True, label="time", format_tick=_fmt("s")), title=title, aria=aria, width=400, height=250)
    for i, (label, pts) in enumerate(sorted(series.items())):
        colour = PALETTE[i % len(PALETTE)]
        pts = sorted(pts, key=lambda p: p[0])
        chart.line([(x, r["predicted"]) for x, r in pts], colour, tip=f"{label}: predicted")
        for x, recon in pts:
            chart.point(x, recon["measured"], colour, **mark(recon), outline=_outline(recon))
        chart.key("line", colour, f"{label}: predicted, dots measured")
        if label in knees:
            chart.vline(knees[label], colour, f"{label} saturates at {knees[label]:.1f} req/s")
            chart.key("dash", colour, f"{label} knee ({knees[label]:.1f} req/s)")
    _verdict_keys(chart, [r for pts in series.values() for _, r in pts])
    return chart.svg(clip)


def step_curves(recons: Sequence[Recon]) -> list[Markup]:
    """Decode step time against batch, prefill time against prompt length, per GPU."""
    out = []
    specs = (("decode step vs batch", ("decode_step", "decode_step_other_model"), "decode_tokens", "batch (sequences)"),
             ("prefill vs length", ("prefill", "prefill_other_model", "prefill_roofline"), "tokens", "prompt length (tokens)"))
    for title, names, key, x_label in specs:
        by_gpu: dict[str, dict[str, list[tuple[float, Recon]]]] = {}
        for recon in recons:
            x = _num(_inputs(recon).get(key))
            if recon.get("suite") == "latency" and recon.get("name") in names and x and _num(recon.get("measured")):
                label = f"{recon.get('model')}" + (" (roofline)" if str(recon.get("name")).endswith("roofline") else "")
                by_gpu.setdefault(str(recon.get("hardware")), {}).setdefault(label, []).append((x, recon))
        for hardware, series in sorted(by_gpu.items()):
            series = {k: v for k, v in series.items() if len(v) >= 2}
            if series:
                out.append(_curve_chart(series, title=f"{title} on {hardware}", x_label=x_label, x_unit="",
                                        aria=f"{title} on {hardware}: measured points on the predicted curve",
                                        clip=f"clip-{key}-{hardware}"))
    return out


def _workload(recon: Recon) -> dict[str, Any]:
    """The simulated workload's settings, written by the latency suite as 'name: {python dict}'."""
    text = str(_inputs(recon).get("workload") or "")
    _, _, literal = text.partition(": ")
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return {}
    return value if isinstance(value, dict) else {}


def load_curves(recons: Sequence[Recon]) -> list[Markup]:
    """TTFT and ITL against Poisson arrival rate: the simulator's predictions as a curve, the
    measured points on it, and the saturation rate (the knee) the workload was scaled from."""
    out = []
    for metric in ("ttft_p50", "itl_mean", "itl_median"):
        by_gpu: dict[str, dict[str, list[tuple[float, Recon]]]] = {}
        knees: dict[str, dict[str, tuple[float, str]]] = {}
        for recon in recons:
            work = _workload(recon)
            rate = _num(work.get("rate"))
            if recon.get("suite") != "latency" or recon.get("name") != metric or not rate or not _num(recon.get("measured")):
                continue
            hardware = str(recon.get("hardware"))
            by_gpu.setdefault(hardware, {}).setdefault(str(recon.get("model")), []).append((rate, recon))
            knee = _num(work.get("saturation_rps"))
            if knee:  # sessions measure the saturation rate apart: the newest session's knee is drawn
                model, date = str(recon.get("model")), str((recon.get("provenance") or {}).get("date") or "")
                if date >= knees.setdefault(hardware, {}).get(model, (0.0, ""))[1]:
                    knees[hardware][model] = (knee, date)
        for hardware, series in sorted(by_gpu.items()):
            series = {k: v for k, v in series.items() if len(v) >= 2}
            if series:
                label = metric.replace("_", " ").replace("ttft p50", "TTFT p50").replace("itl", "ITL")
                out.append(_curve_chart(series, title=f"{label} vs arrival rate on {hardware}", x_label="arrival rate (req/s)",
                                        x_unit="", knees={m: k for m, (k, _) in knees.get(hardware, {}).items()},
                                        aria=f"{label} vs arrival rate on {hardware}: the simulator's curve, measured points and the knee",
                                        clip=f"clip-load-{metric}-{hardware}"))
    return out


# ---- memory ledger ---------------------------------------------------------------------
LEDGER_PARTS = ("model_memory_bytes", "peak_activation_bytes", "non_torch_increase_bytes", "cudagraph_estimate_bytes",
                "available_kv_bytes")


def memory_ledgers(recons: Sequence[Recon]) -> list[Markup]:
    """vLLM's memory ledger per configuration: the parts of the requested memory stacked,
    predicted beside measured (one configuration = one recording)."""
    configs: dict[tuple[str, str], dict[str, Recon]] = {}
    for recon in recons:
        if recon.get("suite") == "capacity" and recon.get("name") in LEDGER_PARTS and recon.get("unit") == "B":
            path = (recon.get("provenance") or {}).get("recording")
            if path and _num(recon.get("measured")) is not None and _num(recon.get("predicted")) is not None:
                config = Path(str(path)).name.split("@")[0].removeprefix("vllm-ledger.")
                configs.setdefault((str(recon.get("hardware")), config), {}).setdefault(str(recon["name"]), recon)
    out = []
    for hardware in sorted({hw for hw, _ in configs}):
        rows = [(config, parts) for (hw, config), parts in sorted(configs.items()) if hw == hardware and len(parts) >= 3]
        if not rows:
            continue
        # two bars per configuration, predicted above measured, first configuration on top; the
        # configuration's name labels its pair once
        labels = [text for config, _ in reversed(rows) for text in ("", config)]
        totals = [sum(max(_num(r[side]) or 0.0, 0.0) for r in parts.values()) for _, parts in rows for side in ("predicted", "measured")]
        chart = Chart(Axis(0, max(totals) * 1.04, label="bytes", format_tick=_fmt("B"), unit_step=GiB), Axis.categorical(labels),
                      title=f"memory ledger on {hardware}", width=440, height=14 * len(labels), left=300,
                      aria=f"memory ledger on {hardware}: the parts of vLLM's requested memory, predicted beside measured, per configuration")
        for i, (_config, parts) in enumerate(rows):
            for j, side in enumerate(("predicted", "measured")):
                y = len(labels) - 1 - (2 * i + j)
                x = 0.0
                for k, part in enumerate(LEDGER_PARTS):
                    entry = parts.get(part)
                    value = max(_num(entry[side]) or 0.0, 0.0) if entry else 0.0
                    if entry and value:
                        chart.bar(x, x + value, y - 0.4, y + 0.4, PALETTE[k], f"{_config} {part} {side}: {format_value(value, 'B')}"
                                  f" (verdict {entry.get('verdict')}, gap {format_gap(entry)})",
                                  opacity=1.0 if side == "measured" else 0.5)
                        x += value
        for k, part in enumerate(LEDGER_PARTS):
            chart.key("box", PALETTE[k], part.removesuffix("_bytes"))
        out.append(chart.svg(f"clip-mem-{hardware}"))
    return out



def domain_plots(recons: Sequence[Recon]) -> list[dict[str, Any]]:
    """The figure groups of the report's 'Domain plots' section; empty groups are left out."""
    groups = [
        ("Kernel ladders", "rung time against the library baseline (rung 0), with each prediction", kernel_ladders(recons)),
        ("Rooflines", "measured ceilings; kernels, attention and decode steps at their achieved FLOP/s", rooflines(recons)),
        ("Decode and prefill", "measured points on the predicted curve", step_curves(recons)),
        ("Latency under load", "the simulator's curve against Poisson arrival rate, measured points, the knee", load_curves(recons)),
        ("Memory ledger", "vLLM's requested memory split into its parts; lighter bar predicted, darker measured", memory_ledgers(recons)),
        ("Flash attention", "useful TF/s (4·B·H·D per visible query-key pair) against N", flash_attention(recons)),
        ("Tuning ladder", "each rung's gain over its parent: measured (dark) beside predicted before the run (verdict colour)",
         tuning_ladders(recons)),
        ("Quantization", "KL divergence against bits per weight, decode speed against weight bytes per token, vLLM's "
         "decode step against the weights it streams: predicted curves through the formats, measured points",
         quality_vs_bpw(recons) + vllm_quality_vs_bpw(recons) + speed_vs_bytes(recons) + vllm_step_vs_bytes(recons)),
    ]
    return [{"title": title, "note": note, "plots": plots, "anchor": "plots-" + title.lower().replace(" ", "-")}
            for title, note, plots in groups if plots]
