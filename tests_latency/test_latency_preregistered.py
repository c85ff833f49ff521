"""Decode steps of models other than Qwen2.5-7B, pre-registered before they ran (issue 10 items 1 and 5).

`pytest-anatomy preregister latency MODEL...` (pytest_anatomy/latency_prereg.py) writes each planned decode step as
`predict latency` gives it from the recorded Qwen2.5-7B calibration, whose step overhead is Qwen's own b=1 residual:
an error in a term that does not depend on the batch cancels on Qwen and shows only where a model's share of that
term differs. Each entry carries the relative move of its prediction under each named term error (TERM_ERRORS).

- The sensitivities are the theory's algebra: recomputed here with the theory mutated and the calibration refitted.
- The committed plan can catch a 5% term error: for each error, some pair of planned models measured in one session
  moves apart by more than twice the largest session-level budget any Llama transfer check carried
  (latency_card_spread.SESSION_BUDGET). A pair in one session on one card shares the card and the session's
  calibration, the terms that make a single transfer's budget ~5% (the card-to-card spread), so the pair is the
  check with the power; a single transfer catches only the errors above its own budget.
- Once recorded: each pre-registered decode step against the measured one, and each pair's ratio of ratios.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest
from latency_card_spread import SESSION_BUDGET, transfer_card_spread
from latency_setups import median_scatter

from pytest_anatomy import latency_prereg as lp
from pytest_anatomy import preregistration as pre
from pytest_anatomy import recordings
from pytest_anatomy.cli_calibration import b1_residuals, refit_calibration
from pytest_anatomy.measure import Measurement
from pytest_anatomy.specs.hardware import HARDWARE, get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory.prediction import Prediction, Term

RESULTS = Path(__file__).resolve().parents[1] / "results"
PAIR_NOISE = 2 * SESSION_BUDGET  # two models' session-level budgets, each at the largest a Llama transfer carried
# Term errors no planned decode check can see, each with why; every other error must be caught by the plan.
BELOW_DETECTION = {
    "lm_head x1.05": "5% of a 0.3-1.6 GB term moves a step by under 0.3%: the lm_head is caught only whole "
                     "(dropped), never at 5% of itself",
    "KV read x1.05": "the b=1 calibration absorbs almost none of it (one 1,088-token context), so Qwen's own decode "
                     "checks at b = 16-128 see it unaided; a pair of models cancels it",
}


def _latency_preregistrations() -> list[tuple[str, pre.Preregistration]]:
    return [(hw, p) for hw in sorted(HARDWARE) if (RESULTS / hw / pre.FOLDER).is_dir()
            for p in pre.load_all(RESULTS, hw) if p.doc.get("suite") == lp.SUITE and p.doc.get("runs")]


def _decode_runs(p: pre.Preregistration) -> dict[str, dict[int, dict[str, Any]]]:
    """{model: {batch: run}} of a pre-registration's decode entries."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for run in p.doc["runs"].values():
        if run["kind"] == "decode":
            out.setdefault(run["model"], {})[int(run["settings"]["batch"])] = run
    return out


@pytest.mark.parametrize("error", ["matmul weights x1.05", "KV read x1.05"])
def test_the_sensitivities_are_the_mutated_theorys(error, monkeypatch):
    """Mutate the theory's term, refit the calibration on the median Qwen2.5-7B session, predict again: the relative
    move is the entry's sensitivity (to 0.02 pp: eta's refit on the prefill is the only other path). The session
    stays the one the pre-registration calibrated from: a mutation can change which session's residual is the median
    (weights x1.05 does), which moves the prediction by that session's ceilings, not by the term's algebra."""
    from pytest_anatomy import cli_calibration

    hw = get_hardware("h200")
    session = cli_calibration.typical_session_b1(RESULTS, hw)
    monkeypatch.setattr(cli_calibration, "typical_session_b1", lambda *a: session)
    base = refit_calibration(RESULTS, hw)
    assert not isinstance(base, str), base
    qwen = load_model(lp.CALIBRATION_MODEL)
    original = {"matmul weights x1.05": lat.matmul_weight_bytes, "KV read x1.05": lat.kv_read_bytes}[error]
    cases = [(load_model(m), b) for m in ("qwen2.5-3b", "qwen2.5-32b") for b in (1, 64)]
    before = [lat.decode_step_time(m, base.ceilings, base.calib, b, lp.mean_context()).value for m, b in cases]
    expected = [lp.sensitivity(m, qwen, b, t, base.ceilings.bandwidth)[error] for (m, b), t in zip(cases, before)]
    monkeypatch.setattr(lat, original.__name__, lambda *a: 1.05 * original(*a))
    mutated = refit_calibration(RESULTS, hw)
    assert not isinstance(mutated, str), mutated
    after = [lat.decode_step_time(m, mutated.ceilings, mutated.calib, b, lp.mean_context()).value for m, b in cases]
    for (m, b), t0, t1, want in zip(cases, before, after, expected):
        assert t1 / t0 - 1 == pytest.approx(want, abs=2e-4), (m.name, b)


