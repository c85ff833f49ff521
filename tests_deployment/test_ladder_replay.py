"""The ladder measured (results/<hw>/deployment/, written by scripts/device/deployment_plan.py and
`pytest-anatomy import-device`) against tests_deployment/preregistered.json: each rung's measured gain
over its parent reconciled with the gain predicted before the run, and `plan`'s recommendation held
to its workload's SLO. Skipped, saying so, until the device visit has recorded the runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ladder_chat as lc
import ladder_findings as lf
import ladder_llama as ll
import ladder_llama_chat as llc
import ladder_noise as ln
import ladder_raw as lr
import ladder_repeat as lrp
import gain_budget as gb
from pytest_anatomy.theory.deployment import gain_band
from pytest_anatomy.theory.prediction import Prediction

# The deployment plan runs on the device only (scripts/device/deployment_plan.py): a live card has nothing here to
# measure, so these tests take the recorded cards (a live target would only skip each case).
pytestmark = pytest.mark.targets(recorded="")

PRE = json.loads((Path(__file__).parent / "preregistered.json").read_text())
# plan's recommendation after cause test graphs-to-budget (graphs captured to the budget), pre-registered for step replan
REPLAN = json.loads((Path(__file__).parent / "replan.json").read_text())
MODELS, WORKLOADS = list(PRE["ladders"]), ["chat", "rag"]
RUNGS = [r["step"] for r in PRE["ladders"][MODELS[0]][WORKLOADS[0]] if r["parent"]]
# Issue 14's target for every rung, the predicted gain within 20% of the measured gain (GAIN_TARGET), is a goal
# (docs/DEPLOYMENT.md; the findings modules' tables of misses), not a tolerance: each gain is reconciled under its
# error budget (gain_budget.py: its resampled interval plus the calibration's spread re-simulated).
PER_POSITION = gb.PER_POSITION
measured_speculation = gb.measured_speculation  # the budget's too (ladder_repeat.finds)


def _row(model: str, workload: str, step: str) -> dict[str, Any]:
    return next(r for r in PRE["ladders"][model][workload] if r["step"] == step)


_value = gb.value


def predicted_gains(model: str, workload: str, step: str, rec: Any) -> dict[str, float | None]:
    """The preregistered gains; the n-gram rung's simulated with the run's measured E, from the
    preregistered calibration (the theory as committed before the run: test_preregistered checks it)."""
    if step != "ngram":
        return _row(model, workload, step)["gain"]
    return gb.ngram_gains(model, workload, measured_speculation(rec))


def _marks(model: str, workload: str, step: str, run: int = 1) -> list[pytest.MarkDecorator]:
    """The findings of one run of a rung's gains: Qwen2.5-7B's rag (ladder_findings.py) and chat (ladder_chat.py),
    Llama-3.1-8B's rag (ladder_llama.py) and chat (ladder_llama_chat.py) for the first run; a repeat's, ladder_repeat.py;
    either run's gains inside the 20% target but outside their error budget, ladder_noise.py."""
    predicted = _row(model, workload, step)["gain"] or {}
    noise = ln.noise_marks(model, workload, step, run)  # inside 20%, outside the error budget (ladder_noise.py)
    if run > 1:
        return lrp.repeat_marks(model, workload, step, predicted, run) + noise
    return (lf.rung_marks(model, workload, step, predicted) + lc.rung_marks(model, workload, step, predicted)
            + ll.rung_marks(model, workload, step, predicted) + llc.rung_marks(model, workload, step, predicted)
            + noise)


def first_batch(model: str, workload: str, step: str) -> str:
    """The kept batch of a rung's first run (the findings modules' tables)."""
    if model == lf.MODEL:
        return (lc.batch_of if workload == lc.WORKLOAD else lf.batch_of)(step)
    return llc.batch_of(step) if workload == llc.WORKLOAD else ll.BATCH_OF[step]


