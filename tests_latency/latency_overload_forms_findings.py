"""The overload run's median ITL between the two forms of the decode step's excess (sequence_cost.py).

The session's decode sweep (b = 1..64 at ~1,100 tokens of context) measures an excess over the step model; carried
to the overload run (~125 sequences at ~16,600 tokens) it can be a cost per sequence or a slower KV read (every KV
byte at the measured slope over the modeled one). The two agree at the sweep's context and part here. Until
2026-12-03 the suite held that only the per-sequence form met the overload's median: true of the sessions it was
written on (2026-12-02 16:29 and 23:51, whose sweep slopes came out high, 1.40x and 1.44x), and of the 2026-11-30
and H100 sessions, but not of the whole table. The thirteenth visit (2026-12-03 08:29, slope 1.27x) missed the
per-sequence form's budget, and the table below, every recorded session's, shows why: in the nine H200 sessions then
recorded whose slope came out at 1.25-1.31x the per-sequence form is short by 2.4-4.5% (six outside their budgets) and
the per-KV-byte form is within 1-2.7% (thirteen such sessions through the eighteenth visit's, 2026-12-03 23:32: short
by 2.4-4.5%, ten outside their budgets, the per-KV-byte form within 0.8-3.3%); where the slope came out high the
per-sequence form fits and the per-KV-byte form is long. The overload median moves less from session to session than
the slope does: some of the excess grows with context (what the attention kernel reads), some does not; neither form
alone, and the split is not measured.

OVERLOAD_FORMS: (card, model, stamp) -> (measured / per-sequence prediction, that check's noise budget, measured /
per-KV-byte prediction), recomputed from every recording by test_latency_sequence_cost.py.
"""

from __future__ import annotations

import pytest
from latency_findings_common import CHECKED_ON, H100, LLAMA, MEASURED_ON, QWEN

OVERLOAD_FORMS: dict[tuple[str, str, str], tuple[float, float, float]] = {
    (H100, QWEN, "2026-12-02T18:32:19.000000Z"): (1.0061, 0.0211, 0.9408),
    (MEASURED_ON, QWEN, "2026-11-30T00:37:45Z"): (0.9851, 0.0471, 0.7639),
    (MEASURED_ON, QWEN, "2026-12-01T04:47:40.726144Z"): (1.0425, 0.0315, 0.9835),
    (MEASURED_ON, QWEN, "2026-12-01T06:44:22.000000Z"): (1.0387, 0.0314, 0.9866),
    (MEASURED_ON, QWEN, "2026-12-01T11:24:59.000000Z"): (1.0395, 0.0325, 0.9885),
    (MEASURED_ON, QWEN, "2026-12-02T00:05:58.000000Z"): (1.0414, 0.0384, 0.9911),
    (MEASURED_ON, QWEN, "2026-12-02T02:33:51.000000Z"): (1.0359, 0.0325, 0.9843),
    (MEASURED_ON, QWEN, "2026-12-02T04:52:35.000000Z"): (1.0341, 0.0423, 0.9854),
    (MEASURED_ON, QWEN, "2026-12-02T07:14:23.000000Z"): (1.0245, 0.0251, 0.9736),
    (MEASURED_ON, QWEN, "2026-12-02T14:18:58.000000Z"): (1.0451, 0.0357, 0.9914),
    (MEASURED_ON, QWEN, "2026-12-02T16:29:14.000000Z"): (1.0193, 0.0272, 0.9464),
    (MEASURED_ON, QWEN, "2026-12-02T23:51:19.000000Z"): (1.0169, 0.0250, 0.9375),
    (MEASURED_ON, QWEN, "2026-12-03T08:29:08.000000Z"): (1.0353, 0.0342, 0.9841),
    (MEASURED_ON, QWEN, "2026-12-03T12:06:46.000000Z"): (1.0405, 0.0287, 0.9871),
    (MEASURED_ON, QWEN, "2026-12-03T14:16:33.000000Z"): (1.0421, 0.0248, 0.9918),
    (MEASURED_ON, QWEN, "2026-12-03T21:25:39.000000Z"): (1.0302, 0.0258, 0.9795),
    (MEASURED_ON, QWEN, "2026-12-03T23:32:23.000000Z"): (1.0239, 0.0298, 0.9673),
    (MEASURED_ON, QWEN, "2026-12-04T00:09:44.000000Z"): (1.0217, 0.0219, 0.9468),
    (MEASURED_ON, QWEN, "2026-12-04T09:53:42.000000Z"): (1.0420, 0.0250, 0.9760),
    (MEASURED_ON, QWEN, "2026-12-04T10:05:35.000000Z"): (1.0248, 0.0282, 0.9732),
    (MEASURED_ON, LLAMA, "2026-11-30T02:02:39Z"): (0.9997, 0.0141, 0.9165),
}

OVERLOAD_BETWEEN_FORMS_ID = "h200-overload-itl-between-the-excess-forms"


def misses(model: str, form: int) -> list[str]:
    """The stamps of `model`'s recorded sessions whose `form` (0: per sequence, 2: per KV byte) misses the budget."""
    return [stamp for (_, m, stamp), row in OVERLOAD_FORMS.items() if m == model and abs(row[form] - 1) > row[1]]


def overload_forms_reason() -> str:
    rows = [row for (_, m, _), row in OVERLOAD_FORMS.items() if m == QWEN]
    return (
        "Qwen2.5-7B's overload median ITL lies between the session's excess carried per sequence and per KV byte "
        f"(over its {len(rows)} recorded sessions: {min(r[0] for r in rows):.3f}-{max(r[0] for r in rows):.3f} of the "
        f"per-sequence prediction, {len(misses(QWEN, 0))} outside its budget; {min(r[2] for r in rows):.3f}-"
        f"{max(r[2] for r in rows):.3f} of the per-KV-byte one, {len(misses(QWEN, 2))} outside): part of the excess "
        "grows with context, part does not, and the split is not measured. Band, set at test time from the two forms' "
        "own arithmetic: from the per-sequence prediction to the per-KV-byte one, +- this check's budget.")


def covers(model: str, run: str) -> bool:
    """Whether the finding judges `model`'s `run` (the runs whose recorded sessions miss the per-sequence form)."""
    return (model, run) == (QWEN, "overload")


def overload_forms_marks(model: str, run: str) -> tuple[pytest.MarkDecorator, ...]:
    if not covers(model, run):
        return ()
    return (pytest.mark.finding(OVERLOAD_BETWEEN_FORMS_ID, hardware=CHECKED_ON, reason=overload_forms_reason(),
                                quantity="itl_median_with_sequence_cost", strict=False, band_from="explanation"),)
