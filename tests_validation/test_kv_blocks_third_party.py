"""KV blocks of inference-sim's H100 runs (vLLM 0.15.1, total_kv_blocks read from each run's log),
predicted from config.json + the card's catalog spec + the 0.15.1 accounting rules."""

from __future__ import annotations

from typing import Any

import pytest
from sweeps import Case, cases, kv_blocks, parametrize, replay_targets
from validation_findings import CUDA_TOTAL_GIB, KV_BLOCKS_CANDIDATES, cuda_total_reason, finding_marks, route

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.units import GiB

SOURCE = "inference-sim"



def _args(case: Case) -> tuple[Any, ...]:
    return (case.hardware, case.s("catalog_model"), case.s("tp"), case.s("max_num_seqs"), case.s("max_num_batched_tokens"),
            case.s("engine_version"))


def _tolerance(pred: float, lo: float, hi: float) -> tuple[float, float]:
    one = 1 / pred  # the engine's integer division: one block either way
    return lo / pred - one, hi / pred + one


def _lacks_cuda_total(hardware: str) -> bool:
    """An 80 GB card whose catalog entry has only NVML's total (the CUDA_TOTAL_GIB cause applies)."""
    hw = get_hardware(hardware)
    nvml = hw.nvml_memory_bytes
    return hw.cuda_visible_memory_bytes is None and nvml is not None and 79 * GiB < nvml < 80 * GiB


def _routes(case: Case) -> list[Any]:
    pred, lo, hi = kv_blocks(*_args(case))
    causes: tuple[Any, ...] = ()
    if _lacks_cuda_total(case.hardware):
        low_total = kv_blocks(*_args(case), cuda_total=int(CUDA_TOTAL_GIB[0] * GiB))[1]
        causes = (("h100-cuda-visible-total", cuda_total_reason(case.hardware), _tolerance(pred.value, low_total, hi)),)
    return [route(dict(case.measured)["num_gpu_blocks"], pred.value, _tolerance(pred.value, lo, hi), "num_gpu_blocks",
                  causes)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """(target, case) for every run of each card folder holding inference-sim recordings."""
    if "target" not in metafunc.fixturenames:
        return
    targets, results = replay_targets(metafunc.config, SOURCE)
    params = []
    for t in targets:
        mine = cases(SOURCE, t.name, results)
        marks = finding_marks(t.name, SOURCE, "vllm", [_routes(c) for c in mine], KV_BLOCKS_CANDIDATES,
                              [c.recording for c in mine], [c.id for c in mine])
        params += [pytest.param(t, c, marks=m, id=f"{t.name}-{c.id}") for c, m in zip(mine, marks)]
    parametrize(metafunc, ["target", "case"], params, SOURCE)


@pytest.mark.gpu
def test_kv_blocks(target: Any, case: Case, measured: Any, reconcile: Any) -> None:
    rec = measured(case.recording, suite=f"third-party/{SOURCE}")
    pred, lo, hi = kv_blocks(*_args(case))
    reconcile("num_gpu_blocks", pred, rec["num_gpu_blocks"], ratio=_tolerance(pred.value, lo, hi),
              why="gpu_memory_utilization 0.90-0.95 (not recorded) and non-torch memory 0-2x our H200 constant, "
                  "plus one block of rounding", model=case.s("catalog_model"))
