"""Exact bytes of a quantized model: a llama.cpp file type's GGUF, and vLLM's weights per method.

GGUF: llama-quantize's per-tensor types (theory/gguf_mix.py: Q6_K promotions, 256-block fallbacks)
times ggml's block sizes (specs/formats.py GGML_TYPES) give the tensor data to the byte; bits per
weight is llama.cpp's own BPW, 8 x tensor bytes / elements over every tensor (llama_model_loader's
"file size = ... (x BPW)" divides the tensors' ggml_nbytes by their element count, norms included).

vLLM: the parameters each quantization method allocates for one replica, per *fused* module
(qkv_proj, o_proj, gate_up_proj, down_proj), because a per-tensor scale or a g_idx belongs to the
module vLLM builds, not to the checkpoint's separate q/k/v tensors:

- fp8 (online W8A8, `quantization="fp8"` on a bf16 checkpoint): an fp8 e4m3 weight and ONE fp32
  weight_scale per module (process_weights_after_loading quantizes the fused weight with a single
  per-tensor scale; activations are scaled dynamically, no input_scale is kept);
- awq (int4, group 128, awq_marlin on Hopper keeps AWQ's bytes: qweight and qzeros int32 packed 8
  nibbles each, fp16 scales per group; the Marlin workspace is a separate, small allocation);
- gptq (int4, group 128: the same plus g_idx int32[in] per module).

Embeddings, lm_head (tied or not), norms and biases stay in the model dtype: vLLM's fp8, AWQ and
GPTQ methods return no quantized method for a VocabParallelEmbedding/ParallelLMHead by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType

from pytest_anatomy.specs.formats import WEIGHT_FORMATS, WeightFormat
from pytest_anatomy.specs.gguf_file import GgufHeader, GgufTensor
from pytest_anatomy.specs.model import ModelSpec, ParamTensor
from pytest_anatomy.theory.capacity import NotModeled
from pytest_anatomy.theory.gguf_mix import bytes_by_type, quantized_types, tensor_bytes
from pytest_anatomy.theory.prediction import Prediction, Term

# The llama.cpp shootout, in falling size.
GGUF_SHOOTOUT = ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K")

# vLLM --quantization -> the weight format of its linear modules (specs/formats.py).
VLLM_METHODS: Mapping[str, WeightFormat] = MappingProxyType({
    "fp8": WEIGHT_FORMATS["fp8"], "awq": WEIGHT_FORMATS["awq"], "gptq": WEIGHT_FORMATS["gptq"]})
# HF projection -> the vLLM module it is fused into (LlamaAttention / LlamaMLP, Qwen2 alike).
_FUSED = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj", "gate_proj": "gate_up_proj",
          "up_proj": "gate_up_proj", "o_proj": "o_proj", "down_proj": "down_proj"}


class UnknownQuantization(ValueError):
    """A --quantization this module does not model; the message lists the known ones."""


def check_method(method: str) -> WeightFormat:
    if method not in VLLM_METHODS:
        raise UnknownQuantization(f"unknown --quantization {method!r}; known: {', '.join(VLLM_METHODS)} "
                                  "(vLLM's other methods are not modelled: their parameters are not laid out here)")
    return VLLM_METHODS[method]


# --- GGUF -----------------------------------------------------------------------------------
def gguf_elements(tensors: tuple[GgufTensor, ...]) -> int:
    return sum(t.numel for t in tensors)


def gguf_bits_per_weight(tensors: tuple[GgufTensor, ...]) -> Fraction:
    """llama.cpp's BPW: 8 x sum of ggml_nbytes / sum of elements, over every tensor."""
    return Fraction(8 * sum(t.nbytes for t in tensors), gguf_elements(tensors))


def gguf_file(source: GgufHeader, file_type: str) -> dict[str, Prediction]:
    """tensor_bytes and bits_per_weight of the GGUF llama-quantize writes from an F16/BF16 source."""
    tensors = quantized_types(source, file_type)
    data = tensor_bytes(tensors, f"{file_type} from {source.source}")
    bpw = gguf_bits_per_weight(tensors)
    by_type = bytes_by_type(tensors)
    return {
        "tensor_bytes": data,
        "bits_per_weight": Prediction(
            float(bpw), "bit", "8 x tensor_bytes / elements (llama.cpp's BPW, norms included)",
            {"tensor_bytes": data.value, "elements": gguf_elements(tensors), "file_type": file_type},
            terms=tuple(Term(f"{k} share of bytes", v / data.value, "x") for k, v in by_type.items())),
    }


