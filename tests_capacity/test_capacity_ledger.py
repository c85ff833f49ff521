"""vLLM 0.26.0's whole memory ledger on each target card, predicted from config.json + GPU + settings.

Runs per target: on a replay target every recording results/<card>/capacity/vllm-ledger.<config
id>@*.json (one engine start each: dummy weights, bytes read inside the engine); on the live
target the engine starts that capacity_live_plan.py chooses for the card by this same theory (each started
once per session, in its own subprocess). Held-out configurations (id suffix "-held-out") were
never used to fit anything and were committed after the theory; those flagged held out but
committed before it are labelled "-in-sample" (held_out_labels.py). Per run:

(a) given the engine's own available KV bytes: blocks, tokens, max concurrency, exact;
(b) vLLM's accounting identity available = requested - terms (- CUDA-graph estimate), exact
    (kind "identity": the engine's own numbers);
(c) each ledger term from config + GPU + settings alone (theory/vllm_memory.py), in its band
    (vLLM's resolved settings and requested memory are kind "setting", a constant's fit point "fit");
(d) num_gpu_blocks from config + GPU alone within 1% (the capacity planning target);
(e) a run with a pre-registration committed before it ran: every pre-registered quantity against
    the run, beside the current theory's check, so a pre-registered miss stays visible.

Fitted constants (one per term at most) and the recordings they were fitted on are named
in theory/vllm_memory.py and theory/vllm_activation.py; test_fitted_constants_... guards that
none of them was fitted on a held-out run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import capacity_findings as findings
import held_out_labels
from ledger_runs import Run, runs_for

from pytest_anatomy import held_out, preregistration, recordings
from pytest_anatomy import session as anatomy_session
from pytest_anatomy import targets as tg
from pytest_anatomy.measure import Measurement
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.theory.vllm_activation import COMPILED_FORWARD_EXTRA
from pytest_anatomy.theory.vllm_memory import (
    LEDGER_TERMS,
    NON_TORCH_INCREASE,
    NON_TORCH_INCREASE_TP,
    V1_GRAPH_COST,
    cudagraph_pool,
    predict_ledger,
)
from pytest_anatomy.theory.vllm_settings import resolve
from pytest_anatomy.units import GiB, MiB

# vLLM prints GiB with 2 decimals and MiB with 2 decimals: half a step either way.
HALF_GIB_STEP = 0.005 * GiB
HALF_MIB_STEP = 0.005 * MiB


@cache
def _predicted_for(run: Run) -> dict[str, Prediction]:
    """The theory's ledger; a run flagged held out says in each prediction's notes what that label is
    worth (held_out_labels.py), so the report never calls an in-sample run held out."""
    ledger = predict_ledger(load_model(run.model), run.spec, run.ledger_settings)
    if run.label is None:
        return ledger
    note = held_out_labels.LABEL_TEXT[run.label]
    return {k: dataclasses.replace(p, notes=(*p.notes, note)) for k, p in ledger.items()}


def _predicted(run: Run) -> dict[str, Prediction]:
    return _predicted_for(run)


def _recording(run: Run, measured, vllm_ledger_live):
    try:
        return measured(run.name, live=vllm_ledger_live(run.run_id, run.model, run.settings, run.held_out))
    except RuntimeError as exc:  # an engine that did not start (OOM, ...): say what the theory expected
        ledger = _predicted(run)
        lines = [f"  {k} = {ledger[k].value:,.0f} {ledger[k].unit}" for k in
                 ("requested_memory_bytes", *LEDGER_TERMS, "available_kv_bytes", "num_gpu_blocks") if k in ledger]
        raise RuntimeError(f"{exc}\n--- predicted ledger on {run.hardware} ---\n" + "\n".join(lines)) from None


def _derived(like: Measurement, value: float, unit: str) -> Measurement:
    return Measurement(value, unit, source=like.source, provenance=like.provenance)


def _engine_available(run: Run, rec) -> float:
    """The engine's own available KV bytes; a pinned run hands vLLM its kv_cache_memory_bytes instead."""
    if "available_kv_bytes" in rec.measurements:
        return rec["available_kv_bytes"].value
    return float(run.settings["kv_cache_memory_bytes"])


