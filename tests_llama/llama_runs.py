"""Recorded llama.cpp runs: their names, and the GGUF header each one's file is predicted to have."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_anatomy import recordings
from pytest_anatomy import targets as tg
from pytest_anatomy.specs.gguf_file import GgufHeader, header_from_config
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import gguf_mix
from pytest_anatomy.theory.llamacpp_latency import tiny_overhead_header

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
        """The run's name, shortened for test ids (test_architecture keeps them under 120 characters): the server's
        load/sweep runs drop their "server-" prefix and flash attention's "_on"; the recording keeps the full name."""
        return self.name.replace(".server-", ".").replace("_fa_on", "_fa")


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


def completed(rec: recordings.Recording) -> recordings.Recording:
    """The recording of a run the device plan completed; a run it skipped (the plan's budget) is a pytest skip
    naming the plan's reason, one that errored a failure quoting its error. The importer writes both as
    recordings with provenance status "skipped" / "error" and no measurements, so without this a test would
    fail on a missing quantity, or skip for a reason that is not the real one (no nvidia-smi readings)."""
    status = rec.provenance.get("status")
    if status in (None, "ok"):  # None: recordings without a plan status (ceilings, other suites)
        return rec
    result = (rec.data.get("run") or {}).get("result") or {}
    why = result.get("reason") or result.get("error") or "the batch gives no reason"
    message = f"{rec.name} was {status} on the device ({rec.recorded_at}): {why}"
    if status == "skipped":
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


def predicted_header(model: str, weights: str, layers: int | None = None) -> GgufHeader:
    """The header llama-quantize writes, predicted: the converter's F16 layout of config.json, then the
    file type's mix. The tiny models are the plan's own shapes (see scripts/device/llama_plan.py)."""
    return gguf_mix.quantized_header(header_from_config(load_model(model), "F16", layers), weights)


def mistyped(predicted: GgufHeader, written: GgufHeader) -> list[tuple[str, str, str]]:
    """(name, predicted, written) for every tensor whose type or shape differs, matched by NAME, plus every
    tensor only one header has ("absent" on the side without it). The order of a file's tensors is its
    writer's (the plan's random-GGUF writer puts output_norm or output first; the converter sorts otherwise)
    and llama-quantize keeps it: not part of what gguf_mix predicts, so a positional comparison would
    report every tensor of a correctly typed file."""
    by_name = {t.name: t for t in written.tensors}
    wrong = [(p.name, p.ggml_type, by_name[p.name].ggml_type if p.name in by_name else "absent")
             for p in predicted.tensors
             if p.name not in by_name or (p.ggml_type, p.ne) != (by_name[p.name].ggml_type, by_name[p.name].ne)]
    named = {t.name for t in predicted.tensors}
    return wrong + [(t.name, "absent", t.ggml_type) for t in written.tensors if t.name not in named]


def header_for(run: LlamaRun) -> GgufHeader:
    """The predicted header of the run's file; a tiny model is its base shape with the overhead models' shape."""
    if run.model.startswith("tiny-"):
        base = {v: k for k, v in TINY_FOR.items()}[run.model]
        return tiny_overhead_header(base, int(run.model[5:-1]), run.weights)
    return predicted_header(run.model, run.weights)
