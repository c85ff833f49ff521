"""The FlashAttention ladder and flash-decoding on the target GPU, each time against its
pre-registered prediction, and the targets against torch's attention backends.

Live (`pytest -m gpu --anatomy-source=live --anatomy-record` on the GPU) or replayed from
results/<gpu>/flashattn/. The predictions use the ceilings measured in the same session
(bf16 GEMM 8192^3, 2 GiB read) and each rung's stated efficiency range (its header and
kernels/flashattn/registry.py); the tolerance is that range, converted to a time ratio.

The cases here (the first visit's; the best rung across N 512-32k, D 64/128 and GQA is
test_flashattn_sweep.py, marked slow, and the rungs' DRAM/L2 bytes test_flashattn_counters.py):
- every rung, B=4 H=32 N=4096 D=128 bf16, full and causal: 12 cases;
- the best rung at N=1024 and N=16384, full and causal: 4 cases;
- the best rung with GQA (8 KV heads) at the target shape, full and causal: 2 cases;
- flash-decoding, B=8 H=32 H_kv=8 D=128, contexts 8k and 64k: 2 cases (1k-128k in the full session, and 1k-4k on
  the line through 8k and 64k forced to their own split count: 2 more calls, added 2026-12-07);
- fd2, flash-decoding with the reduction fused (added 2026-12-04, before any run), at 8k and 64k beside the
  two-kernel variant, and at 16k-128k for the 85% target (slow): 5 cases (`-k fd2` selects its 7 tests).
GPU time estimate, about 90 s in all: Triton compiles about 35 kernels (27 for the rungs' configs
and masks, 8 more for r6 with GQA: a KV group of 1 is a compile-time specialisation), 0.5-1.3 s
each measured here for sm_90 (aot.py), ~25 s; autotuning benchmarks 44 (config, shape) pairs at
~0.15-0.3 s each, ~8 s; the ceilings ~3 s; per case the fp32 correctness reference (<0.3 s) and 4
timing blocks of 20 runs (rung, default sdpa, FLASH_ATTENTION, rung again: 0.1-0.8 s at N=4096;
the naive rung ~2 s at ~9 ms a run; N=16384 ~5 s at ~40 ms a run), 20 cases, ~25 s; torch/cuDNN
first-call set-up ~5-10 s; process and CUDA start ~10 s. Measured: 76 s (2026-12-01).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import flashattn_findings as ff
import flashattn_h100_findings as h100
import pytest
from flashattn_cases import Case, as_ceilings, decode_prediction, predict
from flashattn_decode_line import SHAPE, decode_line_marks, held_out, own_grid, timing_noise_s
from flashattn_line_findings import grid_marks, line_marks
from flashattn_decode_line import FIT_CONTEXTS as FIRST_DECODE_CONTEXTS
import flashattn_fd2 as fd2
from flashattn_findings import decode_target_marks
from flashattn_r8_findings import target_marks

from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.recordings import MissingRecording
from pytest_anatomy.session import get_session
from pytest_anatomy.theory import attention as at
from pytest_anatomy.theory.prediction import Prediction, Term

pytestmark = pytest.mark.gpu

TARGET = {"batch": 4, "heads": 32, "n": 4096, "head_dim": 128}
BEST = registry.BEST
FLASH_SPEEDUP = 1.5  # the best rung at least 1.5x the speed of sdpa's FLASH_ATTENTION backend
DEFAULT_FRACTION = 0.85  # and at least 0.85x the speed of the default backend (cuDNN on torch 2.11)
DECODE_FRACTION = 0.85  # flash-decoding at >= 85% of the measured read bandwidth for contexts >= 8k


CASES = (
    [Case(r.id, causal=c, **TARGET) for r in registry.LADDER for c in (False, True)]
    + [Case(BEST, causal=c, **{**TARGET, "n": n}) for n in (1024, 16384) for c in (False, True)]
    + [Case(BEST, causal=c, kv_heads=8, **TARGET) for c in (False, True)]
    # fp16 at the target shape (added 2026-12-03, before any was timed): predicted as bf16 is, since fp16 has the same
    # 2 bytes and, on Hopper, the same dense tensor-core peak; the session's ceiling is a bf16 GEMM's. r7's and r8's
    # (the Gluon rungs, each added before its first GPU run) check their fp16 path against the reference, as bf16's do
    + [Case(rid, causal=c, dtype="fp16", **TARGET) for rid in registry.TARGET_RUNGS for c in (False, True)]
)
# Issue 22's flash-decoding contexts, 1k to 128k. 8k and 64k were measured first; the others were added 2026-12-03,
# predicted by the same time model (registry.DECODE_BANDWIDTH, DECODE_LAUNCH_S) before any was measured, and run in
# the full session only (slow). The 85% read-bandwidth target holds from 8k up (DECODE_FRACTION).
# FIRST_DECODE_CONTEXTS (8k, 64k) run in every session, fast subset too: the held-out line is drawn through them.
DECODE_CONTEXTS, DECODE_TARGET_FROM = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072), 8192
DECODES = [at.DecodeShape(context=ctx, **SHAPE) for ctx in DECODE_CONTEXTS]
SPLIT, FUSED = registry.DECODE_VARIANTS  # the two-kernel flash-decoding (fd.*) and the fused reduction (fd2.*)


def _fast_or_slow(case: Case) -> Any:
    """The fast subset (`-m "gpu and not slow"`, <= 5 min in all) keeps the target rungs (r6, and r7 the targets
    compare with it) at the target shape in bf16, and r6 with GQA there; the lower rungs, the other lengths and fp16,
    which compile and time most of this module's ~76 s, run in the full session."""
    at_target = (case.rung in registry.TARGET_RUNGS and case.n == TARGET["n"] and case.dtype == "bf16"
                 and (case.rung == BEST or case.kv_heads is None))
    return pytest.param(case, id=case.name, marks=(*h100.marks(case), *(() if at_target else (pytest.mark.slow,))))


