"""The report's domain plots and SVG axes, on small ledgers (CPU only; the browser test checks the real page)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pytest_anatomy.report import plots
from pytest_anatomy.report.formatting import tick_label
from pytest_anatomy.report.svg import MIN_LABEL_GAP, Axis, Chart, label_width, spaced_labels


def _rec(name: str, predicted: float, measured: float, verdict: str = "agree", **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"suite": "latency", "name": name, "test_id": f"t.py::test_{name}", "unit": "s",
                           "predicted": predicted, "measured": measured, "verdict": verdict, "hardware": "h200",
                           "model": "qwen2.5-7b", "gap_rel": measured / predicted - 1, "provenance": {},
                           "prediction": {"inputs": {}, "terms": []}}
    rec.update(extra)
    return rec


def _labels(svg: str) -> list[str]:
    return re.findall(r'aria-label="([^"]*)"', svg)


def test_spaced_labels_keep_their_distance() -> None:
    ticks = [(float(x), "100 TFLOP/s") for x in range(0, 400, 20)]  # 20 px apart, each ~72 px wide
    kept = spaced_labels(ticks, horizontal=True)
    assert 1 < len(kept) < len(ticks)
    width = label_width("100 TFLOP/s")
    assert all(b[0] - a[0] >= width + MIN_LABEL_GAP for a, b in zip(kept, kept[1:]))
    assert spaced_labels([(0.0, ""), (5.0, "x")], horizontal=True) == [(5.0, "x")]  # empty labels take no room


def test_chart_leaves_room_for_its_widest_y_label() -> None:
    chart = Chart(Axis(1, 10), Axis(1e9, 1e15, log=True, format_tick=lambda v: tick_label(v, "FLOP/s")), "t", "t")
    assert chart.left >= label_width("1000 TFLOP/s") + 20
    assert tick_label(1e15, "FLOP/s") == "1000 TFLOP/s" and tick_label(1e6, "tokens") == "1M"


def test_binary_axis_ticks_are_powers_of_two() -> None:
    axis = Axis.fit([3e6, 80e9], log=True, binary=True, format_tick=lambda v: tick_label(v, "B"))
    ticks = axis.candidate_ticks()
    assert ticks and all(float(t).is_integer() and (int(t) & (int(t) - 1)) == 0 for t in ticks)
    assert {axis.tick_text(t) for t in ticks} >= {"16 MiB", "1 GiB", "64 GiB"}


def test_decode_and_prefill_curves_come_from_the_reconciliations() -> None:
    recs = [_rec("decode_step", 0.004 + 1e-5 * b, 0.0041 + 1.2e-5 * b, prediction={"inputs": {"decode_tokens": b}, "terms": []})
            for b in (1, 8, 64)]
    recs.append(_rec("prefill", 0.05, 0.06, "finding", prediction={"inputs": {"tokens": 2048}, "terms": []}))
    svgs = plots.step_curves(recs)
    assert [label for svg in svgs for label in _labels(svg)] == [
        "decode step vs batch on h200: measured points on the predicted curve"]  # one prefill point: no curve
    svg = str(svgs[0])
    assert svg.count("<polyline") == 1 and svg.count("<circle") == 3  # the curve; 3 measured points, none ringed
    assert "decode_step (agree): predicted 4.01 ms, measured 4.112 ms" in svg


def test_load_curves_draw_the_knee_of_the_newest_session() -> None:
    def load(rate: float, knee: float, date: str) -> dict[str, Any]:
        work = f"qwen.poisson: {{'rate': {rate}, 'saturation_rps': {knee}, 'requests': 60}}"
        return _rec("ttft_p50", 0.03, 0.04, "finding", prediction={"inputs": {"workload": work}, "terms": []},
                    provenance={"date": date})

    svgs = plots.load_curves([load(5.0, 20.0, "2026-11-30"), load(10.0, 21.5, "2026-12-01")])
    assert _labels(str(svgs[0])) == ["TTFT p50 vs arrival rate on h200: the simulator's curve, measured points and the knee"
                                     .replace("'", "&#39;")]
    assert "qwen2.5-7b saturates at 21.5 req/s" in str(svgs[0]) and "20.0 req/s" not in str(svgs[0])


def test_memory_ledger_stacks_predicted_beside_measured() -> None:
    recording = "results/h200/capacity/vllm-ledger.qwen2.5-7b.u0.90.len8192.eager@20261130T000000Z.json"
    parts = {"model_memory_bytes": 15e9, "peak_activation_bytes": 2e9, "available_kv_bytes": 100e9}
    recs = [_rec(name, value, value * 1.01, suite="capacity", unit="B", provenance={"recording": recording})
            for name, value in parts.items()]
    svg = str(plots.memory_ledgers(recs)[0])
    assert _labels(svg)[0].startswith("memory ledger on h200")
    bars = re.findall(r"<title>qwen2.5-7b.u0.90.len8192.eager (\w+) (predicted|measured):", svg)
    assert sorted(bars) == sorted((p, s) for p in parts for s in ("predicted", "measured"))


def test_no_reconciliations_no_plots() -> None:
    assert plots.domain_plots([]) == []
    assert plots.domain_plots([_rec("itl_mean", 0.01, 0.011)]) == []  # no workload: nothing to draw against


def _recording(folder: Path, stem: str, stamp: str, **times: float) -> str:
    path = folder / f"{stem}@{stamp}.json"
    path.write_text(json.dumps({"measurements": {k: {"value": v, "unit": "s"} for k, v in times.items()}}))
    return str(path)


def test_kernel_ladder_reads_its_baseline_from_the_newest_rung_0_recording(tmp_path: Path) -> None:
    _recording(tmp_path, "sgemm.s0-cublas.64x64x64", "20261130T000000Z", time=9e-3)
    _recording(tmp_path, "sgemm.s0-cublas.64x64x64", "20261201T000000Z", time=1e-3)  # the newest counts
    recs = [_rec("time_vs_preregistered", predicted, measured, suite="kernels",
                 provenance={"recording": _recording(tmp_path, f"sgemm.{rung}.64x64x64", "20261201T000000Z", time=measured)})
            for rung, predicted, measured in (("s1-naive", 0.2, 0.25), ("s2-coalesced", 0.02, 0.03))]
    svg = str(plots.kernel_ladders(recs)[0])
    assert _labels(svg)[0].startswith("sgemm ladder on h200 (64x64x64)") and "the s0-cublas baseline" in _labels(svg)[0]
    assert "s0-cublas: 1 ms" in svg and "9 ms" not in svg
    assert svg.count("<path class=\"mark\"") == 2  # one prediction per rung


def test_flash_attention_tflops_against_n_with_both_sdpa_baselines(tmp_path: Path) -> None:
    recs = []
    for n, t in ((1024, 1e-4), (4096, 1.2e-3)):
        stem = f"fa2.r3-fa2.b1h8n{n}d64.full"
        path = _recording(tmp_path, stem, "20261201T000000Z", time=t, sdpa_default_time=t * 0.8, sdpa_flash_time=t * 1.5)
        recs.append(_rec("time", t * 0.9, t, suite="flashattn", provenance={"recording": path},
                         prediction={"inputs": {"H_kv": 8, "peak_gemm": 7e14}, "terms": []}))
    recs += [_rec(name, 1e8, 1.2e8, suite="flashattn", unit="B",
                  provenance={"recording": f"results/h200/flashattn/ncu.fa2.{rung}.b4h32n4096d128.full@20261201T000000Z.json"})
             for name in ("dram_read_bytes", "l2_bytes") for rung in ("r3-fa2", "r6-tma-pipelined")]
    svgs = [str(s) for s in plots.flash_attention(recs)]
    labels = [label for svg in svgs for label in _labels(svg)]
    assert labels[0].startswith("flash attention TF/s against N on h200 (full, D=64)")
    assert labels[1].startswith("flash attention DRAM and L2 bytes on h200 (dram_read_bytes)")
    assert labels[2].startswith("flash attention DRAM and L2 bytes on h200 (l2_bytes)")
    assert ">r6-tma-pipelined · n4096 · full</text>" in svgs[1]
    # 4*B*H*N^2*D useful FLOPs over the recorded times: 28.6 TF/s for r3-fa2 at N=4096 (1.2 ms), so 36 for
    # sdpa default (0.8x its time) and 19 for sdpa FLASH_ATTENTION (1.5x)
    assert "r3-fa2 (agree): predicted 1.08 ms, measured 1.2 ms" in svgs[0]
    assert "sdpa_default_time at N=4096: 36 TF/s" in svgs[0] and "sdpa_flash_time at N=4096: 19 TF/s" in svgs[0]


def test_flash_sweep_is_one_chart_per_head_dim_and_grouping_with_n_along_x(tmp_path: Path) -> None:
    """The N sweep keeps B*H*N fixed: its cases must line up in one chart per (mask, D, KV grouping),
    not one chart per (B, H)."""
    recs = []
    for b, h, kv, n in ((32, 32, None, 512), (8, 32, None, 2048), (1, 16, None, 32768), (1, 16, 4, 32768)):
        stem = f"fa2.r6-tma-pipelined.b{b}h{h}{f'kv{kv}' if kv else ''}n{n}d128.causal"
        path = _recording(tmp_path, stem, "20261201T000000Z", time=1e-3, sdpa_default_time=8e-4, sdpa_flash_time=1.4e-3)
        recs.append(_rec("time", 1e-3, 1e-3, suite="flashattn", provenance={"recording": path},
                         prediction={"inputs": {"peak_gemm": 7e14}, "terms": []}))
    labels = [label for svg in plots.flash_attention(recs) for label in _labels(svg)]
    assert [label.split(":")[0] for label in labels] == [
        "flash attention TF/s against N on h200 (causal, D=128)",
        "flash attention TF/s against N on h200 (causal, D=128, 4 query heads per KV head)"]


def test_scatter_whiskers_are_one_path_and_each_point_says_its_tolerance() -> None:
    """A predicted-vs-measured panel draws its tolerance whiskers as one path under the points (not one titled line
    each: ~0.2 MB in a full report); each point's tooltip says what its whisker allows."""
    from pytest_anatomy.report.html import scatter_plots

    recs = [_rec(f"step{i}", 0.01 * (i + 1), 0.0105 * (i + 1), tolerance={"rel": 0.1, "abs": 0.0, "ratio": None})
            for i in range(4)]
    svg = str(scatter_plots(recs)[0])
    whisker = re.findall(r'<path class="whisker" clip-path="url\(#clip-scatter-0\)" d="([^"]+)"/>', svg)
    assert len(whisker) == 1 and whisker[0].count("M") == whisker[0].count("V") == 4
    assert svg.index('class="whisker"') < svg.index("<circle") and svg.count("<polyline") == 1  # y = x
    assert "step0 (agree): predicted 10 ms, measured 10.5 ms, gap +5.00%, allowed ±10%</title>" in svg
    # in the page each point has a table row: it carries the row, and the page's script makes its tooltip from it
    rowed = str(scatter_plots(recs, {id(r): 10 + i for i, r in enumerate(recs)})[0])
    assert "<title>step" not in rowed and [f'data-rec="{10 + i}"' in rowed for i in range(4)] == [True] * 4


