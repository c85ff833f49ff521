"""CPU tests of the load driver's pure parts, the ceilings' bookkeeping and the latency plan.

No torch, no vllm: the driver runs against a fake engine whose generate() streams tokens on
an asyncio timer, which is enough to test closed/open loop, deadlines and token checks."""

from __future__ import annotations

import asyncio
import json
import math
import random
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import device_scripts
import pytest
from fake_engine import FakeDriver, FakeEngine, drive

from pytest_anatomy.measure import load_stats as ls
from pytest_anatomy.gpu_query import parse_nvidia_smi_csv
from pytest_anatomy.measure.ceilings import measure_all, summarize_runs
from pytest_anatomy.measure.load_driver import EngineConfig, LoadDriver, LoadRun, _tap_engine_clock

REPO = Path(__file__).resolve().parents[1]


plan = device_scripts.load("latency_plan")


# --- percentiles and summaries ------------------------------------------------------------

def test_percentile_matches_hand_computed_linear_interpolation() -> None:
    values = [4.0, 1.0, 3.0, 2.0]  # sorted 1 2 3 4; rank = p/100 * 3
    assert ls.percentile(values, 50) == pytest.approx(2.5)
    assert ls.percentile(values, 90) == pytest.approx(3.7)
    assert ls.percentile(values, 99) == pytest.approx(3.97)
    assert ls.percentile(values, 0) == 1.0 and ls.percentile(values, 100) == 4.0
    assert ls.percentile([7.0], 99) == 7.0


def test_percentile_agrees_with_numpy_default() -> None:
    np = pytest.importorskip("numpy")
    rng = random.Random(3)
    values = [rng.expovariate(1.0) for _ in range(1001)]
    for p in (1, 50, 90, 99, 99.9):
        assert ls.percentile(values, p) == pytest.approx(float(np.percentile(values, p)), rel=1e-12)


def test_percentile_rejects_empty_and_out_of_range() -> None:
    with pytest.raises(ValueError, match="empty"):
        ls.percentile([], 50)
    with pytest.raises(ValueError, match="outside"):
        ls.percentile([1.0], 101)


def test_summarize_uses_population_std_like_bench_serve() -> None:
    s = ls.summarize([1.0, 2.0, 3.0, 4.0])
    assert s["mean"] == 2.5 and s["median"] == 2.5 and s["p50"] == 2.5
    assert s["std"] == pytest.approx(math.sqrt(1.25))  # ddof=0, as np.std
    assert s["n"] == 4 and s["min"] == 1.0 and s["max"] == 4.0
    empty = ls.summarize([])
    assert empty["n"] == 0 and empty["mean"] is None and empty["p99"] is None


# --- per-request definitions --------------------------------------------------------------

def _record(send: float, times: list[float], tokens: list[int] | None = None, expected: int | None = None,
            **kw: Any) -> ls.RequestRecord:
    tokens = tokens or [1] * len(times)
    return ls.RequestRecord(request_id="r", input_len=8, expected_output_len=expected or sum(tokens),
                            send_time=send, chunk_times=tuple(times), chunk_tokens=tuple(tokens), **kw)


def test_ttft_itl_e2e_tpot_follow_bench_serve_definitions() -> None:
    r = _record(10.0, [10.5, 10.6, 10.8, 11.1])
    assert r.ttft == pytest.approx(0.5)
    assert r.itls == pytest.approx([0.1, 0.2, 0.3])
    assert r.e2e == pytest.approx(1.1)
    assert r.tpot == pytest.approx((1.1 - 0.5) / 3)
    assert r.ok


def test_merged_chunk_gives_one_itl_but_tpot_counts_tokens() -> None:
    # the consumer lagged: the second output carries 2 tokens -> 2 ITLs for 4 tokens
    r = _record(0.0, [0.2, 0.4, 0.5], tokens=[1, 2, 1])
    assert r.output_tokens == 4 and len(r.itls) == 2
    assert r.tpot == pytest.approx((0.5 - 0.2) / 3)


def test_single_token_request_has_no_tpot_and_wrong_count_is_not_ok() -> None:
    assert _record(0.0, [0.3]).tpot is None
    short = _record(0.0, [0.1, 0.2], expected=3)
    assert not short.ok