@pytest.mark.parametrize("case", [_fast_or_slow(c) for c in CASES])
def test_rung_time_against_its_prediction(case: Case, target: Any, measured_once: Any, ceilings_for: Any,
                                          reconcile: Any, anatomy_benchmark: Any) -> None:
    rec = measured_once(case.name, case.live)
    anatomy_benchmark(rec, "time")  # the rung's CUDA-event samples, also as this test's pytest-benchmark
    pred, band, why = predict(case, as_ceilings(ceilings_for(rec)), target.require_spec())
    reconcile("time", pred, rec["time"], ratio=band, why=why, hardware=target.name)


def _target_prediction(value: float, formula: str, baseline: Any, name: str) -> Prediction:
    return Prediction(value, "s", formula, {"baseline": name},
                      (Term(name, baseline.value, "s", "measured in the same call, same inputs"),))


def best_at_target(causal: bool, measured_once: Any) -> Any:
    """The target shape's recording of the fastest of registry.TARGET_RUNGS measured in r6's session: r6 always; r7
    and r8 each where it has a recording of that session (replayed: none before its first GPU visit, so those sessions
    keep r6) and, live, where it ran and passed its check (a failure of a Gluon rung is its own test's, the targets go
    on with the others)."""
    first = Case(BEST, causal=causal, **TARGET)
    best = measured_once(first.name, first.live)
    for rung_id in registry.TARGET_RUNGS[1:]:
        other = Case(rung_id, causal=causal, **TARGET)
        try:
            rec = measured_once(other.name, other.live, beside=best)
        except (Exception, pytest.skip.Exception):  # not recorded in that session, or failed: see its own test
            continue
        if rec["time"].value < best["time"].value:
            best = rec
    return best


