"""Fixtures of the latency suite; the setups themselves are built in latency_setups.py."""

from __future__ import annotations

from typing import Any

import pytest
from latency_setups import (
    SEED_BATCHED_TOKENS,
    SEED_MAX_NUM_SEQS,
    SEED_SHAPE,
    FitPoint,
    Setup,
    h200_workload,
    mean_context,
    seed_workload,
)

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import ModelSpec, load_model
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.theory.flops import StepWork


@pytest.fixture(scope="session")
def qwen() -> ModelSpec:
    """Qwen2.5-7B-Instruct (catalog config): the model of every latency run so far."""
    return load_model("qwen2.5-7b")


@pytest.fixture
def seed_setup(qwen: ModelSpec, measured: Any, target: Any, card: Any) -> Setup:
    """The seed's card (an RTX 4090) + vLLM 0.27.1. No ceilings were measured there: datasheet bandwidth
    (1008 GB/s) and bf16 peak (165.2 TFLOP/s). Calibration, both points from round 1's first sweep:
    t_overhead from seed-r1-01-c001 (C=1, pure decode: median ITL), eta from seed-r1-01-c064's
    p99 ITL, which is a step filled to the 2048-token budget (63 decodes + 1,985 prompt tokens)."""
    ceilings = lat.Ceilings.datasheet(card)
    c1 = measured("seed-r1-01-c001")
    calib = lat.fit_step_overhead(
        qwen, ceilings, 1, mean_context(*SEED_SHAPE), c1["median_itl"].value,
        name=f"vllm-0.27.1@{target.name} (CUDA graphs, chunked prefill 2048)", fitted_on="seed-r1-01-c001:median_itl")
    c64 = measured("seed-r1-01-c064")
    decodes = 63
    full = StepWork(decode_tokens=decodes, decode_context_sum=decodes * mean_context(*SEED_SHAPE),
                    prefill=((1024, 0), (SEED_BATCHED_TOKENS - decodes - 1024, 0)))
    calib = lat.fit_compute_efficiency(qwen, ceilings, [full], c64["p99_itl"].value, calib,
                                       fitted_on="seed-r1-01-c064:p99_itl")
    sched = sv.SchedulerConfig(SEED_MAX_NUM_SEQS, SEED_BATCHED_TOKENS, None)
    fits = (
        # At C=1 every ITL is the fitted decode step (no other request's prompt to share a step
        # with), and throughput is O / (TTFT + (O - 1) x ITL), 97% ITL: all pinned by the fit.
        FitPoint("t_overhead", "seed-r1-01-c001", "median_itl", seed_workload(c1),
                 frozenset({"median_itl", "mean_itl", "p99_itl", "output_throughput"})),
        FitPoint("eta", "seed-r1-01-c064", "p99_itl", seed_workload(c64), frozenset({"p99_itl"})),
    )
    return Setup(target.name, qwen, ceilings, calib, sched, fits)


def session_ceilings(measured: Any, run: Any) -> lat.Ceilings:
    """The ceilings measured in the same device session as `run` (same batch stamp): every
    session has its own clocks and thermal state, so a prediction uses its own session's."""
    ceil = measured("ceilings", hardware="h200", suite="ceilings", recorded_at=run.recorded_at)
    where = ceil["read_bandwidth.value"].provenance.get("recording", "results/h200/ceilings")
    return lat.Ceilings.measured(get_hardware("h200"), bandwidth=ceil["read_bandwidth.value"].value,
                                 peak=ceil["matmul_bf16.value"].value,
                                 source=f"read_bandwidth (4 GiB sum) and matmul_bf16 (8192^3), {where}")


@pytest.fixture
def h200_setup(qwen: ModelSpec, measured: Any) -> Setup:
    """H200 + vLLM 0.26.0 (CUDA graphs, async scheduling, max_num_batched_tokens 8192).
    Ceilings measured in the same session (results/h200/ceilings: read_bandwidth, matmul_bf16).
    Calibration: t_overhead from the b=1 decode step, eta from the lone 8,192-token prefill."""
    b1 = measured("qwen2.5-7b.decode.b1", hardware="h200")
    ceilings = session_ceilings(measured, b1)
    s = b1.data["run"]["settings"]
    calib = lat.fit_step_overhead(
        qwen, ceilings, 1, mean_context(s["input_len"], s["output_len"]), b1["step_time_s"].value,
        name="vllm-0.26.0@h200 (CUDA graphs, async scheduling)", fitted_on="qwen2.5-7b.decode.b1:step_time_s")
    engine = measured("qwen2.5-7b.engine", hardware="h200")
    budget = int(engine["resolved.max_num_batched_tokens"].value)
    l8192 = measured("qwen2.5-7b.prefill.l8192", hardware="h200")
    calib = lat.fit_compute_efficiency(qwen, ceilings, lat.prefill_work(8192, budget),
                                       l8192["engine_prefill_s.median"].value, calib,
                                       fitted_on="qwen2.5-7b.prefill.l8192:engine_prefill_s.median")
    # The pool is the engine's own (memory profiling); an input here, predicted in tests_capacity.
    sched = sv.SchedulerConfig(int(engine["resolved.max_num_seqs"].value), budget,
                               int(engine["resolved.num_gpu_blocks"].value), int(engine["resolved.block_size"].value))
    fits = (FitPoint("t_overhead", "qwen2.5-7b.decode.b1", "step_time_s", h200_workload(b1),
                     frozenset({"step_time_s"})),
            FitPoint("eta", "qwen2.5-7b.prefill.l8192", "engine_prefill_s.median", h200_workload(l8192),
                     frozenset({"engine_prefill_s.median"})))
    return Setup("h200", qwen, ceilings, calib, sched, fits)


@pytest.fixture
def h200_transfer_setup(h200_setup: Setup, measured: Any) -> Setup:
    """Llama-3.1-8B on the same H200 and vLLM 0.26.0 settings, predicted with the calibration
    fitted on Qwen2.5-7B (h200_setup: t_overhead and eta) and the ceilings measured in Llama's
    own session: issue 4's "overhead calibrated on a different model than the one tested".
    No Llama run is a fit point (fits=()), so every check on it is held out."""
    llama = load_model("llama-3.1-8b")
    b1 = measured("llama-3.1-8b.decode.b1", hardware="h200")
    engine = measured("llama-3.1-8b.engine", hardware="h200")
    calib = lat.EngineCalibration(
        name=f"{h200_setup.calib.name}, transferred from {h200_setup.model.name}",
        step_overhead_s=h200_setup.calib.step_overhead_s, compute_efficiency=h200_setup.calib.compute_efficiency,
        fitted_on=h200_setup.calib.fitted_on, notes=h200_setup.calib.notes)
    sched = sv.SchedulerConfig(int(engine["resolved.max_num_seqs"].value),
                               int(engine["resolved.max_num_batched_tokens"].value),
                               int(engine["resolved.num_gpu_blocks"].value), int(engine["resolved.block_size"].value))
    return Setup("h200", llama, session_ceilings(measured, b1), calib, sched, fits=())
