"""Stage 01 of the seed, capacity half: vLLM's KV pool on the RTX 4090, replayed from the
seed's published log lines (results/<card>/capacity/seed-r*-vllm-*.json).

The seed divided vLLM's reported available memory by hand-computed KV bytes per token and
found 0.03%. Here the same division is done by vLLM's own integer arithmetic (pages of 16
tokens per layer), and the only slack allowed is the rounding of the GiB figure in the log."""

from __future__ import annotations

import pytest

from pytest_anatomy.importers.seed import VLLM_SETTINGS
from pytest_anatomy.measure import Measurement
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.units import GiB

# The seed study's data exists only as recordings: replayed on the cards that hold them.
pytestmark = pytest.mark.targets(recorded="seed-")

ROUNDS = ["seed-r1-vllm-kv-pool", "seed-r2-vllm-kv-pool"]
SEED_MAX_MODEL_LEN = VLLM_SETTINGS["max_model_len"]
SEED_BLOCK_SIZE = VLLM_SETTINGS["block_size"]
# vLLM prints GiB with 2 decimals: the true value lies within +-0.005 GiB of what is shown.
LOG_GIB_HALF_STEP = 0.005


def _rounding_rel(available_bytes: float) -> float:
    """Relative half-width of a GiB value printed with 2 decimals."""
    return LOG_GIB_HALF_STEP * GiB / available_bytes


@pytest.mark.gpu
@pytest.mark.parametrize("recording", ROUNDS)
def test_kv_bytes_per_token(target, recording, qwen, measured, reconcile):
    """Implied bytes/token = logged available memory / logged pool tokens, vs 2 x 28 x 4 x 128 x 2."""
    rec = measured(recording)
    available = rec["available_kv_bytes"]
    tokens = rec["kv_tokens"]
    implied = Measurement(available.value / tokens.value, "B", source=available.source,
                          provenance=available.provenance)
    # Pool tokens are whole blocks: up to one block (16 tokens x 57,344 B) of available memory
    # is left over, on top of the log's GiB rounding.
    slack = _rounding_rel(available.value) + SEED_BLOCK_SIZE / tokens.value
    reconcile("kv_bytes_per_token", cap.kv_bytes_per_token(qwen), implied, rel=slack,
              why="available GiB is logged with 2 decimals (±0.005 GiB) and the pool is a whole number "
                  "of 16-token blocks", model=qwen.name)


@pytest.mark.gpu
@pytest.mark.parametrize("recording", ROUNDS)
def test_pool_tokens_from_available_memory(target, recording, qwen, measured, reconcile):
    """vLLM's `GPU KV cache size` from its `Available KV cache memory`, by its own block arithmetic."""
    rec = measured(recording)
    available = rec["available_kv_bytes"].value
    blocks = cap.vllm_num_gpu_blocks(qwen, available, SEED_BLOCK_SIZE)
    tokens = cap.vllm_kv_tokens(qwen, int(blocks.value), SEED_BLOCK_SIZE)
    tokens = Prediction(tokens.value, "tokens", "(available_kv_bytes // page_bytes // layers) x block_size",
                        {**blocks.inputs}, terms=(*blocks.terms, Term("block_size", SEED_BLOCK_SIZE, "tokens")))
    reconcile("kv_tokens", tokens, rec["kv_tokens"], rel=_rounding_rel(available),
              why="the only unknown is the log's rounding of available GiB to 2 decimals (±0.005 GiB)",
              model=qwen.name)


@pytest.mark.gpu
@pytest.mark.parametrize("recording", ROUNDS)
def test_max_concurrency_from_available_memory(target, recording, qwen, measured, reconcile):
    """`Maximum concurrency for 8,192 tokens per request` from available memory alone."""
    rec = measured(recording)
    available = rec["available_kv_bytes"].value
    blocks = cap.vllm_num_gpu_blocks(qwen, available, SEED_BLOCK_SIZE)
    pred = cap.vllm_max_concurrency(int(blocks.value), SEED_MAX_MODEL_LEN, SEED_BLOCK_SIZE)
    measured_x = rec["max_concurrency"]
    rel = _rounding_rel(available) + 0.005 / measured_x.value
    reconcile("max_concurrency", pred, measured_x, rel=rel,
              why="available GiB rounded to 2 decimals, and the concurrency line rounds to 0.01x",
              model=qwen.name)


@pytest.mark.gpu
def test_max_concurrency_from_engine_blocks(target, qwen, measured, reconcile):
    """Given the engine's own block count, concurrency is exact up to the log's 2-decimal print."""
    rec = measured("seed-r2-vllm-kv-pool")
    blocks = int(rec["num_gpu_blocks"].value)
    reconcile("max_concurrency_from_blocks", cap.vllm_max_concurrency(blocks, SEED_MAX_MODEL_LEN, SEED_BLOCK_SIZE),
              rec["max_concurrency"], abs=0.005, why="the log prints concurrency with 2 decimals",
              model=qwen.name)
