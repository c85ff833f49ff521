"""The simulator's quiet stretches (theory/serving_tokens.decode_streak) give the step-by-step results to the bit.

Each workload is simulated twice: as simulate runs it, and with decode_streak replaced by one that runs nothing, so
every step goes through the scheduler one at a time (the simulator before the stretches). Every field of the two
results must be equal, floats compared exactly (== and repr), and the stretches must have run where the workload has
quiet steps, or the comparison would prove nothing. The workloads cover what ends or bends a stretch: chunked prompts
with a queue behind them, arrivals (open loop, ingress), finishes (closed loop, egress), a KV pool small enough to
preempt, prefix-cache hits, CUDA-graph padding, per-request times, speculation (no stretch) and the step limit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.theory import serving_tokens

# Any ceilings do: the two simulations share them (round numbers of a current HBM card, no card's datasheet needed)
CEILINGS = lat.Ceilings("any-card", 4.8e12, 989.5e12, "test value", "test value")
STEPS = lat.StepModel.build(load_model("qwen2.5-7b"), CEILINGS,
                            lat.EngineCalibration("test", step_overhead_s=1.5e-3, compute_efficiency=0.8))
TIMES = sv.RequestTimes(ingress_s=2e-3, first_token_s=4e-3, egress_s=1e-3)
PROMPTS, OUTPUTS = tuple(300 + 97 * (i % 13) for i in range(60)), tuple(20 + 31 * (i % 7) for i in range(60))
CASES: dict[str, tuple[sv.SchedulerConfig, sv.Workload, sv.RequestTimes]] = {
    "chunked-prompts-queued": (sv.SchedulerConfig(128, 2048), sv.Workload.closed(16, 160, 4096, 256),
                               sv.NO_REQUEST_TIMES),
    "closed-loop-times": (sv.SchedulerConfig(64, 8192, 20_000), sv.Workload.closed(64, 256, 1024, 128), TIMES),
    "kv-pool-preempts": (sv.SchedulerConfig(64, 2048, 1200), sv.Workload.closed(64, 128, 1024, 256),
                         sv.NO_REQUEST_TIMES),
    "poisson-slow": (sv.SchedulerConfig(256, 8192, 30_000), sv.Workload.poisson(2.0, 120, 1024, 256, seed=1), TIMES),
    "poisson-overload": (sv.SchedulerConfig(256, 8192, 8_000), sv.Workload.poisson(40.0, 200, 2048, 128, seed=2),
                         sv.NO_REQUEST_TIMES),
    "own-lengths-prefix-hits": (sv.SchedulerConfig(32, 4096, 6_000),
                                sv.Workload.of_requests(PROMPTS, OUTPUTS, tuple(16 * (p // 64) for p in PROMPTS),
                                                        concurrency=24), TIMES),
    "graph-padding": (sv.SchedulerConfig(64, 8192, capture_sizes=(1, 2, 4, 8, 16, 24, 32, 48)),
                      sv.Workload.closed(40, 120, 512, 200), sv.NO_REQUEST_TIMES),
    "speculation": (sv.SchedulerConfig(16, 4096, 5_000, spec_tokens=3, spec_tokens_per_step=2.2,
                                       spec_draft_fraction=0.7), sv.Workload.closed(8, 40, 700, 90), TIMES),
}


def _step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sv, "decode_streak", lambda eng, steps, max_steps: 0)


def _identical(a: Any, b: Any) -> None:
    assert a == b
    assert repr(a) == repr(b)  # floats to the last bit (repr round-trips), in every tuple


@pytest.mark.parametrize("case", list(CASES))
def test_stretches_give_the_step_by_step_results(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sched, work, fixed = CASES[case]
    ran: list[int] = []

    def counted(eng: Any, steps: Any, max_steps: int) -> int:
        ran.append(serving_tokens.decode_streak(eng, steps, max_steps))
        return ran[-1]

    with monkeypatch.context() as m:
        m.setattr(sv, "decode_streak", counted)
        streaked = sv.simulate(STEPS, sched, work, fixed=fixed)
    _step_by_step(monkeypatch)
    stepped = sv.simulate(STEPS, sched, work, fixed=fixed)
    _identical(streaked, stepped)
    if sched.spec_tokens:
        assert sum(ran) == 0  # a verify step is not a decode: no stretch
    else:
        assert sum(ran) > stepped.steps // 4, (case, sum(ran), stepped.steps)  # the stretches did run
    if case == "kv-pool-preempts":
        assert stepped.preemptions > 0


def test_the_step_limit_is_met_at_the_same_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stretch never runs past max_steps: both paths refuse the same workload, and pass it at its exact step count."""
    sched, work, _ = CASES["closed-loop-times"]
    steps = sv.simulate(STEPS, sched, work).steps
    with pytest.raises(RuntimeError, match="exceeded"):
        sv.simulate(STEPS, sched, work, max_steps=steps - 1)
    _identical(sv.simulate(STEPS, sched, work, max_steps=steps), sv.simulate(STEPS, sched, work))
    _step_by_step(monkeypatch)
    with pytest.raises(RuntimeError, match="exceeded"):
        sv.simulate(STEPS, sched, work, max_steps=steps - 1)


def test_saturation_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    sched = replace(CASES["closed-loop-times"][0], max_num_seqs=48)
    streaked = sv.saturation(STEPS, sched, 1024, 256)
    _step_by_step(monkeypatch)
    _identical(streaked, sv.saturation(STEPS, sched, 1024, 256))
