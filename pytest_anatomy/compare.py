"""What changed between two JSON ledgers (`pytest-anatomy compare OLD.json NEW.json`).

A reconciliation is identified by (test_id, name); a test that reconciles one name twice gets
"#2", "#3" on the later ones, in ledger order. The comparison answers what a user upgrading a
driver or vLLM asks: which reconciliations appeared or went away, whose verdict changed, whose
gap moved by more than its own tolerance band, and which findings resolved or newly appeared.

Regressions (exit 1 in the CLI): a verdict that went from agree, finding or resolved to diverge,
and a finding (in both runs) whose measured/predicted drifted by more than its tolerance band.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_anatomy.session import LEDGER_SCHEMA

Key = tuple[str, str]

# Float noise of a re-serialised number: below this, an exact band's ratio has not moved.
_EXACT_SLACK = 1e-9


class LedgerError(ValueError):
    """A file that is not a readable ledger; the message names the file and the problem."""


def load_ledger(path: Path) -> dict[str, Any]:
    """The ledger at `path`, or LedgerError naming the file: missing, not JSON, not a ledger."""
    if not path.is_file():  # a folder was "no such file" too, which sent one looking for a missing path
        what = "a folder, not a file" if path.is_dir() else "no such file"
        raise LedgerError(f"{path}: {what} (pass the .json ledger written beside an HTML report)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LedgerError(f"{path}: not JSON ({exc}); pass the .json ledger written beside an HTML report") from None
    except OSError as exc:
        raise LedgerError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != LEDGER_SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise LedgerError(f"{path}: not a pytest-anatomy ledger (schema {found!r}, expected {LEDGER_SCHEMA!r})")
    recons = doc.get("reconciliations")
    if not isinstance(recons, list) or not all(
            isinstance(r, dict) and isinstance(r.get("test_id"), str) and isinstance(r.get("name"), str)
            and isinstance(r.get("verdict"), str) for r in recons):
        raise LedgerError(f"{path}: not a pytest-anatomy ledger (its reconciliations are not a list of "
                          "entries with test_id, name and verdict)")
    return doc


def keyed(reconciliations: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """Each reconciliation under (test_id, name), repeats numbered "#2", "#3" in ledger order."""
    out: dict[Key, dict[str, Any]] = {}
    seen: dict[Key, int] = {}
    for r in reconciliations:
        base = (r["test_id"], r["name"])
        seen[base] = seen.get(base, 0) + 1
        out[base if seen[base] == 1 else (base[0], f"{base[1]}#{seen[base]}")] = r
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def band_width(entry: dict[str, Any]) -> tuple[str, float] | None:
    """The tolerance band of `entry` as (scale, width): "ratio" widths are on measured/predicted
    (the ratio band hi - lo, or rel + abs/|predicted|), "abs" on measured - predicted when the
    prediction is 0. None when the entry's tolerance cannot be read."""
    tol = entry.get("tolerance")
    predicted = _number(entry.get("predicted"))
    if not isinstance(tol, dict) or predicted is None:
        return None
    ratio = tol.get("ratio")
    if isinstance(ratio, list) and len(ratio) == 2 and all(_number(v) is not None for v in ratio):
        return "ratio", float(ratio[1]) - float(ratio[0])
    rel, abs_ = _number(tol.get("rel")) or 0.0, _number(tol.get("abs")) or 0.0
    if predicted == 0:
        return "abs", abs_
    return "ratio", rel + abs_ / abs(predicted)


def _position(entry: dict[str, Any], scale: str) -> float | None:
    predicted, measured = _number(entry.get("predicted")), _number(entry.get("measured"))
    if predicted is None or measured is None:
        return None
    if scale == "abs":
        return measured - predicted
    return None if predicted == 0 else measured / predicted


@dataclass(frozen=True)
class Drift:
    key: Key
    scale: str  # "ratio" (measured/predicted) or "abs" (measured - predicted)
    old: float
    new: float
    band: float
    verdict: str
    old_verdict: str
    finding: str | None

    @property
    def moved(self) -> float:
        return self.new - self.old

    def to_dict(self) -> dict[str, Any]:
        return {"test_id": self.key[0], "name": self.key[1], "scale": self.scale, "old": self.old, "new": self.new,
                "moved": self.moved, "band": self.band, "verdict": self.verdict, "old_verdict": self.old_verdict, "finding": self.finding}


def drift(key: Key, old: dict[str, Any], new: dict[str, Any]) -> Drift | None:
    """The move of measured/predicted between the runs when it exceeds the new run's tolerance band
    (the band the reconciliation states now); None when it stays within, or cannot be compared."""
    band = band_width(new)
    if band is None:
        return None
    scale, width = band
    before, after = _position(old, scale), _position(new, scale)
    if before is None or after is None:
        return None
    slack = width if width > 0 else _EXACT_SLACK * max(1.0, abs(before), abs(after))
    if abs(after - before) <= slack:
        return None
    return Drift(key, scale, before, after, width, str(new["verdict"]), str(old["verdict"]), _finding_id(new))


def _finding_id(entry: dict[str, Any]) -> str | None:
    finding = entry.get("finding")
    return str(finding.get("id")) if isinstance(finding, dict) and finding.get("id") is not None else None


