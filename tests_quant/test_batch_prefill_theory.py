"""The batched prefill's steps (theory/latency.py batch_prefill_work, vLLM V1's token-budget packing) and its time,
bf16 and per quantization method (batch_prefill_time): the whole prompts a step's budget holds share one step, a
prompt past the budget is chunked and its remainder leads the next step, and the time is the sum of its steps'."""

from __future__ import annotations

import pytest
import vllm_decode_findings as vf

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import quant_planning as qp
from pytest_anatomy.theory.flops import StepWork

MODEL, HW = load_model(vf.MODEL), get_hardware(vf.HARDWARE)
CEILINGS = lat.Ceilings.datasheet(HW)
CALIB = lat.EngineCalibration("test calibration", step_overhead_s=1.5e-3, compute_efficiency=0.8,
                              efficiency_by_tokens=((512, 0.6), (8192, 0.8)))


def test_64_prompts_of_512_in_an_8192_budget_are_4_steps_of_16() -> None:
    steps = lat.batch_prefill_work(64, 512, 8192)
    assert steps == [StepWork(prefill=((512, 0),) * 16, logits=16)] * 4


def test_a_prompt_past_the_budget_is_chunked_and_leads_the_next_step() -> None:
    steps = lat.batch_prefill_work(3, 600, 1000)
    assert [(s.prefill, s.logits) for s in steps] == [
        (((600, 0), (400, 0)), 1), (((200, 400), (600, 0)), 2)]
    assert sum(s.new_tokens for s in steps) == 3 * 600


def test_a_lone_prompt_is_the_lone_prefills_steps() -> None:
    assert lat.batch_prefill_work(1, 20000, 8192) == lat.prefill_work(20000, 8192)


def test_a_partially_filled_first_step_adds_one_step() -> None:
    steps = lat.batch_prefill_work(64, 512, 8192, first_step_prompts=1)
    assert [len(s.prefill) for s in steps] == [1, 16, 16, 16, 15]
    assert lat.batch_prefill_work(64, 512, 8192, first_step_prompts=64) == lat.batch_prefill_work(64, 512, 8192)


@pytest.mark.parametrize("method", [None, *qp.GEMM_PEAK])
def test_the_batch_time_is_the_sum_of_its_steps(method: str | None) -> None:
    works = lat.batch_prefill_work(64, 512, 8192)
    if method is None:
        total = lat.batch_prefill_time(MODEL, CEILINGS, CALIB, 64, 512, 8192)
        steps = [lat.step_time(MODEL, CEILINGS, CALIB, w) for w in works]
    else:
        total = qp.batch_prefill_time(MODEL, HW, CEILINGS, CALIB, 64, 512, 8192, method)
        steps = [qp.step_time(MODEL, HW, CEILINGS, CALIB, w, method) for w in works]
    assert total.value == pytest.approx(sum(s.value for s in steps), rel=1e-12)
    assert total.inputs["steps"] == 4 and len(total.terms) == 4
    lone = (lat.prefill_time(MODEL, CEILINGS, CALIB, 512, 8192) if method is None
            else qp.prefill_time(MODEL, HW, CEILINGS, CALIB, 512, 8192, method))
    assert total.value < 64 * lone.value  # 16 prompts a step: the weights and the overhead paid 4 times, not 64
