"""Whether a plan can run at all, judged by the same theory that answers it.

A capacity or latency answer for a plan that cannot start (weights larger than the memory
budget, no KV block left) is not a number with a caveat: it is refused with the arithmetic and
with what would fit, each alternative computed by the same ledger (more tensor-parallel ranks,
4-bit weights, a higher memory utilization, vLLM's default token budget). A plan that starts but
is degenerate (a KV pool smaller than one max-length request) is answered with a warning.

Also here: the plan's own limits vLLM enforces before it loads anything (tensor-parallel
divisibility for every architecture, max_model_len against the model's maximum, a KV cache dtype the
card's attention backends cannot run)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction
from pytest_anatomy.units import GiB, format_quantity

# Layouts tried for "what would fit": the tensor-parallel sizes of one NVLink/PCIe host.
TP_CANDIDATES = (1, 2, 4, 8)
# The 4-bit weight format quoted as the quantized alternative (int4, group 128, fp16 scales).
FOUR_BIT_FORMAT = "awq"
_LEDGER_EXTRAS = ("peak_activation_bytes", "non_torch_increase_bytes", "cudagraph_estimate_bytes")


class ImpossiblePlan(ValueError):
    """A plan that cannot run; args[0] is one line: the shortfall's arithmetic and what would fit."""


def _gib(value: float) -> str:
    return f"{value / GiB:,.1f} GiB" if abs(value) >= GiB else format_quantity(value, "B")


# ---- limits vLLM checks before loading --------------------------------------------------------

