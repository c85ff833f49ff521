"""vLLM 0.26.0, Qwen2.5-7B and Llama-3.1-8B in a closed loop (C = 1..64) on each target card (recorded: the H200),
against the continuous-batching simulation: throughput at C = 1, the C=64 saturation point against its steady-state
closed form, median and mean ITL at batch C, and the tables of latency_findings those findings quote
(lf.C1_FIRST_TOKEN, lf.STEADY_STATE_RATIOS, lf.CLOSED_ITL_FROM_DECODE), recomputed from the recordings. The throughput
at C = 8, 32 and 64 is held to its noise budget with the decode step's per-sequence excess measured apart in
test_latency_closed_throughput.py.

The runs are simulated, and their setups and ITL budgets built, as in test_latency_load.py (its docstring says how),
whose helpers this module shares.
"""

from __future__ import annotations


from dataclasses import dataclass

import latency_budget_findings as bf
import latency_findings as lf
import pytest
from latency_findings_common import MEASURED_ON, StepCarried, claims
from first_token import first_token_times
from latency_setups import decode_step_miss, moved_by_step_miss, h200_workload, mean_context, median_scatter
from latency_load_runs import (setup_kw, run_label, load_setup, simulate_run, designed_workload, engine_ttft_p50_s,
                               itl_budget, ttft_budget)
from test_latency_load import (LLAMA, QWEN, SETUP_FIXTURE, TPUT_WHY, _cases, _models, _reconcile_itl, budget_band,
                               prompt_pace_verdict)

from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.theory.prediction import Prediction, Term

# Recorded closed-loop runs (or the live target); every live test here needs the slow plan's load parts.
pytestmark = pytest.mark.targets(recorded="qwen2.5-7b.closed.", live=True)
LIVE_SLOW = True

CLOSED = (1, 8, 32, 64)

TPUT_BUDGET_WHY = ("measured noise only (the 10% throughput target is a goal, not this tolerance): at C = 1 a request is "
                   "one prefill and output_len - 1 decode steps of batch 1, so the throughput's budget is the mean "
                   "ITL's (itl_budget: its repeat scatter, the bandwidth ceiling's spread, the calibration's spread)")


def _closed_throughput_marks(model: str, c: int) -> tuple:
    return (*lf.closed_throughput_marks(model, c), *lf.c1_first_token_marks(model, c),
            *bf.h100_llama_closed_marks(model, c, ("output_throughput",)))


def _h100_steps_band(request, setup, rec, latency_recording, c: int, own: float,
                     inverse: bool = False) -> tuple[float, float] | None:
    """bf.H100_LLAMA_STEPS_ID's band where it covers this run: the same session's isolated decode step at batch C
    (its inverse for a throughput) +- its budget and this run's (`own`); None where the finding does not apply."""
    if not claims(request, bf.H100_LLAMA_STEPS_ID, setup.label):
        return None
    step, budget = decode_step_at(setup, rec, latency_recording, c)
    return StepCarried((((1 / step if inverse else step), budget),), own).band()


