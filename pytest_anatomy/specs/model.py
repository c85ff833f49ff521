"""ModelSpec: the structure of a decoder-only transformer, read from a Hugging Face config.json.

Everything the theory needs (KV bytes per token, weight bytes, FLOPs per token) is a pure
function of these fields. Reading and checking the config.json is model_config.py's job.

Parameter-count semantics (stated once, used everywhere; published figures differ in which
of these they mean, so tests name the one they compare against):

- ``num_parameters()``        every unique tensor in a checkpoint (tied embedding counted once).
                              Qwen2.5-7B: 7.62e9.
- ``num_active_parameters()`` the same, but MoE layers count only ``experts_per_token`` routed
                              experts (shared experts, routers and the embedding all count).
                              Mixtral-8x7B: 12.9e9 (Mistral's "active" convention).
- ``matmul_parameters()``     weights + biases of the linear layers one forward step multiplies
                              by: attention, MLP, experts, routers and the lm_head (which *is* the
                              embedding matrix when tied). Excludes the embedding lookup (a gather,
                              one row per token) and norm weights. Qwen2.5-7B: 7.07e9, the seed's
                              "matmul params" (claims 4/5: 6.53e9 trunk + 0.545e9 lm_head).
                              ``active_only=True`` counts k-of-E routed experts (DeepSeek's
                              "activated" convention: DeepSeek-V2-Lite 2.4e9).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from pytest_anatomy.specs.errors import ModelConfigError  # noqa: F401 - re-exported: callers catch it from here
from pytest_anatomy.specs.model_config import (
    DTYPE_BYTES,
    AttentionKind,
    ConfigSource,
    LayerAttention,
    load_source,
    parse_config,
)

Role = Literal[
    "embedding", "lm_head", "attention", "mlp", "expert", "router", "shared_expert", "norm", "mla"
]
@dataclass(frozen=True)
class ParamTensor:
    """One tensor of a HF checkpoint. `linear` is True for weights and biases a matmul reads;
    False for norm weights, the embedding table (a gather) and additive routing biases."""

    name: str
    shape: tuple[int, ...]
    role: Role
    linear: bool = True

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """Structure of one model replica. Build with `ModelSpec.from_hf_config(...)`.

    Fields are the parsed config; derived quantities are properties and never overwrite
    a field. For MLA models `head_dim` is the q/k head width (qk_nope + qk_rope) and
    `num_kv_heads` is the config's value, which does *not* describe the cache: MLA caches
    one latent of width `kv_lora_rank + qk_rope_head_dim` per layer and token (`kv_size`).
    """

    name: str
    architecture: str
    model_type: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    qkv_bias: bool  # bias on q/k/v projections (MLA: on q_a/kv_a projections)
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    norms_per_layer: int = 2
    dtype: str | None = None  # checkpoint dtype from torch_dtype/dtype; None if the config is silent
    max_position_embeddings: int | None = None
    attention: AttentionKind
    sliding_window: int | None = None  # effective window; None when disabled (Qwen2.5: disabled)
    layer_attention: tuple[LayerAttention, ...]
    # MoE (num_experts == 0 for dense models)
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int | None = None  # Mixtral's experts use intermediate_size: stored here
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int | None = None  # per shared expert; None -> moe size
    first_k_dense_replace: int = 0
    moe_layer_freq: int = 1
    decoder_sparse_step: int = 1
    mlp_only_layers: tuple[int, ...] = ()
    # MLA (kv_lora_rank is None for non-MLA models)
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_hf_config(cls, source: ConfigSource, name: str | None = None) -> ModelSpec:
        """Parse a config.json given as a path (file or directory), a dict, a catalog name
        (`qwen2.5-7b`) or a catalog Hugging Face id (`Qwen/Qwen2.5-7B-Instruct`)."""
        raw, label, default_name = load_source(source)
        return cls(**parse_config(raw, label, name or default_name))

    # ---- derived structure -------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def num_full_attention_layers(self) -> int:
        return sum(1 for la in self.layer_attention if la.kind == "full")

    @property
    def num_sliding_layers(self) -> int:
        return sum(1 for la in self.layer_attention if la.kind == "sliding")

    @property
    def q_size(self) -> int:
        """Width of the query projection output (heads x q/k head dim)."""
        return self.num_attention_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        """Elements cached per layer and token for K (and again for V, except MLA).
        MLA: the single compressed latent kv_lora_rank + qk_rope_head_dim (no separate V)."""
        if self.kv_lora_rank is not None and self.qk_rope_head_dim is not None:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.num_kv_heads * self.head_dim

    @property
    def dtype_bytes(self) -> int | None:
        return DTYPE_BYTES[self.dtype] if self.dtype is not None else None

    def is_moe_layer(self, layer: int) -> bool:
        """DeepSeek rule (i >= first_k_dense_replace and i % moe_layer_freq == 0) combined with
        the Qwen-MoE rule (i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0);
        each family's unused knobs sit at their neutral defaults."""
        return (
            self.num_experts > 0
            and layer >= self.first_k_dense_replace
            and layer % self.moe_layer_freq == 0
            and (layer + 1) % self.decoder_sparse_step == 0
            and layer not in self.mlp_only_layers
        )

    @property
    def moe_layers(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.num_layers) if self.is_moe_layer(i))

    # ---- weight inventory ----------------------------------------------------------------
    def parameter_tensors(self) -> tuple[ParamTensor, ...]:
        """Every tensor a HF checkpoint holds for one replica, with HF's names and shapes
        ([out, in] for linear weights). The lm_head is absent when tied to the embedding."""
        return self._inventory

    @cached_property
    def _inventory(self) -> tuple[ParamTensor, ...]:
        # cached_property writes to __dict__ directly, so it works on a frozen dataclass and
        # stays out of eq/hash. Qwen3-30B-A3B has ~19k tensors: worth building once.
        h = self.hidden_size
        tensors = [ParamTensor("model.embed_tokens.weight", (self.vocab_size, h), "embedding", False)]
        for i in range(self.num_layers):
            prefix = f"model.layers.{i}."
            tensors += self._layer_norms(prefix)
            tensors += self._mla_tensors(prefix) if self.is_mla else self._attention_tensors(prefix)
            tensors += self._moe_tensors(prefix) if self.is_moe_layer(i) else self._dense_mlp(prefix)
        tensors.append(ParamTensor("model.norm.weight", (h,), "norm", False))
        if not self.tie_word_embeddings:
            tensors.append(ParamTensor("lm_head.weight", (self.vocab_size, h), "lm_head"))
        return tuple(tensors)

    def _layer_norms(self, prefix: str) -> list[ParamTensor]:
        names = ["input_layernorm", "post_attention_layernorm"]
        if self.norms_per_layer == 4:
            names += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
        return [ParamTensor(f"{prefix}{n}.weight", (self.hidden_size,), "norm", False) for n in names]

    def _attention_tensors(self, prefix: str) -> list[ParamTensor]:
        h, p = self.hidden_size, prefix + "self_attn."
        kv = self.num_kv_heads * self.head_dim
        out = _linear(p + "q_proj", self.q_size, h, "attention", self.qkv_bias)
        out += _linear(p + "k_proj", kv, h, "attention", self.qkv_bias)
        out += _linear(p + "v_proj", self.num_kv_heads * self.v_head_dim, h, "attention", self.qkv_bias)
        out += _linear(p + "o_proj", h, self.num_attention_heads * self.v_head_dim, "attention", self.o_bias)
        if self.qk_norm:
            out += [ParamTensor(p + n, (self.head_dim,), "norm", False) for n in ("q_norm.weight", "k_norm.weight")]
        return out

    def _mla_tensors(self, prefix: str) -> list[ParamTensor]:
        # DeepSeek-V2/V3 modeling: q (optionally low-rank), a joint kv down-projection that also
        # emits the shared rope key, an up-projection to per-head nope-K and V, then o_proj.
        assert self.kv_lora_rank is not None and self.qk_rope_head_dim is not None
        assert self.qk_nope_head_dim is not None
        h, p, heads = self.hidden_size, prefix + "self_attn.", self.num_attention_heads
        out: list[ParamTensor] = []
        if self.q_lora_rank is None:
            out += _linear(p + "q_proj", self.q_size, h, "attention", False)
        else:
            out += _linear(p + "q_a_proj", self.q_lora_rank, h, "mla", self.qkv_bias)
            out.append(ParamTensor(p + "q_a_layernorm.weight", (self.q_lora_rank,), "mla", False))
            out += _linear(p + "q_b_proj", self.q_size, self.q_lora_rank, "mla", False)
        out += _linear(p + "kv_a_proj_with_mqa", self.kv_size, h, "mla", self.qkv_bias)
        out.append(ParamTensor(p + "kv_a_layernorm.weight", (self.kv_lora_rank,), "mla", False))
        kv_b_out = heads * (self.qk_nope_head_dim + self.v_head_dim)
        out += _linear(p + "kv_b_proj", kv_b_out, self.kv_lora_rank, "mla", False)
        out += _linear(p + "o_proj", h, heads * self.v_head_dim, "attention", self.o_bias)
        return out

    def _dense_mlp(self, prefix: str, width: int | None = None, role: Role = "mlp",
                   infix: str = "mlp.") -> list[ParamTensor]:
        h, w, p, b = self.hidden_size, width or self.intermediate_size, prefix + infix, self.mlp_bias
        return (_linear(p + "gate_proj", w, h, role, b) + _linear(p + "up_proj", w, h, role, b)
                + _linear(p + "down_proj", h, w, role, b))

    def _moe_tensors(self, prefix: str) -> list[ParamTensor]:
        h, e = self.hidden_size, self.num_experts
        w = self.moe_intermediate_size or self.intermediate_size
        if self.model_type == "mixtral":  # block_sparse_moe naming: w1 gate, w3 up, w2 down
            p = prefix + "block_sparse_moe."
            out = _linear(p + "gate", e, h, "router", False)
            for x in range(e):
                q = f"{p}experts.{x}."
                out += _linear(q + "w1", w, h, "expert", False) + _linear(q + "w2", h, w, "expert", False)
                out += _linear(q + "w3", w, h, "expert", False)
            return out
        p = prefix + "mlp."
        out = _linear(p + "gate", e, h, "router", False)
        if self.raw.get("topk_method") == "noaux_tc":  # DeepSeek-V3 routing bias, added not multiplied
            out.append(ParamTensor(p + "gate.e_score_correction_bias", (e,), "router", False))
        for x in range(e):
            out += self._dense_mlp(prefix, w, "expert", f"mlp.experts.{x}.")
        if self.num_shared_experts:
            shared_w = self.num_shared_experts * (self.shared_expert_intermediate_size or w)
            if self.model_type == "qwen2_moe":  # one shared expert behind a sigmoid gate
                out += self._dense_mlp(prefix, shared_w, "shared_expert", "mlp.shared_expert.")
                out += _linear(p + "shared_expert_gate", 1, h, "router", False)
            else:  # DeepSeek fuses its shared experts into one wider MLP
                out += self._dense_mlp(prefix, shared_w, "shared_expert", "mlp.shared_experts.")
        return out

    def num_parameters(self) -> int:
        """Unique checkpoint parameters (tied embedding once). Semantics: module docstring."""
        return sum(t.numel for t in self._inventory)

    def _inactive_expert_parameters(self) -> int:
        # Experts of a layer are identical in shape, so (E - k)/E of them is an exact integer.
        if not self.is_moe:
            return 0
        expert_total = sum(t.numel for t in self._inventory if t.role == "expert")
        return expert_total // self.num_experts * (self.num_experts - self.experts_per_token)

    def num_active_parameters(self) -> int:
        """num_parameters() with only experts_per_token of each MoE layer's routed experts."""
        return self.num_parameters() - self._inactive_expert_parameters()

    def matmul_parameters(self, *, active_only: bool = False) -> int:
        """Linear-layer weights + biases a forward step multiplies by, lm_head included (the
        embedding matrix when tied), embedding lookup and norms excluded. x2 = FLOP/token;
        x dtype bytes = bytes a decode step streams. active_only: k-of-E routed experts."""
        total = sum(t.numel for t in self._inventory if t.linear)
        if self.tie_word_embeddings:
            total += self.vocab_size * self.hidden_size  # the lm_head matmul reads the embedding
        return total - (self._inactive_expert_parameters() if active_only else 0)


def load_model(source: ConfigSource, name: str | None = None) -> ModelSpec:
    """`ModelSpec.from_hf_config` under the name the fixtures and CLI use:
    `load_model("qwen2.5-7b")`, `load_model("Qwen/Qwen2.5-7B-Instruct")`, a path, or a dict."""
    return ModelSpec.from_hf_config(source, name)


def _linear(name: str, out_features: int, in_features: int, role: Role, bias: bool) -> list[ParamTensor]:
    weight = [ParamTensor(f"{name}.weight", (out_features, in_features), role)]
    return weight + [ParamTensor(f"{name}.bias", (out_features,), role)] if bias else weight
