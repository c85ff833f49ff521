"""Decode steps of models other than Qwen2.5-7B, pre-registered before they ran (issue 10 items 1 and 5).

`pytest-anatomy preregister latency MODEL...` (pytest_anatomy/latency_prereg.py) writes each planned decode step as
`predict latency` gives it from the recorded Qwen2.5-7B calibration, whose step overhead is Qwen's own b=1 residual:
an error in a term that does not depend on the batch cancels on Qwen and shows only where a model's share of that
term differs. Each entry carries the relative move of its prediction under each named term error (TERM_ERRORS).

- The sensitivities are the theory's algebra: recomputed here with the theory mutated and the calibration refitted.
- The committed plan can catch a 5% term error: for each error, two planned models measured in one session move
  apart at b=1 by more than the pair's noise there: both runs' repeat scatter (2 x the largest a Llama decode run at
  b=1 carried) and the card-to-card spread of a same-session transfer (Llama's, 2 sd over the recorded cards: the
  Llama / Qwen2.5-7B ratio of one session is exactly such a pair, and it moves from card to card). Only b=1: at larger
  batches the per-sequence excess (h200-decode-per-sequence-cost, not in the theory) is a systematic of unknown
  model dependence. Errors the pair cannot see are BELOW_DETECTION, each with its numbers: of the named errors the
  planned pair (Qwen2.5-3B and 32B) catches matmul weights x1.05 only on the H200 (6.6 pp against 5.6%), the audit's
  survivor; the H100's plan (DETECTABLE_ON) also FFN weights x1.05 (6.1 pp).
- Once recorded: each pre-registered decode step and lone prefill against the measured one, the same runs against
  the current theory with the calibration of the session that measured them (prefill: eta from that session's GEMM
  timings at the model's own shapes), and each pair's ratio of ratios. Their misses are findings
  (latency_prereg_findings.py): the 3B's per-sequence excess banded by the same session's Qwen2.5-7B steps, the 32B's
  13-15% and both models' prefills from 2,048 tokens by the same run in the card's other sessions, or on a card with
  none (the H200's first, 2026-12-06 08:39) by the same run on the other card; the short lone prompts by the other
  models' lone-prompt excess; the H200 3B's steps and prompts beyond both bands by the same run in its other
  sessions where one holds it (its b=16 step), else by their own run (test_latency_small_model_bands.py).
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import latency_budget_findings as bf
import latency_prereg_findings as pf
from latency_card_spread import CARD_TRANSFER_RATIOS, card_spread, transfer_card_spread
from latency_findings_common import OTHER_SESSION_NOISE, runs_band
from latency_decode_findings import HOST_STALL_FINDING_ID, STALLED_DECODE_RUNS
from latency_run_validity_findings import slow_session_mark
from latency_setups import ceiling_scatter, median_scatter

from pytest_anatomy import latency_prereg as lp
from pytest_anatomy import preregistration as pre
from pytest_anatomy import recordings
from pytest_anatomy.cli_calibration import CALIBRATION_MODEL, b1_residuals, refit_calibration, session_calibration
from pytest_anatomy.measure import Measurement
from pytest_anatomy.specs.hardware import HARDWARE, get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import calibration as cal
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory.prediction import Prediction, Term

RESULTS = Path(__file__).resolve().parents[1] / "results"
# Term errors no planned decode check can see, each with why; every other error must be caught by the plan.
BELOW_DETECTION = {
    "FFN weights x1.05": "the pair moves apart by 5.58 pp at b=1 (3B -2.5%, 32B +3.0%), at its 5.6% noise: a model "
                         "pair further apart needs a smaller model, and a smaller one's step is the engine's CPU loop "
                         "(the tiny-hidden twins: 1.85-2.5 ms), not its terms",
    "lm_head dropped": "the pair moves apart by 4.3 pp at b=1 (3B +3.6%, 32B -0.7%), under its 5.6% noise, most of "
                       "it the card-to-card spread of a transfer (4.0% at b=1); Llama-3.1-8B's lm_head share equals "
                       "Qwen's, so no recorded pair sees it either",
    "lm_head x1.05": "5% of a 0.3-1.6 GB term moves a step by under 0.3%: the lm_head is caught only whole "
                     "(dropped), never at 5% of itself",
    "KV read x1.05": "the b=1 calibration absorbs almost none of it (one 1,088-token context), so Qwen's own decode "
                     "checks at b = 16-128 see it unaided; a pair of models cancels it",
}
# BELOW_DETECTION is the H200 plan's; a card whose plan sees one of them anyway says so here, with its numbers.
DETECTABLE_ON = {
    "h100-sxm": {
        "FFN weights x1.05": "the H100 plan's pair moves apart by 6.06 pp at b=1 (3B -2.96%, 32B +3.11%), above its "
                             "5.6% noise: at the H100's 3,105 GB/s (the H200's 4,384) the weights are a larger share "
                             "of each step beside a like step overhead (1.56 ms), so a weight-term error moves more",
    },
}


def below_detection(card: str) -> dict[str, str]:
    """The term errors `card`'s planned pair cannot see: BELOW_DETECTION less what DETECTABLE_ON says it sees."""
    return {e: why for e, why in BELOW_DETECTION.items() if e not in DETECTABLE_ON.get(card, {})}


