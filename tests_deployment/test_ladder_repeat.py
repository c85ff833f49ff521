"""Every number ladder_repeat.py quotes, recomputed: both runs' gains from the recordings and their resampled intervals,
the engine-clock numbers from the kept raw batches (ladder_raw's methods), the n-gram predictions from each run's own
counters; that the tables hold exactly the misses, that every recorded run of a rung is one the replay judges, and that
the bands come from the other runs only (moving a run's own numbers moves no other-runs band)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import cause_findings as cf
import ladder_chat as lc
import ladder_findings as lf
import ladder_llama as ll
import ladder_llama_chat as llc
import ladder_raw as lr
import ladder_noise as ln
import ladder_repeat as lrp
from pytest_anatomy import recordings
from pytest_anatomy.measure.ladder_stats import ladder_metrics
from pytest_anatomy.specs.workload_file import Slo
from pytest_anatomy.theory.deployment import gain_band, gain_within
from test_ladder_replay import PRE, _marks, _row, gain_of, predicted_gains, run_batches

HERE = Path(__file__).parent
RESULTS = HERE.parent / "results"
USERS = {"chat": lc.USERS, "rag": 16}  # each workload's closed-loop concurrency (workloads/*.json)
KEYS = list(lrp.RUNS)
KEY_IDS = [f"{s}-{w}-{m}" for m, w, s in KEYS]


def _slo(workload: str) -> Slo:
    slo = json.loads((HERE / "workloads" / f"{workload}.json").read_text())["slo"]
    return Slo(slo["ttft_ms"], slo["itl_ms"])


def _name(key: tuple[str, str, str], parent: bool = False) -> str:
    model, workload, step = key
    return f"{model}.{workload}.{lrp.PARENT[step] if parent else step}"


def _recs(key: tuple[str, str, str], run: int) -> tuple[Any, Any]:
    """Run `run` of the rung and the parent run its gains divide by, from the recordings (by stamp)."""
    return (recordings.load_latest(RESULTS, lf.MEASURED_ON, "deployment", _name(key), lrp.RUNS[key][run - 1]),
            recordings.load_latest(RESULTS, lf.MEASURED_ON, "deployment", _name(key, True),
                                   lrp.PARENT_RUNS[key][run - 1]))


def _raws(key: tuple[str, str, str], run: int) -> tuple[dict[str, Any], dict[str, Any]]:
    return (lr.raw_run(lrp.RUNS[key][run - 1], _name(key)), lr.raw_run(lrp.PARENT_RUNS[key][run - 1], _name(key, True)))


def _predicted(key: tuple[str, str, str], rec: Any) -> dict[str, float | None]:
    return predicted_gains(*key, rec)


@pytest.mark.parametrize("key", KEYS, ids=KEY_IDS)
def test_repeat_gains_are_the_recorded_ones(key: tuple[str, str, str]) -> None:
    """Both runs' gains (the recordings', as the replay reconciles them) and their request-resampled intervals (the
    kept raw runs, ladder_raw.resampled_gain_interval), each over the parent run PARENT_RUNS names."""
    metrics = [metric for (*k, metric) in lrp.GAINS if tuple(k) == key]
    for run in range(1, len(lrp.RUNS[key]) + 1):
        rec, parent = _recs(key, run)
        raw, raw_parent = _raws(key, run)
        for metric in metrics:
            g, lo, hi = lrp.GAINS[(*key, metric)][run - 1]
            assert round(gain_of(rec, parent, metric) or 0, 4) == g, (run, metric)
            got = lr.resampled_gain_interval(raw, raw_parent, metric, _slo(key[1]))
            assert tuple(round(x, 4) for x in got) == (lo, hi), (run, metric)


def test_repeat_gains_are_the_misses_and_the_predictions_each_runs() -> None:
    """GAINS holds exactly the gains outside 20% in either run (no more, no fewer); the n-gram predictions, simulated at
    each run's own measured E and draft share, are NGRAM_PREDICTED for both runs."""
    missed = set()
    for key in KEYS:
        for run in range(1, len(lrp.RUNS[key]) + 1):
            rec, parent = _recs(key, run)
            predicted = _predicted(key, rec)
            if key[2] == "ngram":
                table = lrp.NGRAM_PREDICTED[key[:2]]
                assert {m: round(predicted[m] or 0, 4) for m in table} == table, (key, run)
            for metric, p in predicted.items():
                g = gain_of(rec, parent, metric)
                if p and g and not gain_within(p, g):
                    missed.add((*key, metric))
    assert missed == set(lrp.GAINS)


