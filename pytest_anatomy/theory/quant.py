"""Quantized weight sizes. GGUF "mostly" file types mix block types per tensor; the mix is
llama.cpp's `llama_tensor_get_type` (src/llama-quant.cpp), reproduced here for the file types
we reconcile. Read from llama.cpp's source, not fitted."""

from __future__ import annotations

from pytest_anatomy.specs.formats import GGML_TYPES
from pytest_anatomy.specs.model import ModelSpec, ParamTensor
from pytest_anatomy.theory.prediction import Prediction, Term

# Base type of each llama.cpp ftype ("mostly X").
_FTYPE_BASE = {"Q4_K_M": "Q4_K", "Q4_K_S": "Q4_K", "Q5_K_M": "Q5_K", "Q6_K": "Q6_K", "Q8_0": "Q8_0",
               "Q4_0": "Q4_0", "F16": "F16", "BF16": "BF16"}
# If a row length is not a multiple of the k-quant block (256), llama.cpp falls back to these.
_FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "Q2_K": "Q4_0", "Q3_K": "Q4_0"}


def use_more_bits(i_layer: int, n_layers: int) -> bool:
    """llama.cpp: the first and last eighth of layers, and every third layer in between."""
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


def _layer_of(t: ParamTensor) -> int | None:
    parts = t.name.split(".")
    if "layers" in parts:
        return int(parts[parts.index("layers") + 1])
    return None


def gguf_tensor_type(model: ModelSpec, t: ParamTensor, ftype: str) -> str:
    """Block type llama.cpp gives tensor `t` in a file of type `ftype` (dense models)."""
    if ftype not in _FTYPE_BASE:
        raise ValueError(f"GGUF file type {ftype!r} is not modelled; known: {', '.join(_FTYPE_BASE)}")
    if len(t.shape) < 2:
        return "F32"  # norms and biases are kept in F32
    base = _FTYPE_BASE[ftype]
    n = model.num_layers
    i = _layer_of(t)
    if t.role == "lm_head" or (t.role == "embedding" and model.tie_word_embeddings):
        new = "Q6_K" if base not in ("Q8_0", "F16", "BF16") else base
    elif t.role == "embedding":
        new = base
    elif ftype in ("Q4_K_M", "Q5_K_M") and i is not None and (
        t.name.endswith("v_proj.weight") or t.name.endswith("down_proj.weight")
    ) and use_more_bits(i, n):
        new = "Q6_K"
    else:
        new = base
    row = t.shape[-1]  # ggml's ne[0] is the input dimension of an [out, in] weight
    block = GGML_TYPES[new].block_elements if new in GGML_TYPES else 1
    if row % block:
        new = _FALLBACK.get(new, new)
    return new


def gguf_weight_bytes(model: ModelSpec, ftype: str = "Q4_K_M") -> Prediction:
    """Bytes of the tensors a GGUF file of `ftype` holds (tensor data, no metadata)."""
    if model.is_moe or model.is_mla:
        raise ValueError(f"{model.name}: the GGUF type mix is modelled for dense, non-MLA models only")
    by_type: dict[str, int] = {}
    for t in model.parameter_tensors():
        if t.role == "lm_head" and model.tie_word_embeddings:
            continue
        gtype = gguf_tensor_type(model, t, ftype)
        by_type[gtype] = by_type.get(gtype, 0) + GGML_TYPES[gtype].bytes_for(t.numel)
    total = sum(by_type.values())
    return Prediction(
        total, "B", f"sum over tensors of bytes(llama.cpp {ftype} type mix)",
        {"ftype": ftype, "layers": model.num_layers},
        terms=tuple(Term(k, v, "B") for k, v in sorted(by_type.items())),
        notes=("type mix from llama.cpp's llama_tensor_get_type: attn_v and ffn_down get Q6_K on "
               "use_more_bits layers, output Q6_K, 1-D tensors F32",),
    )


def llamacpp_gpu_weight_bytes(model: ModelSpec, ftype: str = "Q4_K_M") -> Prediction:
    """Weights llama.cpp puts on the GPU with full offload (-ngl 99).

    The token embedding stays in host memory: its lookup is a row gather done on the CPU
    (llama.cpp's input layer is never offloaded); every other tensor goes to the GPU."""
    full = gguf_weight_bytes(model, ftype)
    emb = next(t for t in model.parameter_tensors() if t.role == "embedding")
    emb_bytes = GGML_TYPES[gguf_tensor_type(model, emb, ftype)].bytes_for(emb.numel)
    if model.tie_word_embeddings:
        # Tied models use the same tensor as the output matrix, which is offloaded: llama.cpp
        # then duplicates it as `output` on the GPU; counting it once on each side is exact.
        emb_bytes = 0
    return Prediction(
        full.value - emb_bytes, "B", "GGUF tensor bytes - token_embd (kept in host memory)",
        {"ftype": ftype}, terms=(Term("GGUF tensors", full.value, "B"), Term("- token_embd", -emb_bytes, "B")),
        notes=full.notes,
    )
