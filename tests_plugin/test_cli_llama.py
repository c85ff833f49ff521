"""`predict capacity|latency --engine llama.cpp`: llama.cpp's ledger and step times from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_anatomy.cli import main
from pytest_anatomy.specs.hardware import HARDWARE as CATALOG
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
    # the host's compute buffer is answered either way: the f32 gather and inp_embd (2 x 896 x 512 x 4 B), an f32
    # mask (4096 x 512 x 4 B), V's indices per element (512 x 128 x 8 B), token ids, positions and K's indices (512 x
    # 16 B) and one output id (32 B aligned): the binding's 12.01 MiB load less its 511 further output ids
    assert out["compute_buffer_host_bytes"]["value"] == 2 * 896 * 512 * 4 + 4096 * 512 * 4 + 512 * 128 * 8 + 512 * 16 + 32


# The cards the project has recorded (results/<card>/): the priors path is asked about them, none named here
RECORDED = sorted(p.name for p in (Path(__file__).resolve().parents[1] / "results").iterdir() if p.name in CATALOG)
LATENCY = ("latency", "--model", "qwen2.5-7b", "--hardware", RECORDED[0], "--engine", "llama.cpp")


def test_latency_answers_and_names_its_priors(capsys, tmp_path):
    """No recordings (an empty --results): the priors and the datasheet, and the notes say so."""
    out = _json(capsys, *LATENCY, "--weights", "F16", "--results", str(tmp_path))
    assert set(out) == {"slot_context_tokens", "itl_ms", "prefill_ms", "throughput_tok_s"}
    assert out["throughput_tok_s"]["value"] == pytest.approx(1e3 / out["itl_ms"]["value"])
    notes = out["itl_ms"]["notes"]
    assert any(n.startswith("kernel constants: prior") for n in notes)
    assert any(n.startswith(f"ceilings: {RECORDED[0]} datasheet") for n in notes)


def _prior_calibration(header, hw: str):
    """The priors path rebuilt from the theory module: datasheet ceilings, prior constants and overhead per layer."""
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.theory import llamacpp_latency as ll

    card = get_hardware(hw)
    quantized = any(ll.decode_kernel(t.ggml_type) == ll.QUANTIZED_DECODE_KERNEL for t in header.tensors)
    per_layer = ll.PRIOR_OVERHEAD_PER_LAYER_S["quantized" if quantized else "F16"]
    return ll.LlamaCalibration(card.require("memory_bandwidth"), card.peak("bf16"), per_layer * header.block_count)


@pytest.mark.parametrize("hw", RECORDED)
def test_latency_with_slots_is_the_theory_on_the_priors(capsys, tmp_path, hw):
    """-c 8192 -np 4: 2,048 cells per slot (split) and the server burst of 4, each the theory function's value."""
    from dataclasses import replace

    from pytest_anatomy.specs.gguf_file import header_from_config
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import gguf_mix
    from pytest_anatomy.theory import llamacpp_latency as ll

    out = _json(capsys, "latency", "--model", "qwen2.5-7b", "--hardware", hw, "--engine", "llama.cpp",
                "--weights", "q4_k_m", "-c", "8192", "-np", "4", "--results", str(tmp_path))
    header = gguf_mix.quantized_header(header_from_config(load_model("qwen2.5-7b")), "Q4_K_M")
    calib = _prior_calibration(header, hw)
    prompt = replace(calib, overhead_s=calib.overhead_s * 2)  # 1024 prompt tokens: two ubatches of 512
    assert out["slot_context_tokens"]["value"] == 2048
    assert out["itl_ms"]["value"] == pytest.approx(ll.decode_time(header, calib, context=1024 + 128).value * 1e3)
    assert out["prefill_ms"]["value"] == pytest.approx(ll.prefill_time(header, prompt, 1024).value * 1e3)
    burst = ll.server_burst(header, calib, 4, 1024, 256, ll.SEED_MARGINAL_ABOVE_FLOOR_S, prompt_calib=prompt)
    assert out["server_throughput_tok_s"]["value"] == pytest.approx(burst["throughput_tok_s"].value)
    assert out["server_itl_ms"]["value"] == pytest.approx(burst["itl_s"].value * 1e3)
    notes = out["server_throughput_tok_s"]["notes"]
    assert any(n.startswith("server marginal: prior") for n in notes)
    assert any("the server marginal is a prior" in n for n in notes)