def run_batches(model: str, workload: str, step: str) -> tuple[str, ...]:
    """The batches of a rung's recorded runs, first first: ladder_repeat.RUNS where it ran twice
    (test_every_recorded_run_is_judged holds the recordings to this)."""
    return lrp.RUNS.get((model, workload, step), (first_batch(model, workload, step),))


def run_cases(steps: list[str], marks: Any = None) -> list[Any]:
    """(model, workload, step, run) of every run of every rung in `steps`; ids as the stacked parametrize gave the
    first runs (step-workload-model), `-r2` after a repeat's."""
    return [pytest.param(m, w, s, run, marks=marks(m, w, s, run) if marks else (),
                         id=f"{s}-{w}-{m}" + (f"-r{run}" if run > 1 else ""))
            for s in steps for w in WORKLOADS for m in MODELS for run in range(1, len(run_batches(m, w, s)) + 1)]


# Each run of each (model, workload, rung) with the findings of its gains
RUNG_CASES = run_cases(RUNGS, _marks)


def run_of(measured: Any, target: Any, model: str, workload: str, step: str, run: int = 1) -> Any:
    """Run `run` of a rung: the first, the newest recording at or before its first batch; a repeat, its batch's."""
    name, batch = f"{model}.{workload}.{step}", run_batches(model, workload, step)[run - 1]
    return (measured(name, target=target, not_after=batch) if run == 1 else
            measured(name, target=target, recorded_at=batch))


def run_and_parent(measured: Any, target: Any, model: str, workload: str, step: str,
                   run: int = 1) -> tuple[Any, Any, str]:
    """Run `run` of a rung (the first: the newest recording at or before its first batch; a repeat: its batch's) and
    the parent run its gains divide by (ladder_repeat.parent_batch: the parent's run of the same batch, else of the same
    card, else the parent's first run); and which of them it is."""
    parent, batch = _row(model, workload, step)["parent"], run_batches(model, workload, step)[run - 1]
    rec = run_of(measured, target, model, workload, step, run)
    parent_at, parent_from = lrp.parent_batch(batch, run_batches(model, workload, parent))
    parent_rec = measured(f"{model}.{workload}.{parent}", target=target, not_after=parent_at)
    return rec, parent_rec, parent_from


def rung_and_parent(measured: Any, target: Any, model: str, workload: str, step: str) -> tuple[Any, Any]:
    """The rung's first run and the parent run its gains divide by (run_and_parent)."""
    return run_and_parent(measured, target, model, workload, step)[:2]


def gain_of(rec: Any, parent: Any, metric: str) -> float | None:
    """The rung's measured gain in `metric` over its parent's; None where either lacks it (or the parent's is 0)."""
    now, before = _value(rec, f"metrics.{metric}"), _value(parent, f"metrics.{metric}")
    return now / before if now and before else None


@pytest.mark.gpu
@pytest.mark.parametrize(("model", "workload", "step", "run"), RUNG_CASES)
def test_rung_gain_is_within_20_percent(target, measured, reconcile, model: str, workload: str, step: str,
                                        run: int) -> None:
    """Every run of every rung (a repeat: `-r2`), each gain over the parent run run_and_parent names, within its error
    budget (gain_budget.py; the name keeps issue 14's 20% target, which stays the goal, not the tolerance)."""
    rec, parent, parent_from = run_and_parent(measured, target, model, workload, step, run)
    inputs = {"run": rec.recorded_at, "parent_run": parent.recorded_at, "parent_from": parent_from}
    acceptance = measured_speculation(rec) if step == "ngram" else None
    for metric, gain in predicted_gains(model, workload, step, rec).items():
        measured_gain = gain_of(rec, parent, metric)
        if gain is None or measured_gain is None:
            continue
        terms = gb.budget(rec, parent, model, workload, step, metric, gain, measured_gain, acceptance)
        if terms is None:  # no raw requests to resample: no noise to budget, and the 20% target is no tolerance
            pytest.skip(f"{rec.name}: the kept batch of it or its parent is missing; re-import the device call's "
                        "files with import-device")
        predicted = Prediction(gain, "", "the preregistered gain (ngram: simulated at this run's measured E)", inputs)
        reconcile(f"{workload}.{step}.{metric}.gain", predicted, measured_gain, budget=terms, model=model,
                  why=gb.WHY)


