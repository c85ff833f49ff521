"""Flash attention's figures: TF/s against N per rung with the roofline and both sdpa
baselines, and DRAM / L2 bytes predicted against measured."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from pytest_anatomy.report.formatting import (
    format_value,
    short_name,
)
from pytest_anatomy.report.svg import PALETTE, Axis, Chart
from pytest_anatomy.report.plot_common import (
    MEASURED,
    Recon,
    _colour,
    _fmt,
    _inputs,
    _load,
    _measurement,
    _num,
    _outline,
    _recording,
    _tip,
    mark,
    _verdict_colour_keys,
    _verdict_keys,
    _rung_order,
)


# ---- flash attention -------------------------------------------------------------------
_FA_NAME = re.compile(r"^fa2\.(?P<rung>[^.]+)\.b(?P<B>\d+)h(?P<H>\d+)(?:kv(?P<KV>\d+))?n(?P<N>\d+)d(?P<D>\d+)"
                      r"\.(?P<mask>full|causal)$")


def flash_attention(recons: Sequence[Recon]) -> list[Markup]:
    """TF/s against N per rung with the roofline and both sdpa baselines (from the same
    recordings), and DRAM / L2 bytes predicted against measured where the ledger has them."""
    from pytest_anatomy.theory.attention import AttentionShape, attention_flops

    runs: dict[tuple[str, str, str], dict[str, list[tuple[float, float, str, str]]]] = {}
    peaks: dict[tuple[str, str, str], float] = {}
    flash_recons: dict[tuple[str, str, str], list[Recon]] = {}
    byte_recons: dict[str, list[Recon]] = {}
    for recon in recons:
        if recon.get("suite") != "flashattn":
            continue
        if recon.get("unit") == "B":
            byte_recons.setdefault(str(recon.get("hardware")), []).append(recon)
            continue
        path = (recon.get("provenance") or {}).get("recording")
        match = _FA_NAME.match(Path(str(path)).name.split("@")[0]) if path else None
        measured = _num(recon.get("measured"))
        if recon.get("name") != "time" or not match or not measured:
            continue
        B, H, N, D = (int(match[k]) for k in ("B", "H", "N", "D"))
        inputs = _inputs(recon)
        kv = int(match["KV"] or inputs.get("H_kv") or H)
        shape = AttentionShape(B, H, N, N, D, match["mask"] == "causal", kv)
        flops = attention_flops(shape).value
        # One chart per (card, mask, head dim, KV grouping), the lengths along x: the N sweep keeps
        # B*H*N fixed, so grouping by B and H would give one point per chart.
        key = (str(recon.get("hardware")), match["mask"], f"D={D}" + (f", {H // kv} query heads per KV head" if kv != H else ""))
        series = runs.setdefault(key, {})
        series.setdefault(match["rung"], []).append((N, flops / measured, _outline(recon), _tip(recon, match["rung"])))
        flash_recons.setdefault(key, []).append(recon)
        recording = _recording(recon)
        data: Mapping[str, Any] | None = _load(recording) if recording else None
        for baseline in ("sdpa_default_time", "sdpa_flash_time"):
            t = _measurement(data, baseline)
            if t:
                series.setdefault(baseline.removesuffix("_time"), [])
                if all(n != N for n, *_ in series[baseline.removesuffix("_time")]):
                    series[baseline.removesuffix("_time")].append((N, flops / t, MEASURED, f"{baseline} at N={N}: {flops / t / 1e12:.0f} TF/s"))
        if _num(inputs.get("peak_gemm")):
            peaks[key] = float(inputs["peak_gemm"])
    out = []
    all_labels = sorted({label for series in runs.values() for label in series})
    for n, (key, series) in enumerate(sorted(runs.items())):
        hardware, mask, dims = key
        xs = [p[0] for pts in series.values() for p in pts]
        ys = [p[1] for pts in series.values() for p in pts] + ([peaks[key]] if key in peaks else [])
        chart = Chart(Axis.fit(xs + [min(xs) / 1.5, max(xs) * 1.5], log=True, label="sequence length N"),
                      Axis.fit(ys, log=True, label="useful FLOP/s", format_tick=_fmt("FLOP/s")),
                      title=f"flash attention on {hardware} · {mask} · {dims}",
                      aria=f"flash attention TF/s against N on {hardware} ({mask}, {dims}): each rung, the roofline and both sdpa baselines",
                      width=420, height=260)
        if key in peaks:
            chart.hline(peaks[key], "#57606a", f"roofline: measured bf16 matmul ceiling {format_value(peaks[key], 'FLOP/s')}")
            chart.key("dash", "#57606a", "roofline (matmul ceiling)")
        for label, pts in sorted(series.items()):
            colour = PALETTE[all_labels.index(label) % len(PALETTE)]  # one colour per series on every chart
            pts = sorted(pts)
            chart.line([(x, y) for x, y, *_ in pts], colour, tip=label)
            for x, y, outline, tip in pts:
                if label.startswith("sdpa"):
                    chart.point(x, y, colour, tip, shape="ring")
                else:
                    chart.point(x, y, colour, tip, outline=outline)
            chart.key("ring" if label.startswith("sdpa") else "line", colour, label)
        _verdict_keys(chart, flash_recons[key])
        out.append(chart.svg(f"clip-fa-{n}"))
    out += _flash_bytes(byte_recons)
    return out


def _case_label(recon: Recon) -> str:
    """'r3-fa2 · n4096 · full' from the counter recording's name, else the test's parameter id."""
    path = (recon.get("provenance") or {}).get("recording")
    stem = Path(str(path)).name.split("@")[0].removeprefix("ncu.") if path else ""
    match = _FA_NAME.match(stem)
    return f"{match['rung']} · n{match['N']} · {match['mask']}" if match else short_name(recon)


def _flash_bytes(byte_recons: Mapping[str, list[Recon]]) -> list[Markup]:
    """DRAM and L2 bytes per rung and case: the IO prediction against Nsight Compute's count,
    one plot per GPU and counter (dram_read_bytes, dram_write_bytes, l2_bytes)."""
    out = []
    for hardware, brecons in sorted(byte_recons.items()):
        by_name: dict[str, list[Recon]] = {}
        for recon in brecons:
            by_name.setdefault(str(recon.get("name")), []).append(recon)
        for name, group in sorted(by_name.items()):
            group = sorted(group, key=lambda r: (_rung_order(_case_label(r)), _case_label(r)))
            labels = [_case_label(r) for r in group]
            values = [v for r in group for v in (_num(r.get("predicted")), _num(r.get("measured"))) if v and v > 0]
            if not values:
                continue
            chart = Chart(Axis.categorical(labels), Axis.fit(values, log=True, label="bytes", format_tick=_fmt("B"), binary=True),
                          title=f"flash attention {name} on {hardware}",
                          aria=f"flash attention DRAM and L2 bytes on {hardware} ({name}): predicted against measured per rung",
                          width=max(260, 34 * len(labels)), x_label_rotate=True)
            for i, recon in enumerate(group):
                if _num(recon.get("predicted")):
                    chart.point(i, recon["predicted"], "#8c959f", **mark(recon, labels[i]), shape="diamond")
                if _num(recon.get("measured")):
                    chart.point(i, recon["measured"], _colour(recon), **mark(recon, labels[i]))
            chart.key("diamond", "#8c959f", "predicted (IO theory)")
            chart.key("dot", MEASURED, "measured (Nsight Compute)")
            _verdict_colour_keys(chart, group)
            out.append(chart.svg(f"clip-fa-{name}-{hardware}"))
    return out

