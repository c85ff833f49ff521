"""`predict latency` prints each answer's reconciled error beside it, from the validation table the report
command writes (report/validation_table.json), and a card without recordings gets the H200's calibration
carried over by the transfer rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_anatomy import cli
from pytest_anatomy.cli_uncertainty import reconciled_error
from pytest_anatomy.report import validation

ROOT = Path(__file__).resolve().parents[1]


def _row(source: str, gpu: str, metric: str, median: float, count: int = 5) -> validation.Row:
    return validation.Row(source, gpu, "vllm", metric, count, median, 2 * median, 0.5, count, 0, 0, 0)


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "validation_table.json"
    validation.write_json([
        _row("ours (H200)", "h200", "decode_step", 0.028),
        _row("AIConfigurator", "h200", "tpot_mean", 0.29, 81),
        _row("AIConfigurator", "h100-sxm", "tpot_mean", 0.50, 138),
        _row("ours (H200)", "h200", "ttft_p50", 0.60),
    ], path)
    monkeypatch.setattr(validation, "TABLE_JSON", path)
    return path


def test_the_cards_own_sessions_come_first_then_third_party_then_the_transfer(table: Path) -> None:
    own = reconciled_error("itl_ms", "h200")
    assert own is not None and (own.metric, own.source, own.median, own.same_card) == (
        "decode_step", "ours (H200)", 0.028, True)
    moved = reconciled_error("itl_ms", "a100-80gb")
    assert moved is not None and (moved.gpu, moved.median, moved.same_card) == ("h100-sxm", 0.50, False)
    assert "no reconciliation of this kind on this card" in moved.describe()
    assert reconciled_error("prefill_ms", "h200") is None  # the table holds no prefill row: nothing is made up


def test_predict_latency_prints_the_error_beside_each_answer(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["predict", "latency", "--model", "qwen2.5-7b", "--hardware", "h200", "--batch", "1"]) == 0
    out = capsys.readouterr().out
    itl = next(line for line in out.splitlines() if line.strip().startswith("itl_ms"))
    assert "±2.8% (p90 5.6%)" in itl
    assert "itl_ms: ±2.8% median |measured/predicted - 1|, p90 5.6%, over 5 decode_step reconciliations" in out
    assert cli.main(["predict", "latency", "--model", "qwen2.5-7b", "--hardware", "h200", "--batch", "1",
                     "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["itl_ms"]["uncertainty"]["median"] == 0.028 and doc["prefill_ms"]["uncertainty"] is None


def test_a_card_without_recordings_gets_the_transferred_calibration(table: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    args = ["predict", "latency", "--model", "qwen2.5-7b", "--hardware", "a100-80gb", "--batch", "1", "--json"]
    assert cli.main(args) == 0
    moved = json.loads(capsys.readouterr().out)
    assert cli.main([*args, "--uncalibrated"]) == 0
    bare = json.loads(capsys.readouterr().out)
    assert "transferred from the H200" in moved["itl_ms"]["notes"][0]
    # the transferred step adds the H200's overhead and its attained fraction of the datasheet: slower than
    # the bare datasheet roofline, which stays a lower bound
    assert moved["itl_ms"]["value"] > bare["itl_ms"]["value"]


def test_the_committed_table_is_readmes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report command writes README's block and the JSON from the same rows: neither goes stale alone."""
    monkeypatch.setattr(validation, "TABLE_JSON", ROOT / "pytest_anatomy" / "report" / "validation_table.json")
    table = validation.load_json()
    if not table:
        pytest.fail("pytest_anatomy/report/validation_table.json is missing: run `pytest-anatomy report`")
    assert validation.readme_block(table) == validation.current_readme_table(ROOT / "README.md")
