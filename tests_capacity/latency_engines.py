"""The latency plan's engine starts as capacity measurements (test_latency_engine_pools.py).

Every latency-plan run starts one vLLM engine and records it as results/<card>/latency/<model>.engine@<stamp>.json:
`resolved.num_gpu_blocks` and `resolved.block_size` (the engine's own objects), the settings it was given and, since
2026-12-01, the card (provenance.gpu, with cudaMemGetInfo's total). The ledger (theory/vllm_memory.py) predicts that
pool from config + card + settings, as it does for the capacity plan's starts.

The total vLLM divides is the card's own, as test_capacity_ledger.py takes it: the recording's provenance.gpu
cuda_memory_total_bytes, else the session's ceilings recording (results/<card>/ceilings/, facts.total_memory_bytes:
torch's total_memory, cuDeviceTotalMem, which equals the former in every session that recorded both), else the
catalog's (the H100 SXM entry has NVML's total only, 480 MiB above what vLLM sees). A start of a model outside the
catalog (the quantized and layer-shrunk variants the plan built from a config file the recording does not carry) is
named with why, never dropped silently.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pytest_anatomy import recordings
from pytest_anatomy.importers.xz import read_kept
from pytest_anatomy.measure.vllm_log import parse_vllm_log
from pytest_anatomy.specs.errors import ModelConfigError
from pytest_anatomy.specs.hardware import HardwareSpec, with_card_memory
from pytest_anatomy.specs.model import ModelSpec, load_model
from pytest_anatomy.theory.prediction import Prediction
from pytest_anatomy.theory.vllm_memory import predict_ledger
from pytest_anatomy.theory.vllm_settings import LedgerSettings

SUITE = "latency"
SUFFIX = ".engine"
BLOCKS, BLOCK_SIZE = "resolved.num_gpu_blocks", "resolved.block_size"
# Settings a start records that do not shape the memory ledger: how the weights load (dummy) and what is logged.
NOT_LEDGER = frozenset({"load_format", "skip_tokenizer_init", "disable_log_stats", "enable_logging_iteration_details"})
LEDGER_FIELDS = frozenset(f.name for f in dataclasses.fields(LedgerSettings))


@dataclass(frozen=True)
class EngineStart:
    """One recorded engine start of the latency plan, as the ledger sees it."""

    hardware: str
    model: str
    recorded_at: str
    settings_json: str  # the ledger's settings (sorted JSON: hashable, one key per configuration)
    total: int | None  # the CUDA total vLLM divided, where known
    total_from: str
    path: Path = dataclasses.field(compare=False)
    not_modelled: str | None = None  # why the ledger cannot predict this start

    @property
    def settings(self) -> dict[str, Any]:
        return json.loads(self.settings_json)

    @property
    def pinned(self) -> bool:
        return self.settings.get("kv_cache_memory_bytes") is not None

    @property
    def configuration(self) -> tuple[str, str, str]:
        """What makes two starts the same question: card, model, settings (the total is the card's)."""
        return (self.hardware, self.model, self.settings_json)

    @property
    def test_id(self) -> str:
        return f"{self.hardware}-{self.model}-{recordings.stamp_of(self.recorded_at)}" + ("-pinned" if self.pinned else "")

    def recording(self) -> recordings.Recording:
        return recordings.load_file(self.path)


def card_total(results: Path, rec: recordings.Recording) -> tuple[int | None, str]:
    """The CUDA total of the card a start ran on, and where it was read."""
    gpu = rec.provenance.get("gpu")
    total = gpu.get("cuda_memory_total_bytes") if isinstance(gpu, dict) else None
    if total:
        return int(total), f"the recorded card's cudaMemGetInfo total ({rec.path.name if rec.path else rec.name})"
    ceilings = session_ceilings_total(results, rec)
    if ceilings:
        return ceilings, "the card's total in its session's ceilings recording (torch total_memory)"
    return None, "the catalog's total (the recording and its session name none)"


def session_ceilings_total(results: Path, rec: recordings.Recording) -> int | None:
    try:
        ceil = recordings.load_beside(results, rec.hardware, "ceilings", "ceilings", rec)
    except recordings.MissingRecording:
        return None
    m = ceil.measurements.get("facts.total_memory_bytes")
    return int(m["value"]) if m else None


def _not_modelled(model: str, settings: dict[str, Any]) -> str | None:
    try:
        load_model(model)
    except ModelConfigError:
        return (f"{model} is not a catalog model: the plan built it from a config file of its own (quantized weights "
                "or fewer layers), which the recording does not carry")
    except Exception as exc:  # noqa: BLE001 - any other refusal is the reason this start is not predicted
        return f"{model}: {str(exc).splitlines()[0][:160]}"
    unknown = sorted(set(settings) - LEDGER_FIELDS - NOT_LEDGER - {"seed", "enable_prefix_caching"})
    return f"{model}: settings the ledger does not model: {unknown}" if unknown else None


@cache
def engine_starts(results: Path, hardware: str) -> tuple[EngineStart, ...]:
    """Every recorded engine start of the latency plan on `hardware`, oldest first per model."""
    out = []
    for name in recordings.list_recordings(results, hardware, SUITE):
        if not name.endswith(SUFFIX):
            continue
        for path in recordings.candidates(results, hardware, SUITE, name):
            rec = recordings.load_file(path)
            model = str(rec.provenance.get("model") or name.removesuffix(SUFFIX))
            raw = dict(rec.provenance.get("settings") or {})
            settings = {k: v for k, v in raw.items() if k in LEDGER_FIELDS}
            total, total_from = card_total(results, rec)
            out.append(EngineStart(hardware, model, rec.recorded_at, json.dumps(settings, sort_keys=True), total,
                                   total_from, path, _not_modelled(model, raw)))
    return tuple(out)


def card_spec(spec: HardwareSpec, start: EngineStart) -> HardwareSpec:
    return with_card_memory(spec, start.total, start.total_from)


@cache
def _ledger(model: str, spec: HardwareSpec, settings_json: str) -> dict[str, Prediction]:
    return predict_ledger(load_model(model), spec, LedgerSettings.from_mapping(json.loads(settings_json)))


def ledger(spec: HardwareSpec, start: EngineStart) -> dict[str, Prediction]:
    """The ledger's prediction for a start, on its card's own total."""
    return _ledger(start.model, card_spec(spec, start), start.settings_json)


def model_of(start: EngineStart) -> ModelSpec:
    return load_model(start.model)


def ratio(spec: HardwareSpec, start: EngineStart) -> float:
    """measured / predicted num_gpu_blocks of one start."""
    return start.recording()[BLOCKS].value / ledger(spec, start)["num_gpu_blocks"].value


# --- vLLM's own ledger line, where a start's batch kept the engine log ---------------------------------------
_ENGINE = "Initializing a V1 LLM engine"
_LEDGER_LINE = "GiB for peak activation"
_MODEL_DIR = re.compile(r"model='[^']*/([^'/]+)-dummy-[^'/]*'")


def _kept_logs(results: Path, start: EngineStart) -> list[Path]:
    folder = results / start.hardware / "batches" / recordings.stamp_of(start.recorded_at)
    return sorted(folder.glob("*.log*")) if folder.is_dir() else []


@cache
def _log_text(path: Path) -> str:
    return read_kept(path).decode("utf-8", errors="replace")


def kept_ledger_log(results: Path, start: EngineStart) -> bool:
    """Whether the start's batch kept a log holding one of this model's engine starts with vLLM's ledger line."""
    return any(f"/{start.model}-dummy-" in seg and _LEDGER_LINE in seg
               for path in _kept_logs(results, start) for seg in _log_text(path).split(_ENGINE)[1:])


@cache
def logged_ledger(results: Path, start: EngineStart) -> dict[str, Any] | None:
    """The facts of this start's "Free memory on device ... Actual usage is ..." line (GiB, 2 decimals) from its
    batch's kept logs (results/<card>/batches/<stamp>/*.log[.xz]), matched by model and by the pool the log prints;
    None where the batch kept no such log."""
    tokens = int(start.recording()[BLOCKS].value * start.recording()[BLOCK_SIZE].value)
    for path in _kept_logs(results, start):
        for segment in _log_text(path).split(_ENGINE)[1:]:
            found = _MODEL_DIR.search(segment)
            if found is None or found.group(1) != start.model:
                continue
            facts = parse_vllm_log(segment)
            if facts.get("ledger_peak_activation_gib") is not None and facts.get("kv_cache_size_tokens") == tokens:
                return {**facts, "log": f"{path.parent.name}/{path.name}"}
    return None