# --- vLLM -----------------------------------------------------------------------------------
def fused_linear_shapes(model: ModelSpec) -> dict[str, tuple[int, int]]:
    """(out, in) of every fused linear module vLLM builds for a dense decoder, by module name."""
    if model.is_moe or model.is_mla:
        raise NotModeled(f"{model.name}: quantized weights are laid out for dense decoders only "
                         "(MoE experts and MLA projections are quantized by other vLLM methods)")
    shapes: dict[str, tuple[int, int]] = {}
    for t in model.parameter_tensors():
        if not _is_fused_linear(t):
            continue
        parts = t.name.split(".")
        module = ".".join(parts[:-2] + [_FUSED[parts[-2]]])
        out, inp = shapes.get(module, (0, t.shape[1]))
        if inp != t.shape[1]:
            raise NotModeled(f"{module}: fused shards disagree on the input width ({inp} vs {t.shape[1]})")
        shapes[module] = (out + t.shape[0], inp)
    return shapes


def _is_fused_linear(t: ParamTensor) -> bool:
    """A 2-D projection weight of attention or MLP (not lm_head, not a bias, not a norm)."""
    parts = t.name.split(".")
    return len(t.shape) == 2 and t.linear and t.role != "lm_head" and len(parts) >= 3 and parts[-2] in _FUSED


def _model_dtype_bytes(model: ModelSpec) -> int:
    return model.dtype_bytes or 2  # vLLM's default dtype for fp32 configs is bf16/fp16: 2 B


def vllm_weight_bytes(model: ModelSpec, method: str | None, tp: int = 1) -> Prediction:
    """Bytes of every parameter vLLM keeps after loading `model` with `--quantization method`
    (None: unquantized, every tensor in the model dtype). Per rank = total / tp (as capacity.weight_bytes)."""
    elem = _model_dtype_bytes(model)
    linear = check_method(method) if method else None
    shapes = fused_linear_shapes(model)
    parts: dict[str, int] = {"linear weights": 0, "linear metadata": 0, "unquantized tensors": 0}
    for name, shape in shapes.items():
        if linear is None:
            parts["linear weights"] += shape[0] * shape[1] * elem
            continue
        b = linear.breakdown(shape)
        parts["linear weights"] += b["data"]
        parts["linear metadata"] += sum(v for k, v in b.items() if k != "data")
    parts["unquantized tensors"] = sum(t.numel * elem for t in model.parameter_tensors() if not _is_fused_linear(t))
    total = sum(parts.values())
    notes = ["embeddings, lm_head, norms and biases in the model dtype (no quantized method for them in vLLM)"]
    if method == "fp8":
        notes.append("one fp32 weight_scale per fused module: online fp8 quantizes the fused weight at once")
    if tp > 1:
        notes.append("per rank = total / tp")
    return Prediction(
        total / tp, "B", "sum over fused linear modules of bytes(method, (out, in)) + unquantized tensors x dtype",
        {"quantization": method or "none", "modules": len(shapes), "dtype_bytes": elem, "tp": tp},
        terms=tuple(Term(k, v / tp, "B") for k, v in parts.items()), notes=tuple(notes))


def vllm_matmul_bytes_per_step(model: ModelSpec, method: str | None) -> Prediction:
    """Bytes a decode step streams for its matmuls: every linear module at the method's bytes, their
    biases and the lm_head (the embedding matrix when tied) in the model dtype; the embedding gather
    is not a matmul. Unquantized, this is capacity.weight_bytes(matmul_only=True)."""
    elem = _model_dtype_bytes(model)
    linear = check_method(method) if method else None
    modules = sum((linear.bytes_for(s) if linear else s[0] * s[1] * elem) for s in fused_linear_shapes(model).values())
    biases = sum(t.numel * elem for t in model.parameter_tensors() if t.linear and len(t.shape) == 1)
    head = model.vocab_size * model.hidden_size * elem
    return Prediction(modules + biases + head, "B", "linear modules at the method's bytes + biases + lm_head "
                      "in the model dtype", {"quantization": method or "none"},
                      terms=(Term("linear modules", modules, "B"), Term("biases", biases, "B"),
                             Term("lm_head", head, "B")))
