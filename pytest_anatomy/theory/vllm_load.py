"""The tensors vLLM 0.26.0 creates while it loads a dense decoder, replayed through the
caching-allocator model: the "Model loading took X GiB" term, to the byte.

What vLLM allocates inside its load profiler (`DeviceMemoryProfiler` around
`model_loader.load_model`, under `max_split_size_mb=20` set by `Worker.load_model`), in
module-construction order (`LlamaForCausalLM` / `Qwen2ForCausalLM`, `load_format="dummy"`
fills the parameters in place):

1. the vocab-parallel embedding, vocab padded to a multiple of 64 and split over TP ranks;
2. per layer: fused QKV weight (+ bias for Qwen2), o_proj; in the first layer the rotary
   embedding computes its cos/sin cache (`RotaryEmbeddingBase`: fp32 temporaries freqs, cos,
   sin of [max_position, rotary_dim/2] and their concatenation [max_position, rotary_dim],
   then the cache kept in the model dtype: max_position x rotary_dim x 2 B, one instance shared
   by all layers through `get_rope`'s cache); the Attention layer's four fp32 scale buffers
   (`_k_scale`, `_v_scale`, `_q_scale`, `_prob_scale`, 512 B blocks each) and five more fp32
   scalars (`_k_scale_cpu`, `_v_scale_cpu`, `q_range`, `k_range`, `v_range`) that land on the
   GPU under the loader's device context and are replaced by CPU tensors in
   `process_weights_after_loading`; the fused gate_up and down projections; two RMSNorm weights;
3. the final norm and, unless tied, the lm_head.

With an fp8 KV cache on FlashAttention 3, each Attention builds a `QuantFP8` for its queries,
whose constructor asks `is_deep_gemm_e8m0_used()`; that imports the DeepGEMM bundled in the
vLLM wheel, whose `DeviceRuntime` keeps a 32 MiB cuBLASLt workspace (`torch::empty`,
kCublasLtWorkspaceSize = 32 MiB in DeepGEMM's device_runtime.hpp) for the process.

The allocator's rounding and its whole-block hand-outs (a 24.5 MiB o_proj taking a freed
32 MiB rope temporary under max_split_size=20 MiB) are where "weights as loaded" exceeds the
parameter bytes beyond the rope cache.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory.capacity import NotModeled
from pytest_anatomy.theory.torch_allocator import CachingAllocatorModel, MiB

SUPPORTED_MODEL_TYPES = frozenset({"llama", "mistral", "qwen2"})
VOCAB_PADDING = 64  # vllm.model_executor.layers.vocab_parallel_embedding.DEFAULT_VOCAB_PADDING_SIZE
LOAD_MAX_SPLIT = 20 * MiB  # Worker.load_model: _scoped_allocator_max_split(max_split_size_mb=20)
SCALE_BUFFERS_KEPT = 4  # _k_scale, _v_scale, _q_scale, _prob_scale (fp32 scalars, registered buffers)
SCALARS_DROPPED = 5  # _k_scale_cpu, _v_scale_cpu, q_range, k_range, v_range (GPU until post-load)
DEEPGEMM_WORKSPACE = 32 * MiB  # DeepGEMM DeviceRuntime::kCublasLtWorkspaceSize
_ROPE_TYPES = frozenset({"default", "llama3"})  # cache of max_position rows; others scale the length


@dataclass(frozen=True)
class RankShapes:
    """Per-rank tensor sizes (elements) of one decoder layer and the vocab shard."""

    vocab_rows: int
    qkv_out: int
    attn_out: int  # q heads of this rank x head_dim (the o_proj input)
    intermediate: int  # I / tp
    kv_heads: int


def check_supported(model: ModelSpec) -> None:
    """Raise NotModeled (with what to do instead) for architectures the load sequence does not cover."""
    if model.model_type not in SUPPORTED_MODEL_TYPES or model.is_moe or model.attention == "mla":
        raise NotModeled(
            f"{model.name}: vLLM's load sequence is modelled for dense llama/mistral/qwen2 decoders only "
            f"(model_type={model.model_type!r}); pass the engine's available KV memory instead")
    if model.num_sliding_layers:
        raise NotModeled(f"{model.name}: sliding-window layers change vLLM's KV grouping; not modelled here")


def rope_cache_rows(model: ModelSpec) -> tuple[int, int]:
    """(max_position, rotary_dim) of the cos/sin cache vLLM builds for this config."""
    scaling = model.raw.get("rope_scaling") or model.raw.get("rope_parameters") or {}
    rope_type = str(scaling.get("rope_type", scaling.get("type", "default"))) if scaling else "default"
    if rope_type not in _ROPE_TYPES:
        raise NotModeled(f"{model.name}: rope_type {rope_type!r} sizes its cos/sin cache differently; "
                         "modelled: default, llama3")
    if model.max_position_embeddings is None:
        raise NotModeled(f"{model.name}: config.json has no max_position_embeddings (the rope cache length)")
    factor = float(model.raw.get("partial_rotary_factor") or 1.0)  # null: full rotary
    return model.max_position_embeddings, int(model.head_dim * factor)


def rank_shapes(model: ModelSpec, tp: int) -> RankShapes:
    """vLLM's TP split: Q heads and I divided, KV heads max(1, kv // tp) (replicated below tp),
    the padded vocab divided evenly (vocab_range_from_global_vocab_size)."""
    if tp < 1:
        raise ValueError(f"tensor parallel size must be >= 1, got {tp}")
    heads, kv, hd = model.num_attention_heads, model.num_kv_heads, model.head_dim
    if heads % tp or model.intermediate_size % tp:
        raise ValueError(f"{model.name}: {heads} heads / intermediate {model.intermediate_size} "
                         f"are not divisible by tp={tp}; vLLM refuses this split")
    if kv >= tp and kv % tp:
        raise ValueError(f"{model.name}: {kv} KV heads are not divisible by tp={tp}")
    if kv < tp and tp % kv:
        raise ValueError(f"{model.name}: tp={tp} is not a multiple of {kv} KV heads (replication)")
    kv_rank = max(1, kv // tp)
    padded = -(-model.vocab_size // VOCAB_PADDING) * VOCAB_PADDING
    if padded % tp:
        raise ValueError(f"{model.name}: padded vocab {padded} is not divisible by tp={tp}")
    return RankShapes(vocab_rows=padded // tp, qkv_out=(heads // tp + 2 * kv_rank) * hd,
                      attn_out=heads // tp * hd, intermediate=model.intermediate_size // tp, kv_heads=kv_rank)


@dataclass(frozen=True)
class LoadReplay:
    """Outcome of replaying one rank's load: bytes by what they are, and the allocator's total."""

    allocated: int  # torch allocated bytes after loading: vLLM's model_memory_usage
    parameter_bytes: int
    rope_cache_bytes: int
    scale_buffer_bytes: int  # requested bytes of the kept fp32 scale buffers
    deepgemm_workspace_bytes: int
    rank: int

    @property
    def allocator_overhead(self) -> int:
        """Block rounding and whole-block hand-outs: allocated minus everything requested."""
        return self.allocated - (self.parameter_bytes + self.rope_cache_bytes + self.scale_buffer_bytes
                                 + self.deepgemm_workspace_bytes)


def replay_load(model: ModelSpec, *, tp: int = 1, rank: int = 0, dtype_bytes: int = 2,
                deepgemm_workspace: bool = False) -> LoadReplay:
    """Replay vLLM's load-time allocations for one rank and return what the allocator holds."""
    check_supported(model)
    if not 0 <= rank < tp:
        raise ValueError(f"rank {rank} is outside tensor parallel size {tp}")
    return _replay(model, rank_shapes(model, tp), rope_cache_rows(model), rank, dtype_bytes, deepgemm_workspace)


