"""CPU tests of the latency theory: FLOP ledger, step model, calibration fits, the closed-loop
ITL closed form and the continuous-batching simulation (theory/flops, latency, serving)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_anatomy.measure.load_stats import poisson_arrivals
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import flops as fl
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.theory.capacity import NotModeled
from pytest_anatomy.theory.flops import StepWork

QWEN = load_model("qwen2.5-7b")
GEMMA = load_model("gemma-2-9b")  # alternating sliding-window layers
RTX = lat.Ceilings.datasheet(get_hardware("rtx4090"))
H200 = lat.Ceilings.datasheet(get_hardware("h200"))


# --- FLOPs: the seed's coefficients (STUDY.md claim 5) --------------------------------------

def test_seed_flop_coefficients_come_out() -> None:
    assert round(fl.trunk_matmul_flops_per_token(QWEN).value / 1e9, 2) == 13.05
    assert round(fl.lm_head_flops_per_token(QWEN).value / 1e9, 2) == 1.09
    assert fl.attention_flops_coefficient(QWEN) == 401_408
    assert fl.decode_attention_flops(QWEN, 1000).value == 401_408 * 1000
    s = 4096
    assert fl.prefill_attention_flops(QWEN, s).value == 200_704 * s * (s + 1)  # S(S+1)/2 x 401,408
    assert fl.prefill_attention_flops(QWEN, s).terms[0].value == 200_704


def test_seed_flops_per_output_token() -> None:
    """67.63 GFLOP for 1024/256 with the seed's count of 256 decode steps; one fewer physically."""
    assert round(fl.flops_per_output_token(QWEN, 1024, 256, decode_steps=256).value / 1e9, 2) == 67.63
    physical = fl.flops_per_output_token(QWEN, 1024, 256).value
    assert physical < 67.63e9 and physical == pytest.approx(67.63e9, rel=1.5e-3)


def test_mla_attention_is_not_modeled() -> None:
    with pytest.raises(NotModeled, match="MLA"):
        fl.attention_flops_coefficient(load_model("deepseek-v2-lite"))


@given(past=st.integers(0, 20_000), a=st.integers(0, 5_000), b=st.integers(0, 5_000),
       window=st.sampled_from([None, 1, 16, 4096]))
def test_causal_attention_is_invariant_to_chunking(past, a, b, window) -> None:
    """Prefilling a + b tokens at once does the same attention work as a chunk of a then b."""
    whole = fl._visible(past, a + b, window)
    assert whole == fl._visible(past, a, window) + fl._visible(past + a, b, window)
    if window is not None:
        assert whole <= (a + b) * window and whole <= fl._visible(past, a + b, None)


def test_sliding_window_caps_attention_and_kv_reads() -> None:
    long = fl.decode_attention_flops(GEMMA, 100_000).value
    short = fl.decode_attention_flops(GEMMA, 4096).value
    windows = {la.window for la in GEMMA.layer_attention} - {None}
    assert windows == {4096} and long < 100_000 / 4096 * short
    assert lat.kv_read_bytes(GEMMA, 100_000) < 100_000 / 4096 * lat.kv_read_bytes(GEMMA, 4096)


# --- the step model ---------------------------------------------------------------------

def test_seed_decode_floor() -> None:
    """Claim 4: (weights + C x 1,152 x 56 KiB) / 1008 GB/s = 14.09 / 14.55 / 16.13 / 18.22 ms.
    Within 0.01 ms: the study rounds to 0.01 ms and does not count the KV written (C x 56 KiB)."""
    for c, ms in ((1, 14.09), (8, 14.55), (32, 16.13), (64, 18.22)):
        p = lat.decode_step_time(QWEN, RTX, lat.UNCALIBRATED, c, 1152)
        assert p.value * 1e3 == pytest.approx(ms, abs=0.01)
        assert p.notes[0] == "memory-bound"


