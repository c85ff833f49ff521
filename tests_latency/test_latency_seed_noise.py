"""The seed's noise budgets (seed_noise.py) and the numbers its findings quote, recomputed from the recordings."""

from __future__ import annotations

import latency_seed_findings as seedf
import pytest
import seed_noise as sn
from latency_setups import SEED_PROMPTS, SEED_SHAPE, mean_context

from pytest_anatomy.measure.analysis import linear_fit

from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv

pytestmark = pytest.mark.targets(recorded="seed-")


@pytest.mark.gpu
def test_refit_reproduces_the_seed_calibration(seed_setup, measured):
    """seed_noise.refit on r1-01 is conftest.seed_setup's calibration: the calibration spread moves only the run."""
    again = sn.refit(seed_setup, measured, sn.R1).calib
    assert (again.step_overhead_s, again.compute_efficiency) == pytest.approx(
        (seed_setup.calib.step_overhead_s, seed_setup.calib.compute_efficiency), rel=1e-12)


@pytest.mark.gpu
def test_budget_terms_are_from_other_rows(seed_setup, measured):
    """The round-to-round term of a row leaves that row out: moving the checked row's round-2 value leaves it as is."""
    values = {name: measured(name) for c in sn.CONCURRENCY for name in (sn.c_row(sn.R1, c), sn.c_row(sn.R2, c))}
    checked = sn.c_row(sn.R2, 8)

    class Moved:
        def __init__(self, rec, scale):
            self.rec, self.scale = rec, scale

        def __getitem__(self, key):
            return type("M", (), {"value": self.rec[key].value * self.scale})()

    def moved(name, suite="latency"):
        rec = values.get(name) or measured(name, suite=suite)
        return Moved(rec, 1.5 if name == checked else 1.0)
    assert sn.round_shift(moved, "median_itl", skip=8) == pytest.approx(sn.round_shift(measured, "median_itl", skip=8))
    assert sn.round_shift(moved, "median_itl") != pytest.approx(sn.round_shift(measured, "median_itl"))
    assert sn.pair_scatter([(1.0, 1.01)]) == pytest.approx(2**0.5 * 0.01)


@pytest.mark.gpu
def test_step_above_fit_numbers_are_the_recordings(seed_setup, measured):
    """STEP_ABOVE_FIT_REASON's table: round 1's median ITL minus the calibrated step (C = 2..16) and its C=16,
    L=4,096 median ITL over the calibrated step."""
    ctx = mean_context(*SEED_SHAPE)
    excess = {c: (measured(sn.c_row(sn.R1, c))["median_itl"].value
                  - lat.decode_step_time(seed_setup.model, seed_setup.ceilings, seed_setup.calib, c, ctx).value) * 1e3
              for c in seedf.R1_STEP_EXCESS_MS}
    assert excess == pytest.approx(seedf.R1_STEP_EXCESS_MS, abs=5e-4)
    step = lat.decode_step_time(seed_setup.model, seed_setup.ceilings, seed_setup.calib, 16,
                                mean_context(4096, SEED_SHAPE[1])).value
    assert measured(sn.len_row(1, 4096))["median_itl"].value / step == pytest.approx(seedf.R1_LEN4096_ITL_RATIO,
                                                                                     abs=5e-5)



def _r2(measured, c: int, quantity: str) -> float:
    return measured(sn.c_row(sn.R2, c))[quantity].value


@pytest.mark.gpu
def test_floor_attainment_numbers_are_the_recordings(seed_setup, measured):
    """ATTAINMENT's range: the datasheet decode floor over round 2's median ITL (test_itl_median_vs_datasheet_floor's
    rows), its least and greatest over C = 1..64."""
    ctx = mean_context(*SEED_SHAPE)
    att = [lat.decode_step_time(seed_setup.model, seed_setup.ceilings, lat.UNCALIBRATED, c, ctx).value
           / _r2(measured, c, "median_itl") for c in sn.CONCURRENCY]
    assert (min(att), max(att)) == pytest.approx(seedf.SEED_FLOOR_ATTAINMENT, abs=5e-3)


