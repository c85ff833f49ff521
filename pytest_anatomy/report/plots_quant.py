"""The quantization suite's figures (issue 13's report): quality against bits per weight (the noise
model's predicted curve through the file types, each measured KLD a point), from the `kld[...]`
reconciliations whose prediction names the file's bits per weight; and decode speed against the weight
bytes a token reads (the predicted tok/s through the file types, measured llama-bench points), from the
`tg128_tok_per_s[...]` ones that name them; and vLLM's decode step per weight format against the weights a step
streams, one chart per batch, from the `decode_step_per_weight_format` ones. Each is absent without its
reconciliations."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from pytest_anatomy.report.plot_common import Recon, _fmt, _inputs, _num, _outline, _verdict_keys, mark
from pytest_anatomy.report.svg import PALETTE, Axis, Chart


def _points(recons: Sequence[Recon], prefix: str, x_input: str) -> dict[str, list[tuple[float, Recon]]]:
    """{group: [(x, reconciliation)]} of the quant suite's reconciliations named prefix[...] whose prediction
    carries `x_input`; a group is the hardware and the model."""
    out: dict[str, list[tuple[float, Recon]]] = {}
    for recon in recons:
        x = _num(_inputs(recon).get(x_input))
        if (recon.get("suite") == "quant" and str(recon.get("name", "")).startswith(prefix) and x
                and _num(recon.get("measured")) and _num(recon.get("predicted"))):
            out.setdefault(f"{recon.get('model')} on {recon.get('hardware')}", []).append((x, recon))
    return out


def _by_batch(points: dict[str, list[tuple[float, Recon]]]) -> dict[str, list[tuple[float, Recon]]]:
    """Split each group by the prediction's `batch` input (a step's time depends on it as much as on the bytes)."""
    out: dict[str, list[tuple[float, Recon]]] = {}
    for group, pts in points.items():
        for x, recon in pts:
            out.setdefault(f"{group}, b={_inputs(recon).get('batch')}", []).append((x, recon))
    return out


def _chart(group: str, pts: list[tuple[float, Recon]], *, what: str, x_label: str, y_label: str, log_x: bool,
           tip: str, clip: str) -> Markup:
    pts = sorted(pts, key=lambda p: p[0])
    ys = [v for _, r in pts for v in (r["predicted"], r["measured"]) if v > 0]
    chart = Chart(Axis.fit([x for x, _ in pts], log=log_x, label=x_label, format_tick=_fmt("")),
                  Axis.fit(ys, log=True, label=y_label, format_tick=_fmt("")), title=f"{what} ({group})", width=400,
                  height=250, aria=f"{what}, {group}: the predicted curve through the file types, measured points")
    colour = PALETTE[0]
    chart.line([(x, r["predicted"]) for x, r in pts], colour, tip=tip)
    for x, recon in pts:
        chart.point(x, recon["measured"], colour, **mark(recon), outline=_outline(recon))
    chart.key("line", colour, f"{tip}, dots measured")
    _verdict_keys(chart, [r for _, r in pts])
    return chart.svg(clip)


def quality_vs_bpw(recons: Sequence[Recon]) -> list[Markup]:
    return [_chart(group, pts, what="quality vs bits per weight", x_label="bits per weight",
                   y_label="KLD vs reference (nat)", log_x=False, tip="predicted (c x exact noise S)",
                   clip=f"clip-quant-bpw-{n}")
            for n, (group, pts) in enumerate(sorted(_points(recons, "kld[", "bits_per_weight").items())) if len(pts) >= 2]


def speed_vs_bytes(recons: Sequence[Recon]) -> list[Markup]:
    return [_chart(group, pts, what="decode speed vs weight bytes per token", x_label="weight bytes per token",
                   y_label="tokens/s (tg128)", log_x=True, tip="predicted (bytes / ceiling + overhead)",
                   clip=f"clip-quant-speed-{n}")
            for n, (group, pts) in enumerate(sorted(_points(recons, "tg128_tok_per_s[", "weight_bytes_per_token").items()))
            if len(pts) >= 2]


def vllm_step_vs_bytes(recons: Sequence[Recon]) -> list[Markup]:
    groups = _by_batch(_points(recons, "decode_step_per_weight_format", "weight_bytes_per_token"))
    return [_chart(group, pts, what="vLLM decode step vs weight bytes", x_label="weight bytes a step streams",
                   y_label="decode step (s)", log_x=True, tip="pre-registered (bytes / ceiling + overhead)",
                   clip=f"clip-quant-vllm-{n}")
            for n, (group, pts) in enumerate(sorted(groups.items(), key=lambda g: (len(g[0]), g[0]))) if len(pts) >= 2]


def vllm_quality_vs_bpw(recons: Sequence[Recon]) -> list[Markup]:
    """vLLM's formats on the same axes: KLD against the bits each weight takes (fp8 8, int4 g64 4.25; the fp8 KV cache
    at its weights' 16), the CPU slice's pre-registered prediction through them, from the `vllm_kld[...]` ones."""
    return [_chart(group, pts, what="vLLM quality vs bits per weight", x_label="bits per weight",
                   y_label="KLD vs reference (nat)", log_x=False, tip="predicted (the CPU slice through vLLM's arithmetic)",
                   clip=f"clip-quant-vllm-bpw-{n}")
            for n, (group, pts) in enumerate(sorted(_points(recons, "vllm_kld[", "bits_per_weight").items())) if len(pts) >= 2]
