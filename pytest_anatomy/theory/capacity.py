"""Memory and KV-cache capacity: pure functions of specs -> Prediction.

Exact where the engine's arithmetic is exact: vLLM allocates KV memory in pages of
`block_size` tokens per layer, takes `available // page_bytes // layers_per_group` blocks and
reports `blocks * block_size` tokens (docs/FACTS.md V5, V7). Given the engine's
own available-memory number, blocks, tokens and max concurrency follow with no slack; the
only uncertainty left is how that number was rounded when it was logged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_anatomy.specs.formats import get_kv_cache_dtype, get_llamacpp_kv_type, get_weight_format
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.units import GiB

DEFAULT_BLOCK_SIZE = 16  # vllm CacheConfig.DEFAULT_BLOCK_SIZE


class NotModeled(NotImplementedError):
    """A quantity this version of the theory does not predict; the message says what to pass instead."""


def _kv_heads_per_rank(model: ModelSpec, tp: int) -> int:
    if tp < 1:
        raise ValueError(f"tensor parallel size must be >= 1, got {tp!r}")
    # vLLM replicates KV heads when there are fewer of them than ranks.
    return max(1, model.num_kv_heads // tp)


def _resolve_kv_dtype(model: ModelSpec, kv_cache_dtype: str) -> str:
    return _model_dtype(model) if kv_cache_dtype == "auto" else kv_cache_dtype


def kv_layer_bytes_per_token(model: ModelSpec, kv_cache_dtype: str = "auto", tp: int = 1) -> Prediction:
    """Bytes one token occupies in ONE attention layer's KV cache on one rank (vLLM layout)."""
    dtype_name = _resolve_kv_dtype(model, kv_cache_dtype)
    if model.attention == "mla":
        # MLA caches one compressed latent (kv_lora_rank) plus the shared rope key per token,
        # the same on every rank.
        width = model.kv_lora_rank + model.qk_rope_head_dim  # type: ignore[operator]  # set for MLA
        if dtype_name == "fp8_ds_mla":
            return Prediction(656, "B", "656 (fp8_ds_mla packed latent + scales + bf16 rope)",
                              {"kv_cache_dtype": dtype_name})
        elem = get_kv_cache_dtype(dtype_name)
        value = elem.kv_head_bytes(width)
        return Prediction(
            value, "B", "(kv_lora_rank + qk_rope_head_dim) x bytes",
            {"kv_lora_rank": model.kv_lora_rank, "qk_rope_head_dim": model.qk_rope_head_dim,
             "kv_cache_dtype": dtype_name},
            notes=("MLA: one latent head per token, replicated on every TP rank",),
        )
    heads = _kv_heads_per_rank(model, tp)
    fmt = get_kv_cache_dtype(dtype_name)
    k = fmt.kv_head_bytes(model.head_dim)
    v = fmt.kv_head_bytes(model.v_head_dim)
    return Prediction(
        heads * (k + v), "B", "kv_heads_per_rank x (K head bytes + V head bytes)",
        {"kv_heads_per_rank": heads, "head_dim": model.head_dim, "v_head_dim": model.v_head_dim,
         "kv_cache_dtype": dtype_name, "tp": tp},
        terms=(Term("K head bytes", k, "B"), Term("V head bytes", v, "B")),
    )


def kv_bytes_per_token(model: ModelSpec, kv_cache_dtype: str = "auto", tp: int = 1) -> Prediction:
    """KV-cache bytes per token across all layers on one rank.

    qwen2.5-7b, bf16: 2 (K,V) x 28 layers x 4 heads x 128 x 2 B = 57,344 B = 56 KiB."""
    layer = kv_layer_bytes_per_token(model, kv_cache_dtype, tp)
    layers = model.num_layers
    value = layers * layer.value
    if model.attention == "mla":
        formula = "layers x (kv_lora_rank + qk_rope_head_dim) x bytes"
    else:
        formula = "2 (K,V) x layers x kv_heads_per_rank x head_dim x bytes (+ per-head scales)"
    return Prediction(
        value, "B", formula,
        {"layers": layers, **layer.inputs},
        terms=(Term("layers", layers, "layers"), Term("per layer per token", layer.value, "B")),
        notes=layer.notes,
    )


def vllm_page_bytes(model: ModelSpec, block_size: int = DEFAULT_BLOCK_SIZE,
                    kv_cache_dtype: str = "auto", tp: int = 1) -> Prediction:
    """One layer's page: block_size tokens of K and V (vLLM `page_size_bytes`)."""
    layer = kv_layer_bytes_per_token(model, kv_cache_dtype, tp)
    return Prediction(
        block_size * layer.value, "B", "block_size x per-layer bytes per token",
        {"block_size": block_size, **layer.inputs},
        terms=(Term("block_size", block_size, "tokens"), Term("per layer per token", layer.value, "B")),
    )