def test_prefill_is_compute_bound_and_chunks_add_overheads() -> None:
    calib = lat.EngineCalibration("test", step_overhead_s=1e-3)
    one = lat.prefill_time(QWEN, H200, calib, 8192)
    four = lat.prefill_time(QWEN, H200, calib, 8192, 2048)
    assert "compute-bound" in one.terms[0].note
    assert four.inputs["chunks"] == 4 and four.value > one.value + 3 * 1e-3 * 0.99
    small = lat.prefill_time(QWEN, H200, lat.UNCALIBRATED, 16)
    assert "memory-bound" in small.terms[0].note  # 16 tokens cannot amortize the weight read
    assert [c for c in lat.prefill_chunks(5000, 2048)] == [(2048, 0), (2048, 2048), (904, 4096)]


WORK = st.builds(
    lambda d, ctx, chunks: StepWork(decode_tokens=d, decode_context_sum=d * ctx, prefill=tuple(chunks)),
    st.integers(0, 256), st.integers(1, 32_000),
    st.lists(st.tuples(st.integers(1, 8192), st.integers(0, 30_000)), max_size=3),
).filter(lambda w: w.new_tokens > 0)


@settings(max_examples=60, deadline=None)
@given(work=WORK, model=st.sampled_from([QWEN, GEMMA]), overhead=st.floats(0, 5e-3), eta=st.floats(0.3, 1.0))
def test_step_model_arithmetic_equals_the_prediction(work, model, overhead, eta) -> None:
    calib = lat.EngineCalibration("t", step_overhead_s=overhead, compute_efficiency=eta)
    fast = lat.StepModel.build(model, H200, calib).seconds(work.decode_tokens, work.decode_context_sum, work.prefill)
    slow = lat.step_time(model, H200, calib, work)
    assert fast == pytest.approx(slow.value, rel=1e-9)
    memory = next(t.value for t in slow.terms if t.name == "bytes / BW")
    compute = next(t.value for t in slow.terms if t.name == "FLOPs / (eta x peak)")
    assert slow.value == pytest.approx(max(memory, compute) + overhead, rel=1e-12)


@settings(deadline=None)
@given(b=st.integers(1, 255), ctx=st.integers(1, 30_000))
def test_decode_step_grows_with_batch_and_context(b, ctx) -> None:
    t = lat.decode_step_time
    assert t(QWEN, H200, lat.UNCALIBRATED, b + 1, ctx).value > t(QWEN, H200, lat.UNCALIBRATED, b, ctx).value
    assert t(QWEN, H200, lat.UNCALIBRATED, b, ctx + 1).value > t(QWEN, H200, lat.UNCALIBRATED, b, ctx).value


def test_measured_ceilings_carry_the_datasheet_beside() -> None:
    c = lat.Ceilings.measured(get_hardware("h200"), bandwidth=4.469e12, peak=799.6e12, source="ceilings@X")
    bw, peak = c.terms()
    assert bw.value == 4.469e12 and "measured: ceilings@X" in bw.note and "datasheet 4800 GB/s" in bw.note
    assert "datasheet 989.5 TFLOP/s" in peak.note
    with pytest.raises(ValueError):
        lat.Ceilings.measured(get_hardware("h200"), bandwidth=0, peak=1, source="x")


# --- calibration fits ------------------------------------------------------------------------

def test_fits_reproduce_their_in_sample_points_and_name_them() -> None:
    calib = lat.fit_step_overhead(QWEN, H200, 1, 1088, 4.5e-3, name="engine@gpu", fitted_on="run-a:step")
    assert lat.decode_step_time(QWEN, H200, calib, 1, 1088).value == pytest.approx(4.5e-3, rel=1e-12)
    calib = lat.fit_compute_efficiency(QWEN, H200, lat.prefill_work(8192, 8192), 0.2, calib, fitted_on="run-b:p")
    assert lat.prefill_time(QWEN, H200, calib, 8192, 8192).value == pytest.approx(0.2, rel=1e-12)
    assert calib.fitted_on == ("run-a:step", "run-b:p") and calib.name == "engine@gpu"
    assert "run-a:step" in calib.describe() and 0 < calib.compute_efficiency < 1


