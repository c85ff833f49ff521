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
import latency_overload_forms_findings as of
import pytest
from latency_closed_loop_findings import llama_closed_below_marks
from latency_findings_common import H100, LLAMA, MEASURED_ON, QWEN
from latency_sequence_cost_findings import (QWEN_INSIDE_BUDGET, QWEN_CLOSED_AT_ITS_STEP_RUNS,
                                            qwen_closed_at_its_step_marks)
from latency_setups import median_scatter
from sequence_cost import decode_sweep_fit, sequence_cost, simulate_with, simulate_with_slower_kv_read, spread_share
from latency_load_runs import setup_kw, run_label, load_setup, itl_budget, run_workload

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
    setup = load_setup(request, model, rec)
    latency_recording = request.getfixturevalue("latency_recording")
    cost = sequence_cost(setup, lambda name: latency_recording(name, beside=rec))
    work = run_workload(rec)
    res = simulate_with(setup, cost.extra_s, work)
    pred = sv.as_prediction(res, "itl", "p50", "s", run_label(rec), notes=(
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
            marks = (*marks, *qwen_closed_at_its_step_marks(run)) if model == QWEN else marks
            marks = (*marks, *of.overload_forms_marks(model, run))
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


def at_its_isolated_step(latency_recording, rec, predicted_s: float, budget: float) -> tuple[float, float]:
    """QWEN_CLOSED_AT_ITS_STEP_ID's band: the same session's isolated decode step at batch C over the prediction,
    +- that step's repeat scatter and this check's budget."""
    step = latency_recording(f"{QWEN}.decode.b{rec.data['run']['settings']['concurrency']}", beside=rec)
    ratio = step["itl_steady_engine_clock_s.median"].value / predicted_s
    spread = median_scatter(step, "itl_steady_engine_clock_s") + budget
    return (round(ratio * (1 - spread), 4), round(ratio * (1 + spread), 4))


def per_kv_byte_median(setup, cost, rec) -> float:
    """The run's median ITL simulated with the session's excess carried as a slower KV read instead (sequence_cost.py)."""
    return simulate_with_slower_kv_read(setup, cost.slope_ratio, run_workload(rec)).stat("itl", "p50")


def forms_ratios(request, model: str, rec) -> tuple[float, float, float]:
    """of.OVERLOAD_FORMS' row of an overload run: (measured / per-sequence prediction, its budget, measured /
    per-KV-byte prediction), with its own session's excess."""
    setup, pred, budget, cost = predict(request, model, rec)
    measured = rec["aggregate.itl_s.median"].value
    return measured / pred.value, sum(budget.values()), measured / per_kv_byte_median(setup, cost, rec)


def forms_band(per_seq_s: float, per_kv_s: float, budget: float) -> tuple[float, float]:
    """of.OVERLOAD_BETWEEN_FORMS_ID's band, from the two forms' arithmetic: measured / per-sequence prediction from the
    per-sequence prediction (1) to the per-KV-byte one (per-KV-byte / per-sequence), +- this check's budget."""
    low, high = sorted((1.0, per_kv_s / per_seq_s))
    return (round(low * (1 - budget), 4), round(high * (1 + budget), 4))


@pytest.mark.gpu
@pytest.mark.parametrize(("model", "run"), list(_cases()))
def test_itl_median_with_the_sequence_cost_measured_apart(model, run, request, latency_recording, llama_closed_band,
                                                          reconcile):
    rec = latency_recording(f"{model}.{run}")
    setup, pred, budget, cost = predict(request, model, rec)
    band = llama_closed_band
    if model == QWEN and run in QWEN_CLOSED_AT_ITS_STEP_RUNS:
        band = at_its_isolated_step(latency_recording, rec, pred.value, sum(budget.values()))
    if of.covers(model, run):
        band = forms_band(pred.value, per_kv_byte_median(setup, cost, rec), sum(budget.values()))
    reconcile("itl_median_with_sequence_cost", pred, rec["aggregate.itl_s.median"], budget=budget, why=WHY,
              finding_band=band, **setup_kw(setup))


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.overload", live=False, hardware=(MEASURED_ON, H100))
@pytest.mark.parametrize("model", (QWEN, LLAMA))
def test_overload_forms_table_is_the_recorded_one(model, request, target):
    """of.OVERLOAD_FORMS recomputed from every recorded overload run of `model` on the recorded card, each with its
    own session's setup and excess. A table check, so never live: a live session's results folder holds only the runs
    it recorded (the fourteenth visit's full session failed it there, 2026-12-03 12:13)."""
    from pytest_anatomy import recordings
    from pytest_anatomy.session import get_session

    results = get_session(request.config).settings.results_dir
    got = {(target.name, model, rec.recorded_at): forms_ratios(request, model, rec)
           for rec in map(recordings.load_file, recordings.candidates(results, target.name, "latency", f"{model}.overload"))}
    table = {k: v for k, v in of.OVERLOAD_FORMS.items() if k[:2] == (target.name, model)}
    assert list(table) == list(got)
    for key, row in got.items():
        assert table[key] == pytest.approx(row, abs=5e-5), (key, row)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.closed.c8", live=False, hardware=MEASURED_ON)
@pytest.mark.parametrize("run", QWEN_CLOSED_AT_ITS_STEP_RUNS)
def test_closed_loop_runs_at_its_isolated_step_in_every_session(run, request, target, latency_recording):
    """h200-closed-loop-runs-at-its-isolated-step over every recorded session, not only the newest a replay checks:
    the C loop's median ITL / its prediction lies in the band of its session's isolated b=C step, that session's b=1
    step lies below its b = 1..64 line (the anchor's offset), and QWEN_INSIDE_BUDGET counts the runs whose miss the
    budget alone covers."""
    from pytest_anatomy import recordings
    from pytest_anatomy.session import get_session

    results = get_session(request.config).settings.results_dir
    inside = runs = 0
    for rec in map(recordings.load_file, recordings.candidates(results, target.name, "latency", f"{QWEN}.{run}")):
        setup, pred, budget, _ = predict(request, QWEN, rec)
        ratio, total = rec["aggregate.itl_s.median"].value / pred.value, sum(budget.values())
        low, high = at_its_isolated_step(latency_recording, rec, pred.value, total)
        assert low <= ratio <= high, (rec.recorded_at, ratio, (low, high))
        fit = decode_sweep_fit(setup, lambda name, rec=rec: latency_recording(name, beside=rec))
        assert fit.intercept_s + fit.slope.value > fit.steps_s[1], (rec.recorded_at, fit.steps_s[1])
        inside, runs = inside + (abs(ratio - 1) <= total), runs + 1
    assert (inside, runs) == QWEN_INSIDE_BUDGET[run]


@pytest.mark.parametrize("model", (QWEN, LLAMA))
def test_the_overload_lies_between_the_two_forms(model):
    """In every recorded session the overload's median ITL is at or above the per-sequence prediction and at or below
    the per-KV-byte one, each within its budget; and for Qwen2.5-7B neither form alone meets the budget in every session
    (this fails once one does, to carry the excess in that form alone: sequence_cost.py)."""
    rows = {k[2]: v for k, v in of.OVERLOAD_FORMS.items() if k[1] == model}
    for stamp, (per_seq, budget, per_kv) in rows.items():
        assert per_seq >= 1 - budget and per_kv <= 1 + budget, (stamp, per_seq, per_kv, budget)
    if model == QWEN:
        assert of.misses(QWEN, 0) and of.misses(QWEN, 2), (of.misses(QWEN, 0), of.misses(QWEN, 2))


# Qwen2.5-7B's Poisson runs' median ITL against this module's prediction: 2-8% above it at every rate on both recorded
# cards, and beyond the noise budget where that budget is tightest (0.25x: 1.0-2.1%, the batch small and steady) in
# most sessions of each card (2026-12-06: all 17 recorded H200 sessions, 2 of the 3 H100 ones); at the higher rates the
# run's own ITL scatter and the excess's share grow, and the residual sits about at its 3-7% budget. At 0.25x the claim
# is over every recorded session of the card, not the newest alone: the H100's 2026-12-06 06:43 session sat at +2.04%
# against a +-2.13% budget (its ceiling-spread term 0.56% of it), inside by 0.1 point. Not a finding yet (mechanism unknown: a Poisson run's median step mixes batches and prompt chunks); the
# light-load finding's reason quotes this residual (latency_budget_findings._LIGHT_LOAD). This test fails when the
# residual is gone: below 1 at any rate, or inside its budget in half the sessions at 0.25x.
@pytest.mark.gpu
@pytest.mark.parametrize("factor", lf.POISSON)
def test_poisson_medians_keep_a_residual_beyond_the_sequence_cost(factor, request, latency_recording, target):
    rec = latency_recording(f"{QWEN}.poisson.f{factor}")
    _, pred, budget, _ = predict(request, QWEN, rec)
    ratio = rec["aggregate.itl_s.median"].value / pred.value
    assert ratio > 1, f"{ratio:.4f}: the median no longer runs above the prediction"
    if factor == lf.POISSON[0]:
        runs = [rec] if target.live else _recorded_runs(request, target, rec.name)
        by_session = {}  # stamp -> (residual, budget)
        for run in runs:
            _, p, b, _ = predict(request, QWEN, run)
            by_session[run.recorded_at] = (round(run["aggregate.itl_s.median"].value / p.value - 1, 4),
                                           round(sum(b.values()), 4))
        inside = {stamp: rb for stamp, rb in by_session.items() if rb[0] <= rb[1]}
        assert 2 * len(inside) < len(by_session), (
            f"inside its budget in {len(inside)} of {len(by_session)} sessions: {inside}")


def _recorded_runs(request, target, name: str) -> list:
    """Every recorded run of `name` on the replayed card, oldest first."""
    from pytest_anatomy import recordings
    from pytest_anatomy.session import get_session

    return recordings.load_runs([get_session(request.config).settings.results_dir], target.name, "latency", name)