def _latency_preregistrations(results: Path = RESULTS) -> list[tuple[str, pre.Preregistration]]:
    return [(hw, p) for hw in sorted(HARDWARE) if (results / hw / pre.FOLDER).is_dir()
            for p in pre.load_all(results, hw) if p.doc.get("suite") == lp.SUITE and p.doc.get("runs")]


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

    cards = sorted({hw for hw, _ in _latency_preregistrations()})  # the cards whose calibration the files priced
    assert cards, "no committed latency pre-registration"
    original = {"matmul weights x1.05": lat.matmul_weight_bytes, "KV read x1.05": lat.kv_read_bytes}[error]
    qwen = load_model(lp.CALIBRATION_MODEL)
    cases = [(load_model(m), b) for m in ("qwen2.5-3b", "qwen2.5-32b") for b in (1, 64)]
    typical_session_b1 = cli_calibration.typical_session_b1  # the real one: the loop pins it card by card
    for hw in map(get_hardware, cards):
        session = typical_session_b1(RESULTS, hw)
        monkeypatch.setattr(cli_calibration, "typical_session_b1", lambda *a: session)
        monkeypatch.setattr(lat, original.__name__, original)
        base = refit_calibration(RESULTS, hw)
        assert not isinstance(base, str), base
        before = [lat.decode_step_time(m, base.ceilings, base.calib, b, lp.mean_context()).value for m, b in cases]
        expected = [lp.sensitivity(m, qwen, b, t, base.ceilings.bandwidth)[error] for (m, b), t in zip(cases, before)]
        monkeypatch.setattr(lat, original.__name__, lambda *a: 1.05 * original(*a))
        mutated = refit_calibration(RESULTS, hw)
        assert not isinstance(mutated, str), mutated
        after = [lat.decode_step_time(m, mutated.ceilings, mutated.calib, b, lp.mean_context()).value
                 for m, b in cases]
        for (m, b), t0, t1, want in zip(cases, before, after, expected):
            assert t1 / t0 - 1 == pytest.approx(want, abs=2e-4), (hw.name, m.name, b)


def test_a_latency_preregistration_for_the_next_visit_is_committed():
    """Issue 10 item 1 needs a model whose lm_head, KV and FFN shares differ from Qwen2.5-7B's, predicted before it
    runs: the plan (docs/RECORDING.md) is a committed latency pre-registration of two models, one each side."""
    files = _latency_preregistrations()
    assert files, "no results/<hw>/preregistered/latency-*.json: run `pytest-anatomy preregister latency ...`"
    assert any(len(_decode_runs(p)) >= 2 for _, p in files)


@functools.lru_cache(maxsize=None)
def _pair_noise_b1() -> float:
    """The pair's noise at b=1: twice the largest repeat scatter of a recorded Llama-3.1-8B b=1 decode run, plus the
    card-to-card spread of its same-session transfer at b=1 over every recorded card."""
    runs = [recordings.load_file(p) for hw in sorted(HARDWARE)
            for p in recordings.candidates(RESULTS, hw, "latency", "llama-3.1-8b.decode.b1")]
    repeat = max(median_scatter(r, "itl_steady_engine_clock_s") for r in runs)
    return 2 * repeat + card_spread(CARD_TRANSFER_RATIOS, 1, checked_card="")


@pytest.mark.parametrize("error", [e.name for e in lp.TERM_ERRORS])
def test_the_planned_pair_catches_a_five_percent_term_error(error):
    """On each card's plan, the largest move apart at b=1 of two models pre-registered together exceeds the pair's
    noise for every error not below detection there, and stays under it for those that are (the declaration is
    checked both ways, card by card: below_detection)."""
    moves: dict[str, list[float]] = {}
    for card, p in _latency_preregistrations():
        runs = _decode_runs(p)
        models = sorted(m for m in runs if 1 in runs[m])
        moves.setdefault(card, []).extend(abs(runs[a][1]["sensitivity"][error] - runs[c][1]["sensitivity"][error])
                                          for i, a in enumerate(models) for c in models[i + 1:])
    assert any(moves.values()), "no two models pre-registered together at b=1"
    noise = _pair_noise_b1()
    for card, card_moves in moves.items():
        if not card_moves:
            continue
        if error in below_detection(card):
            assert max(card_moves) < noise, (f"{error} moves {card}'s planned pair by {max(card_moves):.2%} > "
                                             f"{noise:.2%}: it is detectable after all")
        else:
            assert max(card_moves) > noise, (f"{error} moves {card}'s planned pair apart by at most "
                                             f"{max(card_moves):.2%}, under the pair's noise {noise:.2%}: plan a "
                                             "model whose share differs more")


# --- once recorded -----------------------------------------------------------------------------------------------
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The recorded runs and pairs come from the session's results folder (anatomy_results_dir)."""
    from pytest_anatomy.session import get_session

    results = get_session(metafunc.config).settings.results_dir
    if metafunc.definition.originalname in ("test_preregistered_decode_step", "test_current_theory_decode_step"):
        metafunc.parametrize("results,hw,prereg,run,rec", _cases(results))
    elif metafunc.definition.originalname in ("test_preregistered_prefill", "test_current_theory_prefill"):
        metafunc.parametrize("results,hw,prereg,run,rec", _cases(results, "prefill"))
    elif metafunc.definition.originalname == "test_preregistered_pair_moves_together":
        metafunc.parametrize("results,hw,run_a,run_c,rec_a,rec_c", _pairs(results))