@pytest.mark.gpu
def test_per_sequence_cost_numbers_are_the_recordings(seed_setup, measured):
    """HIGH_C's and SEED_MARGINAL_COST's numbers from round 2 (the checked sweep): median ITL over the calibrated step
    at C=32/64 (test_itl_median_with_calibrated_overhead), output throughput and mean ITL over the simulated closed
    loop's (test_throughput_curve, test_itl_mean_and_median), and the cost of an extra sequence (median ITL from C=1 to
    C=64 over 63) against the step model's d(t_step)/dC, with the OLS slope test_marginal_cost_per_request reconciles
    at the same ratio."""
    ctx = mean_context(*SEED_SHAPE)

    def step(c: int) -> float:
        return lat.decode_step_time(seed_setup.model, seed_setup.ceilings, seed_setup.calib, c, ctx).value
    excess = {c: _r2(measured, c, "median_itl") / step(c) - 1 for c in seedf.SEED_HIGH_C_STEP_EXCESS}
    assert excess == pytest.approx(seedf.SEED_HIGH_C_STEP_EXCESS, abs=5e-3)
    sims = {c: seed_setup.simulate(sv.Workload.closed(c, SEED_PROMPTS[c], *SEED_SHAPE)) for c in (32, 64)}
    tput = {c: _r2(measured, c, "output_throughput") / res.output_throughput - 1 for c, res in sims.items()}
    assert tput == pytest.approx(seedf.SEED_HIGH_C_TPUT_SHIFT, abs=5e-3)
    mean = {c: _r2(measured, c, "mean_itl") / res.stat("itl", "mean") - 1 for c, res in sims.items()}
    assert mean == pytest.approx(seedf.SEED_HIGH_C_MEAN_ITL_SHIFT, abs=5e-3)
    per_seq = (_r2(measured, 64, "median_itl") - _r2(measured, 1, "median_itl")) / 63
    kv = (step(64) - step(1)) / 63
    assert per_seq * 1e3 == pytest.approx(seedf.SEED_MARGINAL_COST_MS, abs=5e-4)
    assert kv * 1e3 == pytest.approx(seedf.SEED_KV_COST_MS, abs=5e-4)
    slope = linear_fit(sn.CONCURRENCY, [_r2(measured, c, "median_itl") for c in sn.CONCURRENCY]).slope
    assert f"{slope / kv:.1f}" == f"{seedf.SEED_MARGINAL_COST_MS / seedf.SEED_KV_COST_MS:.1f}"


@pytest.mark.gpu
def test_c4_p99_numbers_are_the_recordings(seed_setup, measured):
    """PAIRED_PROMPTS' milliseconds: the C=4 p99 ITL of each sweep (round 2's, round 1's two), the simulated C=4 p99
    (a prefill step, quoted to ~10 ms) and round 2's C=4 median TTFT."""
    p99 = {run: measured(sn.c_row(run, 4))["p99_itl"].value * 1e3 for run in seedf.SEED_C4_P99_MS}
    assert p99 == pytest.approx(seedf.SEED_C4_P99_MS, abs=0.05)
    sim = seed_setup.simulate(sv.Workload.closed(4, SEED_PROMPTS[4], *SEED_SHAPE)).stat("itl", "p99") * 1e3
    assert sim == pytest.approx(seedf.SEED_C4_SIM_P99_MS, abs=5)
    assert _r2(measured, 4, "median_ttft") * 1e3 == pytest.approx(seedf.SEED_C4_TTFT_MEDIAN_MS, abs=0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("rnd", [1, 2])
def test_overload_ttft_shortfall_is_the_throughputs(seed_setup, measured, rnd):
    """STEP_ABOVE_FIT_REASON: the overload run's TTFT, a queue drained at the run's throughput, is above its simulation
    by about the throughput's shortfall: measured/simulated TTFT (mean and median) x measured/simulated throughput is
    1 within half a percent, in both rounds."""
    from test_latency_seed_load import _stress

    rec, res = measured(f"seed-r{rnd}-04-stress"), _stress(seed_setup, measured, rnd)
    tput = rec["output_throughput"].value / res.output_throughput
    for key, stat in (("mean_ttft", "mean"), ("median_ttft", "p50")):
        assert rec[key].value / res.stat("ttft", stat) * tput == pytest.approx(1.0, abs=5e-3)
