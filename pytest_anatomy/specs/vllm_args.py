"""The vLLM `LLM(...)` arguments that shape memory and scheduling, shared by the measurement side
(measure/engine_settings.EngineSettings: what a run passes to vLLM) and the theory side
(theory/vllm_settings.LedgerSettings: what a prediction resolves). One definition, one validation;
each side adds only what is its own (a seed and prefix caching; the usage context)."""

from __future__ import annotations

from dataclasses import dataclass


MODEL_RUNNERS = ("v1", "v2")
_POSITIVE_INTS = ("max_model_len", "tensor_parallel_size", "max_num_seqs", "max_num_batched_tokens", "block_size",
                  "kv_cache_memory_bytes")
_REQUIRED_INTS = ("max_model_len", "tensor_parallel_size")


@dataclass(frozen=True)
class VLLMArgs:
    """None means "vLLM's default" (resolved by theory/vllm_settings.resolve)."""

    gpu_memory_utilization: float = 0.9
    max_model_len: int = 8192
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False
    block_size: int | None = None
    tensor_parallel_size: int = 1
    kv_cache_memory_bytes: int | None = None
    model_runner: str | None = None  # None: vLLM's choice, the V2 runner for dense models in 0.26.0

    def __post_init__(self) -> None:
        cls = type(self).__name__
        util = self.gpu_memory_utilization
        if isinstance(util, bool) or not isinstance(util, (int, float)) or not 0 < util <= 1:
            raise ValueError(f"{cls}.gpu_memory_utilization={util!r} must be in (0, 1]: vLLM requests that "
                             "fraction of the device's TOTAL memory, e.g. 0.9")
        for name in _POSITIVE_INTS:
            value = getattr(self, name)
            optional = name not in _REQUIRED_INTS
            if value is None and optional:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                hint = " or None (vLLM's default)" if optional else ""
                # ValueError for wrong types too: one exception type for every bad setting
                raise ValueError(f"{cls}.{name}={value!r} must be a positive integer{hint}")
        if not isinstance(self.enforce_eager, bool):
            raise ValueError(f"{cls}.enforce_eager={self.enforce_eager!r} must be True or False")  # noqa: TRY004
        if self.model_runner is not None and self.model_runner not in MODEL_RUNNERS:
            raise ValueError(f"{cls}.model_runner={self.model_runner!r} must be None, 'v1' or 'v2'")
