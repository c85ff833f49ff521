"""Exact byte accounting for weight formats and KV-cache dtypes.

Everything here is integer bytes (or a Fraction where a rate is natural: 4.5 bits per
weight). No floats: capacity predictions compare against engine logs to the byte.

Weights are described for one matmul weight of shape [out, in] (PyTorch nn.Linear order;
`in` is the reduction dimension). Packed layouts store it transposed, e.g. AWQ's qweight
is int32[in, out/8]; the byte count is the same, only the divisibility rules differ.

Sources:
- ggml block sizes: llama.cpp ggml/src/ggml-common.h (block_q4_K etc. and their
  static_asserts), https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h
- vLLM layouts: vllm/model_executor/layers/quantization/{awq,gptq,fp8}.py,
  compressed_tensors/schemes/compressed_tensors_w8a8_int8.py (create_weights), and
  vllm/v1/kv_cache_interface.py (page_size_bytes) with vllm/config/cache.py (CacheDType).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType

from pytest_anatomy import suggest
from pytest_anatomy.specs.errors import FormatShapeError, UnknownFormatError

_GGML_SRC = "llama.cpp ggml/src/ggml-common.h (struct + static_assert)"


def _unknown(kind: str, name: str, known: Mapping[str, object], extra: str = "") -> UnknownFormatError:
    # "bf16" and "BF16" are both real keys: fold=True suggests both
    hint = suggest.did_you_mean(name, known, n=3, cutoff=0.5, fold=True, sentence=True)
    hint = f" {hint}" if hint else ""
    return UnknownFormatError(f"unknown {kind} {name!r}.{hint}{extra} Known: {', '.join(known)}.")


# --- ggml block types (shared by GGUF weights and llama.cpp KV cache) --------------------
@dataclass(frozen=True)
class GgmlType:
    """A ggml tensor type: `block_bytes` bytes store `block_elements` values, scales included."""

    name: str  # llama.cpp spelling: "Q4_K", "F16"
    block_elements: int
    block_bytes: int

    @property
    def bits_per_element(self) -> Fraction:
        return Fraction(8 * self.block_bytes, self.block_elements)

    def bytes_for(self, n_elements: int) -> int:
        """ggml_row_size: rows must hold whole blocks (ggml asserts ne % blck_size == 0)."""
        if n_elements < 0 or n_elements % self.block_elements:
            raise FormatShapeError(
                f"{self.name}: {n_elements:,} elements is not a multiple of its block of "
                f"{self.block_elements}; ggml cannot store a partial block. Use a row length that "
                f"is a multiple of {self.block_elements} or another type.")
        return n_elements // self.block_elements * self.block_bytes


# QK_K = 256 super-blocks; sizes are the static_asserts' right-hand sides.
GGML_TYPES: Mapping[str, GgmlType] = MappingProxyType({t.name: t for t in (
    GgmlType("F32", 1, 4),
    GgmlType("F16", 1, 2),
    GgmlType("BF16", 1, 2),
    GgmlType("Q8_0", 32, 34),   # fp16 d + 32 x int8
    GgmlType("Q4_0", 32, 18),   # fp16 d + 16 B nibbles
    GgmlType("Q4_1", 32, 20),   # fp16 d, m + 16 B
    GgmlType("Q5_0", 32, 22),   # fp16 d + 4 B high bits + 16 B
    GgmlType("Q5_1", 32, 24),   # fp16 d, m + 4 B + 16 B
    GgmlType("IQ4_NL", 32, 18),  # fp16 d + 16 B (non-linear grid)
    GgmlType("Q2_K", 256, 84),  # 16 B scales + 64 B quants + fp16 d, dmin
    GgmlType("Q3_K", 256, 110),  # 32 B hmask + 64 B + 12 B scales + fp16 d
    GgmlType("Q4_K", 256, 144),  # fp16 d, dmin + 12 B scales + 128 B
    GgmlType("Q5_K", 256, 176),  # fp16 d, dmin + 12 B + 32 B qh + 128 B
    GgmlType("Q6_K", 256, 210),  # 128 B ql + 64 B qh + 16 B scales + fp16 d
)})


# --- weight formats ----------------------------------------------------------------------
@dataclass(frozen=True)
class WeightFormat:
    """Storage of one [out, in] matmul weight.

    bytes = out*in*data_bytes_per_weight                (values; GGUF in-block scales too)
          + out*(in/group_size)*group_bytes_per_output  (per-group zeros/scales, AWQ/GPTQ)
          + out*per_output_channel_bytes + in*per_input_row_bytes + per_tensor_bytes
    """

    name: str
    description: str
    data_bytes_per_weight: Fraction
    source: str
    in_multiple: int = 1
    out_multiple: int = 1
    group_size: int | None = None
    group_bytes_per_output: Fraction = Fraction(0)
    per_output_channel_bytes: int = 0
    per_input_row_bytes: int = 0
    per_tensor_bytes: int = 0
    ggml: GgmlType | None = None

    def breakdown(self, shape: tuple[int, int]) -> dict[str, int]:
        """Bytes per component for `shape` = (out, in); raises FormatShapeError if unpackable."""
        out, inp = self._check(shape)
        groups = inp // self.group_size if self.group_size else 0
        parts = {
            "data": out * inp * self.data_bytes_per_weight,
            "group_metadata": out * groups * self.group_bytes_per_output,
            "per_output_channel": Fraction(out * self.per_output_channel_bytes),
            "per_input_row": Fraction(inp * self.per_input_row_bytes),
            "per_tensor": Fraction(self.per_tensor_bytes),
        }
        # The divisibility checks make every part whole; assert it rather than round.
        assert all(p.denominator == 1 for p in parts.values()), (self.name, shape, parts)
        return {k: int(v) for k, v in parts.items()}

    def bytes_for(self, shape: tuple[int, int]) -> int:
        return sum(self.breakdown(shape).values())

    @property
    def bits_per_weight(self) -> Fraction:
        """Asymptotic rate for a large matrix: values + per-group metadata. Per-channel,
        per-row and per-tensor terms vanish as the matrix grows; bits_per_weight_for counts them."""
        group = self.group_bytes_per_output / self.group_size if self.group_size else Fraction(0)
        return 8 * (self.data_bytes_per_weight + group)

    def bits_per_weight_for(self, shape: tuple[int, int]) -> Fraction:
        out, inp = self._check(shape)
        return Fraction(8 * self.bytes_for(shape), out * inp)

    def _check(self, shape: tuple[int, int]) -> tuple[int, int]:
        if len(shape) != 2 or any(not isinstance(d, int) or d <= 0 for d in shape):
            raise FormatShapeError(f"{self.name}: shape must be (out, in) positive ints, got {shape!r}")
        out, inp = shape
        if inp % self.in_multiple or out % self.out_multiple:
            raise FormatShapeError(
                f"{self.name}: shape (out={out}, in={inp}) needs in % {self.in_multiple} == 0 and "
                f"out % {self.out_multiple} == 0 ({self.description}). Under tensor parallelism "
                f"check the per-rank shard, or pick a format whose group divides it.")
        return out, inp


def awq_format(group_size: int = 128) -> WeightFormat:
    """vLLM AWQLinearMethod: qweight int32[in, out/8], qzeros int32[in/g, out/8] (4-bit
    zero points packed 8 per int32), scales fp16[in/g, out] (AWQ runs in fp16 only)."""
    return WeightFormat(
        name="awq" if group_size == 128 else f"awq-g{group_size}",
        description=f"int4 AWQ, group {group_size}, packed int32 qweight/qzeros, fp16 scales",
        data_bytes_per_weight=Fraction(1, 2), in_multiple=group_size, out_multiple=8,
        group_size=group_size, group_bytes_per_output=Fraction(1, 2) + 2,
        source="vllm/model_executor/layers/quantization/awq.py AWQLinearMethod.create_weights")


def gptq_format(group_size: int = 128) -> WeightFormat:
    """vLLM GPTQLinearMethod: qweight int32[in/8, out], qzeros int32[in/g, out/8], scales
    fp16[in/g, out], g_idx int32[in] (stored with or without act-order)."""
    return WeightFormat(
        name="gptq" if group_size == 128 else f"gptq-g{group_size}",
        description=f"int4 GPTQ, group {group_size}, packed int32 qweight/qzeros, fp16 scales, int32 g_idx",
        data_bytes_per_weight=Fraction(1, 2), in_multiple=group_size, out_multiple=8,
        group_size=group_size, group_bytes_per_output=Fraction(1, 2) + 2, per_input_row_bytes=4,
        source="vllm/model_executor/layers/quantization/gptq.py GPTQLinearMethod.create_weights")


def _gguf(t: GgmlType) -> WeightFormat:
    return WeightFormat(
        name=t.name, description=f"GGUF {t.name}: {t.block_bytes} B per block of {t.block_elements}",
        data_bytes_per_weight=Fraction(t.block_bytes, t.block_elements), in_multiple=t.block_elements,
        source=_GGML_SRC, ggml=t)


WEIGHT_FORMATS: Mapping[str, WeightFormat] = MappingProxyType({f.name: f for f in (
    WeightFormat("fp32", "float32", Fraction(4), "torch.float32 element size"),
    WeightFormat("fp16", "float16", Fraction(2), "torch.float16 element size"),
    WeightFormat("bf16", "bfloat16", Fraction(2), "torch.bfloat16 element size"),
    # Per-tensor fp32 weight_scale. A fused QKV/gate-up module keeps one per logical shard
    # (count it per shard); static activation quant adds one fp32 input_scale, not counted.
    WeightFormat("fp8", "fp8 e4m3, per-tensor fp32 scale", Fraction(1),
                 "vllm/model_executor/layers/quantization/fp8.py Fp8LinearMethod (weight_scale float32)",
                 per_tensor_bytes=4),
    # compressed-tensors W8A8 int8 channel strategy: weight_scale float32[out, 1].
    WeightFormat("int8", "int8 per-output-channel, fp32 scale per row", Fraction(1),
                 "vllm compressed_tensors_w8a8_int8.py create_weights (ChannelQuantScaleParameter float32)",
                 per_output_channel_bytes=4),
    awq_format(128),
    gptq_format(128),
    *(_gguf(t) for t in GGML_TYPES.values() if t.name != "IQ4_NL"),
)})

# llama.cpp --ftype names are per-tensor mixes, not tensor types: say so instead of guessing.
_FILE_TYPE = re.compile(r"^(I?Q\d(_K|_\d)?)_(XXS|XS|S|M|L|XL|NL)$", re.IGNORECASE)


def get_weight_format(name: str) -> WeightFormat:
    """Exact key ("bf16", "fp8", "int8", "awq", "gptq", "Q4_K", "F16", ...)."""
    if name in WEIGHT_FORMATS:
        return WEIGHT_FORMATS[name]
    extra = ""
    if _FILE_TYPE.match(name):
        extra = (f" {name!r} looks like a llama.cpp file type, which mixes tensor types "
                 f"(Q4_K_M is mostly Q4_K with some Q6_K tensors); account each tensor with its own type.")
    raise _unknown("weight format", name, WEIGHT_FORMATS, extra)


# --- vLLM KV cache dtypes ----------------------------------------------------------------
MODEL_DTYPE_BYTES: Mapping[str, int] = MappingProxyType(
    {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4})  # vLLM --dtype values


@dataclass(frozen=True)
class KVCacheDtype:
    """A vLLM `kv_cache_dtype`. layout: "plain" (head_size x element bytes), "per_token_head"
    (1 B values + one fp32 scale per token per head), "nvfp4" (packed fp4 + fp8 block scales),
    or "auto" (the model dtype; call resolve() or pass model_dtype)."""

    name: str
    layout: str
    element_bytes: int | None
    source: str = "vllm/v1/kv_cache_interface.py AttentionSpec.page_size_bytes"

    def resolve(self, model_dtype: str) -> KVCacheDtype:
        if self.layout != "auto":
            return self
        if model_dtype not in MODEL_DTYPE_BYTES:
            raise _unknown("model dtype", model_dtype, MODEL_DTYPE_BYTES,
                           " (kv_cache_dtype='auto' stores KV in the model dtype.)")
        return KVCacheDtype(f"auto={model_dtype}", "plain", MODEL_DTYPE_BYTES[model_dtype], self.source)

    def kv_head_bytes(self, head_size: int, model_dtype: str | None = None) -> int:
        """Bytes ONE token uses for ONE K (or one V) head in one layer, scales included.
        A layer's per-token KV is 2 x num_kv_heads x this (K and V heads of equal size)."""
        if head_size <= 0:
            raise ValueError(f"head_size must be positive, got {head_size!r}")
        if self.layout == "auto":
            if model_dtype is None:
                raise ValueError("kv_cache_dtype 'auto' stores KV in the model dtype: pass "
                                 f"model_dtype=<one of {', '.join(MODEL_DTYPE_BYTES)}> or resolve() first")
            return self.resolve(model_dtype).kv_head_bytes(head_size)
        if self.layout == "per_token_head":
            return head_size * 1 + 4  # fp32 scale carved from the same allocation
        if self.layout == "nvfp4":
            return head_size // 2 + head_size // 16  # vLLM's nvfp4_kv_cache_full_dim, uint8
        assert self.element_bytes is not None
        return head_size * self.element_bytes

    def token_bytes_per_layer(self, num_kv_heads: int, head_size: int, model_dtype: str | None = None) -> int:
        return 2 * num_kv_heads * self.kv_head_bytes(head_size, model_dtype)