@pytest.fixture
def autotune_switch(request: Any, target: Any, measured_once: Any) -> None:
    """Requested before `reconcile` (which reads the marks): where this session's autotuner chose another tile than
    every earlier session of the case on this card, the finding whose band that tile's slowdown sets, measured on
    the case's GQA sibling in the same session (flashattn_h100_findings.autotune_switch_mark)."""
    causal = request.node.callspec.params["causal"]
    case = Case(BEST, causal=causal, **TARGET)
    sibling = Case(BEST, causal=causal, kv_heads=8, **TARGET)
    key = ("test_best_rung_at_least_1_5x_flash_attention_backend", "causal" if causal else "full")
    if key not in ff.TARGETS or best_at_target(causal, measured_once).provenance.get("rung", BEST) != BEST:
        return  # r6's tile choice judges r6's time only
    mark = h100.autotune_switch_mark(measured_once(case.name, case.live), measured_once(sibling.name, sibling.live),
                                     target.name, ff.target_band(ff.TARGETS[key]),
                                     get_session(request.config).settings.results_dir, "target_vs_flash")
    if mark is not None:
        request.node.add_marker(mark, append=False)


@pytest.mark.parametrize("causal", [pytest.param(c, id=i, marks=target_marks(
    "test_best_rung_at_least_1_5x_flash_attention_backend", i)) for c, i in ((False, "full"), (True, "causal"))])
@pytest.mark.usefixtures("autotune_switch")  # before reconcile, which reads the marks
def test_best_rung_at_least_1_5x_flash_attention_backend(causal: bool, target: Any, measured_once: Any,
                                                          reconcile: Any) -> None:
    rec = best_at_target(causal, measured_once)
    flash = rec["sdpa_flash_time"]
    pred = _target_prediction(flash.value / FLASH_SPEEDUP, "t_FLASH_ATTENTION / 1.5", flash, "sdpa_flash_time")
    reconcile("target_vs_flash", pred, rec["time"], ratio=(0.0, 1.0), hardware=target.name,
              why="one-sided target: the best rung's time at most 1/1.5 of FLASH_ATTENTION's on the same inputs")


@pytest.mark.parametrize("causal", [pytest.param(c, id=i, marks=target_marks(
    "test_best_rung_at_least_0_85x_default_sdpa", i)) for c, i in ((False, "full"), (True, "causal"))])
def test_best_rung_at_least_0_85x_default_sdpa(causal: bool, target: Any, measured_once: Any,
                                               reconcile: Any) -> None:
    rec = best_at_target(causal, measured_once)
    default = rec["sdpa_default_time"]
    pred = _target_prediction(default.value / DEFAULT_FRACTION, "t_sdpa_default / 0.85", default,
                              "sdpa_default_time")
    reconcile("target_vs_default", pred, rec["time"], ratio=(0.0, 1.0), hardware=target.name,
              why="one-sided target: the best rung at least 0.85x the default backend's speed on the same inputs")


def _decode_live(d: at.DecodeShape, variant: registry.DecodeVariant = SPLIT, splits: int | None = None) -> Any:
    from pytest_anatomy.measure.flashattn_runner import live_decode

    return lambda: live_decode(batch=d.batch, heads=d.heads, kv_heads=d.kv_heads, context=d.context,
                               head_dim=d.head_dim, variant=variant.id, splits=splits)


def _decode_name(d: at.DecodeShape, variant: registry.DecodeVariant = SPLIT, splits: int | None = None) -> str:
    from pytest_anatomy.measure.flashattn_runner import decode_name

    return decode_name(d.batch, d.heads, d.kv_heads, d.context, d.head_dim, variant.id, splits)


def _decode_slow(d: at.DecodeShape) -> tuple[Any, ...]:
    return () if d.context in FIRST_DECODE_CONTEXTS else (pytest.mark.slow,)


@pytest.mark.parametrize("d", [pytest.param(d, id=_decode_name(d), marks=(*target_marks(
    "test_flash_decoding_time_against_its_prediction", _decode_name(d)), *decode_line_marks(d.context),
    *_decode_slow(d))) for d in DECODES])
def test_flash_decoding_time_against_its_prediction(d: at.DecodeShape, target: Any, measured_once: Any,
                                                    ceilings_for: Any, reconcile: Any, anatomy_benchmark: Any) -> None:
    rec = measured_once(_decode_name(d), _decode_live(d))
    anatomy_benchmark(rec, "time")
    ceil = as_ceilings(ceilings_for(rec))
    e, sm_count = registry.DECODE_BANDWIDTH, target.require_spec().require("sm_count")

    def at_f(f: float) -> Prediction:
        return decode_prediction(d, ceil, sm_count, f)
    mid = at_f(e.mid)
    band = (at_f(e.hi).value / mid.value, at_f(e.lo).value / mid.value)
    reconcile("time", mid, rec["time"], ratio=band, hardware=target.name,
              why=f"the stated fraction of read bandwidth {e.lo}-{e.hi} (mid {e.mid}) carried through the "
                  f"time model: measured/predicted in [{band[0]:.3g}, {band[1]:.3g}]")


