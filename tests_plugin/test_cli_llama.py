"""`predict capacity|latency --engine llama.cpp`: llama.cpp's ledger and step times from the CLI."""

from __future__ import annotations

import json

import pytest

from pytest_anatomy.cli import main
from pytest_anatomy.units import MiB


def _json(capsys, *argv: str) -> dict:
    assert main(["predict", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_capacity_of_the_seed_server(capsys):
    """The seed's llama-server (-c 262144 -np 64 -ub 512, Q4_K_M): KV 14,336 MiB, compute 304 MiB."""
    out = _json(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", "rtx4090", "--engine", "llama.cpp",
                "--weights", "q4_k_m", "-c", "262144", "-np", "64")
    assert out["kv_buffer_bytes"]["value"] == 14336 * MiB
    assert out["compute_buffer_gpu_bytes"]["value"] == 512 * (152064 + 3584) * 4
    assert out["output_buffer_host_bytes"]["value"] == 152064 * 64 * 4
    assert out["gguf_tensor_bytes"]["value"] == 4_677_120_000
    assert out["gpu_buffers_bytes"]["value"] == sum(out[k]["value"] for k in (
        "model_buffer_gpu_bytes", "kv_buffer_bytes", "compute_buffer_gpu_bytes"))


def test_capacity_without_flash_attention_says_not_modeled(capsys):
    out = _json(capsys, "capacity", "--model", "qwen2.5-0.5b", "--hardware", "h200", "--engine", "llama.cpp",
                "-fa", "off")
    assert "flash attention" in out["compute_buffer_gpu_bytes"]["not_modeled"]
    assert out["kv_buffer_bytes"]["value"] == 48 * MiB


def test_latency_answers_and_names_its_priors(capsys):
    out = _json(capsys, "latency", "--model", "qwen2.5-7b", "--hardware", "h200", "--engine", "llama.cpp",
                "--weights", "F16")
    assert set(out) == {"itl_ms", "prefill_ms", "throughput_tok_s"}
    assert out["throughput_tok_s"]["value"] == pytest.approx(1e3 / out["itl_ms"]["value"])
    assert any("priors" in n for n in out["itl_ms"]["notes"])


@pytest.mark.parametrize("argv, message", [
    (("--weights", "IQ2_XS"), "not modelled"),
    (("-c", "0"), "n_ctx must be >= 1"),
    (("-ctk", "q9_9"), "unknown llama.cpp KV cache type"),
    (("--gguf", "/no/such.gguf"), "no such GGUF file"),
])
def test_bad_input_is_one_line(capsys, argv, message):
    assert main(["predict", "capacity", "--model", "qwen2.5-0.5b", "--hardware", "h200", "--engine", "llama.cpp",
                 *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
