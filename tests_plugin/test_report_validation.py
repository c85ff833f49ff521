"""report/validation.py: the validation table from a ledger, README's generated block, the HTML section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy.report import validation
from pytest_anatomy.report.embedded import read_page
from pytest_anatomy.report.html import render_html

ROOT = Path(__file__).resolve().parents[1]


def _rec(name: str, predicted: float, measured: float, verdict: str, **prov: Any) -> dict[str, Any]:
    return {"suite": prov.pop("suite", "validation"), "test_id": prov.pop("test_id", "t"), "name": name,
            "predicted": predicted, "measured": measured, "verdict": verdict, "source": prov.pop("source", "recorded"),
            "hardware": prov.pop("hardware", "h100-sxm"), "provenance": prov}


def test_rows_group_and_summarise_errors() -> None:
    recs = [_rec("ttft_mean", 1.0, m, v, third_party="aiconfigurator", engine="vllm")
            for m, v in ((1.1, "agree"), (0.8, "finding"), (1.5, "diverge"), (1.0, "resolved"), (1.3, "finding"))]
    for r in recs:
        r["provenance"]["source"] = "third-party"
    recs[1]["finding"] = {"id": "kv-pool-smaller-than-concurrency"}
    recs[4]["finding"] = {"id": "aiconfigurator-h100-sxm-vllm-ttft-mean" + validation.UNESTABLISHED}
    (row,) = validation.rows(recs)
    assert (row.source, row.gpu, row.engine, row.metric, row.count) == ("AIConfigurator", "h100-sxm", "vllm",
                                                                        "ttft_mean", 5)
    assert row.median_abs_error == pytest.approx(0.2)  # errors 0, 0.1, 0.2, 0.3, 0.5
    assert row.p90_abs_error == pytest.approx(0.42)
    assert row.measured_above == 0.6
    assert (row.agree, row.finding, row.unexplained, row.diverge) == (2, 1, 1, 1)


def test_own_rows_keep_comparable_metrics_and_drop_fit_repeats_and_live_numbers() -> None:
    base = {"engine": "vllm", "recording": "results/h200/latency/x@1.json"}
    recs = [_rec("itl_mean", 1.0, 1.02, "agree", suite="latency", hardware=None, **base),
            _rec("itl_mean", 1.0, 1.50, "agree", suite="latency", test_id="t[c1-fit-repeat]", **base),
            _rec("step_flops", 1.0, 1.0, "agree", suite="latency", **base),
            _rec("itl_mean", 1.0, 9.0, "agree", suite="latency", source="live", **base)]
    (row,) = validation.rows(recs)
    assert (row.source, row.gpu, row.count) == ("ours (H200)", "h200", 1)


def test_readme_block_is_replaced_between_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{validation.BEGIN}\nold\n{validation.END}\nrest\n")
    table = validation.rows([{**_rec("latency", 2.0, 3.0, "finding", third_party="argonne-llm-inference-bench",
                                     engine="llama.cpp"), "provenance": {"source": "third-party", "engine": "llama.cpp",
                                                                         "third_party": "argonne-llm-inference-bench"}}])
    assert validation.update_readme(readme, table)
    assert not validation.update_readme(readme, table)
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("rest\n") and "| Argonne LLM-Inference-Bench |" in text
    (tmp_path / "other.md").write_text("no markers")
    with pytest.raises(ValueError, match="no '<!-- validation-table -->'"):
        validation.update_readme(tmp_path / "other.md", table)


def test_readme_has_the_generated_block() -> None:
    block = validation.current_readme_table(ROOT / "README.md")
    assert block is not None and "| source | GPU | engine | metric |" in block


def test_html_report_shows_the_table() -> None:
    rec = {**_rec("num_gpu_blocks", 100.0, 98.0, "diverge"),
           "provenance": {"source": "third-party", "third_party": "inference-sim-blis", "engine": "vllm"},
           "unit": "blocks", "gap_abs": -2.0, "gap_rel": -0.02, "ratio": 0.98, "model": "m",
           "tolerance": {"rel": 0, "abs": 0, "ratio": [0.99, 1.01], "why": "w"},
           "prediction": {"value": 100.0, "unit": "blocks", "formula": "f", "inputs": {}, "terms": [], "notes": []},
           "finding": None}
    html = render_html({"reconciliations": [rec], "environment": {}, "tests": {}, "skips": []})
    assert 'id="validation"' in html and "inference-sim" in html and "0 / 0 / 0 / 1" in html


def test_html_report_keeps_validation_reconciliations_compact() -> None:
    """The page shows the validation suite through its table and findings only: no derivation,
    no plot row, not in the embedded ledger (the JSON ledger beside the page keeps them)."""
    def rec(suite: str, name: str, fid: str) -> dict[str, Any]:
        return {**_rec(name, 100.0, 150.0, "finding", suite=suite, test_id=f"{suite}::{name}"),
                "provenance": {"source": "third-party", "third_party": "aiconfigurator", "engine": "vllm"},
                "unit": "s", "gap_abs": 50.0, "gap_rel": 0.5, "ratio": 1.5, "model": "m",
                "tolerance": {"rel": 0, "abs": 0, "ratio": [0.9, 1.1], "why": "w"},
                "prediction": {"value": 100.0, "unit": "s", "formula": "FORMULA-" + name, "inputs": {}, "terms": [],
                               "notes": []},
                "finding": {"id": fid, "reason": "REASON-" + fid}}
    recs = [rec("validation", "tpot_mean", "third-party-miss"), rec("latency", "decode_step", "own-miss")]
    html = render_html({"reconciliations": recs, "environment": {}, "tests": {}, "skips": []})
    embedded = read_page(html)
    assert "FORMULA-decode_step" in embedded["text_table"] and "FORMULA-tpot_mean" not in embedded["text_table"]
    assert "REASON-third-party-miss" in html and "1 reconciliation" in html  # the finding stays, with its count
    assert [r["name"] for r in embedded["reconciliations"]] == ["decode_step"]
    assert embedded["reconciliations_left_out"]["count"] == 1


def test_an_interrupted_report_run_leaves_the_readme_table_alone(tmp_path, monkeypatch, capsys) -> None:
    """pytest exiting 2 (collection errors, as a core-only install once gave) leaves a partial ledger: the report
    command must not rewrite README's validation table from it, and says so."""
    import subprocess

    from pytest_anatomy import cli

    (tmp_path / "tests_capacity").mkdir()
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- validation-table -->\n| old |\n<!-- /validation-table -->\n")
    (tmp_path / "r.json").write_text(json.dumps({"reconciliations": []}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(subprocess, "call", lambda cmd: 2)
    written = []
    monkeypatch.setattr(validation, "update_readme", lambda *a: written.append(a) or True)
    assert cli.main(["report", "-o", str(tmp_path / "r.html")]) == 2
    assert written == [] and "| old |" in readme.read_text()
    assert "left as it was: pytest exited 2" in capsys.readouterr().err