@pytest.mark.slow  # the contexts it predicts run in the full session only
@pytest.mark.parametrize("d", [pytest.param(d, id=_decode_name(d), marks=line_marks(d.context)) for d in DECODES
                               if d.context not in FIRST_DECODE_CONTEXTS])
def test_flash_decoding_on_the_line_through_8k_and_64k(d: at.DecodeShape, measured_once: Any, reconcile: Any) -> None:
    """Held out: the same session's 8k and 64k calls fix a line, t = fixed + KV bytes / stream rate (two constants
    FITTED on those two points), and every other context's time is predicted from it (flashattn_decode_line). The
    tolerance is the session's noise: each call's two timing blocks (time, time_repeat) lie apart by some amount, the
    fit points' carried to this context by the line's weights (extrapolating past 64k multiplies 64k's), plus this
    context's own; where the other recorded sessions of a call show a larger RMS block difference, that is its noise
    (flashattn_decode_line.timing_noise_s)."""
    rec = measured_once(_decode_name(d), _decode_live(d))
    _reconcile_on_the_line(d, rec, None, measured_once, reconcile)


def _reconcile_on_the_line(d: at.DecodeShape, rec: Any, grid: int | None, measured_once: Any, reconcile: Any) -> None:
    """`rec` held out against the line through the same session's 8k and 64k calls (forced to `grid` splits where
    given; flashattn_decode_line.held_out), within the timing noise that line carries to it."""
    fit = {c: replace(d, context=c) for c in FIRST_DECODE_CONTEXTS}
    points = {c: measured_once(_decode_name(s, splits=grid), _decode_live(s, splits=grid), beside=rec)
              for c, s in fit.items()}  # same session
    h = held_out(d, points, rec)
    at_grid = f" at {grid} splits" if grid else ""
    pred = Prediction(h.time, "s", f"fixed + KV / stream rate, through this session's 8k and 64k calls{at_grid}",
                      {"fixed_s": h.line.fixed_s, "stream_bytes_per_s": h.line.bytes_per_s, "kv_bytes": h.kv,
                       **({"splits": grid} if grid else {}), "fitted_on": [p.name for p in points.values()]},
                      (Term("fixed", h.line.fixed_s, "s"), Term("stream", h.kv / h.line.bytes_per_s, "s")),
                      notes=(f"FITTED: fixed {h.line.fixed_s * 1e6:.2f} us and stream "
                             f"{h.line.bytes_per_s / 1e12:.3f} TB/s from this session's 8k and 64k calls"
                             f"{f' forced to {grid} splits' if grid else ''}; this context is held out",))
    reconcile("time_on_its_grids_line" if grid else "time_on_the_line", pred, rec["time"], model=None,
              budget=h.budget,
              why="timing noise: each call's two timing blocks' difference, or the other recorded sessions' RMS of it "
                  "where larger (one pair is a one-sample estimate), the fit points' carried through the line's "
                  "weights")


@pytest.mark.slow  # the contexts it predicts run in the full session only
@pytest.mark.parametrize("d", [pytest.param(d, id=_decode_name(d), marks=grid_marks(d.context)) for d in DECODES
                               if d.context < FIRST_DECODE_CONTEXTS[0]])
