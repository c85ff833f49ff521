"""Which decode parts of the live latency plan a card's KV pool holds, from the predicted vLLM ledger.

Between the plan (measure/latency_live.py: what runs) and the theory (the predicted pool, theory/vllm_memory.py,
and the pool's concurrency, theory/serving.py), neither of which imports the other; the device program
(scripts/device/latency_plan.py) checks each engine's own pool with the same rule, decode_pool_skip.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pytest_anatomy.measure.latency_live import DECODE_SHAPE, ENGINE_SETTINGS, LatencyLivePlan

# A decode part sends `batch` requests of P prompt and O output tokens at once and times the steps in which all
# of them decode together. vLLM's scheduler admits a waiting request only when the pool has free blocks for its
# prompt, and a decode step that finds no free block for a sequence crossing a block boundary preempts the newest
# running request. So all `batch` sequences keep their KV to the end only if batch x ceil((P + O) / block_size)
# blocks are free: the pool's blocks less the one null block vLLM's BlockPool holds back (docs/FACTS.md V6), i.e.
# batch <= theory/serving.kv_concurrency's never_preempted. P + O rather than P + O - 1 (the last sampled
# token's KV is never written): with async scheduling the engine schedules a step before it sees a request
# finish, and at 1,024 + 128 both round to the same 72 blocks. A part past it queues or preempts, its steady
# window is empty and it measures no step time, so it is not run (and its tests skip saying why).
def decode_pool_skip(batch: int, pool_tokens: int, *, block_size: int = 16,
                     shape: tuple[int, int] = DECODE_SHAPE, where: str = "the engine's pool") -> str | None:
    """None when a decode part of `batch` sequences of shape (prompt, output) tokens fits a pool of `pool_tokens`
    (vLLM's reported size, blocks x block_size) with every sequence resident at once; else the one-line reason."""
    from pytest_anatomy.theory.serving import kv_concurrency

    prompt, output = shape
    usable = max(pool_tokens - block_size, 0)  # the null block
    held = int(kv_concurrency(usable, prompt, output, block_size)["never_preempted"].value)
    if batch <= held:
        return None
    per = -(-(prompt + output) // block_size) * block_size
    return (f"decode b={batch} needs {batch * per:,} KV tokens ({batch} x {per:,}); {where} holds {pool_tokens:,} "
            f"({held:,} such sequences, one block kept back as vLLM's null block): not run on this card")


def fit_to_card(plan: LatencyLivePlan, spec: Any, card: str) -> tuple[LatencyLivePlan, dict[str, str]]:
    """The plan as it runs on `card` (`spec`, a HardwareSpec), from the predicted vLLM ledger of each engine:
    the pinned pool dropped where it does not fit beside the weights (the engine then takes the whole budget),
    and every decode part its engine's predicted pool cannot hold (decode_pool_skip) left out, the main model's
    and the second model's (its own engine, utilization-sized pool) each by its own pool. Returns the plan and
    {run id: why} of the parts left out. A model the ledger cannot predict keeps its parts: the device program
    checks each engine's own pool again before a decode part (scripts/device/latency_plan.py pool_skip)."""
    pin = None if plan.kv_cache_gib is None else int(plan.kv_cache_gib * 2**30)
    if pin is not None:
        ledger = _ledger(plan.model, spec, ENGINE_SETTINGS)
        if ledger is None or ledger["available_kv_bytes"].value < pin:
            plan, pin = replace(plan, kv_cache_gib=None), None
    dropped: dict[str, str] = {}
    main = {**ENGINE_SETTINGS, **({} if pin is None else {"kv_cache_memory_bytes": pin})}
    kept = _fitting(plan.model, plan.decode_batches, _ledger(plan.model, spec, main), card, dropped)
    second = plan.second_decode_batches
    if plan.second_model:
        fitted = _fitting(plan.second_model, plan.decode_batches if second is None else second,
                          _ledger(plan.second_model, spec, _second_settings(plan.second_model)), card, dropped)
        second = None if fitted == kept else fitted
    return replace(plan, decode_batches=kept, second_decode_batches=second), dropped


def unstartable(plan: LatencyLivePlan, spec: Any, card: str) -> tuple[LatencyLivePlan, dict[str, str]]:
    """The plan without the engines the card cannot start, and {model: why} of those left out. vLLM refuses to
    start when its KV pool cannot hold one request of max_model_len (a 16 GB card under Qwen2.5-7B's 15.4 GB of
    weights has none at all), so such an engine's parts would fail at its start, not measure: the main model's
    leaves nothing to run (its tests skip with the reason), the second model's is dropped from the plan."""
    out: dict[str, str] = {}
    for model, settings in ((plan.model, ENGINE_SETTINGS), *(((plan.second_model, _second_settings(plan.second_model)),)
                                                             if plan.second_model else ())):
        why = _start_refused(model, spec, settings, card)
        if why:
            out[model] = why
    if plan.second_model in out:
        plan = replace(plan, second_model=None, second_decode_batches=None)
    return plan, out


def _second_settings(model: str) -> dict[str, Any]:
    """The second model's engine: the script's defaults at max_model_len within the model's own maximum."""
    from pytest_anatomy.specs import catalog

    limit = catalog.load_config(model).get("max_position_embeddings") or ENGINE_SETTINGS["max_model_len"]
    return {**ENGINE_SETTINGS, "max_model_len": min(int(limit), int(ENGINE_SETTINGS["max_model_len"]))}


def _start_refused(model: str, spec: Any, settings: dict[str, Any], card: str) -> str | None:
    ledger = _ledger(model, spec, settings)
    if ledger is None:  # not predicted: the engine is tried, and a refusal fails as vLLM says
        return None
    tokens, need = int(ledger["kv_tokens"].value), int(settings["max_model_len"])
    if tokens >= need:
        return None
    gib = 2**30
    return (f"{model} cannot start on {card}: its predicted KV pool holds {max(tokens, 0):,} tokens (weights "
            f"{ledger['model_memory_bytes'].value / gib:.1f} GiB of the {ledger['requested_memory_bytes'].value / gib:.1f} "
            f"GiB vLLM budgets at utilization {settings['gpu_memory_utilization']}), fewer than one {need:,}-token "
            "request, which vLLM refuses at start: not run on this card")


def _ledger(model: str, spec: Any, settings: dict[str, Any]) -> dict[str, Any] | None:
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory.vllm_memory import predict_ledger

    try:
        return predict_ledger(load_model(model), spec, settings)
    except Exception:  # noqa: BLE001 - no prediction: nothing is dropped on it
        return None


def _fitting(model: str, batches: tuple[int, ...], ledger: dict[str, Any] | None, card: str,
             dropped: dict[str, str]) -> tuple[int, ...]:
    """The batches whose decode parts the predicted pool holds; the others go to `dropped`, with why."""
    if ledger is None:
        return batches
    pool, block = int(ledger["kv_tokens"].value), int(ledger["block_size"].value)
    kept = []
    for b in batches:
        why = decode_pool_skip(b, pool, block_size=block, where=f"the predicted pool on {card}")
        if why is None:
            kept.append(b)
        else:
            dropped[f"{model}.decode.b{b}"] = f"{model} {why}"
    return tuple(kept)