KV_CACHE_DTYPES: Mapping[str, KVCacheDtype] = MappingProxyType({d.name: d for d in (
    KVCacheDtype("auto", "auto", None),
    KVCacheDtype("bfloat16", "plain", 2),
    KVCacheDtype("float16", "plain", 2),
    KVCacheDtype("fp8", "plain", 1),  # = fp8_e4m3; per-tensor k/v scales live outside the pages
    KVCacheDtype("fp8_e4m3", "plain", 1),
    KVCacheDtype("fp8_e5m2", "plain", 1),
    KVCacheDtype("int8_per_token_head", "per_token_head", 1),
    KVCacheDtype("fp8_per_token_head", "per_token_head", 1),
    KVCacheDtype("nvfp4", "nvfp4", None),
)})

# Accepted by vLLM's CacheDType but with layouts not modelled here (MLA-specific, Gaudi, ...).
_VLLM_UNMODELLED = ("fp8_inc", "fp8_ds_mla", "nvfp4_ds_mla", "int4_per_token_head", "nvfp4_4over6",
                    "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")


def get_kv_cache_dtype(name: str) -> KVCacheDtype:
    if name in KV_CACHE_DTYPES:
        return KV_CACHE_DTYPES[name]
    extra = ""
    if name in _VLLM_UNMODELLED:
        extra = (f" vLLM accepts {name!r} but its page layout is not modelled here; add it to "
                 "KV_CACHE_DTYPES in pytest_anatomy/specs/formats.py with its page_size_bytes rule.")
    raise _unknown("vLLM kv_cache_dtype", name, KV_CACHE_DTYPES, extra)


# --- llama.cpp KV cache types (-ctk / -ctv) ----------------------------------------------
# llama.cpp's allowed cache types (common/arg.cpp kv_cache_types); names as its CLI spells them.
LLAMACPP_KV_TYPES: Mapping[str, GgmlType] = MappingProxyType({n: GGML_TYPES[n.upper()] for n in (
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")})


def get_llamacpp_kv_type(name: str) -> GgmlType:
    """A llama.cpp cache type ("q8_0"); `.bytes_for(n)` gives bytes for n K (or V) elements."""
    if name in LLAMACPP_KV_TYPES:
        return LLAMACPP_KV_TYPES[name]
    raise _unknown("llama.cpp KV cache type", name, LLAMACPP_KV_TYPES,
                   " Quantized V cache also needs flash attention (-fa) in llama.cpp.")