def _recorded(results: Path, hw: str, name: str, after: Any, *, skipped: bool = False) -> recordings.Recording | None:
    """The first recording of `name` on `hw` made after the pre-registration was committed (None: not yet run). A
    part the device program skipped (its engine's pool could not hold the batch) is a recording with no
    measurement: it is returned only with `skipped` (test_a_skipped_preregistered_run_was_predicted_not_to_fit)."""
    if after is None:
        return None
    found = [recordings.load_file(path) for path in recordings.candidates(results, hw, "latency", name)]
    later = [r for r in found if pre.parse_utc(r.recorded_at) > after and (_skip_reason(r) is not None) == skipped]
    return min(later, key=lambda r: r.recorded_at) if later else None


def _skip_reason(rec: recordings.Recording) -> str | None:
    skipped = (rec.data.get("run") or {}).get("skipped")
    return None if skipped is None else str(skipped)


def _cases(results: Path, kind: str = "decode") -> list[Any]:
    """(results, hw, pre-registration, its entry, the recording) of every pre-registered `kind` run recorded since."""
    cases = []
    for hw, p in _latency_preregistrations(results):
        for name, run in sorted(p.doc["runs"].items()):
            rec = _recorded(results, hw, name, p.committed_at) if run["kind"] == kind else None
            if rec is not None:
                marks = pf.decode_marks(hw, run["model"], int(run["settings"]["batch"])) if kind == "decode" \
                    else pf.prefill_marks(hw, run["model"], int(run["settings"]["input_len"]))
                cases.append(pytest.param(results, hw, p, run, rec, id=f"{hw}-{p.path.stem}-{name}", marks=marks))
    return cases or [pytest.param(None, None, None, None, None, marks=pytest.mark.skip(
        reason=f"no pre-registered {kind} run recorded yet (planned: docs/RECORDING.md, issue 10 item 1)"))]


def _preregistered(prereg: pre.Preregistration, run: dict[str, Any], quantity: str) -> Prediction:
    entry = run["predictions"][quantity]
    return Prediction(float(entry["value"]), str(entry["unit"]),
                      f"pre-registered in {prereg.path.name} (theory {str(prereg.doc['theory_commit'])[:12]}): "
                      f"{entry['formula']}",
                      {"file": prereg.path.name, "committed_at": f"{prereg.committed_at:%Y-%m-%dT%H:%M:%SZ}"},
                      terms=tuple(Term(k, v, "") for k, v in entry["terms"].items()),
                      notes=("written and committed before the run, from the median recorded calibration session",))


def _session(results: Path, hw: str, rec: recordings.Recording) -> tuple[Any, recordings.Recording]:
    """The calibration of the session that measured `rec` (cli_calibration.session_calibration) and its Qwen2.5-7B
    b=1 recording; the test fails in one line where that session cannot calibrate."""
    qwen_b1 = recordings.load_beside(results, hw, "latency", f"{CALIBRATION_MODEL}.decode.b1", rec)
    found = session_calibration(results, get_hardware(hw), qwen_b1)
    if isinstance(found, str):
        pytest.fail(f"{rec.name}: {found}")
    return found, qwen_b1


def _calibration_spread(results: Path, hw: str, predicted_s: float) -> float:
    """How far a session's calibration may lie from the median session's the pre-registration used: the largest
    distance of a recorded session's b=1 residual from the median residual, over the predicted step."""
    return _residual_spread_s(results, hw) / predicted_s


@functools.lru_cache(maxsize=None)
def _residual_spread_s(results: Path, hw: str) -> float:
    """The largest distance of a recorded session's b=1 residual from their median (s); once per folder and card:
    b1_residuals reads every recorded session."""
    residuals = [r for r, _, _ in b1_residuals(results, get_hardware(hw))]
    mid = statistics.median(residuals)
    return max(abs(r - mid) for r in residuals)


def _band(request: pytest.FixtureRequest, hw: str, quantity: str, ratio: float, budget: dict[str, float],
          other_runs: Callable[[], tuple[float, float]] | None = None,
          other_sessions: Callable[[str], list[tuple[float, float]]] | None = None,
          lone_prompt: Callable[[], tuple[float, float, Path, int]] | None = None,
          other_cards: Callable[[], list[tuple[float, float]]] | None = None) -> tuple[float, float] | None:
    """The band of the finding covering `quantity` on `hw` (None where none does): read off the checked run (its
    ratio +- its budget) for a checked-run finding; the per-sequence finding's `other_runs()` (latency_prereg_findings);
    for the others the same run's (ratio, repeat scatter) in every other session, `other_sessions(finding)` (the
    runs that finding takes: _other_runs), each +- its own scatter, this check's budget and one session's noise against
    another's (pf.SESSION_BANDED); a short lone prompt's from the other models' excess at its length (`lone_prompt()`:
    the checked run's current-theory and checked predictions, seconds, the results folder and the prompt length;
    pf.lone_prompt_band). Where the card has no other session of the run, a session-banded finding takes
    `other_cards()`: the same run on the other card, in the checked check's frame (the miss claimed as the model's, not
    the card's); never pf.SMALL_ID, a finding of one card's sessions."""
    mark = next((m for m in request.node.iter_markers("finding") if m.kwargs.get("quantity") == quantity
                 and m.kwargs.get("hardware") in (None, hw)), None)
    if mark is None:
        return None
    if mark.kwargs["band_from"] == "checked-run":
        return bf.checked_run_band(ratio, sum(budget.values()))
    if mark.args[0] == pf.LONE_PROMPT_ID:
        assert lone_prompt is not None, f"{quantity}: the lone-prompt finding needs the checked run's current theory"
        current_s, predicted_s, results, length = lone_prompt()
        return pf.lone_prompt_band(current_s, predicted_s, _lone_prompt_excess(results, hw, length),
                                   sum(budget.values()))
    if mark.args[0] in pf.SESSION_BANDED:
        ends = other_sessions(mark.args[0]) if other_sessions is not None else []
        if not ends and other_cards is not None and mark.args[0] != pf.SMALL_ID:  # the 3B's: its own card's only
            ends = other_cards()
        assert ends, f"{quantity}: {mark.args[0]} is banded by another session's run, and none is recorded"
        # one session's ratio against another's: the sessions' own ceilings, GEMM timings and clocks differ
        return runs_band(ends, sum(budget.values()) + OTHER_SESSION_NOISE)
    assert other_runs is not None, f"{quantity}: a finding banded by other runs needs their band"
    return other_runs()


