"""The prompt-step pace check (measure/prompt_pace.py) over every recorded session with Poisson runs: what
h200-load-run-slow-prompt-steps says of them (the runs it flags, the clean runs' range) is recomputed here."""

from __future__ import annotations

import statistics

import latency_findings as lf
import latency_session_pace_findings as sf
import pytest
from latency_findings_common import MEASURED_ON
import test_latency_conditions as conditions
import latency_load_runs as lr
import test_latency_load as load
from latency_setups import prompt_pace_of, slowed_prompts

from pytest_anatomy import recordings
from pytest_anatomy.measure import prompt_pace as pp
from pytest_anatomy.measure.gpu_sampler import THERMAL_OR_HARDWARE, summarize
from pytest_anatomy.session import get_session

# What the finding's reason quotes: (session stamp, rate) of every flagged Qwen2.5-7B run and its pace, and the clean
# runs' span over the sessions the threshold was set on (up to SET_ON; every later session is held out).
FLAGGED = {("2026-12-02T07:14:23.000000Z", "0.8"): 1.32, ("2026-12-02T14:18:58.000000Z", "1.3"): 1.23,
           ("2026-12-02T23:51:19.000000Z", "1"): 1.44, ("2026-12-04T00:09:44.000000Z", "1.3"): 1.25}
CLEAN_SPAN = (0.82, 1.18)
SET_ON = "2026-12-02T07:14:23.000000Z"


def _paces(request, target, session_rec) -> dict[str, dict[str, pp.PromptPace | None]]:
    """stamp of each session with a 0.8x run -> rate -> that session's run's pace."""
    results = get_session(request.config).settings.results_dir
    out = {}
    for path in recordings.candidates(results, target.name, "latency", f"{lf.QWEN}.poisson.f0.8"):
        stamp = recordings.load_file(path).recorded_at
        anchor = session_rec(f"{lf.QWEN}.poisson.f0.8", not_after=stamp)
        out[stamp] = {f: prompt_pace_of(session_rec(f"{lf.QWEN}.poisson.f{f}", beside=anchor)) for f in lf.POISSON}
    return out


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.poisson.", live=False, hardware=MEASURED_ON)
def test_prompt_pace_flags_the_recorded_runs(request, target, session_rec):
    """Every recorded run gets a pace (raw timelines are kept), the check flags exactly FLAGGED, and the clean runs of
    the sessions it was set on span CLEAN_SPAN of their sessions' other runs, below the threshold (the margin the reason
    quotes); for each held-out flagged run the reason quotes its lone-prompt steps and its session's other runs, and
    the 1.3x runs' few lone prompts (every session) and high clean paces (the sessions the threshold was set on)."""
    runs = []  # (stamp, rate, lone-prompt steps, ratio, flagged)
    for stamp, paces in _paces(request, target, session_rec).items():
        assert all(p is not None for p in paces.values()), stamp
        for f, p in paces.items():
            check = pp.check_against_session(p, [o for g, o in paces.items() if g != f])
            assert check is not None
            runs.append((stamp, f, check.run.pairs, check.ratio, check.flagged))
    set_on = {s for s, *_ in runs if recordings.stamp_of(s) <= recordings.stamp_of(SET_ON)}
    assert {(s, f): round(r, 2) for s, f, _, r, flagged in runs if flagged} == FLAGGED
    clean = [(s, f, r) for s, f, _, r, flagged in runs if not flagged and s in set_on]
    assert (round(min(r for *_, r in clean), 2), round(max(r for *_, r in clean), 2)) == CLEAN_SPAN
    assert max(r for *_, r in clean) < pp.SLOW_PROMPT_STEPS < min(FLAGGED.values())
    reason = lf.SLOW_PROMPT_REASON
    assert f"on the {lf._count(len(set_on))} sessions with a 0.8x Poisson run" in reason
    assert f"clean runs {CLEAN_SPAN[0]:.2f}-{CLEAN_SPAN[1]:.2f}x, this run {FLAGGED[min(FLAGGED)]:.2f}x" in reason
    for stamp, f, pairs, ratio, flagged in runs:
        if flagged and stamp not in set_on:
            others = [r for s, g, _, r, _ in runs if s == stamp and g != f]
            assert (f"{stamp[11:16]} full session's {f}x run was flagged ({ratio:.2f}x, on {pairs} lone-prompt steps; "
                    f"the same session's other runs {_span(others)}x)") in reason
    at_13 = [(s, n, r, flagged) for s, f, n, r, flagged in runs if f == "1.3"]
    clean_13 = [r for s, _, r, flagged in at_13 if s in set_on and not flagged]
    assert max(clean_13) == max(r for *_, r in clean)  # the highest clean run is a 1.3x one
    assert (f"1.3x runs have few lone prompts ({min(n for _, n, _, _ in at_13)}-{max(n for _, n, _, _ in at_13)}) "
            f"and sit highest among the clean runs ({_span(clean_13)} over the {lf._count(len(set_on))} earlier "
            "sessions with a 0.8x run") in reason


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.poisson.", live=False)
def test_slow_prompt_runs_are_the_recorded_ones(request, session_rec, setup_beside):
    """lf.SLOW_PROMPT_RUNS (the TTFT and mean-ITL numbers h200-load-run-slow-prompt-steps quotes) recomputed for every
    flagged run as the slow_prompt_run fixture of test_latency_load.py simulates it: with its own session's setup and
    with eta divided by its measured compute slowdown (latency_setups.slowed_prompts); and lf.SLOW_PROMPT_CLEAN_TTFT_BAND,
    the clean TTFT p50 band each flagged run gets at test time (test_latency_load.band_at_test_time; none listed where
    its clean finding's band is fixed)."""
    assert set(lf.SLOW_PROMPT_RUNS) == set(FLAGGED)
    for (stamp, factor), row in lf.SLOW_PROMPT_RUNS.items():
        rec = session_rec(f"{lf.QWEN}.poisson.f{factor}", not_after=stamp)
        assert rec.recorded_at == stamp
        others = [session_rec(f"{lf.QWEN}.poisson.f{f}", beside=rec) for f in lf.POISSON if f != factor]
        check = pp.check_against_session(prompt_pace_of(rec), [prompt_pace_of(o) for o in others])
        assert check is not None and check.flagged
        setup = setup_beside(lf.QWEN, rec)
        res, slowed = lr.simulate_run(setup, rec), lr.simulate_run(slowed_prompts(setup, check.compute_slowdown()), rec)
        ttft, itl = rec["aggregate.ttft_s.median"].value, rec["aggregate.itl_s.mean"].value
        got = (ttft / res.stat("ttft", "p50"), ttft / slowed.stat("ttft", "p50"), itl * 1e3,
               res.stat("itl", "mean") * 1e3, slowed.stat("itl", "mean") * 1e3)
        assert got == pytest.approx(row, abs=5e-5), (stamp, factor)
        band = load.band_at_test_time(request, lf.QWEN, rec, setup, res, "ttft_p50")
        assert band == lf.SLOW_PROMPT_CLEAN_TTFT_BAND.get((stamp, factor)), (stamp, factor, band)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.poisson.", live=False, hardware=MEASURED_ON)
