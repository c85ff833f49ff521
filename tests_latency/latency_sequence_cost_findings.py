"""Qwen2.5-7B's closed loops above the prediction with the per-sequence excess (test_latency_sequence_cost.py).

The prediction starts from the session's b=1 step (the calibration point) and adds the b = 1..64 line's slope per
sequence. The isolated decode steps do not lie on that line: in every session of 2026-11-30..2026-12-03 whose sweep was
checked, the residuals from the line over b = 1, 2, 4, 8, 16, 32, 64 have one S shape (2026-12-03 14:16: -39, -32, +1,
+23, +42, +33, -28 us; 2026-11-30: -38, -30, -12, +16, +67, +28, -30 us). The 2026-12-04 09:53 session's sweep bent the
other way at its top (-20, -24, +20, +24, +18, -23, +4 us), its b=1 anchor below the line as in every session. The b=1
anchor sits ~20-45 us below the line, so every batch above 1 is predicted that much short, plus the line's own misfit
there: at C=8 and C=32 about +1.2% of the step, at C=64 (-28 us misfit) about +0.2%. The budget's line-misfit term
measures the isolated step against the line, not against the prediction, and leaves the anchor's offset out.

A closed loop runs at its isolated step: the C=8 loop's median ITL against the same session's decode.b8 step,
4.971 / 4.972, 4.972 / 4.976, 4.880 / 4.879, 4.894 / 4.888, 4.855 / 4.853 ms (2026-12-03 14:16, 12:06, 08:29,
2026-12-02 23:51, 2026-11-30 00:37). Over the nineteen recorded H200 sessions (through 2026-12-04 10:05) the C=8 loop
sat +0.65% to +1.71% above its prediction, C=32 -0.08% to +2.09%, C=64 -0.74% to +1.10% (the 2026-12-04 09:53 run;
+0.69% at most before it); live, the check first ran on 2026-12-02 23:46, and the fifteenth visit's C=8 run (+1.30%,
the quietest yet: repeat scatter 0.09%, budget 1.06%) was the first to leave it.
The seventeenth visit's C=32 run (2026-12-03 21:25) was the first C=32 to leave it: +1.59% against a 1.59% budget, the
loop 5.33 ms at its isolated b=32 step's 5.288 (+0.8%) and that step +0.8% over the prediction. Every recorded C=32 run
lies in its isolated step's band, so C=32 carries the finding too.
"""

from __future__ import annotations

import pytest
from latency_findings_common import MEASURED_ON

QWEN_CLOSED_AT_ITS_STEP_ID = "h200-closed-loop-runs-at-its-isolated-step"
# C=32 joined C=8 on 2026-12-03 (the seventeenth visit's full session: +1.59% against a 1.59% budget); C=64's offset
# (~0.2%) sits inside its budget in every session
QWEN_CLOSED_AT_ITS_STEP_RUNS = ("closed.c8", "closed.c32")
# run -> (runs inside this check's budget, runs) over the recorded H200 sessions: recomputed by
# test_latency_sequence_cost.py::test_closed_loop_runs_at_its_isolated_step_in_every_session
QWEN_INSIDE_BUDGET = {"closed.c8": (15, 19), "closed.c32": (18, 19)}
QWEN_CLOSED_AT_ITS_STEP = (
    "Qwen2.5-7B's closed loops at C = 8 and 32 (as at 64) run at the same session's isolated decode step at batch C, "
    "which the prediction with the per-sequence excess puts ~1.2% short: that prediction starts at the b=1 step and "
    "adds the b = 1..64 line's slope, but the isolated steps lie on an S-shaped curve around the line (median "
    "engine-clock steps: b=1 20-46 us below it in every recorded session; b=8..32 at or above it, by up to 85 us, and "
    "b=64 11-35 us below it in every session but the 2026-12-04 09:53 one, whose top end bent the other way: b=32 "
    "23 us below the line, b=64 4 us above), so the b=1 anchor's offset carries into every batch and the budget's "
    "line-misfit term, taken against the line, leaves it out. Band, "
    "set at test time: the same session's isolated step at batch C over the prediction, +- that step's repeat scatter "
    "and this check's budget. strict=False: in noisier sessions the offset is inside the budget (C=8: "
    f"{QWEN_INSIDE_BUDGET['closed.c8'][0]} of the {QWEN_INSIDE_BUDGET['closed.c8'][1]} recorded; C=32: "
    f"{QWEN_INSIDE_BUDGET['closed.c32'][0]} of {QWEN_INSIDE_BUDGET['closed.c32'][1]}, the first outside on 2026-12-03 "
    "21:25, when the budget's sequence-cost term was the narrowest yet); at C=64 (offset ~0.2%) it always is. Only the "
    "H200 is claimed: the H100's one session has C=8 at +0.90%, C=32 at -0.49%.")


def qwen_closed_at_its_step_marks(run: str) -> tuple[pytest.MarkDecorator, ...]:
    """The band is set at test time (test_latency_sequence_cost.at_its_isolated_step)."""
    if run not in QWEN_CLOSED_AT_ITS_STEP_RUNS:
        return ()
    return (pytest.mark.finding(QWEN_CLOSED_AT_ITS_STEP_ID, hardware=MEASURED_ON, strict=False,
                                quantity="itl_median_with_sequence_cost", reason=QWEN_CLOSED_AT_ITS_STEP,
                                band_from="other-runs"),)