def test_engine_breakdown_splits_ttft_exactly() -> None:
    r = _record(1.0, [1.5, 1.6, 1.7], engine={"queued_ts": 1.01, "scheduled_ts": 1.2,
                                              "first_token_ts": 1.45, "last_token_ts": 1.69})
    b = r.engine_breakdown()
    assert b is not None
    assert b["ingress_s"] + b["queue_s"] + b["prefill_s"] + b["egress_s"] == pytest.approx(r.ttft)
    assert b["queue_s"] == pytest.approx(0.19) and b["prefill_s"] == pytest.approx(0.25)
    assert b["engine_tpot_s"] == pytest.approx(0.24 / 2)
    assert _record(0.0, [0.1]).engine_breakdown() is None


def test_aggregate_counts_failures_and_throughput() -> None:
    good = _record(0.0, [0.5, 0.6, 0.7], expected=3)
    bad = _record(0.0, [0.4, 0.9], expected=3)
    agg = ls.aggregate([good, bad], expected_requests=3, start_time=0.0)
    assert agg["completed"] == 1 and agg["failed"] == 1 and agg["not_sent"] == 1
    assert not agg["exact_output_tokens"]
    assert agg["failures"] == ["2 output tokens, expected 3"]
    assert agg["duration_s"] == pytest.approx(0.9)
    assert agg["output_throughput_tok_per_s"] == pytest.approx(5 / 0.9)
    assert agg["ttft_s"]["n"] == 1 and agg["itl_s"]["n"] == 2  # only ok requests enter the stats
    assert ls.aggregate([good], start_time=0.0)["exact_output_tokens"]


def test_steady_window_keeps_only_itls_of_the_full_batch() -> None:
    a = _record(0.0, [1.0, 2.0, 3.0, 4.0, 5.0])
    b = _record(0.0, [2.5, 3.5, 4.5, 5.5, 6.5])
    window = ls.steady_window([a, b])
    assert window == (2.5, 5.0)
    # inside [2.5, 5.0]: a 3->4, 4->5 and b 2.5->3.5, 3.5->4.5 (a 2->3 starts before the window)
    assert ls.steady_itls([a, b], window) == [1.0, 1.0, 1.0, 1.0]
    assert ls.steady_tpots([a, b], window) == pytest.approx([1.0, 1.0])
    assert ls.steady_window([a, _record(0.0, [])]) is None


def test_decode_step_intervals_only_between_pure_decode_steps_of_the_batch() -> None:
    steps = [ls.TimelineStep(t=0.0, ctx_tokens=512, gen_requests=3),
             ls.TimelineStep(t=0.1, gen_requests=4), ls.TimelineStep(t=0.105, gen_requests=4),
             ls.TimelineStep(t=0.111, gen_requests=4), ls.TimelineStep(t=0.2, gen_requests=3)]
    assert ls.decode_step_intervals(steps, 4) == pytest.approx([0.005, 0.006])
    assert ls.timeline_summary(steps)["mixed_steps"] == 1
    # engine clock: the same steps stamped by the engine core; a step without stamp breaks a pair
    stamped = [ls.TimelineStep(t=0.1, gen_requests=4, engine_t=5.000),
               ls.TimelineStep(t=0.2, gen_requests=4, engine_t=5.004),  # frontend lagged 0.1 s
               ls.TimelineStep(t=0.2001, gen_requests=4, engine_t=5.008),
               ls.TimelineStep(t=0.21, gen_requests=4, engine_t=None),
               ls.TimelineStep(t=0.22, gen_requests=4, engine_t=5.016)]
    assert ls.decode_step_intervals(stamped, 4, engine_clock=True) == pytest.approx([0.004, 0.004])


# --- workload generation ------------------------------------------------------------------