def test_unified_kv_gives_each_slot_the_whole_context(capsys, tmp_path):
    out = _json(capsys, *LATENCY, "-c", "8192", "-np", "4", "--kv-unified", "--results", str(tmp_path))
    assert out["slot_context_tokens"]["value"] == 8192
    assert "server_throughput_tok_s" in out
    single = _json(capsys, *LATENCY, "-c", "8192", "--results", str(tmp_path))
    assert "server_throughput_tok_s" not in single and single["slot_context_tokens"]["value"] == 8192


def test_latency_text_says_which_constants(capsys, tmp_path):
    assert main(["predict", *LATENCY, "-c", "8192", "-np", "4", "--results", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "-c 8192 -np 4" in text.splitlines()[0]
    assert "server_throughput_tok_s" in text and "- kernel constants: prior" in text


@pytest.mark.parametrize("argv, message", [
    (("-np", "0"), "-np/--parallel 0: n_seq_max must be >= 1"),
    (("-np", "300", "-c", "1000000"), "pass -np 1 to 256"),
    (("-c", "0"), "-c/--ctx-size 0: n_ctx must be >= 1"),
    (("-c", "2048", "-np", "4"), "gives each slot 512 KV cells"),
    (("-c", "4096", "-np", "4", "--kv-unified"), "4 requests of 1024 + 256 tokens need 5,120"),
    (("--weights", "Q9_K"), "not modelled"),
])
def test_bad_latency_input_is_one_line(capsys, tmp_path, argv, message):
    assert main(["predict", *LATENCY, "--results", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (("--weights", "IQ2_XS"), "not modelled"),
    (("-c", "0"), "n_ctx must be >= 1"),
    (("-np", "0"), "n_seq_max must be >= 1"),
    (("-np", "257"), "n_seq_max must be >= 1 and <= 256"),
    (("-ctk", "q9_9"), "unknown llama.cpp KV cache type"),
    (("--gguf", "/no/such.gguf"), "no such GGUF file"),
])
def test_bad_input_is_one_line(capsys, argv, message):
    assert main(["predict", "capacity", "--model", "qwen2.5-0.5b", "--hardware", "h200", "--engine", "llama.cpp",
                 *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def _exit_code(argv: list[str]) -> int:
    """main's return code, or the code of the SystemExit argparse's parser.error raises."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _one_line_error(capsys, argv: list[str], message: str) -> None:
    assert _exit_code(["predict", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("argv, flag", [
    (("capacity", "--tp", "2"), "--tp"),
    (("capacity", "--max-num-seqs", "8", "--enforce-eager"), "--max-num-seqs, --enforce-eager"),
    (("latency", "--batch", "8"), "--batch"),
    (("latency", "--rate", "2"), "--rate"),
])
def test_vllm_options_are_refused_not_ignored(capsys, argv, flag):
    """A vLLM option on a llama.cpp question used to be dropped silently (--batch 8 answered batch 1)."""
    what, *rest = argv
    _one_line_error(capsys, [what, "--model", "qwen2.5-7b", "--hardware", RECORDED[0], "--engine", "llama.cpp", *rest],
                    f"{flag}: vLLM's, not read with --engine llama.cpp")


@pytest.mark.parametrize("argv, flag", [
    (("capacity", "--weights", "Q8_0"), "--weights"),
    (("capacity", "-np", "4", "-ctk", "q8_0"), "--parallel, --cache-type-k"),
    (("latency", "--gguf", "model.gguf"), "--gguf"),
    (("latency", "-c", "8192", "--kv-unified"), "--ctx-size, --kv-unified"),
])
def test_llama_options_on_a_vllm_question_are_refused_not_ignored(capsys, argv, flag):
    """The other way round: a llama.cpp option without --engine llama.cpp was dropped silently (--weights Q8_0
    answered vLLM's bf16 ledger, exit 0)."""
    what, *rest = argv
    _one_line_error(capsys, [what, "--model", "qwen2.5-7b", "--hardware", RECORDED[0], *rest],
                    f"{flag}: llama.cpp's, not read by the vLLM answers (the default --engine); add --engine llama.cpp")


def test_capacity_only_llama_flags_on_latency_are_named(capsys):
    """-ctk q8_0 on a latency question was read as -c "tk" (argparse's prefix of -c): "argument -c/--ctx-size: invalid
    int value: 'tk'". The flags the latency answers do not read are named and refused."""
    _one_line_error(capsys, ["latency", "--model", "qwen2.5-7b", "--hardware", RECORDED[0], "--engine", "llama.cpp",
                             "-ctk", "q8_0", "-ub", "256"],
                    "-ctk/--cache-type-k, -ub/--ubatch-size: read by predict capacity only; the llama.cpp latency "
                    "answers keep llama.cpp's defaults (f16 KV cache, -ub 512, -fa on): drop them")


def _smallest_card() -> str:
    return min(CATALOG.values(), key=lambda h: h.nvml_memory_bytes or h.memory_bytes or 0).name


@pytest.mark.parametrize("what", ["capacity", "latency"])
def test_buffers_above_the_card_are_refused_with_the_c_that_fits(capsys, tmp_path, what):
    card = CATALOG[_smallest_card()]
    memory = card.nvml_memory_bytes or card.memory_bytes
    base = [what, "--model", "qwen2.5-7b", "--hardware", card.name, "--engine", "llama.cpp", "-np", "4",
            *(["--results", str(tmp_path)] if what == "latency" else [])]
    _one_line_error(capsys, [*base, "-c", "100000000"], "or less")
    assert main(["predict", *base, "-c", "100000000"]) == 2
    fits = int(capsys.readouterr().err.split("pass -c ")[1].split()[0])
    out = _json(capsys, "capacity", *base[1:9], "-c", str(fits))
    assert out["kv_buffer_bytes"]["inputs"]["streams"] == 4
    assert out["gpu_buffers_bytes"]["value"] <= memory
    assert _exit_code(["predict", *base, "-c", str(fits + 1)]) == 2
    capsys.readouterr()


def test_weights_that_do_not_fit_name_the_weights(capsys):
    _one_line_error(capsys, ["capacity", "--model", "qwen2.5-72b", "--hardware", _smallest_card(), "--engine",
                             "llama.cpp", "--weights", "F16"], "the weights alone do not fit")


@pytest.mark.parametrize("text, message", [
    ('{"hidden_size": 8', "is not valid JSON"),
    ('{"model_type": "qwen2"}', "is missing"),
    ("[1, 2]", "holds a JSON list"),
])
@pytest.mark.parametrize("what", ["capacity", "latency"])
def test_a_malformed_config_is_one_line(capsys, tmp_path, text, message, what):
    (tmp_path / "config.json").write_text(text)
    results = ["--results", str(tmp_path)] if what == "latency" else []
    _one_line_error(capsys, [what, "--model", str(tmp_path / "config.json"), "--hardware", RECORDED[0], "--engine",
                             "llama.cpp", *results], message)


@pytest.mark.parametrize("what", ["capacity", "latency"])
def test_a_file_that_is_not_gguf_is_one_line(capsys, tmp_path, what):
    (tmp_path / "x.gguf").write_bytes(b"GGUF\x00\x01")
    _one_line_error(capsys, [what, "--model", "qwen2.5-0.5b", "--hardware", RECORDED[0], "--engine", "llama.cpp",
                             "--gguf", str(tmp_path / "x.gguf")], "not a readable GGUF file")


def test_a_zero_ubatch_names_its_flag(capsys):
    _one_line_error(capsys, ["capacity", "--model", "qwen2.5-0.5b", "--hardware", RECORDED[0], "--engine", "llama.cpp",
                             "-ub", "0"], "-ub/--ubatch-size 0")