@functools.lru_cache(maxsize=None)
def _lone_prompt_excess(results: Path, hw: str, length: int) -> tuple[float, float]:
    """The lowest and highest excess (s) of pf.LONE_PROMPT_MODELS' lone prefills of `length` tokens on `hw` over
    their own session's current theory: every recorded run whose session holds the calibration it needs (Qwen2.5-7B's
    b=1 step and the ceilings beside it), each at its median. Not widened by each run's repeat scatter: a lone short
    prompt's repeats scatter by up to 81% (the H100's first session), which would push the excess below zero, and
    the envelope over every session is the run-to-run spread itself; the checked run's scatter is in its budget."""
    ends = [x for model in pf.LONE_PROMPT_MODELS for x, _ in _prefill_excess(results, hw, model, length)]
    assert ends, f"{hw}: no lone prefill of {length} tokens of {', '.join(pf.LONE_PROMPT_MODELS)} bands the others'"
    return min(ends), max(ends)


def _prefill_excess(results: Path, hw: str, model: str, length: int) -> list[tuple[float, float]]:
    """(median measured - current theory, current theory), seconds, of every recorded lone prefill of `model` at
    `length` tokens on `hw`, oldest first, skipping a skipped part and a session without the calibration it needs."""
    run = {"kind": "prefill", "model": model, "settings": {"input_len": length}}
    out = []
    for path in recordings.candidates(results, hw, "latency", f"{model}.prefill.l{length}"):
        rec = recordings.load_file(path)
        if _skip_reason(rec) is not None or slow_session_mark(model, rec.recorded_at, "test_prefill", length):
            continue  # a skipped part, or a run of a session above every other (it bands no other run)
        try:
            pred = _current_prefill(results, hw, run, rec)[0].value
        except recordings.MissingRecording:  # a session before the plan timed Qwen2.5-7B's b=1 beside it
            continue
        out.append((rec[lp.PREFILL_QUANTITY].value - pred, pred))
    return out


def _other_runs(results: Path, hw: str, rec: recordings.Recording,
                finding: str | None = None) -> list[recordings.Recording]:
    """Every other recorded session's run of `rec`'s name (its measurement, not a skipped part), never `rec` itself;
    for `finding` pf.SMALL_ID also never a run _sets_apart_from_small names (a session set apart, a stalled run)."""
    runs = [recordings.load_file(path) for path in recordings.candidates(results, hw, "latency", rec.name)]
    return [r for r in runs if r.recorded_at != rec.recorded_at and _skip_reason(r) is None
            and (finding != pf.SMALL_ID or _sets_apart_from_small(r) is None)]


def _sets_apart_from_small(r: recordings.Recording) -> str | None:
    """Why the recorded run `r` bands no check of pf.SMALL_ID (None: it may): its session is one pf.SMALL_SET_APART
    names (the finding that sets it apart), or the run-validity check flags it (STALLED_DECODE_RUNS: a stalled run is
    no band's source, as the slopes through one are none: latency_decode_findings.SLOPE_STALLED_SESSIONS)."""
    why = next((f for stamp, f in pf.SMALL_SET_APART.items() if recordings.same_instant(stamp, r.recorded_at)), None)
    if why is not None:
        return why
    run = r.data["run"]
    if run["kind"] == "decode" and any(f"{m}.decode.b{b}" == r.name and recordings.same_instant(s, r.recorded_at)
                                       for m, s, b in STALLED_DECODE_RUNS):
        return HOST_STALL_FINDING_ID
    return None


def _other_sessions(results: Path, hw: str, rec: recordings.Recording, value: Callable[[recordings.Recording], float],
                    scatter_stat: str) -> Callable[[str], list[tuple[float, float]]]:
    """other(finding): (value(r), r's repeat scatter of `scatter_stat`) for each of _other_runs for that finding."""
    return lambda finding: [(value(r), median_scatter(r, scatter_stat))
                            for r in _other_runs(results, hw, rec, finding)]


def _other_card_names(results: Path, hw: str) -> list[str]:
    """The catalog cards other than `hw` with a results folder."""
    return [c for c in sorted(HARDWARE) if c != hw and (results / c).is_dir()]


def _other_cards(results: Path, hw: str, name: str, ratio_on: Callable[[str, recordings.Recording], float],
                 scatter_stat: str) -> list[tuple[float, float]]:
    """(ratio_on(card, r), r's repeat scatter of `scatter_stat`) of every recorded run `name` on the other cards."""
    out = []
    for card in _other_card_names(results, hw):
        for path in recordings.candidates(results, card, "latency", name):
            r = recordings.load_file(path)
            if _skip_reason(r) is None:
                out.append((ratio_on(card, r), median_scatter(r, scatter_stat)))
    return out


