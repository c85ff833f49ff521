"""The model catalog: canonical names -> real Hugging Face config.json files.

Each entry stores one config.json (under specs/configs/<name>.json, provenance in
configs/SOURCES.md) and the Hugging Face ids that resolve to it. Base and -Instruct
variants share an architecture, so they share an entry; their configs differ only in
fields the theory does not use or states explicitly (eos ids, max_position_embeddings).

Matching is exact and case-insensitive on the canonical name or a listed HF id: no
substrings, no fuzzy matches (a near-miss gets difflib suggestions in the error).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_anatomy import suggest
from pytest_anatomy.specs.errors import ModelConfigError

CONFIG_DIR = Path(__file__).resolve().parent / "configs"


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    hf_ids: tuple[str, ...]  # the first is the repository whose config.json is stored

    @property
    def hf_id(self) -> str:
        return self.hf_ids[0]

    @property
    def config_path(self) -> Path:
        return CONFIG_DIR / f"{self.name}.json"


def _qwen25(size: str) -> CatalogEntry:
    return CatalogEntry(f"qwen2.5-{size.lower()}", (f"Qwen/Qwen2.5-{size}", f"Qwen/Qwen2.5-{size}-Instruct"))


def _llama31(size: str) -> CatalogEntry:
    ids = tuple(f"meta-llama/{prefix}Llama-3.1-{size}{suffix}"
                for prefix in ("", "Meta-") for suffix in ("", "-Instruct"))
    return CatalogEntry(f"llama-3.1-{size.lower()}", ids)


MODELS: Mapping[str, CatalogEntry] = {e.name: e for e in (
    *(_qwen25(size) for size in ("0.5B", "1.5B", "3B", "7B", "14B", "32B", "72B")),
    _llama31("8B"),
    _llama31("70B"),
    CatalogEntry("mistral-7b-v0.3", ("mistralai/Mistral-7B-v0.3", "mistralai/Mistral-7B-Instruct-v0.3")),
    CatalogEntry("mixtral-8x7b", ("mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-Instruct-v0.1")),
    CatalogEntry("qwen3-30b-a3b", ("Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-Base")),
    CatalogEntry("qwen3-32b", ("Qwen/Qwen3-32B",)),
    CatalogEntry("llama-2-7b", ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf")),
    CatalogEntry("mistral-7b-v0.1", ("mistralai/Mistral-7B-v0.1", "mistralai/Mistral-7B-Instruct-v0.1")),
    CatalogEntry("deepseek-v2-lite", ("deepseek-ai/DeepSeek-V2-Lite", "deepseek-ai/DeepSeek-V2-Lite-Chat")),
    CatalogEntry("gemma-2-9b", ("google/gemma-2-9b", "google/gemma-2-9b-it")),
    CatalogEntry("smollm2-135m", ("HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-135M-Instruct")),
)}

# lower-cased key -> (canonical name, spelling shown in suggestions)
_KEYS: dict[str, tuple[str, str]] = {
    key.lower(): (entry.name, key) for entry in MODELS.values() for key in (entry.name, *entry.hf_ids)
}


def catalog_names() -> tuple[str, ...]:
    return tuple(MODELS)


def lookup(name_or_hf_id: str) -> str | None:
    """Canonical catalog name for a name or HF id, or None. Exact, case-insensitive."""
    hit = _KEYS.get(name_or_hf_id.strip().lower())
    return hit[0] if hit else None


def resolve(name_or_hf_id: str) -> str:
    """Like lookup(), but an unknown name raises ModelConfigError with suggestions."""
    canonical = lookup(name_or_hf_id)
    if canonical is not None:
        return canonical
    close = suggest.close_matches(name_or_hf_id.strip().lower(), _KEYS, n=3, cutoff=0.6)
    hint = suggest.phrase([_KEYS[c][1] for c in close])
    hint = f"{hint} " if hint else ""
    raise ModelConfigError(
        "model", f"{name_or_hf_id!r} is not a catalog model, a known Hugging Face id, or an existing path",
        f"{hint}catalog names: {', '.join(MODELS)}; or pass a path to a config.json / model directory",
        "catalog")


def load_config(name_or_hf_id: str) -> dict[str, Any]:
    """The stored config.json of a catalog model, as a fresh dict."""
    entry = MODELS[resolve(name_or_hf_id)]
    data: dict[str, Any] = json.loads(entry.config_path.read_text(encoding="utf-8"))
    return data