def test_first_runs_are_the_ladder_tables() -> None:
    """A first run's interval is the one its ladder module quotes, and its gain the module's (the modules read some
    gains off the raw runs, these the recordings: within 5e-4)."""
    tables: dict[tuple[str, str], dict[tuple[str, str], tuple[float, float, float]]] = {
        (lf.MODEL, "chat"): lc.GAINS, (llc.MODEL, "chat"): llc.GAINS,
        (ll.MODEL, "rag"): {k: (g, lo, hi) for k, (g, (lo, hi)) in ll.GAINS.items()},
        (lf.MODEL, "rag"): {k: (lf.MEASURED_GAINS[k], *v) for k, v in lf.GAIN_INTERVALS.items()}}
    compared = 0
    for (model, workload, step, metric), (first, *_) in lrp.GAINS.items():
        quoted = tables[(model, workload)].get((step, metric))
        if quoted is None:  # inside 20% in the first run: no module row
            continue
        assert first[1:] == quoted[1:] and abs(first[0] - quoted[0]) < 5e-4, (model, workload, step, metric)
        compared += 1
    # every first-run miss of a repeated rung (41 before the third start added 4 rungs); the 2026-12-07 runs add no row:
    # rag fp8_kv's first runs and Llama-3.1-8B's chat ngram throughput in run 1 were inside 20% (no module row)
    assert compared == 52


def _engine_value(name: str, run: dict[str, Any], parent: dict[str, Any], workload: str) -> float:
    who, key = (parent, name.removeprefix("parent_")) if name.startswith("parent_") else (run, name)
    reqs, users = who["requests"], USERS[workload]
    if key in ("step_1", "step_n"):
        return round(lr.pure_step_ms(reqs, 1 if key == "step_1" else users), 2)
    if key == "window":
        return round(lr.prompt_window_ms(reqs), 1)
    if key.startswith("burst_"):
        steps, ms = lr.opening_burst(reqs, users)
        return steps if key == "burst_steps" else round(ms)
    if key.startswith("tail_"):
        tail = lr.itl_tail(reqs)
        return tail[{"tail_tokens": "tokens", "tail_one": "one_token", "tail_early": "early"}[key]]
    return round(ladder_metrics(lr.records(who), who["start"], _slo(workload))[key] * 1e3, 2)


@pytest.mark.parametrize("key", KEYS, ids=KEY_IDS)
def test_repeat_engine_numbers_are_the_recorded_ones(key: tuple[str, str, str]) -> None:
    """ENGINE (the numbers WHY quotes), from each run's and its parent's kept raw requests."""
    for run in range(1, len(lrp.RUNS[key]) + 1):
        raw, raw_parent = _raws(key, run)
        got = {name: _engine_value(name, raw, raw_parent, key[1]) for name in lrp.ENGINE[key][run - 1]}
        assert got == lrp.ENGINE[key][run - 1], run