# Cached: a pure function of its arguments, and a sweep of engine settings replays the same few loads hundreds of
# times (tests_validation's KV-pool cause: 398 replays of 17 loads while collecting). The config's rope settings, read
# from model.raw (which ModelSpec's equality leaves out), are part of the key through `rope_rows`.
@functools.lru_cache(maxsize=256)
def _replay(model: ModelSpec, s: RankShapes, rope_rows: tuple[int, int], rank: int, dtype_bytes: int,
            deepgemm_workspace: bool) -> LoadReplay:
    h, b = model.hidden_size, dtype_bytes
    alloc = CachingAllocatorModel(max_split_size=LOAD_MAX_SPLIT)
    params = 0
    dropped = []

    def param(numel: int) -> None:
        nonlocal params
        params += numel * b
        alloc.malloc(numel * b)

    max_pos, rot = rope_rows
    param(s.vocab_rows * h)
    rope = 0
    dg = 0
    for layer in range(model.num_layers):
        param(s.qkv_out * h)
        if model.qkv_bias:
            param(s.qkv_out)
        param(h * s.attn_out)
        if model.o_bias:
            param(h)
        if layer == 0:
            rope = _rope_cache(alloc, max_pos, rot, b)
        for _ in range(SCALE_BUFFERS_KEPT):
            alloc.malloc(4)
        dropped += [alloc.malloc(4) for _ in range(SCALARS_DROPPED)]
        if layer == 0 and deepgemm_workspace:
            alloc.malloc(DEEPGEMM_WORKSPACE)
            dg = DEEPGEMM_WORKSPACE
        param(2 * s.intermediate * h)
        if model.mlp_bias:
            param(2 * s.intermediate)
        param(h * s.intermediate)
        if model.mlp_bias:
            param(h)
        param(h)
        param(h)
    param(h)
    if not model.tie_word_embeddings:
        param(s.vocab_rows * h)
    for block in dropped:  # process_weights_after_loading: set_default_quant_scales(register_buffer=False)
        alloc.free(block)
    return LoadReplay(allocated=alloc.allocated, parameter_bytes=params, rope_cache_bytes=rope,
                      scale_buffer_bytes=4 * SCALE_BUFFERS_KEPT * model.num_layers,
                      deepgemm_workspace_bytes=dg, rank=rank)


def _rope_cache(alloc: CachingAllocatorModel, max_pos: int, rot: int, dtype_bytes: int) -> int:
    """RotaryEmbeddingBase._compute_cos_sin_cache on the GPU, then .to(model dtype)."""
    inv_freq = alloc.malloc(rot // 2 * 4)
    t = alloc.malloc(max_pos * 4)
    half = max_pos * (rot // 2) * 4
    freqs, cos, sin = alloc.malloc(half), alloc.malloc(half), alloc.malloc(half)
    cat = alloc.malloc(max_pos * rot * 4)
    for tmp in (inv_freq, t, freqs, cos, sin):  # locals of _compute_cos_sin_cache die on return
        alloc.free(tmp)
    cache = max_pos * rot * dtype_bytes
    alloc.malloc(cache)  # cache.to(dtype) while the fp32 concatenation is still referenced
    alloc.free(cat)
    return cache