def test_fits_refuse_impossible_inputs() -> None:
    with pytest.raises(ValueError, match="negative overhead"):
        lat.fit_step_overhead(QWEN, H200, 1, 1088, 1e-3, name="x", fitted_on="y")  # faster than the roofline
    with pytest.raises(ValueError, match="memory-bound"):
        lat.fit_compute_efficiency(QWEN, H200, [lat.decode_work(1, 1000)], 0.05, lat.UNCALIBRATED, fitted_on="z")


# --- chunked prefill in a closed loop -------------------------------------------------------

def test_closed_loop_itl_percentiles() -> None:
    one = lat.closed_loop_itl(QWEN, RTX, lat.UNCALIBRATED, 1, 1024, 256, 2048)
    assert one.mixed_fraction == 0 and one.percentile(99).value == one.decode_step.value
    eight = lat.closed_loop_itl(QWEN, RTX, lat.UNCALIBRATED, 8, 1024, 256, 2048)
    assert eight.mixed_fraction == pytest.approx(7 / 255)
    assert eight.percentile(50).value == eight.decode_step.value < eight.percentile(99).value
    assert eight.percentile(99).value == eight.mixed_step.value
    assert eight.decode_step.value < eight.mean().value < eight.mixed_step.value
    tight = lat.closed_loop_itl(QWEN, RTX, lat.UNCALIBRATED, 8, 4096, 256, 1024)
    assert tight.steps_per_prefill == math.ceil(4096 / (1024 - 7))


# --- the simulation -------------------------------------------------------------------------

def _constant(step_s: float) -> lat.StepModel:
    """A step model whose every step takes step_s: the scheduler's logic alone is tested."""
    return lat.StepModel(weight_bytes=0.0, kv_layer_bytes=0.0, full_layers=1, window_layers=(), kv_token_bytes=0.0,
                         trunk_flops=0.0, head_flops=0.0, attn_layer_coef=0.0, bandwidth=1.0,
                         effective_peak=1.0, overhead_s=step_s)


def test_closed_loop_timing_is_exact_with_constant_steps() -> None:
    res = sv.simulate(_constant(0.01), sv.SchedulerConfig(8, 4096), sv.Workload.closed(1, 5, 100, 20))
    assert res.output_tokens == 100 and len(res.itl) == 5 * 19
    assert all(x == pytest.approx(0.01) for x in res.itl + res.ttft)
    assert res.duration == pytest.approx(5 * 20 * 0.01) and res.preemptions == 0
    chunked = sv.simulate(_constant(0.01), sv.SchedulerConfig(8, 64), sv.Workload.closed(1, 1, 200, 2))
    assert chunked.ttft[0] == pytest.approx(4 * 0.01)  # ceil(200 / 64) steps before the first token


def test_request_times_add_exactly_their_fixed_terms() -> None:
    """RequestTimes: in a closed loop of one, each request costs ingress + first-token excess + egress more; ITL is
    unchanged, TTFT and e2e grow by all three, the engine queue by none (ingress is before the engine sees it)."""
    fixed = sv.RequestTimes(ingress_s=0.002, first_token_s=0.005, egress_s=0.001)
    work = sv.Workload.closed(1, 5, 100, 20)
    bare = sv.simulate(_constant(0.01), sv.SchedulerConfig(8, 4096), work)
    res = sv.simulate(_constant(0.01), sv.SchedulerConfig(8, 4096), work, fixed=fixed)
    assert res.itl == pytest.approx(bare.itl)
    assert all(x == pytest.approx(0.01 + 0.008) for x in res.ttft)
    assert all(x == pytest.approx(20 * 0.01 + 0.008) for x in res.e2e)
    assert all(x == pytest.approx(0.0, abs=1e-12) for x in res.queue)
    assert res.duration == pytest.approx(5 * (20 * 0.01 + 0.008))
    assert sv.simulate(_constant(0.01), sv.SchedulerConfig(8, 4096), work, fixed=sv.RequestTimes()) == bare
    # with two in flight, each prompt's excess lengthens the step that completes it: both prompts share one step
    two = sv.simulate(_constant(0.01), sv.SchedulerConfig(8, 4096), sv.Workload.closed(2, 2, 10, 3),
                      fixed=sv.RequestTimes(first_token_s=0.005))
    assert two.ttft == pytest.approx((0.02, 0.02)) and two.duration == pytest.approx(0.04)
    with pytest.raises(ValueError, match=">= 0"):
        sv.RequestTimes(egress_s=-0.001)


