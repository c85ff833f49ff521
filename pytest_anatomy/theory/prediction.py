"""The Prediction value object: a number derived from specs, with its derivation.

A Prediction never contains a measured number unless that number is an *input* it names
(e.g. the engine's own reported available KV memory when predicting block counts); the
report prints inputs and terms so a reader can redo the arithmetic by hand."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Term:
    """One named addend/factor of a prediction, shown in the report's derivation."""

    name: str
    value: float
    unit: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "note": self.note}


@dataclass(frozen=True)
class Prediction:
    """A predicted quantity.

    value    -- in SI base units (bytes, seconds, tokens, FLOP ...)
    unit     -- unit of value ("B", "s", "tokens", "x", ...)
    formula  -- the formula as a human-readable string, with symbols named in inputs
    inputs   -- the input values the formula used (spec fields, settings)
    terms    -- named terms that add up to / multiply into value
    notes    -- caveats: fitted constants, quantities not modelled, rounding
    """

    value: float
    unit: str
    formula: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    terms: tuple[Term, ...] = ()
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "unit": self.unit,
            "formula": self.formula,
            "inputs": {k: _jsonable(v) for k, v in self.inputs.items()},
            "terms": [t.to_dict() for t in self.terms],
            "notes": list(self.notes),
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)