def test_poisson_arrivals_are_seeded_and_have_mean_gap_one_over_rate() -> None:
    rate, n = 5.0, 20_000
    offsets = ls.poisson_arrivals(rate, n, seed=7)
    assert offsets == ls.poisson_arrivals(rate, n, seed=7)
    assert offsets != ls.poisson_arrivals(rate, n, seed=8)
    gaps = [offsets[0]] + [b - a for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    mean = sum(gaps) / n
    # exponential gaps: sd of the mean = (1/rate)/sqrt(n) = 0.0014 s; allow 5 sd (3.5%)
    assert abs(mean - 1 / rate) < 5 * (1 / rate) / math.sqrt(n)
    # coefficient of variation of an exponential is 1 (sd of the estimate ~ 1/sqrt(n) -> 5 sd = 0.035)
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / n)
    assert abs(sd / mean - 1.0) < 0.05
    assert all(b > a for a, b in zip(offsets[:-1], offsets[1:], strict=True))


def test_poisson_normalized_like_bench_serve_ends_at_n_over_rate() -> None:
    offsets = ls.poisson_arrivals(4.0, 80, seed=1, normalize=True)
    assert offsets[-1] == pytest.approx(80 / 4.0)
    with pytest.raises(ValueError, match="positive finite"):
        ls.poisson_arrivals(0.0, 10, seed=1)
    with pytest.raises(ValueError, match="n >= 1"):
        ls.poisson_arrivals(1.0, 0, seed=1)


def test_token_id_prompts_are_distinct_in_range_and_reproducible() -> None:
    prompts = ls.token_id_prompts(50, 64, vocab_size=152064, seed=5)
    assert len(prompts) == 50 and all(len(p) == 64 for p in prompts)
    assert all(0 <= t < 152064 for p in prompts for t in p)
    assert len({tuple(p[:16]) for p in prompts}) == 50
    assert prompts == ls.token_id_prompts(50, 64, vocab_size=152064, seed=5)
    with pytest.raises(ValueError, match="inside the vocabulary"):
        ls.token_id_prompts(1, 4, vocab_size=10, seed=0, high=11)


# --- the driver against a fake engine -----------------------------------------------------

def test_closed_loop_never_exceeds_concurrency_and_checks_every_token() -> None:
    engine = FakeEngine()
    run = drive(engine, concurrency=3)
    assert engine.max_inflight == 3
    assert not run.truncated and all(r.ok for r in run.records) and len(run.records) == 12
    agg = ls.aggregate(run.records, run.expected_requests, start_time=run.start_time)
    assert agg["exact_output_tokens"] and agg["engine"]["negative_parts"] == 0


def test_all_at_once_sends_every_request_immediately() -> None:
    engine = FakeEngine()
    drive(engine)
    assert engine.max_inflight == 12


def test_open_loop_sends_at_the_planned_offsets() -> None:
    engine = FakeEngine()
    arrivals = [0.0, 0.05, 0.1, 0.15]
    run = drive(engine, n=4, arrivals=arrivals)
    lags = sorted(r.send_lag for r in run.records if r.send_lag is not None)
    assert len(lags) == 4 and all(0.0 <= lag < 0.03 for lag in lags)
    assert max(engine.sent) - min(engine.sent) == pytest.approx(0.15, abs=0.03)


def test_deadline_aborts_in_flight_and_drops_unsent_requests() -> None:
    engine = FakeEngine(step_s=0.05)
    run = drive(engine, concurrency=2, output_len=20, deadline=time.monotonic() + 0.2)
    assert run.truncated
    assert len(run.records) == 2 and all(r.error and "deadline" in r.error for r in run.records)
    assert ls.aggregate(run.records, run.expected_requests)["not_sent"] == 10


def test_short_output_is_caught_by_the_token_check() -> None:
    run = drive(FakeEngine(drop_last=True), n=2)
    agg = ls.aggregate(run.records, run.expected_requests)
    assert agg["completed"] == 0 and agg["failures"] == ["4 output tokens, expected 5"]


def test_engine_config_keeps_prefix_caching_off_and_stats_quiet() -> None:
    kwargs = EngineConfig(model_dir="/m", max_model_len=33024).engine_kwargs()
    assert kwargs["enable_prefix_caching"] is False and kwargs["load_format"] == "dummy"
    assert kwargs["disable_log_stats"] is True and kwargs["enable_logging_iteration_details"] is True
    assert "kv_cache_memory_bytes" not in kwargs
    assert EngineConfig("/m", 4096, kv_cache_memory_bytes=8).engine_kwargs()["kv_cache_memory_bytes"] == 8


