"""`--anatomy-plan`'s estimate: a (faster, slower machine) range fitted on the two recorded full live sessions
(results/h200/live-runs/20261201T235925Z.full and 20261202T022605Z.full), a warning past the time limits, and
live latency plans without the tiny-hidden twins."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_anatomy import live_plan
from pytest_anatomy.measure.latency_live import LatencyLivePlan

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def suite_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple]:
    for folder in ("tests_latency", "tests_capacity"):
        monkeypatch.syspath_prepend(str(REPO / folder))
    import capacity_live_plan
    import latency_live_plan

    yield latency_live_plan, capacity_live_plan
    for name in ("latency_live_plan", "capacity_live_plan"):
        sys.modules.pop(name, None)


def test_live_latency_plans_run_no_tiny_twin(suite_modules: tuple) -> None:
    """Neither twin calibrates anything live (one layer count fits no slope; the step is the CPU loop): the live
    plans pass `--overhead-models none`, which the device program reads as no overhead model."""
    lat, _ = suite_modules
    assert lat.LIVE_OVERHEAD == ()
    for plan in (lat.FAST, lat.FULL):
        argv = plan.argv(Path("out"), Path("config.json"))
        assert argv[argv.index("--overhead-models") + 1] == "none"


def test_latency_estimates_reproduce_the_fitted_sessions(suite_modules: tuple) -> None:
    """The full plan, less the twins those sessions ran (~87 s and ~57 s) and with keep_raw's xz -9 (11.9 / 12.8 s)
    instead of the fast filters (~3 / 4 s): 361 + 12 s and 359 + 13 s measured."""
    lat, _ = suite_modules
    low, high = lat.FULL.estimate_s(), lat.FULL.estimate_high_s()
    assert low == pytest.approx(361.4 - 86.7 + 11.9 - 8.9, rel=0.03)
    assert high == pytest.approx(359.2 - 56.5 + 12.8 - 8.8, rel=0.03)
    assert lat.FAST.estimate_s() < lat.FAST.estimate_high_s() < 120


def test_capacity_starts_reproduce_the_fitted_sessions(suite_modules: tuple) -> None:
    """The eight starts in the sessions' order (Mistral's included: both sessions ran it; the plan has dropped it
    since): 387.2 s and 456.9 s measured."""
    _, cap = suite_modules
    order = [("qwen2.5-7b", True), ("qwen2.5-0.5b", True), ("qwen2.5-14b", True), ("qwen2.5-32b", True),
             ("qwen2.5-7b", False), ("llama-3.1-8b", True), ("mistral-7b-v0.3", True), ("qwen2.5-7b", True)]
    est = cap.start_estimates(order)
    assert sum(lo for lo, _ in est) == pytest.approx(387.2, abs=1.0)
    assert sum(hi for _, hi in est) == pytest.approx(456.9, abs=1.0)
    assert est[0][0] > est[2][0] and est[5][0] > est[2][0]  # the first start, and Llama's (a new architecture)


def test_range_and_limit_warning() -> None:
    assert live_plan.estimate_range({"estimate_s": 10}) == (10.0, 10.0)
    assert live_plan.estimate_range({"estimate_s": 10, "estimate_high_s": 12}) == (10.0, 12.0)
    assert live_plan.limit_warning(890, full=True) is None
    assert "15-minute limit" in (live_plan.limit_warning(901, full=True) or "")
    assert live_plan.limit_warning(290, full=False) is None
    assert "5-minute limit" in (live_plan.limit_warning(301, full=False) or "")


def test_a_latency_plan_without_twins_prices_none() -> None:
    bare = LatencyLivePlan("m", (1,), (128,))
    twin = LatencyLivePlan("m", (1,), (128,), overhead_models=("t",))
    assert twin.estimate_s() - bare.estimate_s() == pytest.approx(52.0)
