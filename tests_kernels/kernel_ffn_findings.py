"""Issue 17's fp32 target at the Qwen2.5-7B FFN shapes (>= 80% of cuBLAS fp32, sgemm.AUTOTUNE_TARGETS), judged on the
best hand-written fp32 rung by test_kernels_ladders.test_best_fp32_rung_vs_cublas_at_ffn_shapes (the rungs and the rule
of test_best_fp32_rung_vs_cublas at 4096^3), and its finding at 32 rows, as data.

On the H200 the 2,048-row shape meets the target (s9); at 32 rows every rung missed it until s18's first run there
(2026-12-05 03:53, batch 20261205T035327Z) met it, which retired the finding: FINDING_SHAPES is empty and the reason
below is the finding as it stood, with its retirement. The finding's band is set at test time from runs other than
the judged one (other_runs): the judged recording's session dropped, the
rung the remaining sessions make best by the test's own rule, that rung's ratio in each of them; their envelope is
widened by kernel_findings' measured noise (the timing blocks and rung 0's session drift: the ratio divides by cuBLAS
timed beside the rung). Every number the reason quotes is read from the recordings at import (test_kernel_ffn_findings
recomputes them). No other card has recordings at these shapes (the H100's visit timed the SGEMM ladder at 4096^3 only):
the finding is the H200's, and a live session on another card is judged on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import kernel_findings_shared as kfs
import kernel_noise_findings as kn
import pytest

from pytest_anatomy import recordings
from pytest_anatomy.kernels import sgemm, small_m
from pytest_anatomy.kernels.ladders import LADDERS
from pytest_anatomy.kernels.registry import DeviceFacts, Launch, shape_label
from pytest_anatomy.specs.hardware import get_hardware

MEASURED_ON = kfs.MEASURED_ON
RESULTS_ROOT = Path(__file__).resolve().parents[1] / "results"
SHAPES = {shape_label(s): s for s in sgemm.EXTRA_SHAPES}
BIG, SMALL = SHAPES
SQUARE = shape_label(sgemm.TIMING_SHAPE)
FID = "h200-fp32-32-rows-below-cublas-target"
# The shapes whose miss is this finding. s18 met the target at 32 rows in its first run there (03:53 on 2026-12-05,
# judged against the rung it displaced: resolved, test_kernel_ffn_findings), so SMALL was removed, as planned.
FINDING_SHAPES: tuple[str, ...] = ()
# The hand-written fp32 rungs (ladder_cases.recorded_sgemm_fp32 takes those the target measured).
FP32_RUNGS = tuple(v.id for v in LADDERS["sgemm"][1:] if not v.theory.tensor_core)
_BY_ID = {v.id: v for v in LADDERS["sgemm"]}

Runs = Mapping[str, Sequence[recordings.Recording]]  # rung -> its recordings at one shape, oldest first


def goal(label: str) -> float:
    return sgemm.AUTOTUNE_TARGETS[label]


def target_ratio(rec: recordings.Recording, label: str) -> float:
    """The test's measured / predicted: the rung's time over (cuBLAS fp32 timed beside it / the goal)."""
    m = rec.measurements
    return float(m["time"]["value"]) / (float(m["baseline_time"]["value"]) / goal(label))


def session_of(rec: recordings.Recording) -> str:
    """A run's session: its batch start or live session's ceilings (recordings.session_key), else its own stamp."""
    return recordings.session_key(rec) or rec.recorded_at


def best_rung(runs: Runs) -> str | None:
    """The test's rule: each rung's newest recording, the fastest of them; None where nothing is recorded."""
    newest = {r: rs[-1] for r, rs in runs.items() if rs}
    return min(newest, key=lambda r: float(newest[r].measurements["time"]["value"]), default=None)


def other_runs(runs: Runs, judged: recordings.Recording) -> list[recordings.Recording]:
    """The recordings the band reads: every session but the judged one's, and in them the rung those sessions make
    best (best_rung). A rung's first recording (s18's first run) is judged against the rung it displaced, so a faster
    rung that still misses leaves the band instead of inheriting this finding."""
    rest = {r: [x for x in rs if session_of(x) != session_of(judged)] for r, rs in runs.items()}
    rung = best_rung(rest)
    return [] if rung is None else list(rest[rung])


def band(runs: Runs, judged: recordings.Recording, label: str) -> tuple[float, float] | None:
    """The finding's band for the judged recording: other_runs' ratios' envelope +- kernel_findings_shared.spread()."""
    return kn.band([target_ratio(r, label) for r in other_runs(runs, judged)], kfs.spread())