# --- (a) the pool from the engine's own available memory ------------------------------------
@pytest.mark.gpu
def test_pool_from_engine_available_memory(target, run, measured, reconcile, vllm_ledger_live):
    rec = _recording(run, measured, vllm_ledger_live)
    model, rs = load_model(run.model), resolve(run.spec, run.ledger_settings)
    blocks = cap.vllm_num_gpu_blocks(model, _engine_available(run, rec), rs.block_size, rs.kv_cache_dtype,
                                     rs.tensor_parallel_size)
    reconcile("num_gpu_blocks", blocks, rec["num_gpu_blocks"], model=run.model)
    reconcile("kv_tokens", cap.vllm_kv_tokens(model, int(blocks.value), rs.block_size), rec["kv_tokens"],
              model=run.model)
    reconcile("max_concurrency", cap.vllm_max_concurrency(int(blocks.value), rs.max_model_len, rs.block_size),
              rec["max_concurrency"], model=run.model)


# --- (b) vLLM's accounting identity -----------------------------------------------------------
@pytest.mark.gpu
def test_accounting_identity(target, run, measured, reconcile, vllm_ledger_live):
    """available = requested - (model + peak + non_torch) - cudagraph_estimate, from the run's own terms.
    V2 reports an estimate of 0; the V1 run's estimate is subtracted (the REFERENCE.md formula)."""
    if run.pinned:
        pytest.skip(f"{run.run_id}: kv_cache_memory_bytes pins the pool, vLLM skips the ledger and reports no "
                    "terms (test_pool_from_engine_available_memory checks the pinned pool)")
    rec = _recording(run, measured, vllm_ledger_live)
    requested = rec["requested_memory_bytes"].value
    terms = [Term("requested", requested, "B")] + [Term(f"- {t}", -rec[t].value, "B") for t in LEDGER_TERMS]
    identity = Prediction(sum(t.value for t in terms), "B", "requested - (model + peak + non_torch) - cudagraph",
                          {t: rec[t].value for t in ("requested_memory_bytes", *LEDGER_TERMS)}, terms=tuple(terms),
                          notes=("the engine's own terms: checks vLLM's arithmetic, not the theory",))
    reconcile("available_kv_bytes", identity, rec["available_kv_bytes"], model=run.model, kind="identity")


@pytest.mark.gpu
def test_v1_cudagraph_estimate_structure(target, run, measured, reconcile, vllm_ledger_live):
    """V1's estimate = max(first capture per mode) + sum over modes of (graphs - 1) x per-graph cost,
    from the per-mode figures it logs (GPUModelRunner.profile_cudagraph_memory)."""
    rec = _recording(run, measured, vllm_ledger_live)
    per_mode = rec.data["run"]["result"]["log"]["cudagraph_estimate_per_mode"]
    first = max(m["first_capture_mib"] for m in per_mode.values()) * MiB
    rest = sum((m["num_graphs"] - 1) * m["per_graph_mib"] for m in per_mode.values()) * MiB
    structure = Prediction(first + rest, "B", "max(first_capture) + sum((n - 1) x per_graph)",
                           {"per_mode": per_mode},
                           terms=(Term("max first capture", first, "B"), Term("extra graphs", rest, "B")))
    figures = 1 + sum(m["num_graphs"] - 1 for m in per_mode.values())
    reconcile("cudagraph_estimate_bytes", structure, rec["cudagraph_estimate_bytes"], abs=figures * HALF_MIB_STEP,
              why="the log prints each MiB figure with 2 decimals; the per-graph one is multiplied by n - 1",
              model=run.model, kind="identity")


# --- (c) each term from config + GPU + settings alone -----------------------------------------
TERMS = ("requested_memory_bytes", "max_num_batched_tokens", "max_num_seqs", "block_size", *LEDGER_TERMS,
         "available_kv_bytes")
def _is_tp_graphs_run(run: Run) -> bool:
    """The marks quote one run's numbers, so they cover that run only; another compiled TP run is
    a new question (it would diverge until explained)."""
    return run.name == findings.TP_GRAPHS_RUN


