"""Held out or fitted: one way to say whether a check can test a fitted model.

A fitted constant (the latency calibration's step overhead and compute efficiency, the kernel
ledgers' instruction prices, the memory ledger's non-torch increase) is fitted on named points: a
recording, a rung, a workload. Predicting such a point again is agreement by construction (or
run-to-run variation, for another round of the same run), not a test of the model. A `FitSet`
names a model's fit points and what each pins down; a prediction carries `FitSet.note(...)`, and a
test that declares its point held out (or a repeat of a fit point) calls `FitSet.check(...)`, which
fails when the declaration is wrong either way.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass


class HeldOutDeclarationError(AssertionError):
    """A check declared held out that a fit point pins down, or declared a repeat that none does."""


@dataclass(frozen=True)
class FitPoint:
    """One point a model was fitted on. `pins`: the quantities of that point the fit determines
    (at a C=1 decode run every ITL is the fitted step); empty means every quantity."""

    point: Hashable
    describe: str  # e.g. "t_overhead fitted on <recording>:median_itl ({...})"
    pins: frozenset[str] = frozenset()

    def pins_down(self, point: Hashable, quantity: str | None) -> bool:
        return point == self.point and (not self.pins or quantity is None or quantity in self.pins)


@dataclass(frozen=True)
class FitSet:
    """Every fit point of one fitted model; `name` says which model, for notes and messages."""

    name: str
    points: tuple[FitPoint, ...]

    @classmethod
    def of(cls, name: str, points: Iterable[Hashable]) -> FitSet:
        """Fit points that pin every quantity of themselves (a rung, a recording)."""
        return cls(name, tuple(FitPoint(p, f"{name} fitted on {p}") for p in points))

    def fit_point(self, point: Hashable, quantity: str | None = None) -> FitPoint | None:
        return next((f for f in self.points if f.pins_down(point, quantity)), None)

    def is_held_out(self, point: Hashable, quantity: str | None = None) -> bool:
        return self.fit_point(point, quantity) is None

    def note(self, point: Hashable, quantity: str | None = None) -> str:
        """What a prediction of `quantity` at `point` can say about the model."""
        fit = self.fit_point(point, quantity)
        what = quantity or "it"
        if fit is None:
            return f"held out: no fit point of {self.name} pins {what} down here"
        return (f"repeat of the fit point (reproducibility): {fit.describe} pins {what} here, so agreement is by "
                "construction and a gap mostly run-to-run variation, not a test of the model")

    def check(self, point: Hashable, quantity: str | None = None, *, declared_held_out: bool, shown: str = "",
              how_to_declare: str = "as a repeat of a fit point") -> str:
        """note(point, quantity) after checking the test's declaration; `shown` names the point in
        messages (default: its repr)."""
        fit = self.fit_point(point, quantity)
        where = f"{quantity or 'it'} at {shown or point!r}"
        if fit is None and not declared_held_out:
            raise HeldOutDeclarationError(f"declared a repeat of a fit point, but {where} matches no fit point of "
                                          f"{self.name}: {[f.describe for f in self.points]}")
        if fit is not None and declared_held_out:
            raise HeldOutDeclarationError(f"{where} is pinned by the fit point {fit.describe}: it cannot test the "
                                          f"model; declare it {how_to_declare}")
        return self.note(point, quantity)
