"""The noise terms and finding bands of test_latency_preregistered.py's checks, computed from other runs than the one
checked: how far a session's calibration and bf16 matmul ceiling lie from the median session's
(calibration_spread, peak_spread), the band of the finding covering a check (finding_band) and where it comes from:
the same run in the card's other sessions (other_session_runs, other_session_ratios; sets_apart_from_small for the
runs the H200 3B's finding takes none from), the same run on the other cards (decode_other_cards,
prefill_other_cards, other_card_pairs), the calibration model's excess per sequence in the checked session
(calibration_excess), the other models' lone-prompt excess (lone_prompt_excess, prefill_excess), and another
session's prefill moved into the checked session's frame (session_shift). Split out of test_latency_preregistered.py
(over 500 lines); the runs and current theory these read are latency_prereg_runs.py's.
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
from latency_findings_common import OTHER_SESSION_NOISE, runs_band
from latency_decode_findings import HOST_STALL_FINDING_ID, STALLED_DECODE_RUNS
from latency_prereg_runs import current_decode, current_prefill, measuring_session, planned_batches, same_session, \
    skip_reason
from latency_run_validity_findings import slow_session_mark
from latency_setups import median_scatter

from pytest_anatomy import latency_prereg as lp
from pytest_anatomy import recordings
from pytest_anatomy.cli_calibration import CALIBRATION_MODEL, b1_residuals
from pytest_anatomy.specs.hardware import HARDWARE, get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import latency as lat


def calibration_spread(results: Path, hw: str, predicted_s: float) -> float:
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


@functools.lru_cache(maxsize=None)
def peak_spread(results: Path, hw: str) -> float:
    """How far a session's bf16 matmul ceiling lies from the median session's: the largest distance over the
    recorded calibration sessions (their ceilings), relative."""
    peaks = [recordings.load_beside(results, hw, "ceilings", "ceilings", b1)["matmul_bf16.value"].value
             for _, _, b1 in b1_residuals(results, get_hardware(hw))]
    mid = statistics.median(peaks)
    return max(abs(x / mid - 1) for x in peaks)


def finding_band(request: pytest.FixtureRequest, hw: str, quantity: str, ratio: float, budget: dict[str, float],
                 other_runs: Callable[[], tuple[float, float]] | None = None,
                 other_sessions: Callable[[str], list[tuple[float, float]]] | None = None,
                 lone_prompt: Callable[[], tuple[float, float, Path, int]] | None = None,
                 other_cards: Callable[[], list[tuple[float, float]]] | None = None) -> tuple[float, float] | None:
    """The band of the finding covering `quantity` on `hw` (None where none does): read off the checked run (its
    ratio +- its budget) for a checked-run finding; the per-sequence finding's `other_runs()` (latency_prereg_findings);
    for the others the same run's (ratio, repeat scatter) in every other session, `other_sessions(finding)` (the
    runs that finding takes: other_session_runs), each +- its own scatter, this check's budget and one session's noise
    against another's (pf.SESSION_BANDED); a short lone prompt's from the other models' excess at its length
    (`lone_prompt()`: the checked run's current-theory and checked predictions, seconds, the results folder and the
    prompt length; pf.lone_prompt_band). Where the card has no other session of the run, a session-banded finding takes
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
        return pf.lone_prompt_band(current_s, predicted_s, lone_prompt_excess(results, hw, length),
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
def lone_prompt_excess(results: Path, hw: str, length: int) -> tuple[float, float]:
    """The lowest and highest excess (s) of pf.LONE_PROMPT_MODELS' lone prefills of `length` tokens on `hw` over
    their own session's current theory: every recorded run whose session holds the calibration it needs (Qwen2.5-7B's
    b=1 step and the ceilings beside it), each at its median. Not widened by each run's repeat scatter: a lone short
    prompt's repeats scatter by up to 81% (the H100's first session), which would push the excess below zero, and
    the envelope over every session is the run-to-run spread itself; the checked run's scatter is in its budget."""
    ends = [x for model in pf.LONE_PROMPT_MODELS for x, _ in prefill_excess(results, hw, model, length)]
    assert ends, f"{hw}: no lone prefill of {length} tokens of {', '.join(pf.LONE_PROMPT_MODELS)} bands the others'"
    return min(ends), max(ends)


def prefill_excess(results: Path, hw: str, model: str, length: int) -> list[tuple[float, float]]:
    """(median measured - current theory, current theory), seconds, of every recorded lone prefill of `model` at
    `length` tokens on `hw`, oldest first, skipping a skipped part and a session without the calibration it needs."""
    run = {"kind": "prefill", "model": model, "settings": {"input_len": length}}
    out = []
    for path in recordings.candidates(results, hw, "latency", f"{model}.prefill.l{length}"):
        rec = recordings.load_file(path)
        if skip_reason(rec) is not None or slow_session_mark(model, rec.recorded_at, "test_prefill", length):
            continue  # a skipped part, or a run of a session above every other (it bands no other run)
        try:
            pred = current_prefill(results, hw, run, rec)[0].value
        except recordings.MissingRecording:  # a session before the plan timed Qwen2.5-7B's b=1 beside it
            continue
        out.append((rec[lp.PREFILL_QUANTITY].value - pred, pred))
    return out


def other_session_runs(results: Path, hw: str, rec: recordings.Recording,
                       finding: str | None = None) -> list[recordings.Recording]:
    """Every other recorded session's run of `rec`'s name (its measurement, not a skipped part), never `rec` itself;
    for `finding` pf.SMALL_ID also never a run sets_apart_from_small names (a session set apart, a stalled run)."""
    runs = [recordings.load_file(path) for path in recordings.candidates(results, hw, "latency", rec.name)]
    return [r for r in runs if r.recorded_at != rec.recorded_at and skip_reason(r) is None
            and (finding != pf.SMALL_ID or sets_apart_from_small(r) is None)]


def sets_apart_from_small(r: recordings.Recording) -> str | None:
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


def other_session_ratios(results: Path, hw: str, rec: recordings.Recording,
                         value: Callable[[recordings.Recording], float],
                         scatter_stat: str) -> Callable[[str], list[tuple[float, float]]]:
    """other(finding): (value(r), r's repeat scatter of `scatter_stat`) for each of other_session_runs for that
    finding."""
    return lambda finding: [(value(r), median_scatter(r, scatter_stat))
                            for r in other_session_runs(results, hw, rec, finding)]


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
            if skip_reason(r) is None:
                out.append((ratio_on(card, r), median_scatter(r, scatter_stat)))
    return out


def decode_other_cards(results: Path, hw: str, run: dict, rec: recordings.Recording,
                       predicted_s: float | None = None) -> Callable[[], list[tuple[float, float]]]:
    """other(): the same step on the other cards, each over its own session's current theory, times this run's current
    theory over `predicted_s` (the checked prediction; None: the current theory itself). Where no card has run the
    batch (the large model's b >= 32 on the H200): the model's ratio at each batch the card's pre-registrations plan
    that it ran on another card, plus the session's calibration-model excess per sequence at this batch
    (pf.per_sequence_band), both ends."""
    def ratio_on(card: str, r: recordings.Recording) -> float:
        b = int(r.data["run"]["settings"]["batch"])
        return r["step_time_s"].value / current_decode(results, card, {**run, "settings": {"batch": b}}, r).value

    def other() -> list[tuple[float, float]]:
        current = current_decode(results, hw, run, rec).value
        scale = 1.0 if predicted_s is None else current / predicted_s
        same = _other_cards(results, hw, rec.name, ratio_on, "itl_steady_engine_clock_s")
        if same:
            return [(x * scale, sc) for x, sc in same]
        ran = [e for bb in planned_batches(results, hw, run["model"])
               for e in _other_cards(results, hw, f"{run['model']}.decode.b{bb}", ratio_on,
                                     "itl_steady_engine_clock_s")]
        lo, hi = pf.per_sequence_band(int(run["settings"]["batch"]), current, calibration_excess(results, hw, rec))
        return [((x + add) * scale, sc) for x, sc in ran for add in (lo - 1, hi - 1)]
    return other


def prefill_other_cards(results: Path, hw: str, run: dict, rec: recordings.Recording,
                        predicted_s: float) -> Callable[[], list[tuple[float, float]]]:
    """other(): the same lone prefill on the other cards, each over its own session's current theory, times this
    run's current theory over `predicted_s` (the checked prediction)."""
    def other() -> list[tuple[float, float]]:
        scale = current_prefill(results, hw, run, rec)[0].value / predicted_s
        return [(x * scale, sc) for x, sc in _other_cards(
            results, hw, rec.name,
            lambda card, r: r[lp.PREFILL_QUANTITY].value / current_prefill(results, card, run, r)[0].value,
            "engine_prefill_s")]
    return other


def calibration_excess(results: Path, hw: str, rec: recordings.Recording,
                       found: Any = None) -> Callable[[int], tuple[float, float]]:
    """excess(b): the calibration model's (Qwen2.5-7B's) measured step at batch b in `rec`'s session less the current
    theory's, per sequence, its repeat scatter taken both ways (seconds): other runs than the one checked. `found`:
    that session's calibration where the caller has it already (measuring_session)."""
    found = found or measuring_session(results, hw, rec)[0]
    qwen = load_model(CALIBRATION_MODEL)

    def excess(b: int) -> tuple[float, float]:
        own = recordings.load_beside(results, hw, "latency", f"{CALIBRATION_MODEL}.decode.b{b}", rec)
        s = own.data["run"]["settings"]
        pred = lat.decode_step_time(qwen, found.ceilings, found.calib, b, s["input_len"] + s["output_len"] / 2).value
        meas, scatter = own["step_time_s"].value, median_scatter(own, "itl_steady_engine_clock_s")
        return ((meas * (1 - scatter) - pred) / b, (meas * (1 + scatter) - pred) / b)
    return excess


def _calibration_prefill_ratio(results: Path, hw: str, rec: recordings.Recording) -> float:
    """The calibration model's (Qwen2.5-7B's) lone prefill of `rec`'s length in `rec`'s session, measured over that
    session's current theory."""
    length = int(rec.data["run"]["settings"]["input_len"])
    own = recordings.load_beside(results, hw, "latency", f"{CALIBRATION_MODEL}.prefill.l{length}", rec)
    run = {"kind": "prefill", "model": CALIBRATION_MODEL, "settings": own.data["run"]["settings"]}
    return own[lp.PREFILL_QUANTITY].value / current_prefill(results, hw, run, own)[0].value


def session_shift(results: Path, hw: str, rec: recordings.Recording, other: recordings.Recording) -> float:
    """Another session's prefill ratio moved into the checked session's frame: the calibration model's same-length
    ratio here over there. Each session's current theory takes its eta from its own GEMM timings, which move from
    session to session more than the prefills do (the H200's 08:39 and 09:41 sessions of 2026-12-06, two cards: the
    3B's and the 7B's prefills from 8,192 tokens repeated within 1.6%, their predictions 5-7% apart), and move
    both models' alike (the 3B's ratio over the 7B's: 1.008-1.031 then 1.035-1.037). Not for a pre-registered check:
    its prediction is one number, the same in every session."""
    return _calibration_prefill_ratio(results, hw, rec) / _calibration_prefill_ratio(results, hw, other)


def _model_band(results: Path, hw: str, run: dict, rec: recordings.Recording) -> tuple[float, float]:
    """The band of one model's step over its current theory from other runs (unwidened): the large model's other
    cards (decode_other_cards), any other's the session's calibration-model excess per sequence."""
    if (hw, run["model"]) in pf.LARGE:
        ends = [x for x, _ in decode_other_cards(results, hw, run, rec)()]
        return min(ends), max(ends)
    return pf.per_sequence_band(int(run["settings"]["batch"]), current_decode(results, hw, run, rec).value,
                                calibration_excess(results, hw, rec))


def other_card_pairs(results: Path, hw: str, a: tuple[dict, recordings.Recording, float],
                     c: tuple[dict, recordings.Recording, float]) -> list[tuple[float, float]]:
    """The pair on the other cards (each model over its own session's current theory), in this pair's frame (each
    model's current theory over its pre-registered value here); where no card ran both at this batch, the ratio of
    the two models' own bands (_model_band), both ends."""
    (run_a, rec_a, pa), (run_c, rec_c, pc) = a, c
    frame = ((current_decode(results, hw, run_a, rec_a).value / pa)
             / (current_decode(results, hw, run_c, rec_c).value / pc))
    ends = []
    for card in _other_card_names(results, hw):
        for path in recordings.candidates(results, card, "latency", rec_a.name):
            ra = recordings.load_file(path)
            try:
                rc = recordings.load_beside(results, card, "latency", rec_c.name, ra)
            except recordings.MissingRecording:
                continue
            if not same_session(ra, rc) or skip_reason(ra) is not None or skip_reason(rc) is not None:
                continue
            qa, qc = (r["step_time_s"].value / current_decode(results, card, run, r).value
                      for run, r in ((run_a, ra), (run_c, rc)))
            ends.append((qa / qc * frame, median_scatter(ra, "itl_steady_engine_clock_s")
                         + median_scatter(rc, "itl_steady_engine_clock_s")))
    if ends:
        return ends
    (alo, ahi), (clo, chi) = _model_band(results, hw, run_a, rec_a), _model_band(results, hw, run_c, rec_c)
    return [(alo / chi * frame, 0.0), (ahi / clo * frame, 0.0)]
