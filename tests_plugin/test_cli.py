"""`pytest-anatomy predict capacity`: the planning CLI, its JSON shape and its errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_anatomy.cli import main


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_seed_question_gives_the_seed_pool(capsys) -> None:
    out = _json(capsys, "predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "rtx4090",
                "--available-kv-gib", "6.41", "--max-model-len", "8192", "--json")
    assert out["kv_bytes_per_token"]["value"] == 57344
    # vLLM logged 120,064 tokens for "6.41 GiB"; the log's rounding allows 119,9xx..120,1xx.
    assert out["kv_tokens"]["value"] == pytest.approx(120_064, rel=8e-4)
    assert out["max_concurrency"]["value"] == pytest.approx(14.66, abs=0.02)
    for q in ("kv_bytes_per_token", "num_gpu_blocks", "kv_tokens", "max_concurrency", "weight_bytes"):
        assert set(out[q]) >= {"value", "unit", "formula", "terms"}
    assert out["num_gpu_blocks"]["formula"] == "available_kv_bytes // page_bytes // layers_per_group"


def test_without_available_memory_the_pool_is_explicitly_not_modeled(capsys) -> None:
    out = _json(capsys, "predict", "capacity", "--model", "Qwen/Qwen2.5-7B-Instruct", "--hardware", "h200", "--json")
    assert out["available_kv_bytes"]["value"] is None
    assert "not model" in out["available_kv_bytes"]["not_modeled"]
    assert out["kv_tokens"]["value"] is None
    assert out["requested_memory_bytes"]["value"] == 135_098_892_288  # ceil(150,109,880,320 x 0.9)


def test_config_path_fp8_and_tp(tmp_path, capsys) -> None:
    from pytest_anatomy.specs import catalog

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(dict(catalog.load_config("llama-3.1-70b"))))
    out = _json(capsys, "predict", "capacity", "--model", str(cfg), "--hardware", "h200", "--kv-cache-dtype", "fp8",
                "--tp", "2", "--available-kv-gib", "40", "--json")
    assert out["kv_bytes_per_token"]["value"] == 80 * 4 * 128 * 2 * 1


def test_human_readable_output(capsys) -> None:
    assert main(["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "rtx4090"]) == 0
    text = capsys.readouterr().out
    assert "kv_bytes_per_token" in text and "56 KiB" in text and "not modeled" in text


@pytest.mark.parametrize("argv, message", [
    (["--model", "qwen2.5-8b", "--hardware", "h200"], "qwen2.5-7b"),
    (["--model", "qwen2.5-7b", "--hardware", "h300"], "h200"),
    (["--model", "qwen2.5-7b", "--hardware", "h200", "--kv-cache-dtype", "fp7"], "fp8"),
])
def test_bad_input_is_a_clear_error(argv, message, capsys) -> None:
    assert main(["predict", "capacity", *argv]) == 2
    err = capsys.readouterr().err
    assert "error" in err and message in err


def test_malformed_config_names_the_file(tmp_path, capsys) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 10,')
    assert main(["predict", "capacity", "--model", str(bad), "--hardware", "h200"]) == 2
    assert "config.json" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--gpu-memory-utilization", "1.5"], ["--max-model-len", "0"]])
def test_argument_validation(argv, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "h200", *argv])
    assert "must be" in capsys.readouterr().err


def test_console_script_and_module_entry_points() -> None:
    out = subprocess.run([sys.executable, "-m", "pytest_anatomy", "predict", "capacity", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--available-kv-gib" in out
