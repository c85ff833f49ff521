"""The workload files and their seeded generator (specs/workload_file.py), and the simulator fed with
per-request lengths and prefix hits (theory/serving.py): the same requests on both sides."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
# hypothesis is a dev dependency; the reconciliation report (README's main command) installs only the core
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_anatomy.specs import workload_file as wf
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.specs.workload import poisson_arrivals
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.deployment_ladder import HARDWARE

HERE = Path(__file__).parent
WORKLOADS = sorted((HERE / "workloads").glob("*.json"))
STEPS = lat.StepModel.build(load_model("qwen2.5-7b"), lat.Ceilings.datasheet(get_hardware(HARDWARE)),
                            lat.EngineCalibration("test", step_overhead_s=1.5e-3, compute_efficiency=0.8))


def test_the_workload_files_exist() -> None:
    assert [p.stem for p in WORKLOADS] == ["chat-poisson", "chat", "rag"]  # '-' sorts before '.'


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_generation_is_seeded_and_respects_the_file(path: Path) -> None:
    spec = wf.load(path)
    a, b = wf.generate(spec), wf.generate(spec)
    assert a == b
    assert wf.generate(replace(spec, seed=spec.seed + 1)).requests != a.requests
    assert len(a.requests) == spec.num_requests
    for r in a.requests:
        assert spec.suffix_len.low <= len(r.prompt) - r.prefix_len <= spec.suffix_len.high
        assert spec.output_len.low <= r.output_len <= spec.output_len.high
        if r.prefix is not None:
            assert r.prompt[:r.prefix_len] == a.prefixes[r.prefix] and r.prefix_len == spec.prefix_tokens
    assert max(len(r.prompt) + r.output_len for r in a.requests) <= spec.max_request_tokens
    # the share carrying a shared prefix: binomial, within 4 standard deviations of the file's fraction
    n, f = spec.num_requests, spec.prefix_fraction
    carried = sum(r.prefix is not None for r in a.requests)
    assert abs(carried - n * f) <= 4 * math.sqrt(n * f * (1 - f)) + 1e-9


def test_poisson_offsets_are_the_load_drivers() -> None:
    spec = replace(wf.load(HERE / "workloads" / "chat.json"), process="poisson", rate=5.0, concurrency=None)
    assert wf.generate(spec).arrivals == tuple(poisson_arrivals(5.0, spec.num_requests, spec.seed))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("slo"), "missing field 'slo'"),
    (lambda d: d["arrival"].update(process="burst"), "is not 'closed' or 'poisson'"),
    (lambda d: d["arrival"].update(concurrency=0), "concurrency >= 1"),
    (lambda d: d["suffix_len"].update(min=500), "min <= median <= max"),
    (lambda d: d["output_len"].update(distribution="zipf"), "not supported"),
    (lambda d: d["shared_prefix"].update(fraction=1.5), "fraction in \\[0, 1\\]"),
    (lambda d: d.update(seed="x"), "wrong type"),
], ids=["no-slo", "process", "concurrency", "lengths", "distribution", "fraction", "type"])
def test_malformed_files_are_refused_with_the_field_named(tmp_path: Path, edit, message: str) -> None:
    data = json.loads((HERE / "workloads" / "chat.json").read_text())
    edit(data)
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    with pytest.raises(wf.WorkloadError, match=message):
        wf.load(path)


def test_missing_and_unreadable_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(wf.WorkloadError, match="not found"):
        wf.load(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(wf.WorkloadError, match="not readable JSON"):
        wf.load(tmp_path / "bad.json")


def test_goodput_counts_requests_within_both_limits() -> None:
    slo = wf.Slo(ttft_ms=100, itl_ms=10)
    # TTFT 0.05 s, 11 tokens over 0.15 s: TPOT 10 ms, met; TTFT 0.2 s: not; TPOT 20 ms: not
    assert wf.goodput(slo, (0.05, 0.2, 0.05), (0.15, 0.3, 0.25), (11, 11, 11), 2.0) == 0.5


# --- the simulator with per-request lengths and prefix hits --------------------------------------

def test_equal_per_request_lengths_simulate_exactly_the_fixed_workload() -> None:
    sched = sv.SchedulerConfig(16, 2048, 4000)
    fixed = sv.simulate(STEPS, sched, sv.Workload.closed(8, 40, 700, 90))
    listed = sv.simulate(STEPS, sched, sv.Workload.of_requests((700,) * 40, (90,) * 40, (0,) * 40, concurrency=8))
    assert (listed.ttft, listed.itl, listed.duration, listed.steps) == (fixed.ttft, fixed.itl, fixed.duration,
                                                                        fixed.steps)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(20, 1500), st.integers(1, 60), st.integers(0, 1500)), min_size=1, max_size=24),
       st.integers(1, 8), st.sampled_from([None, 300, 60]))
def test_every_request_gets_its_own_tokens_and_hits_count(reqs, c: int, blocks: int | None) -> None:
    prompts = tuple(p for p, _, _ in reqs)
    outputs = tuple(o for _, o, _ in reqs)
    cached = tuple(16 * (min(h, p - 1) // 16) for p, _, h in reqs)
    if blocks is not None and max(-(-(p + o) // 16) for p, o in zip(prompts, outputs)) > blocks - 1:
        blocks = None  # a request larger than the pool is refused (tested in tests_plugin); keep it unlimited
    res = sv.simulate(STEPS, sv.SchedulerConfig(4, 512, blocks), sv.Workload.of_requests(prompts, outputs, cached,
                                                                                       concurrency=c))
    assert res.output_tokens == sum(outputs) and len(res.ttft) == len(reqs)
    assert res.hit_tokens == sum(cached) and res.prompt_tokens == sum(prompts)
    # every block taken came back and the cache's shared blocks were never taken: the pool ends as it began
    assert res.free_blocks_end == (math.inf if blocks is None else blocks - 1)


def test_a_hit_shortens_a_lone_requests_ttft_by_the_skipped_prefill() -> None:
    sched = sv.SchedulerConfig(4, 8192)
    cold = sv.simulate(STEPS, sched, sv.Workload.of_requests((3200,), (10,), (0,), concurrency=1))
    warm = sv.simulate(STEPS, sched, sv.Workload.of_requests((3200,), (10,), (2992,), concurrency=1))
    # one step each: the whole prompt, or its 208-token tail attending to 2,992 cached tokens
    assert cold.ttft[0] == pytest.approx(STEPS.seconds(0, 0.0, ((3200, 0),)), rel=1e-12)
    assert warm.ttft[0] == pytest.approx(STEPS.seconds(0, 0.0, ((208, 2992),)), rel=1e-12)


def test_cached_tokens_must_leave_the_last_one() -> None:
    with pytest.raises(ValueError, match="last one is recomputed"):
        sv.Workload.of_requests((100,), (5,), (100,), concurrency=1)


# --- speculation in the simulator ----------------------------------------------------------------

def _spec(e: float, k: int = 4, sizes: tuple[int, ...] = ()) -> sv.SchedulerConfig:
    return sv.SchedulerConfig(8, 4096, spec_tokens=k, spec_tokens_per_step=e, capture_sizes=sizes)


@pytest.mark.parametrize(("e", "decode_steps"), [(5.0, 20), (2.5, 40), (1.0, 100)])
def test_a_lone_request_takes_output_over_e_verify_steps(e: float, decode_steps: int) -> None:
    """101 tokens: the first from the prefill, the other 100 at E per verify step (credits carry the
    fraction: 2.5 = 2, 3, 2, 3, ...)."""
    res = sv.simulate(STEPS, _spec(e), sv.Workload.of_requests((500,), (101,), concurrency=1))
    assert res.output_tokens == 101 and res.steps == 1 + decode_steps
    assert len(res.itl) == 100  # one gap per token after the first, whatever the chunk sizes


def test_full_acceptance_spreads_each_step_over_its_tokens() -> None:
    res = sv.simulate(STEPS, _spec(5.0), sv.Workload.of_requests((500,), (11,), concurrency=1))
    # two verify steps of 5 tokens each: ten per-token gaps, five equal ones per step
    assert len(set(res.itl[:5])) == 1 and len(set(res.itl[5:])) == 1
    assert res.itl[0] == pytest.approx(STEPS.seconds(0, 0.0, ((5, 500),), 5) / 5, rel=1e-12)


def test_verify_steps_pay_their_graph_padding() -> None:
    """64 sequences x 5 tokens = 320 query tokens run as a 330-token graph: compute-bound there, so the one
    verify step (6 outputs: 1 from the prefill, 5 verified at once) is longer by 10 tokens' matmuls."""
    work = sv.Workload.of_requests((300,) * 64, (6,) * 64, concurrency=64)
    sched = sv.SchedulerConfig(64, 32768, spec_tokens=4, spec_tokens_per_step=5.0)
    bare, padded = (sv.simulate(STEPS, replace(sched, capture_sizes=s), work) for s in ((), (64, 330)))
    assert padded.steps == bare.steps == 2
    assert padded.duration - bare.duration == pytest.approx(10 * STEPS.trunk_flops / STEPS.effective_peak, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(20, 800), st.integers(1, 40)), min_size=1, max_size=16),
       st.integers(1, 6), st.floats(1.0, 7.0), st.sampled_from([None, 200]))
