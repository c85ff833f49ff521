"""Counts of a ledger's reconciliations by kind, so that headlines count predictions only.

An identity (the engine's own arithmetic), an echoed setting, a fit point or a replay of another
tool's computed column cannot fail for an error in the theory; counted beside predictions they
inflate "agree". Every summary (terminal, CI markdown, the JSON ledger's summary block, the HTML
report) takes its numbers from here: predictions by verdict in the headline, the other kinds
listed apart with their own verdicts, so a diverging identity still shows.

Works on ledger entries (the JSON dicts); an entry without a kind is a prediction, as the
`reconcile` fixture's default is."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pytest_anatomy.reconcile import RECONCILIATION_KINDS

VERDICT_ORDER: tuple[str, ...] = ("agree", "finding", "resolved", "diverge")
PREDICTION = "prediction"
# How each kind other than prediction is named when listed apart ("32 identities").
KIND_PLURALS: dict[str, tuple[str, str]] = {
    "identity": ("identity", "identities"),
    "fit": ("fit point", "fit points"),
    "replay": ("replay", "replays"),
    "setting": ("setting", "settings"),
}


def kind_of(entry: Mapping[str, Any]) -> str:
    return str(entry.get("kind") or PREDICTION)


def counts_by_kind(entries: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """{kind: {verdict: count}} for every kind present, in RECONCILIATION_KINDS order, each with
    the four verdicts present (zero when absent) and any other verdict after them."""
    counts: dict[str, dict[str, int]] = {}
    for entry in entries:
        per = counts.setdefault(kind_of(entry), dict.fromkeys(VERDICT_ORDER, 0))
        verdict = str(entry.get("verdict", "?"))
        per[verdict] = per.get(verdict, 0) + 1
    rank = {k: i for i, k in enumerate(RECONCILIATION_KINDS)}
    return {k: counts[k] for k in sorted(counts, key=lambda k: (rank.get(k, len(rank)), k))}


def prediction_counts(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Verdict counts of the predictions only (the four verdicts always present)."""
    return counts_by_kind(entries).get(PREDICTION, dict.fromkeys(VERDICT_ORDER, 0))


def _count(n: int, kind: str) -> str:
    one, many = KIND_PLURALS.get(kind, (kind, kind + "s"))
    return f"{n} {one if n == 1 else many}"


def verdict_phrase(counts: Mapping[str, int]) -> str:
    """'9 agree, 2 findings, 0 resolved, 1 diverge' (and any other verdict seen)."""
    parts = [f"{counts.get('agree', 0)} agree",
             f"{counts.get('finding', 0)} finding{'' if counts.get('finding', 0) == 1 else 's'}",
             f"{counts.get('resolved', 0)} resolved", f"{counts.get('diverge', 0)} diverge"]
    return ", ".join(parts + [f"{n} {v}" for v, n in counts.items() if v not in VERDICT_ORDER])


def apart_phrase(by_kind: Mapping[str, Mapping[str, int]]) -> str:
    """'32 identities, 99 settings, 3 fit points (1 diverge)': the kinds other than prediction; a
    kind's verdicts are spelled out only when some are not 'agree'."""
    parts = []
    for kind, per in by_kind.items():
        if kind == PREDICTION:
            continue
        total = sum(per.values())
        other = {v: n for v, n in per.items() if v != "agree" and n}
        tail = f" ({', '.join(f'{n} {v}' + ('s' if v == 'finding' and n != 1 else '') for v, n in other.items())})" \
            if other else ""
        parts.append(_count(total, kind) + tail)
    return ", ".join(parts)


def headline(entries: Iterable[Mapping[str, Any]]) -> str:
    """'3331 reconciliations: 1234 predictions (1100 agree, 130 findings, 0 resolved, 4 diverge);
    apart: 32 identities, 99 settings'; with predictions only, as before kinds existed:
    '12 reconciliations: 9 agree, 2 findings, 0 resolved, 1 diverge'."""
    entries = list(entries)
    by_kind = counts_by_kind(entries)
    total = len(entries)
    head = f"{total} reconciliation{'' if total == 1 else 's'}"
    predictions = by_kind.get(PREDICTION, dict.fromkeys(VERDICT_ORDER, 0))
    if set(by_kind) <= {PREDICTION}:
        return f"{head}: {verdict_phrase(predictions)}"
    n_pred = sum(predictions.values())
    return (f"{head}: {_count(n_pred, 'prediction')} ({verdict_phrase(predictions)}); "
            f"apart: {apart_phrase(by_kind)}")


def ledger_block(entries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON ledger's summary block: `verdicts` counts predictions only; `kinds` holds every
    kind's verdict counts (predictions included)."""
    by_kind = counts_by_kind(entries)
    return {"verdicts": {v: n for v, n in by_kind.get(PREDICTION, {}).items() if n},
            "kinds": {k: {v: n for v, n in per.items() if n} for k, per in by_kind.items()}}


__all__ = ["KIND_PLURALS", "VERDICT_ORDER", "apart_phrase", "counts_by_kind", "headline", "kind_of",
           "ledger_block", "prediction_counts", "verdict_phrase"]