def _term_marks(run: Run, term: str) -> list[Any]:
    marks = []
    if run.runner == "v1" and term == "non_torch_increase_bytes":
        marks.append(findings.V1_NON_TORCH)
    if run.runner == "v1" and term == "available_kv_bytes":
        marks.append(findings.V1_AVAILABLE)
    if not run.live and _is_tp_graphs_run(run) and term in findings.TP_GRAPHS:
        marks.append(findings.TP_GRAPHS[term])
    return marks


def _band(run: Run, term: str) -> dict[str, Any]:
    if run.runner == "v1" and term == "peak_activation_bytes":
        return {"abs": 1 * MiB, "why": "V1's dummy sampler creates per-request tensors (<= 8 B x R each) that "
                                       "are only partly enumerated, and a cached block handed out whole adds "
                                       "up to 1 MiB (kSmallSize)"}
    return {}  # every other term is predicted to the byte


# What each term's check is evidence of. The settings are vLLM's resolved defaults echoed back, and
# requested memory is utilization x the card's total (the catalog's total equals every recording's):
# neither can fail for an error in the ledger theory, so they are listed apart from predictions.
SETTING_TERMS = ("requested_memory_bytes", "max_num_batched_tokens", "max_num_seqs", "block_size")


def _fitted_here(run: Run, term: str) -> bool:
    """The recording a constant of this term was fitted on: its check agrees by construction."""
    if run.live:
        return False
    fitted = {"non_torch_increase_bytes": NON_TORCH_INCREASE.fitted_on + NON_TORCH_INCREASE_TP.fitted_on,
              "cudagraph_estimate_bytes": V1_GRAPH_COST.fitted_on,
              "peak_activation_bytes": COMPILED_FORWARD_EXTRA.fitted_on}.get(term, ())
    return run.name in fitted


def _term_kind(run: Run, term: str) -> str:
    if term in SETTING_TERMS:
        return "setting"
    return "fit" if _fitted_here(run, term) else "prediction"


def _term_checked(run: Run, term: str) -> bool:
    """The V2 runner's CUDA-graph estimate is 0 by the release's rule and 0 in every recording; the
    rule is already carried by available_kv_bytes (a non-zero estimate subtracted would move it), so
    a separate 0 = 0 check adds nothing."""
    return not (term == "cudagraph_estimate_bytes" and run.runner == "v2")


@pytest.mark.gpu
def test_ledger_term_from_config(target, run, term, measured, reconcile, vllm_ledger_live):
    rec = _recording(run, measured, vllm_ledger_live)
    if term not in rec.measurements:
        pytest.skip(f"{run.run_id}: vLLM reports no {term} (kv_cache_memory_bytes pins the pool and skips the ledger)")
    # A fit point is reconciled as kind "fit": listed apart, never counted as agreement of a prediction
    # (test_fitted_constants_come_from_non_held_out_runs checks each constant reproduces from it).
    reconcile(term, _predicted(run)[term], rec[term], model=run.model, kind=_term_kind(run, term),
              **_band(run, term))


# --- (d) the planning target ---------------------------------------------------------------------
@pytest.mark.gpu
def test_num_gpu_blocks_from_config_alone(target, run, measured, reconcile, vllm_ledger_live):
    rec = _recording(run, measured, vllm_ledger_live)
    reconcile("num_gpu_blocks", _predicted(run)["num_gpu_blocks"], rec["num_gpu_blocks"], rel=0.01,
              why="the capacity planning target: blocks from config + GPU alone within 1% on every configuration",
              model=run.model)


FITTED = (NON_TORCH_INCREASE, NON_TORCH_INCREASE_TP, V1_GRAPH_COST, COMPILED_FORWARD_EXTRA)


