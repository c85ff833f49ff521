"""Capacity-planning answers: every quantity the CLI prints, as Predictions.

`capacity(...)` returns an ordered mapping name -> Prediction | NotModeledQuantity. A
quantity this version cannot predict from specs is returned as NotModeledQuantity with the
reason and what to pass instead, never as a guess (vLLM's ledger is modelled for dense
llama/mistral/qwen2 decoders; MoE, MLA and sliding-window models need --available-kv-gib)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.theory.vllm_memory import LEDGER_TERMS, predict_ledger, requested_memory
from pytest_anatomy.theory.vllm_versions import predict_ledger_for_version
from pytest_anatomy.theory.vllm_settings import LedgerSettings, resolve


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
    block_size: int | None = None,
    tp: int = 1,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    enforce_eager: bool = False,
    max_cudagraph_capture_size: int | None = None,
    model_runner: str | None = None,
    available_kv_bytes: float | None = None,
    vllm_version: str | None = None,
) -> dict[str, Answer]:
    """KV sizes, weights, vLLM's whole memory ledger (theory/vllm_memory.py), blocks, tokens and max
    concurrency. `available_kv_bytes` overrides the predicted available KV memory (e.g. the engine's
    'Available KV cache memory' line); the ledger terms are still predicted and shown. `vllm_version`
    selects that release's accounting rules (theory/vllm_versions.py); None is the modelled 0.26.0."""
    out: dict[str, Answer] = {}
    out["kv_bytes_per_token"] = cap.kv_bytes_per_token(model, kv_cache_dtype, tp)
    out["kv_bytes_per_request"] = _per_request(out["kv_bytes_per_token"], max_model_len)  # type: ignore[arg-type]
    out["weight_bytes"] = cap.weight_bytes(model, tp=tp)
    out["matmul_weight_bytes"] = cap.weight_bytes(model, matmul_only=True, tp=tp)
    settings = LedgerSettings(
        gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len, max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens, kv_cache_dtype=kv_cache_dtype, enforce_eager=enforce_eager,
        block_size=block_size, tensor_parallel_size=tp, model_runner=model_runner,  # type: ignore[arg-type]
        max_cudagraph_capture_size=max_cudagraph_capture_size)
    bs = block_size or cap.DEFAULT_BLOCK_SIZE
    try:
        ledger: dict[str, Prediction] = (predict_ledger(model, hardware, settings) if vllm_version is None
                                         else predict_ledger_for_version(model, hardware, settings, vllm_version))
    except cap.NotModeled as exc:
        reason = f"{exc}"
        rs = resolve(hardware, settings)
        out["max_num_batched_tokens"] = Prediction(rs.max_num_batched_tokens, "tokens",
                                                   rs.sources["max_num_batched_tokens"])
        out["max_num_seqs"] = Prediction(rs.max_num_seqs, "requests", rs.sources["max_num_seqs"])
        out["requested_memory_bytes"] = requested_memory(hardware, rs)
        for name in LEDGER_TERMS:
            out[name] = NotModeledQuantity("B", reason)
        if available_kv_bytes is None:
            why = f"needs the ledger terms: {reason}; pass --available-kv-gib from the engine's log"
            out["available_kv_bytes"] = NotModeledQuantity("B", why)
            for name, unit in (("num_gpu_blocks", "blocks"), ("kv_tokens", "tokens"), ("max_concurrency", "x")):
                out[name] = NotModeledQuantity(unit, "depends on available_kv_bytes: " + why)
            return out
        _given_pool(out, model, available_kv_bytes, bs, kv_cache_dtype, tp, max_model_len)
        return out
    for name in ("max_num_batched_tokens", "max_num_seqs", "requested_memory_bytes", *LEDGER_TERMS,
                 "available_kv_bytes", "num_gpu_blocks", "kv_tokens", "max_concurrency"):
        out[name] = ledger[name]
    if available_kv_bytes is not None:
        _given_pool(out, model, available_kv_bytes, bs, kv_cache_dtype, tp, max_model_len)
    return out


def with_notes(answers: dict[str, Answer], names: tuple[str, ...], notes: tuple[str, ...]) -> dict[str, Answer]:
    """The answers with `notes` appended to each named Prediction (warnings travel in the JSON)."""
    if not notes:
        return answers
    out = dict(answers)
    for name in names:
        a = out.get(name)
        if isinstance(a, Prediction):
            out[name] = replace(a, notes=a.notes + notes)
    return out


def _given_pool(out: dict[str, Answer], model: ModelSpec, available_kv_bytes: float, block_size: int,
                kv_cache_dtype: str, tp: int, max_model_len: int) -> None:
    out["available_kv_bytes"] = Prediction(
        float(available_kv_bytes), "B", "given (--available-kv-gib)", {"available_kv_bytes": available_kv_bytes},
        notes=("an input, not a prediction: taken from the engine's log or the user",))
    blocks = cap.vllm_num_gpu_blocks(model, available_kv_bytes, block_size, kv_cache_dtype, tp)
    out["num_gpu_blocks"] = blocks
    out["kv_tokens"] = cap.vllm_kv_tokens(model, int(blocks.value), block_size)
    out["max_concurrency"] = cap.vllm_max_concurrency(int(blocks.value), max_model_len, block_size)


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