# Each (workload, model) with the findings of its plan_top run (ladder_llama_chat.plan_marks: the plan as first
# recommended, preregistered.json); ids as the stacked parametrize gave them (workload-model). Then the plan as now
# recommended (replan.json: graphs captured to the budget), run as step replan; no finding: a miss fails.
PLANS = {"plan_top": PRE, "replan": REPLAN}
PLAN_CASES = [pytest.param(w, m, "plan_top", marks=llc.plan_marks(m, w), id=f"{w}-{m}") for w in WORKLOADS
              for m in MODELS] + [pytest.param(w, m, "replan", id=f"replan-{w}-{m}") for w in WORKLOADS for m in MODELS]


@pytest.mark.gpu
@pytest.mark.parametrize(("workload", "model", "step"), PLAN_CASES)
def test_the_recommended_plan_meets_its_slo(target, measured, reconcile, workload: str, model: str,
                                            step: str) -> None:
    """plan's top configuration, run as recommended, meets its workload's SLO: TTFT p99 and ITL p99 each at or under
    the SLO's (a one-sided target: measured / SLO in [0, 1]); the prediction plan ranked it by travels with each. Step
    plan_top is the plan preregistered.json froze (its recordings keep their findings), replan the plan replan.json
    holds, pre-registered after cause test graphs-to-budget."""
    rec = measured(f"{model}.{workload}.{step}", target=target)
    slo = json.loads((Path(__file__).parent / "workloads" / f"{workload}.json").read_text())["slo"]
    predicted = PLANS[step]["plan_top"][model][workload]["predicted"]
    for metric, key in (("ttft_p99_s", "ttft_ms"), ("itl_p99_s", "itl_ms")):
        value = _value(rec, f"metrics.{metric}")
        assert value is not None, f"{rec.name}: no {metric} measured"
        limit = Prediction(slo[key] / 1e3, "s", f"the {workload} workload's SLO ({key})",
                           {"slo_ms": slo[key], "plan_predicted_s": predicted[metric]})
        reconcile(f"{workload}.{step}.{metric}", limit, value, ratio=(0.0, 1.0), model=model,
                  why="an SLO is one-sided: plan's recommendation meets it at or under it")


@pytest.mark.gpu
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("workload", WORKLOADS)
def test_the_replanned_engine_captured_its_graphs_and_kept_its_kv_pool(target, measured, reconcile, workload: str,
                                                                      model: str) -> None:
    """The replan engine (its kept batch's resolved settings) captured the PIECEWISE sizes replan.json priced, up to its
    budget, exactly; and its KV pool is expected_blocks exactly (the same engine less the graph capture, recorded: the
    V2 runner's graph pool lands on top of gpu_memory_utilization, not in the KV pool)."""
    rec = measured(f"{model}.{workload}.replan", target=target)
    assert rec.path is not None, f"{rec.name}: reconciled from its recording file and kept batch"
    batch = rec.path.parents[1] / "batches" / rec.path.name.split("@", 1)[1].removesuffix(".json")
    if not batch.is_dir():
        pytest.skip(f"{rec.name}: its batch {batch} is not kept; re-import the device call's files with import-device")
    runs = json.loads((batch / "deployment.json").read_text())["runs"]
    engine = next(r for r in runs if r["id"] == rec.data["run"]["engine_run"])["result"]["resolved"]
    top = REPLAN["plan_top"][model][workload]
    graphs, pool = top["cudagraphs"], top["kv_pool"]
    sizes = engine["cudagraph_capture_sizes"] or [0]
    for name, want, got, why in (
            ("captured_max", graphs["max_cudagraph_capture_size"], max(sizes), "max_cudagraph_capture_size given"),
            ("piecewise_graphs", graphs["piecewise_graphs"], len(sizes), "vLLM's capture list to the given size"),
            ("kv_pool_blocks", pool["expected_blocks"], engine["num_gpu_blocks"], pool["why"])):
        reconcile(f"{workload}.replan.{name}", Prediction(float(want), "", why, {"replan": "tests_deployment/replan.json"}),
                  float(got), abs=0.0, model=model, why="exact: a count the engine resolves")


