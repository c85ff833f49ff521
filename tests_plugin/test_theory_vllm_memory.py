"""The vLLM memory-ledger theory on CPU: allocator rules, load replay, settings resolution,
activation peak, tensor parallelism, and the ledger's identities (no recordings involved)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_anatomy.specs import catalog
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.torch_allocator import CachingAllocatorModel, MiB, round_size, segment_size
from pytest_anatomy.theory.vllm_activation import CUBLAS_WORKSPACE_DEFAULT, CUBLASLT_WORKSPACE, peak_activation
from pytest_anatomy.theory.vllm_load import DEEPGEMM_WORKSPACE, rank_shapes, replay_load
from pytest_anatomy.theory.vllm_memory import (
    LEDGER_TERMS,
    num_gpu_blocks_min_over_ranks,
    predict_ledger,
)
from pytest_anatomy.theory.vllm_settings import LedgerSettings, default_capture_sizes, resolve

H200 = get_hardware("h200")
DENSE = ("qwen2.5-0.5b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "llama-3.1-8b", "mistral-7b-v0.3")
FAST = settings(max_examples=25, deadline=None)


def _rs(**kw):
    return resolve(H200, LedgerSettings(**kw))


# --- the caching-allocator model ---------------------------------------------------------------
def test_rounding_and_segment_sizes() -> None:
    assert (round_size(1), round_size(512), round_size(513)) == (512, 512, 1024)
    assert segment_size(MiB) == 2 * MiB  # small pool
    assert segment_size(5 * MiB) == 20 * MiB  # 1 MiB < request < 10 MiB: a 20 MiB segment to split
    assert segment_size(31 * MiB + MiB // 2) == 32 * MiB  # >= 10 MiB: rounded up to 2 MiB


def test_whole_block_when_the_remainder_is_at_most_1_mib() -> None:
    a = CachingAllocatorModel()
    a.malloc(31 * MiB + MiB // 2)  # 0.5 MiB remainder: not split
    assert a.allocated == 32 * MiB
    b = CachingAllocatorModel()
    b.malloc(24 * MiB + MiB // 2)  # 1.5 MiB remainder: split
    assert b.allocated == 24 * MiB + MiB // 2


def test_max_split_size_makes_large_blocks_whole_and_reuses_oversize_blocks() -> None:
    a = CachingAllocatorModel(max_split_size=20 * MiB)
    a.malloc(24 * MiB + MiB // 2)
    assert a.allocated == 26 * MiB  # >= max_split_size: never split
    temp = a.malloc(32 * MiB)
    a.free(temp)
    a.malloc(24 * MiB + MiB // 2)  # the freed 32 MiB block is < request + 20 MiB: handed out whole
    assert a.allocated == 26 * MiB + 32 * MiB and a.reserved == 58 * MiB
    a.malloc(12 * MiB)  # below max_split_size: refuses nothing here, new segment
    assert a.reserved == 58 * MiB + 12 * MiB


def test_free_merges_neighbours() -> None:
    a = CachingAllocatorModel()
    x, y = a.malloc(5 * MiB), a.malloc(5 * MiB)
    assert a.reserved == 20 * MiB  # both from one 20 MiB segment
    a.free(x)
    a.free(y)
    a.malloc(15 * MiB)  # fits only in the merged 20 MiB block
    assert a.reserved == 20 * MiB and a.allocated == 15 * MiB
    assert a.malloc(0) is None
    z = a.malloc(512)
    a.free(z)
    with pytest.raises(ValueError, match="double free"):
        a.free(z)


@FAST
@given(st.lists(st.integers(min_value=1, max_value=64 * MiB), min_size=1, max_size=40), st.booleans())
def test_allocator_handout_bounds(sizes, scoped) -> None:
    limit = 20 * MiB if scoped else 1 << 62
    a = CachingAllocatorModel(max_split_size=limit)
    blocks = []
    for i, n in enumerate(sizes):
        blk = a.malloc(n)
        r = round_size(n)
        slack = 512 if r <= MiB else (20 * MiB if r >= limit else 2 * MiB)
        assert r <= blk.size < r + slack
        blocks.append(blk)
        if i % 3 == 2:
            a.free(blocks.pop(0))
    for blk in blocks:
        a.free(blk)
    assert a.allocated == 0 and a.peak >= max(round_size(n) for n in sizes)


# --- weights as loaded ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", DENSE)
def test_load_replay_decomposes_into_parameters_rope_scales_and_rounding(name) -> None:
    model = load_model(name)
    r = replay_load(model)
    assert r.parameter_bytes == model.num_parameters() * 2  # every catalog vocab is a multiple of 64
    assert r.rope_cache_bytes == model.max_position_embeddings * model.head_dim * 2
    assert r.scale_buffer_bytes == 16 * model.num_layers
    assert 0 <= r.allocator_overhead < 2 * MiB * (4 * model.num_layers + 2) + 20 * MiB


def test_mistral_shapes_need_no_rounding() -> None:
    # every Mistral-7B tensor is a multiple of 2 MiB and its rope temporaries (8-16 MiB) fit no later
    # tensor, so weights as loaded = parameters + rope cache + 512 B blocks of the scale buffers
    r = replay_load(load_model("mistral-7b-v0.3"))
    assert r.allocated == r.parameter_bytes + r.rope_cache_bytes + 512 * 4 * 32


def test_fp8_kv_adds_deepgemm_workspace_on_hopper_only() -> None:
    model = load_model("mistral-7b-v0.3")
    bf16 = predict_ledger(model, H200, {"enforce_eager": True})["model_memory_bytes"].value
    fp8 = predict_ledger(model, H200, {"enforce_eager": True, "kv_cache_dtype": "fp8"})["model_memory_bytes"].value
    a100 = get_hardware("a100-80gb")
    fp8_a100 = predict_ledger(model, a100, {"enforce_eager": True, "kv_cache_dtype": "fp8"})["model_memory_bytes"]
    assert fp8 - bf16 == DEEPGEMM_WORKSPACE
    assert fp8_a100.value == bf16


def test_tensor_parallel_shards_and_replicates() -> None:
    model = load_model("llama-3.1-70b")
    total = replay_load(model).parameter_bytes
    for tp in (2, 4, 8):
        per_rank = replay_load(model, tp=tp, rank=tp - 1).parameter_bytes
        norms = (2 * model.num_layers + 1) * model.hidden_size * 2
        assert per_rank * tp == total + (tp - 1) * norms  # only the norms are replicated
    s = rank_shapes(model, 16)  # 8 KV heads over 16 ranks: one replicated head per rank
    assert s.kv_heads == 1 and s.qkv_out == (64 // 16 + 2) * model.head_dim
    with pytest.raises(ValueError, match="not divisible"):
        rank_shapes(load_model("qwen2.5-7b"), 8)  # 28 heads
    with pytest.raises(ValueError, match="rank 2"):
        replay_load(model, tp=2, rank=2)


def test_tp_ledger_uses_kv_heads_per_rank_and_the_minimum_over_ranks() -> None:
    model = load_model("llama-3.1-70b")
    out = predict_ledger(model, H200, {"tensor_parallel_size": 2, "max_model_len": 8192})
    avail = out["available_kv_bytes"].value
    page = cap.vllm_page_bytes(model, 16, "auto", tp=2).value
    assert page == 16 * 4 * 128 * 2 * 2  # 4 of 8 KV heads per rank
    assert out["num_gpu_blocks"].value == avail // page // model.num_layers
    assert out["num_gpu_blocks"].inputs["per_rank_blocks"] == [out["num_gpu_blocks"].value] * 2
    mixed = num_gpu_blocks_min_over_ranks(model, [avail, avail - 10 * page * 80], 16, "auto", 2)
    assert mixed.value == out["num_gpu_blocks"].value - 10 and mixed.inputs["min_rank"] == 1
    with pytest.raises(ValueError, match="one available-KV figure per rank"):
        num_gpu_blocks_min_over_ranks(model, [avail], 16, "auto", 2)


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v2-lite", "gemma-2-9b", "qwen3-30b-a3b"])
def test_unmodelled_architectures_say_so(name) -> None:
    with pytest.raises(cap.NotModeled, match="available KV|sliding|not modelled|modelled"):
        predict_ledger(load_model(name), H200, {})


# --- settings resolution ---------------------------------------------------------------------------
@pytest.mark.parametrize(("hw", "context", "expected"), [
    ("h200", "llm_class", (16384, 1024)), ("h100-sxm", "openai_api_server", (8192, 1024)),
    ("a100-80gb", "llm_class", (8192, 256)), ("rtx4090", "openai_api_server", (2048, 256)),
])
def test_vllm_batch_defaults_by_gpu_class_and_context(hw, context, expected) -> None:
    rs = resolve(get_hardware(hw), LedgerSettings(usage_context=context))
    assert (rs.max_num_batched_tokens, rs.max_num_seqs) == expected
    assert "vLLM default" in rs.sources["max_num_batched_tokens"]


def test_default_caps_and_refusals() -> None:
    assert _rs(max_model_len=8).max_num_batched_tokens == 1024 * 8  # min(seqs x len, 16384)
    assert _rs(max_num_batched_tokens=512).max_num_seqs == 512  # a defaulted seqs never exceeds tokens
    with pytest.raises(ValueError, match="max_num_seqs"):
        _rs(max_num_batched_tokens=256, max_num_seqs=512)
    with pytest.raises(ValueError, match="unknown vLLM setting"):
        LedgerSettings.from_mapping({"gpu_memory_utilisation": 0.9})
    assert LedgerSettings.from_mapping({"seed": 3, "enable_prefix_caching": False}) == LedgerSettings()


def test_capture_sizes() -> None:
    sizes = default_capture_sizes(1024, 16384)
    assert len(sizes) == 51 and sizes[:4] == (1, 2, 4, 8) and sizes[-1] == 512
    assert default_capture_sizes(128, 16384)[-1] == 256 and len(default_capture_sizes(128, 16384)) == 35
    assert default_capture_sizes(1024, 100)[-1] == 100  # the token budget is captured when it fits
    assert _rs(enforce_eager=True).cudagraph_capture_sizes == ()


# --- activation peak ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", DENSE)
@pytest.mark.parametrize("eager", [True, False])
def test_forward_peak_is_linear_in_batched_tokens(name, eager) -> None:
    model = load_model(name)
    lo = peak_activation(model, H200, _rs(max_num_batched_tokens=16384, enforce_eager=eager)).value
    hi = peak_activation(model, H200, _rs(max_num_batched_tokens=32768, enforce_eager=eager)).value
    held = model.model_type == "qwen2" and eager
    width = 3 * model.intermediate_size + (4 if held else 3) * model.hidden_size
    assert hi - lo == 16384 * width * 2


@FAST
@given(st.sampled_from(DENSE), st.integers(min_value=1024, max_value=65536), st.integers(min_value=1, max_value=1024),
       st.sampled_from(["v1", "v2"]))
def test_peak_is_monotone_in_tokens_and_seqs(name, tokens, seqs, runner) -> None:
    model = load_model(name)
    seqs = min(seqs, tokens)
    base = peak_activation(model, H200, _rs(max_num_batched_tokens=tokens, max_num_seqs=seqs, model_runner=runner))
    more_tokens = peak_activation(model, H200, _rs(max_num_batched_tokens=tokens + 512, max_num_seqs=seqs,
                                                   model_runner=runner))
    more_seqs = peak_activation(model, H200, _rs(max_num_batched_tokens=tokens, max_num_seqs=min(seqs + 64, tokens),
                                                 model_runner=runner))
    assert more_tokens.value > base.value and more_seqs.value >= base.value


@FAST
@given(st.integers(min_value=32_000, max_value=1_000_000), st.integers(min_value=1000, max_value=60_000))
def test_peak_is_monotone_in_vocab_and_intermediate(vocab, inter) -> None:
    raw = catalog.load_config("qwen2.5-0.5b")
    rs = _rs(max_num_batched_tokens=2048, max_num_seqs=1024)

    def peak(v: int, i: int) -> float:
        model = load_model({**raw, "vocab_size": v, "intermediate_size": i}, name="probe")
        return peak_activation(model, H200, rs).value

    assert peak(vocab + 64, inter) >= peak(vocab, inter)
    assert peak(vocab, inter + 64) >= peak(vocab, inter)


def test_sampler_dominates_small_token_budgets_and_workspaces_follow_the_gpu() -> None:
    model = load_model("qwen2.5-0.5b")  # vocab 151,936 vs MLP width 18,176: logits win at R/N > 0.12
    p = peak_activation(model, H200, _rs(max_num_batched_tokens=2048, max_num_seqs=1024))
    assert p.terms[0].name == "peak phase: sampler"
    a100 = peak_activation(model, get_hardware("a100-80gb"), resolve(get_hardware("a100-80gb"), LedgerSettings()))
    assert a100.terms[1].value == CUBLAS_WORKSPACE_DEFAULT
    assert p.terms[2].value == CUBLASLT_WORKSPACE  # Qwen's biased QKV runs on cuBLASLt
    llama = peak_activation(load_model("llama-3.1-8b"), H200, _rs())
    assert llama.terms[2].value == 0


# --- the ledger ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", DENSE)
@pytest.mark.parametrize("runner", ["v1", "v2"])
def test_available_is_requested_minus_terms(name, runner) -> None:
    out = predict_ledger(load_model(name), H200, {"model_runner": runner})
    terms = sum(out[t].value for t in LEDGER_TERMS)
    assert out["available_kv_bytes"].value == out["requested_memory_bytes"].value - terms
    assert (out["cudagraph_estimate_bytes"].value > 0) == (runner == "v1")
    tokens = out["kv_tokens"].value
    assert tokens == out["num_gpu_blocks"].value * 16


@FAST
@given(st.sampled_from(DENSE), st.floats(min_value=0.5, max_value=0.95))
def test_blocks_grow_with_utilization(name, util) -> None:
    model = load_model(name)
    lo = predict_ledger(model, H200, {"gpu_memory_utilization": util})["num_gpu_blocks"].value
    hi = predict_ledger(model, H200, {"gpu_memory_utilization": min(util + 0.04, 1.0)})["num_gpu_blocks"].value
    assert hi > lo


def test_pinned_kv_memory_skips_the_ledger() -> None:
    out = predict_ledger(load_model("llama-3.1-8b"), H200, {"kv_cache_memory_bytes": 40 * 2**30})
    assert out["available_kv_bytes"].value == 40 * 2**30
    assert out["num_gpu_blocks"].value == 40 * 2**30 // (16 * 8 * 128 * 2 * 2) // 32


def test_settings_are_explicit_in_the_answer() -> None:
    out = predict_ledger(load_model("qwen2.5-7b"), H200, LedgerSettings(max_num_seqs=128))
    assert out["max_num_seqs"].value == 128 and out["max_num_seqs"].formula == "given"
    assert "vLLM default 16384" in out["max_num_batched_tokens"].formula
    fields = {f.name for f in dataclasses.fields(LedgerSettings)}
    assert {"max_num_seqs", "max_num_batched_tokens", "enforce_eager", "block_size", "model_runner"} <= fields