def tensor_parallel_problem(model: ModelSpec, tp: int) -> str | None:
    """Why vLLM refuses to split `model` over `tp` ranks, or None. vLLM shards attention heads,
    MLP and expert widths and the padded vocabulary evenly; KV heads are split when there are at
    least tp of them, else replicated, which needs tp to be a multiple of them. MLA caches one
    latent per token on every rank, so only the query heads must divide."""
    if tp < 1:
        return f"--tp must be >= 1, got {tp}"
    widths = [("num_attention_heads", model.num_attention_heads)]
    if not model.is_mla:
        kv = model.num_kv_heads
        if kv >= tp and kv % tp:
            return f"{model.name}: --tp {tp} does not divide num_key_value_heads {kv}"
        if kv < tp and tp % kv:
            return f"{model.name}: --tp {tp} is not a multiple of num_key_value_heads {kv} (KV heads are replicated)"
    if any(not model.is_moe_layer(i) for i in range(model.num_layers)):
        widths.append(("intermediate_size", model.intermediate_size))
    if model.is_moe:
        widths.append(("moe_intermediate_size", model.moe_intermediate_size or model.intermediate_size))
    for name, width in widths:
        if width % tp:
            return f"{model.name}: --tp {tp} does not divide {name} {width}"
    padded = -(-model.vocab_size // 64) * 64  # vLLM pads the vocabulary to 64 rows (DEFAULT_VOCAB_PADDING_SIZE)
    if padded % tp:
        return f"{model.name}: --tp {tp} does not divide the vocabulary padded to 64 rows ({padded})"
    return None


def valid_tensor_parallel_sizes(model: ModelSpec, limit: int = 64) -> list[int]:
    return [t for t in range(1, limit + 1) if tensor_parallel_problem(model, t) is None]


def check_tensor_parallel(model: ModelSpec, tp: int) -> None:
    problem = tensor_parallel_problem(model, tp)
    if problem is not None:
        valid = ", ".join(str(t) for t in valid_tensor_parallel_sizes(model, min(64, max(tp, 8))))
        raise ImpossiblePlan(f"{problem}; vLLM refuses this split. Use --tp {valid}")


def model_max_len(model: ModelSpec) -> int | None:
    """The longest max_model_len vLLM accepts for this config (ModelConfig's derived maximum):
    max_position_embeddings, scaled by rope_scaling's factor for the types that extend it past the
    trained length (not llama3/longrope/su, whose configs already give the extended length; yarn
    scales original_max_position_embeddings). None when the config states no length."""
    base = model.max_position_embeddings
    if base is None:
        return None
    scaling = model.raw.get("rope_scaling")
    if not isinstance(scaling, Mapping):
        return base
    kind = scaling.get("rope_type", scaling.get("type"))
    factor = scaling.get("factor")
    if kind in (None, "default", "llama3", "longrope", "su", "mrope") or not isinstance(factor, (int, float)):
        return base
    if kind == "yarn" and isinstance(scaling.get("original_max_position_embeddings"), int):
        base = scaling["original_max_position_embeddings"]
    return int(base * factor)


def check_max_model_len(model: ModelSpec, max_model_len: int) -> None:
    limit = model_max_len(model)
    if limit is not None and max_model_len > limit:
        raise ImpossiblePlan(
            f"{model.name}: --max-model-len {max_model_len:,} exceeds the model's maximum of {limit:,} tokens "
            f"(max_position_embeddings{' x rope factor' if limit != model.max_position_embeddings else ''}); "
            f"vLLM refuses it. Use --max-model-len {limit} or less")



def check_kv_cache_dtype(hardware: HardwareSpec, kv_cache_dtype: str) -> None:
    """vLLM 0.26 stores and reads an nvfp4 KV cache only on FlashInfer's SM100 trtllm-gen path (its metadata
    builder raises "--kv-cache-dtype nvfp4 requires the SM100 trtllm-gen FlashInfer path" elsewhere; the check is
    is_device_capability_family(100)): on any other card the engine does not start. A card whose compute
    capability the catalog lacks is not judged."""
    cc = hardware.compute_capability
    if kv_cache_dtype == "nvfp4" and cc is not None and cc[0] != 10:
        raise ImpossiblePlan(
            f"--kv-cache-dtype nvfp4 on {hardware.name} (sm_{cc[0]}{cc[1]}): vLLM runs an nvfp4 KV cache only on "
            "SM100-family cards (FlashInfer's trtllm-gen path) and the engine would not start; use fp8 on this card")

# ---- does the memory plan fit? ----------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """What a capacity answer was computed for: enough to recompute it with one thing changed."""

    model: ModelSpec
    hardware: HardwareSpec
    settings: Mapping[str, Any]  # planning.capacity's keyword arguments

    @property
    def tp(self) -> int:
        return int(self.settings.get("tp", 1))

    @property
    def max_model_len(self) -> int:
        return int(self.settings.get("max_model_len", 8192))

    @property
    def block_size(self) -> int:
        return int(self.settings.get("block_size") or cap.DEFAULT_BLOCK_SIZE)


Answers = Mapping[str, Any]
CapacityFn = Callable[..., Answers]


def _value(answers: Answers, name: str) -> float | None:
    a = answers.get(name)
    return float(a.value) if isinstance(a, Prediction) else None


def _blocks_per_request(plan: Plan) -> int:
    return -(-plan.max_model_len // plan.block_size)


def _ledger_fits(answers: Answers, plan: Plan) -> bool:
    """At least one max-length request of KV after the ledger (vLLM's start-up check)."""
    blocks = _value(answers, "num_gpu_blocks")
    if blocks is not None:
        return blocks >= _blocks_per_request(plan)
    return _lower_bound_need(answers, plan) <= (_value(answers, "requested_memory_bytes") or 0)


def _request_kv(answers: Answers, plan: Plan) -> float:
    """KV bytes of one max-length request, in whole blocks (vLLM allocates no less)."""
    return (_value(answers, "kv_bytes_per_token") or 0.0) * _blocks_per_request(plan) * plan.block_size


def _lower_bound_need(answers: Answers, plan: Plan) -> float:
    """Weights + one max-length request of KV: what any ledger needs at least (used when the
    rest of vLLM's ledger is not modelled for this architecture)."""
    return (_value(answers, "weight_bytes") or 0.0) + _request_kv(answers, plan)


def _shortfall(answers: Answers, plan: Plan) -> str | None:
    """The arithmetic of a plan that cannot start, or None when it can."""
    budget = _value(answers, "requested_memory_bytes")
    weights = _value(answers, "weight_bytes")
    available = _value(answers, "available_kv_bytes")
    blocks = _value(answers, "num_gpu_blocks")
    if budget is None or weights is None:
        return None
    rank = " per rank" if plan.tp > 1 else ""
    where = f"{plan.hardware.name} (--gpu-memory-utilization {plan.settings.get('gpu_memory_utilization', 0.9)})"
    if available is None:  # ledger not modelled: only weights are known to be needed
        if weights > budget:
            return f"weights {_gib(weights)}{rank} > budget {_gib(budget)} on {where}"
        return None
    given = str(answers["available_kv_bytes"].formula).startswith("given")
    if given and available > budget:  # the pool is a part of the budget: 1e30 GiB answered 1e33 blocks, exit 0
        return (f"the given available KV memory ({_gib(available)}) is above the whole budget {_gib(budget)}{rank} "
                f"on {where}, of which it is a part; pass the engine's 'Available KV cache memory' in GiB (and the "
                "--gpu-memory-utilization it ran with)")
    if available > 0 and (blocks is None or blocks >= 1):
        return None
    if given:
        return (f"the given available KV memory ({_gib(available)}) holds {int(blocks or 0)} KV blocks; pass the "
                "engine's 'Available KV cache memory' in GiB")
    memory = _value(answers, "model_memory_bytes")
    if memory is not None and memory > budget:
        return f"weights {_gib(memory)}{rank} > budget {_gib(budget)} on {where}"
    parts = [(n, _value(answers, n)) for n in ("model_memory_bytes", *_LEDGER_EXTRAS)]
    named = {"model_memory_bytes": "weights", "peak_activation_bytes": "activation",
             "non_torch_increase_bytes": "non-torch", "cudagraph_estimate_bytes": "CUDA graphs"}
    terms = " + ".join(f"{named[n]} {_gib(v)}" for n, v in parts if v)
    total = sum(v for _, v in parts if v)
    if available > 0:
        block = (_value(answers, "kv_bytes_per_token") or 0.0) * plan.block_size
        return (f"{terms} = {_gib(total)} leaves {_gib(available)} of budget {_gib(budget)} on {where}, "
                f"less than one KV block ({_gib(block)} at --block-size {plan.block_size})")
    return f"{terms} = {_gib(total)}{rank} > budget {_gib(budget)} on {where}"


def _alternatives(answers: Answers, plan: Plan, capacity: CapacityFn) -> list[str]:
    """What would fit, each recomputed by the ledger with one thing changed."""
    found: list[str] = []
    by_tp: dict[int, Answers] = {plan.tp: answers}
    for t in TP_CANDIDATES:
        if t < plan.tp or tensor_parallel_problem(plan.model, t) is not None:
            continue
        by_tp.setdefault(t, capacity(plan.model, plan.hardware, **{**plan.settings, "tp": t}))
        if t > plan.tp and not found and _ledger_fits(by_tp[t], plan):
            found.append(f"tensor parallel {t} on {t} cards")
    four_bit = _four_bit(plan, by_tp)
    if four_bit:
        found.append(four_bit)
    util = _utilization_that_fits(answers, plan, capacity)
    if util:
        found.append(util)
    given_tokens = plan.settings.get("max_num_batched_tokens")
    if given_tokens is not None:
        default = capacity(plan.model, plan.hardware, **{**plan.settings, "max_num_batched_tokens": None})
        if (_value(default, "max_num_batched_tokens") or 0) < given_tokens and _ledger_fits(default, plan):
            found.append(f"vLLM's default --max-num-batched-tokens "
                         f"({int(_value(default, 'max_num_batched_tokens') or 0):,})")
    if plan.block_size > cap.DEFAULT_BLOCK_SIZE:
        default_plan = Plan(plan.model, plan.hardware, {**plan.settings, "block_size": None})
        if _ledger_fits(capacity(plan.model, plan.hardware, **default_plan.settings), default_plan):
            found.append(f"vLLM's default --block-size ({cap.DEFAULT_BLOCK_SIZE})")
    return found


def _four_bit(plan: Plan, by_tp: Mapping[int, Answers]) -> str | None:
    """4-bit weights on the fewest ranks that hold them: the 16-bit ledger at that layout with its
    weights replaced by the 4-bit format's bytes (activations and the rest do not depend on the
    weight format; the 4-bit loader's own allocations are not modelled, hence '~')."""
    total = cap.weight_bytes(plan.model, FOUR_BIT_FORMAT).value
    for t in sorted(by_tp):
        answers = by_tp[t]
        budget = _value(answers, "requested_memory_bytes") or 0.0
        extras = sum(v for v in (_value(answers, n) for n in _LEDGER_EXTRAS) if v)
        if total / t + extras + _request_kv(answers, plan) <= budget:
            return f"4-bit weights (~{total / GiB:.0f} GiB) on {t} card{'s' if t > 1 else ''}"
    return None


def _utilization_that_fits(answers: Answers, plan: Plan, capacity: CapacityFn) -> str | None:
    """The lowest --gpu-memory-utilization (in hundredths) whose ledger holds one max-length request:
    what the ledger consumes plus that request's KV, over the card's memory, then checked by
    recomputing the ledger there (the activation term does not depend on the utilization)."""
    requested = answers.get("requested_memory_bytes")
    total = requested.inputs.get("total_memory") if isinstance(requested, Prediction) else None
    budget, available = _value(answers, "requested_memory_bytes"), _value(answers, "available_kv_bytes")
    if not total or budget is None:
        return None
    consumed = budget - available if available is not None else _value(answers, "weight_bytes") or 0.0
    util = math.ceil((consumed + _request_kv(answers, plan)) / float(total) * 100) / 100
    current = float(plan.settings.get("gpu_memory_utilization", 0.9))
    for _ in range(3):  # the page rounding can leave a request a few blocks short: step up
        if util > 1.0:
            return None
        if util > current and _ledger_fits(
                capacity(plan.model, plan.hardware, **{**plan.settings, "gpu_memory_utilization": util}), plan):
            return f"--gpu-memory-utilization {util:.2f}"
        util = round(util + 0.01, 2)
    return None


def judge_capacity(answers: Answers, plan: Plan, capacity: CapacityFn) -> tuple[str, ...]:
    """Raise ImpossiblePlan for a plan that cannot start; else the warnings of a degenerate one."""
    short = _shortfall(answers, plan)
    if short is not None:
        given = str(getattr(answers.get("available_kv_bytes"), "formula", "")).startswith("given")
        if given:
            raise ImpossiblePlan(f"{plan.model.name}: {short}")
        fits = _alternatives(answers, plan, capacity)
        if fits and _value(answers, "available_kv_bytes") is None:
            fits[-1] += " (weights and one request's KV; the rest of the ledger is not modelled for this architecture)"
        advice = ("fits with " + ", or ".join(fits)) if fits else (
            "nothing tried fits (--tp 2/4/8, 4-bit weights, --gpu-memory-utilization up to 0.95)")
        raise ImpossiblePlan(f"{plan.model.name}: {short}; {advice}")
    warnings: list[str] = []
    blocks = _value(answers, "num_gpu_blocks")
    need: float = _blocks_per_request(plan)
    if blocks is not None and blocks < need:
        tokens = int(blocks) * plan.block_size
        warnings.append(
            f"the KV pool holds {tokens:,} tokens ({int(blocks):,} blocks), fewer than one request of "
            f"--max-model-len {plan.max_model_len:,} ({need:,} blocks): vLLM refuses to start ('To serve at least "
            f"one request with the model's max seq len'); use --max-model-len {tokens} or less, or more memory")
    budget, weights = _value(answers, "requested_memory_bytes"), _value(answers, "weight_bytes")
    if blocks is None and _value(answers, "available_kv_bytes") is None and budget is not None and weights is not None:
        need = _lower_bound_need(answers, plan)
        if need > budget:  # the rest of the ledger is not modelled: this much is certain
            warnings.append(
                f"weights {_gib(weights)} + one --max-model-len {plan.max_model_len:,} request's KV "
                f"{_gib(need - weights)} = {_gib(need)} exceed the budget {_gib(budget)} even before activations: "
                "vLLM would refuse to start; lower --max-model-len or add memory")
    for name in ("max_concurrency", "kv_tokens", "num_gpu_blocks", "available_kv_bytes"):
        v = _value(answers, name)
        if v is not None and (not math.isfinite(v) or v < 0):
            raise ImpossiblePlan(f"{plan.model.name}: {name} came out as {v!r}; this plan is outside what the "
                                 "theory answers (report it with the command line)")
    return tuple(warnings)