def test_short_context_on_the_line_of_its_own_grid(d: at.DecodeShape, target: Any, measured_once: Any,
                                                   reconcile: Any) -> None:
    """The held-out line again, drawn through 8k and 64k launched with this context's split count. Added 2026-12-07,
    before any run, to test the candidate cause of h100-flash-decoding-short-contexts-below-the-line-on-a-smaller-grid
    (flashattn_line_findings): a short context lies below the line through the natural 8k and 64k calls because
    it launches fewer splits (a smaller grid: 1k-4k launch 8 on 132 SMs, 8k-128k 9), and the line's fixed part is the
    larger grid's. If the grid is the cause, this context lies on its own grid's line within the same noise budget
    as the held-out test's; a miss says the grid is not, or not all of, the cause. Skips where the context launches
    the fit points' grid (the held-out test is this test there) or 8k and 64k cannot launch its count. Its first run
    (the H100, 2026-12-07 09:13) refuted the grid: the finding is now SHORT_BELOW_ID, cause not established."""
    try:
        grid = own_grid(d, int(target.require_spec().require("sm_count")))
    except LookupError as exc:
        pytest.skip(str(exc))
    rec = measured_once(_decode_name(d), _decode_live(d))
    _reconcile_on_the_line(d, rec, grid, measured_once, reconcile)


@pytest.mark.parametrize("d, variant, beside", [pytest.param(d, FUSED, SPLIT, id=_decode_name(d, FUSED),
                                                              marks=fd2.merge_marks(d.context))
                                                for d in DECODES if d.context in FIRST_DECODE_CONTEXTS])
def test_fused_reduction_saves_its_stated_time(d: at.DecodeShape, variant: registry.DecodeVariant,
                                               beside: registry.DecodeVariant, target: Any, measured_once: Any,
                                               reconcile: Any, anatomy_benchmark: Any) -> None:
    """fd2 (one kernel, the reduction fused: decode_fused.py) against the two-kernel variant timed in the same session
    on the same inputs: that time less registry.DECODE_FUSED_SAVING, pre-registered before any run of fd2
    (flashattn_fd2.saving_prediction). Replayed, a session without fd2's recording skips."""
    rec = measured_once(_decode_name(d, variant), _decode_live(d, variant))
    anatomy_benchmark(rec, "time")
    split = measured_once(_decode_name(d, beside), _decode_live(d, beside), beside=rec)  # same session, same seed
    pred, band, why = fd2.saving_prediction(split["time"].value, timing_noise_s(split), timing_noise_s(rec))
    try:
        merge = fd2.merge_band(d.context, target.name, split["time"].value, timing_noise_s(split),
                               timing_noise_s(rec))
    except MissingRecording as exc:  # both times are recorded already: a checkout with results/ judges them on replay
        pytest.skip(f"the merge finding's band needs {exc.args[0]} (another card's first fd2 session): run from a "
                    "checkout with results/; this session's recordings are kept and replay judges them")
    reconcile("time_vs_two_kernels", pred, rec["time"], ratio=band, hardware=target.name, why=why, finding_band=merge)


# Issue 22's 85% target for both variants from 8k up (fd2 joined 2026-12-04, before any run of it: its 16k-128k slow).
TARGET_DECODES = [(d, v) for v in registry.DECODE_VARIANTS for d in DECODES if d.context >= DECODE_TARGET_FROM]


@pytest.mark.parametrize("d, variant", [pytest.param(d, v, id=_decode_name(d, v), marks=(
    *decode_target_marks(_decode_name(d, v)), *_decode_slow(d))) for d, v in TARGET_DECODES])
def test_flash_decoding_at_least_85pct_of_read_bandwidth(d: at.DecodeShape, variant: registry.DecodeVariant,
                                                         target: Any, measured_once: Any, ceilings_for: Any,
                                                         reconcile: Any) -> None:
    rec = measured_once(_decode_name(d, variant), _decode_live(d, variant))
    ceil = ceilings_for(rec)
    kv = at.decode_kv_bytes(d)
    pred = Prediction(kv.value / (DECODE_FRACTION * ceil.read_bandwidth), "s", "KV bytes / (0.85 * BW_read)",
                      {**kv.inputs, "bw_read": ceil.read_bandwidth, "ceilings": ceil.source},
                      (Term("kv_bytes", kv.value, "B"),))
    reconcile("target_bandwidth", pred, rec["time"], ratio=(0.0, 1.0), hardware=target.name,
              why="one-sided target: K/V streamed at >= 85% of the session's measured read bandwidth")
