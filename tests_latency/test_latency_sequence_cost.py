"""The load runs' median ITL with the decode step's per-sequence excess measured apart (sequence_cost.py).

test_latency_load.py and test_latency_closed_loop.py predict a run's median ITL from the step model alone and carry
the per-sequence excess as a finding. Here the excess is a constant of the prediction, measured on the session's
isolated decode steps (decode.b1..b64: runs apart from the one predicted) and carried into the simulation as seconds
per sequence; the tolerance is the noise budget alone (the run's repeat scatter, the session's ceilings and calibration,
the excess's own scatter, and the line's misfit at the run's batch), never the 10% decode goal.

The runs are those whose median ITL is a decode step of a known batch: the closed loops at C = 8, 32 and 64 and the
overload run (~125 sequences at ~16,600 tokens of context, 15x the decode runs'). The Poisson runs are not: their
median step mixes batches and prompt chunks, and Qwen2.5-7B's keep a residual above this prediction
(test_poisson_medians_keep_a_residual_beyond_the_sequence_cost says how much, and fails once they stop).
"""

from __future__ import annotations

import latency_findings as lf
import pytest
from latency_closed_loop_findings import llama_closed_below_marks
from latency_findings_common import LLAMA, QWEN
from sequence_cost import sequence_cost, simulate_with, simulate_with_slower_kv_read, spread_share
from test_latency_load import _kw, _label, _setup, itl_budget, run_workload

from pytest_anatomy.theory import serving as sv

pytestmark = pytest.mark.targets(recorded="qwen2.5-7b.closed.", live=True)
LIVE_SLOW = True  # the load runs are the slow plan's

RUNS = ("closed.c8", "closed.c32", "closed.c64", "overload")
WHY = ("measured noise only (the 10% decode goal is not this tolerance): the run's repeat scatter, the session's read "
       "ceiling and calibration spread (itl_budget), the per-sequence excess's own budget (its OLS slope's 2 standard "
       "errors and the ceiling's scatter) over its share of the step, and the decode-step line's misfit at the run's "
       "batch (the isolated step at the nearest recorded batch against the b = 1..64 line)")


def _batch(rec, res: sv.SimResult) -> float:
    """The batch of the run's median step: C for a closed loop, the simulated mean running count under overload."""
    s = rec.data["run"]["settings"]
    return float(s["concurrency"]) if rec.data["run"]["kind"] == "closed" else res.mean_running


def predict(request, model: str, rec):
    """(setup, the prediction, its noise budget, the session's SequenceCost) of `rec`'s median ITL with its session's
    per-sequence excess."""
    setup = _setup(request, model, rec)
    latency_recording = request.getfixturevalue("latency_recording")
    cost = sequence_cost(setup, lambda name: latency_recording(name, beside=rec))
    work = run_workload(rec)
    res = simulate_with(setup, cost.extra_s, work)
    pred = sv.as_prediction(res, "itl", "p50", "s", _label(rec), notes=(
        f"every step carries {cost.extra_s * 1e6:.2f} us per sequence beyond the first: the session's decode-step "
        f"slope over b = 1..64 minus the step model's (+-{cost.spread_s * 1e6:.2f} us), measured on its decode.b* runs",))
    budget = {**itl_budget(setup, res, rec, "p50"),
              "sequence_cost_spread": spread_share(setup, cost, work, "p50", res.stat("itl", "p50")),
              "line_misfit": cost.misfit_at(_batch(rec, res))}
    return setup, pred, budget, cost


def _cases():
    for model in (QWEN, LLAMA):
        for run in RUNS:
            marks = llama_closed_below_marks() if model == LLAMA and run.startswith("closed.") else ()
            yield pytest.param(model, run, id=f"{model}-{run}", marks=marks)


@pytest.fixture
def llama_closed_band(request) -> tuple[float, float] | None:
    """Llama-3.1-8B's closed loops: the band of each C is the other two C's measured/predicted (this module's
    prediction, same session) +- their budgets and this run's (latency_closed_loop_findings.LLAMA_CLOSED_BELOW)."""
    model, run = (request.node.callspec.params[k] for k in ("model", "run"))
    if model != LLAMA or not run.startswith("closed."):
        return None
    latency_recording = request.getfixturevalue("latency_recording")
    rec = latency_recording(f"{model}.{run}")
    own = sum(predict(request, model, rec)[2].values())
    ends = []
    for other in (r for r in RUNS if r.startswith("closed.") and r != run):
        o = latency_recording(f"{model}.{other}", beside=rec)
        _, pred, budget, _ = predict(request, model, o)
        ends.append((o["aggregate.itl_s.median"].value / pred.value, sum(budget.values())))
    return (round(min(r * (1 - b - own) for r, b in ends), 4), round(max(r * (1 + b + own) for r, b in ends), 4))


@pytest.mark.gpu
@pytest.mark.parametrize(("model", "run"), list(_cases()))
def test_itl_median_with_the_sequence_cost_measured_apart(model, run, request, latency_recording, llama_closed_band,
                                                          reconcile):
    rec = latency_recording(f"{model}.{run}")
    setup, pred, budget, _ = predict(request, model, rec)
    reconcile("itl_median_with_sequence_cost", pred, rec["aggregate.itl_s.median"], budget=budget, why=WHY,
              finding_band=llama_closed_band, **_kw(setup))


@pytest.mark.gpu
@pytest.mark.parametrize("model", (QWEN, LLAMA))
def test_the_excess_does_not_scale_with_the_kv_read(model, request, latency_recording):
    """The overload run's decodes read ~15x the decode runs' KV per sequence. Carried as a slower KV read (the measured
    slope over the modeled one, on every KV byte), the excess over-predicts its median ITL beyond the noise budget that
    the per-sequence form meets: the excess is a cost per sequence, not per KV byte (sequence_cost.py)."""
    rec = latency_recording(f"{model}.overload")
    setup, pred, budget, cost = predict(request, model, rec)
    measured = rec["aggregate.itl_s.median"].value
    slower = simulate_with_slower_kv_read(setup, cost.slope_ratio, run_workload(rec))
    total = sum(budget.values())
    assert abs(measured / pred.value - 1) <= total, f"per sequence: {measured / pred.value:.4f} outside +-{total:.4f}"
    ratio = measured / slower.stat("itl", "p50")
    assert ratio < 1 - total, f"per KV byte: {ratio:.4f} is inside 1 +- {total:.4f}; the runs do not tell them apart"


# Qwen2.5-7B's Poisson runs' median ITL against this module's prediction: 2-8% above it at every rate on both recorded
# cards, and beyond the noise budget where that budget is tightest (0.25x: ~1.1%, the batch small and steady); at the
# higher rates the run's own ITL scatter and the excess's share grow, and the residual sits about at its 3-7% budget.
# Not a finding yet (mechanism unknown: a Poisson run's median step mixes batches and prompt chunks), so these runs stay
# on the decode goal in test_latency_load.py; this test fails when that changes, to move them here.
@pytest.mark.gpu
@pytest.mark.parametrize("factor", lf.POISSON)
def test_poisson_medians_keep_a_residual_beyond_the_sequence_cost(factor, request, latency_recording):
    rec = latency_recording(f"{QWEN}.poisson.f{factor}")
    _, pred, budget, _ = predict(request, QWEN, rec)
    ratio = rec["aggregate.itl_s.median"].value / pred.value
    assert ratio > 1, f"{ratio:.4f}: the median no longer runs above the prediction"
    if factor == lf.POISSON[0]:
        assert ratio - 1 > sum(budget.values()), f"{ratio:.4f} is inside +-{sum(budget.values()):.4f}"

