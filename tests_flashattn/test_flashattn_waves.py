"""Flash-decoding's partial last wave, on the detected card: written 2026-12-07, before any run of it.

The H100's own-grid test (test_flashattn_gpu.test_short_context_on_the_line_of_its_own_grid) found 8k and 64k 1.2-1.7%
faster at 8 splits than at the launch rule's 9. At 2 programs resident an SM (255 registers a thread), 8 splits make
512 programs, 1.94 waves of 264 slots; 9 make 576, 2.18 waves whose last holds 48 programs. theory.decode_waves
prices that tail: a last wave too small to saturate the stream runs each program at its own uncontended rate. This
test fits that rate on the launch rule's grid against a nearly whole one (flashattn_waves.plan: 8 and 9 on a 132-SM
card) and predicts grids it was not fitted on, at 64k: nearly whole last waves (12, 16) and a half-full one (10) cost
nothing beyond their partials; tails smaller than the fit's (13: 40 programs; 17: 32) cost 13-15 us. A grid that
misses says the tail model is wrong there; the lockstep-wave model (a tail costs a whole wave) was refuted by the
fit pair itself (33% predicted, 1.7% measured).
"""

from __future__ import annotations

from typing import Any

import flashattn_waves as fw
import pytest

from pytest_anatomy.kernels.flashattn import registry

pytestmark = pytest.mark.gpu
SPLIT = registry.DECODE_VARIANTS[0]


def _name(splits: int | None) -> str:
    from pytest_anatomy.measure.flashattn_runner import decode_name

    d = fw.shape()
    return decode_name(d.batch, d.heads, d.kv_heads, d.context, d.head_dim, SPLIT.id, splits)


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
