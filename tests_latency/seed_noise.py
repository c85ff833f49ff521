"""Noise budgets of the seed's RTX 4090 checks (issue 10): measured scatter plus named systematic terms, never the
10% decode/throughput or 25% TTFT goals (those stay goals, in the docs).

The seed ran its concurrency sweep three times: round 1 twice (r1-01 and r1-02, driver 590.48.01, two days apart)
and round 2 once (r2-01, driver 580.159.03, eight days later); its length sweep and overload run once per round.
The calibration (conftest.seed_setup) is fitted on r1-01 (C=1 median ITL: t_overhead; C=64 p99 ITL: eta). Each
term below is relative to the prediction and computed from rows other than the one checked:

- repeat_scatter: 2 sigma of one run of the quantity, from round 1's two sweeps: sqrt(2 x mean(d^2)) with
  d = r1-02 / r1-01 - 1 over the sweep's seven rows (one pair: sqrt(2) |d|).
- calibration_spread: the prediction with t_overhead and eta refitted on r1-02's repeats of the fit points against
  the one fitted on r1-01's, x sqrt(2) (2 sigma of a constant fitted on one run, from one repeat).
- round_to_round (round-2 checks only): 2 x the RMS of r2 / r1-01 - 1 of the same quantity over the sweep's other
  rows (sigma = that RMS, 2 sigma as every term here): the measured difference between the rounds (another driver
  and day), which a round-1 calibration carries into every round-2 prediction.

The overload run ran once per round: its throughput, ITL and TTFT borrow the concurrency sweep's scatter of the same
quantity (test_latency_seed_load). A quantity the sweep does not measure is budgeted there, not here: a count by the
other round's miss of it, a quote no other run holds by its rounding alone (a miss is then a finding whose band is
read off the checked run until another run exists). None stays on the 10%/25% goals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from latency_setups import SEED_BATCHED_TOKENS, SEED_SHAPE, Setup, mean_context

from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory.flops import StepWork

CONCURRENCY = (1, 2, 4, 8, 16, 32, 64)
LENGTHS = (256, 512, 1024, 2048, 4096)
R1, R1_REPEAT, R2 = "r1-01", "r1-02", "r2-01"  # the concurrency sweep's three runs
SQRT2 = math.sqrt(2.0)

BUDGET_WHY = ("measured noise only (the seed's 10%/25% goals are not this tolerance): round 1's two sweeps' repeat "
              "scatter (r1-01 vs r1-02, 2 sigma of one run){rows}, the calibration's spread (t_overhead and eta "
              "refitted on r1-02's repeats of the fit points, x sqrt 2){shift}")
ROUND_SHIFT_WHY = (" and the round-to-round scatter (2 x RMS of r2 / r1-01 - 1 over the sweep's other rows: driver "
                   "580.159 vs 590.48, eight days later)")


def why(*, pooled: bool = True, round2: bool = True, rows: str = "") -> str:
    """The `why` of a budget built here; `rows` names a borrowed source of the repeat scatter."""
    where = rows or (", pooled over the sweep's seven rows" if pooled else ", of this row")
    return BUDGET_WHY.format(rows=where, shift=ROUND_SHIFT_WHY if round2 else "")


def c_row(run: str, c: int) -> str:
    """The concurrency sweep's recording of `run` ("r1-01", "r1-02", "r2-01") at C=c."""
    return f"seed-{run}-c{c:03d}"


def len_row(rnd: int, length: int) -> str:
    return f"seed-r{rnd}-03-len-{length}"


def pair_scatter(pairs: Iterable[tuple[float, float]]) -> float:
    """2 sigma of one run, relative, from pairs of repeats: sqrt(2 x mean((b / a - 1)^2))."""
    d = [b / a - 1 for a, b in pairs]
    return math.sqrt(2 * math.fsum(x * x for x in d) / len(d))


def rms_shift(pairs: Iterable[tuple[float, float]]) -> float:
    """RMS of b / a - 1 over pairs (round 1's value, round 2's)."""
    d = [b / a - 1 for a, b in pairs]
    return math.sqrt(math.fsum(x * x for x in d) / len(d))


