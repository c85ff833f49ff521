"""Every number Llama-3.1-8B's chat findings quote (ladder_llama_chat.py), recomputed: gains, metrics and intervals from
the kept raw batches (ladder_raw's methods, the device plan's ladder_metrics), engine-clock times from the raw
timelines, priced steps from the preregistered calibration, capture sizes from the kept deployment.json. Reads no raw
batch at import (test_ladder_replay says why)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

import ladder_chat as lc
import ladder_findings as lf
import ladder_llama_chat as llc
import ladder_raw as lr
from pytest_anatomy.specs.workload_file import Slo
from pytest_anatomy.theory.deployment import gain_band, gain_within
from test_ladder_chat import assert_ngram_quotes, assert_step_tables, assert_window_tables
from test_ladder_replay import PRE, _row, _value

# The deployment plan runs on the device only (scripts/device/deployment_plan.py): a live card has nothing here to
# measure, so these tests take the recorded cards (a live target would only skip each case).
pytestmark = pytest.mark.targets(recorded="")

_SLO = json.loads((Path(__file__).parent / "workloads" / f"{llc.WORKLOAD}.json").read_text())["slo"]
SLO = Slo(_SLO["ttft_ms"], _SLO["itl_ms"])


def _run(step: str) -> dict[str, Any]:
    return lr.raw_runs(llc.batch_of(step))[step]


def _reqs(step: str) -> list[dict[str, Any]]:
    return _run(step)["requests"]


def _metrics(run: dict[str, Any]) -> dict[str, float]:
    from pytest_anatomy.measure.ladder_stats import ladder_metrics

    return ladder_metrics(lr.records(run), run["start"], SLO)


def _parent(step: str) -> str:
    return _row(llc.MODEL, llc.WORKLOAD, step)["parent"]


def _predicted(step: str) -> dict[str, float | None]:
    return _row(llc.MODEL, llc.WORKLOAD, step)["gain"] or {}


@pytest.mark.parametrize("rung_metric", list(llc.GAINS), ids=lambda rm: ".".join(rm))
def test_llama_chat_gains_and_intervals_are_the_recorded_ones(rung_metric: tuple[str, str]) -> None:
    """Each gain over its parent and its request-resampled interval recomputed; the interval holds the gain and excludes
    the prediction (not request noise), and the gain misses the 20% target (a finding, not an agreement)."""
    step, metric = rung_metric
    g, lo, hi = llc.GAINS[rung_metric]
    run, parent = _run(step), _run(_parent(step))
    assert g == pytest.approx(_metrics(run)[metric] / _metrics(parent)[metric], abs=5e-5)
    got = lr.resampled_gain_interval(run, parent, metric, SLO)
    assert (round(got[0], 4), round(got[1], 4)) == (lo, hi)
    p = llc.predicted_of(step, metric, _predicted(step))
    assert p is not None and lo <= g <= hi and not lo <= p <= hi and not gain_within(p, g)


def test_llama_chat_missed_gains_are_all_listed() -> None:
    """Every predicted gain of the recorded Llama chat rungs that misses 20% has its row in llc.GAINS, and every row
    misses: the table is the misses, no more and no fewer (the n-gram rung at its simulated gains)."""
    (lo, hi), missed = gain_band(), set()
    for row in PRE["ladders"][llc.MODEL][llc.WORKLOAD]:
        step = row["step"]
        if row["parent"] is None:
            continue
        now, before = _metrics(_run(step)), _metrics(_run(row["parent"]))
        predicted = {m: llc.predicted_of(step, m, _predicted(step)) for m in (row["gain"] or {})}
        missed |= {(step, m) for m, p in predicted.items() if p and now.get(m) and before.get(m)
                   and not lo <= now[m] / before[m] / p <= hi}
    assert missed == set(llc.GAINS)


@pytest.mark.gpu
def test_llama_chat_metrics_are_the_recorded_ones(target, measured) -> None:
    """The metrics the reasons quote, as the recordings hold them (the device plan's ladder_metrics)."""
    for (step, metric), ms in llc.METRIC_MS.items():
        rec = measured(f"{llc.MODEL}.{llc.WORKLOAD}.{step}", target=target, recorded_at=llc.batch_of(step))
        value = _value(rec, f"metrics.{metric}")
        assert value is not None and round(value * 1e3, 2) == ms, (step, metric, value)
    qwen = _value(measured(f"{lf.MODEL}.{llc.WORKLOAD}.plan_top", target=target, recorded_at=lc.SECOND_BATCH),
                  "metrics.itl_p99_s")
    assert qwen is not None and round(qwen * 1e3, 2) == llc.QWEN_PLAN_ITL_P99_MS


@pytest.mark.gpu
def test_llama_chat_ngram_counters_and_predictions_are_the_quoted_ones(target, measured) -> None:
    """The n-gram rung's counters, the gains it is reconciled against (simulated at its measured E and draft share) and
    the simulated ITL p50 the reason quotes."""
    rec = measured(f"{llc.MODEL}.{llc.WORKLOAD}.ngram", target=target, recorded_at=llc.batch_of("ngram"))
    assert_ngram_quotes(rec, llc.MODEL, llc, "itl_p50_s", llc.NGRAM_PREDICTED_ITL_P50_MS)


def test_llama_chat_ngram_stream_is_the_recorded_one() -> None:
    reqs = _reqs("ngram")
    assert sum(len(r["chunk_tokens"]) - 1 for r in reqs) == llc.NGRAM_STREAM["chunks"]
    assert sum(sum(r["chunk_tokens"][1:]) for r in reqs) == llc.NGRAM_STREAM["tokens"]


def test_llama_chat_prompt_windows_are_the_recorded_ones() -> None:
    """Prompt windows' medians, terciles, tails and the graph split, and the claims made of them: limits' windows flat
    in their tokens (not growing with them); the windows above 512 tokens about twice those inside for the engines captured to 512."""
    assert_window_tables(llc, _reqs)
    for step, ms in llc.INSIDE_512_MS.items():
        assert round(lr.prompt_window_ms(_reqs(step), 512), 1) == ms, step
        assert llc.ABOVE_512_MS[step] / ms > 1.5
    for step, ms in llc.ABOVE_512_MS.items():
        assert round(lr.prompt_window_ms(_reqs(step), 512, inside=False), 1) == ms, step
    qwen = lr.raw_runs(lc.FIRST_BATCH) | {"plan_top": lr.raw_runs(lc.SECOND_BATCH)["plan_top"]}
    for step, ms in llc.QWEN_ABOVE_512_MS.items():
        assert round(lr.prompt_window_ms(qwen[step]["requests"], 512, inside=False), 1) == ms, step
    lo, hi = llc.WINDOW_TERCILES_MS["limits"]
    assert hi / lo < 1.1  # the windows do not grow with the prompt (the third with the most new tokens is shorter)


def test_llama_chat_steps_and_ttft_parts_are_the_recorded_ones() -> None:
    assert_step_tables(llc, _reqs)
    for step, tokens in llc.NEW_TOKENS.items():
        assert sum(r["input_len"] - (r["num_cached_tokens"] or 0) for r in _reqs(step)) == tokens, step


def test_llama_chat_itl_tails_close_prompt_windows() -> None:
    """The ITL p99 tails of plan_top and fp8_kv on the engine's clock: every tail token closes a prompt window (all of
    plan_top's one above the largest captured graph), the window counts, and plan_top's ITL p99 interval."""
    for step, quoted in llc.TAIL_WINDOWS.items():
        assert lr.itl_tail_windows(_reqs(step), 512) == quoted, step
        windows = lr.prompt_windows(_reqs(step))
        assert (len(windows), sum(1 for _, new, n in windows if new + n > 512)) == llc.WINDOWS[step], step
    tokens, closing, above = llc.TAIL_WINDOWS["plan_top"]
    assert tokens == closing == above
    lo, hi = lr.resampled_metric_interval(_run("plan_top"), "itl_p99_s", SLO)
    assert (round(lo * 1e3, 2), round(hi * 1e3, 2)) == llc.PLAN_ITL_P99_INTERVAL_MS
    assert lo * 1e3 > SLO.itl_ms  # the miss is not request noise: the whole interval lies over the SLO


def test_llama_chat_capture_sizes_are_the_engines() -> None:
    """CAPTURED_MAX from each rung's engine as it resolved (kept deployment.json)."""
    seen = set()
    for stamp in (llc.FIRST_BATCH, llc.SECOND_BATCH):
        runs = json.loads((lf.BATCHES / stamp / "deployment.json").read_text())["runs"]
        engines = {r["id"]: r["result"]["resolved"] for r in runs if "step" not in r}
        for run in (r for r in runs if "step" in r and r["id"].startswith(f"{llc.MODEL}.{llc.WORKLOAD}.")):
            resolved = engines[run["engine_run"]]
            assert max(resolved["cudagraph_capture_sizes"] or [0]) == llc.CAPTURED_MAX[run["step"]], run["id"]
            seen.add(run["step"])
    assert seen == set(llc.CAPTURED_MAX)


def test_llama_chat_priced_steps_are_the_preregistered_models() -> None:
    """The step model's prices the reasons quote: decode steps, the mean prompt beside 31 decodes, and plan_top's
    median window above 512 tokens (its new tokens and outputs the medians of those windows) on the cached system
    prompt."""
    context = _row(llc.MODEL, llc.WORKLOAD, "ngram")["terms"]["context"]
    for (step, batch), ms in llc.PRICED_STEP_MS.items():
        got = lf.priced_step_ms(PRE["calibration"], _row(llc.MODEL, llc.WORKLOAD, step), context, batch, llc.MODEL)
        assert round(got, 2) == ms, (step, batch, got)
    for step, cached in (("limits", 0), ("prefix_cache", lc.SYSTEM_PROMPT)):
        got = lc.priced_prompt_ms(PRE["calibration"], _row(llc.MODEL, llc.WORKLOAD, step), context, llc.USERS - 1,
                                  lc.MEAN_PROMPT - cached, cached, llc.MODEL)
        assert round(got, 2) == llc.PRICED_PROMPT_MS[step], (step, got)
    big = [(new, n) for _, new, n in lr.prompt_windows(_reqs("plan_top")) if new + n > 512]
    window = (round(statistics.median(new for new, _ in big)), round(statistics.median(n for _, n in big)))
    assert window == llc.PLAN_BIG_WINDOW
    plan = PRE["plan_top"][llc.MODEL][llc.WORKLOAD]
    got = lc.priced_prompt_ms(PRE["calibration"], plan, context, window[1], window[0], lc.SYSTEM_PROMPT, llc.MODEL)
    assert round(got, 2) == llc.PRICED_PLAN_BIG_MS
    assert llc.ABOVE_512_MS["plan_top"] / got > 1.3  # the graph-less window is well over its price


def test_llama_chat_mean_prompt_is_qwens() -> None:
    """PRICED_PROMPT_MS prices lc.MEAN_PROMPT: the chat workload is one file, so Llama's requests carry the same mean
    prompt (new tokens of the uncached limits rung over its requests; the tokenizers differ by a few tokens)."""
    mean = llc.NEW_TOKENS["limits"] / len(_reqs("limits"))
    assert abs(mean / lc.MEAN_PROMPT - 1) < 0.05
