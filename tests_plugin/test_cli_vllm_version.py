"""`predict ... --vllm-version` selects that release's accounting rules; `--hardware` takes the new cards."""

from __future__ import annotations

import json

import pytest

from pytest_anatomy import cli


def _capacity(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert cli.main(["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "h200", "--model-runner", "v1",
                     "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_version_rules_change_what_the_kv_budget_loses(capsys: pytest.CaptureFixture[str]) -> None:
    new = _capacity(capsys)
    old = _capacity(capsys, "--vllm-version", "0.15.1")
    graphs = new["cudagraph_estimate_bytes"]["value"]
    assert graphs > 0 and old["cudagraph_estimate_bytes"]["value"] == 0
    assert old["available_kv_bytes"]["value"] == new["available_kv_bytes"]["value"] + graphs
    assert any("0.15.1" in n for n in old["num_gpu_blocks"]["notes"])
    explicit = _capacity(capsys, "--vllm-version", "0.26.0")  # the default is the modelled release
    assert {k: v["value"] for k, v in explicit.items()} == {k: v["value"] for k, v in new.items()}


@pytest.mark.parametrize("version", ["0.4.2", "latest", "1.0.0"])
def test_unmodelled_versions_are_one_clear_line(version: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "h200",
                     "--vllm-version", version]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "vLLM" in err


@pytest.mark.parametrize("hw", ["h100-pcie", "a100-40gb", "b200", "b300", "gb200"])
def test_new_cards_answer_latency_and_capacity(hw: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["predict", "latency", "--model", "llama-3.1-8b", "--hardware", hw, "--json",
                     "--vllm-version", "0.15.1"]) == 0
    assert json.loads(capsys.readouterr().out)["itl_ms"]["value"] > 0
    assert cli.main(["predict", "capacity", "--model", "llama-3.1-8b", "--hardware", hw, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["num_gpu_blocks"]["value"] > 0