def test_svg_coordinates_drop_a_whole_number_s_point_zero() -> None:
    from pytest_anatomy.report.svg import _n

    assert [_n(v) for v in (336.0, 12.34, -0.04, 0.0, 7.96)] == ["336", "12.3", "0", "0", "8"]


def test_gap_bars_tooltip_only_a_cut_label() -> None:
    """A gap bar's label longer than 60 characters is cut in its middle and carries the whole test id as its tooltip;
    a whole label carries none, and no bar carries one (its gap is the row's value text, its verdict the colour)."""
    from pytest_anatomy.report.html import gap_bars

    short = _rec("short", 1.0, 1.5, verdict="finding")
    long_id = "t.py::test_" + "x" * 80 + "[case-one]"
    cut = _rec("x" * 80, 1.0, 0.5, verdict="diverge", test_id=long_id)
    svg = str(gap_bars([short, cut, _rec("fine", 1.0, 1.0)]))
    titles = re.findall(r"<title>([^<]*)</title>", svg)
    assert titles == [long_id]
    assert svg.count('class="label"') == 2 and "…" in svg and "+50.0%" in svg and "-50.0%" in svg
    # with its table row known, a cut label carries the row (the page's script writes the tooltip from it) instead
    with_rows = str(gap_bars([short, cut], {id(cut): 7, id(short): 3}))
    assert re.findall(r"<title>", with_rows) == [] and with_rows.count('data-rec="7"') == 1
    assert 'data-rec="3"' not in with_rows  # a whole label needs no tooltip


def test_tuning_ladder_draws_every_run_of_a_rung() -> None:
    """A rung run again on another engine start keeps its first run's measured dot and adds a dot for the later run in
    its own colour, ringed in its verdict colour (both gains share one prediction); the chart's legend names it."""
    from pytest_anatomy.report.plots_deployment import tuning_ladders

    def gain(measured: float, run: str, verdict: str) -> dict[str, Any]:
        return _rec("chat.eager.itl_p50_s.gain", 2.0, measured, verdict, suite="deployment", unit="",
                    prediction={"inputs": {"run": run}, "terms": []})

    again, first = gain(2.9, "20261204T202642Z", "finding"), gain(2.4, "20261202T000111Z", "agree")
    svg = str(tuning_ladders([again, first])[0])  # ledger order is not run order
    assert "run 2 (20261204T202642Z)" in svg and "measured again (another engine start" in svg
    assert "eager itl_p50_s: measured x2.4" in svg and 'fill="#7b1fa2"' in svg and 'class="ring"' in svg
    single = str(tuning_ladders([first])[0])
    assert "run 2" not in single and "measured again" not in single