@pytest.mark.gpu
@pytest.mark.parametrize(("model", "c"), _cases(CLOSED[:1], _closed_throughput_marks))
def test_closed_loop_throughput(model, c, request, latency_recording, reconcile):
    """C = 1 (C = 8, 32 and 64: test_latency_closed_throughput.py)."""
    rec = latency_recording(f"{model}.closed.c{c}")
    engine_setup = load_setup(request, model, rec)
    res = simulate_run(engine_setup, rec)
    notes = [engine_setup.check_held_out(h200_workload(rec), "output_throughput")]
    t_overhead = next((f for f in engine_setup.fits if f.constant == "t_overhead"), None)
    if t_overhead is not None and c == dict(t_overhead.workload).get("batch"):  # every decode step has the fitted batch
        share = 1 - res.stat("ttft", "mean") / res.stat("e2e", "mean")
        notes.append(f"held out by workload, but C={c} decodes at batch {c}, the regime t_overhead was fitted "
                     f"on ({t_overhead.recording}); decode steps are {share:.1%} of the simulated request time, so "
                     "this mostly repeats that fit (reproducibility across run kinds) and tests the prefill and the "
                     "loop around it")
    band = _h100_steps_band(request, engine_setup, rec, latency_recording, c,
                            sum(itl_budget(engine_setup, res, rec, "mean").values()), inverse=True)
    if (model, c) in lf.C1_FIRST_TOKEN_CASES:
        first = c1_first_token(engine_setup, rec, latency_recording, res)
        band = first.band
        notes.append(first.note)
    pred = sv.as_prediction(res, "output_throughput", "", "tokens/s", run_label(rec), tuple(notes))
    reconcile("output_throughput", pred, rec["aggregate.output_throughput_tok_per_s"],
              budget=itl_budget(engine_setup, res, rec, "mean"), why=TPUT_BUDGET_WHY, finding_band=band,
              **setup_kw(engine_setup))


# --- closed loop at C = 1: the per-request times outside the step model, from the same session's other runs ---------


@dataclass(frozen=True)
class FirstToken:
    """What a C = 1 closed run's simulation lacks, priced by its session's other runs (never by the run itself)."""

    times: sv.RequestTimes  # ingress, the prefill's excess over the step model, egress: per request
    spread_s: float  # the first-token excess's own scatter (the prefill runs' repeat scatter, interpolated), seconds
    with_times: sv.SimResult  # the closed run simulated with `times`
    ratio: float  # with_times' throughput / the plain simulation's: the band's centre
    half_width: float  # the check's budget + spread_s over the simulated request time
    note: str

    @property
    def band(self) -> tuple[float, float]:
        return (self.ratio * (1 - self.half_width), self.ratio * (1 + self.half_width))


def c1_first_token(setup, rec, latency_recording, res: sv.SimResult) -> FirstToken:
    """The band of a C = 1 closed run's throughput (measured / plain simulation): the simulation given
    first_token_times over the plain one, +- the check's budget and the first-token excess's own scatter."""
    times, spread, note = first_token_times(setup, rec, latency_recording)
    with_times = setup.simulate(designed_workload(rec), fixed=times)
    half = sum(itl_budget(setup, res, rec, "mean").values()) + spread * len(with_times.e2e) / with_times.duration
    return FirstToken(times, spread, with_times, with_times.output_throughput / res.output_throughput, half, note)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.closed.", live=False, hardware=MEASURED_ON)
def test_c1_first_token_table_is_the_recorded_one(request, target, latency_recording):
    """lf.C1_FIRST_TOKEN recomputed from every recorded Qwen2.5-7B closed.c1 run with its own session's setup and
    other runs: (measured / simulated, measured / simulated with first_token_times, the check's budget, the
    first-token excess's scatter over the request)."""
    from pytest_anatomy import recordings
    from pytest_anatomy.session import get_session

    results = get_session(request.config).settings.results_dir
    got = {}
    for path in recordings.candidates(results, target.name, "latency", f"{QWEN}.closed.c1"):
        rec = recordings.load_file(path)
        setup = load_setup(request, QWEN, rec)
        res = simulate_run(setup, rec)
        first = c1_first_token(setup, rec, latency_recording, res)
        measured = rec["aggregate.output_throughput_tok_per_s"].value
        budget = sum(itl_budget(setup, res, rec, "mean").values())
        got[rec.recorded_at] = (measured / res.output_throughput, measured / first.with_times.output_throughput,
                                budget, first.half_width - budget)
    assert list(lf.C1_FIRST_TOKEN) == list(got)
    for stamp, row in got.items():
        assert lf.C1_FIRST_TOKEN[stamp] == pytest.approx(row, abs=5e-5), (stamp, row)


