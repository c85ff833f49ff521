"""The engine calibration of one measuring session, fitted from its numbers.

One recipe, used by the latency suite (tests_latency: its engine setup) and by `predict latency`
(its calibrated default), so both answer with the same constants: t_overhead from a b=1 decode
step, then eta from a lone long prefill at the session's ceilings (theory/latency.py's fits).
The numbers come in as plain floats: reading recordings is the caller's business."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import latency as lat


@dataclass(frozen=True)
class SessionPoints:
    """What a session measured that the calibration is fitted on."""

    decode_step_s: float  # steady step of one sequence
    decode_context: float  # its mean KV context (input + output / 2)
    decode_name: str  # recording:quantity, for fitted_on
    prefill_tokens: int  # a lone prompt long enough to be compute-bound (8,192)
    prefill_s: float
    prefill_name: str
    max_num_batched_tokens: int  # the engine's chunk budget of that prefill


def fit_engine(model: ModelSpec, ceilings: lat.Ceilings, points: SessionPoints, *, name: str) -> lat.EngineCalibration:
    """t_overhead from the b=1 decode step, then eta from the prefill with that overhead kept."""
    calib = lat.fit_step_overhead(model, ceilings, 1, points.decode_context, points.decode_step_s,
                                  name=name, fitted_on=points.decode_name)
    return lat.fit_compute_efficiency(model, ceilings, lat.prefill_work(points.prefill_tokens,
                                                                        points.max_num_batched_tokens),
                                      points.prefill_s, calib, fitted_on=points.prefill_name)
