"""The H200 Qwen2.5-3B checks of h200-3b-beyond-the-other-models-excess (latency_prereg_findings.SMALL_ID): which of
them the other recorded sessions band, from which runs (never 2026-12-06 09:41's, never a stalled run), and the numbers
its reason quotes for the third session. Split from test_latency_preregistered.py, whose check functions these run."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest
import latency_prereg_findings as pf
import test_latency_preregistered as tlp
from latency_decode_findings import STALLED_DECODE_RUNS
from latency_prereg_bands import other_session_runs, sets_apart_from_small
from latency_prereg_runs import RESULTS, current_decode, preregistered_cases

from pytest_anatomy import latency_prereg as lp
from pytest_anatomy import recordings
from pytest_anatomy.cli_calibration import CALIBRATION_MODEL
from pytest_anatomy.measure import Measurement
from pytest_anatomy.theory.prediction import Prediction

# --- the H200 3B's checks (pf.SMALL_ID): which the other sessions band, and from what -------------------------------
_SMALL_CHECKS = {"decode": (tlp.test_preregistered_decode_step, tlp.test_current_theory_decode_step),
                 "prefill": (tlp.test_preregistered_prefill, tlp.test_current_theory_prefill)}
_SMALL_QUANTITY = {tlp.test_preregistered_decode_step: "preregistered_decode_step",
                   tlp.test_current_theory_decode_step: "decode_step_preregistered_model",
                   tlp.test_preregistered_prefill: "preregistered_prefill",
                   tlp.test_current_theory_prefill: "prefill_preregistered_model"}


class _Node:
    def __init__(self, marks: list[Any]) -> None:
        self.marks = marks

    def iter_markers(self, name: str) -> list[Any]:
        return [m for m in self.marks if m.name == name]


class _Request:
    def __init__(self, marks: list[Any]) -> None:
        self.node = _Node(marks)


def _small_cases() -> list[tuple[str, Any, int, Any]]:
    """(kind, the pytest.param of preregistered_cases, its batch or length, the check function) of every SMALL_ID check."""
    out = []
    for kind, fns in _SMALL_CHECKS.items():
        for case in preregistered_cases(RESULTS, kind):
            _, hw, _, run, _ = case.values
            if hw is None or (hw, run["model"]) != pf.SMALL:
                continue
            n = int(run["settings"]["batch" if kind == "decode" else "input_len"])
            out.extend((kind, case, n, fn) for fn in fns
                       if any(m.mark.args[0] == pf.SMALL_ID and m.mark.kwargs["quantity"] == _SMALL_QUANTITY[fn]
                              for m in case.marks))
    return out


def _small_verdict(case: Any, fn: Any, band_from: str | None = None,
                   scale: float = 1.0) -> tuple[float, tuple[float, float]]:
    """(the checked ratio, its finding band) as `fn` computes them for `case`: its SMALL_ID mark's band_from, or
    `band_from` in its place; with the checked run's own measured value times `scale`."""
    results, hw, prereg, run, rec = case.values
    marks = [m.mark for m in case.marks]
    if band_from is not None:
        # the same mark with another band_from (a stand-in with the mark's fields: no new finding is defined here)
        marks = [SimpleNamespace(name=m.name, args=m.args, kwargs={**m.kwargs, "band_from": band_from})
                 if m.args[0] == pf.SMALL_ID else m for m in marks]
    if scale != 1.0:  # the whole run moved: its value, and its statistics with it (its relative scatter unmoved)
        q = lp.DECODE_QUANTITY if run["kind"] == "decode" else lp.PREFILL_QUANTITY.rsplit(".", 1)[0]
        rec = dataclasses.replace(rec, measurements={k: {**m, "value": m["value"] * scale}
                                                     if k == q or k.startswith(f"{q}.") and not k.endswith(".n") else m
                                                     for k, m in rec.measurements.items()})
    got: dict[str, Any] = {}

    def reconcile(name: str, pred: Prediction, measured: Measurement, **kw: Any) -> None:
        got.update(ratio=measured.value / pred.value, band=kw["finding_band"])
    fn(results, hw, prereg, run, rec, _Request(marks), reconcile)
    return got["ratio"], got["band"]


# the H200 3B sessions after the two of 2026-12-06: the third (05:34) and the fourth (17:25)
_LATER = ("2026-12-07T05:34:54Z", "2026-12-07T17:25:29Z")


