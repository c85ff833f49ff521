"""A pre-registered kernel time's tolerance from measured noise (issue 10), in place of the ladders' 15% acceptance
target: the checked run's own timing noise (its two timing blocks) plus the rung's spread over the other recorded
sessions on the card (the card-to-card and session-to-session variation a prediction fixed in milliseconds cannot
know). With fewer than MIN_OTHER_RUNS other sessions (a card met for the first time) the second term is the session
drift of the ladders' rung 0 (cuBLAS and torch kernels that did not change, kernel_findings_shared.spread_terms).
The 15%
stays what it was written as: the ladders' goal for a hand prediction, in the rung headers and docs.

A prediction priced from a ledger fitted in the same run (the instruction and request ledgers, the H200's and the
seed's) has its own budget, from the fit itself (fit_budget): the fit points' timing noise carried through the fit,
the checked rung's timing noise, and the fit's largest leave-one-out residual where it has a spare point. The
session-to-session term does not apply there: fit points and checked rung share the run's card and clock."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import kernel_findings_shared as kfs
import kernel_noise_findings as kn

from pytest_anatomy import recordings

MIN_OTHER_RUNS = 3
RESULTS_ROOT = Path(__file__).resolve().parents[1] / "results"
NOISE_WHY = ("measured noise: the run's two timing blocks (time vs time_repeat) plus the rung's spread over the "
             "card's other recorded sessions (kernel_budget.py); the 15% acceptance target is a goal, not a tolerance")


def other_times(folders: Iterable[Path], hardware: str, name: str, recorded_at: str, *,
                at_boost: bool = False) -> list[float]:
    """The time of every recorded run of `name` on `hardware` but the one recorded at `recorded_at`; with `at_boost`,
    a run whose block ran clock-limited below the boost at its time at the boost (time / kn.clock_factor: for a
    prediction that divides by the clock, which NVML and the clock probe measure apart from the time)."""
    return [float(r.measurements["time"]["value"]) / (kn.clock_factor(r.data or {}, kn.BOOST_MHZ) if at_boost else 1.0)
            for r in recordings.load_runs(folders, hardware, "kernels", name)
            if r.recorded_at != recorded_at and "time" in r.measurements]


def repeat_scatter(rec: Any) -> float:
    m = rec.measurements
    return abs(m["time"]["value"] / m["time_repeat"]["value"] - 1) if "time_repeat" in m else 0.0


def budget(rec: Any, others: list[float]) -> dict[str, float]:
    """The tolerance's named relative terms (reconcile(budget=...)): the report shows their sum."""
    terms = {"repeat_scatter": repeat_scatter(rec)}
    if len(others) >= MIN_OTHER_RUNS:
        median = statistics.median(others)
        terms["spread_over_other_sessions"] = max(abs(t / median - 1) for t in others)
    else:
        terms["session_drift_of_rung_0"] = kfs.spread_terms()["session_drift_of_rung_0"]
    return terms



# --- the autotuner candidates' tile ledger (issue 10): the same two noise terms plus the ledger's one measured input --
TILE_WHY = ("measured noise plus the ledger's measured input: the candidate's two timing blocks, its spread over the "
            "card's other recorded sessions (the rung itself for each family's first candidate) or rung 0's session "
            "drift, and s9's counted pace (the one counter the tile ledger reads) over its profiles, to the metric's "
            "reported digit; the 15% acceptance target is a goal, not a tolerance (kernel_budget.tile_budget)")


def input_spread(values: Sequence[float], used: float, resolution: float) -> float:
    """The relative uncertainty of a measured input a frozen prediction used: its largest departure over its repeated
    measurements, plus half its reported resolution (a metric recorded to two decimals is known to +-0.005)."""
    return max((abs(v / used - 1) for v in values), default=0.0) + resolution / 2 / used


def tile_budget(rec: Any, others: list[float], pace_term: float) -> dict[str, float]:
    """budget()'s terms plus the tile ledger's input term: how far the prediction moves when s9's counted pace moves
    by its input_spread (the caller prices that through the ledger itself)."""
    return {**budget(rec, others), "s9_counted_pace": pace_term}