@pytest.mark.gpu
@pytest.mark.parametrize("model", _models(lambda m: (*lf.steady_state_marks(m), *bf.llama_saturation_marks(m))))
def test_saturation_throughput(model, request, latency_recording, b64_step_miss, reconcile):
    """The plan's saturation point (C=64, whose request rate set the Poisson rates): the simulated
    finite run at the target, and the steady-state closed form as a bound. The closed form has no
    ramp-up or drain, so the measured run (three waves of 64) can only fall below it; how far
    the transient alone takes it is simulate's (finite run vs its steady state between the first
    and last wave). The engine's own knee (max_num_seqs = 128, KV permitting) is higher; it is
    reported as a term, not measured yet."""
    rec = latency_recording(f"{model}.closed.c64")
    engine_setup = load_setup(request, model, rec)
    res = simulate_run(engine_setup, rec)
    measured_tput = rec["aggregate.output_throughput_tok_per_s"]
    budget = itl_budget(engine_setup, res, rec, "mean")
    band = budget_band(request, engine_setup, rec, "output_throughput", measured_tput.value / res.output_throughput,
                       sum(budget.values()), lambda o, o_setup: (o["aggregate.output_throughput_tok_per_s"].value
                                                                 / simulate_run(o_setup, o).output_throughput))
    reconcile("output_throughput", sv.as_prediction(res, "output_throughput", "", "tokens/s", run_label(rec)),
              measured_tput, budget=budget, why=TPUT_WHY, finding_band=band, **setup_kw(engine_setup))
    s = rec.data["run"]["settings"]
    steady = lat.closed_loop_throughput(engine_setup.model, engine_setup.ceilings, engine_setup.calib, 64, s["input_len"],
                                        s["output_len"], engine_setup.sched.max_num_batched_tokens)
    knee = engine_setup.knee_rate(s["input_len"], s["output_len"])
    steady_sim = engine_setup.steady_rate(64, s["input_len"], s["output_len"]) * s["output_len"]
    transient = 1 - res.output_throughput / steady_sim  # ramp-up + drain share of this finite run
    steady = Prediction(steady.value, steady.unit, steady.formula, steady.inputs,
                        terms=(*steady.terms,
                               Term("simulated steady state, C=64", steady_sim, "tokens/s",
                                    "between the first and the last wave"),
                               Term("simulated finite run", res.output_throughput, "tokens/s", run_label(rec)),
                               Term("engine knee: closed loop at max_num_seqs", knee * s["output_len"],
                                    "tokens/s", f"{knee:.1f} requests/s")),
                        notes=(*steady.notes, engine_setup.calib.describe()))
    terms = steady_state_terms(engine_setup, rec, latency_recording)
    lo = (1 - transient) * (1 - sum(terms.values()))
    band = None
    if engine_setup.label in lf.CHECKED_ON:  # the finding's band, in this run's calibration (lf.steady_state_band)
        fitted = request.getfixturevalue("setup_beside")(model, rec, eta_from_gemms=False)
        band = lf.steady_state_band(model, _steady_closed_form(fitted, rec).value / steady.value)
        if (engine_setup.label, model) in bf.STEADY_STATE_CARRIES_STEP_MISS:  # steps above the transfer: their b=64 miss
            step = decode_step_at(engine_setup, rec, latency_recording, 64)[0]
            band = (round(band[0] / step, 4), round(band[1] / step, 4))
    reconcile("output_throughput_steady_state", steady, measured_tput, ratio=(round(lo, 4), 1.0),
              why=f"a bound, not a point: a finite run cannot beat its steady state (measured/predicted <= 1); below, "
                  f"the ramp-up and drain simulate puts at {transient:.1%} of this run ({res.output_throughput:.0f} "
                  f"vs {steady_sim:.0f} tok/s steady), then the step model's known miss and the noise: "
                  f"(1 - {transient:.3f}) x (1 - " + " - ".join(f"{k.replace('_', ' ')} {v:.4f}" for k, v in terms.items())
                  + f") = {lo:.4f}", finding_band=band, **setup_kw(engine_setup))