@pytest.mark.gpu
def test_fitted_constants_come_from_non_held_out_runs(target, runs, measured):
    """Each fitted constant reproduces from the recording it names, and none of those is held out."""
    by_name = {r.name: r for r in runs}
    nt = measured(NON_TORCH_INCREASE.fitted_on[0])
    assert nt["non_torch_increase_bytes"].value == NON_TORCH_INCREASE.value
    tp = measured(NON_TORCH_INCREASE_TP.fitted_on[0])
    assert tp["non_torch_increase_bytes"].value == NON_TORCH_INCREASE_TP.value
    v1 = by_name[V1_GRAPH_COST.fitted_on[0]]
    graphs = _predicted(v1)["cudagraph_estimate_bytes"].terms[0].value
    # float division by the graph count: equal up to the last bit of a double
    assert measured(v1.name)["cudagraph_estimate_bytes"].value == pytest.approx(
        V1_GRAPH_COST.value * graphs, rel=1e-15)
    comp = by_name[COMPILED_FORWARD_EXTRA.fitted_on[0]]
    assert measured(comp.name)["peak_activation_bytes"].value == _predicted(comp)[
        "peak_activation_bytes"].value
    fits = held_out.FitSet.of("the memory ledger's fitted constants", [n for c in FITTED for n in c.fitted_on])
    assert all(f.point in by_name for f in fits.points)  # each names a recording of this target
    for run in runs:
        if run.held_out:  # the plan's declaration, made before any constant was fitted
            fits.check(run.name, declared_held_out=True, how_to_declare="not held out in the capacity plan")


# --- where vLLM 0.26.0 differs from its documentation ---------------------------------------------
def _nvml_growth(rec) -> float:
    mem = rec.data["run"]["result"]["memory"]
    return mem["after_start"]["used_bytes"] - mem["before_start"]["used_bytes"]


def _graph_pool_marks(results: Path, run: Run) -> tuple[Any, ...]:
    """The band a recorded V2 graph run's own logged pool implies (a different quantity of the same
    run than the one reconciled: the explanation's prediction of the gap, not the gap). Recorded runs
    only: a live run's pool is not known until it has run."""
    rec = recordings.load_latest(results, run.hardware, "capacity", run.name)
    pool = rec.data["run"]["result"]["log"]["cudagraph_capture_gib"] * GiB
    documented = rec["requested_memory_bytes"].value - sum(rec[t].value for t in LEDGER_TERMS) - pool
    return (findings.graph_pool_mark(pool, documented, findings.graph_pool_reason(results, run.hardware)),)


@pytest.mark.gpu
def test_v2_graph_pool_lands_on_top_of_the_budget(target, run, measured, reconcile, vllm_ledger_live):
    """Documented: available = requested - (model + peak + non_torch) - graph memory. With the pool
    this run then captured ("Graph capturing finished ..., took X GiB"), that is what the docs predict."""
    rec = _recording(run, measured, vllm_ledger_live)
    pool = rec.data["run"]["result"]["log"]["cudagraph_capture_gib"] * GiB
    requested = rec["requested_memory_bytes"].value
    terms = sum(rec[t].value for t in LEDGER_TERMS)
    over = _nvml_growth(rec) - requested
    documented = Prediction(
        requested - terms - pool, "B", "requested - (model + peak + non_torch) - graph pool (documented)",
        {"requested": requested, "graph_pool_gib": pool / GiB},
        terms=(Term("requested - terms (engine's own)", requested - terms, "B"),
               Term("- CUDA graph pool (log)", -pool, "B")),
        notes=(f"NVML: the instance grew {over:+,.0f} B beyond its requested budget after start-up",))
    reconcile("available_kv_bytes_documented", documented, rec["available_kv_bytes"], abs=HALF_GIB_STEP,
              why="the graph pool is logged in GiB with 2 decimals", model=run.model, kind="identity")


@pytest.mark.gpu
@findings.V1_POOL
def test_v1_graph_estimate_vs_actual_pool(target, run, measured, reconcile, vllm_ledger_live):
    rec = _recording(run, measured, vllm_ledger_live)
    estimate = rec["cudagraph_estimate_bytes"]
    actual = rec.data["run"]["result"]["log"]["cudagraph_pool_actual_gib"] * GiB
    engine_estimate = Prediction(estimate.value, "B", "vLLM's own estimate (profile_cudagraph_memory)",
                                 notes=("the engine's figure taken as the prediction of its own pool",))
    reconcile("cudagraph_pool_bytes", engine_estimate, _derived(estimate, actual, "B"), abs=HALF_GIB_STEP,
              why="the actual pool is logged in GiB with 2 decimals", model=run.model, kind="identity")