def test_engine_clock_tap_records_the_step_timestamp_and_passes_through() -> None:
    class Processor:
        def process_outputs(self, outputs: list[int], ts: float | None = None, stats: Any = None) -> int:
            return len(outputs)

    engine = SimpleNamespace(output_processor=Processor())
    stamp: list[float | None] = [None]
    assert _tap_engine_clock(engine, stamp)
    assert engine.output_processor.process_outputs([1, 2], 123.5, None) == 2
    assert stamp == [123.5]
    assert not _tap_engine_clock(SimpleNamespace(), stamp)


# --- ceilings bookkeeping -----------------------------------------------------------------

def test_summarize_runs_reports_work_over_median_time() -> None:
    c = summarize_runs([0.002, 0.001, 0.004], work=8e9, unit="B/s", method="copy")
    assert c["value"] == pytest.approx(8e9 / 0.002) and c["unit"] == "B/s"
    assert c["samples"] == pytest.approx([4e12, 8e12, 2e12]) and c["method"] == "copy"
    with pytest.raises(ValueError, match="positive run times"):
        summarize_runs([], 1.0, "B/s", "copy")


def test_nvidia_smi_line_parses_numbers_and_keeps_na() -> None:
    fields = ("name", "clocks.sm", "power.limit")
    assert parse_nvidia_smi_csv(fields, "NVIDIA H200, 1980, [N/A]") == \
        {"name": "NVIDIA H200", "clocks.sm": 1980.0, "power.limit": "[N/A]"}
    with pytest.raises(ValueError, match="3 fields"):
        parse_nvidia_smi_csv(fields, "a, b")


def test_ceilings_refuse_too_few_runs_before_touching_a_gpu() -> None:
    with pytest.raises(ValueError, match=">= 20 timed runs"):
        measure_all(runs=5)


# --- the plan: dry run, budget, resolution, JSON shape ------------------------------------

def test_dry_run_prints_every_part_within_budget_without_torch_or_vllm(capsys: pytest.CaptureFixture[str]) -> None:
    # tests of other suites that ran earlier in this process (the FlashAttention interpreter
    # tests) may have imported torch themselves: only what the dry run adds counts
    preloaded = {"vllm", "torch"} & set(sys.modules)
    assert plan.main(["--dry-run"]) == 0
    text = capsys.readouterr().out
    for b in plan.DECODE_BATCHES:
        assert f"qwen2.5-7b.decode.b{b} " in text
    for part in ("prefill.L32000", "closed.c64", "poisson.f1.3", "overload", "engine start"):
        assert part in text
    total = float(text.split("total planned: ")[1].split(" s")[0])
    assert total <= 540 - 15
    assert not ({"vllm", "torch"} & set(sys.modules)) - preloaded


def test_budget_fits_and_deadlines_with_a_fake_clock() -> None:
    now = [100.0]
    budget = plan.Budget(540.0, start=100.0, reserve_s=15.0, clock=lambda: now[0])
    assert budget.fits(525.0) and not budget.fits(525.1)
    now[0] = 500.0
    assert budget.remaining() == pytest.approx(140.0)
    assert budget.fits(100.0) and not budget.fits(130.0)
    assert budget.deadline_for(10.0) == pytest.approx(500.0 + 2 * 10 + 20)
    assert budget.deadline_for(100.0) == pytest.approx(100.0 + 540 - 15)  # capped by the budget


def _args(*extra: str) -> Any:
    return plan.parse_args(list(extra))


def test_resolve_part_derives_poisson_rates_and_the_overload_shape() -> None:
    cost = plan.CostModel.from_config(plan.QWEN25_7B_FALLBACK)
    parts = {p.id: p for p in plan.build_plan(_args(), cost)}
    state = {"saturation_rps": 20.0, "pool_tokens": 2_000_000, "max_num_seqs": 128, "max_model_len": 33024}
    p = plan.resolve_part(parts["qwen2.5-7b.poisson.f0.5"], state, cost)
    assert p.settings["rate"] == pytest.approx(10.0) and p.settings["requests"] == 80
    assert plan.poisson_requests(1.0) == 60 and plan.poisson_requests(1000.0) == 100
    o = plan.resolve_part(parts["qwen2.5-7b.overload"], state, cost)
    assert o.settings["requests"] == 128 and o.settings["input_len"] == 2_000_000 // 128
    assert o.settings["demand_over_pool"] > 1.0 and o.estimate_s > 0
    assert plan.resolve_part(parts["qwen2.5-7b.poisson.f1"], {}, cost).settings["rate"] is None