# --- the in-run fitted ledgers (instruction, request): a budget from the fit itself ------------------------------
# rows: rung -> (counts per FMA by kind, measured beat), as theory.kernels.fit_prices takes them.
Rows = Mapping[str, tuple[Mapping[str, float], float]]


def fit_sensitivity(rows: Rows, fit_on: Sequence[str], kinds: Sequence[str],
                    counts: Mapping[str, float]) -> dict[str, float]:
    """d ln(prediction) / d ln(beat of fit rung i): how a relative error in one fit point's time moves a prediction
    priced from the least-squares fit (prediction = counts . pinv(A) . beats, linear in the beats)."""
    import numpy as np

    a = np.array([[rows[r][0].get(k, 0.0) for k in kinds] for r in fit_on])
    y = np.array([rows[r][1] for r in fit_on])
    w = np.array([counts.get(k, 0.0) for k in kinds]) @ np.linalg.pinv(a)
    pred = float(w @ y)
    return {r: float(w[i] * y[i] / pred) for i, r in enumerate(fit_on)}


def leave_one_out(rows: Rows, fit_on: Sequence[str], kinds: Sequence[str]) -> dict[str, float] | None:
    """Each fit rung's measured / predicted - 1, priced by the fit on the other fit rungs; None when the fit has no
    spare point (as many prices as rungs: left one out, the prices are undetermined, and the in-sample residuals are
    zero by construction), so its model error cannot be read off the fit."""
    import numpy as np

    if len(fit_on) <= len(kinds):
        return None
    out = {}
    for r in fit_on:
        rest = [x for x in fit_on if x != r]
        a = np.array([[rows[x][0].get(k, 0.0) for k in kinds] for x in rest])
        if np.linalg.matrix_rank(a) < len(kinds):
            return None
        prices, *_ = np.linalg.lstsq(a, np.array([rows[x][1] for x in rest]), rcond=None)
        out[r] = float(rows[r][1] / (np.array([rows[r][0].get(k, 0.0) for k in kinds]) @ prices) - 1)
    return out


def fit_budget(rows: Rows, fit_on: Sequence[str], kinds: Sequence[str], counts: Mapping[str, float],
               fit_noise: Mapping[str, float], checked_noise: float) -> dict[str, float]:
    """The tolerance of a prediction priced from a fit in the same run, as named relative terms:

    - fit_leave_one_out: the largest |leave-one-out residual| of the fit's own rungs, where the fit has a spare
      point (the worst the fit did on a point it did not see; the largest, as kernel_budget's other terms, so no
      coverage factor is chosen). Omitted where the fit is exactly determined: nothing measures its model error,
      and a held-out miss beyond the noise is a finding, not a wider tolerance;
    - fit_points_timing_noise: each fit rung's own timing noise (fit_noise, relative) times |d ln pred / d ln t_i|,
      summed (a linear sum: the noises are single measured scatters, not standard deviations, and the rungs of one
      run share a clock, so their errors need not be independent);
    - checked_rung_timing_noise: the checked rung's own timing noise."""
    terms = {}
    loo = leave_one_out(rows, fit_on, kinds)
    if loo is not None:
        terms["fit_leave_one_out"] = max(abs(v) for v in loo.values())
    sens = fit_sensitivity(rows, fit_on, kinds, counts)
    terms["fit_points_timing_noise"] = sum(abs(s) * fit_noise[r] for r, s in sens.items())
    terms["checked_rung_timing_noise"] = checked_noise
    return terms


def fit_why(fit_on: Sequence[str], kinds: Sequence[str], noise: str) -> str:
    shape = (f"{len(kinds)} price(s) on {len(fit_on)} rung(s): exactly determined, so its residuals are zero by "
             "construction and no leave-one-out exists; a miss beyond the noise is a finding"
             if len(fit_on) <= len(kinds) else "its largest leave-one-out residual")
    return (f"a fit in the same run ({', '.join(fit_on)}): the fit points' timing noise propagated through the fit "
            f"plus the checked rung's ({noise}); {shape}. The 15% acceptance target is a goal, not a tolerance "
            "(kernel_budget.fit_budget)")