def _decode_other_cards(results: Path, hw: str, run: dict, rec: recordings.Recording,
                        predicted_s: float | None = None) -> Callable[[], list[tuple[float, float]]]:
    """other(): the same step on the other cards, each over its own session's current theory, times this run's current
    theory over `predicted_s` (the checked prediction; None: the current theory itself). Where no card has run the
    batch (the large model's b >= 32 on the H200): the model's ratio at each batch the card's pre-registrations plan
    that it ran on another card, plus the session's calibration-model excess per sequence at this batch
    (pf.per_sequence_band), both ends."""
    def ratio_on(card: str, r: recordings.Recording) -> float:
        b = int(r.data["run"]["settings"]["batch"])
        return r["step_time_s"].value / _current_decode(results, card, {**run, "settings": {"batch": b}}, r).value

    def other() -> list[tuple[float, float]]:
        current = _current_decode(results, hw, run, rec).value
        scale = 1.0 if predicted_s is None else current / predicted_s
        same = _other_cards(results, hw, rec.name, ratio_on, "itl_steady_engine_clock_s")
        if same:
            return [(x * scale, sc) for x, sc in same]
        ran = [e for bb in _planned_batches(results, hw, run["model"])
               for e in _other_cards(results, hw, f"{run['model']}.decode.b{bb}", ratio_on, "itl_steady_engine_clock_s")]
        lo, hi = pf.per_sequence_band(int(run["settings"]["batch"]), current, _calibration_excess(results, hw, rec))
        return [((x + add) * scale, sc) for x, sc in ran for add in (lo - 1, hi - 1)]
    return other


def _calibration_excess(results: Path, hw: str, rec: recordings.Recording,
                        found: Any = None) -> Callable[[int], tuple[float, float]]:
    """excess(b): the calibration model's (Qwen2.5-7B's) measured step at batch b in `rec`'s session less the current
    theory's, per sequence, its repeat scatter taken both ways (seconds): other runs than the one checked. `found`:
    that session's calibration where the caller has it already (_session)."""
    found = found or _session(results, hw, rec)[0]
    qwen = load_model(CALIBRATION_MODEL)

    def excess(b: int) -> tuple[float, float]:
        own = recordings.load_beside(results, hw, "latency", f"{CALIBRATION_MODEL}.decode.b{b}", rec)
        s = own.data["run"]["settings"]
        pred = lat.decode_step_time(qwen, found.ceilings, found.calib, b, s["input_len"] + s["output_len"] / 2).value
        meas, scatter = own["step_time_s"].value, median_scatter(own, "itl_steady_engine_clock_s")
        return ((meas * (1 - scatter) - pred) / b, (meas * (1 + scatter) - pred) / b)
    return excess


@pytest.mark.gpu
@pytest.mark.targets()  # replay-only: reads the recordings its pre-registrations name, on any machine
def test_preregistered_decode_step(results, hw, prereg, run, rec, request, reconcile):
    """The step written before the run, against the measured one, on the budget the Llama transfer carries with the
    calibration's session-to-session spread in place of this session's own calibration scatter."""
    pred = _preregistered(prereg, run, lp.DECODE_QUANTITY)
    b = int(run["settings"]["batch"])
    budget = {"repeat_scatter": median_scatter(rec, "itl_steady_engine_clock_s"),
              "calibration_spread": _calibration_spread(results, hw, pred.value),
              "card_spread": transfer_card_spread(b, rec)}
    band = _band(request, hw, "preregistered_decode_step", rec["step_time_s"].value / pred.value, budget,
                 lambda: pf.per_sequence_band(b, pred.value, _calibration_excess(results, hw, rec)),
                 _other_sessions(results, hw, rec, lambda r: r["step_time_s"].value / pred.value,
                                 "itl_steady_engine_clock_s"),
                 other_cards=_decode_other_cards(results, hw, run, rec, pred.value))
    reconcile("preregistered_decode_step", pred, rec["step_time_s"], budget=budget, model=run["model"],
              finding_band=band,
              why="measured noise only: the run's repeat scatter, how far a session's calibration lies from the "
                  "median session's, and the card-to-card spread of Llama's transfer (the only measured one)")


@pytest.mark.gpu
@pytest.mark.targets()  # replay-only: reads the recordings its pre-registrations name, on any machine
def test_current_theory_decode_step(results, hw, prereg, run, rec, request, reconcile):
    """The same run against the current theory with the calibration of the session that measured it (its Qwen2.5-7B
    b=1 residual and ceilings): a pre-registered miss stays visible above, a theory fixed since shows here."""
    found, qwen_b1 = _session(results, hw, rec)
    b = int(run["settings"]["batch"])
    pred = _current_decode(results, hw, run, rec, found)
    share = found.calib.step_overhead_s / pred.value  # the part of the step Qwen's b=1 fit point sets
    budget = {"repeat_scatter": median_scatter(rec, "itl_steady_engine_clock_s"),
              "calibration_spread": share * median_scatter(qwen_b1, "itl_steady_engine_clock_s"),
              "card_spread": transfer_card_spread(b, rec)}
    band = _band(request, hw, "decode_step_preregistered_model", rec["step_time_s"].value / pred.value, budget,
                 lambda: pf.per_sequence_band(b, pred.value, _calibration_excess(results, hw, rec, found)),
                 _other_sessions(results, hw, rec,  # each other session's run against its own session's theory
                                 lambda r: r["step_time_s"].value / _current_decode(results, hw, run, r).value,
                                 "itl_steady_engine_clock_s"),
                 other_cards=_decode_other_cards(results, hw, run, rec))
    reconcile("decode_step_preregistered_model", pred, rec["step_time_s"], budget=budget, model=run["model"],
              finding_band=band,
              why="measured noise only: the run's repeat scatter, its session's b=1 fit point's scatter over the "
                  "share of the step it sets, and the card-to-card spread of Llama's transfer (the only measured one)")