CACHED_RUNGS = [r["step"] for r in PRE["ladders"][MODELS[0]][WORKLOADS[0]] if r["engine_kwargs"]["enable_prefix_caching"]]


@pytest.mark.gpu
@pytest.mark.parametrize(("model", "workload", "step", "run"), run_cases(CACHED_RUNGS))
def test_prefix_cache_hits_are_the_block_granular_ones(target, measured, reconcile, model: str, workload: str,
                                                       step: str, run: int) -> None:
    """Every timed request's hit is whole 16-token blocks of its shared prefix, never its last token
    (theory/prefix_cache.hit_tokens), the cache warmed with each prefix before the run."""
    from pytest_anatomy.deployment_ladder import generated
    from pytest_anatomy.theory.prefix_cache import hit_tokens

    rec = run_of(measured, target, model, workload, step, run)
    hits = _value(rec, "counters.vllm:prefix_cache_hits")
    if hits is None:
        pytest.skip(f"{rec.name}: the engine reported no prefix-cache counter")
    if _value(rec, "counters.vllm:num_preemptions"):
        pytest.skip(f"{rec.name}: preempted requests re-query the cache, so hits are no longer one per request")
    work = generated(workload)
    predicted = sum(hit_tokens(len(r.prompt), r.prefix_len) for r in work.requests)
    reconcile(f"{workload}.{step}.prefix_hit_tokens", predicted, hits, rel=0.0, model=model,
              why="hits are whole blocks of a warm cache, counted once per request: exact")


ALL_RUNGS = [r["step"] for r in PRE["ladders"][MODELS[0]][WORKLOADS[0]] if r["step"] != "ngram"]


@pytest.mark.gpu
@pytest.mark.parametrize(("model", "workload", "step", "run"), run_cases(ALL_RUNGS))
def test_preemptions_are_the_simulated_ones(target, measured, reconcile, model: str, workload: str, step: str,
                                            run: int) -> None:
    """The simulated run's preemptions (its KV pool from the capacity ledger) against the engine's counter.

    A prediction (kept so in issue 10's review of the 0 = 0 checks): the simulator derives the count from the
    predicted pool and the workload. A weak one, said here: at the workloads' longest requests a closed loop of 32
    (chat) or 16 (rag) users holds at most ~91,000 tokens, ~4.5% of Qwen2.5-7B's predicted pool on an H200 and ~10%
    of Llama-3.1-8B's, so only a pool ~10x smaller than predicted, or an engine preempting for another cause, fails
    it."""
    rec = run_of(measured, target, model, workload, step, run)
    count = _value(rec, "counters.vllm:num_preemptions")
    if count is None:
        pytest.skip(f"{rec.name}: the engine reported no preemption counter")
    reconcile(f"{workload}.{step}.preemptions", _row(model, workload, step)["terms"]["preemptions"], count, abs=0.0,
              model=model, why="a count of events, exact: the same requests against the ledger's pool")


class _Rec:  # the two attributes measured_speculation reads, for a CPU test of its arithmetic
    name = "synthetic"

    def __init__(self, measurements: dict[str, float]) -> None:
        self.measurements = {k: {"value": v} for k, v in measurements.items()}


