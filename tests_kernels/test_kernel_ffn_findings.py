"""kernel_ffn_findings against the recordings: the 32-row finding, retired on the H200 by s18's first run there
(2026-12-05 03:53). Its reason quotes the rung s18 displaced and s18's run (recomputed here through
pytest_anatomy.recordings); the band s18's run is judged against reads only the other sessions (the displaced rung's),
so the recorded run resolves the finding, and moving its time moves the verdict (into the displaced rung's band: the
finding; between the target and that band, or past it: a divergence) and never the band."""

from __future__ import annotations

import dataclasses

import kernel_ffn_findings as ffn
import kernel_findings_shared as kfs
import pytest

from pytest_anatomy import recordings
from pytest_anatomy.kernels import sgemm
from pytest_anatomy.reconcile import Tolerance, Verdict, compare
from pytest_anatomy.specs.hardware import get_hardware

LAB = ffn.SMALL


def _runs() -> dict[str, list[recordings.Recording]]:
    runs = ffn.load((ffn.RESULTS_ROOT,), ffn.MEASURED_ON, LAB)
    if not any(runs.values()):
        pytest.skip(f"results/{ffn.MEASURED_ON}/kernels/sgemm.*.{LAB}@* are not in this checkout")
    return runs


def _judged(runs: dict[str, list[recordings.Recording]]) -> recordings.Recording:
    """What the replay judges: each fp32 rung's newest recording (recordings.load_latest), the fastest."""
    newest = [recordings.load_latest(ffn.RESULTS_ROOT, ffn.MEASURED_ON, "kernels", f"sgemm.{r}.{LAB}")
              for r, rs in runs.items() if rs]
    return min(newest, key=lambda r: r["time"].value)


def _with_time(rec: recordings.Recording, seconds: float, session: str | None = None) -> recordings.Recording:
    m = {**rec.measurements, "time": {**rec.measurements["time"], "value": seconds}}
    prov = {**rec.provenance, "date": session} if session else rec.provenance
    return dataclasses.replace(rec, measurements=m, provenance=prov,
                               recorded_at=session.replace("+00:00", "Z") if session else rec.recorded_at)


def _verdict(rec: recordings.Recording, band: tuple[float, float]) -> Verdict:
    """test_best_fp32_rung_vs_cublas_at_ffn_shapes's reconciliation of `rec` under the finding with `band`."""
    cublas = rec["baseline_time"].value
    return compare("best_fp32_time_vs_target", cublas / ffn.goal(LAB), rec["time"].value,
                   Tolerance(ratio=(0.0, 1.0), why="target"),
                   finding={"id": ffn.FID, "reason": ffn.REASON, "expected": band}).verdict


def test_the_reason_quotes_the_displaced_rung_and_the_run_that_retired_it() -> None:
    runs = _runs()
    best = _judged(runs)
    assert best.name == f"sgemm.{ffn.BEST}.{LAB}" and ffn.BEST == ffn.S18
    others = ffn.other_runs(runs, best)
    old = others[-1]
    t, cublas = old["time"].value, old["baseline_time"].value
    target = cublas / ffn.goal(LAB)
    assert (f"was {ffn.DISPLACED} at {t * 1e3:.4f} ms ({old.recorded_at[:16]} run), {cublas / t:.1%} of cuBLAS fp32 "
            f"timed beside it ({cublas * 1e3:.4f} ms; target {target * 1e3:.4f} ms): {t / target:.2f}x the target "
            "time") in ffn.REASON
    t, cublas = best["time"].value, best["baseline_time"].value
    target = cublas / ffn.goal(LAB)
    assert (f"Retired on the H200 by {ffn.S18}'s first run at this shape: {t * 1e3:.4f} ms "
            f"({best.recorded_at[:16]} run), {cublas / t:.1%} of cuBLAS fp32 timed beside it ({cublas * 1e3:.4f} ms; "
            f"target {target * 1e3:.4f} ms), {t / target:.2f}x the target time") in ffn.REASON
    # "both timing blocks meet the target": the second block against cuBLAS's second block
    rep = best.data["run"]["result"]["baseline_ms_median_repeat"] * 1e-3
    assert best["time_repeat"].value < rep / ffn.goal(LAB)
    s9 = recordings.load_latest(ffn.RESULTS_ROOT, ffn.MEASURED_ON, "kernels", f"sgemm.{ffn.S9}.{LAB}")
    pct = s9["baseline_time"].value / s9["time"].value
    assert f"s9 {s9['time'].value * 1e3:.4f} ms ({s9.recorded_at[:16]} run), {pct:.1%}." in ffn.REASON
    read = recordings.load_latest(ffn.RESULTS_ROOT, ffn.MEASURED_ON, "kernels", "kernels-ceilings",
                                  old.recorded_at)["read_bandwidth"].value
    shape, sms = ffn.SHAPES[LAB], get_hardware(ffn.MEASURED_ON).sm_count
    b_bytes = 4 * shape["K"] * shape["N"]
    cublas = old["baseline_time"].value
    assert f"is {cublas * read / b_bytes:.2f}x the time B alone ({b_bytes / 1e6:.1f} MB" in ffn.REASON
    bm, bn, _ = sgemm.BLOCK_TILES[ffn.S9]
    assert (f"{1 - shape['M'] / bm:.0%} of s9's FFMAs compute padding, and its {shape['N'] // bn} blocks on {sms} "
            "SMs") in ffn.REASON