@pytest.mark.parametrize("key", [k for k in KEYS if k[2] == "ngram"], ids=lambda k: f"{k[1]}-{k[0]}")
def test_ngram_repeats_drafted_as_their_first_runs(key: tuple[str, str, str]) -> None:
    """'Run 2 drafted exactly as run 1' (and every later run): the same drafts and accepted tokens per position, and the
    same stream."""
    runs = range(1, len(lrp.RUNS[key]) + 1)
    counters = [{k: v for k, v in _recs(key, run)[0].measurements.items() if k.startswith("counters.vllm:spec_decode")}
                for run in runs]
    assert counters[0] and all(c == counters[0] for c in counters[1:])
    streams = [[r["chunk_tokens"] for r in sorted(_raws(key, run)[0]["requests"], key=lambda r: r["id"])]
               for run in runs]
    assert all(s == streams[0] for s in streams[1:])


def test_every_recorded_run_is_judged() -> None:
    """Every recorded run of every ladder rung on the card is one the replay judges (run_batches: one case per run),
    and each gain's parent follows the rule: the parent's run of the same batch where that batch ran one, else the
    parent's first run. Runs recorded after a rung's judged ones (a device batch imported, its cases and findings not
    yet written into ladder_repeat's tables, as f27a9b6a did for the third start) are pending: the test skips naming
    each, so a batch that comes back late in a session is committed that session and judged in the next; any other
    disagreement (a judged run not recorded, a recording older than the judged ones) fails."""
    pending = []
    for model, ladders in PRE["ladders"].items():
        for workload, rows in ladders.items():
            for row in rows:
                name = f"{model}.{workload}.{row['step']}"
                stamps = tuple(p.name.split("@")[1].removesuffix(".json")
                               for p in recordings.candidates(RESULTS, lf.MEASURED_ON, "deployment", name))
                judged = run_batches(model, workload, row["step"])
                assert stamps[:len(judged)] == judged, name
                pending += [f"{name}@{stamp}" for stamp in stamps[len(judged):]]
    for key, batches in lrp.RUNS.items():
        parent = _row(*key)["parent"]
        assert parent == lrp.PARENT[key[2]]
        for run, batch in enumerate(batches, 1):
            assert lrp.PARENT_RUNS[key][run - 1] == lrp.parent_batch(batch, run_batches(key[0], key[1], parent))[0], key
    if pending:
        pytest.skip(f"{len(pending)} recorded ladder run(s) await their cases and findings (ladder_repeat's RUNS, "
                    f"PARENT_RUNS, GAINS, ENGINE, WHY; ladder_noise's GAINS; as in f27a9b6a): {', '.join(pending)}")


# the opening-burst findings by the side of the TTFT p99 gain they explain (True: above its prediction)
BURST_BY_SIDE = {False: lf.NGRAM_BURST_SHORTER_ID, True: lf.NGRAM_BURST_LONGER_ID}