def test_a_latency_preregistration_for_the_next_visit_is_committed():
    """Issue 10 item 1 needs a model whose lm_head, KV and FFN shares differ from Qwen2.5-7B's, predicted before it
    runs: the plan (docs/RECORDING.md) is a committed latency pre-registration of two models, one each side."""
    files = _latency_preregistrations()
    assert files, "no results/<hw>/preregistered/latency-*.json: run `pytest-anatomy preregister latency ...`"
    assert any(len(_decode_runs(p)) >= 2 for _, p in files)


@pytest.mark.parametrize("error", [e.name for e in lp.TERM_ERRORS])
def test_the_planned_pair_catches_a_five_percent_term_error(error):
    """The largest move apart of two planned models at a batch both run (their ratios measured / predicted would
    differ by it) exceeds PAIR_NOISE for every error not BELOW_DETECTION, and stays under it for those that are."""
    moves = []
    for _, p in _latency_preregistrations():
        runs = _decode_runs(p)
        models = sorted(runs)
        moves += [abs(runs[a][b]["sensitivity"][error] - runs[c][b]["sensitivity"][error])
                  for i, a in enumerate(models) for c in models[i + 1:] for b in set(runs[a]) & set(runs[c])]
    assert moves, "no pre-registered pair of models at a common batch"
    if error in BELOW_DETECTION:
        assert max(moves) < PAIR_NOISE, f"{error} moves a pair by {max(moves):.1%}: it is detectable after all"
    else:
        assert max(moves) > PAIR_NOISE, (f"{error} moves the planned pair apart by at most {max(moves):.2%}, under "
                                         f"the pair's noise {PAIR_NOISE:.0%}: plan a model whose share differs more")


# --- once recorded -----------------------------------------------------------------------------------------------
def _recorded(hw: str, name: str, after: Any) -> recordings.Recording | None:
    """The first recording of `name` on `hw` made after the pre-registration was committed (None: not yet run)."""
    if after is None:
        return None
    found = [recordings.load_file(path) for path in recordings.candidates(RESULTS, hw, "latency", name)]
    later = [r for r in found if pre.parse_utc(r.recorded_at) > after]
    return min(later, key=lambda r: r.recorded_at) if later else None


def _cases() -> list[Any]:
    cases = []
    for hw, p in _latency_preregistrations():
        for model, by_b in _decode_runs(p).items():
            for b, run in sorted(by_b.items()):
                rec = _recorded(hw, f"{model}.decode.b{b}", p.committed_at)
                if rec is not None:
                    cases.append(pytest.param(hw, p, run, rec, id=f"{hw}-{p.path.stem}-{model}-b{b}"))
    return cases or [pytest.param(None, None, None, None, marks=pytest.mark.skip(
        reason="no pre-registered latency run recorded yet (planned: docs/RECORDING.md, issue 10 item 1)"))]


def _calibration_spread(hw: str, predicted_s: float) -> float:
    """How far a session's calibration may lie from the median session's the pre-registration used: the largest
    distance of a recorded session's b=1 residual from the median residual, over the predicted step."""
    residuals = [r for r, _, _ in b1_residuals(RESULTS, get_hardware(hw))]
    mid = statistics.median(residuals)
    return max(abs(r - mid) for r in residuals) / predicted_s


