"""What test_latency_findings_reasons.py recomputes its reasons' numbers through, beside the tests: every recorded
session's b=1 decode recording and setup (built once per pytest session), the stamps of a recording's sessions, the
mixed-step arithmetic MIXED_REASON quotes, and median_scatter with an explicit n. Split out of
test_latency_findings_reasons.py on 2026-12-07 to keep modules under 500 lines."""

from __future__ import annotations

from typing import Any

import latency_findings as lf
from latency_setups import mean_context

from pytest_anatomy import recordings, stats
from pytest_anatomy.session import get_session
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory.capacity import kv_bytes_per_token
from pytest_anatomy.theory.flops import StepWork


def session_stamps(request, target, name: str) -> list[str]:
    """The stamps of every recording of `name` on the target, oldest first."""
    results = get_session(request.config).settings.results_dir
    return [recordings.load_file(p).recorded_at for p in recordings.candidates(results, target.name, "latency", name)]


# (results folder, target, model, stamp) -> (b=1 decode recording, setup): built once per pytest session, shared by
# the tests here (each setup reads several recordings and its session's ceilings).
SESSION_SETUPS: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}


def session_setups(request, target, session_rec, setup_beside) -> list[tuple[str, Any, Any]]:
    """(model, b=1 decode recording, setup) of every recorded session of both models, each with its own session's
    setup (Llama's: the Qwen calibration known when it ran), as test_prefill_runs_are_the_recorded_ones builds them."""
    out = []
    results = str(get_session(request.config).settings.results_dir)
    for model in (lf.QWEN, lf.LLAMA):
        for stamp in session_stamps(request, target, f"{model}.decode.b1"):
            key = (results, target.name, model, stamp)
            if key not in SESSION_SETUPS:
                b1 = session_rec(f"{model}.decode.b1", not_after=stamp)
                SESSION_SETUPS[key] = (b1, setup_beside(model, b1))
            out.append((model, *SESSION_SETUPS[key]))
    return out


def check_mixed_reason(setup, rec, res) -> None:
    """MIXED_REASON's arithmetic is Qwen2.5-7B's lighter overload run's: its prompt's chunks at the engine's budget,
    the decodes beside a chunk (the simulated peak of running requests, less the prompt's own), their mean KV
    context, the KV bytes they read and the time that takes at the session's read ceiling, and the compute term the
    step model sets against it in the steps mixing each chunk with those decodes (the session's eta)."""
    s = rec.data["run"]["settings"]
    text = lf.MIXED_REASON
    chunks = lat.prefill_chunks(s["input_len"], setup.sched.max_num_batched_tokens)
    assert f"({' + '.join(f'{n:,}' for n, _ in chunks)} tokens)" in text
    decodes, ctx = res.max_running - 1, mean_context(s["input_len"], s["output_len"])
    kv = decodes * ctx * kv_bytes_per_token(setup.model).value
    assert (f"~{decodes} decodes that each read ~{round(ctx, -2):,.0f} tokens of KV (~{round(kv / 1e9, -1):.0f} GB, "
            f"{kv / setup.ceilings.bandwidth * 1e3:.0f} ms a step at {setup.ceilings.bandwidth / 1e12:.2f} TB/s)") in text
    compute = [next(term.value for term in lat.step_time(setup.model, setup.ceilings, setup.calib, StepWork(
        decode_tokens=decodes, decode_context_sum=decodes * ctx, prefill=(chunk,))).terms
        if term.name == "FLOPs / (eta x peak)") for chunk in chunks]
    assert f"under the chunks' {min(compute) * 1e3:.0f}-{max(compute) * 1e3:.0f} ms of compute" in text


def median_scatter_over(rec, n: float) -> float:
    """median_scatter with an explicit n (the p90 route, as every decode run has percentiles)."""
    m = rec.measurements
    stat = "itl_steady_engine_clock_s"
    return stats.tail_median_scatter(m[f"{stat}.p90"]["value"], m[f"{stat}.median"]["value"], n)