def test_session_pace_reference_is_the_recorded_one(request, target, session_rec):
    """sf.SESSION_PROMPT_PART_REFERENCE_S is the median, over the sf.REFERENCE_SESSIONS sessions up to REFERENCE_SET_ON,
    of each session's median lone-prompt compute part; every later session is held out from it."""
    medians = [pp.check_session(list(paces.values()), 1.0).median_s
               for stamp, paces in _paces(request, target, session_rec).items()
               if recordings.stamp_of(stamp) <= recordings.stamp_of(sf.REFERENCE_SET_ON)]
    assert len(medians) == sf.REFERENCE_SESSIONS
    assert round(statistics.median(medians), 5) == sf.SESSION_PROMPT_PART_REFERENCE_S


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.poisson.", live=False, hardware=MEASURED_ON)
def test_slow_sessions_are_the_recorded_ones(request, target, session_rec):
    """The session-wide check flags exactly sf.SLOW_SESSIONS (their ratios to the reference as quoted), and the other
    sessions span sf.CLEAN_SESSION_SPAN, below the threshold; the reason quotes both."""
    ratios = {stamp: pp.check_session(list(paces.values()), sf.SESSION_PROMPT_PART_REFERENCE_S)
              for stamp, paces in _paces(request, target, session_rec).items()}
    assert {s: round(c.ratio, 3) for s, c in ratios.items() if c.flagged} == sf.SLOW_SESSIONS
    clean = [round(c.ratio, 3) for c in ratios.values() if not c.flagged]
    assert (min(clean), max(clean)) == sf.CLEAN_SESSION_SPAN
    assert max(clean) < pp.SLOW_PROMPT_STEPS < min(sf.SLOW_SESSIONS.values())