@pytest.fixture
def b64_step_miss(request, latency_recording) -> None:
    """Requested before `reconcile` (which reads the marks): step_miss_mark on the case's C=64 run."""
    rec = latency_recording(f"{request.node.callspec.params['model']}.closed.c64")
    setup = load_setup(request, request.node.callspec.params["model"], rec)
    step_miss_mark(request, setup, rec, latency_recording, simulate_run(setup, rec))


def step_miss_mark(request, setup, rec, latency_recording, res) -> None:
    """Where the same session's isolated decode step at b=64 (decode.b64, a run apart from the C=64 run checked) misses
    its prediction beyond its own noise budget (h200-decode-per-sequence-cost), the finding on the finite run's
    throughput, its band the throughput target in the frame of the simulation re-run with the step overhead moved by
    that miss (every step longer by the b=64 step's measured - predicted): the calibration at b=1 carried to b=64."""
    # The calibration's own model only: its b=1 point is in-sample, so its b=64 miss is the calibration carried to
    # b=64; Llama-3.1-8B's steps are the transfer's test (test_decode_overhead_transfers_to_a_second_model).
    if setup.label not in lf.CHECKED_ON or setup.model.name != lf.QWEN:
        return
    moved = moved_by_step_miss(setup, rec, latency_recording, 64)
    if moved is None:
        return
    moved_setup, ratio, budget = moved
    shift = simulate_run(moved_setup, rec).output_throughput / res.output_throughput
    miss_ms = (moved_setup.calib.step_overhead_s - setup.calib.step_overhead_s) * 1e3
    request.node.add_marker(lf.b64_step_miss_mark(ratio, budget, miss_ms, shift), append=False)


def steady_state_terms(setup, rec, latency_recording) -> dict[str, float]:
    """How far below the calibrated steady state a C=64 run may fall, term by term, each measured apart
    from the run checked: the step model's miss at b=64 (the same session's decode.b64, measured /
    predicted - 1: h200-decode-per-sequence-cost), the run's own ITL repeat scatter, and the calibration's
    spread at that step. Replaces a band built from the 10% throughput target."""
    b64 = latency_recording(f"{setup.model.name}.decode.b64", beside=rec)
    s = b64.data["run"]["settings"]
    step = lat.decode_step_time(setup.model, setup.ceilings, setup.calib, 64, mean_context(s["input_len"], s["output_len"]))
    return {"per_sequence_cost_at_b64": max(0.0, b64["step_time_s"].value / step.value - 1),
            "repeat_scatter": median_scatter(rec, "aggregate.itl_s"),
            "calibration_spread": setup.noise.get("t_overhead_s", 0.0) / step.value}


@pytest.mark.gpu
@pytest.mark.parametrize(("model", "c"), _cases(CLOSED[1:], lambda m, c: (
    *lf.closed_itl_marks(m, c), *bf.light_load_marks(m, f"closed.c{c}"), *bf.llama_closed_marks(m, c),
    *bf.h100_llama_closed_marks(m, c, ("itl_median", "itl_mean")))))
def test_closed_loop_itl_mean_and_median(model, c, request, latency_recording, reconcile):
    """At C sequences the median ITL is a decode step of batch C: it is held to its noise budget; where the
    same session's isolated decode step at batch C misses beyond its own budget (h200-decode-per-sequence-cost),
    the finding's band is that step's measured/predicted +- its budget and this run's, set at test time from the
    checked run's own session (lf.CLOSED_ITL_FROM_DECODE, recomputed by test_closed_itl_bands_are_the_decode_steps,
    lists the cases and the numbers the reason quotes; a card's band never comes from another card's session)."""
    rec = latency_recording(f"{model}.closed.c{c}")
    engine_setup = load_setup(request, model, rec)
    res = simulate_run(engine_setup, rec)
    bands = None
    if (model, c) in lf.CLOSED_ITL_FROM_DECODE:
        step, budget = decode_step_at(engine_setup, rec, latency_recording, c)
        own = sum(itl_budget(engine_setup, res, rec, "p50").values())
        bands = {"itl_median": StepCarried(((step, budget),), own).band()}
    h100 = _h100_steps_band(request, engine_setup, rec, latency_recording, c,
                            sum(itl_budget(engine_setup, res, rec, "p50").values()))
    if h100 is not None:
        bands = {"itl_median": h100}
    _reconcile_itl(reconcile, engine_setup, res, rec, bands=bands, request=request)


