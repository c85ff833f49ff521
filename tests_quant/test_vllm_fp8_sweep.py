"""vLLM's fp8 decode step across the Hopper fp8 dispatch's M buckets (scripts/device/quant_decode.py `sweep`: b = 16,
17, 24, 32, 48, 64 in one engine) against what was written before it ran (vllm_fp8_sweep_preregistered.json: the
first run's b=8 and b=64 steps extended by the theory's KV slope, and the two explanations of the first run's b=32).

Noise, from data: a step's start-to-start repeat scatter is the largest difference between the sweep and the first
run at the batches both ran (b = 32, 64; two engine starts on two cards); a comparison with the first run's level adds
the recorded b=1 overheads' card-to-card spread (vf.card_spread_ms). Recorded only; skips until the sweep is recorded.
"""

from __future__ import annotations

from typing import Any

import pytest
import vllm_decode_findings as vf
from vllm_sweep_findings import EXP, FLAT_B64, FLAT_JUMP, METHOD, _recorded, _repeat, line_fit, qd

from pytest_anatomy.theory.prediction import Prediction

def sweep_steps_ms() -> dict[int, float]:
    """The sweep's steps (ms): the newest run of each batch, all from one batch (one engine start)."""
    steps = _recorded()
    if steps is None:
        pytest.skip(f"the {METHOD} sweep is not recorded: run `quant_decode.py sweep` on the device")
    return steps


def repeat_ms() -> float:
    """max |sweep - first run| at the batches both ran: one step's start-to-start scatter."""
    return _repeat(sweep_steps_ms())


@pytest.mark.gpu
@pytest.mark.targets(recorded="", live=False, hardware=vf.HARDWARE)
def test_below_the_bucket_boundary_the_first_runs_line_holds(target: Any, reconcile: Any) -> None:
    got = sweep_steps_ms()[16]
    pred = Prediction(float(EXP["bucket_ms"]["16"]) / 1e3, "s",
                      "the first run's b=8 step + 8 x the theory's KV slope (pre-registered)", {"batch": 16})
    tol = vf.card_spread_ms() + repeat_ms()
    reconcile("fp8_step_below_the_bucket", pred, got / 1e3, abs=tol / 1e3,
              why=f"another card's engine start: the b=1 overheads' spread {vf.card_spread_ms():.3f} ms + the "
                  f"repeat scatter {repeat_ms():.3f} ms")


@pytest.mark.gpu
@pytest.mark.targets(recorded="", live=False, hardware=vf.HARDWARE)
@FLAT_JUMP
def test_the_jump_at_the_bucket_boundary(target: Any, reconcile: Any) -> None:
    steps = sweep_steps_ms()
    pred = Prediction(EXP["jump_16_to_17_ms"] / 1e3, "s", "bucket line at 17 - at 16 (pre-registered)", {})
    reconcile("fp8_step_jump_16_to_17", pred, (steps[17] - steps[16]) / 1e3, abs=2 * repeat_ms() / 1e3,
              why=f"two steps of one engine, each within the repeat scatter {repeat_ms():.3f} ms")


@pytest.mark.gpu
@pytest.mark.targets(recorded="", live=False, hardware=vf.HARDWARE)
@FLAT_B64
def test_inside_the_bucket_the_step_grows_by_its_kv_reads(target: Any, reconcile: Any) -> None:
    steps = sweep_steps_ms()
    pred = Prediction((steps[17] + 47 * EXP["kv_slope_ms_per_seq"]) / 1e3, "s",
                      "b=17's step + 47 sequences' KV reads at the theory's slope", {"batch": 64})
    reconcile("fp8_step_b64_from_b17", pred, steps[64] / 1e3, abs=2 * repeat_ms() / 1e3,
              why=f"two steps of one engine, each within the repeat scatter {repeat_ms():.3f} ms")


@pytest.mark.gpu
@pytest.mark.targets(recorded="", live=False, hardware=vf.HARDWARE)
def test_b32_lies_on_its_buckets_line(target: Any, reconcile: Any) -> None:
    """Held out of the line fitted through the sweep's other bucket batches: on it if the first run's b=32 excess
    was the bucket's, ~0.38 ms above it (pre-registered) if it was b=32's own."""
    steps = sweep_steps_ms()
    slope, intercept, resid_sd, _ = line_fit(steps)
    pred = Prediction((slope * 32 + intercept) / 1e3, "s",
                      f"the line through b = {', '.join(map(str, qd.SWEEP_LINE_BATCHES))} of the same run (fit)",
                      {"slope_ms_per_seq": slope, "alternative_own_excess_ms":
                       EXP["b32_above_the_line_ms"]["own"]})
    tol = 2 * resid_sd + repeat_ms()
    assert tol < EXP["b32_above_the_line_ms"]["own"], "the check could not tell the two explanations apart"
    reconcile("fp8_step_b32_on_the_line", pred, steps[32] / 1e3, abs=tol / 1e3,
              why=f"2 x the line's residual sd ({resid_sd:.3f} ms) + the repeat scatter ({repeat_ms():.3f} ms)")
