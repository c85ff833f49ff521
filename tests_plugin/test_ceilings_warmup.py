"""measure/ceilings.py's warm-up by time (GEMM_WARMUP_S): a short kernel's few warm-up calls do not outlast a clock
ramp, so the linear shapes warm up for a minimum wall time too. Checked with a fake torch on the CPU."""

from __future__ import annotations

import sys
import types

import pytest

from pytest_anatomy.measure import ceilings


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _fake_torch(syncs: list[int]) -> types.ModuleType:
    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            pass

        def record(self) -> None:
            pass

        def elapsed_time(self, other: Event) -> float:
            return 0.1  # ms

    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(synchronize=lambda: syncs.append(1), Event=Event)  # type: ignore[attr-defined]
    return torch


@pytest.mark.parametrize("call_s, warmup_s, expected_warmup_calls", [
    (0.1e-3, 0.025, 252),  # a 0.1 ms GEMM: groups of 3 until 25 ms have passed (84 groups)
    (10e-3, 0.025, 3),     # a 10 ms kernel: its first 3 calls (30 ms) outlast 25 ms, no second group
    (0.1e-3, 0.0, 3),      # by count only, as before GEMM_WARMUP_S
])
def test_warm_up_lasts_at_least_its_time(monkeypatch, call_s, warmup_s, expected_warmup_calls):
    clock, syncs, calls = _Clock(), [], []
    monkeypatch.setattr(ceilings.time, "perf_counter", clock)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(syncs))

    def fn() -> None:
        calls.append(1)
        clock.now += call_s

    seconds = ceilings._time_cuda(fn, runs=20, warmup=3, warmup_s=warmup_s)
    assert len(calls) - 20 == expected_warmup_calls
    assert seconds == [0.1e-3] * 20


def test_the_linear_shapes_warm_up_for_25_ms():
    """The default the latency plan's GEMM timings use (linear_rate), and what its recording's method says."""
    assert ceilings.GEMM_WARMUP_S == 0.025
    assert ceilings.linear_rate.__defaults__[-1] == ceilings.GEMM_WARMUP_S  # type: ignore[index]