def repeat_scatter(measured: Any, quantity: str, row: int | None = None) -> float:
    """Round 1's repeat scatter of `quantity`: pooled over the concurrency sweep, or of one row (row=C)."""
    rows = CONCURRENCY if row is None else (row,)
    return pair_scatter((measured(c_row(R1, c))[quantity].value, measured(c_row(R1_REPEAT, c))[quantity].value)
                        for c in rows)


def round_shift(measured: Any, quantity: str, skip: int | None = None, sweep: str = "c") -> float:
    """2 x RMS of r2 / r1 - 1 of `quantity` over the concurrency ("c") or length ("len") sweep, row `skip` left out."""
    if sweep == "c":
        names = [(c_row(R1, c), c_row(R2, c)) for c in CONCURRENCY if c != skip]
    else:
        names = [(len_row(1, n), len_row(2, n)) for n in LENGTHS if n != skip]
    return 2 * rms_shift((measured(a)[quantity].value, measured(b)[quantity].value) for a, b in names)


def refit(setup: Setup, measured: Any, run: str) -> Setup:
    """`setup` with t_overhead and eta fitted as conftest.seed_setup fits them, on `run`'s C=1 median ITL and
    C=64 p99 ITL (refit(setup, measured, R1) reproduces seed_setup: test_refit_reproduces_the_seed_calibration)."""
    ctx = mean_context(*SEED_SHAPE)
    calib = lat.fit_step_overhead(setup.model, setup.ceilings, 1, ctx, measured(c_row(run, 1))["median_itl"].value,
                                  name=setup.calib.name, fitted_on=f"seed-{run}-c001:median_itl")
    decodes = 63
    full = StepWork(decode_tokens=decodes, decode_context_sum=decodes * ctx,
                    prefill=((1024, 0), (SEED_BATCHED_TOKENS - decodes - 1024, 0)))
    calib = lat.fit_compute_efficiency(setup.model, setup.ceilings, [full], measured(c_row(run, 64))["p99_itl"].value,
                                       calib, fitted_on=f"seed-{run}-c064:p99_itl")
    return replace(setup, calib=calib)


def calibration_spread(setup: Setup, measured: Any, predict: Callable[[Setup], float]) -> float:
    """sqrt(2) x |prediction with r1-02's refit / prediction with r1-01's - 1|."""
    return SQRT2 * abs(predict(refit(setup, measured, R1_REPEAT)) / predict(setup) - 1)


def budget(setup: Setup, measured: Any, predict: Callable[[Setup], float] | None, quantity: str, *,
           row: int | None = None, per_row: bool = False, round2: bool = True, sweep: str = "c",
           scatter: float | None = None) -> dict[str, float]:
    """The budget of a check of `quantity` (a seed recording's key) at `row` of `sweep`: repeat_scatter (round 1's,
    pooled, or of the row with per_row; `scatter` overrides it), calibration_spread (where `predict` is given: the
    prediction as a function of the setup) and, for a round-2 check, round_to_round (the other rows' shift)."""
    terms = {"repeat_scatter": scatter if scatter is not None else
             repeat_scatter(measured, quantity, row if per_row else None)}
    if predict is not None:
        terms["calibration_spread"] = calibration_spread(setup, measured, predict)
    if round2:
        terms["round_to_round"] = round_shift(measured, quantity, row, sweep)
    return terms


def band(other_ratio: float, *budgets: dict[str, float]) -> tuple[float, float]:
    """A finding band from the other round's measured/predicted ratio of the same check: other_ratio x (1 +- the sum
    of both checks' budgets), since both ratios carry their own noise (the round-2 one also the round-to-round term)."""
    b = math.fsum(v for terms in budgets for v in terms.values())
    return other_ratio * (1 - b), other_ratio * (1 + b)


def if_marked(request: Any, quantity: str, finding_band: tuple[float, float]) -> tuple[float, float] | None:
    """`finding_band` where a finding mark of the test covers `quantity`, else None (reconcile refuses a band that
    no finding covers)."""
    covered = any(m.kwargs.get("quantity") in (None, quantity) for m in request.node.iter_markers("finding"))
    return finding_band if covered else None
