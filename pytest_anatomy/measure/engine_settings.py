"""The settings of one vLLM engine start (what measure/vllm_engine.py passes to LLM(...)), checked
before a device minute is spent: every value vLLM would refuse is refused here, in one line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from pytest_anatomy import suggest
from pytest_anatomy.specs.vllm_args import VLLMArgs
from pytest_anatomy.units import GiB

KV_CACHE_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
                   "int8_per_token_head", "fp8_per_token_head", "nvfp4")  # CacheDType, vllm/config/cache.py
MODEL_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")


@dataclass(frozen=True)
class EngineSettings(VLLMArgs):
    """The LLM(...) arguments one measurement varies (the shared ones in specs/vllm_args.py), plus
    what only a run has: prefix caching, the serving dtype, the seed."""

    enable_prefix_caching: bool = False
    dtype: str = "bfloat16"
    seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"EngineSettings.seed={self.seed!r} must be a non-negative integer")
        if not isinstance(self.enable_prefix_caching, bool):
            raise ValueError(f"EngineSettings.enable_prefix_caching={self.enable_prefix_caching!r} "  # noqa: TRY004
                             "must be True or False")
        for name, allowed in (("kv_cache_dtype", KV_CACHE_DTYPES), ("dtype", MODEL_DTYPES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"EngineSettings.{name}={getattr(self, name)!r} is not one of {allowed}"
                                 + _did_you_mean(str(getattr(self, name)), allowed))
        seqs, tokens = self.max_num_seqs, self.max_num_batched_tokens
        if tokens is not None and tokens < (seqs if seqs is not None else 1024):
            # vLLM's SchedulerConfig rejects max_num_batched_tokens < max_num_seqs, and the H100/H200
            # default for LLM(...) is max_num_seqs=1024 (EngineArgs.get_batch_defaults).
            raise ValueError(f"EngineSettings.max_num_batched_tokens={tokens} is below max_num_seqs="
                             f"{seqs if seqs is not None else '1024 (vLLM default on >=70 GiB GPUs)'}; "
                             "vLLM would refuse to start. Lower max_num_seqs too.")

    def to_llm_kwargs(self) -> dict[str, Any]:
        kwargs = {name: value for name, value in asdict(self).items() if value is not None}
        kwargs.pop("model_runner", None)  # an environment variable, not an argument (see worker_env)
        return kwargs

    def worker_env(self) -> dict[str, str]:
        if self.model_runner is None:
            return {}
        return {"VLLM_USE_V2_MODEL_RUNNER": "1" if self.model_runner == "v2" else "0"}

    def tag(self) -> str:
        """Stable short name: 'u0.90.len8192.graphs', 'u0.50.len2048.eager.fp8.mbt4096'."""
        parts = [f"u{self.gpu_memory_utilization:.2f}", f"len{self.max_model_len}",
                 "eager" if self.enforce_eager else "graphs"]
        if self.kv_cache_dtype != "auto":
            parts.append(self.kv_cache_dtype)
        optional = (("mbt", self.max_num_batched_tokens), ("seqs", self.max_num_seqs), ("bs", self.block_size))
        parts += [f"{prefix}{value}" for prefix, value in optional if value is not None]
        if self.tensor_parallel_size != 1:
            parts.append(f"tp{self.tensor_parallel_size}")
        if self.kv_cache_memory_bytes is not None:
            parts.append(f"kv{self.kv_cache_memory_bytes / GiB:g}g")
        if self.enable_prefix_caching:
            parts.append("prefix")
        if self.dtype != "bfloat16":
            parts.append(self.dtype)
        if self.model_runner is not None:
            parts.append(f"{self.model_runner}runner")
        if self.seed != 0:
            parts.append(f"seed{self.seed}")
        return ".".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EngineSettings:
        known = [f.name for f in fields(cls)]
        unknown = [key for key in data if key not in known]
        if unknown:
            raise ValueError(f"unknown EngineSettings field {unknown[0]!r}" + _did_you_mean(unknown[0], known))
        return cls(**dict(data))


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    hint = suggest.did_you_mean(word, choices)
    return f"; {hint}" if hint else ""
