"""ModelSpec: parsing of every config feature, every error, HF-id resolution, and parameter
counts against the numbers model publishers state."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_anatomy.specs import catalog
from pytest_anatomy.specs.model import (
    LayerAttention,
    ModelConfigError,
    ModelSpec,
    ParamTensor,
    load_model,
)

ROLES = {"embedding", "lm_head", "attention", "mlp", "expert", "router", "shared_expert", "norm", "mla"}


def config(name: str, **changes: Any) -> dict[str, Any]:
    """A catalog config with some keys changed; a value of `...` deletes the key."""
    cfg = catalog.load_config(name)
    for key, value in changes.items():
        if value is ...:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    return cfg


def tensors(spec: ModelSpec) -> dict[str, ParamTensor]:
    return {t.name: t for t in spec.parameter_tensors()}


# ---- parsing ----------------------------------------------------------------------------------

def test_qwen25_7b_fields() -> None:
    m = load_model("qwen2.5-7b")
    assert (m.name, m.architecture, m.model_type) == ("qwen2.5-7b", "Qwen2ForCausalLM", "qwen2")
    assert (m.hidden_size, m.num_layers, m.num_attention_heads, m.num_kv_heads) == (3584, 28, 28, 4)
    assert (m.head_dim, m.v_head_dim, m.intermediate_size, m.vocab_size) == (128, 128, 18944, 152064)
    assert m.attention == "gqa" and not m.tie_word_embeddings and m.dtype == "bfloat16"
    assert (m.q_size, m.kv_size, m.dtype_bytes) == (3584, 512, 2)
    assert not m.is_moe and not m.is_mla


def test_missing_kv_heads_means_mha() -> None:
    m = ModelSpec.from_hf_config(config("qwen2.5-7b", num_key_value_heads=...))
    assert m.num_kv_heads == 28 and m.attention == "mha" and m.kv_size == 3584


def test_single_kv_head_is_mqa() -> None:
    assert ModelSpec.from_hf_config(config("qwen2.5-7b", num_key_value_heads=1)).attention == "mqa"


def test_explicit_head_dim_wins_over_hidden_over_heads() -> None:
    m = load_model("gemma-2-9b")
    assert m.hidden_size // m.num_attention_heads == 224
    assert m.head_dim == 256 and m.q_size == 4096
    assert tensors(m)["model.layers.0.self_attn.o_proj.weight"].shape == (3584, 4096)


def test_tied_embeddings_have_no_lm_head_tensor() -> None:
    m = load_model("qwen2.5-0.5b")
    assert m.tie_word_embeddings
    names = tensors(m)
    assert "lm_head.weight" not in names and "model.embed_tokens.weight" in names
    # The lm_head matmul still reads vocab x hidden: the embedding matrix, counted once in totals.
    linear = sum(t.numel for t in m.parameter_tensors() if t.linear)
    assert m.matmul_parameters() == linear + 151936 * 896


def test_gemma_ties_by_default_without_the_key() -> None:
    assert "tie_word_embeddings" not in catalog.load_config("gemma-2-9b")
    assert load_model("gemma-2-9b").tie_word_embeddings
    assert not ModelSpec.from_hf_config(config("llama-3.1-8b", tie_word_embeddings=...)).tie_word_embeddings


def test_qwen2_has_qkv_bias_but_no_o_bias() -> None:
    names = tensors(load_model("qwen2.5-7b"))
    assert names["model.layers.3.self_attn.q_proj.bias"].shape == (3584,)
    assert names["model.layers.3.self_attn.k_proj.bias"].shape == (512,)
    assert "model.layers.3.self_attn.o_proj.bias" not in names


def test_attention_bias_key_adds_all_four_biases() -> None:
    m = ModelSpec.from_hf_config(config("llama-3.1-8b", attention_bias=True))
    assert m.qkv_bias and m.o_bias
    biases = [n for n in tensors(m) if n.startswith("model.layers.0.self_attn.") and n.endswith(".bias")]
    assert len(biases) == 4
    assert not load_model("llama-3.1-8b").qkv_bias


def test_mixtral_moe_fields_and_tensors() -> None:
    m = load_model("mixtral-8x7b")
    assert (m.num_experts, m.experts_per_token, m.moe_intermediate_size) == (8, 2, 14336)
    assert m.is_moe and m.moe_layers == tuple(range(32))
    names = tensors(m)
    assert names["model.layers.5.block_sparse_moe.gate.weight"].role == "router"
    assert names["model.layers.5.block_sparse_moe.experts.7.w2.weight"].shape == (4096, 14336)
    assert sum(t.role == "expert" for t in m.parameter_tensors()) == 32 * 8 * 3


def test_qwen3_moe_fields_and_sparse_layer_rules() -> None:
    m = load_model("qwen3-30b-a3b")
    assert (m.num_experts, m.experts_per_token, m.moe_intermediate_size) == (128, 8, 768)
    assert m.qk_norm and tensors(m)["model.layers.0.self_attn.q_norm.weight"].shape == (128,)
    assert len(m.moe_layers) == 48  # intermediate_size 6144 is never instantiated
    sparse = ModelSpec.from_hf_config(config("qwen3-30b-a3b", decoder_sparse_step=2, mlp_only_layers=[3]))
    assert sparse.moe_layers == tuple(i for i in range(48) if (i + 1) % 2 == 0 and i != 3)
    assert tensors(sparse)["model.layers.0.mlp.gate_proj.weight"].shape == (6144, 2048)


def test_deepseek_v2_lite_moe_and_mla() -> None:
    m = load_model("deepseek-v2-lite")
    assert m.attention == "mla" and m.is_mla
    assert (m.kv_lora_rank, m.q_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim) == (512, None, 64, 128)
    assert (m.head_dim, m.v_head_dim, m.kv_size) == (192, 128, 576)
    assert (m.num_experts, m.experts_per_token, m.num_shared_experts) == (64, 6, 2)
    assert m.first_k_dense_replace == 1 and m.moe_layers == tuple(range(1, 27))
    names = tensors(m)
    assert names["model.layers.0.mlp.gate_proj.weight"].shape == (10944, 2048)
    assert names["model.layers.1.mlp.shared_experts.gate_proj.weight"].shape == (2816, 2048)
    assert names["model.layers.1.self_attn.q_proj.weight"].shape == (16 * 192, 2048)
    assert names["model.layers.1.self_attn.kv_a_proj_with_mqa.weight"].shape == (576, 2048)
    assert names["model.layers.1.self_attn.kv_b_proj.weight"].shape == (16 * 256, 512)
    assert names["model.layers.1.self_attn.kv_a_layernorm.weight"].role == "mla"


def test_mla_with_q_lora_rank_uses_low_rank_query() -> None:
    names = tensors(ModelSpec.from_hf_config(config("deepseek-v2-lite", q_lora_rank=1536)))
    assert names["model.layers.0.self_attn.q_a_proj.weight"].shape == (1536, 2048)
    assert names["model.layers.0.self_attn.q_b_proj.weight"].shape == (16 * 192, 1536)
    assert "model.layers.0.self_attn.q_proj.weight" not in names


def test_qwen_sliding_window_disabled_by_use_sliding_window_false() -> None:
    m = load_model("qwen2.5-7b")
    assert m.raw["sliding_window"] == 131072 and m.raw["use_sliding_window"] is False
    assert m.sliding_window is None and m.num_sliding_layers == 0 and m.num_full_attention_layers == 28


def test_qwen_sliding_window_enabled_slides_layers_from_max_window_layers() -> None:
    m = ModelSpec.from_hf_config(config("qwen2.5-7b", use_sliding_window=True, sliding_window=4096,
                                        max_window_layers=20))
    assert m.sliding_window == 4096 and (m.num_full_attention_layers, m.num_sliding_layers) == (20, 8)
    assert m.layer_attention[19] == LayerAttention("full") and m.layer_attention[20] == LayerAttention("sliding", 4096)


def test_mistral_null_window_is_full_and_v01_window_is_every_layer() -> None:
    assert load_model("mistral-7b-v0.3").sliding_window is None
    v01 = ModelSpec.from_hf_config(config("mistral-7b-v0.3", sliding_window=4096))
    assert v01.num_sliding_layers == 32 and v01.layer_attention[0].window == 4096


def test_gemma2_even_layers_slide() -> None:
    m = load_model("gemma-2-9b")
    assert m.layer_attention[0] == LayerAttention("sliding", 4096)
    assert m.layer_attention[1] == LayerAttention("full", None)
    assert (m.num_sliding_layers, m.num_full_attention_layers) == (21, 21)
    assert m.norms_per_layer == 4 and "model.layers.0.post_feedforward_layernorm.weight" in tensors(m)


def test_layer_types_give_per_layer_attention() -> None:
    types = ["sliding_attention", "sliding_attention", "full_attention"] * 10
    m = ModelSpec.from_hf_config(config("smollm2-135m", layer_types=types, sliding_window=512))
    assert [la.kind for la in m.layer_attention] == ["sliding", "sliding", "full"] * 10
    assert (m.num_sliding_layers, m.num_full_attention_layers, m.sliding_window) == (20, 10, 512)


def test_dtype_key_and_absent_dtype() -> None:
    assert ModelSpec.from_hf_config(config("smollm2-135m", torch_dtype=..., dtype="float16")).dtype == "float16"
    assert ModelSpec.from_hf_config(config("smollm2-135m", torch_dtype=...)).dtype is None


def test_raw_is_kept_read_only_and_excluded_from_eq_and_hash() -> None:
    a = load_model("smollm2-135m")
    b = ModelSpec.from_hf_config(config("smollm2-135m", some_training_only_key=1), name="smollm2-135m")
    assert a == b and hash(a) == hash(b) and b.raw["some_training_only_key"] == 1
    with pytest.raises(TypeError):
        a.raw["hidden_size"] = 1  # type: ignore[index]


def test_nested_text_config_is_used() -> None:
    inner = config("qwen2.5-0.5b")
    m = ModelSpec.from_hf_config({"architectures": ["Wrapper"], "text_config": inner})
    assert m.hidden_size == 896 and m.architecture == "Wrapper"


def test_path_file_and_directory(tmp_path: Path) -> None:
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(config("qwen2.5-7b")))
    from_dir, from_file = load_model(model_dir), load_model(model_dir / "config.json")
    assert from_dir == from_file and from_dir.name == "my-model"
    assert from_dir == load_model("qwen2.5-7b", name="my-model")


# ---- errors: every message names the field ------------------------------------------------

ERROR_CASES: list[tuple[str, Callable[[], dict[str, Any]], str, str]] = [
    ("missing hidden_size", lambda: config("qwen2.5-7b", hidden_size=...), "hidden_size", "missing"),
    ("float size", lambda: config("qwen2.5-7b", hidden_size=3584.0), "hidden_size", "integer"),
    ("negative layers", lambda: config("qwen2.5-7b", num_hidden_layers=-1), "num_hidden_layers", ">= 1"),
    ("heads % kv", lambda: config("qwen2.5-7b", num_key_value_heads=5), "num_key_value_heads", "divide"),
    ("hidden % heads", lambda: config("qwen2.5-7b", num_attention_heads=27, num_key_value_heads=...),
     "head_dim", "not divisible"),
    ("k > experts", lambda: config("mixtral-8x7b", num_experts_per_tok=9), "num_experts_per_tok", "exceeds"),
    ("layer_types length", lambda: config("qwen2.5-7b", layer_types=["full_attention"] * 27),
     "layer_types", "27 entries"),
    ("linear attention", lambda: config("qwen2.5-7b", layer_types=["linear_attention"] * 28),
     "layer_types", "not supported yet"),
    ("mamba", lambda: config("qwen2.5-7b", layer_types=["full_attention"] * 27 + ["mamba"]),
     "layer_types", "not supported yet"),
    ("sliding without window", lambda: config("mistral-7b-v0.3", layer_types=["sliding_attention"] * 32),
     "sliding_window", "layer_types"),
    ("unknown dtype", lambda: config("qwen2.5-7b", torch_dtype="bf16"), "torch_dtype", "not a known torch dtype"),
    ("bad mlp_only_layers", lambda: config("qwen3-30b-a3b", mlp_only_layers=[48]), "mlp_only_layers", "[0, 48)"),
]


@pytest.mark.parametrize(("raw_fn", "field", "phrase"), [c[1:] for c in ERROR_CASES],
                         ids=[c[0] for c in ERROR_CASES])
def test_config_errors_name_the_field(raw_fn: Callable[[], dict[str, Any]], field: str, phrase: str) -> None:
    with pytest.raises(ModelConfigError) as info:
        ModelSpec.from_hf_config(raw_fn())
    assert info.value.field == field
    assert f"`{field}`" in str(info.value) and phrase in str(info.value) and "Fix:" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{\n  "hidden_size": 896,\n  "num_hidden_layers": 24,,\n}\n')
    with pytest.raises(ModelConfigError, match=r"line 3, column"):
        load_model(tmp_path)
    with pytest.raises(ModelConfigError) as info:
        load_model(path)
    assert str(path) in str(info.value)


def test_directory_without_config_json(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="config.json"):
        load_model(tmp_path)


def test_unknown_name_suggests_catalog_names() -> None:
    with pytest.raises(ModelConfigError) as info:
        load_model("qwen2.5-7")
    assert info.value.field == "model" and "did you mean 'qwen2.5-7b'" in str(info.value)


# ---- catalog names and Hugging Face ids -----------------------------------------------------

@pytest.mark.parametrize(("hf_id", "name"), [(i, e.name) for e in catalog.MODELS.values() for i in e.hf_ids])
def test_every_hf_id_resolves(hf_id: str, name: str) -> None:
    assert catalog.resolve(hf_id) == name
    assert catalog.resolve(hf_id.upper()) == name  # case-insensitive


@pytest.mark.parametrize("hf_id", ["Qwen/Qwen2.5-7B-Instruct", "meta-llama/Meta-Llama-3.1-8B-Instruct",
                                   "mistralai/Mixtral-8x7B-Instruct-v0.1", "google/gemma-2-9b-it"])
def test_load_model_by_hf_id_gives_catalog_spec(hf_id: str) -> None:
    assert load_model(hf_id) == load_model(catalog.resolve(hf_id))


@pytest.mark.parametrize("almost", ["qwen2.5", "Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct-AWQ", "llama"])
def test_no_substring_matching(almost: str) -> None:
    assert catalog.lookup(almost) is None
    with pytest.raises(ModelConfigError):
        catalog.resolve(almost)


def test_every_catalog_config_parses_and_matches_its_file() -> None:
    assert len(catalog.catalog_names()) == 18
    for name in catalog.catalog_names():
        entry = catalog.MODELS[name]
        assert entry.config_path.is_file(), name
        spec = load_model(name)
        assert spec.name == name and dict(spec.raw) == catalog.load_config(name)


# ---- parameter counts vs published figures -------------------------------------------------

def _inventory_is_well_formed(spec: ModelSpec) -> None:
    ts = spec.parameter_tensors()
    assert len({t.name for t in ts}) == len(ts)
    assert {t.role for t in ts} <= ROLES
    assert spec.num_parameters() == sum(math.prod(t.shape) for t in ts)


# (model, quantity, published, source/convention). Publishers round to 3 significant digits
# except where marked; `matmul_active` is DeepSeek's "activated" (embedding lookup excluded).
PUBLISHED = [
    ("qwen2.5-7b", "total", 7.62e9, "Qwen card 7.61B / HF 7.62B"),
    ("qwen2.5-7b", "matmul", 7.07e9, "seed STUDY claims 4-5: 7.07e9 matmul params, lm_head in"),
    ("llama-3.1-8b", "total", 8.03e9, "Meta / HF: 8.03B"),
    ("mistral-7b-v0.3", "total", 7.25e9, "HF: 7.25B"),
    ("mixtral-8x7b", "total", 46.7e9, "Mistral: 46.7B total"),
    ("mixtral-8x7b", "active", 12.9e9, "Mistral: 12.9B active (embedding included)"),
    ("qwen2.5-0.5b", "total", 0.494e9, "Qwen card 0.49B; torchinfo 494,032,768"),
    ("smollm2-135m", "total", 134.5e6, "HF: 134.5M"),
    ("deepseek-v2-lite", "total", 15.7e9, "DeepSeek: 15.7B total"),
    ("qwen3-30b-a3b", "total", 30.5e9, "Qwen: 30.5B total"),
    ("gemma-2-9b", "total", 9.24e9, "HF: 9.24B"),
]
# Two-significant-digit figures: the computed value must *truncate* to them (a 1% band is
# finer than the figure's own precision: 3.35e9 is "3.3B", 2.45e9 is "2.4B").
PUBLISHED_TRUNCATED = [
    ("deepseek-v2-lite", "matmul_active", "2.4", "DeepSeek: 2.4B activated (no embedding lookup)"),
    ("qwen3-30b-a3b", "active", "3.3", "Qwen: 3.3B activated"),
]


def _quantity(spec: ModelSpec, quantity: str) -> int:
    return {"total": spec.num_parameters, "active": spec.num_active_parameters,
            "matmul": spec.matmul_parameters,
            "matmul_active": lambda: spec.matmul_parameters(active_only=True)}[quantity]()


@pytest.mark.parametrize(("name", "quantity", "published", "source"), PUBLISHED,
                         ids=[f"{p[0]}-{p[1]}" for p in PUBLISHED])
def test_parameter_count_within_1pct_of_published(name: str, quantity: str, published: float, source: str) -> None:
    spec = load_model(name)
    _inventory_is_well_formed(spec)
    assert _quantity(spec, quantity) == pytest.approx(published, rel=0.01), source


@pytest.mark.parametrize(("name", "quantity", "published", "source"), PUBLISHED_TRUNCATED,
                         ids=[f"{p[0]}-{p[1]}" for p in PUBLISHED_TRUNCATED])
def test_two_digit_published_counts_truncate_to_computed(name: str, quantity: str, published: str,
                                                         source: str) -> None:
    value = _quantity(load_model(name), quantity) / 1e9
    assert f"{math.floor(value * 10) / 10:.1f}" == published, f"{value:.4f}e9 vs {source}"


def test_exact_counts_from_checkpoint_printouts() -> None:
    smol = load_model("smollm2-135m")
    assert smol.num_parameters() == 134_515_008  # embedding 28,311,552 + 106,203,456
    qwen = load_model("qwen2.5-0.5b")
    layer0 = sum(t.numel for t in qwen.parameter_tensors() if t.name.startswith("model.layers.0."))
    assert layer0 == 14_912_384  # torchinfo Qwen2DecoderLayer
    assert qwen.num_parameters() == 494_032_768


def test_qwen25_7b_trunk_and_lm_head_split_matches_seed_flops() -> None:
    # Seed claim 5: 13.05 GFLOP/token trunk + 1.09 GFLOP lm_head = 2 x matmul params.
    m = load_model("qwen2.5-7b")
    lm_head = 152064 * 3584
    assert 2 * (m.matmul_parameters() - lm_head) == pytest.approx(13.05e9, rel=1e-3)
    assert 2 * lm_head == pytest.approx(1.09e9, rel=1e-3)


def test_dense_model_active_equals_total() -> None:
    m = load_model("llama-3.1-8b")
    assert m.num_active_parameters() == m.num_parameters()
    assert m.matmul_parameters(active_only=True) == m.matmul_parameters()


# ---- property tests over random valid configs ----------------------------------------------

@st.composite
def random_configs(draw: st.DrawFn) -> dict[str, Any]:
    kv = draw(st.integers(1, 4))
    heads = kv * draw(st.integers(1, 4))
    head_dim = draw(st.sampled_from([8, 16, 32]))
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"], "model_type": draw(st.sampled_from(["llama", "qwen2"])),
        "hidden_size": heads * head_dim, "num_hidden_layers": draw(st.integers(1, 6)),
        "num_attention_heads": heads, "num_key_value_heads": kv,
        "intermediate_size": draw(st.integers(1, 64)), "vocab_size": draw(st.integers(1, 300)),
        "tie_word_embeddings": draw(st.booleans()), "torch_dtype": draw(st.sampled_from(["bfloat16", "float32"])),
    }
    if draw(st.booleans()):
        cfg["head_dim"] = draw(st.sampled_from([8, 24]))  # explicit, may differ from hidden/heads
    if draw(st.booleans()):
        experts = draw(st.integers(1, 6))
        cfg.update(num_experts=experts, num_experts_per_tok=draw(st.integers(1, experts)),
                   moe_intermediate_size=draw(st.integers(1, 32)))
    if draw(st.booleans()):
        cfg["sliding_window"] = draw(st.integers(1, 64))
        if cfg["model_type"] == "qwen2":
            cfg["use_sliding_window"] = True
    return cfg


@settings(max_examples=60, deadline=None)
@given(random_configs())
def test_random_configs_round_trip_with_consistent_derived_values(cfg: dict[str, Any]) -> None:
    spec = ModelSpec.from_hf_config(cfg)
    assert ModelSpec.from_hf_config(json.loads(json.dumps(cfg))) == spec
    assert spec.q_size == spec.num_attention_heads * spec.head_dim
    assert spec.kv_size == spec.num_kv_heads * spec.head_dim
    assert spec.num_full_attention_layers + spec.num_sliding_layers == spec.num_layers
    assert spec.is_moe == ("num_experts" in cfg)
    _inventory_is_well_formed(spec)
    total, active = spec.num_parameters(), spec.num_active_parameters()
    assert spec.matmul_parameters(active_only=True) <= spec.matmul_parameters()
    assert 0 < active <= total
    embedding = spec.vocab_size * spec.hidden_size
    assert spec.matmul_parameters() + embedding * (not spec.tie_word_embeddings) <= total + embedding


@settings(max_examples=40, deadline=None)
@given(random_configs(), st.integers(1, 3))
def test_parameter_count_grows_linearly_in_layers(cfg: dict[str, Any], extra: int) -> None:
    counts = [ModelSpec.from_hf_config({**cfg, "num_hidden_layers": cfg["num_hidden_layers"] + k}).num_parameters()
              for k in (0, extra, 2 * extra)]
    assert counts[0] < counts[1] < counts[2]
    assert counts[1] - counts[0] == counts[2] - counts[1]  # identical layers: constant increment