def test_max_num_seqs_queues_the_rest() -> None:
    res = sv.simulate(_constant(0.01), sv.SchedulerConfig(2, 4096), sv.Workload.closed(4, 4, 10, 5))
    assert res.max_running == 2 and sorted(res.ttft) == pytest.approx([0.01, 0.01, 0.06, 0.06])
    assert sorted(res.queue) == pytest.approx([0, 0, 0.05, 0.05])


@settings(max_examples=25, deadline=None)
@given(blocks=st.integers(12, 60), c=st.integers(1, 12), n_in=st.integers(1, 100), n_out=st.integers(1, 60),
       full=st.booleans())
def test_every_request_completes_exactly_even_when_preempted(blocks, c, n_in, n_out, full) -> None:
    if -(-(n_in + n_out) // 16) > blocks - 1:
        return  # does not fit alone: refused (tested below)
    sched = sv.SchedulerConfig(16, 256, blocks, reserve_full_sequence=full)
    res = sv.simulate(_constant(0.001), sched, sv.Workload.closed(c, 2 * c, n_in, n_out))
    assert res.output_tokens == 2 * c * n_out and len(res.e2e) == 2 * c
    assert len(res.itl) == 2 * c * (n_out - 1)
    if res.preemptions:
        assert res.recomputed_tokens > 0


def test_a_request_larger_than_the_pool_is_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        sv.simulate(_constant(0.001), sv.SchedulerConfig(4, 256, 4), sv.Workload.closed(1, 1, 100, 10))


def test_poisson_offsets_match_the_load_driver() -> None:
    """The simulation replays a recorded open-loop run's exact arrivals (same seed, same rule)."""
    for normalize in (False, True):
        workload = sv.Workload.poisson(7.5, 40, 1024, 256, 402, normalize=normalize)
        assert list(workload.arrivals) == poisson_arrivals(7.5, 40, 402, normalize=normalize)
    with pytest.raises(ValueError):
        sv.Workload(10, 10, 3, concurrency=1, arrivals=(0.0, 1.0, 2.0))


def test_seed_overload_closed_forms() -> None:
    """Claim 9's pool (7,504 blocks, one held back) against 6144/2048 requests."""
    k = sv.kv_concurrency((7504 - 1) * 16, 6144, 2048)
    assert k["peak_admitted"].value == 19 and k["never_preempted"].value == 14
    assert k["mean_occupancy"].value == pytest.approx(7503 / 448)
    assert sv.littles_law_wait(36.4, 0.26).value == pytest.approx(140, abs=0.01)


def test_saturation_of_a_synchronized_closed_loop() -> None:
    """Constant steps, prompts fit one step: each wave is 1 prefill + (O - 1) decode steps."""
    knee = sv.saturation(_constant(0.01), sv.SchedulerConfig(4, 4096), 16, 10)
    assert knee["concurrency"] == 4 and knee["request_rate"] == pytest.approx(4 / (10 * 0.01))
    capped = sv.saturation(_constant(0.01), sv.SchedulerConfig(64, 4096, 11), 16, 10)
    assert capped["concurrency"] == 5  # 10 usable blocks of 16, two per 26-token request
