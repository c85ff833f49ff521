"""tests_latency/conftest.py's engine setup takes the step overhead from a session's tiny-hidden overhead
models and eta from its GEMM timings when the session recorded them, and then fits nothing on Qwen2.5-7B.
The newest recorded session (2026-12-01 06:53) timed the GEMMs but ran the tiny model at 28 layers only, which
fits no layer slope; so this also runs the builder on that session's recordings plus stand-in tiny-model (both
layer counts) and GEMM entries made here (in memory, never written under results/), built from the theory
itself so the expected constants are known exactly."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy import recordings
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import calibration as cal
from pytest_anatomy.theory import latency as lat

REPO = Path(__file__).resolve().parents[1]
C0, PER_LAYER = 1.40e-3, 2.0e-6  # the overhead the stand-in tiny steps carry
ETA = {512: 0.62, 2048: 0.71, 7424: 0.78, 8192: 0.79}


@pytest.fixture(scope="module")
def latency_conftest() -> Any:
    sys.path.insert(0, str(REPO / "tests_latency"))
    try:
        spec = importlib.util.spec_from_file_location("latency_conftest_under_test", REPO / "tests_latency" / "conftest.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module
    finally:
        sys.path.remove(str(REPO / "tests_latency"))


class _Target:
    name, live = "h200", False

    @staticmethod
    def require_spec() -> Any:
        return get_hardware("h200")


# The newest session whose live plan ran the tiny overhead model at 28 layers only (the live plans run no twin since
# the 2026-12-02 04:45 visit: latency_live_plan.LIVE_OVERHEAD), the case test_a_session_with_tiny_models... starts from.
TINY_L28_ONLY = "2026-12-02T02:33:51.000000Z"


def _session(extra: dict[str, recordings.Recording], model: str = "qwen2.5-7b", stamp: str | None = None) -> Any:
    """rec(name, suite=..., beside=..., not_after=...) over `model`'s newest recorded session (or the one of `stamp`)
    plus `extra`."""
    results = REPO / "results"
    b1 = recordings.load_latest(results, _Target.name, "latency", f"{model}.decode.b1", stamp)

    def rec(name: str, suite: str = "latency", beside: Any = None, not_after: str | None = None) -> Any:
        if name in extra:
            return extra[name]
        return recordings.load_beside(results, _Target.name, suite, name, b1)

    rec.has = lambda name, suite="latency": name in extra or bool(recordings.candidates(results, _Target.name, suite, name))
    return rec, b1


def _tiny_steps(ceilings: lat.Ceilings) -> dict[str, recordings.Recording]:
    out = {}
    for layers in (28, 2):
        name = f"qwen2.5-7b-tiny-l{layers}"
        tiny = load_model(REPO / "pytest_anatomy" / "specs" / "configs" / "overhead" / f"{name}.json")
        for b in (1, 16, 64, 128):
            step = lat.decode_step_time(tiny, ceilings, lat.UNCALIBRATED, b, 1088).value + C0 + PER_LAYER * layers
            out[f"{name}.decode.b{b}"] = recordings.Recording(
                "latency", f"{name}.decode.b{b}", "h200", "2026-12-01T07:40:00Z", {}, {
                    "step_time_s": {"value": step, "unit": "s"},
                    **{f"itl_steady_engine_clock_s.{k}": {"value": v, "unit": "s"} for k, v in
                       (("n", 127 * b), ("median", step), ("p90", step * 1.02), ("std", step * 0.02))}},
                {"run": {"settings": {"batch": b, "input_len": 1024, "output_len": 128}}})
    return out


def _with_gemms(ceil: recordings.Recording, qwen: Any) -> recordings.Recording:
    meas, timed = dict(ceil.measurements), {}
    for m, eta in ETA.items():
        for _, k, n in cal.linear_shapes(qwen):
            seconds = 2.0 * m * k * n / (eta * ceil["matmul_bf16.value"].value)
            meas[f"gemm.{cal.gemm_key(m, k, n)}.seconds_median"] = {"value": seconds, "unit": ""}
            timed[cal.gemm_key(m, k, n)] = {"samples": [1.0, 1.001, 0.999]}
    result = {**ceil.data["run"]["result"], "gemm": timed}
    return replace(ceil, measurements=meas, data={**ceil.data, "run": {**ceil.data["run"], "result": result}})


def test_a_session_with_tiny_models_keeps_the_b1_residual_and_says_why(latency_conftest):
    qwen = load_model("qwen2.5-7b")
    rec, b1 = _session({}, stamp=TINY_L28_ONLY)
    plain = latency_conftest.build_engine_setup(qwen, rec, _Target())
    # a session with eta from its GEMMs and one tiny layer count: t_overhead stays Qwen's b=1 residual
    assert {f.constant for f in plain.fits} == {"t_overhead"}
    assert plain.overhead is None and plain.calib.efficiency_by_tokens
    assert any("at 28 layers only" in n and "no slope is assumed" in n for n in plain.calib.notes)
    assert plain.kind_of(latency_conftest.h200_workload(b1), "step_time_s") == "fit"

    # two layer counts: the tiny models' fit exists but is not an additive overhead (calibration.TINY_OVERHEAD_IS_ADDITIVE,
    # h200-tiny-model-step-is-the-cpu-loop): t_overhead stays the b=1 residual, a fit point, and the note says why
    assert not cal.TINY_OVERHEAD_IS_ADDITIVE
    ceil = _with_gemms(rec("ceilings", suite="ceilings"), qwen)
    rec, b1 = _session({**_tiny_steps(plain.ceilings), "ceilings": ceil})
    assert latency_conftest.session_overhead(rec, _Target(), b1).at(28) == pytest.approx(C0 + PER_LAYER * 28, rel=1e-9)
    setup = latency_conftest.build_engine_setup(qwen, rec, _Target())
    assert {f.constant for f in setup.fits} == {"t_overhead"} and setup.overhead is None
    assert setup.calib.step_overhead_s != pytest.approx(C0 + PER_LAYER * 28, rel=1e-3)
    assert dict(setup.calib.efficiency_by_tokens) == pytest.approx(ETA)
    assert setup.kind_of(latency_conftest.h200_workload(b1), "step_time_s") == "fit"
    assert cal.TINY_OVERHEAD_NOT_USED in setup.calib.notes
    # Llama-3.1-8B takes Qwen's overhead, and eta from its own session's GEMMs (the newest Llama session timed
    # Llama's shapes), never Qwen's stand-in eta
    rec_l, _ = _session({}, "llama-3.1-8b")
    llama = latency_conftest.build_transfer_setup(setup, rec_l, _Target())
    assert llama.calib.step_overhead_s == pytest.approx(setup.calib.step_overhead_s, rel=1e-9)
    own = cal.gemm_efficiency_by_tokens(llama.model, cal.gemm_seconds(rec_l("ceilings", suite="ceilings").measurements),
                                        llama.ceilings.peak)
    assert own and llama.calib.efficiency_by_tokens == own and llama.fits == ()