def decode_step_at(setup, rec, latency_recording, b: int) -> tuple[float, float]:
    """(measured / predicted, noise budget) of the isolated decode step at batch `b` recorded in `rec`'s session
    (its decode.b{b} run: a run apart from the load run checked), under the same setup."""
    return decode_step_miss(setup, rec, latency_recording, b)[:2]


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.closed.", live=False, hardware=MEASURED_ON)
def test_closed_itl_bands_are_the_decode_steps(request, latency_recording):
    """lf.CLOSED_ITL_FROM_DECODE (the decode step's ratio and budget at batch C in the closed run's session, and
    the closed run's own median-ITL budget) recomputed from the recordings; every case the decode step itself
    misses beyond its budget is listed, and only those."""
    for model, c in ((m, c) for m in SETUP_FIXTURE if m != LLAMA for c in CLOSED[1:]):  # Llama: bf.llama_closed_marks
        rec = latency_recording(f"{model}.closed.c{c}")
        setup = load_setup(request, model, rec)
        ratio, budget = decode_step_at(setup, rec, latency_recording, c)
        own = sum(itl_budget(setup, simulate_run(setup, rec), rec, "p50").values())
        carried = lf.CLOSED_ITL_FROM_DECODE.get((model, c))
        assert (carried is not None) == (abs(ratio - 1) > budget), (model, c, ratio, budget)
        if carried is not None:
            assert (*carried.earlier[0], carried.newest_scatter) == pytest.approx((ratio, budget, own), abs=5e-5), (model, c)
    for model in SETUP_FIXTURE:  # C = 1 throughput: the inverse of the b=1 decode step's ratio
        rec = latency_recording(f"{model}.closed.c1")
        setup = load_setup(request, model, rec)
        ratio, budget = decode_step_at(setup, rec, latency_recording, 1)
        own = sum(itl_budget(setup, simulate_run(setup, rec), rec, "mean").values())
        carried = lf.CLOSED_THROUGHPUT_FROM_DECODE.get((model, 1))
        assert (carried is not None) == (abs(ratio - 1) > budget), (model, 1, ratio, budget)
        if carried is not None:
            assert (*carried.earlier[0], carried.newest_scatter) == pytest.approx((1 / ratio, budget, own), abs=5e-5), model


def _steady_closed_form(setup, rec) -> Prediction:
    s = rec.data["run"]["settings"]
    return lat.closed_loop_throughput(setup.model, setup.ceilings, setup.calib, 64, s["input_len"], s["output_len"],
                                      setup.sched.max_num_batched_tokens)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.closed.", live=False, hardware=MEASURED_ON)
def test_steady_state_bands_are_the_recorded_ratios(request, target):
    """lf.STEADY_STATE_RATIOS recomputed from every recorded C=64 run (eta fitted on the 8,192 prefill, the recipe
    every session has): Qwen2.5-7B's band from its runs before the newest, Llama-3.1-8B's from every Qwen run."""
    from pytest_anatomy import recordings
    from pytest_anatomy.session import get_session

    results = get_session(request.config).settings.results_dir
    ratios = {}
    for model in SETUP_FIXTURE:
        ratios[model] = []
        for path in recordings.candidates(results, target.name, "latency", f"{model}.closed.c64"):
            rec = recordings.load_file(path)
            fitted = request.getfixturevalue("setup_beside")(model, rec, eta_from_gemms=False)
            ratios[model].append(rec["aggregate.output_throughput_tok_per_s"].value
                                 / _steady_closed_form(fitted, rec).value)
    assert lf.STEADY_STATE_RATIOS[QWEN] == pytest.approx(tuple(ratios[QWEN][:-1]), abs=5e-5)
    assert lf.STEADY_STATE_RATIOS[LLAMA] == pytest.approx(tuple(ratios[QWEN]), abs=5e-5)