@dataclass(frozen=True)
class KVGroups:
    """How vLLM groups attention layers into KV-cache groups."""

    num_groups: int
    group_size: int  # layers per group (= tensors that share the pool)
    note: str


def vllm_kv_groups(model: ModelSpec) -> KVGroups:
    full = model.num_full_attention_layers
    sliding = model.num_layers - full
    if sliding == 0 or full == 0:
        return KVGroups(1, model.num_layers, "uniform: every layer has the same attention spec")
    # Hybrid: vLLM splits layers into groups of equal size (the smaller count), padding if needed.
    size = min(full, sliding)
    groups = math.ceil(full / size) + math.ceil(sliding / size)
    return KVGroups(groups, size, f"hybrid: {full} full + {sliding} sliding-window layers in {groups} groups of {size}")


def vllm_num_gpu_blocks(model: ModelSpec, available_kv_bytes: float, block_size: int = DEFAULT_BLOCK_SIZE,
                        kv_cache_dtype: str = "auto", tp: int = 1) -> Prediction:
    """num_gpu_blocks = available // page_bytes // layers_per_group (integer division, twice)."""
    page = vllm_page_bytes(model, block_size, kv_cache_dtype, tp)
    groups = vllm_kv_groups(model)
    blocks = int(available_kv_bytes) // int(page.value) // groups.group_size
    notes = [groups.note]
    if groups.num_groups > 1:
        notes.append("hybrid grouping follows vLLM's kv_cache_utils; not yet checked against a live engine")
    return Prediction(
        blocks, "blocks", "available_kv_bytes // page_bytes // layers_per_group",
        {"available_kv_bytes": int(available_kv_bytes), "page_bytes": page.value,
         "layers_per_group": groups.group_size, "block_size": block_size},
        terms=(Term("available_kv_bytes", int(available_kv_bytes), "B"),
               Term("page_bytes", page.value, "B", f"{block_size} tokens x {page.terms[1].value:g} B"),
               Term("layers_per_group", groups.group_size, "layers")),
        notes=tuple(notes),
    )


def vllm_kv_tokens(model: ModelSpec, num_gpu_blocks: int, block_size: int = DEFAULT_BLOCK_SIZE) -> Prediction:
    """The 'GPU KV cache size: N tokens' line: blocks x block_size (hybrids: per group)."""
    groups = vllm_kv_groups(model)
    per_group = num_gpu_blocks // groups.num_groups if groups.num_groups > 1 else num_gpu_blocks
    return Prediction(
        per_group * block_size, "tokens", "num_gpu_blocks (// groups) x block_size",
        {"num_gpu_blocks": num_gpu_blocks, "block_size": block_size, "groups": groups.num_groups},
        terms=(Term("num_gpu_blocks", num_gpu_blocks, "blocks"), Term("block_size", block_size, "tokens")),
    )


def vllm_max_concurrency(num_gpu_blocks: int, max_model_len: int, block_size: int = DEFAULT_BLOCK_SIZE) -> Prediction:
    """Worst-case concurrent requests at full length: blocks / cdiv(max_model_len, block_size)."""
    per_request = -(-max_model_len // block_size)
    return Prediction(
        num_gpu_blocks / per_request, "x", "num_gpu_blocks / ceil(max_model_len / block_size)",
        {"num_gpu_blocks": num_gpu_blocks, "max_model_len": max_model_len, "block_size": block_size},
        terms=(Term("blocks per full-length request", per_request, "blocks"),),
        notes=("a worst case: every request at max_model_len; real concurrency is also capped by max_num_seqs",),
    )


def kv_tokens_from_bytes(model: ModelSpec, available_kv_bytes: float, kv_cache_dtype: str = "auto",
                         tp: int = 1) -> Prediction:
    """The seed's back-of-envelope: available bytes / KV bytes per token (no block rounding)."""
    per_token = kv_bytes_per_token(model, kv_cache_dtype, tp)
    return Prediction(
        available_kv_bytes / per_token.value, "tokens", "available_kv_bytes / kv_bytes_per_token",
        {"available_kv_bytes": available_kv_bytes, "kv_bytes_per_token": per_token.value},
        terms=(Term("kv_bytes_per_token", per_token.value, "B", per_token.formula),),
    )


def requested_memory(total_bytes: int, gpu_memory_utilization: float) -> Prediction:
    """vLLM's budget: ceil(total x utilization) of the device's total memory (per instance)."""
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization!r}")
    return Prediction(
        math.ceil(total_bytes * gpu_memory_utilization), "B", "ceil(total_memory x gpu_memory_utilization)",
        {"total_memory": total_bytes, "gpu_memory_utilization": gpu_memory_utilization},
    )


