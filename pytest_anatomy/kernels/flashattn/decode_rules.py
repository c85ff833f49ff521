"""Flash-decoding's launch rule, importable without triton (theory tests compare it)."""

from __future__ import annotations

from pytest_anatomy.kernels.flashattn.registry import DECODE_BLOCK_N

BLOCK_N = DECODE_BLOCK_N


def splits_for(batch: int, kv_heads: int, context: int, sm_count: int, block_n: int = BLOCK_N) -> int:
    """Split-K count: 4 (sequence, KV head, split) programs per SM, never a split shorter than
    one KV tile. Same rule as theory.attention.decode_splits (a test keeps them equal)."""
    programs = batch * kv_heads
    return max(1, min(-(-context // block_n), -(-4 * sm_count // programs)))
