"""The `finding` marker: an expected, explained divergence that travels with its test.

    @pytest.mark.finding("seed-kv-pool-driver", reason="round 1's driver left 1.8 GiB less ...",
                         quantity="available_kv_bytes", expected=(0.6, 0.8), band_from="other-runs")

- id       -- stable identifier, shown in the report's findings section
- reason   -- the explanation (required: a finding without one is just a hidden failure)
- quantity -- optional: only the reconciliation with this name is expected to diverge;
              by default the mark covers every reconciliation in the test
- expected -- (lo, hi) band of measured/predicted the explanation covers; a finding that drifts
              outside it is a divergence again. Static here, or computed by the test at run time
              (reconcile(..., finding_band=...)); one of the two is required (band_from below)
- hardware -- optional: the card whose measurements the finding explains (a target name), or a
              tuple of cards where the same band was checked on each card's own measurements. On
              any other target the mark does not apply, and the reconciliation is judged on its
              own: a gap measured on one card is no excuse for the same gap on another.
- strict   -- default True: once the gap closes (verdict resolved) the test fails, like a strict
              XPASS, so the finding is retired; strict=False lets it pass (an XPASS) for a transition
- band_from -- where the band comes from (BAND_SOURCES), required on every finding (issue 10: a finding
              without a band accepts any gap): the band is a static `expected`, or one the test computes
              at run time (reconcile(..., finding_band=...)), and a finding verdict judged without either
              is refused (fixtures.Reconciler). A band must not be tuned to the run it judges, so its
              source is stated where the band is written and shown in the report beside it; one that can
              only be read off the run it judges is `checked-run`, its reason naming the second run that
              would replace it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from pytest_anatomy.reconcile import Tolerance


# Where a finding's band may come from (issue 10: a band is written before the measurement, follows from the
# explanation's arithmetic, or is derived from other runs than the one it checks), and what the report says of each.
BAND_SOURCES: dict[str, str] = {
    "preregistered": "written down before the measurement it judges",
    "explanation": "the explanation's own arithmetic (a mechanism's computed size)",
    "other-runs": "derived from runs other than the one it judges",
    # Not one of issue 10's sources: a band read off the run it judges tests nothing. Stated rather than hidden, so
    # the report lists it, until a second run (or the explanation's arithmetic) replaces it.
    "checked-run": "read off the run it judges, so it tests nothing yet (a second run replaces it)",
}


# The fix a bandless finding is told, at declaration (parse_finding_marks) and at judgement (fixtures.Reconciler).
BAND_REQUIRED = (f"every finding needs a band (expected=(lo, hi), or reconcile(..., finding_band=...) at run time) "
                 f"and band_from= saying where it comes from ({', '.join(BAND_SOURCES)}); a band read off the run it "
                 "judges is band_from='checked-run', its reason naming the second run that would replace it")


@dataclass(frozen=True)
class FindingMark:
    id: str
    reason: str
    quantity: str | None = None
    expected: tuple[float, float] | None = None
    hardware: str | tuple[str, ...] | None = None
    strict: bool = True
    band_from: str | None = None

    @property
    def cards(self) -> tuple[str, ...]:
        """The targets the mark applies on; () for every target."""
        return () if self.hardware is None else (
            (self.hardware,) if isinstance(self.hardware, str) else tuple(self.hardware))

    def covers(self, name: str, hardware: str | None = None) -> bool:
        return (self.quantity is None or self.quantity == name) and (not self.cards or hardware in self.cards)

    def names_another_card(self, name: str, hardware: str | None) -> bool:
        """True when the mark would cover `name` on some other card but not on `hardware`."""
        return self.quantity in (None, name) and bool(self.cards) and hardware not in self.cards

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "reason": self.reason, "quantity": self.quantity,
                "expected": list(self.expected) if self.expected else None,
                "hardware": self.hardware if self.hardware is None or isinstance(self.hardware, str) else list(self.hardware),
                "strict": self.strict, "band_from": self.band_from}


def parse_finding_marks(item: pytest.Item) -> list[FindingMark]:
    """Validate every finding mark on an item; bad kwargs are a UsageError naming the test."""
    marks = []
    for mark in item.iter_markers("finding"):
        where = f"{item.nodeid}: @pytest.mark.finding"
        if len(mark.args) != 1 or not isinstance(mark.args[0], str) or not mark.args[0].strip():
            raise pytest.UsageError(f"{where} needs exactly one positional id string, got args={mark.args!r}")
        unknown = set(mark.kwargs) - {"reason", "quantity", "expected", "hardware", "strict", "band_from"}
        if unknown:
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) got unknown keyword(s) {sorted(unknown)}; "
                                    "allowed: reason, quantity, expected, hardware, strict, band_from")
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
        if isinstance(hardware, (tuple, list)) and hardware and all(isinstance(h, str) for h in hardware):
            hardware = tuple(hardware)
        elif hardware is not None and not isinstance(hardware, str):
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) hardware must be a target name or a tuple of them")
        strict = mark.kwargs.get("strict", True)
        if not isinstance(strict, bool):
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) strict={strict!r} must be True or False")
        band_from = mark.kwargs.get("band_from")
        if band_from is not None and band_from not in BAND_SOURCES:
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) band_from={band_from!r} must be one of "
                                    f"{', '.join(BAND_SOURCES)}")
        if band_from is None:
            raise pytest.UsageError(f"{where}({mark.args[0]!r}) has no band_from=: {BAND_REQUIRED}")
        marks.append(FindingMark(mark.args[0], reason.strip(), quantity, expected, hardware, strict, band_from))
    return marks


def mark_for(marks: list[FindingMark], name: str, hardware: str | None = None) -> FindingMark | None:
    for m in marks:
        if m.covers(name, hardware):
            return m
    return None


def carried_to_another_card(mark: FindingMark, hardware: str | None, tolerance: Tolerance) -> FindingMark:
    """A band written on one card (the first of the mark's cards) and carried to another: widened by the check's
    own measured-noise budget (Tolerance.budget), which the band's source session never saw. A band the test sets
    from this session's other runs (finding_band) is widened too: the mechanism that turns those runs into a band
    was established on the first card, and on another its fit is uncertain by at least this noise. A target
    tolerance (no budget) widens nothing: a goal is not noise. On the card it was written on, nothing changes."""
    cards, rel = mark.cards, tolerance.rel
    if (mark.expected is None or len(cards) < 2 or hardware == cards[0] or hardware not in cards
            or not tolerance.budget or rel <= 0):
        return mark
    lo, hi = mark.expected
    return replace(mark, expected=(round(lo * (1 - rel), 4), round(hi * (1 + rel), 4)))