def test_cost_model_matches_the_seed_ledger_for_qwen25_7b() -> None:
    cost = plan.CostModel.from_config(plan.QWEN25_7B_FALLBACK)
    assert cost.kv_bytes_per_token == 57_344                     # 56 KiB, STUDY claim 1
    assert cost.weight_bytes == pytest.approx(14.14e9, rel=2e-3)  # claim 4 (embedding excluded)
    assert cost.flops_per_token == pytest.approx(13.05e9, rel=2e-3)  # claim 5 trunk
    assert cost.attn_flops_coef == 200_704


def test_only_filter_and_bad_kind_error() -> None:
    cost = plan.CostModel.from_config(plan.QWEN25_7B_FALLBACK)
    kinds = {p.kind for p in plan.build_plan(_args("--only", "decode"), cost)}
    assert kinds == {"warmup", "decode"}
    with pytest.raises(SystemExit):
        _args("--only", "decod")


def test_output_json_shape_is_strict_and_incremental(tmp_path: Path) -> None:
    out = plan.Output(tmp_path, {"gpu": "test"})
    out.write()
    doc = json.loads((tmp_path / "latency.json").read_text())
    assert doc == {"schema": "pytest-anatomy/device-batch/v1", "provenance": {"gpu": "test"}, "runs": []}
    records = [_record(0.0, [0.5, 0.6, 0.7], expected=3,
                       engine={"queued_ts": 0.01, "scheduled_ts": 0.02, "first_token_ts": 0.4,
                               "last_token_ts": 0.69})]
    run = LoadRun("x", records, 1, 0.0, 0.7, [ls.TimelineStep(t=0.3, gen_requests=1)], False)
    body, raw = plan.load_run_result(run)
    out.add({"id": "qwen2.5-7b.closed.c1", "kind": "closed", "settings": {}, **body}, raw)
    doc = json.loads((tmp_path / "latency.json").read_text())
    entry = doc["runs"][0]
    assert entry["id"] == "qwen2.5-7b.closed.c1" and all(entry["checks"].values())
    assert set(entry["result"]) >= {"aggregate", "timeline", "per_request", "truncated"}
    assert entry["result"]["aggregate"]["ttft_s"]["median"] == pytest.approx(0.5)
    raw_lines = (tmp_path / "latency-raw.jsonl").read_text().splitlines()
    assert len(raw_lines) == 1
    raw_doc = json.loads(raw_lines[0])
    assert raw_doc["id"] == "qwen2.5-7b.closed.c1"
    assert raw_doc["requests"][0]["chunks"] == [0.5, 0.6, 0.7]
    assert plan.jsonable({"a": float("nan"), "b": (1, float("inf"))}) == {"a": None, "b": [1, None]}
    assert plan.jsonable({"mode": Path("x")}) == {"mode": "x"}


def test_catalog_config_agrees_with_the_plan_facts() -> None:
    config, source = plan.load_model_config(None)
    assert config["num_key_value_heads"] == 4 and "qwen2.5-7b" in source


