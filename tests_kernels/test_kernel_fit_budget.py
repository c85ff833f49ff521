"""kernel_budget.fit_budget, the tolerance of a ledger fitted in the same run, on made-up rows (CPU)."""

from __future__ import annotations

import kernel_budget as kb
import pytest


def test_an_exactly_determined_fit_has_no_leave_one_out_and_passes_each_points_noise_through():
    rows = {"a": ({"x": 1.0, "y": 0.0}, 2.0), "b": ({"x": 1.0, "y": 1.0}, 5.0)}
    assert kb.leave_one_out(rows, ("a", "b"), ("x", "y")) is None
    # priced x = 2, y = 3: {x: 1, y: 2} costs 2 + 6 = 8 = -1 x beat(a) + 2 x beat(b)
    sens = kb.fit_sensitivity(rows, ("a", "b"), ("x", "y"), {"x": 1.0, "y": 2.0})
    assert sens == pytest.approx({"a": -1 * 2 / 8, "b": 2 * 5 / 8})
    terms = kb.fit_budget(rows, ("a", "b"), ("x", "y"), {"x": 1.0, "y": 2.0}, {"a": 0.01, "b": 0.02}, 0.005)
    assert terms == pytest.approx({"fit_points_timing_noise": 0.25 * 0.01 + 1.25 * 0.02,
                                   "checked_rung_timing_noise": 0.005})
    assert "exactly determined" in kb.fit_why(("a", "b"), ("x", "y"), "blocks")


def test_a_fit_with_spare_points_adds_its_largest_leave_one_out_residual():
    # one price on three rungs: left out, each is priced by the others' mean cycles per count
    rows = {"a": ({"x": 1.0}, 1.0), "b": ({"x": 2.0}, 2.2), "c": ({"x": 1.0}, 0.9)}
    loo = kb.leave_one_out(rows, ("a", "b", "c"), ("x",))
    assert loo is not None
    for r in rows:
        rest = [x for x in rows if x != r]
        a = [rows[x][0]["x"] for x in rest]
        price = sum(ai * rows[x][1] for ai, x in zip(a, rest)) / sum(ai * ai for ai in a)
        assert loo[r] == pytest.approx(rows[r][1] / (rows[r][0]["x"] * price) - 1)
    terms = kb.fit_budget(rows, ("a", "b", "c"), ("x",), {"x": 1.0}, dict.fromkeys(rows, 0.0), 0.0)
    assert terms["fit_leave_one_out"] == pytest.approx(max(abs(v) for v in loo.values()))


class _Rec:
    def __init__(self, time: float, repeat: float) -> None:
        self.measurements = {"time": {"value": time}, "time_repeat": {"value": repeat}}


def test_the_tile_tolerance_is_the_noise_sum_and_widens_with_the_scatter():
    """kernel_budget.tile_budget (the autotuner candidates' tolerance, issue 10): the candidate's block scatter, the
    session term and the ledger's input term, summed; doubling the scatter widens it by exactly the scatter."""
    from pytest_anatomy.reconcile import Tolerance

    drift = kb.kfs.spread_terms()["session_drift_of_rung_0"]
    one = kb.tile_budget(_Rec(1.02, 1.0), [], 0.001)
    assert one == pytest.approx({"repeat_scatter": 0.02, "session_drift_of_rung_0": drift, "s9_counted_pace": 0.001})
    two = kb.tile_budget(_Rec(1.04, 1.0), [], 0.001)
    width = Tolerance.from_budget(kb.TILE_WHY, **one).rel
    assert width == pytest.approx(sum(one.values()))
    assert Tolerance.from_budget(kb.TILE_WHY, **two).rel == pytest.approx(width + 0.02)
    # three other sessions: their spread replaces rung 0's drift
    own = kb.tile_budget(_Rec(1.0, 1.0), [1.0, 1.01, 0.99], 0.0)
    assert own == pytest.approx({"repeat_scatter": 0.0, "spread_over_other_sessions": 0.01, "s9_counted_pace": 0.0})
    # a counter recorded twice at 4.72 to two decimals is known to +-0.005
    assert kb.input_spread([4.72, 4.72], 4.72, 0.01) == pytest.approx(0.005 / 4.72)
    assert kb.input_spread([4.72, 4.84], 4.72, 0.01) == pytest.approx(0.12 / 4.72 + 0.005 / 4.72)
