"""Reconciliation: compare a Prediction with a Measurement under a stated tolerance.

A tolerance is never bare: every band wider than exact equality carries a `why` that says
where the width comes from (rounding in a log line, a datasheet-vs-achievable ratio, run to
run noise). `Tolerance.check()` refuses a non-exact band without one, so "widen until it
passes" at least leaves a written trace a reviewer can argue with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.theory.prediction import Prediction
from pytest_anatomy.units import format_quantity


class Verdict(str, Enum):
    AGREE = "agree"  # within tolerance: pass
    FINDING = "finding"  # outside tolerance, and the test carries a matching finding mark
    RESOLVED = "resolved"  # a marked finding that now agrees (like a strict XPASS)
    DIVERGE = "diverge"  # outside tolerance, unexpected: fails


# What a reconciliation is evidence of. Headline counts, plots and held-out statistics use
# predictions only; the other kinds are listed apart, because they carry little information
# about the theory (an identity or an echoed setting cannot fail for a theory error).
#   prediction -- from config, specs and independently measured calibration
#   identity   -- the engine's own arithmetic checked (its numbers against each other)
#   fit        -- the point a fitted constant came from (agrees by construction)
#   replay     -- another tool's computed columns checked against our model of them
#   setting    -- an engine setting echoed back
RECONCILIATION_KINDS = ("prediction", "identity", "fit", "replay", "setting")


class ToleranceError(ValueError):
    """A tolerance that cannot be used (negative, inverted band, or missing its reason)."""


@dataclass(frozen=True)
class Tolerance:
    """Accepted gap between measured and predicted.

    rel   -- |measured - predicted| <= rel * |predicted| (+ abs) passes
    abs   -- absolute slack in the quantity's unit, added to the relative one
    ratio -- alternatively a one- or two-sided band on measured / predicted, e.g. (1.0, 1.25)
             for "at least the theoretical time, at most 25% slower"
    why   -- the reason for the width; required unless the band is exact (rel = abs = 0)
    """

    rel: float = 0.0
    abs: float = 0.0
    ratio: tuple[float, float] | None = None
    why: str = ""
    # The error budget behind `rel`, as named relative terms (measured repeat scatter, the
    # ceilings' spread, a calibration's spread, ...). When given, rel is their sum: the report
    # shows the budget as that sum instead of one opaque width.
    budget: tuple[tuple[str, float], ...] = ()

    @classmethod
    def from_budget(cls, why: str, **terms: float) -> "Tolerance":
        """rel = the sum of named non-negative relative terms, e.g.
        Tolerance.from_budget("...", repeat_scatter=0.012, ceiling_spread=0.02)."""
        items = tuple((k, float(v)) for k, v in terms.items())
        return cls(rel=sum(v for _, v in items), why=why, budget=items)

    def check(self) -> "Tolerance":
        if self.rel < 0 or self.abs < 0:
            raise ToleranceError(f"tolerance must be non-negative, got rel={self.rel!r} abs={self.abs!r}")
        if self.budget:
            if any(not math.isfinite(v) or v < 0 for _, v in self.budget):
                raise ToleranceError(f"every budget term must be finite and >= 0, got {dict(self.budget)!r}")
            if self.ratio is not None or not math.isclose(self.rel, sum(v for _, v in self.budget),
                                                           rel_tol=1e-12, abs_tol=1e-15):
                raise ToleranceError(f"a budget's terms must sum to rel: {dict(self.budget)!r} vs rel={self.rel!r}")
        if self.ratio is not None:
            lo, hi = self.ratio
            if not (0 <= lo <= hi):
                raise ToleranceError(f"ratio band must satisfy 0 <= lo <= hi, got {self.ratio!r}")
            if self.rel or self.abs:
                raise ToleranceError("give either ratio=(lo, hi) or rel/abs, not both")
        exact = self.ratio is None and self.rel == 0 and self.abs == 0
        if not exact and not self.why.strip():
            raise ToleranceError(
                "a non-exact tolerance needs why=... saying where its width comes from "
                "(e.g. why='log rounds GiB to 2 decimals: +-0.08%')"
            )
        return self

    def accepts(self, predicted: float, measured: float) -> bool:
        if self.ratio is not None:
            if predicted == 0:
                return measured == 0
            r = measured / predicted
            return self.ratio[0] <= r <= self.ratio[1]
        return abs(measured - predicted) <= self.rel * abs(predicted) + self.abs

    def describe(self, unit: str = "") -> str:
        if self.ratio is not None:
            return f"measured/predicted in [{self.ratio[0]:g}, {self.ratio[1]:g}]"
        parts = []
        if self.budget:
            terms = " + ".join(f"{name.replace('_', ' ')} {v * 100:.3g}%" for name, v in self.budget)
            parts.append(f"±{self.rel * 100:.3g}% ({terms})")
        elif self.rel:
            parts.append(f"±{self.rel * 100:.3g}%")
        if self.abs:
            parts.append(f"±{format_quantity(self.abs, unit)}")
        return " + ".join(parts) if parts else "exact"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rel": self.rel,
            "abs": self.abs,
            "ratio": list(self.ratio) if self.ratio is not None else None,
            "why": self.why,
            **({"budget": dict(self.budget)} if self.budget else {}),
        }


@dataclass(frozen=True)
class Reconciliation:
    """One predicted-vs-measured comparison, as recorded in the ledger."""

    name: str
    prediction: Prediction
    measurement: Measurement
    tolerance: Tolerance
    verdict: Verdict
    suite: str = ""
    test_id: str = ""
    hardware: str | None = None
    model: str | None = None
    finding: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "prediction"

    @property
    def predicted(self) -> float:
        return self.prediction.value

    @property
    def measured(self) -> float:
        return self.measurement.value

    @property
    def gap_abs(self) -> float:
        return self.measured - self.predicted

    @property
    def gap_rel(self) -> float | None:
        return None if self.predicted == 0 else self.gap_abs / abs(self.predicted)

    @property
    def ratio(self) -> float | None:
        return None if self.predicted == 0 else self.measured / self.predicted

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "test_id": self.test_id,
            "name": self.name,
            "predicted": self.predicted,
            "measured": self.measured,
            "unit": self.prediction.unit,
            "gap_abs": self.gap_abs,
            "gap_rel": self.gap_rel,
            "ratio": self.ratio,
            "tolerance": self.tolerance.to_dict(),
            "verdict": self.verdict.value,
            "kind": self.kind,
            "source": self.measurement.source,
            "hardware": self.hardware,
            "model": self.model,
            "provenance": dict(self.measurement.provenance),
            "prediction": self.prediction.to_dict(),
            "finding": dict(self.finding) if self.finding else None,
            **({"extra": dict(self.extra)} if self.extra else {}),
        }

    def explain(self) -> str:
        """Multi-line text for a failure: both numbers, the formula, the gap, the band."""
        unit = self.prediction.unit
        gap = "n/a" if self.gap_rel is None else f"{self.gap_rel * 100:+.4g}%"
        lines = [
            f"{self.name}: measured {format_quantity(self.measured, unit)} vs predicted "
            f"{format_quantity(self.predicted, unit)} (gap {gap}, {format_quantity(self.gap_abs, unit)})",
            f"  tolerance: {self.tolerance.describe(unit)}" + (f" — {self.tolerance.why}" if self.tolerance.why else ""),
            f"  formula:   {self.prediction.formula}",
        ]
        for term in self.prediction.terms:
            note = f"  ({term.note})" if term.note else ""
            lines.append(f"    {term.name} = {format_quantity(term.value, term.unit)}{note}")
        for note in self.prediction.notes:
            lines.append(f"  note: {note}")
        src = self.measurement.source
        recording = self.measurement.provenance.get("recording")
        lines.append(f"  measured from: {src}" + (f" ({recording})" if recording else ""))
        return "\n".join(lines)


def as_prediction(value: Prediction | float | int, unit: str = "") -> Prediction:
    if isinstance(value, Prediction):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"predicted must be a Prediction or a number, got {type(value).__name__}")
    return Prediction(float(value), unit, formula="(given number)")


def as_measurement(value: Measurement | float | int, unit: str = "") -> Measurement:
    if isinstance(value, Measurement):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"measured must be a Measurement or a number, got {type(value).__name__}")
    return Measurement(float(value), unit, source="given")  # not measured here: never labelled live


def compare(
    name: str,
    predicted: Prediction | float,
    measured: Measurement | float,
    tolerance: Tolerance,
    *,
    finding: Mapping[str, Any] | None = None,
    **context: Any,
) -> Reconciliation:
    """Pure verdict logic (the fixture adds recording and asserting on top).

    `finding` is the matching finding mark's data ({id, reason, expected?}) or None. With
    `expected=(lo, hi)`, a finding whose measured/predicted ratio drifts out of that range
    is a divergence: the recorded explanation no longer covers it."""
    tolerance = tolerance.check()
    kind = context.get("kind", "prediction")
    if kind not in RECONCILIATION_KINDS:
        raise ValueError(f"{name}: kind {kind!r} is not one of {', '.join(RECONCILIATION_KINDS)}")
    pred = as_prediction(predicted, getattr(measured, "unit", ""))
    meas = as_measurement(measured, pred.unit)
    if pred.unit and meas.unit and pred.unit != meas.unit:
        raise ValueError(f"{name}: unit mismatch, predicted in {pred.unit!r} but measured in {meas.unit!r}")
    for label, v in (("predicted", pred.value), ("measured", meas.value)):
        if not math.isfinite(v):
            raise ValueError(f"{name}: {label} value is {v!r}; a reconciliation needs finite numbers")
    ok = tolerance.accepts(pred.value, meas.value)
    if finding is None:
        verdict = Verdict.AGREE if ok else Verdict.DIVERGE
    elif ok:
        verdict = Verdict.RESOLVED
    else:
        verdict = Verdict.FINDING
        expected = finding.get("expected")
        if expected is not None and pred.value != 0:
            lo, hi = expected
            if not lo <= meas.value / pred.value <= hi:
                verdict = Verdict.DIVERGE
    return Reconciliation(name, pred, meas, tolerance, verdict, finding=finding, **context)