@pytest.mark.parametrize("key", KEYS, ids=KEY_IDS)
def test_a_repeats_findings_are_its_misses_under_its_first_runs_ids(key: tuple[str, str, str]) -> None:
    """Each run's case carries one finding per gain outside 20% and its own interval; where the first run missed too,
    under the same finding, unless the runs missed on opposite sides for causes split apart (BURST_BY_SIDE), or a
    later run missed on the side its rung's finding does not claim (ladder_repeat.SLOWER: its own finding); every
    band is the first run's explanation band where that finding is banded so and holds the run, else other-runs
    exactly where every other run's band holds it."""
    predicted = _row(*key)["gain"] or {}
    noise = (ln.ABOVE_ID, ln.BELOW_ID)  # inside 20%, outside the budget: ladder_noise.py's, test_ladder_noise.py checks
    runs = range(1, len(lrp.RUNS[key]) + 1)
    marks = {run: {m.kwargs["quantity"]: m for m in _marks(*key, run) if m.args[0] not in noise} for run in runs}
    for (*k, metric), gains in lrp.GAINS.items():
        if tuple(k) != key:
            continue
        p = lrp.predicted_of(*key, metric, predicted)
        assert p is not None
        quantity = f"{key[1]}.{key[2]}.{metric}.gain"
        explained = lrp._explained_band(*key, metric)
        for run, g in zip(runs, gains):
            assert (quantity in marks[run]) == lrp.finds(*key, metric, run, p), (run, metric)
            if quantity not in marks[run]:
                continue
            got = (marks[run][quantity].kwargs["expected"], marks[run][quantity].kwargs["band_from"])
            if got[1] == "explanation":
                assert explained is not None and got[0] == explained[0] and got[0][0] <= g[0] / p <= got[0][1]
                assert marks[run][quantity].kwargs["strict"]
                continue
            band, band_from, _ = lrp.banded(*key, metric, run, p)
            assert got == (band, band_from), (run, metric)
            assert marks[run][quantity].kwargs["strict"] == lrp.strict(band, band_from), (run, metric)
            assert (band_from == "other-runs") == (band != (round(g[1] / p, 4), round(g[2] / p, 4)))
        ids = {marks[run][quantity].args[0] for run in runs if quantity in marks[run]}
        if quantity in marks[1] and ids == set(BURST_BY_SIDE.values()):
            # split by cause, not one finding on both sides: Qwen2.5-7B's chat n-gram TTFT p99 ran below its
            # prediction in run 1 (its opening burst shorter than the parent's) and above it in run 3 (longer);
            # each run's finding is the one of its own side, each banded by its own interval (no other run holds it)
            for run, g in zip(runs, gains):
                if quantity in marks[run]:
                    assert marks[run][quantity].args[0] == BURST_BY_SIDE[g[0] / p > 1], (run, metric)
            continue
        # a run that missed on the side its rung's finding does not claim is under that side's own finding
        sides = {run: lrp.runs_slower(metric, g[0] / p) for run, g in zip(runs, gains) if quantity in marks[run]}
        mechanism = lrp.repeat_id(*key, metric)
        for run, slower in sides.items():
            if run > 1 and lrp.SLOWER.get(mechanism, slower) != slower:
                assert marks[run][quantity].args[0] == lrp.opposite_id(key[1], key[2], metric, slower), (run, metric)
                assert "Cause not established" in marks[run][quantity].kwargs["reason"]
        ids = {marks[run][quantity].args[0] for run in sides if lrp.SLOWER.get(mechanism, sides[run]) == sides[run]
               or run == 1}
        if quantity in marks[1] and len(ids) > 1:
            raise AssertionError(f"{metric}: one gain under several findings {ids}")
        if quantity in marks[1] and any(quantity in marks[run] for run in runs if run > 1):
            assert ids == {mechanism} or explained is not None, metric


def test_a_band_comes_from_the_other_run_and_is_never_widened(monkeypatch) -> None:
    """Llama-3.1-8B's chat prefix_cache TTFT p50 gain, held by the other run both ways (a rung run twice; the rag eager
    ITL p50 gain this test took until 2026-12-07 has a third run, test_other_runs_band_by_their_intersection_else_their
    _hull_never_wider's case): its band is the other run's interval, each side widened by sqrt(2), over the prediction,
    and moving this run's own numbers moves no band; moved outside it, the verdict keeps its own interval
    (checked-run) and says the size did not repeat."""
    key = (llc.MODEL, "chat", "prefix_cache", "ttft_p50_s")
    p = _row(*key[:3])["gain"]["ttft_p50_s"]
    (g1, lo1, hi1), other = lrp.GAINS[key]  # the rung's two runs
    band, band_from, _ = lrp.banded(*key[:3], key[3], 1, p)
    g, lo, hi = other
    assert band_from == "other-runs"
    assert band == (round((g - cf.SQRT2 * (g - lo)) / p, 4), round((g + cf.SQRT2 * (hi - g)) / p, 4))
    monkeypatch.setitem(lrp.GAINS, key, ((g1 * 1.01, lo1 * 0.99, hi1 * 1.02), other))
    assert lrp.banded(*key[:3], key[3], 1, p)[:2] == (band, "other-runs")
    far = (g * 1.2, lo * 1.2, hi * 1.2)
    monkeypatch.setitem(lrp.GAINS, key, (far, other))
    band, band_from, said = lrp.banded(*key[:3], key[3], 1, p)
    assert (band, band_from) == ((round(far[1] / p, 4), round(far[2] / p, 4)), "checked-run")
    assert "did not repeat" in said


