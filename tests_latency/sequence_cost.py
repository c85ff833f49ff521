"""The decode step's cost per extra sequence, measured apart from the runs it is carried to.

A session's isolated decode steps at b = 1..64 (its decode.b* runs) give an OLS slope of step time over batch; the
step model's own slope is the KV read per sequence at the read ceiling. The measured slope is ~1.2-1.4x the modeled one
on every recorded session (h200-decode-per-sequence-cost). `SequenceCost` is that excess in seconds per sequence, with
its own scatter and the line's misfit at each recorded batch, and `simulate_with` carries it into the serving
simulation as a cost per sequence beyond the first in every step (the first is in t_overhead, fitted at b = 1): a
load run's prediction with one more constant, measured on other runs of its session, never on the run it predicts.

The excess is carried as seconds per sequence. The other candidate form, a slower KV read (the measured slope over the
modeled one, on every KV byte), agrees with it at the decode runs' context and parts from it at the overload run's
~16,600 tokens. Over every recorded session the overload's median ITL lies between the two forms: the per-sequence
form is short by up to ~4.5% in the sessions whose sweep slope came out low, the per-KV-byte form long in those whose
slope came out high (latency_overload_forms_findings.py's table, recomputed by test_latency_sequence_cost.py). So `shift_band` spans both forms: where they coincide it is the per-sequence band.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import pytest
from latency_setups import Setup, _simulate, mean_context

from pytest_anatomy.measure import Measurement
from pytest_anatomy.measure.analysis import linear_fit
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.theory.prediction import Prediction, Term

SWEEP = (1, 2, 4, 8, 16, 32, 64)  # the batches the slope is fitted over (b = 128 is kept out: the line's misfit)
Recording = Callable[[str], Any]  # a recording by name, from the session of the run it is for


@dataclass(frozen=True)
class DecodeSweepFit:
    """The OLS line of a session's isolated decode steps over SWEEP against the step model's slope."""

    predicted: Prediction  # d(t_step)/db of the step model at the runs' mean context
    slope: Measurement  # the measured OLS slope, s per sequence
    budget: dict[str, float]  # relative: the slope's 2 standard errors, the read ceiling's scatter
    intercept_s: float
    steps_s: dict[int, float]  # every recorded batch's measured step (b = 128 too, where recorded)


def decode_sweep_fit(setup: Setup, recording: Recording) -> DecodeSweepFit:
    model = setup.model.name
    recs = {b: recording(f"{model}.decode.b{b}") for b in SWEEP}
    steps = {b: r["step_time_s"].value for b, r in recs.items()}
    fit = linear_fit(SWEEP, [steps[b] for b in SWEEP])
    s = recs[1].data["run"]["settings"]
    ctx = mean_context(s["input_len"], s["output_len"])
    first = recs[1]["step_time_s"]
    slope = Measurement(fit.slope, "s", source=first.source,
                        provenance={**first.provenance, "fit": f"OLS over b={list(SWEEP)}, R^2={fit.r_squared:.4f}",
                                    "recording": f"results/{setup.label}/latency/{model}.decode.b*.json"})
    t = [lat.decode_step_time(setup.model, setup.ceilings, setup.calib, b, ctx).value for b in (1, 64)]
    pred = Prediction((t[1] - t[0]) / 63, "s", "d(t_step)/db = context x kv_bytes_per_token / BW", {"context": ctx},
                      terms=(Term("t_step(b=1)", t[0], "s"), Term("t_step(b=64)", t[1], "s")))
    mean_b = sum(SWEEP) / len(SWEEP)
    residual = sum((steps[b] - fit.slope * b - fit.intercept) ** 2 for b in SWEEP)
    slope_se = (residual / (len(SWEEP) - 2) / sum((b - mean_b) ** 2 for b in SWEEP)) ** 0.5
    budget = {"slope_scatter": 2 * slope_se / fit.slope, "ceiling_spread": setup.noise.get("bandwidth", 0.0)}
    try:  # b = 128 is outside the fit: its misfit is the line's extrapolation error
        steps[128] = recording(f"{model}.decode.b128")["step_time_s"].value
    except pytest.skip.Exception:  # a missing recording skips: a session without b = 128 has no misfit there
        pass
    return DecodeSweepFit(pred, slope, budget, fit.intercept, steps)


@dataclass(frozen=True)
class SequenceCost:
    """Seconds per sequence the session's decode steps cost beyond the step model's slope, and its uncertainty."""

    extra_s: float  # measured slope - modeled slope
    slope_ratio: float  # measured slope / modeled slope: the KV-read alternative's factor
    spread_s: float  # the measured slope's budget (its 2 standard errors and the ceiling's scatter), absolute
    misfit: dict[int, float]  # batch -> |measured step - the line| / measured step, at each recorded batch

    def misfit_at(self, batch: float) -> float:
        """The line's misfit at the recorded batch nearest `batch` (on a log scale: the sweep doubles)."""
        nearest = min(self.misfit, key=lambda b: abs(b / batch - 1) if b >= batch else abs(batch / b - 1))
        return self.misfit[nearest]


