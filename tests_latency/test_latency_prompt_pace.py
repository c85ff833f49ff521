"""The prompt-step pace check (measure/prompt_pace.py) over every recorded session with Poisson runs: what
h200-load-run-slow-prompt-steps says of them (the runs it flags, the clean runs' range) is recomputed here."""

from __future__ import annotations

import latency_findings as lf
import pytest
from latency_setups import prompt_pace_of

from pytest_anatomy import recordings
from pytest_anatomy.measure import prompt_pace as pp
from pytest_anatomy.session import get_session

# What the finding's reason quotes: (session stamp, rate) of every flagged Qwen2.5-7B run, and the clean runs' span.
FLAGGED = {("2026-12-02T07:14:23.000000Z", "0.8"): 1.32}
CLEAN_SPAN = (0.82, 1.18)


def _paces(request, target, session_rec) -> dict[str, dict[str, pp.PromptPace | None]]:
    """stamp of each session with a 0.8x run -> rate -> that session's run's pace."""
    results = get_session(request.config).settings.results_dir
    out = {}
    for path in recordings.candidates(results, target.name, "latency", f"{lf.QWEN}.poisson.f0.8"):
        stamp = recordings.load_file(path).recorded_at
        anchor = session_rec(f"{lf.QWEN}.poisson.f0.8", not_after=stamp)
        out[stamp] = {f: prompt_pace_of(session_rec(f"{lf.QWEN}.poisson.f{f}", beside=anchor)) for f in lf.POISSON}
    return out


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.poisson.", live=False)
def test_prompt_pace_flags_the_recorded_runs(request, target, session_rec):
    """Every recorded run gets a pace (raw timelines are kept), the check flags exactly FLAGGED, and the clean runs
    span CLEAN_SPAN of their sessions' other runs, below the threshold (the margin the reason quotes)."""
    flagged, clean = {}, []
    for stamp, paces in _paces(request, target, session_rec).items():
        assert all(p is not None for p in paces.values()), stamp
        for f, p in paces.items():
            check = pp.check_against_session(p, [o for g, o in paces.items() if g != f])
            assert check is not None
            if check.flagged:
                flagged[(stamp, f)] = round(check.ratio, 2)
            else:
                clean.append(check.ratio)
    assert flagged == FLAGGED
    assert (round(min(clean), 2), round(max(clean), 2)) == CLEAN_SPAN
    assert max(clean) < pp.SLOW_PROMPT_STEPS < min(FLAGGED.values())
    reason = lf.SLOW_PROMPT_REASON
    assert f"clean runs {CLEAN_SPAN[0]:.2f}-{CLEAN_SPAN[1]:.2f}x, this run {FLAGGED[min(FLAGGED)]:.2f}x" in reason


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
