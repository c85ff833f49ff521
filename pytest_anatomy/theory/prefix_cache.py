"""Automatic prefix caching (vLLM V1): which prompt tokens a hit saves, and what that buys in TTFT.

vLLM 0.26's KVCacheManager.get_computed_blocks hashes a prompt in full blocks (block_size tokens,
16 by default) and looks the chain of block hashes up in the cache; a hit is therefore a whole
number of blocks, and a partial last block never hits. It caps the lookup at prompt_len - 1
tokens: when every prompt token is cached the last one is still recomputed, because its logits
(the first output token) must come out of a forward pass. So

    hit = block_size x floor(min(cached_prefix, prompt_len - 1) / block_size)

and the prefill the engine runs is the prompt's remaining prompt_len - hit tokens, attending to
the hit tokens as its past (docs/FACTS.md D1). TTFT saved is the prefill time of the full prompt minus that of the
remainder (both from the step model in theory/latency.py).
"""

from __future__ import annotations

from dataclasses import replace

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory.flops import StepWork
from pytest_anatomy.theory.latency import Ceilings, EngineCalibration, prefill_chunks, step_time
from pytest_anatomy.theory.prediction import Prediction, Term

DEFAULT_BLOCK_SIZE = 16


def hit_tokens(prompt_len: int, cached_prefix: int, block_size: int = DEFAULT_BLOCK_SIZE) -> int:
    """Prompt tokens served from the cache: whole blocks of the cached prefix, never the last token.
    No recording can see the last-token cap: no recorded request is wholly its shared prefix (theory mutation
    deployment-prefix-hit-last-token-cached survives; test_knob_theory.py holds it exactly)."""
    if prompt_len < 1 or cached_prefix < 0 or block_size < 1:
        raise ValueError(f"need prompt_len >= 1, cached_prefix >= 0, block_size >= 1; got "
                         f"{prompt_len!r}, {cached_prefix!r}, {block_size!r}")
    usable = min(cached_prefix, prompt_len - 1)
    return block_size * (usable // block_size)


def prefill_tokens(prompt_len: int, cached_prefix: int, block_size: int = DEFAULT_BLOCK_SIZE) -> int:
    """Prompt tokens the engine still computes after a hit (at least 1: the last one)."""
    return prompt_len - hit_tokens(prompt_len, cached_prefix, block_size)


def prefill_work_after_hit(prompt_len: int, hit: int, max_num_batched_tokens: int | None) -> list[StepWork]:
    """The steps of a lone prefill of the prompt's uncached tail, chunked by the token budget; each
    chunk's past includes the hit tokens (its attention reads them from the cache)."""
    chunks = prefill_chunks(prompt_len - hit, max_num_batched_tokens)
    return [StepWork(prefill=((n, hit + past),), logits=1 if i == len(chunks) - 1 else 0)
            for i, (n, past) in enumerate(chunks)]


def cached_prefill_time(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, prompt_len: int,
                        cached_prefix: int, max_num_batched_tokens: int | None = None,
                        block_size: int = DEFAULT_BLOCK_SIZE) -> Prediction:
    """A lone prompt's prefill when `cached_prefix` of its tokens are in the prefix cache."""
    hit = hit_tokens(prompt_len, cached_prefix, block_size)
    steps = [step_time(model, ceilings, calib, w) for w in prefill_work_after_hit(prompt_len, hit,
                                                                                   max_num_batched_tokens)]
    return Prediction(
        sum(s.value for s in steps), "s",
        "sum over chunks of the uncached tail [max(bytes/BW, FLOPs/(eta x peak)) + t_overhead]",
        {"prompt_len": prompt_len, "cached_prefix": cached_prefix, "block_size": block_size,
         "max_num_batched_tokens": max_num_batched_tokens, "calibration": calib.name},
        terms=(Term("hit tokens", hit, "tokens", "block_size x floor(min(cached, L - 1) / block_size)"),
               Term("prefill tokens", prompt_len - hit, "tokens"), Term("steps", len(steps), "steps")),
        notes=("vLLM recomputes the last prompt token on a full hit; partial blocks never hit",
               calib.describe()))


def ttft_saved(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, prompt_len: int,
               cached_prefix: int, max_num_batched_tokens: int | None = None,
               block_size: int = DEFAULT_BLOCK_SIZE) -> Prediction:
    """Prefill time without the cache minus with it: the TTFT a hit saves a lone request."""
    cold = cached_prefill_time(model, ceilings, calib, prompt_len, 0, max_num_batched_tokens, block_size)
    warm = cached_prefill_time(model, ceilings, calib, prompt_len, cached_prefix, max_num_batched_tokens,
                               block_size)
    return replace(warm, value=cold.value - warm.value, formula="prefill(L) - prefill(L - hit, past = hit)",
                   terms=(Term("prefill, no hit", cold.value, "s"), Term("prefill after the hit", warm.value, "s"),
                          *warm.terms))