def _current_decode(results: Path, hw: str, run: dict, rec: recordings.Recording, found: Any = None) -> Prediction:
    """The current theory's step for `run`, with the calibration of the session that measured `rec`."""
    found = found or _session(results, hw, rec)[0]
    s = rec.data["run"]["settings"]
    return lat.decode_step_time(load_model(run["model"]), found.ceilings, found.calib, int(run["settings"]["batch"]),
                                s["input_len"] + s["output_len"] / 2)


def _current_prefill(results: Path, hw: str, run: dict, rec: recordings.Recording,
                     found: Any = None) -> tuple[Prediction, Any, recordings.Recording]:
    """The current theory's lone prefill for `run`, with the calibration of the session that measured `rec` and eta
    from that session's GEMM timings at the model's own linear shapes; with the calibration and that session's
    ceilings recording."""
    found = found or _session(results, hw, rec)[0]
    model = load_model(run["model"])
    ceil = recordings.load_beside(results, hw, "ceilings", "ceilings", rec)
    calib = cal.with_gemm_efficiency(found.calib, model, cal.gemm_seconds(ceil.measurements), found.ceilings.peak)
    n = int(run["settings"]["input_len"])
    return lat.prefill_time(model, found.ceilings, calib, n, lp.MAX_NUM_BATCHED_TOKENS), calib, ceil


@functools.lru_cache(maxsize=None)
def _peak_spread(results: Path, hw: str) -> float:
    """How far a session's bf16 matmul ceiling lies from the median session's: the largest distance over the
    recorded calibration sessions (their ceilings), relative."""
    peaks = [recordings.load_beside(results, hw, "ceilings", "ceilings", b1)["matmul_bf16.value"].value
             for _, _, b1 in b1_residuals(results, get_hardware(hw))]
    mid = statistics.median(peaks)
    return max(abs(x / mid - 1) for x in peaks)


@pytest.mark.gpu
@pytest.mark.targets()  # replay-only: reads the recordings its pre-registrations name, on any machine
def test_preregistered_prefill(results, hw, prereg, run, rec, request, reconcile):
    """A lone prefill written before the run (compute-bound above ~180 tokens: eta x peak, Qwen2.5-7B's eta at the
    step's token count from the median session's GEMM timings), against the measured engine prefill."""
    pred = _preregistered(prereg, run, lp.PREFILL_QUANTITY)
    budget = {"repeat_scatter": median_scatter(rec, "engine_prefill_s"),
              "calibration_spread": _calibration_spread(results, hw, pred.value),
              "peak_spread": _peak_spread(results, hw)}
    band = _band(request, hw, "preregistered_prefill", rec[lp.PREFILL_QUANTITY].value / pred.value, budget,
                 other_sessions=_other_sessions(results, hw, rec, lambda r: r[lp.PREFILL_QUANTITY].value / pred.value,
                                                "engine_prefill_s"),
                 lone_prompt=lambda: (_current_prefill(results, hw, run, rec)[0].value, pred.value, results,
                                      int(run["settings"]["input_len"])),
                 other_cards=_prefill_other_cards(results, hw, run, rec, pred.value))
    reconcile("preregistered_prefill", pred, rec[lp.PREFILL_QUANTITY], budget=budget, model=run["model"],
              finding_band=band,
              why="measured noise only: the run's repeat scatter, how far a session's overhead and bf16 matmul "
                  "ceiling lie from the median session's the pre-registration used")


@pytest.mark.gpu
@pytest.mark.targets()  # replay-only: reads the recordings its pre-registrations name, on any machine
def test_current_theory_prefill(results, hw, prereg, run, rec, request, reconcile):
    """The same prefill against the current theory with its session's calibration and eta from that session's GEMM
    timings at this model's own linear shapes (the latency plan times them for every model it runs)."""
    found, qwen_b1 = _session(results, hw, rec)
    pred, calib, ceil = _current_prefill(results, hw, run, rec, found)
    budget = {"repeat_scatter": median_scatter(rec, "engine_prefill_s"),
              "ceiling_spread": ceiling_scatter(ceil, "matmul_bf16"),
              "calibration_spread": calib.step_overhead_s / pred.value
              * median_scatter(qwen_b1, "itl_steady_engine_clock_s")}
    band = _band(request, hw, "prefill_preregistered_model", rec[lp.PREFILL_QUANTITY].value / pred.value, budget,
                 other_sessions=_other_sessions(  # each other session's run against its own session's theory
                     results, hw, rec, lambda r: r[lp.PREFILL_QUANTITY].value / _current_prefill(results, hw, run, r)[0].value
                     * _session_shift(results, hw, rec, r), "engine_prefill_s"),
                 lone_prompt=lambda: (pred.value, pred.value, results, int(run["settings"]["input_len"])),
                 other_cards=_prefill_other_cards(results, hw, run, rec, pred.value))
    reconcile("prefill_preregistered_model", pred, rec[lp.PREFILL_QUANTITY], budget=budget, model=run["model"],
              finding_band=band,
              why="measured noise only: the run's repeat scatter, its session's matmul ceiling scatter, and its b=1 "
                  "fit point's scatter over the share of the prefill the overhead sets")