def sequence_cost(setup: Setup, recording: Recording) -> SequenceCost:
    fit = decode_sweep_fit(setup, recording)
    line = {b: fit.intercept_s + fit.slope.value * b for b in fit.steps_s}
    return SequenceCost(extra_s=fit.slope.value - fit.predicted.value, slope_ratio=fit.slope.value / fit.predicted.value,
                        spread_s=fit.slope.value * sum(fit.budget.values()),
                        misfit={b: abs(t - line[b]) / t for b, t in fit.steps_s.items()})


@dataclass(frozen=True)
class StepsWithSequenceCost(lat.StepModel):
    """The step model plus `extra_s` for each sequence in the step beyond the first (decodes and prefill chunks)."""

    extra_s: float = 0.0

    def seconds(self, decode_tokens: int, decode_context_sum: float, prefill: tuple[tuple[int, int], ...] = (),
                logits_rows: int | None = None, pad_tokens: int = 0) -> float:
        base = lat.StepModel.seconds(self, decode_tokens, decode_context_sum, prefill, logits_rows, pad_tokens)
        return base + self.extra_s * max(decode_tokens + len(prefill) - 1, 0)


@dataclass(frozen=True)
class StepsWithSlowerKvRead(lat.StepModel):
    """The alternative: the same excess as a KV read `factor` x slower (it grows with the context)."""

    @classmethod
    def of(cls, steps: lat.StepModel, factor: float) -> "StepsWithSlowerKvRead":
        return cls(**{**_fields_of(steps), "kv_layer_bytes": steps.kv_layer_bytes * factor})


def _fields_of(steps: lat.StepModel) -> dict[str, Any]:
    """A step model's fields, to build one of the what-if subclasses from it."""
    return {f.name: getattr(steps, f.name) for f in fields(steps)}


def simulate_with(setup: Setup, extra_s: float, work: sv.Workload,
                  fixed: sv.RequestTimes = sv.NO_REQUEST_TIMES) -> sv.SimResult:
    """`work` simulated with every step carrying `extra_s` per sequence beyond the first (and `fixed`'s per-request
    times, sv.RequestTimes, where given)."""
    return _simulate(StepsWithSequenceCost(**_fields_of(setup.steps), extra_s=extra_s), setup.sched, work, fixed)


def spread_share(setup: Setup, cost: SequenceCost, work: sv.Workload, stat: str, at: float) -> float:
    """How far the ITL `stat` ("p50", "mean") moves, relative to `at` (its value with the excess), when the excess moves
    by its own spread: re-simulated, so it holds where the excess is near zero too (no division by it)."""
    moved = simulate_with(setup, cost.extra_s + cost.spread_s, work).stat("itl", stat)
    return abs(moved - at) / at


def shift_band(setup: Setup, recording: Recording, work: sv.Workload, res: sv.SimResult, stat: str,
               budget: float) -> tuple[float, float]:
    """A finding band for an ITL `stat` of `work` whose plain simulation is `res`: from the simulation carrying the
    session's excess per sequence to the one carrying it per KV byte, each over the plain one, +- `budget` (the
    check's) and the excess's own spread over its share. The two forms coincide at the decode runs' context."""
    cost = sequence_cost(setup, recording)
    with_cost, plain = simulate_with(setup, cost.extra_s, work).stat("itl", stat), res.stat("itl", stat)
    per_kv = simulate_with_slower_kv_read(setup, cost.slope_ratio, work).stat("itl", stat)
    half = budget + spread_share(setup, cost, work, stat, with_cost)
    low, high = sorted((with_cost / plain, per_kv / plain))
    return (round(low * (1 - half), 4), round(high * (1 + half), 4))


def simulate_with_slower_kv_read(setup: Setup, factor: float, work: sv.Workload) -> sv.SimResult:
    return _simulate(StepsWithSlowerKvRead.of(setup.steps, factor), setup.sched, work)