def _pace_flagged(latency_recording, rec, factor: str) -> bool:
    """Whether the prompt-pace checks flag Qwen2.5-7B's Poisson run `rec` at `factor`, decided as
    test_latency_load.slow_prompt_run decides (prompt_pace_verdict)."""
    others = []
    for f in lf.POISSON:
        if f != factor:
            try:
                others.append(latency_recording(f"{QWEN}.poisson.f{f}", beside=rec))
            except pytest.skip.Exception:  # an early session without a run at that rate
                pass
    return prompt_pace_verdict(QWEN, rec, others) is not None


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.closed.", live=False, hardware=MEASURED_ON)
def test_poisson_itl_mean_band_is_the_recorded_one(request, target, latency_recording):
    """lf.POISSON_PACE_FLAGGED and lf.POISSON_ITL_MEAN_NEWEST_BUDGET, which lf.itl_mean_envelope derives the Poisson
    mean-ITL finding's band from (with lf.POISSON_ITL_MEAN, recomputed by test_latency_findings_reasons.py), recomputed
    from every recorded Qwen2.5-7B Poisson run at each rate lf.ITL_MEAN_DERIVED lists: the runs the prompt-pace checks
    flag, decided as test_latency_load.slow_prompt_run decides (the run against its session's other runs, or its
    session against the recorded reference where that slows this run), and the newest run's mean-ITL noise budget.
    Each mean-ITL mark of those rates carries the derived band."""
    from pytest_anatomy import recordings
    from pytest_anatomy.session import get_session

    results = get_session(request.config).settings.results_dir
    for factor in lf.ITL_MEAN_DERIVED:
        flagged, budgets = set(), {}
        for path in recordings.candidates(results, target.name, "latency", f"{QWEN}.poisson.f{factor}"):
            rec = recordings.load_file(path)
            setup = load_setup(request, QWEN, rec)
            budgets[rec.recorded_at] = sum(itl_budget(setup, simulate_run(setup, rec), rec, "mean").values())
            if _pace_flagged(latency_recording, rec, factor):
                flagged.add(rec.recorded_at)
        assert lf.POISSON_PACE_FLAGGED[factor] == flagged, factor
        assert list(budgets) == list(lf.POISSON_ITL_MEAN[factor]), factor
        newest = max(budgets)
        assert lf.POISSON_ITL_MEAN_NEWEST_BUDGET[factor] == pytest.approx(budgets[newest], abs=5e-5), factor
        means = [m for m in lf.ITL_MARKS[(QWEN, factor)] if m.kwargs.get("quantity") == "itl_mean"]
        assert means and all(m.kwargs["expected"] == lf.itl_mean_band(factor) for m in means), factor


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.closed.", live=False, hardware=MEASURED_ON)
def test_poisson_itl_median_band_is_the_recorded_one(request, target):
    """lf.POISSON_ITL_MEDIAN_13 and lf.POISSON_ITL_MEDIAN_13_NEWEST_BUDGET, which lf.itl_median_envelope derives the 1.3x
    median-ITL finding's band from, recomputed from every recorded Qwen2.5-7B 1.3x Poisson run (median ITL measured /
    simulated and its noise budget, each with its own session's setup); the mark carries the derived band."""
    from pytest_anatomy import recordings
    from pytest_anatomy.session import get_session

    results = get_session(request.config).settings.results_dir
    ratios, budgets = {}, {}
    for path in recordings.candidates(results, target.name, "latency", f"{QWEN}.poisson.f1.3"):
        rec = recordings.load_file(path)
        setup = load_setup(request, QWEN, rec)
        res = simulate_run(setup, rec)
        ratios[rec.recorded_at] = rec["aggregate.itl_s.median"].value / res.stat("itl", "p50")
        budgets[rec.recorded_at] = sum(itl_budget(setup, res, rec, "p50").values())
    assert list(lf.POISSON_ITL_MEDIAN_13) == list(ratios)
    assert lf.POISSON_ITL_MEDIAN_13 == pytest.approx(ratios, abs=5e-5)
    assert lf.POISSON_ITL_MEDIAN_13_NEWEST_BUDGET == pytest.approx(budgets[max(budgets)], abs=5e-5)
    medians = [m for m in lf.ITL_MARKS[(QWEN, "1.3")] if m.kwargs.get("quantity") == "itl_median"]
    assert medians and all(m.kwargs["expected"] == lf.itl_median_band_13() for m in medians)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.poisson.", live=False, hardware=MEASURED_ON)