def _calibration_prefill_ratio(results: Path, hw: str, rec: recordings.Recording) -> float:
    """The calibration model's (Qwen2.5-7B's) lone prefill of `rec`'s length in `rec`'s session, measured over that
    session's current theory."""
    own = recordings.load_beside(results, hw, "latency", f"{CALIBRATION_MODEL}.prefill.l{int(rec.data['run']['settings']['input_len'])}", rec)
    run = {"kind": "prefill", "model": CALIBRATION_MODEL, "settings": own.data["run"]["settings"]}
    return own[lp.PREFILL_QUANTITY].value / _current_prefill(results, hw, run, own)[0].value


def _session_shift(results: Path, hw: str, rec: recordings.Recording, other: recordings.Recording) -> float:
    """Another session's prefill ratio moved into the checked session's frame: the calibration model's same-length
    ratio here over there. Each session's current theory takes its eta from its own GEMM timings, which move from
    session to session more than the prefills do (the H200's 08:39 and 09:41 sessions of 2026-12-06, two cards: the
    3B's and the 7B's prefills from 8,192 tokens repeated within 1.6%, their predictions 5-7% apart), and move
    both models' alike (the 3B's ratio over the 7B's: 1.008-1.031 then 1.035-1.037). Not for a pre-registered check:
    its prediction is one number, the same in every session."""
    return _calibration_prefill_ratio(results, hw, rec) / _calibration_prefill_ratio(results, hw, other)


def _prefill_other_cards(results: Path, hw: str, run: dict, rec: recordings.Recording,
                         predicted_s: float) -> Callable[[], list[tuple[float, float]]]:
    """other(): the same lone prefill on the other cards, each over its own session's current theory, times this
    run's current theory over `predicted_s` (the checked prediction)."""
    def other() -> list[tuple[float, float]]:
        scale = _current_prefill(results, hw, run, rec)[0].value / predicted_s
        return [(x * scale, sc) for x, sc in _other_cards(
            results, hw, rec.name,
            lambda card, r: r[lp.PREFILL_QUANTITY].value / _current_prefill(results, card, run, r)[0].value,
            "engine_prefill_s")]
    return other


def test_the_lone_prompt_reason_quotes_the_recorded_excess():
    """LONE_PROMPT_REASON's numbers are the recordings' of the card it quotes (to 0.1 ms): the two models' excess
    spans at 128 and 512 tokens, and each pre-registered model's excess in each session at both lengths, with its
    first session's prediction at 128."""
    hw = pf.LONE_PROMPT_QUOTED_ON
    spans = {n: tuple(round(x * 1e3, 1) for x in _lone_prompt_excess(RESULTS, hw, n)) for n in (128, 512)}
    assert f"{spans[128][0]}-{spans[128][1]} ms at 128 and {spans[512][0]}-{spans[512][1]} ms at 512" \
        in pf.LONE_PROMPT_REASON, spans
    for model, quoted in (("qwen2.5-3b", "the 3B by {} / {} ms at 128 tokens (predicted {} ms) and {} / {} ms at 512"),
                          ("qwen2.5-32b", "the 32B by {} / {} ms at 128 (predicted {} ms) and {} / {} ms at 512")):
        at = {n: [(round(x * 1e3, 1), round(p * 1e3, 1)) for x, p in _prefill_excess(RESULTS, hw, model, n)]
              for n in (128, 512)}
        numbers = (*(x for x, _ in at[128]), at[128][0][1], *(x for x, _ in at[512]))
        assert quoted.format(*numbers) in pf.LONE_PROMPT_REASON, (model, at)


def test_a_skipped_preregistered_run_is_one_its_engines_pool_could_not_hold():
    """A pre-registered decode the device program skipped (recorded with no measurement, its reason "pool: ...") is
    one whose sequences the same session's engine pool could not hold at once (latency_fit.decode_pool_skip on the
    engine's reported pool), never a run lost or dropped for time; every such recording says so."""
    from pytest_anatomy.latency_fit import decode_pool_skip

    for hw, p in _latency_preregistrations():
        for name, run in sorted(p.doc["runs"].items()):
            rec = _recorded(RESULTS, hw, name, p.committed_at, skipped=True) if run["kind"] == "decode" else None
            if rec is None:
                continue
            why = _skip_reason(rec)
            assert why is not None and why.startswith("pool: "), (name, why)
            engine = recordings.load_beside(RESULTS, hw, "latency", f"{run['model']}.engine", rec)
            pool = int(engine["resolved.kv_cache_tokens"].value)
            assert decode_pool_skip(int(run["settings"]["batch"]), pool) is not None, (hw, name, pool)


def _same_session(a: recordings.Recording, c: recordings.Recording) -> bool:
    """One device batch (one stamp) or one live plan run (one session key), as recordings.load_beside reads it."""
    key = recordings.session_key(a)
    return a.recorded_at == c.recorded_at or (key is not None and key == recordings.session_key(c))


