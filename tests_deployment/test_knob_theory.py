"""CPU tests of each knob's theory: prefix-cache hits, n-gram speculation, fp8 bytes, chunked-prefill
interference (theory/prefix_cache, speculative, fp8, chunked_prefill). Exact values where the formula
gives one, properties (hypothesis) where it states a direction; every one fails if the formula moves."""

from __future__ import annotations

import math

import pytest
# hypothesis is a dev dependency; the reconciliation report (README's main command) installs only the core
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory import flops as fl
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import prefix_cache as pc
from pytest_anatomy.theory import speculative as sp
from pytest_anatomy.theory.chunked_prefill import interference
from pytest_anatomy.theory.fp8 import apply_fp8
from pytest_anatomy.theory.vllm_settings import default_capture_sizes
from pytest_anatomy.deployment_ladder import HARDWARE

QWEN = load_model("qwen2.5-7b")
H200 = lat.Ceilings.datasheet(get_hardware(HARDWARE))
# A calibration with an overhead and eta < 1, so that the tests see both terms move.
CAL = lat.EngineCalibration("test", step_overhead_s=1.5e-3, compute_efficiency=0.8)
SMALL = settings(max_examples=40, deadline=None)


# --- prefix cache -----------------------------------------------------------------------------

@pytest.mark.parametrize(("prompt", "cached", "hit"), [
    (1000, 256, 256),  # the whole prefix: 16 full blocks
    (1000, 250, 240),  # a partial last block never hits
    (257, 256, 256),  # one token beyond the prefix: that token is computed
    (256, 256, 240),  # a full hit: the last token is recomputed, and with it its whole block
    (256, 1000, 240),  # a cache holding more than the prompt: capped at L - 1
    (15, 15, 0),  # shorter than a block
    (1000, 0, 0),
])
def test_hits_are_whole_blocks_and_never_the_last_token(prompt: int, cached: int, hit: int) -> None:
    assert pc.hit_tokens(prompt, cached) == hit
    assert pc.prefill_tokens(prompt, cached) == prompt - hit


@given(st.integers(1, 20_000), st.integers(0, 20_000), st.sampled_from([1, 16, 32, 128]))
def test_hit_is_the_largest_block_multiple_below_both_limits(prompt: int, cached: int, bs: int) -> None:
    hit = pc.hit_tokens(prompt, cached, bs)
    assert hit % bs == 0 and 0 <= hit <= min(cached, prompt - 1)
    assert hit + bs > min(cached, prompt - 1)  # one block more would break a limit
    assert pc.prefill_tokens(prompt, cached, bs) >= 1


def test_no_hit_is_the_plain_prefill() -> None:
    """With nothing cached the cached-prefill path runs exactly latency.prefill_work's steps."""
    for budget in (None, 512, 2048):
        assert pc.prefill_work_after_hit(3000, 0, budget) == lat.prefill_work(3000, budget)
        assert pc.cached_prefill_time(QWEN, H200, CAL, 3000, 0, budget).value == pytest.approx(
            lat.prefill_time(QWEN, H200, CAL, 3000, budget).value, rel=1e-12)


@SMALL
@given(st.integers(2, 6000), st.integers(0, 6000), st.integers(0, 6000))
def test_more_cached_tokens_never_cost_more_prefill(prompt: int, a: int, b: int) -> None:
    """Within one chunk (the budget above the prompt). Across a chunk boundary it is not true; see below."""
    lo, hi = sorted((a, b))
    t = [pc.cached_prefill_time(QWEN, H200, CAL, prompt, c, 8192).value for c in (lo, hi)]
    assert t[1] <= t[0] * (1 + 1e-12)


def test_a_hit_that_moves_a_chunk_boundary_can_cost_a_little_more() -> None:
    """Found by the property above when it ran with a 2,048-token budget (hypothesis: prompt 2,065, 16 cached):
    cold, the chunks are 2,048 tokens then 17; warm, 2,048 tokens after 16 cached ones, then 1. The first chunk's
    attention now spans 16 more keys, while the second step, memory-bound, costs about the same for 1 token as for
    17: the warm prefill is slower, by less than 0.1%. vLLM schedules the same chunks, so this is the model's
    answer, not an artifact of it."""
    cold = pc.cached_prefill_time(QWEN, H200, CAL, 2065, 0, 2048).value
    warm = pc.cached_prefill_time(QWEN, H200, CAL, 2065, 16, 2048).value
    assert cold < warm < cold * 1.001


def test_ttft_saved_is_the_two_prefills_apart() -> None:
    saved = pc.ttft_saved(QWEN, H200, CAL, 3200, 3000, 8192)
    cold = lat.prefill_time(QWEN, H200, CAL, 3200, 8192).value
    warm = pc.cached_prefill_time(QWEN, H200, CAL, 3200, 3000, 8192).value
    assert saved.value == pytest.approx(cold - warm, rel=1e-12)
    # the warm tail is 3200 - 2992 = 208 tokens attending to 2992 cached ones: one step
    assert next(t.value for t in saved.terms if t.name == "hit tokens") == 2992