@dataclass
class Comparison:
    old_path: str
    new_path: str
    added: list[tuple[Key, dict[str, Any]]] = field(default_factory=list)
    removed: list[tuple[Key, dict[str, Any]]] = field(default_factory=list)
    verdict_changes: list[tuple[Key, str, str]] = field(default_factory=list)
    drifts: list[Drift] = field(default_factory=list)
    findings_resolved: list[tuple[Key, str | None, str]] = field(default_factory=list)  # (key, id, new verdict)
    findings_new: list[tuple[Key, str | None, str | None]] = field(default_factory=list)  # (key, id, old verdict)
    unchanged: int = 0

    @property
    def regressions(self) -> list[str]:
        """One line per regression: a verdict turned diverge, or a finding (still one) whose
        measured/predicted moved by more than its band (a finding that turned diverge is the first kind)."""
        out = [f"{_label(k)}: {a} -> {b}" for k, a, b in self.verdict_changes if b == "diverge" and a != "diverge"]
        out += [f"{_label(d.key)}: finding {d.finding} moved {d.old:.4g} -> {d.new:.4g} "
                f"({'measured/predicted' if d.scale == 'ratio' else 'gap'}), beyond its band {d.band:.3g}"
                for d in self.drifts if d.finding is not None and d.verdict == d.old_verdict == "finding"]
        return out

    def summary(self) -> str:
        parts = [f"{len(self.added)} added", f"{len(self.removed)} removed",
                 f"{len(self.verdict_changes)} verdict change(s)", f"{len(self.drifts)} drifted beyond tolerance",
                 f"{len(self.findings_resolved)} finding(s) resolved", f"{len(self.findings_new)} new finding(s)"]
        n = len(self.regressions)
        return (f"{self.old_path} -> {self.new_path}: " + ", ".join(parts) + f"; {self.unchanged} unchanged; "
                + (f"{n} regression(s)" if n else "no regressions"))

    def to_json(self) -> dict[str, Any]:
        def ref(key: Key, entry: dict[str, Any]) -> dict[str, Any]:
            return {"test_id": key[0], "name": key[1], "verdict": entry.get("verdict"),
                    "hardware": entry.get("hardware"), "finding": _finding_id(entry)}

        return {
            "old": self.old_path, "new": self.new_path,
            "added": [ref(k, e) for k, e in self.added],
            "removed": [ref(k, e) for k, e in self.removed],
            "verdict_changes": [{"test_id": k[0], "name": k[1], "old": a, "new": b} for k, a, b in self.verdict_changes],
            "drifted": [d.to_dict() for d in self.drifts],
            "findings_resolved": [{"test_id": k[0], "name": k[1], "finding": f, "verdict": v}
                                  for k, f, v in self.findings_resolved],
            "findings_new": [{"test_id": k[0], "name": k[1], "finding": f, "old_verdict": v}
                             for k, f, v in self.findings_new],
            "unchanged": self.unchanged,
            "regressions": self.regressions,
        }


def _label(key: Key) -> str:
    return f"{key[0]} [{key[1]}]"


def compare_ledgers(old: dict[str, Any], new: dict[str, Any], old_path: str = "OLD",
                    new_path: str = "NEW") -> Comparison:
    before, after = keyed(old["reconciliations"]), keyed(new["reconciliations"])
    result = Comparison(old_path, new_path)
    result.added = [(k, after[k]) for k in after if k not in before]
    result.removed = [(k, before[k]) for k in before if k not in after]
    for key in (k for k in after if k in before):
        a, b = before[key], after[key]
        va, vb = str(a["verdict"]), str(b["verdict"])
        moved = drift(key, a, b)
        if va != vb:
            result.verdict_changes.append((key, va, vb))
        if moved is not None:
            result.drifts.append(moved)
        if va == "finding" and vb in ("resolved", "agree"):
            result.findings_resolved.append((key, _finding_id(a), vb))
        if va == vb and moved is None:
            result.unchanged += 1
    for key, entry in after.items():
        if entry["verdict"] == "finding" and (key not in before or before[key]["verdict"] != "finding"):
            result.findings_new.append((key, _finding_id(entry), before[key]["verdict"] if key in before else None))
    return result


def _table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    if not rows:
        return []
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(f"{{:{w}s}}" for w in widths)
    return ["", f"{title} ({len(rows)})", "  " + line.format(*header).rstrip(),
            *("  " + line.format(*r).rstrip() for r in rows)]


def render_text(result: Comparison) -> str:
    """The summary line, then one table per kind of change (empty kinds left out)."""
    lines = [result.summary()]
    regressions = result.regressions
    if regressions:
        lines += ["", f"regressions ({len(regressions)})", *(f"  {r}" for r in regressions)]
    lines += _table("verdict changes", ("test", "name", "old", "new"),
                    [(k[0], k[1], a, b) for k, a, b in result.verdict_changes])
    lines += _table("drifted beyond tolerance", ("test", "name", "measured/predicted", "moved", "band", "verdict"),
                    [(d.key[0], d.key[1], f"{d.old:.4g} -> {d.new:.4g}" + (" (gap)" if d.scale == "abs" else ""),
                      f"{d.moved:+.3g}", f"{d.band:.3g}", d.verdict) for d in result.drifts])
    lines += _table("findings resolved", ("test", "name", "finding", "now"),
                    [(k[0], k[1], f or "?", v) for k, f, v in result.findings_resolved])
    lines += _table("new findings", ("test", "name", "finding", "was"),
                    [(k[0], k[1], f or "?", v or "(absent)") for k, f, v in result.findings_new])
    lines += _table("added", ("test", "name", "verdict"), [(k[0], k[1], str(e["verdict"])) for k, e in result.added])
    lines += _table("removed", ("test", "name", "verdict"),
                    [(k[0], k[1], str(e["verdict"])) for k, e in result.removed])
    return "\n".join(lines)
