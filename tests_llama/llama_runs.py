"""Recorded llama.cpp runs: their names, and the GGUF header each one's file is predicted to have."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from pytest_anatomy import targets as tg
from pytest_anatomy.specs.gguf_file import GgufHeader, header_from_config
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import gguf_mix

SUITE = "llama"
# The plan's tiny-hidden models: hidden 256, the vocabulary and layers of the model they stand beside.
TINY_FOR = {"qwen2.5-0.5b": "tiny-24l", "qwen2.5-7b": "tiny-28l"}


@dataclass(frozen=True)
class LlamaRun:
    """A recorded run, named `<model>.<weights>.<kind>[.<flags>]`."""

    target: str
    name: str
    model: str
    weights: str
    kind: str

    @property
    def test_id(self) -> str:
        return self.name


def parse_run(target: str, name: str) -> LlamaRun | None:
    parts = name.split(".")
    # model ids hold a dot ("qwen2.5-7b"): weights are the first part naming a file type
    for i in range(1, len(parts) - 1):
        if parts[i].upper() in gguf_mix.FILE_TYPES:
            kind = parts[i + 1]
            return LlamaRun(target, name, ".".join(parts[:i]), parts[i].upper(), kind)
    return None


def runs_of(results: Path, target: tg.Target, kinds: tuple[str, ...]) -> list[LlamaRun]:
    folder = Path(results) / target.name / SUITE
    names = sorted({p.name.split("@", 1)[0] for p in folder.glob("*@*.json")}) if folder.is_dir() else []
    runs = [parse_run(target.name, n) for n in names]
    return [r for r in runs if r is not None and r.kind in kinds]


def predicted_header(model: str, weights: str, layers: int | None = None) -> GgufHeader:
    """The header llama-quantize writes, predicted: the converter's F16 layout of config.json, then the
    file type's mix. The tiny models are the plan's own shapes (see scripts/device/llama_plan.py)."""
    spec = load_model(model)
    f16 = header_from_config(spec, "F16", layers)
    return f16 if weights == "F16" else replace(f16, tensors=gguf_mix.quantized_types(f16, weights))


# The plan's tiny shape (scripts/device/llama_plan.py TINY); duplicated because scripts/ is not a package.
TINY_SHAPE = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2}


def header_for(run: LlamaRun) -> GgufHeader:
    """The predicted header of the run's file; a tiny model is its base shape with TINY_SHAPE."""
    if run.model.startswith("tiny-"):
        base = {v: k for k, v in TINY_FOR.items()}[run.model]
        raw = {**load_model(base).raw, **TINY_SHAPE, "num_hidden_layers": int(run.model[5:-1])}
        f16 = header_from_config(load_model(raw, run.model), "F16")
        return f16 if run.weights == "F16" else replace(f16, tensors=gguf_mix.quantized_types(f16, run.weights))
    return predicted_header(run.model, run.weights)