def test_poisson_ttft_bands_are_the_recorded_ones(request, target, latency_recording):
    """lf.POISSON_TTFT_P50 and lf.POISSON_ENGINE_TTFT_P50 (each recorded Qwen2.5-7B Poisson run's TTFT p50, the client's
    and the engine's median queue + median prefill, measured / simulated as test_poisson_ttft_p50_below_the_knee
    reconciles them, with its own session's setup), their newest runs' noise budgets (ttft_budget) and
    lf.POISSON_PACE_FLAGGED (decided as test_latency_load.slow_prompt_run decides), recomputed at each rate
    lf.TTFT_DERIVED lists; each TTFT mark of those rates carries the derived band (lf.ttft_band)."""
    from pytest_anatomy import recordings
    from pytest_anatomy.session import get_session

    results = get_session(request.config).settings.results_dir
    assert set(lf.POISSON_PACE_FLAGGED) == {*lf.ITL_MEAN_DERIVED, *lf.TTFT_DERIVED}
    for factor in lf.TTFT_DERIVED:
        flagged, ratios, budgets = set(), {q: {} for q in lf.POISSON_TTFT}, {q: {} for q in lf.POISSON_TTFT}
        for path in recordings.candidates(results, target.name, "latency", f"{QWEN}.poisson.f{factor}"):
            rec = recordings.load_file(path)
            setup = load_setup(request, QWEN, rec)
            pred = sv.as_prediction(simulate_run(setup, rec), "ttft", "p50", "s", run_label(rec))
            for q, measured in (("ttft_p50", rec["aggregate.ttft_s.median"].value),
                                ("engine_ttft_p50", engine_ttft_p50_s(rec))):
                ratios[q][rec.recorded_at] = measured / pred.value
                budgets[q][rec.recorded_at] = sum(ttft_budget(setup, pred, rec, q).values())
            if _pace_flagged(latency_recording, rec, factor):
                flagged.add(rec.recorded_at)
        assert lf.POISSON_PACE_FLAGGED[factor] == flagged, factor
        marks = {m.kwargs["quantity"]: m.kwargs["expected"] for m in lf.TTFT_MARKS[(QWEN, factor)]}
        for q, (table, newest_budget) in lf.POISSON_TTFT.items():
            assert list(table[factor]) == list(ratios[q]), (factor, q)
            assert table[factor] == pytest.approx(ratios[q], abs=5e-5), (factor, q)
            assert newest_budget[factor] == pytest.approx(budgets[q][max(budgets[q])], abs=5e-5), (factor, q)
            assert marks[q] == lf.ttft_band(q, factor), (factor, q)
    assert {f for m, f in lf.TTFT_MARKS if m == QWEN and f not in lf.TTFT_DERIVED} == {"1", "1.3"}  # CARRIED's
