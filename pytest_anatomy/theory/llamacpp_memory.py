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
  MiB).
- `CUDA_Host compute buffer size`: the CPU backend's share of the same reserve (compute_buffer_host):
  every graph input (the scheduler places inputs on the CPU backend) and the token_embd row gather
  (its weight is on the host), each aligned to 32 B, none freed before the last is allocated.

Sources: llama.cpp vendored in llama-cpp-python 0.3.36 (ggml 0.25.3): src/llama-model.cpp
(load_tensors), src/llama-kv-cache.cpp, src/llama-context.cpp (n_ctx padding, output_reserve,
sched_reserve), ggml/src/ggml-cuda/ggml-cuda.cu (get_alignment, get_alloc_size), ggml/src/ggml-alloc.c,
ggml/src/ggml-backend.cpp (ggml_backend_sched_split_graph), src/llama-graph.cpp (the graph's inputs).
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
    # llama_context_params.n_outputs_max: 0 = n_batch (llama-bench, llama-cli, the Python binding); llama-server
    # passes n_parallel (tools/server/server-context.cpp load_model, common_speculative_get_output_limits)
    n_outputs_max: int = 0
    gpu_device: str = "CUDA0"

    @classmethod
    def from_flags(cls, flags: list[str] | tuple[str, ...], *, server: bool = False) -> ContextSettings:
        """The settings llama-server / llama-cli flags give (-c, -np, -ctk, -ctv, -b, -ub, -fa, --kv-unified);
        other flags are ignored, llama.cpp's defaults fill the rest. `server`: llama-server's own choice on top,
        n_outputs_max = -np (one output per slot; no draft model)."""
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
        if server:
            values["n_outputs_max"] = values.get("n_seq_max", 1)
        return cls(**values)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        for name in ("n_ctx", "n_seq_max", "n_batch", "n_ubatch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.n_outputs_max < 0:
            raise ValueError(f"n_outputs_max must be >= 0 (0 = n_batch), got {self.n_outputs_max}")
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


HOST_ALIGNMENT = 32  # ggml-impl.h TENSOR_ALIGNMENT: the CPU buffer type's, which the CUDA_Host type borrows
HADAMARD_MIN = 64  # src/llama-kv-cache.cpp build_input_k_rot / build_input_v_rot: rotations start at 64 x 64


def reserve_graphs(settings: ContextSettings) -> tuple[tuple[int, int], tuple[int, int]]:
    """(n_tokens, n_outputs) of the two graphs llama_context::sched_reserve sizes the buffers on: the prompt graph
    (min(n_ctx, n_ubatch) tokens, min(that, n_outputs_max) outputs) and the generation graph (n_seq_max tokens and
    outputs). n_batch = min(-c, -b) and n_ubatch = min(n_batch, -ub) (llama_context's constructor); graph_reserve
    rounds n_tokens up to a multiple of n_seq_max (one equal split per sequence)."""
    n_batch = min(settings.n_ctx, settings.n_batch)
    n_ubatch = min(n_batch, settings.n_ubatch)
    n_outputs_max = settings.n_outputs_max or n_batch
    n_seqs = settings.n_seq_max
    prompt = min(_pad(settings.n_ctx, KV_CELL_PADDING), n_ubatch)
    return (_pad(prompt, n_seqs), min(prompt, n_outputs_max)), (n_seqs, n_seqs)


def _hadamard_k(head_dim: int) -> int:
    """build_input_k_rot: the largest power of two from 64 up that divides the K head dimension."""
    n = HADAMARD_MIN
    while head_dim % (2 * n) == 0:
        n *= 2
    return n


def host_compute_tensors(header: GgufHeader, settings: ContextSettings, n_tokens: int,
                         n_outputs: int) -> tuple[Term, ...]:
    """The tensors of one reserved graph that ggml-alloc places in the CPU backend's (CUDA_Host) compute buffer.

    ggml_backend_sched_split_graph gives every graph input (GGML_TENSOR_FLAG_INPUT) to the last backend, the CPU
    (backend_id_from_cur "1.inp"), and the token_embd row gather to the backend of its weight, the host (get_rows is
    never offloaded: ggml-cuda get_op_batch_size is 0 for it). The GPU split's copies of those inputs live in the
    GPU buffer. ggml_gallocr_alloc_graph_impl allocates every leaf first and the gather after them, and an input the
    GPU split copies keeps a view (the scheduler's input_dep) that is never released: so nothing is freed before the
    last allocation and the buffer is the sum, each tensor aligned to HOST_ALIGNMENT (ggml_dyn_tallocr_alloc)."""
    n_embd, n_kv = header.embedding_length, kv_cells(settings)[0]
    n_embd_v_gqa = header.head_count_kv * header.value_length
    tensors = [
        # src/llama-graph.cpp build_inp_embd: token ids (i32) and the embeddings input (f32, in the graph even when
        # tokens are fed: ggml_build_forward_select keeps both paths) ...
        Term("inp_tokens", 4 * n_tokens, "B", "i32 x n_tokens (llama-graph.cpp build_inp_embd)"),
        Term("inp_embd", 4 * n_embd * n_tokens, "B", "f32 n_embd x n_tokens (llama-graph.cpp build_inp_embd)"),
        # ... and ggml_get_rows(tok_embd, inp_tokens): f32 rows, computed on the host where token_embd lives
        Term("token_embd gather", 4 * n_embd * n_tokens, "B", "f32 n_embd x n_tokens (build_inp_embd get_rows)"),
        # build_inp_pos: one i32 position per token (n_pos_per_embd = 1 without M-RoPE)
        Term("inp_pos", 4 * n_tokens, "B", "i32 x n_tokens (llama-graph.cpp build_inp_pos)"),
        # build_attn_inp_kq_mask: n_kv x n_tokens/n_stream x 1 x n_stream, f16 with flash attention, f32 without
        Term("attn_inp_kq_mask", (2 if settings.flash_attn else 4) * n_kv * n_tokens, "B",
             f"{'f16' if settings.flash_attn else 'f32'} n_kv {n_kv} x n_tokens (llama-graph.cpp "
             "build_attn_inp_kq_mask; n_kv = cells per stream, llama_kv_cache_context(kv) get_size)"),
        # build_inp_out_ids: the rows the last layer keeps
        Term("out_ids", 4 * n_outputs, "B", "i32 x n_outputs (llama-graph.cpp build_inp_out_ids)"),
        # src/llama-kv-cache.cpp build_input_k_idxs / build_input_v_idxs: i64 cell indices; without flash attention
        # V is stored transposed (attn_v_trans = !flash_attn) and indexed per element
        Term("attn_inp_k_idxs", 8 * n_tokens, "B", "i64 x n_tokens (llama-kv-cache.cpp build_input_k_idxs)"),
        Term("attn_inp_v_idxs", 8 * n_tokens * (1 if settings.flash_attn else n_embd_v_gqa), "B",
             "i64 x n_tokens" + ("" if settings.flash_attn else f" x n_embd_v_gqa {n_embd_v_gqa} (V transposed)")
             + " (llama-kv-cache.cpp build_input_v_idxs)"),
    ]
    # build_input_k_rot / build_input_v_rot: f32 Hadamard rotations of a quantized cache (attn_rot_k / attn_rot_v:
    # ggml_is_quantized(type) and a head dimension that is a multiple of 64)
    if settings.type_k.upper() in QUANTIZED and header.key_length % HADAMARD_MIN == 0:
        n = _hadamard_k(header.key_length)
        tensors.append(Term("attn_inp_k_rot", 4 * n * n, "B", f"f32 {n} x {n} (build_input_k_rot)"))
    if settings.type_v.upper() in QUANTIZED and header.value_length % HADAMARD_MIN == 0:
        tensors.append(Term("attn_inp_v_rot", 4 * HADAMARD_MIN ** 2, "B", "f32 64 x 64 (build_input_v_rot)"))
    return tuple(tensors)


def compute_buffer_host(header: GgufHeader, settings: ContextSettings = ContextSettings()) -> Prediction:
    """`CUDA_Host compute buffer size`: the larger of the two reserved graphs' host tensors (ggml_gallocr only
    grows a buffer: ggml_gallocr_reserve_n_impl reallocates when a chunk's max_size exceeds the current one)."""
    sized = []
    for n_tokens, n_outputs in reserve_graphs(settings):
        terms = host_compute_tensors(header, settings, n_tokens, n_outputs)
        sized.append((sum(_pad(int(t.value), HOST_ALIGNMENT) for t in terms), n_tokens, n_outputs, terms))
    value, n_tokens, n_outputs, terms = max(sized, key=lambda x: x[0])
    return Prediction(
        value, "B", "sum over the graph's inputs and the token_embd gather on the host, each aligned to 32 B",
        {"n_tokens": n_tokens, "n_outputs": n_outputs, "n_kv": kv_cells(settings)[0],
         "n_embd": header.embedding_length, "flash_attn": settings.flash_attn, "kv_unified": settings.kv_unified},
        terms=terms,
        notes=("one GPU (the scheduler keeps one copy of each input: sched copies = 1; pipeline parallelism over "
               "several GPUs keeps more), a dense model with one KV cache (no SWA), token_embd on the host",),
    )


def gpu_buffers_total(header: GgufHeader, settings: ContextSettings = ContextSettings()) -> Prediction:
    """The GPU buffers llama.cpp logs: model + KV + compute (the output buffer is host memory)."""
    parts = (("model buffer", model_buffer_gpu(header, settings)), ("KV buffer", kv_buffer(header, settings)),
             ("compute buffer", compute_buffer_gpu(header, settings)))
    return Prediction(sum(p.value for _, p in parts), "B", "model + KV + compute buffers on the GPU",
                      {"n_ctx": settings.n_ctx, "n_seq_max": settings.n_seq_max},
                      terms=tuple(Term(n, p.value, "B", p.formula) for n, p in parts))
