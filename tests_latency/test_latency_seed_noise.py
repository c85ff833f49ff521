"""The seed's noise budgets (seed_noise.py) and the numbers its findings quote, recomputed from the recordings."""

from __future__ import annotations

import latency_seed_findings as seedf
import pytest
import seed_noise as sn
from latency_setups import SEED_SHAPE, mean_context

from pytest_anatomy.theory import latency as lat

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
