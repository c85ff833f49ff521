"""The measured side of the ladder's metrics (measure/ladder_stats.py), on hand-made request records."""

from __future__ import annotations

import pytest

from pytest_anatomy.measure.ladder_stats import ladder_metrics, per_token_itls
from pytest_anatomy.measure.load_stats import RequestRecord
from pytest_anatomy.specs.workload_file import Slo
from pytest_anatomy.deployment_ladder import HARDWARE


def _rec(send: float, times: tuple[float, ...], tokens: tuple[int, ...]) -> RequestRecord:
    return RequestRecord("r", 100, sum(tokens), send, times, tokens)


def test_a_multi_token_chunk_counts_one_gap_per_token() -> None:
    r = _rec(0.0, (0.1, 0.11, 0.14), (1, 1, 3))
    assert per_token_itls(r) == pytest.approx([0.01, 0.01, 0.01, 0.01])


def test_ladder_metrics_of_two_requests() -> None:
    a = _rec(0.0, (0.1, 0.11, 0.12), (1, 1, 1))  # TTFT 0.1, TPOT 0.01: meets 150 ms / 15 ms
    b = _rec(0.0, (0.2, 0.25, 0.30), (1, 1, 1))  # TTFT 0.2: misses
    m = ladder_metrics([a, b], 0.0, Slo(150, 15))
    assert m["ttft_p50_s"] == pytest.approx(0.15) and m["output_throughput"] == pytest.approx(6 / 0.30)
    assert m["goodput"] == pytest.approx(1 / 0.30)
    assert m["itl_p50_s"] == pytest.approx(0.03)  # gaps 0.01, 0.01, 0.05, 0.05


def test_nothing_completed_gives_no_numbers() -> None:
    failed = RequestRecord("r", 100, 5, 0.0, (0.1,), (1,), error="boom")
    assert set(ladder_metrics([failed], 0.0, Slo(1, 1)).values()) == {None}


def test_the_ladder_chart_draws_each_rung_and_metric_of_the_gain_reconciliations() -> None:
    """The report's tuning-ladder figure, from two synthetic gain reconciliations (not measurements)."""
    from pytest_anatomy.report import plots
    from pytest_anatomy.report.plots_deployment import tuning_ladders

    def rec(name: str, predicted: float, measured: float, verdict: str) -> dict:
        return {"suite": "deployment", "name": name, "predicted": predicted, "measured": measured, "verdict": verdict,
                "hardware": HARDWARE, "model": "qwen2.5-7b", "unit": "", "gap_rel": measured / predicted - 1,
                "provenance": {}, "prediction": {"inputs": {}, "terms": []}, "test_id": "t"}

    recs = [rec("rag.prefix_cache.ttft_p50_s.gain", 0.09, 0.1, "agree"),
            rec("rag.fp8_weights.itl_p50_s.gain", 0.71, 0.95, "diverge"),
            rec("chat.limits.goodput.gain", 0.96, 1.0, "agree"), rec("rag.other", 1.0, 1.0, "agree")]
    charts = tuning_ladders(recs)
    assert len(charts) == 2  # chat and rag
    rag = next(str(c) for c in charts if "workload rag" in str(c))
    assert rag.count("<title>prefix_cache ttft_p50_s: measured") == 1 and "fp8_weights itl_p50_s predicted" in rag
    assert rag.index(">prefix_cache<") < rag.index(">fp8_weights<")  # the ladder's order
    assert any(g["title"] == "Tuning ladder" for g in plots.domain_plots(recs))


def test_the_ladder_chart_gives_each_of_the_six_metrics_its_own_shape() -> None:
    """Six metrics per rung (TTFT p50/p99, ITL p50/p99, throughput, goodput): six predicted-mark shapes in the legend,
    none shared (with five shapes, goodput and ttft_p99_s both drew diamonds on the first recorded ladder)."""
    import re

    from pytest_anatomy.report.plots_deployment import tuning_ladders

    metrics = ("goodput", "itl_p50_s", "itl_p99_s", "output_throughput", "ttft_p50_s", "ttft_p99_s")
    recs = [{"suite": "deployment", "name": f"rag.limits.{m}.gain", "predicted": 1.0, "measured": 1.0,
             "verdict": "agree", "hardware": HARDWARE, "model": "qwen2.5-7b", "unit": "", "gap_rel": 0.0,
             "provenance": {}, "prediction": {"inputs": {}, "terms": []}, "test_id": "t"} for m in metrics]
    svg = str(tuning_ladders(recs)[0])
    marks = {m: re.search(rf'<(path|rect|circle)[^>]*>\s*<title>limits {m} predicted', svg) for m in metrics}
    assert all(marks.values()), marks
    kinds = [re.sub(r"\d+(\.\d+)?", "#", svg[mk.start():svg.index(">", mk.start())]) for mk in marks.values() if mk]
    assert len(set(kinds)) == len(metrics), kinds