@pytest.mark.gpu
@pytest.mark.parametrize("hw,prereg,run,rec", _cases())
def test_preregistered_decode_step(hw, prereg, run, rec, reconcile):
    """The step written before the run, against the measured one, on the budget the Llama transfer carries with the
    calibration's session-to-session spread in place of this session's own calibration scatter."""
    entry = run["predictions"][lp.DECODE_QUANTITY]
    pred = Prediction(float(entry["value"]), str(entry["unit"]),
                      f"pre-registered in {prereg.path.name} (theory {str(prereg.doc['theory_commit'])[:12]}): "
                      f"{entry['formula']}", {"file": prereg.path.name, "committed_at": f"{prereg.committed_at:%Y-%m-%dT%H:%M:%SZ}"},
                      terms=tuple(Term(k, v, "") for k, v in entry["terms"].items()),
                      notes=("written and committed before the run, from the median recorded calibration session",))
    b = int(run["settings"]["batch"])
    budget = {"repeat_scatter": median_scatter(rec, "itl_steady_engine_clock_s"),
              "calibration_spread": _calibration_spread(hw, pred.value), "card_spread": transfer_card_spread(b, rec)}
    reconcile("preregistered_decode_step", pred, rec["step_time_s"], budget=budget, model=run["model"],
              why="measured noise only: the run's repeat scatter, how far a session's calibration lies from the "
                  "median session's, and the card-to-card spread of Llama's transfer (the only measured one)")


def _pairs() -> list[Any]:
    cases = []
    for hw, p in _latency_preregistrations():
        runs = _decode_runs(p)
        models = sorted(runs)
        for i, a in enumerate(models):
            for c in models[i + 1:]:
                for b in sorted(set(runs[a]) & set(runs[c])):
                    ra, rc = (_recorded(hw, f"{m}.decode.b{b}", p.committed_at) for m in (a, c))
                    if ra is not None and rc is not None and recordings.stamp_of(ra.recorded_at)[:8] == \
                            recordings.stamp_of(rc.recorded_at)[:8]:
                        cases.append(pytest.param(hw, runs[a][b], runs[c][b], ra, rc, id=f"{hw}-{a}-vs-{c}-b{b}"))
    return cases or [pytest.param(None, None, None, None, None, marks=pytest.mark.skip(
        reason="no pre-registered pair of models recorded in one session yet (planned: docs/RECORDING.md)"))]


@pytest.mark.gpu
@pytest.mark.parametrize("hw,run_a,run_c,rec_a,rec_c", _pairs())
def test_preregistered_pair_moves_together(hw, run_a, run_c, rec_a, rec_c, reconcile):
    """Two pre-registered models measured in one session: their ratios measured / pre-registered agree, because the
    card, the session and its calibration are common to both and the theory's terms scale with each model's bytes.
    A term error absorbed by the b=1 calibration moves them apart by the entries' sensitivities' difference."""
    pa, pc = (float(r["predictions"][lp.DECODE_QUANTITY]["value"]) for r in (run_a, run_c))
    ratio = (rec_a["step_time_s"].value / pa) / (rec_c["step_time_s"].value / pc)
    measured = Measurement(ratio, "", source=rec_a["step_time_s"].source,
                           provenance={**rec_a["step_time_s"].provenance, "derived": (
                               f"({run_a['model']} measured / pre-registered) / ({run_c['model']} measured / "
                               "pre-registered), one session")})
    pred = Prediction(1.0, "", "both models' steps miss their pre-registered values by the same factor",
                      terms=(Term(f"{run_a['model']} pre-registered", pa, "s"),
                             Term(f"{run_c['model']} pre-registered", pc, "s")))
    spread = _calibration_spread(hw, 1.0) * abs(1 / pa - 1 / pc)  # one overhead error, two different steps
    budget = {"repeat_scatter": median_scatter(rec_a, "itl_steady_engine_clock_s")
              + median_scatter(rec_c, "itl_steady_engine_clock_s"), "calibration_spread": spread}
    reconcile("preregistered_pair_ratio", pred, measured, budget=budget, model=f"{run_a['model']}/{run_c['model']}",
              why="measured noise only: both runs' repeat scatter and the calibration's session spread acting on two "
                  "different step times; the card and session terms are common to both")