def load(folders: Iterable[Path], hardware: str, label: str, rungs: Iterable[str] = FP32_RUNGS) -> dict[
        str, list[recordings.Recording]]:
    folders = tuple(folders)
    return {r: recordings.load_runs(folders, hardware, "kernels", f"sgemm.{r}.{label}") for r in rungs}


def marks(label: str) -> tuple[pytest.MarkDecorator, ...]:
    if label not in FINDING_SHAPES:
        return ()
    return (pytest.mark.finding(FID, reason=REASON, hardware=MEASURED_ON, band_from="other-runs"),)


# --- the reason, from the H200's recordings (the newest of each rung: what the replay judges) ----------------------
def _sm_count() -> int:
    sms = get_hardware(MEASURED_ON).sm_count
    assert sms, f"the catalog has no SM count for {MEASURED_ON}"
    return sms


def newest(rung: str, label: str = SMALL) -> recordings.Recording | None:
    """The rung's newest H200 recording at `label` (None where this checkout has none)."""
    rs = load((RESULTS_ROOT,), MEASURED_ON, label, (rung,))[rung]
    return rs[-1] if rs else None


def ms(rec: recordings.Recording | None, key: str = "time") -> float:
    return float(rec.measurements[key]["value"]) * 1e3 if rec is not None else float("nan")


def pct_of_cublas(rec: recordings.Recording | None) -> float:
    return ms(rec, "baseline_time") / ms(rec)


def launch(rung: str, label: str = SMALL) -> Launch:
    return _BY_ID[rung].calls(SHAPES[label], DeviceFacts(_sm_count()))[0].launch


def blocks(rung: str, label: str = SMALL) -> int:
    g = launch(rung, label).grid
    return g[0] * g[1] * g[2]


def useful_share(rung: str, label: str = SMALL) -> float:
    """M x N over the outputs the grid computes: a block tile of sgemm.BLOCK_TILES each, or one output per thread."""
    bm, bn, _ = sgemm.BLOCK_TILES.get(rung, (0, 0, 0))
    per_block = bm * bn if bm else launch(rung, label).threads_per_block
    return SHAPES[label]["M"] * SHAPES[label]["N"] / (blocks(rung, label) * per_block)


_H200 = load((RESULTS_ROOT,), MEASURED_ON, SMALL)
BEST = best_rung(_H200)  # what the replay judges: s18 since its first run
JUDGED = _H200[BEST][-1] if BEST else None
# The rung that run displaced: the best of every other session (other_runs), whose miss the finding explained.
_DISPLACED = other_runs(_H200, JUDGED) if JUDGED is not None else []
DISPLACED = _DISPLACED[-1].name.split(".")[1] if _DISPLACED else None
_B = _DISPLACED[-1] if _DISPLACED else None
S9, S18 = "s9-cp-async-pipeline", "s18-fp32-small-m-splitk"
# the recorded rungs whose block tile has more rows than the shape
TALL_TILES = tuple(r for r in FP32_RUNGS if sgemm.BLOCK_TILES.get(r, (0,))[0] > SHAPES[SMALL]["M"] and _H200.get(r))
B_BYTES = 4 * SHAPES[SMALL]["K"] * SHAPES[SMALL]["N"]  # B in fp32, read once


def _run(rec: recordings.Recording | None) -> str:
    return rec.recorded_at[:16] if rec is not None else "?"


def _tall_tiles() -> str:
    """s9's tile and grid at 32 rows, and every rung whose tile is as tall."""
    m, k = SHAPES[SMALL]["M"], SHAPES[SMALL]["K"]
    bm, _, bk = sgemm.BLOCK_TILES[S9]
    doubled, s9 = blocks(S9) - _sm_count(), newest(S9)
    return (
        "The register-tiled rungs ("
        + ", ".join(f"{r.split('-')[0]} {pct_of_cublas(newest(r)):.1%}" for r in TALL_TILES)
        + f" of cuBLAS beside them, newest runs) spend a {bm}-row block tile on {m} rows: "
        f"{1 - useful_share(S9):.0%} of s9's FFMAs compute padding, and its {blocks(S9)} blocks on {_sm_count()} SMs "
        f"leave {_sm_count() - doubled} SMs one block of {launch(S9).threads_per_block // 32} warps and {doubled} two, "
        f"each block walking all {k:,} of K ({k // bk} k-tiles of {bk}, no split): s9 {ms(s9):.4f} ms ({_run(s9)} "
        f"run), {pct_of_cublas(s9):.1%}. The autotuners' spaces held no tile under 64 rows and no split-K kernel "
        "(h200-autotuned-fp32-below-cublas-target: the miss was built into the search space).")


