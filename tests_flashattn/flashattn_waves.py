"""The partial-last-wave test's plan and prediction (test_flashattn_waves; the model: theory.decode_waves).

At one context (64k, the held-out line's upper fit point) the live session times flash-decoding at several forced
split counts, chosen on the detected card from its SMs and the programs resident on each (the split kernel's
registers and shared memory as compiled for it, theory.kernel_occupancy):
- reference: the largest count below the launch rule's whose last wave is nearly whole (fill >= WHOLE_FILL);
- fit: the launch rule's own count, where its last wave is small (fill < FIT_FILL). Its time over the reference's
  is the measured excess that fixes the program rate r (FITTED, theory.decode_waves.program_rate);
- the predicted roles, counts above the launch rule's: two whose last waves are nearly whole (the model: no excess),
  one half full (no excess once the tail holds stream / r programs), and two whose tails are smaller than the fit's
  (an excess of 10-20 us at 64k on a 132-SM card).
Written for 2 programs an SM (264 slots on 132 SMs: reference 8, fit 9, whole 12 and 16, half 10, small tails 13 and
17), the count decode_split's sm_90 compile record gives. Its first run (the H100, 2026-12-07 12:56) recorded the
launched kernel's resources for the first time: 72 registers a thread and 38,912 B shared, 5 programs an SM (shared
memory the limit), 660 slots. The launch rule's 9 splits then fill one wave 87%, no count below it fills one, and the
test skips: there is no partial last wave at 8 or 9 splits, so the tail model cannot be what makes 9 slower than 8.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from flashattn_decode_line import SHAPE, timing_noise_s

from pytest_anatomy import recordings
from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.theory import attention as at
from pytest_anatomy.theory import decode_waves as dw
from pytest_anatomy.theory.kernel_occupancy import SM_LIMITS, occupancy
from pytest_anatomy.theory.prediction import Prediction, Term

WAVES_CONTEXT = 65536
WHOLE_FILL = 0.85  # a last wave at least this full counts as whole: its tail saturates the stream by any fitted r
FIT_FILL = 0.5  # the fit's last wave must be under half full, or its excess is too small to fit a rate from
HALF_FILL = (0.3, 0.6)
ROLES = ("whole-1", "whole-2", "half", "small-tail-1", "small-tail-2")
# The tail model's own error, stated before the first run of this test: on the H100's two recorded sessions with 8k at
# 8 and 9 splits (2026-12-07 09:13 and 09:49), the rate fitted at 64k predicts 8k's excess at 0.80 and 0.82 us where
# 1.08 and 1.16 us were measured, 26-29% low (docs/RECORDING.md, "The partial last wave"). That miss, rounded up to
# 30%, is carried as a named term on every predicted excess; where the model predicts none it adds nothing.
MODEL_ERROR = 0.30


def shape() -> at.DecodeShape:
    return at.DecodeShape(context=WAVES_CONTEXT, **SHAPE)


def launched_residency(rec: recordings.Recording) -> int | None:
    """Split-K programs one SM holds at once, from the kernel as launched in `rec`'s session (its config's registers
    and shared bytes, through theory.kernel_occupancy); None where the recording predates them or its architecture has
    no limits there. Never from an aot compile record's plain row, compiled without Triton's launch-time divisibility
    marks (decode_split: 255 registers and 22,528 B there, 72 and 38,912 B launched; the row's `aligned` facts hold
    the launched ones, docs/FLASHATTN.md)."""
    cfg = rec.provenance.get("config", {})
    cc = rec.provenance.get("gpu", {}).get("compute_capability")
    arch = f"sm_{cc[0]}{cc[1]}" if cc else None
    if arch not in SM_LIMITS or cfg.get("registers") is None:
        return None
    return int(occupancy(int(cfg["registers"]), int(cfg["shared_bytes"]), 32 * int(cfg.get("num_warps", 4)),
                         arch).value)


def resident_programs(rec: recordings.Recording) -> int:
    """launched_residency, or a skip naming why it is unknown."""
    resident = launched_residency(rec)
    if resident is None:
        pytest.skip(f"{rec.name}: no recorded registers of the split kernel, or no occupancy limits for its "
                    "architecture (theory.kernel_occupancy.SM_LIMITS): the programs resident per SM are unknown")
    return resident


@dataclass(frozen=True)
class WavePlan:
    reference: dw.DecodeGrid
    fit: dw.DecodeGrid
    roles: dict[str, dw.DecodeGrid]


def plan(d: at.DecodeShape, natural_splits: int, slots: int, block_n: int = registry.DECODE_BLOCK_N) -> WavePlan:
    """The split counts this card's waves test times (the module's docstring); skips where the launch rule's grid
    has no small last wave to fit a rate from, or no reference below it is nearly whole."""
    grids = {s: dw.grid(d, s, block_n, slots) for s in range(1, 4 * natural_splits + 1)}
    grids = {s: g for s, g in grids.items() if g.splits == s}  # counts the kernel launches as asked
    fit = grids[natural_splits]
    below = [g for s, g in grids.items() if s < natural_splits and g.tail_fill >= WHOLE_FILL]
    if fit.tail_fill >= FIT_FILL or not below:
        pytest.skip(f"the launch rule's {natural_splits} splits fill {fit.tail_fill:.0%} of their last wave of "
                    f"{slots} slots{'' if below else ', and no smaller count fills one'}: no excess to fit a rate from")
    above = [g for s, g in grids.items() if s > natural_splits]
    picks = {"whole": [g for g in above if g.tail_fill >= WHOLE_FILL][:2],
             "half": [g for g in above if HALF_FILL[0] <= g.tail_fill <= HALF_FILL[1]][:1],
             "small-tail": [g for g in above if g.tail_fill <= fit.tail_fill][:2]}
    roles = {f"{kind}-{i + 1}" if kind != "half" else kind: g for kind, gs in picks.items() for i, g in enumerate(gs)}
    return WavePlan(max(below, key=lambda g: g.splits), fit, roles)


def _stream(ref_g: dw.DecodeGrid, ref: recordings.Recording) -> float:
    """The reference call's whole rate, K/V bytes / time (its fixed part left in: ~1.5% of 64k's time)."""
    return at.decode_kv_bytes(ref_g.shape).value / ref["time"].value


def _partials_s(g: dw.DecodeGrid, ref_g: dw.DecodeGrid, stream: float) -> float:
    """What `g`'s split-K partials cost beyond the reference's, at the stream rate."""
    return (g.partial_bytes() - ref_g.partial_bytes()) / stream


@dataclass(frozen=True)
class WavePrediction:
    prediction: Prediction
    budget: dict[str, float]


def predicted(p: WavePlan, g: dw.DecodeGrid, ref: recordings.Recording, fit: recordings.Recording,
              rec: recordings.Recording) -> WavePrediction:
    """`g`'s time: the reference's, plus the partials' difference, plus the tail excess at the rate fitted from the
    fit's excess over the reference (all three calls of one session). The stream rate is the reference call's whole
    rate, K/V bytes / time: its fixed part (~1.5% of 64k's time) moves a predicted excess by ~1%, under 0.2 us."""
    t_ref, t_fit = ref["time"].value, fit["time"].value
    stream = _stream(p.reference, ref)

    def partials_s(x: dw.DecodeGrid) -> float:
        return _partials_s(x, p.reference, stream)
    measured_excess = t_fit - t_ref - partials_s(p.fit)
    rate = dw.program_rate(p.fit, measured_excess, stream)
    if dw.excess_s(p.reference, stream, rate) > 0:
        pytest.skip(f"the reference's tail of {p.reference.tail} programs does not saturate at the fitted rate "
                    f"({rate / 1e9:.3g} GB/s a program): the pair fits no rate")
    excess = dw.excess_s(g, stream, rate)
    t = t_ref + partials_s(g) + excess
    k = g.tail_chunk_bytes() / p.fit.tail_chunk_bytes() if excess > 0 else 0.0  # d(excess) / d(measured excess)
    pred = Prediction(
        t, "s", "t(reference) + partials(splits) - partials(reference) + tail excess at the fitted program rate",
        {"splits": g.splits, "programs": g.programs, "slots": g.slots, "waves": g.waves, "tail": g.tail,
         "reference_splits": p.reference.splits, "fit_splits": p.fit.splits, "stream_bytes_per_s": stream,
         "program_bytes_per_s": rate, "saturating_tail": dw.saturating_tail(stream, rate),
         "fitted_on": [ref.name, fit.name]},
        (Term("reference", t_ref, "s", f"{p.reference.splits} splits, {p.reference.waves:.2f} waves"),
         Term("partials", partials_s(g), "s"), Term("tail_excess", excess, "s", f"{g.tail} programs in the last wave")),
        notes=(f"FITTED: a program's uncontended rate {rate / 1e9:.3g} GB/s, from {p.fit.splits} splits' "
               f"{measured_excess * 1e6:.2f} us over {p.reference.splits}'s in this session; {g.splits} is held out",))
    budget = {"own_timing": timing_noise_s(rec) / t, "reference_timing": abs(1 - k) * timing_noise_s(ref) / t,
              "fit_timing": k * timing_noise_s(fit) / t, "tail_model": MODEL_ERROR * excess / t}
    return WavePrediction(pred, budget)


# --- one wave: a per-SM cap (written 2026-12-07 13:30, before any run of it) ------------------------------------------
def heaviest_sm(g: dw.DecodeGrid, sm_count: int) -> int:
    """Programs on the busiest SM when the whole grid is resident at once and spread evenly over the SMs."""
    return at.cdiv(g.programs, sm_count)


def per_sm_grids(natural: recordings.Recording, sm_count: int,
                 step: int) -> tuple[dw.DecodeGrid, dw.DecodeGrid, dw.DecodeGrid]:
    """(reference, fit, held out) of the per-SM test at 64k: one split fewer than the launch rule's count in
    `natural`'s session, that count, and `step` more; skips where the residency is unknown or the counts do not launch
    as asked."""
    slots = sm_count * resident_programs(natural)
    n = int(natural.provenance["config"]["splits"])
    grids = tuple(dw.grid(shape(), s, registry.DECODE_BLOCK_N, slots) for s in (n - 1, n, n + step))
    if len({x.splits for x in grids}) < 3:
        pytest.skip("the neighbouring counts do not launch as asked at this context")
    return grids[0], grids[1], grids[2]


def per_sm_predicted(ref_g: dw.DecodeGrid, fit_g: dw.DecodeGrid, g: dw.DecodeGrid, sm_count: int,
                     ref: recordings.Recording, fit: recordings.Recording,
                     rec: recordings.Recording) -> WavePrediction:
    """`g`'s time where every grid fits one wave: the slower of the reference's stream (its time, plus the partials'
    difference) and the busiest SM's bytes at a per-SM cap R_sm, FITTED as the fit grid's busiest-SM bytes over its
    time (the fit must be slower than the reference, and the reference's own busiest SM under the cap)."""
    if max(x.programs for x in (ref_g, fit_g, g)) > g.slots:
        pytest.skip(f"a grid of more than one wave ({g.slots} slots): the per-SM cap model prices one wave only")
    t_ref, t_fit = ref["time"].value, fit["time"].value
    stream = _stream(ref_g, ref)

    def busiest_bytes(x: dw.DecodeGrid) -> float:
        return heaviest_sm(x, sm_count) * x.chunk * x.token_bytes()
    if t_fit <= t_ref or busiest_bytes(ref_g) / (busiest_bytes(fit_g) / t_fit) > t_ref:
        pytest.skip("the fit grid is not slower than the reference, or the fitted cap binds the reference too")
    cap = busiest_bytes(fit_g) / t_fit
    streamed = t_ref + _partials_s(g, ref_g, stream)
    capped = busiest_bytes(g) / cap
    t = max(streamed, capped)
    k = busiest_bytes(g) / busiest_bytes(fit_g) if capped > streamed else 0.0  # d(t) / d(t_fit)
    pred = Prediction(
        t, "s", "max(t(reference) + partials difference, busiest SM's programs x chunk bytes / R_sm)",
        {"splits": g.splits, "programs": g.programs, "busiest_sm_programs": heaviest_sm(g, sm_count),
         "reference_splits": ref_g.splits, "fit_splits": fit_g.splits, "sm_bytes_per_s": cap,
         "fitted_on": [ref.name, fit.name]},
        (Term("streamed", streamed, "s"), Term("capped", capped, "s")),
        notes=(f"FITTED: a per-SM cap of {cap / 1e9:.3g} GB/s from {fit_g.splits} splits' busiest SM "
               f"({heaviest_sm(fit_g, sm_count)} programs) in this session; {g.splits} is held out",))
    budget = {"own_timing": timing_noise_s(rec) / t, "reference_timing": (1 - k) * timing_noise_s(ref) / t,
              "fit_timing": k * timing_noise_s(fit) / t}
    return WavePrediction(pred, budget)