def weight_bytes(model: ModelSpec, weight_format: str = "auto", *, matmul_only: bool = False,
                 tp: int = 1) -> Prediction:
    """Bytes of the weights as loaded (default) or of the matmul weights a decode step reads.

    2-D linear weights use `weight_format`; embeddings, lm_head, norms and biases stay in the
    model dtype (how the quantized checkpoint formats we model store them). matmul_only drops
    the embedding lookup (a gather, one row per token) and norms but keeps lm_head, which is the
    embedding matrix itself when tied: qwen2.5-7b gives 7.07e9 x 2 B = 14.14 GB (seed claim 4)."""
    dtype = _model_dtype(model)
    fmt_name = _TORCH_TO_FORMAT.get(dtype, dtype) if weight_format == "auto" else weight_format
    linear = get_weight_format(fmt_name)
    elem = 2 if dtype in ("bfloat16", "float16") else model.dtype_bytes
    by_role: dict[str, float] = {}
    # bytes_for per distinct shape: a model's hundreds of linear tensors have a few shapes, and each answer is five
    # Fractions (the planning CLI's property test spent 2.7 of its 4 s here, 2026-12-06)
    shape_bytes: dict[tuple[int, int], int] = {}
    tensors = model.parameter_tensors()
    for t in tensors:
        if matmul_only and not t.linear:
            continue
        quantizable = len(t.shape) == 2 and t.linear and t.role != "lm_head"
        if quantizable:
            shape = (t.shape[0], t.shape[1])
            if shape not in shape_bytes:
                shape_bytes[shape] = linear.bytes_for(shape)  # type: ignore[arg-type]
            b = shape_bytes[shape]
        else:
            b = t.numel * elem  # type: ignore[operator]
        by_role[t.role] = by_role.get(t.role, 0) + int(b)
    if matmul_only and model.tie_word_embeddings and "lm_head" not in by_role:
        emb = next(t for t in tensors if t.role == "embedding")
        by_role["lm_head"] = int(emb.numel * elem)  # type: ignore[operator]
    total: float = sum(by_role.values())
    notes = []
    if tp > 1:
        notes.append("per rank = total / tp: embeddings and norms are treated as sharded too (vLLM shards the "
                     "vocab-parallel embedding but replicates norms, a < 0.01% difference)")
        total = total / tp
    return Prediction(
        total, "B", "sum over weight tensors of bytes(format, shape)",
        {"weight_format": fmt_name, "model_dtype": dtype, "matmul_only": matmul_only, "tp": tp},
        terms=tuple(Term(role, b, "B") for role, b in sorted(by_role.items())),
        notes=tuple(notes),
    )


_TORCH_TO_FORMAT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def _model_dtype(model: ModelSpec) -> str:
    """The dtype an engine serves the model in with dtype='auto'.

    vLLM (and llama.cpp's converters) do not serve float32 checkpoints in float32: vLLM's
    auto dtype downcasts them to a 16-bit type (bfloat16 on GPUs that support it), which is
    what Gemma-2's float32 config.json gets on an H100/H200/4090."""
    if model.dtype is None:
        raise ValueError(f"{model.name}: config.json has no torch_dtype; pass the weight/KV dtype explicitly")
    return "bfloat16" if model.dtype == "float32" else model.dtype


def llamacpp_kv_buffer_bytes(model: ModelSpec, n_ctx: int, type_k: str = "f16", type_v: str = "f16") -> Prediction:
    """llama.cpp's `KV buffer size`: n_ctx cells x layers x (K row + V row), block-quantized rows.

    Hybrid models store KV only for their full-attention layers (docs/FACTS.md L2)."""
    if model.attention == "mla":
        raise NotModeled("llama.cpp's MLA cache layout is not modeled yet")
    k_elems = model.num_kv_heads * model.head_dim
    v_elems = model.num_kv_heads * model.v_head_dim
    k_row = get_llamacpp_kv_type(type_k).bytes_for(k_elems)
    v_row = get_llamacpp_kv_type(type_v).bytes_for(v_elems)
    layers = model.num_layers
    value = n_ctx * layers * (k_row + v_row)
    return Prediction(
        value, "B", "n_ctx x layers x (bytes(type_k, kv_heads x head_dim) + bytes(type_v, ...))",
        {"n_ctx": n_ctx, "layers": layers, "type_k": type_k, "type_v": type_v,
         "kv_heads": model.num_kv_heads, "head_dim": model.head_dim},
        terms=(Term("K row", k_row, "B"), Term("V row", v_row, "B"), Term("cells", n_ctx, "tokens")),
    )


def gib(value: float) -> int:
    """GiB -> bytes, rounded down to a whole byte."""
    return int(value * GiB)
