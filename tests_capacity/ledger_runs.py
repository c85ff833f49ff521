"""The capacity ledger's runs: a replay target's recorded vLLM engine starts or the live target's planned ones, each
a `Run` (test_capacity_ledger.py parametrizes its tests by them).

Split out of test_capacity_ledger.py on 2026-12-07 to keep modules under 500 lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import capacity_live_plan as live_plan
import held_out_labels

from pytest_anatomy import recordings
from pytest_anatomy import targets as tg
from pytest_anatomy.specs.hardware import visible_gpu_count, with_card_memory
from pytest_anatomy.theory.vllm_settings import LedgerSettings, resolve

PREFIX = "vllm-ledger."


@dataclass(frozen=True)
class Run:
    name: str
    run_id: str
    model: str
    settings: dict[str, Any] = field(hash=False)
    held_out: bool
    hardware: str = ""
    live: bool = False  # measured in this session (a new start, never a fit point)
    slow: bool = False
    spec: Any = field(default=None, compare=False, hash=False)

    @property
    def label(self) -> str | None:
        """'held-out', 'in-sample' (flagged held out but committed before the theory) or None."""
        return None if self.live else held_out_labels.label(self.name, self.held_out)

    @property
    def test_id(self) -> str:
        return f"{self.hardware}-" + self.run_id + (f"-{self.label}" if self.label else "")

    @property
    def ledger_settings(self) -> LedgerSettings:
        return LedgerSettings.from_mapping(self.settings)

    @property
    def pinned(self) -> bool:
        return self.settings.get("kv_cache_memory_bytes") is not None

    @property
    def runner(self) -> str:
        return resolve(self.spec, self.ledger_settings).runner


@cache
def _recorded_runs(results: Path, target: tg.Target) -> tuple[Run, ...]:
    runs = []
    for name in recordings.list_recordings(results, target.name, "capacity", PREFIX):
        rec = recordings.load_latest(results, target.name, "capacity", name)
        prov = rec.provenance
        if prov.get("status") != "ok" or not rec.measurements:
            continue  # a failed start has no ledger to reconcile
        runs.append(Run(name, name[len(PREFIX):], str(prov["model"]), dict(prov["settings"]), bool(prov["held_out"]),
                        target.name, spec=_recorded_card_spec(target.spec, prov, rec.path)))
    return tuple(runs)


def _recorded_card_spec(spec: Any, provenance: dict[str, Any], path: Path | None) -> Any:
    """The target's spec with the CUDA total of the card the run was recorded on, where the
    recording carries it (its provenance's gpu): vLLM budgets from that card's total, not the catalog's."""
    gpu = provenance.get("gpu")
    total = gpu.get("cuda_memory_total_bytes") if isinstance(gpu, dict) else None
    return with_card_memory(spec, total,
                            f"the recorded card's cudaMemGetInfo total ({path.name if path else 'its recording'})")


def _live_runs(target: tg.Target) -> tuple[Run, ...]:
    # A live target has at least its own GPU: the count is 0 only when `--anatomy-plan --anatomy-hardware NAME`
    # plans for a card this machine does not have (session.planned_gpu), which is planned as one card.
    gpus = max(visible_gpu_count(), 1)
    return tuple(Run(PREFIX + live_plan.run_id(c), live_plan.run_id(c), c.model, dict(c.settings), False, target.name,
                     live=True, slow=c.slow, spec=target.spec)
                 for c, _ in live_plan.plan(target.spec, gpus))


def runs_for(target: tg.Target, results: Path) -> tuple[Run, ...]:
    """A replay target's recorded runs, or the live target's planned engine starts."""
    if target.spec is None:
        return ()
    return _live_runs(target) if target.live else _recorded_runs(results, target)