def test_execute_runs_every_part_end_to_end_against_a_fake_engine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole plan loop (resolution, budget, parts, JSON) with a shrunken workload."""
    for name, value in (("DECODE_BATCHES", (1, 4)), ("DECODE_SHAPE", (32, 8)), ("PREFILL_LENS", (64, 128)),
                        ("PREFILL_REPEATS", 2), ("CLOSED", ((1, 2), (4, 8))), ("SERVE_SHAPE", (32, 8)),
                        ("POISSON_FACTORS", (0.5, 1.0)), ("OVERLOAD_OUTPUT", 8)):
        monkeypatch.setattr(plan, name, value)
    monkeypatch.setattr(plan, "poisson_requests", lambda rate: 6)

    class ResolvedFake(FakeDriver):
        def resolved_settings(self) -> dict[str, Any]:
            return {"kv_cache_tokens": 4 * 64, "max_num_seqs": 4, "max_model_len": 1024}

    def fake_start(cls: type, config: EngineConfig, log: Any = print) -> LoadDriver:
        return ResolvedFake(FakeEngine(step_s=0.001), [], 0.1, log=lambda s: None)

    monkeypatch.setattr(LoadDriver, "start", classmethod(fake_start))
    args = _args("--max-num-seqs", "4", "--out-dir", str(tmp_path))
    cost = plan.CostModel.from_config(plan.QWEN25_7B_FALLBACK)
    out = plan.Output(tmp_path, {"test": True})
    code = asyncio.run(plan.execute(args, out, plan.Budget(540.0), plan.QWEN25_7B_FALLBACK, "/m", cost))
    assert code == 0
    runs = {r["id"]: r for r in json.loads((tmp_path / "latency.json").read_text())["runs"]}
    expected = {"qwen2.5-7b.engine", "warmup", "qwen2.5-7b.decode.b1", "qwen2.5-7b.decode.b4",
                "qwen2.5-7b.prefill.L64", "qwen2.5-7b.prefill.L128", "qwen2.5-7b.closed.c1",
                "qwen2.5-7b.closed.c4", "qwen2.5-7b.poisson.f0.5", "qwen2.5-7b.poisson.f1",
                "qwen2.5-7b.overload"}
    assert set(runs) == expected
    assert not [r["id"] for r in runs.values() if "error" in r or "skipped" in r]
    for rid, r in runs.items():
        assert all(r.get("checks", {}).values()), (rid, r.get("checks"))
    assert runs["qwen2.5-7b.decode.b4"]["result"]["step_time_s"] > 0
    assert runs["qwen2.5-7b.prefill.L128"]["result"]["ttft_s"]["n"] == 2
    assert runs["qwen2.5-7b.poisson.f1"]["settings"]["rate"] == pytest.approx(
        runs["qwen2.5-7b.closed.c4"]["result"]["aggregate"]["request_throughput_per_s"])
    assert runs["qwen2.5-7b.overload"]["settings"]["input_len"] == 64
    raw_ids = [json.loads(line)["id"] for line in (tmp_path / "latency-raw.jsonl").read_text().splitlines()]
    assert len(raw_ids) == len(expected) - 2  # the engine and the warm-up have no raw payload


def test_smi_id_follows_cuda_visible_devices() -> None:
    """nvidia-smi/NVML number GPUs physically; CUDA numbers the visible ones. A plan run with
    CUDA_VISIBLE_DEVICES=1 must record GPU 1's clocks, not GPU 0's."""
    from pytest_anatomy.gpu_query import smi_id

    assert smi_id(0, visible="") == "0" and smi_id(1, visible="") == "1"
    assert smi_id(0, visible="1") == "1"
    assert smi_id(1, visible="3, 2") == "2"
    assert smi_id(0, visible="GPU-8f2c") == "GPU-8f2c"
    with pytest.raises(ValueError, match="not visible"):
        smi_id(1, visible="1")


# --- the decode run-validity check and the plan's second attempt ---------------------------

def test_decode_validity_flags_a_stall_by_either_criterion() -> None:
    """(a) long stalled steps pull the mean over 1.02 x the median; (b) > 5% of the steps under 0.9 x the median are
    the host catching up on work the GPU had finished. A clean run's steps are tight about their median."""
    clean = ls.decode_validity([0.006, 0.00601, 0.00599] * 40)
    assert clean is not None and not clean.flagged and clean.reasons == () and clean.steps == 120
    stalled = ls.decode_validity([0.006] * 100 + [0.012] * 10)  # mean/median 1.091, no short step
    assert stalled is not None and stalled.flagged and len(stalled.reasons) == 1 and "1.091" in stalled.reasons[0]
    catch_up = ls.decode_validity([0.006] * 90 + [0.0045] * 10)  # 10% short, mean under the median
    assert catch_up is not None and catch_up.flagged and catch_up.short_share == pytest.approx(0.10)
    assert catch_up.mean_over_median < 1 and "10% of its steps < 0.9" in catch_up.reasons[0]
    assert ls.decode_validity([]) is None
    summary = ls.decode_validity_of_summary(ls.summarize([0.006] * 100 + [0.012] * 10))
    assert summary is not None and summary.flagged and summary.short_share is None
    assert summary.as_dict()["thresholds"] == {"mean_over_median": 1.02, "catch_up_fraction": 0.9,
                                               "catch_up_share": 0.05}
    assert "flagged (an engine-core stall" in stalled.describe() and "clean" in clean.describe()