@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.poisson.", live=False, hardware=MEASURED_ON)
def test_slow_session_numbers_are_the_recorded_ones(request, target, session_rec):
    """What sf.SLOW_SESSION_REASON quotes beyond SLOW_SESSIONS: the prompt length (sf.PROMPT_TOKENS), the older slow
    session as the first recorded and each later one on a card no earlier session ran on, each held-out session's
    rate of largest compute part and its parts at the lowest and highest rate against the same rate in the unflagged
    sessions (sf.HELD_OUT), where the pattern sentence puts each session (largest at the lowest rate and inside the
    others at the highest, or not; a session put in the second group has its highest-rate run flagged by the per-run
    check, as the sentence says), and NVML's mean SM clock of its Poisson runs, none with a thermal bit."""
    paces = _paces(request, target, session_rec)
    first, *held_out = sorted(sf.SLOW_SESSIONS)
    assert min(paces, key=recordings.stamp_of) == first and held_out == list(sf.HELD_OUT)
    parts = {s: {f: p.prompt_part_s() * 1e3 for f, p in runs.items() if p is not None} for s, runs in paces.items()}
    rates = sorted(lf.POISSON, key=float)
    runs = [session_rec(f"{lf.QWEN}.poisson.f{f}", beside=session_rec(f"{lf.QWEN}.poisson.f0.8", not_after=s))
            for s in paces for f in lf.POISSON]
    assert {r.data["run"]["settings"]["input_len"] for r in runs} == {sf.PROMPT_TOKENS}
    cards = {r.recorded_at: r.provenance["gpu"].get("uuid") for r in runs if isinstance(r.provenance.get("gpu"), dict)}
    sampled = conditions._sampled_parts(str(get_session(request.config).settings.results_dir / target.name / "batches"))
    idle_group, other_group = sf.held_out_split()
    for stamp, (largest, quoted, sm_mhz) in sf.HELD_OUT.items():
        assert list(quoted) == [rates[0], rates[-1]]
        assert max(parts[stamp], key=parts[stamp].__getitem__) == largest, stamp
        got = {}
        for f in quoted:
            others = [p[f] for s, p in parts.items() if s not in sf.SLOW_SESSIONS]
            got[f] = (round(parts[stamp][f], 1), (round(min(others), 1), round(max(others), 1)))
        assert got == quoted, stamp
        low, high = (quoted[f] for f in (rates[0], rates[-1]))
        idle = largest == rates[0] and high[1][0] <= high[0] <= high[1][1]
        assert stamp in (idle_group if idle else other_group), stamp
        if not idle:
            top = paces[stamp][rates[-1]]
            check = pp.check_against_session(top, [p for f, p in paces[stamp].items() if f != rates[-1]])
            assert check is not None and check.flagged, stamp  # "that session's 1.3x run is also flagged"
        earlier = {u for s, u in cards.items() if recordings.stamp_of(s) < recordings.stamp_of(stamp)}
        assert cards[stamp] and cards[stamp] not in earlier, stamp  # "a card no earlier session ran on"
        date = next(r.provenance["date"] for r in runs if r.recorded_at == stamp)
        summaries = [summarize(p["gpu_samples"]) for p in sampled[date] if p["id"].startswith(f"{lf.QWEN}.poisson.f")]
        assert len(summaries) == len(lf.POISSON), stamp
        assert not any((s["event_reasons_any"] or 0) & THERMAL_OR_HARDWARE for s in summaries), stamp
        assert (min(s["sm_mhz_mean"] for s in summaries), max(s["sm_mhz_mean"] for s in summaries)) == sm_mhz, stamp


def test_session_pace_check_flags_a_session_wide_slowdown():
    """Five runs all slow by the same amount pass the per-run check and fail the session-wide one; the run's slowdown
    is its compute part over the reference, never below 1."""
    slow = [pp.prompt_pace(_timeline(36.0), 1024) for _ in range(5)]
    assert not pp.check_against_session(slow[0], slow[1:]).flagged
    check = pp.check_session(slow, 0.017)
    assert check.flagged and check.slowdown_of(slow[0]) == pytest.approx((36 - 10) / 1e3 / 0.017)
    fast = pp.prompt_pace(_timeline(25.0), 1024)
    assert check.slowdown_of(fast) == 1.0
    assert pp.check_session(slow[:2], 0.017) is None  # too few runs to judge a session
    assert not pp.check_session([fast] * 5, 0.017).flagged


def _timeline(pair_ms: float, n_prompts: int = 8, decode_ms: float = 5.0) -> dict[str, list]:
    """A synthetic engine timeline: decode-only steps of decode_ms, and every 10th step carrying one 1,024-token
    prompt whose time (pair_ms - 2 x decode_ms) lands in the interval before it, as the async engine clock logs it."""
    t, ctx, now = [], [], 0.0
    for i in range(10 * n_prompts + 5):
        prompt = i % 10 == 5
        now += (pair_ms - decode_ms if prompt else decode_ms) / 1e3
        t.append(now)
        ctx.append(1024 if prompt else 0)
    return {"t": t, "engine_t": t, "ctx_tokens": ctx}


def test_prompt_pace_reads_lone_prompt_steps():
    pace = pp.prompt_pace(_timeline(27.0), 1024)
    assert pace is not None and pace.pairs == 8
    assert pace.median_s == pytest.approx(0.027) and pace.decode_s == pytest.approx(0.005)
    assert pp.prompt_pace(_timeline(27.0, n_prompts=4), 1024) is None  # too few to judge
    slow = pp.check_against_session(pp.prompt_pace(_timeline(36.0), 1024), [pace, pace])
    assert slow is not None and slow.flagged and slow.ratio == pytest.approx(36 / 27)
    assert slow.compute_slowdown() == pytest.approx((36 - 10) / (27 - 10))
    same = pp.check_against_session(pace, [pp.prompt_pace(_timeline(30.0), 1024)])
    assert same is not None and not same.flagged
