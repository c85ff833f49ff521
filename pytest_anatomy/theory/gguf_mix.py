"""Which ggml type llama-quantize gives each tensor of a file type ("Q4_K_M" and the like).

A llama.cpp file type is a mix, not a type: Q4_K_M is mostly Q4_K, with Q6_K for the output
matrix and for attn_v / ffn_down on a subset of layers, and any tensor whose row length is not a
multiple of the type's block falls back to a 32-block type. The rules here are read from
llama.cpp's `llama_tensor_get_type` / `llama_tensor_get_type_impl` / `tensor_type_fallback`
(src/llama-quant.cpp, in the copy vendored by llama-cpp-python 0.3.36, ggml 0.25.3) for the
k-quant and legacy file types of dense models, without an importance matrix, without
--pure / --tensor-type / --output-tensor-type overrides. MoE, Falcon and the IQ file types
take other branches of that function and are refused rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from pytest_anatomy.specs.formats import GGML_TYPES
from pytest_anatomy.specs.gguf_file import GgufHeader, GgufTensor
from pytest_anatomy.theory.prediction import Prediction, Term

# llama_ftype_get_default_type; the number is llama_ftype (GGUF general.file_type).
FILE_TYPES: dict[str, tuple[int, str]] = {
    "F32": (0, "F32"), "F16": (1, "F16"), "Q4_0": (2, "Q4_0"), "Q4_1": (3, "Q4_1"), "Q8_0": (7, "Q8_0"),
    "Q5_0": (8, "Q5_0"), "Q5_1": (9, "Q5_1"), "Q2_K": (10, "Q2_K"), "Q3_K_S": (11, "Q3_K"),
    "Q3_K_M": (12, "Q3_K"), "Q3_K_L": (13, "Q3_K"), "Q4_K_S": (14, "Q4_K"), "Q4_K_M": (15, "Q4_K"),
    "Q5_K_S": (16, "Q5_K"), "Q5_K_M": (17, "Q5_K"), "Q6_K": (18, "Q6_K"), "BF16": (32, "BF16"),
}
_UNQUANTIZED = {"F32", "F16", "BF16"}
# tensor_type_fallback: a 256-block type on a row that is not a multiple of 256.
_FALLBACK = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
# Models whose hparams give LLM_TYPE_70B (llama.cpp's models/llama.cpp, models/qwen2.cpp): 80 layers,
# and for llama grouped-query attention (an 80-layer llama with n_head == n_head_kv is 65B).
_70B_LAYERS = 80


def normalize_file_type(name: str) -> str:
    key = name.strip().upper()
    if key not in FILE_TYPES:
        raise ValueError(f"llama.cpp file type {name!r} is not modelled; known: {', '.join(FILE_TYPES)} "
                         "(the IQ and MoE types take other branches of llama_tensor_get_type)")
    return key


def use_more_bits(i_layer: int, n_layers: int) -> bool:
    """llama.cpp: the first and last eighth of layers, and every third layer in between."""
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


def allows_quantization(t: GgufTensor) -> bool:
    """tensor_allows_quantization for the dense architectures: 2-D+ tensors named *weight, no norms."""
    return t.n_dims >= 2 and t.name.endswith("weight") and "_norm.weight" not in t.name


def _category(name: str) -> str:
    """tensor_get_category, in its order of tests."""
    if name == "output.weight":
        return "output"
    if name == "token_embd.weight":
        return "token_embd"
    for key in ("attn_qkv.weight", "attn_v.weight", "attn_k.weight", "attn_q.weight", "attn_output.weight"):
        if key in name:
            return key.removesuffix(".weight")
    for key in ("ffn_up", "ffn_gate", "ffn_down"):
        if key in name:
            return key
    return "other"


@dataclass(frozen=True)
class MixContext:
    """The model facts llama_tensor_get_type reads."""

    n_layers: int
    n_gqa: int  # n_head / n_head_kv
    is_70b: bool
    tied_embeddings: bool
    n_attention_wv: int


def mix_context(header: GgufHeader) -> MixContext:
    arch_70b = header.block_count == _70B_LAYERS and (
        header.architecture == "qwen2" or header.head_count != header.head_count_kv)
    return MixContext(
        n_layers=header.block_count, n_gqa=header.head_count // header.head_count_kv, is_70b=arch_70b,
        tied_embeddings=header.tied_embeddings,
        n_attention_wv=sum(_category(t.name) in ("attn_v", "attn_qkv") for t in header.tensors))


def _impl(t: GgufTensor, new: str, ftype: str, ctx: MixContext, counters: dict[str, int]) -> str:
    """llama_tensor_get_type_impl for the k-quant and legacy file types of a dense model."""
    cat = _category(t.name)
    if cat == "output" or (ctx.tied_embeddings and cat == "token_embd"):
        if t.ne[0] % GGML_TYPES[new].block_elements:
            return "Q8_0"
        return new if new == "Q8_0" else "Q6_K"
    if cat == "token_embd":
        return new
    if cat in ("attn_v", "attn_qkv"):
        i = counters["attn_v"]
        counters["attn_v"] += 1
        if ftype == "Q2_K":
            new = "Q4_K" if ctx.n_gqa >= 4 else "Q3_K"
        elif ftype == "Q3_K_M":
            new = "Q5_K" if i < 2 else "Q4_K"
        elif ftype == "Q3_K_L":
            new = "Q5_K"
        elif ftype in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, ctx.n_attention_wv):
            new = "Q6_K"
        elif ftype == "Q4_K_S" and i < 4:
            new = "Q5_K"
        if ctx.is_70b and new in ("Q3_K", "Q4_K"):
            new = "Q5_K"  # 8 heads share attn_v in the 70B: more bits at ~no size cost
        return new
    if cat == "ffn_down":
        i, n = counters["ffn_down"], ctx.n_layers
        counters["ffn_down"] += 1
        if ftype == "Q2_K":
            new = "Q3_K"
        elif ftype == "Q3_K_M":
            new = "Q5_K" if i < n // 16 else "Q4_K"  # non-Falcon: use_more_bits or not, Q4_K
        elif ftype == "Q3_K_L":
            new = "Q5_K"
        elif ftype == "Q4_K_M":
            new = "Q6_K" if use_more_bits(i, n) else new
        elif ftype == "Q5_K_M" and use_more_bits(i, n):
            new = "Q6_K"
        elif ftype == "Q4_K_S" and i < n // 8:
            new = "Q5_K"
        return new
    if cat == "attn_output":
        return {"Q2_K": "Q3_K", "Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K"}.get(ftype, new)
    return new


def _fallback(t: GgufTensor, new: str) -> str:
    """tensor_type_fallback: rows that are not whole blocks of the chosen type."""
    block = GGML_TYPES[new].block_elements
    if t.ne[0] % block == 0:
        return new
    fb = _FALLBACK.get(new, new)
    return fb if t.ne[0] % GGML_TYPES[fb].block_elements == 0 else "F16"


def quantized_types(header: GgufHeader, file_type: str) -> tuple[GgufTensor, ...]:
    """The header llama-quantize writes from `header` (an F16/BF16/F32 source) for `file_type`."""
    ftype = normalize_file_type(file_type)
    default = FILE_TYPES[ftype][1]
    ctx = mix_context(header)
    counters = {"attn_v": 0, "ffn_down": 0}
    out = list(header.tensors)
    # llama-quantize walks the loader's weights_map, ordered by weight_name_comparer (layer number, then
    # name; non-layer tensors first), not the file's order: its attn_v / ffn_down counters, and so which
    # layers use_more_bits promotes, follow that order (a file listing blk.10 before blk.2 is common).
    for i in sorted(range(len(out)), key=lambda k: (-1 if out[k].layer is None else out[k].layer, out[k].name)):
        t = out[i]
        if not allows_quantization(t):
            continue
        new = default
        if default not in _UNQUANTIZED:
            new = _fallback(t, _impl(t, new, ftype, ctx, counters))
        out[i] = t.retyped(new)
    return tuple(out)


def quantized_header(f16: GgufHeader, file_type: str) -> GgufHeader:
    """The whole header llama-quantize writes from an F16 one: the same layout, `file_type`'s mix (F16 itself as is)."""
    return f16 if file_type == "F16" else replace(f16, tensors=quantized_types(f16, file_type))


def bytes_by_type(tensors: Iterable[GgufTensor]) -> dict[str, int]:
    by_type: dict[str, int] = {}
    for t in tensors:
        by_type[t.ggml_type] = by_type.get(t.ggml_type, 0) + t.nbytes
    return dict(sorted(by_type.items()))


def tensor_bytes(tensors: Sequence[GgufTensor], label: str) -> Prediction:
    """Bytes of tensor data (ggml_nbytes summed; the file's size less header and alignment)."""
    by_type = bytes_by_type(tensors)
    counts: dict[str, int] = {}
    for t in tensors:
        counts[t.ggml_type] = counts.get(t.ggml_type, 0) + 1
    return Prediction(
        sum(by_type.values()), "B", f"sum over tensors of rows x row bytes of its ggml type ({label})",
        {"tensors": len(tensors)},
        terms=tuple(Term(f"{k} ({counts[k]} tensors)", v, "B") for k, v in by_type.items()),
        notes=("block bytes from ggml-common.h (checked against gguf-py's GGML_QUANT_SIZES)",),
    )
