"""The `finding` marker: an expected, explained divergence that travels with its test.

    @pytest.mark.finding("seed-kv-pool-driver", reason="round 1's driver left 1.8 GiB less ...",
                         quantity="available_kv_bytes", expected=(0.6, 0.8))

- id       -- stable identifier, shown in the report's findings section
- reason   -- the explanation (required: a finding without one is just a hidden failure)
- quantity -- optional: only the reconciliation with this name is expected to diverge;
              by default the mark covers every reconciliation in the test
- expected -- optional (lo, hi) band of measured/predicted the explanation covers; a finding
              that drifts outside it is a divergence again
- hardware -- optional: the card whose measurements the finding explains (a target name). On
              any other target the mark does not apply, and the reconciliation is judged on its
              own: a gap measured on one card is no excuse for the same gap on another.
- strict   -- default True: once the gap closes (verdict resolved) the test fails, like a strict
              XPASS, so the finding is retired; strict=False lets it pass (an XPASS) for a transition
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class FindingMark:
    id: str
    reason: str
    quantity: str | None = None
    expected: tuple[float, float] | None = None
    hardware: str | None = None
    strict: bool = True

    def covers(self, name: str, hardware: str | None = None) -> bool:
        return (self.quantity is None or self.quantity == name) and (
            self.hardware is None or self.hardware == hardware)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "reason": self.reason, "quantity": self.quantity,
                "expected": list(self.expected) if self.expected else None, "hardware": self.hardware,
                "strict": self.strict}


def parse_finding_marks(item: pytest.Item) -> list[FindingMark]:
    """Validate every finding mark on an item; bad kwargs are a UsageError naming the test."""
    marks = []
    for mark in item.iter_markers("finding"):
        where = f"{item.nodeid}: @pytest.mark.finding"
        if len(mark.args) != 1 or not isinstance(mark.args[0], str) or not mark.args[0].strip():
            raise pytest.UsageError(f"{where} needs exactly one positional id string, got args={mark.args!r}")
        unknown = set(mark.kwargs) - {"reason", "quantity", "expected", "hardware", "strict"}
        if unknown:
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) got unknown keyword(s) {sorted(unknown)}; "
                                    "allowed: reason, quantity, expected, hardware, strict")
        reason = mark.kwargs.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) needs reason='...': the explanation is the point")
        expected = mark.kwargs.get("expected")
        if expected is not None:
            try:
                lo, hi = (float(x) for x in expected)
            except (TypeError, ValueError):
                raise pytest.UsageError(f"{where}({mark.args[0]!r}) expected={expected!r} must be (lo, hi)") from None
            if not 0 <= lo <= hi:
                raise pytest.UsageError(f"{where}({mark.args[0]!r}) expected={expected!r} needs 0 <= lo <= hi")
            expected = (lo, hi)
        quantity = mark.kwargs.get("quantity")
        if quantity is not None and not isinstance(quantity, str):
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) quantity must be a reconciliation name string")
        hardware = mark.kwargs.get("hardware")
        if hardware is not None and not isinstance(hardware, str):
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) hardware must be a target name string")
        strict = mark.kwargs.get("strict", True)
        if not isinstance(strict, bool):
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) strict={strict!r} must be True or False")
        marks.append(FindingMark(mark.args[0], reason.strip(), quantity, expected, hardware, strict))
    return marks


def mark_for(marks: list[FindingMark], name: str, hardware: str | None = None) -> FindingMark | None:
    for m in marks:
        if m.covers(name, hardware):
            return m
    return None