def _band_note() -> str:
    assert JUDGED is not None
    others = other_runs(_H200, JUDGED)
    if not others:
        return "no other session, no band"
    ratios = [target_ratio(r, SMALL) for r in others]
    lo, hi = band(_H200, JUDGED, SMALL) or (float("nan"), float("nan"))
    return (f"{others[0].name.split('.')[1]} in {len(others)} other sessions "
            f"({', '.join(r.recorded_at[:16] for r in others)}), {min(ratios):.3f}-{max(ratios):.3f}x, so "
            f"{lo:.3f}-{hi:.3f}x")


def _retired() -> str:
    """The run that met the target, judged as the replay judges it."""
    assert JUDGED is not None and BEST is not None
    cublas, t = ms(JUDGED, "baseline_time"), ms(JUDGED)
    return (f"Retired on the H200 by {BEST}'s first run at this shape: {t:.4f} ms ({_run(JUDGED)} run), "
            f"{cublas / t:.1%} of cuBLAS fp32 timed beside it ({cublas:.4f} ms; target {cublas / goal(SMALL):.4f} ms), "
            f"{t / (cublas / goal(SMALL)):.2f}x the target time: judged against the band of the rung it displaced, "
            "resolved. The run was power-capped (sw_power_cap; cuBLAS and s9 beside it slowed by their clocks, "
            "h200-fp32-sgemm-slower-than-its-headers); both timing blocks meet the target.")


def _reason() -> str:
    if BEST is None or _B is None or DISPLACED is None:
        return f"[no fp32 rung recordings at {SMALL} on {MEASURED_ON} in this checkout]"
    cublas, t, lab, shape = ms(_B, "baseline_time"), ms(_B), SMALL, SHAPES[SMALL]
    s9_sq, best_sq = newest(S9, SQUARE), newest(DISPLACED, SQUARE)
    read = kfs.ceiling_at("read", _B.recorded_at)
    s18_ms = _BY_ID[S18].preregistered_ms(shape) or float("nan")
    return (
        f"At {lab} issue 17's target is {goal(lab):.0%} of cuBLAS fp32. The best hand-written fp32 rung was "
        f"{DISPLACED} at "
        f"{t:.4f} ms ({_run(_B)} run), {cublas / t:.1%} of cuBLAS fp32 timed beside it ({cublas:.4f} ms; target "
        f"{cublas / goal(lab):.4f} ms): {t / (cublas / goal(lab)):.2f}x the target time. Its grid is "
        f"{blocks(DISPLACED):,} blocks of {launch(DISPLACED).threads_per_block:,} threads, one output each: no FFMA "
        f"on padding ({useful_share(DISPLACED):.0%} of the outputs it computes are C's), but two shared loads per "
        "FFMA; at 4096^3 it "
        f"ran {ms(best_sq):.2f} ms, {ms(best_sq) / ms(s9_sq):.1f}x s9's {ms(s9_sq):.4f} ms. " + _tall_tiles()
        + f" cuBLAS's {cublas:.4f} ms is {cublas * 1e-3 * read / B_BYTES:.2f}x the time B alone "
        f"({B_BYTES / 1e6:.1f} MB of fp32) takes to stream once at that run's {read / 1e12:.2f} TB/s read ceiling; "
        "which kernel it runs at this shape (split-K or a small-M kernel, as that finding has it) is not counted "
        f"(kernels_profile.sh profiles 4096^3 only). s18 ({small_m.S18_TILE[0]}-row tiles, K split "
        f"{small_m.splits(shape, DeviceFacts(_sm_count()))} ways in one wave) is the rung pre-registered to close it, "
        f"at {s18_ms} ms ({cublas / s18_ms:.0%} of this cuBLAS time). A faster rung that still misses leaves the band "
        "and diverges: its own cause is a new finding. Band, from other runs (set at test time): the rung the other "
        "sessions make best, its ratio in each of those sessions, widened by "
        f"+-{kfs.spread():.1%} measured noise (kernel_findings_shared.spread_terms: timing blocks and rung 0's session "
        f"drift); never the judged run. For the {_run(JUDGED)} run: {_band_note()}. " + _retired())


REASON = _reason()