@pytest.mark.parametrize("second_flagged", (False, True))
def test_plan_measures_a_flagged_decode_part_again_and_keeps_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second_flagged: bool) -> None:
    """A decode part the validity check flags runs once more: the run kept (its fields where an importer reads them)
    is the first the check passes, else the last; the other is inside it, labelled, and both raw lines are written."""
    calls: list[int] = []

    async def fake_run_part(driver: Any, part: Any, deadline: float, cfg: Any, state: Any) -> Any:
        calls.append(1)
        flagged = len(calls) == 1 or second_flagged
        steps = [0.006] * 100 + ([0.012] * 10 if flagged else [])
        validity = ls.decode_validity(steps)
        assert validity is not None
        return ({"result": {"step_time_s": 0.007 if flagged else 0.006, "attempt_no": len(calls)},
                 "validity": validity.as_dict(), "checks": {}}, {"requests": [], "n": len(calls)})

    monkeypatch.setattr(plan, "run_part", fake_run_part)
    part = plan.Part("qwen2.5-7b.decode.b64", "decode", {"batch": 64}, 1.0)
    out = plan.Output(tmp_path, {"test": True})
    first, raw = asyncio.run(fake_run_part(None, part, 0.0, {}, {}))
    first = {"id": part.id, "kind": "decode", "settings": part.settings, "estimate_s": 1.0, "wall_s": 0.1, **first}
    run, kept_raw = asyncio.run(plan.recheck_decode(None, part, first, raw, out, plan.Budget(540.0), {}, {}))
    out.add(run, kept_raw)
    assert len(calls) == 2
    kept = 2  # the clean second attempt, or the last of two flagged ones
    assert (run["attempt"], run["attempts"], run["flagged"], run["result"]["attempt_no"]) == (
        kept, 2, second_flagged, kept)
    (other,) = run["other_attempts"]
    assert (other["attempt"], other["reconciled"], other["flagged"]) == (1, False, True)
    assert other["validity"]["flagged"] and other["validity"]["mean_over_median"] > 1.02
    lines = [json.loads(line) for line in (tmp_path / "latency-raw.jsonl").read_text().splitlines()]
    assert [(x["id"], x["attempt"], x["reconciled"], x["n"]) for x in lines] == [
        (part.id, 1, False, 1), (part.id, 2, True, 2)]
    doc = json.loads((tmp_path / "latency.json").read_text())
    assert [r["id"] for r in doc["runs"]] == [part.id]  # one run per part: the importer's recording names stay unique


def test_plan_keeps_the_first_clean_attempt_and_skips_a_recheck_without_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    part = plan.Part("qwen2.5-7b.decode.b64", "decode", {"batch": 64}, 1.0)
    flagged = {"flagged": True, "reasons": ["mean/median of its steps 1.100 > 1.02"]}
    first = {"id": part.id, "kind": "decode", "result": {"step_time_s": 0.007}, "validity": flagged}

    async def failing_run_part(*a: Any) -> Any:
        raise RuntimeError("engine died")

    monkeypatch.setattr(plan, "run_part", failing_run_part)
    run, raw = asyncio.run(plan.recheck_decode(None, part, dict(first), {"requests": []}, plan.Output(tmp_path, {}),
                                               plan.Budget(540.0), {}, {}))
    assert (run["attempt"], run["flagged"], run["result"]) == (1, True, first["result"])  # the failed one is kept aside
    assert "error" in run["other_attempts"][0] and raw is not None and raw["attempt"] == 1
    run, raw = asyncio.run(plan.recheck_decode(None, part, dict(first), None, plan.Output(tmp_path, {}),
                                               plan.Budget(1.0), {}, {}))
    assert run["recheck"].startswith("skipped: budget") and "other_attempts" not in run
    assert plan.overhead_model_args(_args()).decode_recheck is False and _args().decode_recheck is True