def test_other_runs_band_by_their_intersection_else_their_hull_never_wider() -> None:
    """Every finding the other runs band, from the other runs on its side of the prediction only: by their
    intersection where it holds the run (the tightest); else, with two or more such runs, by their hull (min of lows,
    max of highs: the range the other engine starts measured) where it holds the run; else by its own interval
    (checked-run), outside every such start's range, or with none on its side. Each edge of a band is an edge of
    another run's band (never widened), or issue 14's target edge where that band reached past it to the other side
    (cut there: on_its_side); a band holding the prediction (a ratio of 1) is not strict."""
    below, above = gain_band()
    sources = set()
    for (m, w, s, metric), gains in lrp.GAINS.items():
        p = lrp.predicted_of(m, w, s, metric, _row(m, w, s)["gain"] or {})
        assert p is not None
        for run, (g, lo, hi) in enumerate(gains, 1):
            if not lrp.finds(m, w, s, metric, run, p):
                continue
            r = g / p
            every = [og for _, og in lrp._other_runs(m, w, s, metric, run)]
            others = [lrp.other_run_band(og, p) for og in every if (og[0] / p > 1) == (r > 1)]
            band, band_from, said = lrp.banded(m, w, s, metric, run, p)
            own = ((round(lo / p, 4), round(hi / p, 4)), "checked-run")
            if len(others) < len(every):
                assert "ran on the other side of the prediction" in said, (m, s, metric, run)
                sources.add("other side left out")
            if not others:
                assert (band, band_from) == own and "No other run lies on this run's side" in said
                continue
            inter = (max(b[0] for b in others), min(b[1] for b in others))
            hull = (min(b[0] for b in others), max(b[1] for b in others))
            if inter[0] <= r <= inter[1]:
                assert (band, band_from) == (lrp.on_its_side(inter, r), "other-runs"), (m, s, metric, run)
                sources.add("intersection")
            elif len(others) > 1 and hull[0] <= r <= hull[1]:
                assert (band, band_from) == (lrp.on_its_side(hull, r), "other-runs") and "their hull" in said
                sources.add("hull")
            else:
                assert (band, band_from) == own, (m, s, metric, run)
                assert len(others) == 1 or f"outside their hull [{hull[0]:.4g}, {hull[1]:.4g}]" in said
                sources.add("checked-run")
            edges = {x for b in others for x in b} | {math.ceil(below * 1e4) / 1e4, math.floor(above * 1e4) / 1e4}
            assert band_from == "checked-run" or {band[0], band[1]} <= edges
            assert band_from == "checked-run" or not (band[0] < below and band[1] > above)  # never both sides
            assert lrp.strict(band, band_from) == (band_from != "other-runs" or not band[0] <= 1 <= band[1])
    assert sources == {"intersection", "hull", "checked-run", "other side left out"}


