"""Which terms each vLLM version takes from the KV-cache budget: version-aware rules with sources.

The ledger in vllm_memory.py is vLLM 0.26.0's. Earlier releases differ in what
`determine_available_memory` subtracts (shared/REFERENCE.md section 1.1, from vLLM's source):

- the CUDA-graph memory estimate is subtracted only when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
  is set, which is the default since v0.21.0 (PR #30515); before, the graph pool lands on top of
  the budget and the KV cache gets that much more;
- the non-KV memory was `weights + torch peak increase + non-torch increase` in ~0.9-0.11 and is
  `total consumed (mem_get_info) + transient torch peak headroom` since: the same three quantities
  in our ledger's terms, so no numeric change is modelled (stated, not hidden);
- the model runner: 0.26.0 picks the V2 runner for dense decoders (vllm_settings.py); releases before
  it ran the V1 runner (an assumption: the release that switched is not in REFERENCE.md).

V0-engine releases (< 0.9) used another profiler and a `# GPU blocks` log: refused, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory.prediction import Prediction
from pytest_anatomy.theory.vllm_memory import predict_ledger
from pytest_anatomy.theory.vllm_settings import LedgerSettings

MODELLED = "0.26.0"  # the release whose ledger vllm_memory.py replays byte for byte
_SOURCE = "shared/REFERENCE.md section 1.1 (vLLM gpu_worker.determine_available_memory, mem_utils.memory_profiling)"


class UnsupportedVLLMVersion(ValueError):
    """A version string we cannot parse, or an engine generation whose accounting is not modelled."""


@dataclass(frozen=True)
class VersionRules:
    version: str
    subtracts_cudagraph_estimate: bool
    non_kv_form: str
    runner: str
    sources: tuple[str, ...]

    def describe(self) -> str:
        graphs = "subtracted" if self.subtracts_cudagraph_estimate else "not subtracted (lands on top of the budget)"
        return (f"vLLM {self.version}: CUDA-graph estimate {graphs}; non-KV memory = {self.non_kv_form}; "
                f"{self.runner} model runner")


def parse_version(text: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[.+-].*)?", text.strip())
    if m is None:
        raise UnsupportedVLLMVersion(f"vLLM version {text!r} is not of the form X.Y.Z (e.g. 0.15.1)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def rules_for(version: str) -> VersionRules:
    v = parse_version(version)
    if v < (0, 9, 0):
        raise UnsupportedVLLMVersion(
            f"vLLM {version}: the V0 engine's memory profiler (before 0.9) is not modelled; pass 0.9.0 or later")
    if v > parse_version(MODELLED):
        raise UnsupportedVLLMVersion(f"vLLM {version} is newer than the modelled ledger ({MODELLED}); "
                                     f"pass --vllm-version {MODELLED} or earlier")
    return VersionRules(
        version=".".join(map(str, v)),
        subtracts_cudagraph_estimate=v >= (0, 21, 0),
        non_kv_form=("weights + torch peak increase + non-torch increase" if v < (0, 12, 0)
                     else "total consumed + transient torch peak headroom"),
        runner="V2" if v >= (0, 26, 0) else "V1",
        sources=(_SOURCE, "CUDA-graph estimate default on since v0.21.0: vLLM PR #30515"))


def predict_ledger_for_version(model: ModelSpec, hardware: HardwareSpec,
                               settings: LedgerSettings | Mapping[str, Any], version: str) -> dict[str, Prediction]:
    """vllm_memory.predict_ledger under the rules of `version`; every answer notes which rules applied."""
    rules = rules_for(version)
    if not isinstance(settings, LedgerSettings):
        settings = LedgerSettings.from_mapping(settings)
    if settings.model_runner is None:
        settings = replace(settings, model_runner=rules.runner.lower())
    out = predict_ledger(model, hardware, settings, subtract_cudagraph=rules.subtracts_cudagraph_estimate)
    note = rules.describe()
    return {k: replace(p, notes=(*p.notes, note)) for k, p in out.items()}