def test_the_3b_band_is_the_other_sessions():
    """Each check of pf.SMALL_ID (the H200 3B's, the 2026-12-06 08:39 session's runs) is banded by the same run in the
    other sessions (band_from="other-runs") exactly where pf.SMALL_SESSION_BANDED_* says: there its band comes from
    the 2026-12-07 05:34 and 17:25 runs (never the 09:41 session's, pf.SMALL_SET_APART, nor a run the validity check
    flags: 05:34's b = 8 and 32), moving the checked run's own value moves it not at all, and it holds the checked
    run. A check kept on its checked run is one whose other sessions' band does not hold it (the prompts: neither later
    session repeated them)."""
    cases = _small_cases()
    assert len(cases) == 9, [(k, n, f.__name__) for k, _, n, f in cases]
    for kind, case, n, fn in cases:
        _, hw, _, _, rec = case.values
        mark = next(m.mark for m in case.marks if m.mark.args[0] == pf.SMALL_ID
                    and m.mark.kwargs["quantity"] == _SMALL_QUANTITY[fn])
        banded = n in (pf.SMALL_SESSION_BANDED_STEPS if kind == "decode" else pf.SMALL_SESSION_BANDED_PROMPTS)
        assert mark.kwargs["band_from"] == ("other-runs" if banded else "checked-run"), (fn.__name__, n)
        assert recordings.same_instant("2026-12-06T08:39:30Z", rec.recorded_at), rec.recorded_at
        every = {r.recorded_at for r in other_session_runs(RESULTS, hw, rec)}
        kept = {r.recorded_at for r in other_session_runs(RESULTS, hw, rec, pf.SMALL_ID)}
        apart = {r.recorded_at: sets_apart_from_small(r) for r in other_session_runs(RESULTS, hw, rec)}
        assert {s for s, why in apart.items() if why == pf.SMALL_SET_APART["2026-12-06T09:41:35Z"]} \
            == {"2026-12-06T09:41:35Z"} and kept <= set(_LATER) <= every, (fn.__name__, n, apart)
        assert kept == {s for s in _LATER if not (kind == "decode" and ("qwen2.5-3b", s, n) in STALLED_DECODE_RUNS)}, (
            fn.__name__, n, kept)
        if not kept:
            assert not banded, (fn.__name__, n)
            continue
        ratio, band = _small_verdict(case, fn, "other-runs")
        moved = _small_verdict(case, fn, "other-runs", scale=1.25)
        assert moved[1] == band and moved[0] == pytest.approx(ratio * 1.25), (fn.__name__, n, band, moved)
        assert (band[0] <= ratio <= band[1]) == banded, (fn.__name__, n, ratio, band)
        if banded:
            assert _small_verdict(case, fn) == (ratio, band)
        own = _small_verdict(case, fn, "checked-run", scale=1.25)[1]  # not so a band read off the checked run
        assert own != _small_verdict(case, fn, "checked-run")[1], (fn.__name__, n, own)


def test_the_3b_set_apart_session_is_the_slow_one():
    """pf.SMALL_SET_APART names the 09:41 session by the finding whose session it is (its own Qwen2.5-7B ran above
    every other H200 session's), and that session's 3B recordings exist: the exclusion is of a recorded session."""
    from latency_run_validity_findings import SLOW_SESSION_ID, SLOW_SESSION_RUNS

    for stamp, why in pf.SMALL_SET_APART.items():
        assert why == SLOW_SESSION_ID and (CALIBRATION_MODEL, stamp) in SLOW_SESSION_RUNS
        assert any(recordings.same_instant(stamp, recordings.load_file(p).recorded_at)
                   for p in recordings.candidates(RESULTS, pf.SMALL[0], "latency", "qwen2.5-3b.decode.b16"))


def test_the_3b_reason_quotes_the_later_sessions():
    """pf.SMALL_REASON's numbers on the third and fourth H200 sessions (2026-12-07 05:34 and 17:25) are the
    recordings': each one's Qwen2.5-7B b=128 step, its 3B steps at b = 8, 16, 32 over its own session's current
    theory, every session's prompt medians, and the bands the checks compute from them (with the 08:39 ratios they
    hold or do not)."""
    hw, model = pf.SMALL[0], pf.SMALL[1]

    def at(name: str, stamp: str) -> recordings.Recording:
        return next(r for r in map(recordings.load_file, recordings.candidates(RESULTS, hw, "latency", name))
                    if recordings.same_instant(stamp, r.recorded_at))

    def steps(stamp: str) -> list[float]:
        out = []
        for b in pf.SMALL_STEP_BATCHES:
            r = at(f"{model}.decode.b{b}", stamp)
            out.append(r["step_time_s"].value / current_decode(RESULTS, hw, {"model": model, "settings": {"batch": b}},
                                                               r).value)
        return out
    prompts = {s: [at(f"{model}.prefill.l{n}", s)[lp.PREFILL_QUANTITY].value * 1e3 for n in pf.SMALL_PROMPT_LENGTHS]
               for s in (*_LATER, "2026-12-06T08:39:30Z")}
    got = {(n, fn): _small_verdict(case, fn, "other-runs") for kind, case, n, fn in _small_cases()
           if kind == "prefill" or n in pf.SMALL_SESSION_BANDED_STEPS}

    def band(n: int, fn: Any) -> str:
        lo, hi = got[(n, fn)][1]
        return f"{lo:.2f}-{hi:.2f}x"
    cur, pre = tlp.test_current_theory_decode_step, tlp.test_preregistered_decode_step
    p2048 = (tlp.test_current_theory_prefill, tlp.test_preregistered_prefill)
    quoted = [f"b=128 at {at(f'{CALIBRATION_MODEL}.decode.b128', s)['step_time_s'].value * 1e3:.3f} ms" for s in _LATER]
    quoted += ["b = 8, 16, 32 at {:.3f}, {:.3f}, {:.3f}x".format(*steps(s)) for s in _LATER]
    quoted += [f"b={n}: {band(n, cur)} the current theory and {band(n, pre)} the pre-registration, holding "
               f"{got[(n, cur)][0]:.3f} and {got[(n, pre)][0]:.3f}" for n in pf.SMALL_STEP_BATCHES]
    quoted += ["took {:.1f} and {:.1f} ms".format(*prompts[s]) for s in _LATER]
    quoted += ["08:39 session's {:.1f} and {:.1f}".format(*prompts["2026-12-06T08:39:30Z"]),
               f"Their band ({band(512, tlp.test_current_theory_prefill)} the current theory at 512 tokens, "
               f"{band(2048, p2048[0])} at 2,048 and {band(2048, p2048[1])} the pre-registration) does not hold "
               f"{got[(512, tlp.test_current_theory_prefill)][0]:.2f}, {got[(2048, p2048[0])][0]:.2f} and "
               f"{got[(2048, p2048[1])][0]:.2f}x"]
    missing = [q for q in quoted if q not in " ".join(pf.SMALL_REASON.split())]
    assert not missing, "\n".join(missing)
