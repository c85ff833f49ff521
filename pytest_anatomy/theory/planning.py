"""Capacity-planning answers: every quantity the CLI prints, as Predictions.

`capacity(...)` returns an ordered mapping name -> Prediction | NotModeledQuantity. A
quantity this version cannot predict from specs is returned as NotModeledQuantity with the
reason and what to pass instead, never as a guess."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction, Term


@dataclass(frozen=True)
class NotModeledQuantity:
    unit: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"value": None, "unit": self.unit, "formula": None, "terms": [], "not_modeled": self.reason}


Answer = Prediction | NotModeledQuantity


def capacity(
    model: ModelSpec,
    hardware: HardwareSpec,
    *,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int = 8192,
    kv_cache_dtype: str = "auto",
    block_size: int = cap.DEFAULT_BLOCK_SIZE,
    tp: int = 1,
    available_kv_bytes: float | None = None,
) -> dict[str, Answer]:
    out: dict[str, Answer] = {}
    out["kv_bytes_per_token"] = cap.kv_bytes_per_token(model, kv_cache_dtype, tp)
    out["kv_bytes_per_request"] = _per_request(out["kv_bytes_per_token"], max_model_len)  # type: ignore[arg-type]
    out["weight_bytes"] = cap.weight_bytes(model, tp=tp)
    out["matmul_weight_bytes"] = cap.weight_bytes(model, matmul_only=True, tp=tp)
    total = hardware.cuda_visible_memory_bytes or hardware.nvml_memory_bytes or hardware.memory_bytes
    out["requested_memory_bytes"] = cap.requested_memory(int(total), gpu_memory_utilization)
    if hardware.cuda_visible_memory_bytes is None:
        out["requested_memory_bytes"] = Prediction(
            **{**out["requested_memory_bytes"].__dict__,
               "notes": (f"{hardware.name}: CUDA-visible total unknown; used the nominal {total:,} B, "
                         "which overstates what vLLM sees",)})
    if available_kv_bytes is None:
        reason = ("needs vLLM's non-KV memory (weights as loaded + non-torch + activation peak of the profile run "
                  "+ CUDA-graph estimate), which this version does not model yet; pass --available-kv-gib from "
                  "the engine's 'Available KV cache memory' log line")
        out["available_kv_bytes"] = NotModeledQuantity("B", reason)
        for name, unit in (("num_gpu_blocks", "blocks"), ("kv_tokens", "tokens"), ("max_concurrency", "x")):
            out[name] = NotModeledQuantity(unit, "depends on available_kv_bytes: " + reason)
        return out
    out["available_kv_bytes"] = Prediction(
        float(available_kv_bytes), "B", "given (--available-kv-gib)", {"available_kv_bytes": available_kv_bytes},
        notes=("an input, not a prediction: taken from the engine's log or the user",))
    blocks = cap.vllm_num_gpu_blocks(model, available_kv_bytes, block_size, kv_cache_dtype, tp)
    out["num_gpu_blocks"] = blocks
    out["kv_tokens"] = cap.vllm_kv_tokens(model, int(blocks.value), block_size)
    out["max_concurrency"] = cap.vllm_max_concurrency(int(blocks.value), max_model_len, block_size)
    return out


def _per_request(per_token: Prediction, max_model_len: int) -> Prediction:
    return Prediction(
        per_token.value * max_model_len, "B", "kv_bytes_per_token x max_model_len",
        {"kv_bytes_per_token": per_token.value, "max_model_len": max_model_len},
        terms=(Term("kv_bytes_per_token", per_token.value, "B"), Term("max_model_len", max_model_len, "tokens")),
    )


def to_json(answers: dict[str, Answer]) -> dict[str, Any]:
    out = {}
    for name, a in answers.items():
        if isinstance(a, NotModeledQuantity):
            out[name] = a.to_dict()
        else:
            d = a.to_dict()
            out[name] = {"value": d["value"], "unit": d["unit"], "formula": d["formula"], "terms": d["terms"],
                         "inputs": d["inputs"], "notes": d["notes"]}
    return out
