"""The Measurement value object. Pure Python: importing it never touches a GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

# given: a plain number passed to reconcile (a test's constant or a value computed in the test),
# neither measured in this session nor replayed from results/.
Source = Literal["live", "recorded", "given"]


@dataclass(frozen=True)
class Measurement:
    """A measured quantity.

    value      -- in SI base units, like Prediction.value
    samples    -- raw samples the value summarises (may be empty for single readings)
    source     -- "live" (measured in this session), "recorded" (replayed from results/) or "given"
    provenance -- GPU, driver, engine + version, settings, command, date, origin file
    """

    value: float
    unit: str
    samples: tuple[float, ...] = ()
    source: Source = "recorded"
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "unit": self.unit,
            "samples": list(self.samples),
            "source": self.source,
            "provenance": dict(self.provenance),
        }
