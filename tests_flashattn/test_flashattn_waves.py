"""Flash-decoding's partial last wave, on the detected card: written 2026-12-07, before any run of it.

The H100's own-grid test (test_flashattn_gpu.test_short_context_on_the_line_of_its_own_grid) found 8k and 64k 1.2-1.7%
faster at 8 splits than at the launch rule's 9. At the 2 programs an SM that decode_split's sm_90 compile record gives
(255 registers a thread), 8 splits make 512 programs, 1.94 waves of 264 slots, and 9 make 576, 2.18 waves whose last
holds 48 programs. theory.decode_waves prices such a tail: a last wave too small to saturate the stream runs each
program at its own uncontended rate. The test fits that rate on the launch rule's grid against a nearly whole one
(flashattn_waves.plan) and predicts, at 64k, grids it was not fitted on: nearly whole last waves and a half-full one
cost nothing beyond their partials, and tails smaller than the fit's cost 13-15 us.
Its first run (the H100, 2026-12-07 12:56) read the launched kernel's resources, which the compile record does not
hold: 72 registers and 38,912 B shared, 5 programs an SM, 660 slots. The launch rule's 9 splits fill one wave 87%, so
every role skipped: on that card no partial last wave separates 8 splits from 9. The premise is refuted; the test
stands for cards where the launch rule's grid does leave a small last wave.
"""

from __future__ import annotations

from typing import Any

import flashattn_waves as fw
import pytest
from flashattn_decode_line import decode_name
from flashattn_waves_findings import per_sm_marks

from pytest_anatomy.kernels.flashattn import registry

pytestmark = pytest.mark.gpu
SPLIT = registry.DECODE_VARIANTS[0]


def _name(splits: int | None) -> str:
    return decode_name(fw.WAVES_CONTEXT, SPLIT.id, splits)


def _live(splits: int | None) -> Any:
    from pytest_anatomy.measure.flashattn_runner import live_decode

    d = fw.shape()
    return lambda: live_decode(batch=d.batch, heads=d.heads, kv_heads=d.kv_heads, context=d.context,
                               head_dim=d.head_dim, variant=SPLIT.id, splits=splits)


@pytest.mark.slow  # five forced 64k calls beyond the quick session's
@pytest.mark.parametrize("role", [pytest.param(r, id=f"fd-waves-{r}") for r in fw.ROLES])
def test_partial_last_wave_costs_what_its_tail_predicts(role: str, target: Any, measured_once: Any,
                                                        reconcile: Any) -> None:
    natural = measured_once(_name(None), _live(None))
    slots = int(target.require_spec().require("sm_count")) * fw.resident_programs(natural)
    p = fw.plan(fw.shape(), int(natural.provenance["config"]["splits"]), slots)
    if role not in p.roles:
        pytest.skip(f"no split count up to 4x the launch rule's fills the {role} role on {slots} slots")
    g = p.roles[role]
    ref = measured_once(_name(p.reference.splits), _live(p.reference.splits), beside=natural)
    rec = measured_once(_name(g.splits), _live(g.splits), beside=natural)
    w = fw.predicted(p, g, ref, natural, rec)
    reconcile("time_of_its_wave_grid", w.prediction, rec["time"], model=None, budget=w.budget,
              why="timing noise (each call's two blocks, or the recorded sessions' RMS where larger) of this call, the "
                  "reference and the fit carried through the fitted rate, plus the tail model's own 30% error on "
                  "the excess it predicts (flashattn_waves.MODEL_ERROR)")


@pytest.mark.slow
@pytest.mark.parametrize("step", [pytest.param(1, id="fd-per-sm-next", marks=per_sm_marks(1))])
def test_one_wave_grid_costs_its_busiest_sm(step: int, target: Any, measured_once: Any, reconcile: Any) -> None:
    """Written 2026-12-07 13:30, before any run (docs/RECORDING.md, "For a later session: the per-SM candidate"): where
    the launch rule's grid and its neighbours each fit one wave, a per-SM cap R_sm fitted on the launch rule's count
    against one split fewer (the H100: 9 against 8) predicts one split more (10): on the H100 at the 12:56 session's
    times, 10 splits as fast as 8 (652 us capped, under 8's 707.5 streamed); the flat reading puts it at 9's or
    above."""
    natural = measured_once(_name(None), _live(None))
    sm_count = int(target.require_spec().require("sm_count"))
    ref_g, fit_g, g = fw.per_sm_grids(natural, sm_count, step)
    ref = measured_once(_name(ref_g.splits), _live(ref_g.splits), beside=natural)
    rec = measured_once(_name(g.splits), _live(g.splits), beside=natural)
    w = fw.per_sm_predicted(ref_g, fit_g, g, sm_count, ref, natural, rec)
    reconcile("time_of_its_one_wave_grid", w.prediction, rec["time"], model=None, budget=w.budget,
              why="timing noise of this call, the reference and the fit, each carried through the fitted cap")
