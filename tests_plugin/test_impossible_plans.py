"""A plan that cannot run is refused with its arithmetic and what would fit; every suggested
alternative is itself answered; a degenerate plan is answered with a warning."""

from __future__ import annotations

import json

import pytest

from pytest_anatomy.cli import main
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import feasibility
from pytest_anatomy.theory.planning import capacity


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["predict", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "", out
    assert err.startswith("pytest-anatomy: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_a_72b_model_on_a_24_gib_card_is_refused_with_the_arithmetic(capsys) -> None:
    err = _refused(capsys, "capacity", "--model", "qwen2.5-72b", "--hardware", "rtx4090")
    a = capacity(load_model("qwen2.5-72b"), get_hardware("rtx4090"))
    weights, budget = a["model_memory_bytes"].value / 2**30, a["requested_memory_bytes"].value / 2**30
    assert f"qwen2.5-72b: weights {weights:.1f} GiB > budget {budget:.1f} GiB on rtx4090" in err
    assert "fits with tensor parallel 8 on 8 cards, or 4-bit weights (~39 GiB) on 4 cards" in err


def test_what_would_fit_does_fit_and_the_next_smaller_layout_does_not(capsys) -> None:
    """The suggestion is the smallest tensor-parallel size the ledger accepts."""
    code, out, err = _run(capsys, "capacity", "--model", "qwen2.5-72b", "--hardware", "rtx4090", "--tp", "8", "--json")
    assert code == 0 and err == ""
    assert json.loads(out)["num_gpu_blocks"]["value"] >= 8192 // 16
    _refused(capsys, "capacity", "--model", "qwen2.5-72b", "--hardware", "rtx4090", "--tp", "4")


@pytest.mark.parametrize("model", ["qwen2.5-72b", "llama-3.1-70b"])
def test_a_70b_class_model_on_one_h200_is_refused(capsys, model: str) -> None:
    err = _refused(capsys, "capacity", "--model", model, "--hardware", "h200")
    assert "> budget 125.8 GiB on h200" in err and "tensor parallel 2 on 2 cards" in err
    assert _run(capsys, "capacity", "--model", model, "--hardware", "h200", "--tp", "2")[0] == 0


def test_a_tiny_memory_utilization_is_refused_with_the_lowest_that_fits(capsys) -> None:
    err = _refused(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", "h200",
                   "--gpu-memory-utilization", "0.01")
    assert "weights 14.3 GiB > budget 1.4 GiB on h200 (--gpu-memory-utilization 0.01)" in err
    assert err.rstrip().endswith("fits with --gpu-memory-utilization 0.13")
    code, _, warned = _run(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", "h200",
                           "--gpu-memory-utilization", "0.13")
    assert code == 0 and warned == ""
    code, _, warned = _run(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", "h200",
                           "--gpu-memory-utilization", "0.12")
    assert code == 2 or "fewer than one request" in warned


def test_an_enormous_token_budget_is_refused_naming_the_activation(capsys) -> None:
    err = _refused(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", "h200",
                   "--max-num-batched-tokens", "100000000")
    assert "weights 14.3 GiB + activation 12,588.6 GiB + non-torch 230 MiB = 12,603.1 GiB > budget 125.8 GiB" in err
    assert "fits with vLLM's default --max-num-batched-tokens (16,384)" in err


def test_an_unmodelled_architecture_is_still_refused_when_its_weights_alone_do_not_fit(capsys) -> None:
    err = _refused(capsys, "capacity", "--model", "mixtral-8x7b", "--hardware", "rtx4090")
    assert "mixtral-8x7b: weights 87.0 GiB > budget 21.6 GiB on rtx4090" in err


def test_a_pool_smaller_than_one_request_answers_with_a_warning_in_notes_and_on_stderr(capsys) -> None:
    code, out, err = _run(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", "rtx4090",
                          "--max-model-len", "131072", "--json")
    assert code == 0
    answers = json.loads(out)
    tokens = answers["kv_tokens"]["value"]
    assert 0 < tokens < 131072
    assert err.startswith("pytest-anatomy: warning: the KV pool holds") and f"--max-model-len {tokens} or less" in err
    assert any("fewer than one request" in n for n in answers["max_concurrency"]["notes"])


def test_given_available_memory_below_one_block_is_refused(capsys) -> None:
    err = _refused(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", "h200", "--available-kv-gib", "0.0001")
    assert "holds 0 KV blocks" in err


@pytest.mark.parametrize("model, field", [
    ("mixtral-8x7b", "num_key_value_heads 8"), ("gemma-2-9b", "num_key_value_heads 8"),
    ("qwen3-30b-a3b", "num_key_value_heads 4"), ("deepseek-v2-lite", "num_attention_heads 16"),
    ("qwen2.5-7b", "num_key_value_heads 4"),
])
def test_tensor_parallel_divisibility_is_checked_for_every_architecture(capsys, model: str, field: str) -> None:
    err = _refused(capsys, "capacity", "--model", model, "--hardware", "h200", "--tp", "3")
    assert f"{model}: --tp 3 does not divide {field}; vLLM refuses this split. Use --tp 1, 2, 4" in err


def test_every_listed_tensor_parallel_size_is_accepted() -> None:
    for name in ("mixtral-8x7b", "gemma-2-9b", "qwen3-30b-a3b", "deepseek-v2-lite", "qwen2.5-7b", "smollm2-135m"):
        model = load_model(name)
        for tp in feasibility.valid_tensor_parallel_sizes(model, 8):
            feasibility.check_tensor_parallel(model, tp)
        # the dense ledger's own load replay agrees on what it can split
        if name in ("qwen2.5-7b", "smollm2-135m"):
            from pytest_anatomy.theory.vllm_load import rank_shapes

            for tp in range(1, 9):
                ok = feasibility.tensor_parallel_problem(model, tp) is None
                try:
                    rank_shapes(model, tp)
                    assert ok, (name, tp)
                except ValueError:
                    assert not ok, (name, tp)


@pytest.mark.parametrize("what", ["capacity", "latency"])
@pytest.mark.parametrize("length", ["65536", "1000000000"])
def test_max_model_len_is_checked_against_the_model(capsys, what: str, length: str) -> None:
    err = _refused(capsys, what, "--model", "smollm2-135m", "--hardware", "h200", "--max-model-len", length)
    assert "exceeds the model's maximum of 8,192 tokens" in err and "Use --max-model-len 8192 or less" in err


def test_rope_scaled_maximum_follows_vllm() -> None:
    assert feasibility.model_max_len(load_model("llama-3.1-8b")) == 131072  # llama3: already the extended length
    assert feasibility.model_max_len(load_model("deepseek-v2-lite")) == 4096 * 40  # yarn: original x factor
    qwen = load_model("qwen2.5-7b")
    linear = {**qwen.raw, "rope_scaling": {"type": "linear", "factor": 4.0}}
    assert feasibility.model_max_len(load_model(linear)) == 4 * qwen.max_position_embeddings


def test_latency_of_a_model_that_does_not_fit_is_refused(capsys) -> None:
    err = _refused(capsys, "latency", "--model", "qwen2.5-72b", "--hardware", "rtx4090")
    assert "qwen2.5-72b: weights 135.5 GiB > budget 21.6 GiB on rtx4090" in err


def test_latency_batch_above_max_num_seqs_is_answered_with_a_warning(capsys) -> None:
    code, out, err = _run(capsys, "latency", "--model", "qwen2.5-7b", "--hardware", "h200",
                          "--batch", "100000", "--json")
    assert code == 0
    assert "warning: --batch 100,000 is above max_num_seqs 1,024" in err
    assert any("above max_num_seqs" in n for n in json.loads(out)["itl_ms"]["notes"])


def test_latency_request_longer_than_max_model_len_is_refused(capsys) -> None:
    err = _refused(capsys, "latency", "--model", "qwen2.5-7b", "--hardware", "h200", "--input-len", "10000000")
    assert "--input-len 10,000,000 + --output-len 256 exceeds --max-model-len 8,192" in err


def test_an_nvfp4_kv_cache_is_refused_off_sm100_and_answered_on_it(capsys) -> None:
    """vLLM 0.26 runs an nvfp4 KV cache on the SM100 trtllm-gen path only; cards picked from the catalog by their
    compute capability, one of each side."""
    from pytest_anatomy.specs.hardware import HARDWARE

    off = sorted(n for n, h in HARDWARE.items() if h.compute_capability and h.compute_capability[0] != 10)[0]
    on = sorted(n for n, h in HARDWARE.items() if h.compute_capability and h.compute_capability[0] == 10)[0]
    err = _refused(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", off, "--kv-cache-dtype", "nvfp4")
    assert f"--kv-cache-dtype nvfp4 on {off} (sm_" in err and "use fp8 on this card" in err
    code, out, err = _run(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", on, "--kv-cache-dtype", "nvfp4",
                          "--json")
    assert code == 0 and json.loads(out)["kv_tokens"]["value"] > 0


def test_drafts_no_step_can_verify_are_refused_and_a_batch_of_them_above_the_budget_warned(capsys) -> None:
    """vLLM trims each request's drafts to the step's token budget: k + 1 above it is never verified (refused),
    B x (k + 1) above it is trimmed for the later requests (warned); at the budget itself it is answered quietly."""
    from pytest_anatomy.specs.hardware import HARDWARE

    card = sorted(HARDWARE)[0]  # any card Qwen2.5-7B fits: the budget is the test's own, not the card's
    base = ("latency", "--model", "qwen2.5-7b", "--hardware", card, "--input-len", "1024", "--output-len", "128",
            "--max-num-batched-tokens", "2048")
    err = _refused(capsys, *base, "--batch", "1", "--speculative", "ngram:k=100000")
    assert "k + 1 = 100,001 tokens) exceeds max_num_batched_tokens 2,048" in err and "k <= 2,047" in err
    code, out, err = _run(capsys, *base, "--batch", "16", "--speculative", "ngram:k=128", "--json")
    assert code == 0 and "warning: --batch 16 x (k + 1) = 2,064 verify tokens exceed max_num_batched_tokens" in err
    code, out, err = _run(capsys, *base, "--batch", "16", "--speculative", "ngram:k=127", "--json")
    assert code == 0 and err == "" and "spec_verify_step_ms" in json.loads(out)


@pytest.mark.parametrize("argv", [
    ["latency", "--rate", "inf"], ["latency", "--rate", "nan"], ["latency", "--bandwidth-gbs", "inf"],
    ["latency", "--peak-tflops", "nan"], ["latency", "--step-overhead-ms", "inf"],
    ["latency", "--compute-efficiency", "nan"], ["latency", "--gpu-memory-utilization", "1.5"],
    ["capacity", "--available-kv-gib", "inf"], ["capacity", "--gpu-memory-utilization", "nan"],
    ["capacity", "--max-model-len", "1e8"],
])
def test_non_finite_and_out_of_range_numbers_get_one_line(capsys, argv: list[str]) -> None:
    what, *rest = argv
    with pytest.raises(SystemExit) as exit_:
        main(["predict", what, "--model", "qwen2.5-7b", "--hardware", "h200", *rest])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {rest[0]}" in err and "--help" in err


def test_a_simulation_too_large_to_finish_is_refused_before_it_starts(capsys) -> None:
    err = _refused(capsys, "latency", "--model", "llama-3.1-8b", "--hardware", "h200", "--rate", "100",
                   "--requests", "100000", "--input-len", "100", "--output-len", "16000", "--max-model-len", "16384")
    assert "above the bound of 100,000,000" in err and "lower --requests" in err


@pytest.mark.parametrize("option, value", [("--bandwidth-gbs", "0.001"), ("--peak-tflops", "1e-9"),
                                           ("--compute-efficiency", "80")])
def test_ceilings_far_below_any_gpu_are_refused_as_unit_mistakes(capsys, option: str, value: str) -> None:
    with pytest.raises(SystemExit):
        main(["predict", "latency", "--model", "qwen2.5-7b", "--hardware", "h200", option, value])
    assert f"argument {option}" in capsys.readouterr().err


def test_a_block_larger_than_the_pool_is_refused_with_the_block_size_that_fits(capsys) -> None:
    err = _refused(capsys, "capacity", "--model", "qwen2.5-7b", "--hardware", "h200", "--block-size", "100000000")
    assert "less than one KV block (5,340.6 GiB at --block-size 100000000)" in err
    assert err.rstrip().endswith("fits with vLLM's default --block-size (16)")


@pytest.mark.parametrize("option", ["--model", "--hardware"])
def test_an_empty_name_is_refused_rather_than_read_as_the_current_folder(capsys, option: str) -> None:
    argv = {"--model": "qwen2.5-7b", "--hardware": "h200"}
    argv[option] = " "
    with pytest.raises(SystemExit):
        main(["predict", "capacity", *[x for kv in argv.items() for x in kv]])
    assert f"argument {option}: must not be empty" in capsys.readouterr().err


def test_an_unmodelled_architecture_whose_weights_and_one_request_exceed_the_budget_is_warned(capsys) -> None:
    code, out, err = _run(capsys, "capacity", "--model", "mixtral-8x7b", "--hardware", "h200",
                          "--gpu-memory-utilization", "0.64", "--max-model-len", "32768", "--json")
    assert code == 0
    assert "weights 87.0 GiB + one --max-model-len 32,768 request's KV 4.0 GiB = 91.0 GiB exceed the budget" in err
    assert any("vLLM would refuse to start" in n for n in json.loads(out)["kv_bytes_per_request"]["notes"])


def test_what_fits_is_qualified_where_the_ledger_is_not_modelled(capsys) -> None:
    err = _refused(capsys, "capacity", "--model", "mixtral-8x7b", "--hardware", "rtx4090")
    assert err.rstrip().endswith("(weights and one request's KV; the rest of the ledger is not modelled for this "
                                 "architecture)")
