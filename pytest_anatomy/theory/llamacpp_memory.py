"""llama.cpp's memory ledger of one context, from a GGUF header and the context's settings.

Each term is a buffer llama.cpp allocates and logs at load (llama_model_load / llama_context):

- `<dev> model buffer size`: with every layer offloaded (-ngl >= layers + 1) the input layer
  stays on the host: token_embd is a row gather done on the CPU, memory-mapped from the file
  (`CPU_Mapped`: exactly the tensor's bytes). Every other tensor goes to the GPU buffer, each
  padded by ggml-cuda's get_alloc_size (a quantized tensor whose row length is not a multiple of
  MATRIX_ROW_PADDING = 512 gets one partial row more) and aligned to 128 B (the CUDA buffer
  type's alignment). A tied model's output matrix is token_embd duplicated onto the GPU.
- `KV buffer size`: llama_kv_cache allocates per layer K and V tensors of (n_embd_gqa, cells,
  streams): cells = n_ctx padded to 256, split into n_seq_max streams of n_ctx/n_seq_max cells
  (each padded to 256) unless the cache is unified (--kv-unified); same alloc-size rule.
- `output buffer size`: logits for n_seq_max outputs: n_vocab x n_seq_max x 4 B (float), in the
  host buffer of the output's device (`CUDA_Host`).
- `compute buffer size` on the GPU: ggml-alloc's peak over the worst-case graph (n_ubatch tokens,
  n_ubatch outputs). With flash attention the attention scores are never materialised and the
  largest step is the lm_head: its f32 output (n_vocab x n_ubatch) and f32 input (n_embd x n_ubatch)
  are live together. Derived from the graph, checked on one shape so far (Qwen2.5-0.5B, 298.50
  MiB); the host-side compute buffer (inputs, the CPU embedding gather) is not modelled.

Sources: llama.cpp vendored in llama-cpp-python 0.3.36 (ggml 0.25.3): src/llama-model.cpp
(load_tensors), src/llama-kv-cache.cpp, src/llama-context.cpp (n_ctx padding, output_reserve,
sched_reserve), ggml/src/ggml-cuda/ggml-cuda.cu (get_alignment, get_alloc_size), ggml/src/ggml-alloc.c.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_anatomy.specs.formats import GGML_TYPES, get_llamacpp_kv_type
from pytest_anatomy.specs.gguf_file import GgufHeader, GgufTensor
from pytest_anatomy.theory.prediction import Prediction, Term

CUDA_ALIGNMENT = 128  # ggml_backend_cuda_buffer_type_get_alignment
MATRIX_ROW_PADDING = 512  # ggml-cuda common.cuh: last row of quantized matrices padded to this
KV_CELL_PADDING = 256  # llama_context: n_ctx (and n_ctx_seq) padded to a multiple of 256
LOGIT_BYTES = 4  # float logits
QUANTIZED = frozenset(GGML_TYPES) - {"F32", "F16", "BF16"}


@dataclass(frozen=True)
class ContextSettings:
    """The settings that shape a context's buffers (llama-server / llama-bench flags)."""

    n_ctx: int = 4096  # -c
    n_seq_max: int = 1  # -np (the server's slots)
    kv_unified: bool = False  # --kv-unified
    type_k: str = "f16"  # -ctk
    type_v: str = "f16"  # -ctv
    n_batch: int = 2048  # -b
    n_ubatch: int = 512  # -ub
    flash_attn: bool = True  # -fa (auto picks on for CUDA)
    gpu_device: str = "CUDA0"

    @classmethod
    def from_flags(cls, flags: list[str] | tuple[str, ...]) -> ContextSettings:
        """The settings llama-server / llama-cli flags give (-c, -np, -ctk, -ctv, -b, -ub, -fa, --kv-unified);
        other flags are ignored, llama.cpp's defaults fill the rest."""
        names = {"-c": "n_ctx", "--ctx-size": "n_ctx", "-np": "n_seq_max", "--parallel": "n_seq_max",
                 "-b": "n_batch", "--batch-size": "n_batch", "-ub": "n_ubatch", "--ubatch-size": "n_ubatch",
                 "-ctk": "type_k", "--cache-type-k": "type_k", "-ctv": "type_v", "--cache-type-v": "type_v",
                 "-fa": "flash_attn", "--flash-attn": "flash_attn"}
        values: dict[str, object] = {}
        it = iter(flags)
        for flag in it:
            if flag == "--kv-unified":
                values["kv_unified"] = True
            elif flag in names:
                raw = next(it, None)
                if raw is None:
                    raise ValueError(f"llama.cpp flag {flag} needs a value")
                key = names[flag]
                if key == "flash_attn":
                    values[key] = raw not in ("off", "0", "false")
                elif key in ("type_k", "type_v"):
                    values[key] = raw
                else:
                    values[key] = int(raw)
        return cls(**values)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        for name in ("n_ctx", "n_seq_max", "n_batch", "n_ubatch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        get_llamacpp_kv_type(self.type_k)
        get_llamacpp_kv_type(self.type_v)
        if self.type_v != "f16" and self.type_v != "f32" and self.type_v != "bf16" and not self.flash_attn:
            raise ValueError(f"a quantized V cache (-ctv {self.type_v}) needs flash attention (-fa on) in llama.cpp")


def _pad(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def cuda_alloc_bytes(t: GgufTensor) -> int:
    """ggml_backend_cuda_buffer_type_get_alloc_size, then aligned as ggml-alloc places it."""
    size = t.nbytes
    if t.ggml_type in QUANTIZED and t.ne[0] % MATRIX_ROW_PADDING:
        size += GGML_TYPES[t.ggml_type].bytes_for(MATRIX_ROW_PADDING - t.ne[0] % MATRIX_ROW_PADDING)
    return _pad(size, CUDA_ALIGNMENT)


def gpu_tensors(header: GgufHeader) -> tuple[GgufTensor, ...]:
    """What a full offload puts on the GPU: all but token_embd, plus token_embd as the output if tied."""
    tensors = tuple(t for t in header.tensors if t.name != "token_embd.weight")
    if header.tied_embeddings:
        tensors += (header.tensor("token_embd.weight"),)
    return tensors


def model_buffer_gpu(header: GgufHeader, settings: ContextSettings = ContextSettings()) -> Prediction:
    tensors = gpu_tensors(header)
    raw = sum(t.nbytes for t in tensors)
    padded = sum(cuda_alloc_bytes(t) for t in tensors)
    by_type: dict[str, int] = {}
    for t in tensors:
        by_type[t.ggml_type] = by_type.get(t.ggml_type, 0) + cuda_alloc_bytes(t)
    note = "output = token_embd duplicated onto the GPU (tied embeddings)" if header.tied_embeddings else \
        "output.weight on the GPU; token_embd on the host"
    return Prediction(
        padded, "B", "sum over GPU tensors of pad128(nbytes + quantized row padding to 512)",
        {"tensors": len(tensors), "tied": header.tied_embeddings},
        terms=(*(Term(f"{k} tensors", v, "B") for k, v in sorted(by_type.items())),
               Term("of which CUDA padding and alignment", padded - raw, "B")),
        notes=(note,),
    )


def model_buffer_host(header: GgufHeader) -> Prediction:
    emb = header.tensor("token_embd.weight")
    return Prediction(
        emb.nbytes, "B", "token_embd bytes (memory-mapped from the file: the CPU gathers input rows)",
        {"type": emb.ggml_type, "ne": emb.ne}, terms=(Term(f"token_embd ({emb.ggml_type})", emb.nbytes, "B"),))


def kv_cells(settings: ContextSettings) -> tuple[int, int, int]:
    """(cells per stream, streams, total cells) as llama_context pads them."""
    n_ctx = _pad(settings.n_ctx, KV_CELL_PADDING)
    if settings.kv_unified:
        return n_ctx, 1, n_ctx
    per_seq = _pad(n_ctx // settings.n_seq_max, KV_CELL_PADDING)
    return per_seq, settings.n_seq_max, per_seq * settings.n_seq_max


def kv_buffer(header: GgufHeader, settings: ContextSettings = ContextSettings()) -> Prediction:
    cells, streams, total = kv_cells(settings)
    k = GgufTensor("cache_k", settings.type_k.upper(), (header.head_count_kv * header.key_length, cells, streams))
    v = GgufTensor("cache_v", settings.type_v.upper(), (header.head_count_kv * header.value_length, cells, streams))
    k_bytes, v_bytes = cuda_alloc_bytes(k), cuda_alloc_bytes(v)
    value = header.block_count * (k_bytes + v_bytes)
    return Prediction(
        value, "B", "layers x (K + V), each (kv_heads x head_dim) x cells x streams of its type, CUDA-padded",
        {"n_ctx": settings.n_ctx, "cells": total, "streams": streams, "layers": header.block_count,
         "type_k": settings.type_k, "type_v": settings.type_v, "kv_unified": settings.kv_unified},
        terms=(Term("K per layer", k_bytes, "B", f"{k.ne}"), Term("V per layer", v_bytes, "B", f"{v.ne}"),
               Term("cells", total, "tokens", "n_ctx padded to 256 (per stream unless unified)")),
    )


def output_buffer(header: GgufHeader, settings: ContextSettings = ContextSettings()) -> Prediction:
    value = header.vocab_size * settings.n_seq_max * LOGIT_BYTES
    return Prediction(value, "B", "n_vocab x n_seq_max x 4 B (logits, host buffer)",
                      {"n_vocab": header.vocab_size, "n_seq_max": settings.n_seq_max})


class ComputeBufferNotModeled(NotImplementedError):
    """The GPU compute buffer without flash attention: its peak is the attention score matrix, whose
    place in ggml-alloc's reuse is not derived here."""


def compute_buffer_gpu(header: GgufHeader, settings: ContextSettings = ContextSettings()) -> Prediction:
    if not settings.flash_attn:
        raise ComputeBufferNotModeled(
            "the compute buffer is predicted with flash attention only (-fa on): without it the "
            "n_head x n_kv x n_ubatch score matrix can be the largest step, and ggml-alloc's reuse of it is not modelled")
    tokens = min(settings.n_ctx, settings.n_ubatch, settings.n_batch)
    outputs = min(tokens, settings.n_batch)
    logits = header.vocab_size * outputs * 4
    hidden = header.embedding_length * tokens * 4
    return Prediction(
        logits + hidden, "B", "lm_head step: f32 logits (n_vocab x n_ubatch) + its f32 input (n_embd x n_ubatch)",
        {"n_ubatch": tokens, "n_vocab": header.vocab_size, "n_embd": header.embedding_length,
         "flash_attn": settings.flash_attn},
        terms=(Term("logits", logits, "B"), Term("lm_head input", hidden, "B")),
        notes=("derived from the worst-case graph; holds while the lm_head step is the largest, i.e. with "
               "flash attention (no n_head x n_kv x n_ubatch score matrix) and an FFN narrower than the vocabulary",),
    )


def gpu_buffers_total(header: GgufHeader, settings: ContextSettings = ContextSettings()) -> Prediction:
    """The GPU buffers llama.cpp logs: model + KV + compute (the output buffer is host memory)."""
    parts = (("model buffer", model_buffer_gpu(header, settings)), ("KV buffer", kv_buffer(header, settings)),
             ("compute buffer", compute_buffer_gpu(header, settings)))
    return Prediction(sum(p.value for _, p in parts), "B", "model + KV + compute buffers on the GPU",
                      {"n_ctx": settings.n_ctx, "n_seq_max": settings.n_seq_max},
                      terms=tuple(Term(n, p.value, "B", p.formula) for n, p in parts))
