"""vLLM engine settings as the memory ledger sees them, with vLLM 0.26.0's defaults resolved.

Every default is resolved explicitly and says where it came from (`ResolvedSettings.sources`),
because two of them decide the activation term: `max_num_batched_tokens` (tokens in the
profile run) and `max_num_seqs` (rows of the sampler's dummy logits). vLLM picks them by the
GPU's memory class and the usage context (`EngineArgs.get_batch_defaults`):

    GPU with >= 70 GiB and not an A100:  LLM(...) 16384 tokens / 1024 seqs; server 8192 / 1024
    otherwise:                           LLM(...)  8192 tokens /  256 seqs; server 2048 /  256

then (only for values left at their default) `max_num_batched_tokens = min(max_num_seqs x
max_model_len, ...)` and `max_num_seqs = min(max_num_seqs, max_num_batched_tokens)`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.vllm_args import VLLMArgs
from pytest_anatomy.units import GiB

UsageContext = Literal["llm_class", "openai_api_server"]
Runner = Literal["v1", "v2"]
DEFAULT_BLOCK_SIZE = 16  # vllm CacheConfig.DEFAULT_BLOCK_SIZE (FlashAttention keeps it)
LARGE_GPU_BYTES = 70 * GiB  # EngineArgs.get_batch_defaults: "device_memory >= 70 * GiB_bytes"
_BATCH_DEFAULTS: Mapping[tuple[bool, str], tuple[int, int]] = {
    (True, "llm_class"): (16384, 1024), (True, "openai_api_server"): (8192, 1024),
    (False, "llm_class"): (8192, 256), (False, "openai_api_server"): (2048, 256),
}
# Fields of the recording's settings block that do not change the memory ledger.
_IGNORED = frozenset({"seed", "enable_prefix_caching"})


@dataclass(frozen=True)
class LedgerSettings(VLLMArgs):
    """What the user passes to vLLM (the shared arguments in specs/vllm_args.py), plus what only a
    prediction needs: the usage context that picks vLLM's defaults, the serving dtype, chunked prefill."""

    usage_context: UsageContext = "llm_class"
    dtype: str = "auto"
    enable_chunked_prefill: bool = True
    max_cudagraph_capture_size: int | None = None  # None: vLLM's default, min(2 x max_num_seqs, 512)

    def __post_init__(self) -> None:
        super().__post_init__()
        top = self.max_cudagraph_capture_size
        if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
            raise ValueError(f"max_cudagraph_capture_size={top!r} must be a positive integer or None (vLLM's default)")
        if self.usage_context not in ("llm_class", "openai_api_server"):
            raise ValueError(f"usage_context must be 'llm_class' or 'openai_api_server', got {self.usage_context!r}")
        if self.dtype not in ("auto", "bfloat16", "float16", "half"):
            raise ValueError(f"dtype {self.dtype!r} is not modelled: the ledger covers 16-bit serving dtypes")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> LedgerSettings:
        """Build from a recording's `settings` block (measure.engine_settings.EngineSettings fields)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known - _IGNORED)
        if unknown:
            raise ValueError(f"unknown vLLM setting(s) {unknown}; known: {sorted(known)}")
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class ResolvedSettings:
    """Settings after vLLM's defaulting; `sources` says for each field where its value came from."""

    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_dtype: str
    block_size: int
    tensor_parallel_size: int
    kv_cache_memory_bytes: int | None
    runner: Runner
    cudagraphs: bool  # torch.compile + CUDA graphs (FULL_AND_PIECEWISE); False with enforce_eager
    cudagraph_capture_sizes: tuple[int, ...]
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def profile_requests(self) -> int:
        """Rows of the sampler's dummy logits: the profile run splits its tokens over this many requests."""
        return min(self.max_num_batched_tokens, self.max_num_seqs)

    @property
    def num_full_graphs(self) -> int:
        """FULL decode graphs: capture sizes a pure-decode batch (one token per request) can reach."""
        return sum(1 for s in self.cudagraph_capture_sizes if s <= self.max_num_seqs)


def is_large_gpu(hardware: HardwareSpec) -> bool:
    """vLLM's memory class: >= 70 GiB of device memory and not an A100 (PR #17885)."""
    total = hardware.nvml_memory_bytes or hardware.cuda_visible_memory_bytes or hardware.memory_bytes or 0
    return total >= LARGE_GPU_BYTES and "a100" not in f"{hardware.name} {hardware.display_name}".lower()