def _budget_marks(results: Path, run: Run) -> tuple[Any, ...]:
    """Below the budget: the released profile peak won; above it: what lands on top did (capacity_findings);
    none where the card's own runs cannot set the band."""
    predicted = _predicted(run)
    rec = None if run.live else recordings.load_latest(results, run.hardware, "capacity", run.name)
    mark = findings.budget_mark(run.name, int(run.settings.get("tensor_parallel_size") or 1) > 1,
                                not run.settings.get("enforce_eager"), predicted["peak_activation_bytes"].value,
                                predicted["requested_memory_bytes"].value, results, run.hardware, rec,
                                float(cudagraph_pool(resolve(run.spec, run.ledger_settings)).value))
    return () if mark is None else (mark,)


@pytest.mark.gpu
def test_instance_memory_vs_requested_budget(target, run, measured, reconcile, vllm_ledger_live):
    rec = _recording(run, measured, vllm_ledger_live)
    budget = _predicted(run)["requested_memory_bytes"]
    growth = _derived(rec["requested_memory_bytes"], _nvml_growth(rec), "B")
    reconcile("instance_memory_bytes", budget, growth, model=run.model)


# --- (e) pre-registered predictions ----------------------------------------------------------------
@dataclass(frozen=True)
class Preregistered:
    """One pre-registration's predictions for one run, committed before the run was measured."""

    file: str
    theory_commit: str
    committed_at: str
    predictions: dict[str, Any] = field(hash=False, compare=False)


@cache
def _preregistrations(results: Path, hardware: str) -> tuple[preregistration.Preregistration, ...]:
    return tuple(preregistration.load_all(results, hardware))


def _preregistered_for(results: Path, run: Run) -> list[Preregistered]:
    """Recorded runs only: each pre-registration of this run whose file was committed before the run's
    stamp (a file committed later, or in a checkout without git history, pre-registers nothing)."""
    if run.live:
        return []
    measured_at = datetime.fromisoformat(
        recordings.load_latest(results, run.hardware, "capacity", run.name).recorded_at.replace("Z", "+00:00"))
    return [Preregistered(p.path.name, str(p.doc.get("theory_commit")), f"{p.committed_at:%Y-%m-%dT%H:%M:%SZ}",
                          dict(p.run(run.name)["predictions"]))
            for p in _preregistrations(results, run.hardware)
            if p.run(run.name) is not None and p.committed_at is not None and p.committed_at < measured_at]


def _preregistration_marks(results: Path, run: Run, prereg: Preregistered, quantity: str) -> tuple[Any, ...]:
    """The finding of a pre-registered miss the explanation covers, and nowhere else: the V1-runner start's
    (banded by the other V1 starts), or the H100 pre-registration's where the current theory's value moved."""
    if prereg.file == findings.V1_PREREGISTRATION[0]:
        judged = recordings.load_latest(results, run.hardware, "capacity", run.name)
        band = findings.v1_preregistration_band(results, run.hardware, run.name, quantity,
                                                float(prereg.predictions[quantity]["value"]), judged.recorded_at)
        mark = findings.v1_preregistration_mark(prereg.file, run.hardware, run.name, quantity, band)
        return () if mark is None else (mark,)
    return _moved_by_the_theory(run, prereg, quantity)


def _moved_by_the_theory(run: Run, prereg: Preregistered, quantity: str) -> tuple[Any, ...]:
    """The H100 pre-registration's finding where the current theory's value (which agrees with the measurement)
    moved the check out of its band."""
    mark = findings.preregistration_mark(prereg.file, run.hardware, quantity)
    if mark is None:
        return ()
    current, written = _predicted(run)[quantity].value, float(prereg.predictions[quantity]["value"])
    if current == written:
        return ()
    implied = current / written if written else float("inf")
    outside = abs(implied - 1) > 0.01 if quantity == "num_gpu_blocks" else True
    return (mark,) if outside else ()


PREREGISTERED_CHECKED = ("num_gpu_blocks", *LEDGER_TERMS, "available_kv_bytes")