def test_speculation_counters_give_e_and_the_draft_share() -> None:
    """100 requests, 10,100 output tokens: 10,000 after the first tokens; 3,000 accepted drafts mean 7,000
    decode steps, of which the 2,000 drafts are 2/7; E = 1 + 3,000 / 2,000."""
    rec = _Rec({"counters.vllm:spec_decode_num_drafts": 2000, f"{PER_POSITION}.0": 1500, f"{PER_POSITION}.1": 1000,
                f"{PER_POSITION}.2": 500, "aggregate.output_tokens": 10100, "aggregate.completed": 100})
    e, share = measured_speculation(rec)
    assert e == pytest.approx(2.5) and share == pytest.approx(2 / 7)


def test_completing_step_times_are_the_recorded_ones() -> None:
    """lf.COMPLETING_STEP_MS (the engine-clock times the findings quote) recomputed from the kept raw timeline of the
    batch that measured the ladder (lf.completing_step_ms): the lowest and highest tercile median of each rung."""
    runs = lr.raw_runs(lf.RAW_TIMELINE.parent.name)
    for step, (lo, hi) in lf.COMPLETING_STEP_MS.items():
        medians = lf.completing_step_ms(runs[step]["requests"])
        assert (round(min(medians), 1), round(max(medians), 1)) == (lo, hi), (step, medians)
    # the prefix-cache step does not grow with the tail: its three tercile medians lie within 10% of each other
    tails = lf.completing_step_ms(runs["prefix_cache"]["requests"])
    assert max(tails) / min(tails) < 1.1


@pytest.mark.gpu
@pytest.mark.parametrize("rung_metric", list(lf.MEASURED_GAINS), ids=lambda rm: ".".join(rm))
def test_finding_gains_are_the_recorded_ones(target, measured, rung_metric: tuple[str, str]) -> None:
    """Every measured gain ladder_findings.py quotes, recomputed from the recordings (each rung's first run)."""
    step, metric = rung_metric
    gain = gain_of(*rung_and_parent(measured, target, lf.MODEL, lf.WORKLOAD, step), metric)
    assert gain is not None and lf.MEASURED_GAINS[rung_metric] == pytest.approx(gain, abs=5e-5)


def _second() -> dict:
    """The second slice's kept raw runs, read when a test asks (never at import: a live device tree leaves the
    kept batches behind, and an import-time read broke the 2026-12-02 08:30 session's collection)."""
    return lr.raw_runs(lf.SECOND_BATCH)


def _parent() -> dict:
    return lr.raw_runs(lf.FIRST_BATCH)["fp8_kv"]  # eager's and ngram's parent, measured in the first slice


RAG_SLO = json.loads((Path(__file__).parent / "workloads" / "rag.json").read_text())["slo"]


def _run(step: str) -> dict[str, Any]:
    return lr.raw_runs(lf.batch_of(step))[step]


def test_second_slice_numbers_are_the_recorded_ones() -> None:
    """The engine-clock numbers the eager and ngram findings quote, recomputed from the kept raw timelines
    (ladder_raw's methods): pure steps per batch, TTFT's ingress and prefill medians, completing steps, ngram's stream."""
    for (step, batch), ms in lf.STEP_MS.items():
        assert round(lr.pure_step_ms(_run(step)["requests"], batch), 2) == ms, (step, batch)
    for (step, part), ms in lf.ENGINE_MEDIAN_MS.items():
        assert round(lr.engine_median_ms(_run(step)["requests"], part), 2) == ms, (step, part)
    for step, (lo, hi) in lf.SECOND_COMPLETING_STEP_MS.items():
        medians = lf.completing_step_ms(_run(step)["requests"])
        assert (round(min(medians), 1), round(max(medians), 1)) == (lo, hi), (step, medians)
    reqs = _second()["ngram"]["requests"]
    assert sum(len(r["chunk_tokens"]) - 1 for r in reqs) == lf.NGRAM_STREAM["chunks"]
    assert sum(sum(r["chunk_tokens"][1:]) for r in reqs) == lf.NGRAM_STREAM["tokens"]
    # the eager step is host-bound: flat in the batch (one sequence and sixteen within 10%), the graph step is not
    assert abs(lf.STEP_MS[("eager", 1)] / lf.STEP_MS[("eager", 16)] - 1) < 0.1