def test_a_run_between_the_other_starts_is_banded_by_their_hull(monkeypatch) -> None:
    """Qwen2.5-7B's chat eager ITL p50 gain, three starts: run 1 moved between runs 2 and 3 (whose bands are disjoint,
    so no intersection holds it) is banded by their hull, which moving run 1's own numbers does not move; moved past
    both, it keeps its own interval (checked-run), outside every other start's range."""
    key = (lrp.QWEN, "chat", "eager", "itl_p50_s")
    p = lrp.predicted_of(*key[:3], key[3], _row(*key[:3])["gain"] or {})
    assert p is not None
    # the first three starts only (a fourth, 2026-12-07 17:19, would widen the hull this case is about)
    first, second, third = lrp.GAINS[key][:3]
    monkeypatch.setitem(lrp.RUNS, key[:3], lrp.RUNS[key[:3]][:3])
    b2, b3 = lrp.other_run_band(second, p), lrp.other_run_band(third, p)
    assert b3[1] < b2[0]  # the two other starts' sizes disagree beyond either's sampling noise
    hull = (b3[0], b2[1])
    mid = (b3[1] + b2[0]) / 2 * p
    for g in (mid, mid * 1.01):
        monkeypatch.setitem(lrp.GAINS, key, ((g, g * 0.99, g * 1.01), second, third))
        band, band_from, said = lrp.banded(*key[:3], key[3], 1, p)
        assert (band, band_from) == (hull, "other-runs") and "inside none" in said
    far = hull[1] * p * 1.1
    monkeypatch.setitem(lrp.GAINS, key, ((far, far * 0.99, far * 1.01), second, third))
    band, band_from, said = lrp.banded(*key[:3], key[3], 1, p)
    assert (band, band_from) == ((round(far * 0.99 / p, 4), round(far * 1.01 / p, 4)), "checked-run")
    assert "outside their hull" in said and "did not repeat" in said


def test_no_ladder_finding_covers_gains_on_both_sides() -> None:
    """Issue 10 item 3 over every rung (test_ladder_chat checks the n-gram rung's alone): each finding on a gain, every
    model's and workload's first runs and their repeats, has a band reaching past issue 14's 20% target on one side of
    its prediction only, and every gain under one finding id says the same of its rung, slower or faster, the side
    ladder_repeat.SLOWER names for it. The unresolved p99 claims no side (its explanation's band holds 1)."""
    import importlib

    below, above = gain_band()
    sides: dict[str, set[bool]] = {}
    marks = [m for name in ("ladder_findings", "ladder_llama", "ladder_chat", "ladder_llama_chat")
             for mod in (importlib.import_module(name),)
             for row in PRE["ladders"][getattr(mod, "MODEL", lf.MODEL)][mod.WORKLOAD]
             for m in mod.rung_marks(getattr(mod, "MODEL", lf.MODEL), mod.WORKLOAD, row["step"], row["gain"] or {})]
    marks += [m for key in lrp.RUNS for run in range(2, len(lrp.RUNS[key]) + 1)
              for m in lrp.repeat_marks(*key, _row(*key)["gain"] or {}, run)]
    gains = [m for m in marks if m.kwargs["quantity"].endswith(".gain") and m.args[0] != lrp.UNRESOLVED_ID]
    assert len(gains) > 100
    for mark in gains:
        lo, hi = mark.kwargs["expected"]
        reaches_below, reaches_above = lo < below, hi > above
        assert reaches_below != reaches_above, (mark.args[0], mark.kwargs["quantity"], (lo, hi))
        sides.setdefault(mark.args[0], set()).add(reaches_above == mark.kwargs["quantity"].split(".")[2].endswith("_s"))
    assert all(len(s) == 1 for s in sides.values()), sides
    assert all(lrp.SLOWER.get(fid, slower) == slower for fid, (slower,) in sides.items()), sides
    assert set(lrp.SLOWER) <= set(sides)


def test_inside_budget_is_every_miss_the_budget_holds() -> None:
    """ladder_repeat_runs.INSIDE_BUDGET (the repeats' 20% misses that carry no finding) is exactly the runs whose gain
    misses 20%, whose resampled interval excludes the prediction, and which agree within the gain check's whole budget
    (ladder_repeat.within_budget, the calibration's systematic terms re-simulated)."""
    held = set()
    for (model, workload, step, metric), gains in lrp.GAINS.items():
        p = lrp.predicted_of(model, workload, step, metric, _row(model, workload, step)["gain"] or {})
        if p is None:
            continue
        for run, (_, lo, hi) in enumerate(gains, 1):
            if lrp.misses(model, workload, step, metric, run, p) and not lo <= p <= hi \
                    and lrp.within_budget(model, workload, step, metric, run, p):
                held.add((model, workload, step, metric, run))
    assert held == set(lrp.INSIDE_BUDGET)