@pytest.mark.gpu
def test_preregistered_prediction(target, run, quantity, prereg, measured, reconcile, vllm_ledger_live):
    """The value written before the run, judged by the band the current theory's check uses: a miss
    here is reported even when the current theory (fixed since) agrees."""
    rec = _recording(run, measured, vllm_ledger_live)
    if quantity not in rec.measurements:
        pytest.skip(f"{run.run_id}: vLLM reports no {quantity}")
    entry = prereg.predictions[quantity]
    pred = Prediction(float(entry["value"]), str(entry["unit"]),
                      f"pre-registered in {prereg.file} (theory {prereg.theory_commit[:12]}): "
                      f"{entry.get('formula', '')}",
                      {"file": prereg.file, "theory_commit": prereg.theory_commit,
                       "committed_at": prereg.committed_at},
                      notes=("written and committed before the run; the current theory is checked beside it",))
    band = ({"rel": 0.01, "why": "the capacity planning target: blocks within 1%"} if quantity == "num_gpu_blocks"
            else _band(run, quantity))
    finding_band = None
    if _moved_by_the_theory(run, prereg, quantity):
        # what the mechanism implies: the current theory's value over the pre-registered one (+-1e-4: rounding)
        implied = _predicted(run)[quantity].value / pred.value
        finding_band = (implied * (1 - 1e-4), implied * (1 + 1e-4))
    reconcile(f"preregistered_{quantity}", pred, rec[quantity], model=run.model, finding_band=finding_band, **band)


# --- (target, run) parameters ----------------------------------------------------------------------
def _cases(name: str, t: tg.Target, results: Path) -> list[tuple[tuple, str, tuple]]:
    """(values, id, marks) of test `name` on target `t`; a live run slower than the fast subset is
    marked slow."""
    runs = runs_for(t, results)
    slow = lambda r: (pytest.mark.slow,) if r.slow else ()  # noqa: E731
    if name == "test_ledger_term_from_config":
        return [((r, term), f"{r.test_id}-{term}", (*_term_marks(r, term), *slow(r))) for r in runs for term in TERMS
                if _term_checked(r, term)]
    if name == "test_preregistered_prediction":
        return [((r, q, p), f"{r.test_id}-{q}-{p.file.removesuffix('.json').removeprefix('capacity-')}",
                 (*slow(r), *_preregistration_marks(results, r, p, q)))
                for r in runs for p in _preregistered_for(results, r) for q in PREREGISTERED_CHECKED
                if q in p.predictions and _term_checked(r, q)]  # the V2 runner's 0 = 0 estimate: as the term's own
    if name == "test_fitted_constants_come_from_non_held_out_runs":
        names = {r.name for r in runs}
        ok = not t.live and all(c.fitted_on[0] in names for c in FITTED)
        return [((runs,), t.name, ())] if ok else []
    pick = {"test_v1_cudagraph_estimate_structure": lambda r: r.runner == "v1",
            "test_v1_graph_estimate_vs_actual_pool": lambda r: r.runner == "v1",
            "test_v2_graph_pool_lands_on_top_of_the_budget":
                lambda r: not r.live and r.runner == "v2" and not r.settings.get("enforce_eager"),
            "test_instance_memory_vs_requested_budget": lambda r: not r.pinned}.get(name, lambda r: True)
    marks = {"test_v2_graph_pool_lands_on_top_of_the_budget": lambda r: _graph_pool_marks(results, r),
             "test_instance_memory_vs_requested_budget": lambda r: _budget_marks(results, r)}.get(name, lambda r: ())
    return [((r,), r.test_id, (*marks(r), *slow(r))) for r in runs if pick(r)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" not in metafunc.fixturenames:
        return
    targets, results = anatomy_session.of_config(metafunc.config, "capacity")
    argnames = [a for a in ("run", "term", "quantity", "prereg", "runs") if a in metafunc.fixturenames]
    params = [pytest.param(t, *values, id=cid, marks=marks)
              for t in targets for values, cid, marks in _cases(metafunc.function.__name__, t, results)]
    metafunc.parametrize(["target", *argnames], params)
