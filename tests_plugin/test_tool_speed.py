"""How fast the tool answers, as its users feel it: benchmarks, not timed assertions.

The CPU test command runs them with `--benchmark-disable` (each body once: correctness only), so a
slow CI machine never fails on time. For real (what docs/DESIGN.md quotes):

    python -m pytest tests_plugin/test_tool_speed.py --benchmark-enable

Targets: `predict capacity` for one model <= 50 ms in-process; `predict latency --rate` simulating
10,000 requests <= 2 s; rendering the HTML report from a full ledger <= 5 s.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_anatomy import cli

ROOT = Path(__file__).resolve().parents[1]


def _answer(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_capacity_speed(benchmark, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_anatomy import recordings

    argv = ["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "h200", "--enforce-eager", "--json"]
    out = benchmark(_answer, capsys, argv)
    # The answer is the engine's own block count on the recorded H200 start of the same settings.
    rec = recordings.load_latest(ROOT / "results", "h200", "capacity", "vllm-ledger.qwen2.5-7b.u0.90.len8192.eager")
    assert out["num_gpu_blocks"]["value"] == rec["num_gpu_blocks"].value


def test_predict_latency_simulating_10k_requests_speed(benchmark, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["predict", "latency", "--model", "qwen2.5-7b", "--hardware", "h200", "--rate", "20",
            "--requests", "10000", "--json"]
    out = benchmark.pedantic(_answer, args=(capsys, argv), rounds=3, iterations=1)
    assert out["throughput_tok_s"]["value"] > 0


def test_render_report_speed(benchmark, tmp_path: Path) -> None:
    from pytest_anatomy.report.html import render_html

    ledger_path = next(iter(sorted((ROOT / "results" / "h200" / "live-runs").glob("*.full.json"))), None)
    if ledger_path is None:
        pytest.skip("no committed live-run ledger to render")
    ledger = json.loads(ledger_path.read_text())
    # A full replay's ledger holds ~1,000 reconciliations: the live run's, five times over.
    ledger["reconciliations"] = [dict(e, test_id=f"{e['test_id']}#{k}") for k in range(5)
                                 for e in ledger["reconciliations"]]
    html = benchmark.pedantic(render_html, args=(ledger,), rounds=3, iterations=1)
    assert "<html" in html.lower() and len(ledger["reconciliations"]) > 900
