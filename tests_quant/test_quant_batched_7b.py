"""llama.cpp at batch 1 and 64 on Qwen2.5-7B per shootout type (quant_plan.py --phase batched7b: llama-batched-bench,
results/<hw>/quant/qwen2.5-7b.<type>.batched) against batched_preregistered.json, written before any batched run from
the committed theory (theory/llamacpp_batched.py) and the type's own batch-1 benches of earlier sessions
(quant_batched.py). No case is collected until a batched run is recorded.

Checks per type:
- prefill at 64 prompts against the same run's prefill at 1 (the theory's identity: the same graph runs and FLOPs);
  tolerance: 2 robust standard errors of each median (3 repetitions each);
- prefill at 64 and decode at 64 against their pre-registration; decode at 1 against its own (the fitted constants at
  batched-bench's context). Tolerance: each calibration run's 2 robust SE carried through the fit to the prediction
  (quant_batched.budget), the card's recorded session-to-session spread of the batch-1 bench (the calibration runs
  are another session's, maybe another card's), and this run's 2 robust SE.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import quant_batched as qb
import quant_findings as qf
from quant_speed import rel_se

from pytest_anatomy import recordings
from pytest_anatomy.session import get_session
from pytest_anatomy.theory.prediction import Prediction

PREREG = json.loads(qb.PREREGISTRATION.read_text()) if qb.PREREGISTRATION.is_file() else None


def _judged(mark: pytest.MarkDecorator):
    """The finding banded by quant_batched.BANDED_BY_RUN: checked-run while that run is the judged one."""
    return qf.judged_marks(qb.BANDED_BY_RUN, qb.newest_stamp, mark)


def _results(request: pytest.FixtureRequest) -> Path:
    return Path(get_session(request.config).settings.results_dir)


def _prereg(file_type: str, quantity: str) -> Prediction:
    if PREREG is None or file_type not in PREREG["predictions"]:
        pytest.fail(f"{qb.PREREGISTRATION.name} holds no {file_type}: a batched run without a pre-registration")
    p = PREREG["predictions"][file_type][quantity]
    return Prediction(p["value"], p["unit"], f"pre-registered {PREREG['written_utc']} (theory "
                      f"{PREREG['theory_commit'][:9]}): {p['formula']}")


@pytest.mark.quant_runs("batched", model=qb.MODEL)
def test_the_preregistration_predates_the_run(target, file_type, measured):
    rec = measured(f"{qb.MODEL}.{file_type.lower()}.batched")
    assert PREREG is not None and PREREG["written_utc"] < rec.recorded_at.replace("+00:00", "Z"), (
        f"{qb.PREREGISTRATION.name} must be written before the run it predicts ({rec.recorded_at})")


def lone_prompt_excess_s(rec) -> float:
    """Seconds a lone prompt took beyond one 64th of the 64-prompt batch, in one batched run."""
    return qb.N_PROMPT / rec["pp512.b1.tok_per_s"].value - qb.N_PROMPT / rec[f"pp512.b{qb.BATCH}.tok_per_s"].value


def lone_prompt_band(results: Path, hardware: str, file_type: str, stamp: str, rel: float) -> tuple[float, float]:
    """The b64 / b1 ratio `file_type` would show if its lone prompt paid the fixed excess the OTHER types of the same
    batch paid (the smallest to the largest of theirs), +- this check's noise (finding
    quant-7b-batched-lone-prompt-pays-a-fixed-cost)."""
    others = [lone_prompt_excess_s(recordings.load_latest(results, hardware, "quant",
                                                          f"{qb.MODEL}.{ft.lower()}.batched", stamp))
              for ft in qb.TYPES if ft != file_type]
    rec = recordings.load_latest(results, hardware, "quant", f"{qb.MODEL}.{file_type.lower()}.batched", stamp)
    t64 = qb.N_PROMPT / rec[f"pp512.b{qb.BATCH}.tok_per_s"].value
    return (1 + min(others) / t64) * (1 - rel), (1 + max(others) / t64) * (1 + rel)


@pytest.mark.quant_runs("batched", model=qb.MODEL, marks={ft: (qf.BATCHED_LONE_PROMPT_FIXED_COST,) for ft in qb.TYPES})
def test_prefill_at_64_prompts_is_the_rate_at_one(target, file_type, measured, reconcile, request):
    rec = measured(f"{qb.MODEL}.{file_type.lower()}.batched")
    one, many = rec["pp512.b1.tok_per_s"], rec[f"pp512.b{qb.BATCH}.tok_per_s"]
    rel = rel_se(one.samples, one.value) + rel_se(many.samples, many.value)
    reconcile(f"batched_prefill_b64_over_b1[{file_type}]",
              Prediction(1.0, "x", "per-sequence streams: 64 prompts run the graph runs and FLOPs of 64 lone ones"),
              many.value / one.value, rel=rel, model=qb.MODEL,
              finding_band=lone_prompt_band(_results(request), target.name, file_type, rec.recorded_at, rel),
              why="2 robust standard errors of each of the two medians (3 repetitions each)")


def _against_preregistration(target, file_type: str, quantity: str, measured, reconcile, request,
                             banded: tuple[str, ...] = qb.TYPES) -> None:
    """`banded`: the types a finding covers, each banded by the batched run it was read off (qb.checked_run_band)."""
    rec = measured(f"{qb.MODEL}.{file_type.lower()}.batched")
    m = rec[quantity]
    when = PREREG["written_utc"] if PREREG else rec.recorded_at
    results = _results(request)
    carried = qb.budget(results, target.name, file_type, when)[quantity]
    spread = qb.session_spread(results, target.name, quantity.split(".")[0])
    this = rel_se(m.samples, m.value)
    terms = [*(f"{k.split('=')[1]} {v:.2%}" for k, v in carried), f"session spread {spread:.2%}", f"this run {this:.2%}"]
    pred, rel = _prereg(file_type, quantity), sum(v for _, v in carried) + spread + this
    band = (qb.checked_run_band(results, target.name, file_type, quantity, pred.value, rel)
            if file_type in banded else None)
    reconcile(f"batched_{quantity.replace('.', '_')}[{file_type}]", pred, m, rel=rel, model=qb.MODEL, finding_band=band,
              why="each calibration run's 2 robust SE carried through the fit, the card's session-to-session spread "
                  "of that batch-1 bench, and this run's 2 robust SE: " + " + ".join(terms))


@pytest.mark.quant_runs("batched", model=qb.MODEL, marks={ft: _judged(qf.BATCHED_PREFILL_ABOVE_ITS_BENCH)
                                                         for ft in qf.BATCHED_PREFILL_ABOVE})
def test_prefill_at_64_prompts_against_its_preregistration(target, file_type, measured, reconcile, request):
    _against_preregistration(target, file_type, "pp512.b64.tok_per_s", measured, reconcile, request,
                             qf.BATCHED_PREFILL_ABOVE)


@pytest.mark.quant_runs("batched", model=qb.MODEL, marks={ft: _judged(qf.BATCHED_LONE_DECODE_BELOW_ITS_BENCH)
                                                         for ft in qf.BATCHED_LONE_DECODE_BELOW})
def test_decode_at_one_sequence_against_its_preregistration(target, file_type, measured, reconcile, request):
    _against_preregistration(target, file_type, "tg128.b1.tok_per_s", measured, reconcile, request,
                             qf.BATCHED_LONE_DECODE_BELOW)


@pytest.mark.quant_runs("batched", model=qb.MODEL, marks={ft: _judged(qf.BATCHED_DECODE_BELOW_ITS_ROOFLINE)
                                                         for ft in qb.TYPES})
def test_decode_at_64_sequences_against_its_preregistration(target, file_type, measured, reconcile, request):
    _against_preregistration(target, file_type, f"tg128.b{qb.BATCH}.tok_per_s", measured, reconcile, request)


@pytest.mark.quant_runs("batched", model=qb.MODEL)
def test_the_theory_still_computes_its_preregistration(target, file_type, measured, request):
    """An identity, not a prediction: today's theory, fed the calibration runs the file names (those at or before it
    was written), gives each of the type's four numbers to the file's rounding. Without it a change to
    theory/llamacpp_batched.py moved nothing the suite looks at (the checks above judge the frozen numbers: theory
    mutation llamacpp-batched-kv-one-sequence survives); the ladder's test_preregistered.py holds its file the same
    way. A deliberate theory change re-registers before the next batched run instead of editing this file."""
    measured(f"{qb.MODEL}.{file_type.lower()}.batched")  # collected only where the type's batched run is recorded
    assert PREREG is not None and file_type in PREREG["predictions"]
    frozen = PREREG["predictions"][file_type]
    today = qb.preregistration_body(_results(request), target.name, PREREG["written_utc"])[file_type]
    assert today["calibration_runs"] == frozen["calibration_runs"]  # type: ignore[index]
    for quantity, p in frozen.items():
        if quantity != "calibration_runs":
            assert today[quantity]["value"] == p["value"], (  # type: ignore[index]
                f"{file_type} {quantity}: {today[quantity]['value']} by today's theory, "  # type: ignore[index]
                f"{p['value']} pre-registered {PREREG['written_utc']}")


@pytest.mark.parametrize("judged, source", [(qb.BANDED_BY_RUN, "checked-run"), ("2026-12-07T19:00:00Z", "other-runs")])
def test_a_later_batched_run_is_banded_by_another_run(judged, source):
    """The findings banded by BANDED_BY_RUN read their band off the run they judge only while that run is the newest;
    a later run is judged against it, a band from another run (the band itself is unchanged: checked_run_band)."""
    of = qf.judged_marks(qb.BANDED_BY_RUN, lambda *_: judged, qf.BATCHED_DECODE_BELOW_ITS_ROOFLINE)
    assert [m.kwargs["band_from"] for m in of(Path("results"), qf.MEASURED_ON, "F16")] == [source]