def assert_ngram_counters(rec: Any, stream: dict[str, int]) -> None:
    """The ngram run's spec-decode counters are the drafts and accepted tokens `stream` quotes, and the accepted
    tokens per draft position add up to them."""
    assert _value(rec, "counters.vllm:spec_decode_num_drafts") == stream["drafts"]
    assert _value(rec, "counters.vllm:spec_decode_num_accepted_tokens") == stream["accepted"]
    assert sum(_value(rec, f"{PER_POSITION}.{i}") or 0 for i in range(4)) == stream["accepted"]


@pytest.mark.gpu
def test_ngram_counters_are_the_quoted_ones(target, measured) -> None:
    assert_ngram_counters(measured(f"{lf.MODEL}.{lf.WORKLOAD}.ngram", target=target, recorded_at=lf.SECOND_BATCH),
                          lf.NGRAM_STREAM)


@pytest.mark.gpu
def test_ngram_predicted_gains_are_the_replays(target, measured) -> None:
    """lf.NGRAM_PREDICTED (the gains the n-gram finding quotes and bands) are predicted_gains' for the recording."""
    rec = measured(f"{lf.MODEL}.{lf.WORKLOAD}.ngram", target=target, recorded_at=lf.SECOND_BATCH)
    gains = predicted_gains(lf.MODEL, lf.WORKLOAD, "ngram", rec)
    assert {m: round(gains[m] or 0, 4) for m in lf.NGRAM_PREDICTED} == lf.NGRAM_PREDICTED


def test_priced_step_times_are_the_preregistered_models() -> None:
    """lf.PRICED_STEP_MS from the preregistered calibration and each rung's preregistered engine arguments."""
    context = _row(lf.MODEL, lf.WORKLOAD, "ngram")["terms"]["context"]
    for (step, batch), ms in lf.PRICED_STEP_MS.items():
        got = lf.priced_step_ms(PRE["calibration"], _row(lf.MODEL, lf.WORKLOAD, step), context, batch)
        assert round(got, 2) == ms, (step, batch, got)


def test_resampling_metrics_are_ladder_metrics() -> None:
    """ladder_raw.sample_metric over all of a run's requests is the device plan's ladder_metrics, on every run the
    second slice's intervals resample."""
    from pytest_anatomy.measure.ladder_stats import ladder_metrics
    from pytest_anatomy.specs.workload_file import Slo

    slo = Slo(RAG_SLO["ttft_ms"], RAG_SLO["itl_ms"])
    for run in (_parent(), _second()["eager"], _second()["ngram"]):
        recs = lr.records(run)
        for metric, value in ladder_metrics(recs, run["start"], slo).items():
            assert lr.sample_metric([r for r in recs if r.ok], run["start"], metric, slo) == pytest.approx(value, 1e-12)


def _llama_run(step: str) -> dict[str, Any]:
    return lr.raw_runs(ll.BATCH_OF[step])[step]


@pytest.mark.parametrize("rung_metric", list(ll.GAINS), ids=lambda rm: ".".join(rm))
def test_llama_rag_gains_are_the_recorded_ones(rung_metric: tuple[str, str]) -> None:
    """ladder_llama.GAINS (the measured gain over the rung's parent and its request-resampled 95% interval) recomputed
    from the kept raw data of Llama-3.1-8B's rag batches (ladder_raw), each run read from the batch that holds it."""
    from pytest_anatomy.measure.ladder_stats import ladder_metrics
    from pytest_anatomy.specs.workload_file import Slo

    step, metric = rung_metric
    runs = {s: _llama_run(s) for s in (step, _row(ll.MODEL, ll.WORKLOAD, step)["parent"])}
    run, parent = runs.values()
    slo = Slo(RAG_SLO["ttft_ms"], RAG_SLO["itl_ms"])
    gain, (lo, hi) = ll.GAINS[rung_metric]
    got = [ladder_metrics(lr.records(r), r["start"], slo)[metric] for r in (run, parent)]
    assert gain == pytest.approx(got[0] / got[1], abs=5e-5)
    assert (lo, hi) == tuple(round(x, 4) for x in lr.resampled_gain_interval(run, parent, metric, slo))