def test_speculating_every_request_still_gets_exactly_its_tokens(reqs, k: int, e: float, blocks: int | None) -> None:
    prompts, outputs = tuple(p for p, _ in reqs), tuple(o for _, o in reqs)
    e = min(e, k + 1)
    if blocks is not None and max(-(-(p + o + k) // 16) for p, o in reqs) > blocks - 1:
        blocks = None
    res = sv.simulate(STEPS, sv.SchedulerConfig(4, 256, blocks, spec_tokens=k, spec_tokens_per_step=e),
                      sv.Workload.of_requests(prompts, outputs, concurrency=3))
    assert res.output_tokens == sum(outputs) and len(res.itl) == sum(o - 1 for o in outputs)
    assert res.free_blocks_end == (math.inf if blocks is None else blocks - 1)


def test_replicas_share_the_requests_round_robin() -> None:
    work = wf.generate(wf.load(HERE / "workloads" / "chat.json"))
    parts = [wf.share(work, 3, i) for i in range(3)]
    assert sorted(r.prompt for p in parts for r in p.requests) == sorted(r.prompt for r in work.requests)
    assert [p.spec.concurrency for p in parts] == [11, 11, 11]  # 32 users over 3 engines, rounded up
    assert parts[1].requests[0] == work.requests[1] and parts[0].spec.num_requests == 54


def test_the_simulators_verify_steps_agree_with_the_closed_form() -> None:
    """Two implementations of one step: 8 sequences decoding together with every draft accepted (E = 5).
    The simulated median per-token ITL equals speculative.verify_step's t_verify / E at the run's middle
    context (264): the contexts grow 65 -> 465, the KV read moves the step by ~1% across the run, and the
    median step sits within a few tokens of the middle, hence 0.1%."""
    from pytest_anatomy.theory import speculative as spec

    work = sv.Workload.of_requests((64,) * 8, (401,) * 8, concurrency=8)
    res = sv.simulate(STEPS, _spec(5.0), work)
    closed = spec.verify_step(load_model("qwen2.5-7b"), lat.Ceilings.datasheet(get_hardware(HARDWARE)),
                              lat.EngineCalibration("test", step_overhead_s=1.5e-3, compute_efficiency=0.8),
                              8, 64 + 200, 4, 5.0).per_token.value
    assert res.stat("itl", "p50") == pytest.approx(closed, rel=1e-3)


def test_only_the_drafting_share_of_decode_steps_verifies() -> None:
    """Half the decode steps draft (every draft accepted, E = 5): steps alternate 1 and 5 tokens, 96 tokens in
    32 steps, then 1 and the last 4 (drafts capped at the output length): 34 decode steps after the prefill."""
    res = sv.simulate(STEPS, replace(_spec(5.0), spec_draft_fraction=0.5),
                      sv.Workload.of_requests((500,), (101,), concurrency=1))
    assert res.output_tokens == 101 and res.steps == 1 + 34