def test_the_finding_is_retired_at_32_rows() -> None:
    """s18 met the target at 32 rows: the shape left FINDING_SHAPES (the plan written before the run), so the test
    judges the 32-row target without a finding, and no shape carries one."""
    assert ffn.SMALL not in ffn.FINDING_SHAPES and ffn.marks(ffn.SMALL) == () and ffn.marks(ffn.BIG) == ()


def test_the_band_is_the_other_sessions_of_the_rung_it_displaced() -> None:
    runs = _runs()
    best = _judged(runs)
    others = ffn.other_runs(runs, best)
    assert others and all(ffn.session_of(r) != ffn.session_of(best) for r in others)
    assert len(runs[ffn.S18]) == 1  # s18's first run: no other session of its own
    assert {r.name for r in others} == {f"sgemm.{ffn.DISPLACED}.{LAB}"} and ffn.DISPLACED != ffn.BEST
    ratios = [ffn.target_ratio(r, LAB) for r in others]
    lo, hi = min(ratios) * (1 - kfs.spread()), max(ratios) * (1 + kfs.spread())
    assert ffn.band(runs, best, LAB) == pytest.approx((lo, hi), abs=1e-4)
    assert f"{min(ratios):.3f}-{max(ratios):.3f}x, so {lo:.3f}-{hi:.3f}x" in ffn.REASON


# Where the judged ratio is put, in target units: the recorded run (resolved), inside the displaced rung's band (the
# finding), between the target and that band (a faster rung that still misses: a divergence), past the band.
MOVES = {"recorded": (None, Verdict.RESOLVED), "in-the-band": ("mid", Verdict.FINDING),
         "between": ("gap", Verdict.DIVERGE), "slower": ("past", Verdict.DIVERGE)}


@pytest.mark.parametrize("where", list(MOVES))
def test_moving_the_judged_time_moves_the_verdict_not_the_band(where: str) -> None:
    """The judged recording's time moved: the band, read from the other sessions, stays where it was; inside it the
    miss is the finding, outside it a divergence, at or under the target resolved (which would fail: strict)."""
    runs = _runs()
    best = _judged(runs)
    band = ffn.band(runs, best, LAB)
    assert band is not None
    lo, hi = band
    at, verdict = MOVES[where]
    ratio = {None: ffn.target_ratio(best, LAB), "mid": (lo + hi) / 2, "gap": (1.0 + lo) / 2, "past": hi * 1.2}[at]
    moved = _with_time(best, best["baseline_time"].value / ffn.goal(LAB) * ratio)
    rung = best.name.split(".")[1]
    mutated = {**runs, rung: [moved if r.recorded_at == best.recorded_at else r for r in runs[rung]]}
    assert ffn.band(mutated, moved, LAB) == band
    assert _verdict(moved, band) is verdict


@pytest.mark.parametrize(("share", "verdict"), [(None, Verdict.RESOLVED), (0.757, Verdict.DIVERGE)],
                         ids=("recorded", "outcome-a"))
def test_s18s_first_recording_is_judged_against_the_rung_it_displaced(share: float | None, verdict: Verdict) -> None:
    """s18's first run, a new session with no other of its own: its band is the displaced rung's other sessions. As
    recorded (108.6% of cuBLAS) it resolves the finding; at its header's outcome (a), 75.7% of cuBLAS, it would have
    missed the target faster than the displaced rung: a divergence, a new finding's cause."""
    runs = _runs()
    first = _judged(runs)
    if share is not None:
        first = _with_time(first, first["baseline_time"].value / share)
    assert first.name == f"sgemm.{ffn.S18}.{LAB}"
    assert {r.name for r in ffn.other_runs(runs, first)} == {f"sgemm.{ffn.DISPLACED}.{LAB}"}
    band = ffn.band(runs, first, LAB)
    assert band is not None
    assert _verdict(first, band) is verdict