def _pairs(results: Path) -> list[Any]:
    cases = []
    for hw, p in _latency_preregistrations(results):
        runs = _decode_runs(p)
        models = sorted(runs)
        for i, a in enumerate(models):
            for c in models[i + 1:]:
                for b in sorted(set(runs[a]) & set(runs[c])):
                    ra, rc = (_recorded(results, hw, f"{m}.decode.b{b}", p.committed_at) for m in (a, c))
                    if ra is not None and rc is not None and _same_session(ra, rc):
                        cases.append(pytest.param(results, hw, runs[a][b], runs[c][b], ra, rc,
                                                  id=f"{hw}-{a}-vs-{c}-b{b}", marks=pf.pair_marks(hw, (a, c))))
    return cases or [pytest.param(None, None, None, None, None, None, marks=pytest.mark.skip(
        reason="no pre-registered pair of models recorded in one session yet (planned: docs/RECORDING.md)"))]


def _planned_batches(results: Path, hw: str, model: str) -> list[int]:
    return sorted({b for card, p in _latency_preregistrations(results) if card == hw
                   for b in _decode_runs(p).get(model, {})})


def _model_band(results: Path, hw: str, run: dict, rec: recordings.Recording) -> tuple[float, float]:
    """The band of one model's step over its current theory from other runs (unwidened): the large model's other
    cards (_decode_other_cards), any other's the session's calibration-model excess per sequence."""
    if (hw, run["model"]) in pf.LARGE:
        ends = [x for x, _ in _decode_other_cards(results, hw, run, rec)()]
        return min(ends), max(ends)
    return pf.per_sequence_band(int(run["settings"]["batch"]), _current_decode(results, hw, run, rec).value,
                                _calibration_excess(results, hw, rec))


def _other_card_pairs(results: Path, hw: str, a: tuple[dict, recordings.Recording, float],
                      c: tuple[dict, recordings.Recording, float]) -> list[tuple[float, float]]:
    """The pair on the other cards (each model over its own session's current theory), in this pair's frame (each
    model's current theory over its pre-registered value here); where no card ran both at this batch, the ratio of
    the two models' own bands (_model_band), both ends."""
    (run_a, rec_a, pa), (run_c, rec_c, pc) = a, c
    frame = (_current_decode(results, hw, run_a, rec_a).value / pa) / (_current_decode(results, hw, run_c, rec_c).value / pc)
    ends = []
    for card in _other_card_names(results, hw):
        for path in recordings.candidates(results, card, "latency", rec_a.name):
            ra = recordings.load_file(path)
            try:
                rc = recordings.load_beside(results, card, "latency", rec_c.name, ra)
            except recordings.MissingRecording:
                continue
            if not _same_session(ra, rc) or _skip_reason(ra) is not None or _skip_reason(rc) is not None:
                continue
            qa, qc = (r["step_time_s"].value / _current_decode(results, card, run, r).value
                      for run, r in ((run_a, ra), (run_c, rc)))
            ends.append((qa / qc * frame, median_scatter(ra, "itl_steady_engine_clock_s")
                         + median_scatter(rc, "itl_steady_engine_clock_s")))
    if ends:
        return ends
    (alo, ahi), (clo, chi) = _model_band(results, hw, run_a, rec_a), _model_band(results, hw, run_c, rec_c)
    return [(alo / chi * frame, 0.0), (ahi / clo * frame, 0.0)]


@pytest.mark.gpu
@pytest.mark.targets()  # replay-only: reads the recordings its pre-registrations name, on any machine
def test_preregistered_pair_moves_together(results, hw, run_a, run_c, rec_a, rec_c, request, reconcile):
    """Two pre-registered models measured in one session: their ratios measured / pre-registered agree, because the
    session's ceilings and calibration are common to both and the theory's terms scale with each model's bytes.
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
    spread = _calibration_spread(results, hw, 1.0) * abs(1 / pa - 1 / pc)  # one overhead error, two different steps
    b = int(run_a["settings"]["batch"])
    budget = {"repeat_scatter": median_scatter(rec_a, "itl_steady_engine_clock_s")
              + median_scatter(rec_c, "itl_steady_engine_clock_s"), "calibration_spread": spread,
              "card_spread": transfer_card_spread(b, rec_a)}

    def other_pairs(finding: str) -> list[tuple[float, float]]:  # the pair in every other session that ran both models
        ends = []
        for ra in _other_runs(results, hw, rec_a, finding):
            rc = recordings.load_beside(results, hw, "latency", rec_c.name, ra)
            if not _same_session(ra, rc) or _skip_reason(rc) is not None:
                continue
            ends.append(((ra["step_time_s"].value / pa) / (rc["step_time_s"].value / pc),
                         median_scatter(ra, "itl_steady_engine_clock_s") + median_scatter(rc, "itl_steady_engine_clock_s")))
        return ends
    band = _band(request, hw, "preregistered_pair_ratio", ratio, budget, other_sessions=other_pairs,
                 other_cards=lambda: _other_card_pairs(results, hw, (run_a, rec_a, pa), (run_c, rec_c, pc)))
    reconcile("preregistered_pair_ratio", pred, measured, budget=budget, model=f"{run_a['model']}/{run_c['model']}",
              finding_band=band,
              why="measured noise only: both runs' repeat scatter, the calibration's session spread acting on two "
                  "different step times, and the card-to-card spread of a same-session transfer (Llama's over Qwen's "
                  "is such a pair, and moves from card to card); the session's ceilings are common to both")
