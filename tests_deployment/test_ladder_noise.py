"""ladder_noise.py's table (the gains inside issue 14's 20% target but outside their error budget) recomputed from the
recordings and the kept raw batches, and its bands' arithmetic."""

from __future__ import annotations

import gain_budget as gb
import ladder_noise as ln
import pytest
from test_ladder_replay import gain_of, predicted_gains, run_and_parent

# The deployment plan runs on the device only: these tests take the recorded cards.
pytestmark = pytest.mark.targets(recorded="")


@pytest.mark.gpu
@pytest.mark.parametrize("key", sorted(ln.GAINS), ids=lambda k: ".".join(map(str, k)))
def test_noise_gains_are_the_recorded_ones(target, measured, key: ln.Key) -> None:
    """Each quoted gain, its request-resampled interval (gain_budget's, the budget's own) and its predicted gain."""
    model, workload, step, metric, run = key
    rec, parent, _ = run_and_parent(measured, target, model, workload, step, run)
    g, lo, hi, p = ln.GAINS[key]
    assert g == pytest.approx(gain_of(rec, parent, metric), abs=5e-5)
    assert p == pytest.approx(predicted_gains(model, workload, step, rec)[metric], abs=5e-5)
    noise = gb.resampled_term(rec, parent, metric, workload, p, g)
    assert noise is not None and (lo, hi) == tuple(round(x, 4) for x in noise[1])


def test_every_miss_is_outside_its_interval_and_inside_the_target() -> None:
    """A miss's interval excludes its prediction and the gain lies within 20% of it (else another finding covers it)."""
    from pytest_anatomy.theory.deployment import gain_within

    assert len(ln.MISSES) == 63  # 47 before the third start (2026-12-05), 16 of its runs
    for key in ln.MISSES:
        g, lo, hi, p = ln.GAINS[key]
        assert not lo <= p <= hi and gain_within(p, g), key


def test_a_band_is_the_other_runs_only_where_it_holds_this_run() -> None:
    """other-runs bands hold the run's ratio; moving this run's own numbers moves no other-runs band."""
    for key in ln.MISSES:
        b, src, _ = ln.band(key)
        g, lo, hi, p = ln.GAINS[key]
        assert src in ("other-runs", "checked-run")
        if src == "checked-run":
            assert b == (round(lo / p, 4), round(hi / p, 4))
        else:
            assert b[0] <= g / p <= b[1]
