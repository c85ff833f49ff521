"""theory/calibration.py: the step overhead measured apart (tiny-hidden models) and compute efficiency
from GEMM timings at a step's shapes; why the first catches errors the b=1 residual absorbs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import calibration as cal
from pytest_anatomy.theory import latency as lat

OVERHEAD_DIR = Path(cal.__file__).resolve().parents[1] / "specs" / "configs" / "overhead"
CEILINGS = lat.Ceilings.measured(get_hardware("h200"), bandwidth=4.39e12, peak=7.9e14, source="test")


def _tiny(layers: int):
    return load_model(OVERHEAD_DIR / f"qwen2.5-7b-tiny-l{layers}.json")


def _steps(c0: float, per_layer: float, per_seq: float = 0.0, theory: lat.Ceilings = CEILINGS):
    """Tiny-model steps an engine with this overhead shows (true roofline + c0 + c_layer L + per_seq (b - 1)),
    with the roofline the theory under test subtracts (`theory`'s ceilings)."""
    out = []
    for layers in (2, 28):
        tiny = _tiny(layers)
        for b in (1, 128):
            roof = lat.decode_step_time(tiny, CEILINGS, lat.UNCALIBRATED, b, 1088).value
            subtracted = lat.decode_step_time(tiny, theory, lat.UNCALIBRATED, b, 1088).value
            out.append(cal.OverheadStep(layers, b, roof + c0 + per_layer * layers + per_seq * (b - 1), subtracted,
                                        f"tiny-l{layers}.decode.b{b}", scatter_s=2e-6))
    return out


def test_tiny_models_are_qwen_with_a_negligible_roofline():
    qwen, tiny = load_model("qwen2.5-7b"), _tiny(28)
    assert (tiny.vocab_size, tiny.head_dim, tiny.num_layers) == (qwen.vocab_size, qwen.head_dim, qwen.num_layers)
    roof = lat.decode_step_time(tiny, CEILINGS, lat.UNCALIBRATED, 1, 1088).value
    assert roof < 0.03e-3 < 0.01 * lat.decode_step_time(qwen, CEILINGS, lat.UNCALIBRATED, 1, 1088).value


def test_layer_overhead_recovers_its_terms():
    fit = cal.fit_layer_overhead(_steps(1.4e-3, 2e-6, 1.5e-5))
    assert fit.c0_s == pytest.approx(1.4e-3) and fit.per_layer_s == pytest.approx(2e-6)
    assert fit.per_sequence_s == pytest.approx(1.5e-5) and fit.spread_s == 2e-6
    assert fit.at(32) == pytest.approx(1.4e-3 + 64e-6)
    calib = cal.engine_from_overhead(load_model("llama-3.1-8b"), fit, name="x")
    assert calib.step_overhead_s == pytest.approx(1.464e-3) and calib.fitted_on == ()  # nothing of Llama fitted
    with pytest.raises(ValueError, match="two layer counts"):
        cal.fit_layer_overhead([s for s in _steps(1e-3, 0.0) if s.layers == 2])


def test_gemm_efficiency_is_flops_over_the_timed_shapes():
    qwen = load_model("qwen2.5-7b")
    shapes = cal.linear_shapes(qwen)
    assert shapes == (("qkv", 3584, 4608), ("o", 3584, 3584), ("gate_up", 3584, 37888), ("down", 18944, 3584))
    seconds = {(8192, k, n): 2.0 * 8192 * k * n / (0.8 * 7.9e14) for _, k, n in shapes}  # each at 80% of peak
    assert cal.gemm_compute_efficiency(qwen, 8192, seconds, 7.9e14) == pytest.approx(0.8)
    with pytest.raises(KeyError, match="down at m=8192"):
        cal.gemm_compute_efficiency(qwen, 8192, {k: v for k, v in seconds.items() if k[1] != 18944}, 7.9e14)


def test_the_independent_overhead_catches_a_5_percent_weights_error_the_residual_absorbs():
    """A 5% error in the bytes a step streams cancels exactly when t_overhead is Qwen's own b=1 residual;
    with t_overhead from the tiny models (whose roofline barely moves) it shows as a ~3.4% gap at b=1."""
    qwen = load_model("qwen2.5-7b")
    true_overhead = 1.5e-3
    measured_b1 = lat.decode_step_time(qwen, CEILINGS, lat.UNCALIBRATED, 1, 1088).value + true_overhead
    wrong = replace(CEILINGS, bandwidth=CEILINGS.bandwidth / 1.05)  # every byte 5% dearer: bytes x1.05
    residual = lat.fit_step_overhead(qwen, wrong, 1, 1088, measured_b1, name="residual", fitted_on="b1")
    assert lat.decode_step_time(qwen, wrong, residual, 1, 1088).value == pytest.approx(measured_b1)  # absorbed
    tiny = cal.engine_from_overhead(qwen, cal.fit_layer_overhead(_steps(true_overhead, 0.0, theory=wrong)),
                                    name="tiny")
    gap = lat.decode_step_time(qwen, wrong, tiny, 1, 1088).value / measured_b1 - 1
    assert 0.03 < gap < 0.04  # far outside a ~1.2% noise budget


def test_eta_by_tokens_interpolates_in_log_tokens_and_steps_use_it():
    qwen = load_model("qwen2.5-7b")
    seconds = {}
    for m, eta in ((512, 0.6), (2048, 0.7), (8192, 0.8)):
        for _, k, n in cal.linear_shapes(qwen):
            seconds[(m, k, n)] = 2.0 * m * k * n / (eta * 7.9e14)
    seconds[(128, 3584, 4608)] = 1e-3  # a memory-bound count (and incomplete): ignored
    base = lat.EngineCalibration("x", 1.5e-3, 0.79, fitted_on=("qwen.decode.b1", "qwen.prefill.l8192"),
                                 notes=("eta = 0.79: fitted",))
    calib = cal.with_gemm_efficiency(base, qwen, seconds, 7.9e14)
    assert [m for m, _ in calib.efficiency_by_tokens] == [512, 2048, 8192]
    assert [e for _, e in calib.efficiency_by_tokens] == pytest.approx([0.6, 0.7, 0.8])
    assert calib.fitted_on == ("qwen.decode.b1",) and not any(n.startswith("eta = ") for n in calib.notes)
    assert calib.eta_at(100) == pytest.approx(0.6) and calib.eta_at(20000) == pytest.approx(0.8)
    assert calib.eta_at(1024) == pytest.approx(0.65)  # halfway between 512 and 2048 in log tokens
    ceilings = lat.Ceilings.measured(get_hardware("h200"), bandwidth=4.39e12, peak=7.9e14, source="test")
    for work in (lat.prefill_work(8192, 8192)[0], lat.prefill_work(1024, 8192)[0], lat.decode_work(64, 1088)):
        assert lat.StepModel.build(qwen, ceilings, calib).seconds(
            work.decode_tokens, work.decode_context_sum, work.prefill, work.logits
        ) == pytest.approx(lat.step_time(qwen, ceilings, calib, work).value)
    assert cal.with_gemm_efficiency(base, qwen, {}, 7.9e14) is base
    with pytest.raises(ValueError, match="sorted"):
        lat.EngineCalibration("bad", efficiency_by_tokens=((2048, 0.7), (512, 0.6)))
