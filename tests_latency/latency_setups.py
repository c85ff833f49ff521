"""Shared pieces of the latency suite (imported by its conftest and tests): the seed's RTX 4090
and our H200, each as a `Setup` of ceilings, an engine calibration and the scheduler limits,
plus a cached simulator.

Calibration (theory/latency.py: t_step = max(bytes/BW, FLOPs/(eta x peak)) + t_overhead) is
fitted per engine and GPU on named in-sample points, listed in `Setup.in_sample`; no test
reconciles an in-sample point. Both setups are for Qwen2.5-7B: with one model per GPU the
overhead cannot yet be calibrated on a *different* model (issue 4's target), see
test_latency_h200_steps.py::test_decode_overhead_transfers_to_a_second_model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv

SEED_SHAPE = (1024, 256)  # the seed's concurrency sweep: input, output tokens
# `vllm serve` in vLLM 0.2x defaults max_num_batched_tokens to 2048 on GPUs below 70 GiB; the
# seed inferred ~2048 from its own p99 ITL (STUDY.md claim 7). An assumption, not a log line.
SEED_BATCHED_TOKENS = 2048
SEED_MAX_NUM_SEQS = 128  # the seed's `vllm serve --max-num-seqs 128`


def mean_context(input_len: int, output_len: int) -> float:
    """Mean KV context of a request over its decode: the seed's 1,152 tokens for 1024/256."""
    return input_len + output_len / 2


@functools.lru_cache(maxsize=None)
def _simulate(steps: lat.StepModel, sched: sv.SchedulerConfig, work: sv.Workload) -> sv.SimResult:
    return sv.simulate(steps, sched, work)


@functools.lru_cache(maxsize=None)
def _saturation(steps: lat.StepModel, sched: sv.SchedulerConfig, input_len: int, output_len: int) -> float:
    return float(sv.saturation(steps, sched, input_len, output_len)["request_rate"])


@dataclass(frozen=True)
class Setup:
    """Everything a prediction on one GPU + engine needs; nothing in it is the quantity tested."""

    label: str
    model: ModelSpec
    ceilings: lat.Ceilings
    calib: lat.EngineCalibration
    sched: sv.SchedulerConfig
    in_sample: frozenset[str]  # "recording:quantity" pairs the calibration was fitted on

    @property
    def steps(self) -> lat.StepModel:
        return lat.StepModel.build(self.model, self.ceilings, self.calib)

    def simulate(self, work: sv.Workload, num_gpu_blocks: int | None = None) -> sv.SimResult:
        sched = self.sched if num_gpu_blocks is None else sv.SchedulerConfig(
            self.sched.max_num_seqs, self.sched.max_num_batched_tokens, num_gpu_blocks, self.sched.block_size)
        return _simulate(self.steps, sched, work)

    def knee_rate(self, input_len: int, output_len: int) -> float:
        """Requests/s a closed loop at max_num_seqs completes between ramp-up and drain."""
        return _saturation(self.steps, self.sched, input_len, output_len)

    def check_held_out(self, recording: str, quantity: str) -> None:
        assert f"{recording}:{quantity}" not in self.in_sample, (
            f"{recording}:{quantity} was used to fit {self.calib.name}; it cannot test the model")