def default_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int,
                          max_capture: int | None = None) -> tuple[int, ...]:
    """VllmConfig._set_cudagraph_sizes: 1, 2, 4, then steps of 8 below 256 and of 16 up to
    min(2 x max_num_seqs, 512), or up to the engine argument max_cudagraph_capture_size (`max_capture`) when given,
    clipped to max_num_batched_tokens (which is added if it fits). With max_cudagraph_capture_size 8192 at
    max_num_seqs 1024 the H200's vLLM 0.26.0 resolved exactly these 531 sizes (batch 20261203T184616Z)."""
    top = min(min(max_num_seqs * 2, 512) if max_capture is None else max_capture, max_num_batched_tokens)
    sizes = [s for s in (1, 2, 4) if s <= top]
    if top >= 8:
        sizes += list(range(8, min(top + 1, 256), 8))
    if top >= 256:
        sizes += list(range(256, top + 1, 16))
    if max_num_batched_tokens <= top and max_num_batched_tokens not in sizes:
        sizes.append(max_num_batched_tokens)
    return tuple(sorted(set(sizes)))


def resolve(hardware: HardwareSpec, settings: LedgerSettings) -> ResolvedSettings:
    """Apply vLLM 0.26.0's defaults (EngineArgs._set_default_max_num_seqs_and_batched_tokens_args)."""
    sources: dict[str, str] = {}
    large = is_large_gpu(hardware)
    default_tokens, default_seqs = _BATCH_DEFAULTS[(large, settings.usage_context)]
    cls = f"{'>= 70 GiB, not A100' if large else '< 70 GiB or A100'} GPU, {settings.usage_context} context"
    seqs = settings.max_num_seqs
    if seqs is None:
        seqs = default_seqs
        sources["max_num_seqs"] = f"vLLM default {default_seqs} ({cls})"
    else:
        sources["max_num_seqs"] = "given"
    tokens = settings.max_num_batched_tokens
    if tokens is None:
        tokens = default_tokens
        if not settings.enable_chunked_prefill:
            tokens = max(settings.max_model_len, tokens)
        tokens = min(seqs * settings.max_model_len, tokens)
        sources["max_num_batched_tokens"] = (f"vLLM default {default_tokens} ({cls}), "
                                             "capped at max_num_seqs x max_model_len")
    else:
        sources["max_num_batched_tokens"] = "given"
    if settings.max_num_seqs is None:
        seqs = min(seqs, tokens)  # a defaulted max_num_seqs never exceeds the token budget
    if tokens < seqs:
        raise ValueError(f"max_num_batched_tokens={tokens} < max_num_seqs={seqs}: vLLM's SchedulerConfig "
                         "refuses to start; lower max_num_seqs or raise max_num_batched_tokens")
    block = settings.block_size or DEFAULT_BLOCK_SIZE
    sources["block_size"] = "given" if settings.block_size else f"vLLM default {DEFAULT_BLOCK_SIZE}"
    runner: Runner = settings.model_runner or "v2"  # type: ignore[assignment]  # VLLMArgs checks v1/v2
    sources["runner"] = "given" if settings.model_runner else "vLLM 0.26.0 default for dense decoders: V2"
    graphs = not settings.enforce_eager
    sizes = default_capture_sizes(seqs, tokens, settings.max_cudagraph_capture_size) if graphs else ()
    if graphs:
        sources["cudagraph_capture_sizes"] = "vLLM default list (VllmConfig._set_cudagraph_sizes)" + (
            f", up to max_cudagraph_capture_size {settings.max_cudagraph_capture_size} (given)"
            if settings.max_cudagraph_capture_size is not None else "")
    return ResolvedSettings(
        gpu_memory_utilization=settings.gpu_memory_utilization, max_model_len=settings.max_model_len,
        max_num_seqs=seqs, max_num_batched_tokens=tokens, kv_cache_dtype=settings.kv_cache_dtype,
        block_size=block, tensor_parallel_size=settings.tensor_parallel_size,
        kv_cache_memory_bytes=settings.kv_cache_memory_bytes, runner=runner, cudagraphs=graphs,
        cudagraph_capture_sizes=sizes, sources=sources,
    )


@dataclass(frozen=True)
class FittedConstant:
    """A number the mechanism leaves open, fitted on named, non-held-out recordings.

    `fitted_on` names the recordings (results/h200/capacity/<name>@*.json) whose residual
    set it; held-out recordings check it. `applies_to` says where it was observed, because
    a constant of one vLLM/torch/driver stack is not a law of nature."""

    value: float
    unit: str
    fitted_on: tuple[str, ...]
    what: str
    applies_to: str = "vLLM 0.26.0, torch 2.11 (CUDA 13.0), driver 580, NVIDIA H200"

    def note(self) -> str:
        return (f"fitted constant {self.value:,.0f} {self.unit} ({self.what}) on {', '.join(self.fitted_on)}; "
                f"observed on {self.applies_to}")
