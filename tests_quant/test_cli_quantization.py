"""`predict capacity|latency --quantization`: the weights re-priced, the freed bytes in the KV pool, the
decode step's weight stream shrunk; bad input refused in one line."""

from __future__ import annotations

import json

import pytest

from pytest_anatomy.cli import main
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.quant_prereg import CARD

QWEN = ["--model", "qwen2.5-7b", "--hardware", CARD]


def _json(capsys, *argv) -> dict:
    assert main(["predict", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_fp8_frees_a_byte_per_linear_weight_into_the_kv_pool(capsys):
    base, fp8 = _json(capsys, "capacity", *QWEN), _json(capsys, "capacity", *QWEN, "--quantization", "fp8")
    m = load_model("qwen2.5-7b")
    linear = sum(t.numel for t in m.parameter_tensors() if t.linear and len(t.shape) == 2 and t.role != "lm_head")
    freed = linear * 1 - 4 * 4 * m.num_layers  # bf16 -> fp8 saves 1 B per weight; 4 fused modules keep a fp32 scale
    assert base["model_memory_bytes"]["value"] - fp8["model_memory_bytes"]["value"] == freed
    assert fp8["available_kv_bytes"]["value"] - base["available_kv_bytes"]["value"] == freed
    page = 16 * 2 * m.num_kv_heads * m.head_dim * 2  # tokens x (K, V) x heads x dim x bf16, one layer
    assert fp8["num_gpu_blocks"]["value"] == fp8["available_kv_bytes"]["value"] // (page * m.num_layers)
    assert fp8["num_gpu_blocks"]["value"] > base["num_gpu_blocks"]["value"]


def test_a_given_pool_is_not_grown_again(capsys):
    """--available-kv-gib is the quantized engine's own logged pool: the freed bytes are already in it."""
    given = _json(capsys, "capacity", *QWEN, "--quantization", "fp8", "--available-kv-gib", "100")
    plain = _json(capsys, "capacity", *QWEN, "--available-kv-gib", "100")
    assert given["available_kv_bytes"]["value"] == 100 * 2**30
    assert given["num_gpu_blocks"]["value"] == plain["num_gpu_blocks"]["value"]
    assert given["model_memory_bytes"]["value"] < plain["model_memory_bytes"]["value"]


def test_int4_frees_more_than_fp8_and_gptq_pays_for_g_idx(capsys):
    blocks = {q: _json(capsys, "capacity", *QWEN, "--quantization", q)["num_gpu_blocks"]["value"]
              for q in ("fp8", "awq", "gptq")}
    assert blocks["awq"] > blocks["fp8"] and blocks["gptq"] <= blocks["awq"]


def test_decode_step_shrinks_by_the_freed_bytes_at_the_recorded_bandwidth(capsys):
    base = _json(capsys, "latency", *QWEN, "--uncalibrated")
    fp8 = _json(capsys, "latency", *QWEN, "--uncalibrated", "--quantization", "fp8")
    freed = -next(t["value"] for t in fp8["itl_ms"]["terms"] if t["name"].startswith("- weight bytes freed"))
    bw = next(t["value"] for t in fp8["itl_ms"]["terms"] if t["name"] == "bytes / BW")
    m = load_model("qwen2.5-7b")
    linear = sum(t.numel for t in m.parameter_tensors() if t.linear and len(t.shape) == 2 and t.role != "lm_head")
    assert freed == linear - 4 * 4 * m.num_layers and bw > 0
    datasheet = float(get_hardware(CARD).require("memory_bandwidth"))  # --uncalibrated: the datasheet's
    # memory-bound at b=1: the step falls by exactly the freed bytes over the bandwidth (float rounding only)
    assert base["itl_ms"]["value"] - fp8["itl_ms"]["value"] == pytest.approx(freed / datasheet * 1e3, rel=1e-9)
    assert fp8["prefill_ms"]["value"] < base["prefill_ms"]["value"]  # fp8 tensor cores: twice the bf16 peak
    awq = _json(capsys, "latency", *QWEN, "--uncalibrated", "--quantization", "awq")
    assert awq["itl_ms"]["value"] < fp8["itl_ms"]["value"]
    assert set(awq) == {"itl_ms", "prefill_ms"}


def test_a_card_without_fp8_tensor_cores_runs_fp8_weight_only(capsys):
    a100 = ["--model", "qwen2.5-7b", "--hardware", "a100-80gb", "--uncalibrated"]
    base, fp8 = _json(capsys, "latency", *a100), _json(capsys, "latency", *a100, "--quantization", "fp8")
    assert any("no fp8 tensor cores" in n for n in fp8["prefill_ms"]["notes"])
    assert fp8["itl_ms"]["value"] < base["itl_ms"]["value"]


def test_no_reconciled_error_is_claimed_for_a_quantized_answer(capsys):
    fp8 = _json(capsys, "latency", *QWEN, "--quantization", "fp8")
    assert fp8["itl_ms"]["uncertainty"] is None and fp8["prefill_ms"]["uncertainty"] is None


@pytest.mark.parametrize("argv, fragment", [
    (["capacity", *QWEN, "--quantization", "int3"], "unknown method 'int3'; known: fp8, awq, gptq"),
    (["latency", *QWEN, "--quantization", "nf4"], "unknown method 'nf4'; known: fp8, awq, gptq"),
    (["capacity", *QWEN, "--engine", "llama.cpp", "--quantization", "fp8"], "llama.cpp's file types are --weights"),
    (["latency", *QWEN, "--quantization", "fp8", "--rate", "2"], "--rate with --quantization is not modelled"),
    (["capacity", "--model", "smollm2-135m", "--hardware", CARD, "--quantization", "awq"], "in % 128 == 0"),
])
def test_bad_input_is_one_line(argv, fragment, capsys):
    with pytest.raises(SystemExit) if "unknown" in fragment or "--weights" in fragment else _nothing() as info:
        code = main(["predict", *argv])
    if info is not None:
        code = info.value.code
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and err.count("\n") == 1, err


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
