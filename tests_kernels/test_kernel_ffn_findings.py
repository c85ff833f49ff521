"""kernel_ffn_findings against the recordings: the 32-row finding's reason quotes the runs the replay judges (recomputed
here through pytest_anatomy.recordings), and its band reads only other sessions, so moving the judged time moves the
verdict (out of the band: a divergence; to the target: resolved) and never the band."""

from __future__ import annotations

import dataclasses

import kernel_ffn_findings as ffn
import kernel_findings as kf
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


def test_the_reason_quotes_the_judged_runs() -> None:
    runs = _runs()
    best = _judged(runs)
    t, cublas = best["time"].value, best["baseline_time"].value
    assert best.name == f"sgemm.{ffn.BEST}.{LAB}"
    target = cublas / ffn.goal(LAB)
    assert (f"is {ffn.BEST} at {t * 1e3:.4f} ms ({best.recorded_at[:16]} run), {cublas / t:.1%} of cuBLAS fp32 "
            f"timed beside it ({cublas * 1e3:.4f} ms; target {target * 1e3:.4f} ms): {t / target:.2f}x the target "
            "time") in ffn.REASON
    s9 = recordings.load_latest(ffn.RESULTS_ROOT, ffn.MEASURED_ON, "kernels", f"sgemm.{ffn.S9}.{LAB}")
    pct = s9["baseline_time"].value / s9["time"].value
    assert f"s9 {s9['time'].value * 1e3:.4f} ms ({s9.recorded_at[:16]} run), {pct:.1%}." in ffn.REASON
    read = recordings.load_latest(ffn.RESULTS_ROOT, ffn.MEASURED_ON, "kernels", "kernels-ceilings",
                                  best.recorded_at)["read_bandwidth"].value
    shape, sms = ffn.SHAPES[LAB], get_hardware(ffn.MEASURED_ON).sm_count
    b_bytes = 4 * shape["K"] * shape["N"]
    assert f"is {cublas * read / b_bytes:.2f}x the time B alone ({b_bytes / 1e6:.1f} MB" in ffn.REASON
    bm, bn, _ = sgemm.BLOCK_TILES[ffn.S9]
    assert (f"{1 - shape['M'] / bm:.0%} of s9's FFMAs compute padding, and its {shape['N'] // bn} blocks on {sms} "
            "SMs") in ffn.REASON


def test_the_band_is_the_other_sessions_of_the_rung_they_make_best() -> None:
    runs = _runs()
    best = _judged(runs)
    others = ffn.other_runs(runs, best)
    assert others and all(ffn.session_of(r) != ffn.session_of(best) for r in others)
    assert {r.name for r in others} == {best.name}  # today the judged rung is also the other sessions' best
    ratios = [ffn.target_ratio(r, LAB) for r in others]
    lo, hi = min(ratios) * (1 - kf.spread()), max(ratios) * (1 + kf.spread())
    assert ffn.band(runs, best, LAB) == pytest.approx((lo, hi), abs=1e-4)
    assert f"{min(ratios):.3f}-{max(ratios):.3f}x, so {lo:.3f}-{hi:.3f}x" in ffn.REASON


@pytest.mark.parametrize(("scale", "verdict"), [(1.0, Verdict.FINDING), (0.85, Verdict.DIVERGE),
                                                (1.2, Verdict.DIVERGE), (0.2, Verdict.RESOLVED)],
                         ids=("recorded", "faster", "slower", "met"))
def test_moving_the_judged_time_moves_the_verdict_not_the_band(scale: float, verdict: Verdict) -> None:
    """The judged recording's time scaled: the band, read from the other sessions, stays where it was; inside it the
    miss is the finding, outside it a divergence, at or under the target resolved (which fails: strict)."""
    runs = _runs()
    best = _judged(runs)
    band = ffn.band(runs, best, LAB)
    assert band is not None
    moved = _with_time(best, best["time"].value * scale)
    rung = best.name.split(".")[1]
    mutated = {**runs, rung: [moved if r.recorded_at == best.recorded_at else r for r in runs[rung]]}
    assert ffn.band(mutated, moved, LAB) == band
    assert _verdict(moved, band) is verdict


@pytest.mark.parametrize(("share", "verdict"), [(0.76, Verdict.DIVERGE), (1.2, Verdict.RESOLVED)],
                         ids=("misses", "meets"))
def test_s18s_first_recording_is_judged_against_the_rung_it_displaced(share: float, verdict: Verdict) -> None:
    """s18's first run, a new session with no other of its own: its band is the displaced rung's other sessions, so
    at 76% of cuBLAS (its outcome (a)) it diverges from this finding, and at 120% (its prediction) it resolves it."""
    runs = _runs()
    best = _judged(runs)
    cublas = best["baseline_time"].value
    first = _with_time(best, cublas / share, session="2026-12-05T00:00:00+00:00")
    first = dataclasses.replace(first, name=f"sgemm.{ffn.S18}.{LAB}")
    with_s18 = {**runs, ffn.S18: [first]}
    assert {r.name for r in ffn.other_runs(with_s18, first)} == {best.name}
    band = ffn.band(with_s18, first, LAB)
    assert band is not None
    assert _verdict(first, band) is verdict
