"""theory/transfer.py and theory/vllm_versions.py: the transfer rule, TP ranks, closed forms, version rules."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import transfer as tr
from pytest_anatomy.theory import vllm_versions as vv

H200 = get_hardware("h200")
CEIL = lat.Ceilings.measured(H200, bandwidth=4.4e12, peak=800e12, source="test")
CALIB = lat.EngineCalibration("test", step_overhead_s=1.5e-3, compute_efficiency=0.8)
T = tr.Transfer.from_calibration(CALIB, CEIL)


def test_transfer_fractions_are_of_the_datasheet() -> None:
    assert T.bandwidth_fraction == pytest.approx(4.4 / 4.8)
    assert T.compute_fraction == pytest.approx(0.8 * 800 / 989.5)
    assert T.step_overhead_s == 1.5e-3


def test_transferred_back_to_the_h200_is_the_h200_step_model() -> None:
    sm = tr.step_model(T, tr.Deployment("h200", "qwen2.5-7b", "auto", "bf16"))
    ref = lat.StepModel.build(load_model("qwen2.5-7b"), CEIL, CALIB)
    for args in ((1, 1100.0), (64, 64 * 1200.0), (0, 0.0, ((8192, 0),))):
        assert sm.seconds(*args) == pytest.approx(ref.seconds(*args), rel=1e-12)


def test_tensor_parallel_divides_weights_and_adds_all_reduce_costs() -> None:
    one = tr.step_model(T, tr.Deployment("h100-sxm", "llama-3.1-70b", "auto", "bf16", 1))
    four = tr.step_model(T, tr.Deployment("h100-sxm", "llama-3.1-70b", "auto", "bf16", 4, 10e-6))
    assert four.weight_bytes == pytest.approx(one.weight_bytes / 4)
    assert four.overhead_s == pytest.approx(one.overhead_s + 2 * 80 * 10e-6)
    assert four.trunk_flops == pytest.approx(one.trunk_flops / 4)
    assert four.kv_layer_bytes == pytest.approx(one.kv_layer_bytes / 4)  # 8 KV heads -> 2 per rank
    fp8 = tr.step_model(T, tr.Deployment("h100-sxm", "llama-3.1-70b", "fp8", "fp8", 1))
    assert fp8.weight_bytes < 0.6 * one.weight_bytes and fp8.effective_peak == pytest.approx(2 * one.effective_peak, rel=1e-3)


@pytest.mark.parametrize(("k0", "k1"), [(1, 5), (1, 2047), (300, 4095)])
def test_sum_of_steps_is_exact(k0: int, k1: int) -> None:
    sm = tr.step_model(T, tr.Deployment("a100-40gb", "llama-2-7b", "auto", "fp16"))

    def f(k: int) -> float:
        return sm.seconds(64, 64.0 * (512 + k))
    assert tr._sum_steps(f, k0, k1) == pytest.approx(sum(f(k) for k in range(k0, k1 + 1)), rel=1e-9)


def test_one_request_wave_is_prefill_then_decodes() -> None:
    sm = tr.step_model(T, tr.Deployment("h200", "qwen2.5-7b", "auto", "bf16"))
    r = tr.wave(sm, 1, 1024, 8, 8192, chunked=True)
    assert r.ttft_mean_s == pytest.approx(sm.seconds(0, 0.0, ((1024, 0),)))
    decodes = sum(sm.seconds(1, 1024.0 + k) for k in range(1, 8))  # context counts the token being decoded
    assert r.tpot_mean_s == pytest.approx(decodes / 7)


def test_desynchronized_loop_is_faster_to_first_token_than_waves() -> None:
    sm = tr.step_model(T, tr.Deployment("h200", "qwen2.5-7b", "auto", "bf16"))
    sync = tr.closed_loop(sm, 64, 2048, 256, 8192, synchronized=True)
    desync = tr.closed_loop(sm, 64, 2048, 256, 8192, synchronized=False)
    assert desync.ttft_mean_s < sync.ttft_mean_s


def test_kv_limited_loop_queues_by_littles_law() -> None:
    sm = tr.step_model(T, tr.Deployment("h200", "qwen2.5-7b", "auto", "bf16"))
    free = tr.kv_limited_closed_loop(sm, 16, 1024, 128, 8192, 1e9, 1152, synchronized=False)
    assert free == tr.closed_loop(sm, 16, 1024, 128, 8192, synchronized=False)
    half = tr.kv_limited_closed_loop(sm, 16, 1024, 128, 8192, 8 * 1152, 1152, synchronized=False)
    at8 = tr.closed_loop(sm, 8, 1024, 128, 8192, synchronized=False)
    assert half.ttft_mean_s == pytest.approx(at8.ttft_mean_s + (16 / 8 - 1) * (at8.ttft_mean_s + 127 * at8.tpot_mean_s))


@pytest.mark.parametrize(("pool", "waves"), [(1e9, (64,)), (40 * 4096, (40, 24)), (16 * 4096 + 4095, (16,) * 4),
                                            (10, (1,) * 3)])
def test_kv_limited_offline_batch_runs_waves_the_pool_holds(pool: float, waves: tuple[int, ...]) -> None:
    """A pool that holds the batch gives offline_batch; one that holds n = pool // (2L) sequences runs waves of n, the
    last the rest, each an offline batch (at least one sequence a wave, however small the pool)."""
    sm = tr.step_model(T, tr.Deployment(H200.name, "qwen2.5-7b", "auto", "bf16"))
    batch = sum(waves)
    got = tr.kv_limited_offline_batch(sm, batch, 2048, 8192, pool, 4096)
    assert got == pytest.approx(sum(tr.offline_batch(sm, n, 2048, 8192).latency_s for n in waves), rel=1e-12)
    if len(waves) > 1:  # waves cost more than the one batch they split, which the step's fixed part pays once
        assert got > tr.offline_batch(sm, batch, 2048, 8192).latency_s


def test_version_rules() -> None:
    old, new = vv.rules_for("0.15.1"), vv.rules_for("0.26.0")
    assert not old.subtracts_cudagraph_estimate and new.subtracts_cudagraph_estimate
    assert vv.rules_for("0.21.0").subtracts_cudagraph_estimate and not vv.rules_for("0.20.2").subtracts_cudagraph_estimate
    for bad in ("0.5.3", "banana", "0.27.0"):
        with pytest.raises(vv.UnsupportedVLLMVersion):
            vv.rules_for(bad)


def test_older_versions_give_the_graph_estimate_to_the_kv_cache() -> None:
    model = load_model("qwen2.5-7b")
    settings = {"gpu_memory_utilization": 0.9, "max_model_len": 8192, "model_runner": "v1"}
    new = vv.predict_ledger_for_version(model, H200, settings, "0.26.0")
    old = vv.predict_ledger_for_version(model, H200, settings, "0.15.1")
    graphs = new["cudagraph_estimate_bytes"].value
    assert graphs > 0 and old["cudagraph_estimate_bytes"].value == 0
    assert old["available_kv_bytes"].value == new["available_kv_bytes"].value + graphs
    assert any("0.15.1" in n for n in old["num_gpu_blocks"].notes)


def test_deployment_is_hashable_for_the_cache() -> None:
    d = tr.Deployment("h100-sxm", "llama-3.1-8b", "auto", "bf16")
    assert hash(d) == hash(dataclasses.replace(d))


@pytest.mark.parametrize(("length", "n_batch"), [(128, 1), (128, 16), (100, 32), (2048, 64), (5, 8)])
def test_llamacpp_prompt_chunks_sum_exactly(length: int, n_batch: int) -> None:
    sm = tr.step_model(T, tr.Deployment("a100-40gb", "llama-2-7b", "auto", "fp16"))
    prompt = 0.0
    for start in range(0, length, n_batch):
        n = min(n_batch, length - start)
        prompt += sm.seconds(0, 0.0, ((n, start),), logits_rows=1 if start + n >= length else 0)
    decodes = sum(sm.seconds(1, float(length + k)) for k in range(1, length))
    assert tr.llamacpp_single(sm, length, n_batch) == pytest.approx(prompt + decodes, rel=1e-9)