# --- speculative decoding -------------------------------------------------------------------

@pytest.mark.parametrize(("alpha", "gamma", "e"), [(0.0, 4, 1.0), (1.0, 4, 5.0), (0.5, 1, 1.5),
                                                  (0.5, 3, 1.875), (0.8, 4, 3.3616)])
def test_expected_tokens_per_step(alpha: float, gamma: int, e: float) -> None:
    assert sp.expected_tokens(alpha, gamma) == pytest.approx(e, rel=1e-12)


@given(st.floats(0, 0.999), st.integers(1, 10))
def test_expected_tokens_is_the_geometric_sum_and_inverts(alpha: float, gamma: int) -> None:
    e = sp.expected_tokens(alpha, gamma)
    assert e == pytest.approx(math.fsum(alpha ** i for i in range(gamma + 1)), rel=1e-9)
    if alpha > 0.01:  # below that E is flat to 1e-2 and alpha is not recoverable to this precision
        assert sp.alpha_for_tokens(e, gamma) == pytest.approx(alpha, abs=1e-6)


@given(st.integers(1, 10_000), st.floats(0, 1), st.integers(1, 8))
def test_counters_give_e_without_alpha(drafts: int, alpha: float, gamma: int) -> None:
    """Counters of an engine whose acceptance is alpha at every position reproduce E(alpha, gamma)."""
    accepted = tuple(drafts * alpha ** i for i in range(1, gamma + 1))
    e = 1 + sum(accepted) / drafts
    assert e == pytest.approx(sp.expected_tokens(alpha, gamma), rel=1e-9)
    counts = tuple(int(a) for a in accepted)
    assert 1 <= sp.tokens_from_counters(drafts, counts) <= gamma + 1


def test_counters_example_and_refusals() -> None:
    assert sp.tokens_from_counters(10, (8, 6, 3, 1)) == pytest.approx(2.8)
    with pytest.raises(ValueError, match="non-increasing"):
        sp.tokens_from_counters(10, (3, 6))
    with pytest.raises(ValueError, match="not measured"):
        sp.tokens_from_counters(0, ())


@given(st.integers(1, 1024), st.integers(1, 16384), st.integers(1, 8))
def test_spec_capture_sizes_are_multiples_within_the_largest(seqs: int, budget: int, gamma: int) -> None:
    plain = default_capture_sizes(seqs, budget)
    sizes = sp.spec_capture_sizes(plain, gamma)
    assert all(s % (gamma + 1) == 0 and s <= max(plain) for s in sizes)
    for tokens in (1, gamma + 1, seqs * (gamma + 1)):
        runs, captured = sp.padded_tokens(tokens, sizes)
        assert runs >= tokens and captured == (bool(sizes) and tokens <= max(sizes))


def test_verify_steps_above_the_largest_graph_say_so() -> None:
    sizes = sp.spec_default_capture_sizes(128, 8192, 4)
    assert max(sizes) == 500  # min(128 x 5 x 2, 512) = 512, rounded down to a multiple of 5
    inside = sp.verify_step(QWEN, H200, CAL, 64, 2000, 4, 2.0, sizes)
    outside = sp.verify_step(QWEN, H200, CAL, 128, 2000, 4, 2.0, sizes)
    assert "captured graph of 320" in inside.verify.notes[0]
    assert "exceed every captured size" in outside.verify.notes[0]


def test_graph_padding_costs_the_padded_tokens_matmuls() -> None:
    """65 x 5 = 325 query tokens run as the 340-token graph (336, a 16-step size above 256, rounded up to a
    multiple of 5; 320 is below): compute-bound there, so the step is longer by exactly 15 tokens' trunk
    FLOPs at eta x peak."""
    sizes = sp.spec_default_capture_sizes(128, 8192, 4)
    padded, bare = (sp.verify_step(QWEN, H200, CAL, 65, 2000, 4, 2.0, s).verify for s in (sizes, ()))
    assert next(t.value for t in padded.terms if t.name == "padded to") == 340
    pad = 15 * fl.trunk_matmul_flops_per_token(QWEN).value / (CAL.eta_at(340) * H200.peak)
    assert padded.value - bare.value == pytest.approx(pad, rel=1e-9)


@SMALL
@given(st.integers(1, 256), st.floats(64, 8000), st.integers(1, 6))
def test_speculation_with_nothing_accepted_never_helps(batch: int, context: float, gamma: int) -> None:
    """E = 1: a verify step reads the same weights and computes more, so it is no faster per token."""
    step = sp.verify_step(QWEN, H200, CAL, batch, context, gamma, 1.0)
    plain = lat.decode_step_time(QWEN, H200, CAL, batch, context).value
    assert step.verify.value >= plain * (1 - 1e-9)
    assert step.speedup.value <= 1 + 1e-9


