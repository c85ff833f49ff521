"""The rules the recorded llama.cpp tests replay by, on CPU: how a written header is compared with the
predicted one, and what a run the device plan skipped or lost turns into. Both were wrong on the first
H200 visit's recordings (2026-12-02 05:07): every quantize test reported all of its tensors mistyped
(the file's tensor order is not the predicted one), and runs skipped on budget failed on a missing quantity."""

from __future__ import annotations

from dataclasses import replace

import pytest
from llama_runs import LlamaRun, completed, header_for, mistyped

from pytest_anatomy.recordings import Recording

CARD = "any-card"  # the rules do not depend on the card
RUN = LlamaRun(CARD, "tiny-24l.q4_k_m.quantize", "tiny-24l", "Q4_K_M", "quantize")


def test_tensor_order_is_not_a_typing_error():
    """The plan's writer puts output_norm first and llama-quantize keeps a file's order: the same tensors
    in another order are typed as predicted."""
    predicted = header_for(RUN)
    shuffled = replace(predicted, tensors=(*predicted.tensors[::-1],))
    assert mistyped(predicted, shuffled) == []


def test_a_mistyped_a_missing_and_an_extra_tensor_are_each_named():
    predicted = header_for(RUN)
    first, second, *rest = predicted.tensors
    other = "Q8_0" if first.ggml_type != "Q8_0" else "F16"
    written = replace(predicted, tensors=(replace(first, ggml_type=other), *rest, replace(second, name="extra")))
    assert mistyped(predicted, written) == [(first.name, first.ggml_type, other),
                                            (second.name, second.ggml_type, "absent"),
                                            ("extra", "absent", second.ggml_type)]


def _recording(result: dict) -> Recording:
    return Recording(suite="llama", name="qwen2.5-7b.f16.bench", hardware=CARD, recorded_at="2026-12-02T05:07:40Z",
                     provenance={"status": result["status"]}, measurements={},
                     data={"run": {"id": "qwen2.5-7b.f16.bench", "result": result}})


def test_a_run_skipped_on_budget_skips_with_the_plans_reason():
    with pytest.raises(pytest.skip.Exception, match=r"qwen2.5-7b.f16.bench was skipped on the device "
                                                    r"\(2026-12-02T05:07:40Z\): estimate 16 s > 13 s left"):
        completed(_recording({"status": "skipped", "reason": "estimate 16 s > 13 s left"}))


def test_a_run_that_errored_fails_with_its_error():
    with pytest.raises(pytest.fail.Exception, match="was error on the device.*RuntimeError: llama-bench exited 1"):
        completed(_recording({"status": "error", "error": "RuntimeError: llama-bench exited 1"}))


def test_a_completed_run_and_a_recording_without_a_status_are_returned():
    ok = _recording({"status": "ok"})
    assert completed(ok) is ok
    ceilings = replace(ok, provenance={})
    assert completed(ceilings) is ceilings