def test_llama_rag_missed_gains_are_all_listed() -> None:
    """Every preregistered gain of Llama-3.1-8B's recorded rag rungs that misses 20% has its row in ll.GAINS (so a
    finding covers it), and every row misses: the table is the misses, no more and no fewer."""
    from pytest_anatomy.measure.ladder_stats import ladder_metrics
    from pytest_anatomy.specs.workload_file import Slo

    slo, (lo, hi), missed = Slo(RAG_SLO["ttft_ms"], RAG_SLO["itl_ms"]), gain_band(), set()
    for step in ll.BATCH_OF:
        parent = _row(ll.MODEL, ll.WORKLOAD, step)["parent"]
        if parent is None:
            continue
        predicted = ll.NGRAM_PREDICTED if step == "ngram" else _row(ll.MODEL, ll.WORKLOAD, step)["gain"]
        now, before = (ladder_metrics(lr.records(r), r["start"], slo) for r in (_llama_run(step), _llama_run(parent)))
        missed |= {(step, m) for m, p in predicted.items() if p and now.get(m) and before.get(m)
                   and not lo <= now[m] / before[m] / p <= hi}
    assert missed == set(ll.GAINS)


def test_llama_rag_step_times_are_the_recorded_ones() -> None:
    """The engine-clock step times Llama's findings quote (ll.COMPLETING_STEP_MS, ll.PURE_STEP_MS), recomputed from
    the kept raw timelines with ladder_findings' and ladder_raw's methods."""
    for step, (lo, hi) in ll.COMPLETING_STEP_MS.items():
        terciles = lf.completing_step_ms(_llama_run(step)["requests"])
        assert (lo, hi) == (round(min(terciles), 1), round(max(terciles), 1)), step
    for (step, batch), ms in ll.PURE_STEP_MS.items():
        assert ms == round(lr.pure_step_ms(_llama_run(step)["requests"], batch), 3), (step, batch)


@pytest.mark.gpu
def test_llama_ngram_prediction_is_the_recorded_one(target, measured) -> None:
    """ll.NGRAM_PREDICTED (the gains Llama's n-gram finding bands) are predicted_gains' for the recording."""
    rec = measured(f"{ll.MODEL}.{ll.WORKLOAD}.ngram", target=target, recorded_at=ll.BATCH_OF["ngram"])
    gains = predicted_gains(ll.MODEL, ll.WORKLOAD, "ngram", rec)
    assert {m: round(gains[m] or 0, 4) for m in ll.NGRAM_PREDICTED} == ll.NGRAM_PREDICTED


@pytest.mark.parametrize("rung_metric", list(lf.GAIN_INTERVALS), ids=lambda rm: ".".join(rm))
def test_gain_intervals_are_the_recorded_ones(rung_metric: tuple[str, str]) -> None:
    """The findings' bands (the measured gain's request-resampled 95% interval, ladder_raw) recomputed from raw data."""
    from pytest_anatomy.specs.workload_file import Slo

    step, metric = rung_metric
    lo, hi = lr.resampled_gain_interval(_run(step), _parent(), metric, Slo(RAG_SLO["ttft_ms"], RAG_SLO["itl_ms"]))
    assert (round(lo, 4), round(hi, 4)) == lf.GAIN_INTERVALS[rung_metric]
    assert lo <= lf.MEASURED_GAINS[rung_metric] <= hi
