"""The tuning ladder (theory/deployment.py): each rung one change against its parent, the engine
arguments it passes, how the limits are chosen, and the direction and size of each rung's predicted gain."""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any

import pytest

from pytest_anatomy.deployment_ladder import workload_path
from pytest_anatomy.specs import workload_file as wf
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import deployment as dp
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory.prefix_cache import hit_tokens
from pytest_anatomy.deployment_ladder import HARDWARE

QWEN = load_model("qwen2.5-7b")
H200 = get_hardware(HARDWARE)
CEIL = lat.Ceilings.datasheet(H200)
CAL = lat.EngineCalibration("test", step_overhead_s=1.5e-3, compute_efficiency=0.8)


@cache
def work(name: str) -> wf.GeneratedWorkload:
    return wf.generate(wf.load(workload_path(name)))


@cache
def rows(name: str, e: float | None = None) -> dict[str, dict[str, Any]]:
    return {r["step"]: r for r in dp.run_ladder(QWEN, H200, CEIL, CAL, work(name), e)}


# which EngineKnobs fields each rung may change against its parent
CHANGES = {"limits": {"max_num_seqs", "max_num_batched_tokens"}, "prefix_cache": {"prefix_caching"},
           "fp8_weights": {"fp8_weights"}, "fp8_kv": {"fp8_kv"}, "eager": {"cudagraphs"}, "ngram": {"spec_tokens"}}


def test_each_rung_changes_one_knob_against_its_parent() -> None:
    steps = {s.name: s for s in dp.ladder(1024, 8192, (32, 1024))}
    for name, allowed in CHANGES.items():
        s, parent = steps[name], steps[steps[name].parent or ""]
        changed = {f.name for f in fields(dp.EngineKnobs) if getattr(s.knobs, f.name) != getattr(parent.knobs, f.name)}
        assert changed == allowed, name
    assert steps["baseline"].parent is None and not steps["baseline"].knobs.prefix_caching


def test_engine_arguments_of_the_top_rungs() -> None:
    steps = {s.name: s for s in dp.ladder(1024, 8192, (16, 2048), spec_tokens=4)}
    assert steps["ngram"].knobs.engine_kwargs() == {
        "max_num_seqs": 16, "max_num_batched_tokens": 2048, "enable_prefix_caching": True, "enforce_eager": False,
        "quantization": "fp8", "kv_cache_dtype": "fp8",
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
                               "prompt_lookup_max": 4}}
    assert steps["eager"].knobs.engine_kwargs()["enforce_eager"] is True


def test_limits_take_the_largest_budget_whose_chunk_step_meets_the_itl_slo() -> None:
    w = work("chat")
    assert dp.tuned_limits(w, {512: 0.010, 1024: 0.020, 2048: 0.040}, 0.025) == (32, 1024)
    assert dp.tuned_limits(w, {512: 0.030, 1024: 0.040}, 0.025) == (32, 512)  # none meets it: the smallest
    assert dp.tuned_limits(w, {16: 0.001, 512: 0.030}, 0.025) == (32, 512)  # a budget below the decodes is no budget
    open_loop = wf.generate(wf.load(workload_path("chat-poisson")))
    assert dp.tuned_limits(open_loop, {512: 0.010, 1024: 0.020}, 0.025, 1024) == (1024, 1024)  # keeps vLLM's seqs


def test_the_prefix_rung_skips_exactly_the_block_granular_hits() -> None:
    w = work("rag")
    r = rows("rag")
    assert r["limits"]["terms"]["hit_tokens"] == 0
    assert r["prefix_cache"]["terms"]["hit_tokens"] == sum(hit_tokens(len(q.prompt), q.prefix_len) for q in w.requests)
    assert r["prefix_cache"]["gain"]["ttft_p50_s"] < 0.5  # 2,992 of ~3,200 prompt tokens skipped


def test_fp8_rungs_shorten_the_decode_by_at_most_their_bytes() -> None:
    r = rows("chat")
    g = r["fp8_weights"]["gain"]["itl_p50_s"]
    assert 0.5 < g < 1  # weights halve (lm_head kept), the overhead and KV stay
    assert r["fp8_kv"]["gain"]["itl_p50_s"] < 1


def test_an_fp8_kv_cache_doubles_the_pool() -> None:
    """Half the bytes per block: twice the blocks per byte left for KV (which the ledger lowers a little
    for fp8: its model-memory term grows), to one block of flooring."""
    from pytest_anatomy.theory.planning import capacity

    bf16, fp8 = (dp.pool_blocks(QWEN, H200, dp.EngineKnobs(32, 1024, fp8_kv=kv)) for kv in (False, True))
    avail = [capacity(QWEN, H200, max_model_len=dp.MAX_MODEL_LEN, kv_cache_dtype=d, max_num_seqs=32,
                      max_num_batched_tokens=1024)["available_kv_bytes"].value for d in ("auto", "fp8")]
    assert bf16 is not None and fp8 is not None
    assert abs(fp8 - 2 * bf16 * avail[1] / avail[0]) <= 2


def test_the_eager_rung_adds_the_assumed_launches_to_every_step() -> None:
    knobs = dp.EngineKnobs(32, 1024, cudagraphs=False)
    graphs = dp.step_model(QWEN, CEIL, CAL, dp.EngineKnobs(32, 1024))
    eager = dp.step_model(QWEN, CEIL, CAL, knobs)
    assert eager.overhead_s - graphs.overhead_s == pytest.approx(
        QWEN.num_layers * dp.EAGER_LAUNCHES_PER_LAYER * dp.EAGER_LAUNCH_S, rel=1e-12)
    assert rows("chat")["eager"]["gain"]["itl_p50_s"] > 1


def test_the_ngram_rung_takes_a_measured_e_and_predicts_nothing_without_it() -> None:
    blind, seen, none = rows("chat")["ngram"], rows("chat", 2.5)["ngram"], rows("chat", 1.0)["ngram"]
    assert all(v is None for v in blind["predicted"].values())
    assert blind["terms"]["t_verify_s"] > blind["terms"]["t_decode_s"]
    assert all(v is not None for v in seen["predicted"].values())  # simulated: every metric, goodput included
    # E = 2.5 at ~32 running sequences (weight-bound steps): the per-token ITL falls, by less than E
    assert 1 / 2.5 < seen["gain"]["itl_p50_s"] < 1 and seen["gain"]["output_throughput"] > 1
    # nothing accepted: every verify costs more than the decode it replaces
    assert none["gain"]["itl_p50_s"] > 1 and none["gain"]["output_throughput"] < 1


@pytest.mark.parametrize(("predicted", "measured", "ok"), [(0.5, 0.55, True), (0.5, 0.7, False), (2.0, 1.7, True),
                                                          (2.0, 1.6, False)])
def test_the_20_percent_target(predicted: float, measured: float, ok: bool) -> None:
    assert dp.gain_within(predicted, measured) is ok
    lo, hi = dp.gain_band()  # the same target as the replay's band on measured / predicted
    assert (lo <= measured / predicted <= hi) is ok
