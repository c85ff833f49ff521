"""Capacity theory: the catalog against hand-derived tables, vLLM's integer arithmetic, and
hypothesis properties (monotonicity, units, MLA and GQA special cases)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_anatomy.specs import catalog
from pytest_anatomy.specs.model import ModelSpec, load_model
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.units import GiB, MiB
from test_catalog_kv import EXPECTED_KV_BYTES_PER_TOKEN_BF16


@pytest.mark.parametrize("name", sorted(catalog.catalog_names()))
def test_theory_matches_the_hand_derived_table(name: str) -> None:
    assert cap.kv_bytes_per_token(load_model(name), "bfloat16").value == EXPECTED_KV_BYTES_PER_TOKEN_BF16[name]


def test_every_catalog_model_has_a_hand_derived_value() -> None:
    assert set(catalog.catalog_names()) == set(EXPECTED_KV_BYTES_PER_TOKEN_BF16)


def test_seed_numbers() -> None:
    """Seed claim 1 and 4, by hand: 56 KiB/token, 448 MiB per 8k request, 14.14 GB matmul weights."""
    m = load_model("qwen2.5-7b")
    assert cap.kv_bytes_per_token(m).value == 56 * 1024
    assert cap.kv_bytes_per_token(m).value * 8192 == 448 * MiB
    assert cap.weight_bytes(m, matmul_only=True).value == 7_070_414_848 * 2


def test_fp8_kv_halves_and_per_token_head_adds_scales() -> None:
    m = load_model("llama-3.1-8b")
    bf16 = cap.kv_bytes_per_token(m).value
    assert cap.kv_bytes_per_token(m, "fp8").value == bf16 / 2
    # int8 per token-head: 128 B values + 4 B fp32 scale per head, K and V, 8 heads, 32 layers.
    assert cap.kv_bytes_per_token(m, "int8_per_token_head").value == 32 * 8 * 2 * (128 + 4)


def test_tensor_parallel_shards_then_replicates_kv_heads() -> None:
    m = load_model("llama-3.1-70b")  # 8 KV heads
    per_token = cap.kv_bytes_per_token(m).value
    assert cap.kv_bytes_per_token(m, tp=2).value == per_token / 2
    assert cap.kv_bytes_per_token(m, tp=8).value == per_token / 8
    # 16 ranks > 8 heads: vLLM keeps one (replicated) head per rank, no further saving.
    assert cap.kv_bytes_per_token(m, tp=16).value == per_token / 8


def test_mla_caches_one_latent_per_layer_on_every_rank() -> None:
    m = load_model("deepseek-v2-lite")
    assert cap.kv_bytes_per_token(m).value == 27 * (512 + 64) * 2
    assert cap.kv_bytes_per_token(m, tp=4).value == cap.kv_bytes_per_token(m).value


def test_vllm_block_arithmetic_is_integer_and_exact() -> None:
    m = load_model("qwen2.5-7b")
    page = 16 * 4 * 128 * 2 * 2  # one layer's 16-token page, K and V
    available = 7504 * 28 * page + page * 28 - 1  # one byte short of a 7,505th block
    blocks = cap.vllm_num_gpu_blocks(m, available)
    assert blocks.value == 7504
    assert cap.vllm_kv_tokens(m, 7504).value == 120_064
    assert cap.vllm_max_concurrency(7504, 8192).value == pytest.approx(7504 / 512)
    assert cap.vllm_max_concurrency(7504, 8193).value == pytest.approx(7504 / 513)


def test_requested_memory_is_a_ceiling_of_total() -> None:
    assert cap.requested_memory(150_109_880_320, 0.9).value == 135_098_892_288
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        cap.requested_memory(1, 1.5)


def _dense(layers: int, heads: int, kv_heads: int, head_dim: int, hidden: int = 1024) -> ModelSpec:
    return ModelSpec.from_hf_config({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "head_dim": head_dim, "intermediate_size": 4 * hidden, "vocab_size": 32000,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096,
    })


dense_shapes = st.builds(
    lambda layers, kv, group, head_dim: (layers, kv * group, kv, head_dim),
    st.integers(1, 96), st.integers(1, 16), st.integers(1, 8), st.sampled_from([64, 80, 96, 128, 256]),
)


@settings(max_examples=60, deadline=None)
@given(dense_shapes, st.sampled_from(["bfloat16", "fp8", "int8_per_token_head"]))
def test_kv_bytes_grow_with_layers_and_kv_heads(shape, kv_dtype) -> None:
    layers, heads, kv, hd = shape
    base = cap.kv_bytes_per_token(_dense(layers, heads, kv, hd), kv_dtype).value
    assert cap.kv_bytes_per_token(_dense(layers + 1, heads, kv, hd), kv_dtype).value > base
    assert cap.kv_bytes_per_token(_dense(layers, heads * 2, kv * 2, hd), kv_dtype).value == 2 * base


@settings(max_examples=60, deadline=None)
@given(dense_shapes)
def test_gqa_saves_exactly_the_group_factor(shape) -> None:
    layers, heads, kv, hd = shape
    mha = cap.kv_bytes_per_token(_dense(layers, heads, heads, hd)).value
    gqa = cap.kv_bytes_per_token(_dense(layers, heads, kv, hd)).value
    assert mha == gqa * (heads // kv)


@settings(max_examples=60, deadline=None)
@given(dense_shapes, st.floats(0.5, 200.0), st.sampled_from([8, 16, 32]), st.integers(256, 131072))
def test_pool_is_monotone_in_memory_and_fits_in_it(shape, gib, block, max_len) -> None:
    layers, heads, kv, hd = shape
    m = _dense(layers, heads, kv, hd)
    available = gib * GiB
    blocks = int(cap.vllm_num_gpu_blocks(m, available, block).value)
    more = int(cap.vllm_num_gpu_blocks(m, available * 1.5, block).value)
    assert more >= blocks
    # units: the pool never exceeds the memory it was carved from, and misses it by < 1 block-row
    pool_bytes = blocks * block * cap.kv_bytes_per_token(m).value
    assert pool_bytes <= available < pool_bytes + block * cap.kv_bytes_per_token(m).value
    tokens = cap.vllm_kv_tokens(m, blocks, block).value
    conc = cap.vllm_max_concurrency(blocks, max_len, block).value
    assert conc * max_len <= tokens + block * conc  # a request holds whole blocks
    longer = cap.vllm_max_concurrency(blocks, max_len * 2, block).value
    assert longer <= conc
