"""KV-cache bytes per token, derived by hand for every catalog model, checked against the
catalog's config files.

The table is written from published architecture facts, independently of any code: if a
config file had a wrong KV-head count, head_dim or layer count, this disagrees. Values are
for bf16 (2 bytes per element) and a *full-attention* stack: every layer caches every token
(Gemma-2's 21 sliding layers would cap at their 4096-token window in a window-aware engine;
that saving belongs to the theory, not to this table).

The theory module's own KV formula is checked against `EXPECTED_KV_BYTES_PER_TOKEN_BF16`
in its tests, so keep this a plain module-level dict of ints.
"""

from __future__ import annotations

import pytest

from pytest_anatomy.specs import catalog
from pytest_anatomy.specs.model import load_model

BF16_BYTES = 2

EXPECTED_KV_BYTES_PER_TOKEN_BF16: dict[str, int] = {
    # qwen2.5-0.5b: 2 (K,V) x 24 layers x 2 kv heads x 64 dim x 2 B = 12,288
    "qwen2.5-0.5b": 12_288,
    # qwen2.5-1.5b: 2 (K,V) x 28 layers x 2 kv heads x 128 dim x 2 B = 28,672
    "qwen2.5-1.5b": 28_672,
    # qwen2.5-3b: 2 (K,V) x 36 layers x 2 kv heads x 128 dim x 2 B = 36,864
    "qwen2.5-3b": 36_864,
    # qwen2.5-7b: 2 (K,V) x 28 layers x 4 kv heads x 128 dim x 2 B = 57,344 (= 56 KiB, seed claim 1)
    "qwen2.5-7b": 57_344,
    # qwen2.5-14b: 2 (K,V) x 48 layers x 8 kv heads x 128 dim x 2 B = 196,608
    "qwen2.5-14b": 196_608,
    # qwen2.5-32b: 2 (K,V) x 64 layers x 8 kv heads x 128 dim x 2 B = 262,144
    "qwen2.5-32b": 262_144,
    # qwen2.5-72b: 2 (K,V) x 80 layers x 8 kv heads x 128 dim x 2 B = 327,680
    "qwen2.5-72b": 327_680,
    # llama-3.1-8b: 2 (K,V) x 32 layers x 8 kv heads x 128 dim x 2 B = 131,072
    "llama-3.1-8b": 131_072,
    # llama-3.1-70b: 2 (K,V) x 80 layers x 8 kv heads x 128 dim x 2 B = 327,680
    "llama-3.1-70b": 327_680,
    # mistral-7b-v0.3: 2 (K,V) x 32 layers x 8 kv heads x 128 dim x 2 B = 131,072
    "mistral-7b-v0.3": 131_072,
    # mixtral-8x7b: 2 (K,V) x 32 layers x 8 kv heads x 128 dim x 2 B = 131,072 (experts hold no KV)
    "mixtral-8x7b": 131_072,
    # qwen3-30b-a3b: 2 (K,V) x 48 layers x 4 kv heads x 128 dim x 2 B = 98,304
    "qwen3-30b-a3b": 98_304,
    # qwen3-32b: 2 (K,V) x 64 layers x 8 kv heads x 128 dim x 2 B = 262,144
    "qwen3-32b": 262_144,
    # llama-2-7b: 2 (K,V) x 32 layers x 32 kv heads x 128 dim x 2 B = 524,288 (no GQA)
    "llama-2-7b": 524_288,
    # mistral-7b-v0.1: 2 (K,V) x 32 layers x 8 kv heads x 128 dim x 2 B = 131,072
    "mistral-7b-v0.1": 131_072,
    # deepseek-v2-lite (MLA): 27 layers x (512 kv_lora_rank + 64 rope dim) x 2 B = 31,104
    # (one compressed latent per layer, no separate V; 16 "KV heads" in the config do not apply)
    "deepseek-v2-lite": 31_104,
    # gemma-2-9b: 2 (K,V) x 42 layers x 8 kv heads x 256 dim x 2 B = 344,064 (all layers full)
    "gemma-2-9b": 344_064,
    # smollm2-135m: 2 (K,V) x 30 layers x 3 kv heads x 64 dim x 2 B = 23,040
    "smollm2-135m": 23_040,
}


def test_table_covers_the_whole_catalog() -> None:
    assert set(EXPECTED_KV_BYTES_PER_TOKEN_BF16) == set(catalog.catalog_names())


@pytest.mark.parametrize("name", sorted(EXPECTED_KV_BYTES_PER_TOKEN_BF16))
def test_catalog_config_gives_hand_derived_kv_bytes(name: str) -> None:
    spec = load_model(name)
    if spec.attention == "mla":
        assert spec.kv_lora_rank is not None and spec.qk_rope_head_dim is not None
        computed = spec.num_layers * (spec.kv_lora_rank + spec.qk_rope_head_dim) * BF16_BYTES
    else:
        computed = 2 * spec.num_layers * spec.num_kv_heads * spec.head_dim * BF16_BYTES
    assert computed == EXPECTED_KV_BYTES_PER_TOKEN_BF16[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_KV_BYTES_PER_TOKEN_BF16))
def test_kv_size_property_agrees_with_table(name: str) -> None:
    # kv_size is the per-layer K width (MLA: the latent); K and V double it except for MLA.
    spec = load_model(name)
    per_token = spec.num_layers * spec.kv_size * BF16_BYTES * (1 if spec.attention == "mla" else 2)
    assert per_token == EXPECTED_KV_BYTES_PER_TOKEN_BF16[name]