def test_a_memory_bound_verify_costs_about_a_decode() -> None:
    """At batch 1 the verify step is weight-bound: 5 query tokens instead of 1 add < 1% of the time,
    so the speedup is E to within 1% (a compute term would show here first)."""
    step = sp.verify_step(QWEN, H200, CAL, 1, 2000, 4, 3.0, sp.spec_default_capture_sizes(128, 8192, 4))
    assert 0.99 * 3.0 <= step.speedup.value <= 3.0


# --- fp8 bytes ---------------------------------------------------------------------------------

def test_fp8_weights_halve_the_linear_weights_and_keep_lm_head() -> None:
    bf16 = lat.StepModel.build(QWEN, H200, CAL)
    fp8 = apply_fp8(QWEN, bf16, weights=True, kv_cache=False)
    linear = [t for t in QWEN.parameter_tensors() if t.linear and len(t.shape) == 2 and t.role != "lm_head"]
    lm_head = QWEN.vocab_size * QWEN.hidden_size * 2  # tied: the embedding read as the head, bf16
    biases = sum(t.numel for t in QWEN.parameter_tensors() if t.linear and len(t.shape) == 1) * 2  # QKV biases, bf16
    expected = sum(t.numel for t in linear) * 1 + 4 * len(linear) + lm_head + biases  # 1 B + an fp32 scale per tensor
    assert fp8.weight_bytes == pytest.approx(expected, rel=1e-12)
    assert fp8.kv_layer_bytes == bf16.kv_layer_bytes and fp8.overhead_s == bf16.overhead_s


def test_fp8_kv_halves_kv_bytes_only() -> None:
    bf16 = lat.StepModel.build(QWEN, H200, CAL)
    kv = apply_fp8(QWEN, bf16, weights=False, kv_cache=True)
    assert kv.kv_layer_bytes * 2 == bf16.kv_layer_bytes and kv.kv_token_bytes * 2 == bf16.kv_token_bytes
    assert kv.weight_bytes == bf16.weight_bytes
    assert apply_fp8(QWEN, bf16, weights=False, kv_cache=False) == bf16
    assert cap.kv_bytes_per_token(QWEN, "fp8").value == bf16.kv_token_bytes / 2


@SMALL
@given(st.integers(1, 512), st.floats(16, 16000))
def test_fp8_never_slows_a_decode_step(batch: int, context: float) -> None:
    bf16 = lat.StepModel.build(QWEN, H200, CAL)
    fp8 = apply_fp8(QWEN, bf16, weights=True, kv_cache=True)
    assert fp8.seconds(batch, batch * context) <= bf16.seconds(batch, batch * context)


# --- chunked prefill ---------------------------------------------------------------------------

def test_interference_steps_and_size() -> None:
    p = interference(QWEN, H200, CAL, 32, 1500, 3000, 1024)
    terms = {t.name: t.value for t in p.terms}
    assert terms["chunk"] == 992 and terms["interfering steps per prompt"] == math.ceil(3000 / 992)
    assert p.value == pytest.approx(terms["t_mixed"] - terms["t_decode"], rel=1e-12) and p.value > 0


@SMALL
@given(st.integers(1, 128), st.integers(256, 8000), st.sampled_from([(512, 1024), (1024, 4096), (2048, 16384)]))
def test_a_larger_budget_means_fewer_longer_interfering_steps(batch: int, prompt: int, budgets: tuple[int, int]) -> None:
    small, large = (interference(QWEN, H200, CAL, batch, 1000, prompt, b) for b in budgets)
    steps = [next(t.value for t in p.terms if t.name == "interfering steps per prompt") for p in (small, large)]
    assert steps[1] <= steps[0] and large.value >= small.value * (1 - 1e-12)


def test_fp8_on_a_tensor_parallel_rank_keeps_its_all_reduce_bytes() -> None:
    """transfer.py folds a rank's all-reduce traffic into its KV-written bytes per token; fp8 KV takes off
    only the KV's half, and fp8 weights are the rank's share."""
    from pytest_anatomy.theory import transfer as tr

    t = tr.Transfer.from_calibration(CAL, lat.Ceilings.measured(get_hardware(HARDWARE), bandwidth=4.4e12, peak=7.9e14,
                                                                source="test"))
    rank = tr.step_model(t, tr.Deployment(HARDWARE, "qwen2.5-7b", "auto", "bf16", 2))
    fp8 = apply_fp8(QWEN, rank, weights=True, kv_cache=True, tp=2)
    kv_half = cap.kv_bytes_per_token(QWEN, tp=2).value / 2
    assert rank.kv_token_bytes - fp8.kv_token_bytes == pytest.approx(kv_half, rel=1e-12)
    assert fp8.kv_token_bytes > kv_half  # the all-reduce share is still there
    assert fp8.weight_bytes == pytest.approx(cap.weight_bytes(QWEN, "fp8", matmul_only=True, tp=2).value, rel=1e-12)
