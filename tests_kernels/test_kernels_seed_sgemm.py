"""The seed's SGEMM ladder (RTX 4090, 4096^3 and three other sizes) against the three ledgers.

STUDY.md stage 02: the textbook byte ledger "fails 5 of 7" rungs (they run faster than their
arithmetic intensity allows); a request ledger (transactions per warp-FMA) and an instruction
ledger (load instructions per FMA by kind, priced in cycles fitted on K2, K3, K4) explain the
steps. Here the access patterns are this project's (kernels/seed_ladder.py), checked against
the seed's own count columns first; the prices are fitted on K2, K3, K4 at 4096^3 only and
every other (rung, size) is held out."""

from __future__ import annotations

import kernel_budget as kb
import kernel_seed_findings as sf
import pytest

from pytest_anatomy.kernels.seed_ladder import (
    SEED_CLOCK_HZ,
    SEED_INSTRUCTION_FIT,
    SEED_REQUEST_FIT,
    SEED_SGEMM,
)
from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.theory.kernels import (
    KINDS,
    beat_from_time,
    fit_prices,
    gemm_byte_ledger,
    priced_time,
)
from pytest_anatomy.theory.prediction import Prediction, Term

# The seed study's data exists only as recordings: replayed on the cards that hold them.
pytestmark = pytest.mark.targets(recorded="seed-")

SIZES = (1024, 2048, 4096, 8192)
SM = 128
# The held-out rows' tolerance (issue 10): a budget from the fit itself (kernel_budget.fit_budget), with each row's
# timing noise the spread of its 3 rounds as the seed printed it (ms_spread_pct), in place of the 15% acceptance
# target that judged them until 2026-12-04.
SEED_NOISE = "each row's 3 rounds' spread, the seed's ms_spread_pct"


def round_spread(rec) -> float:
    return float(rec.data["row"]["ms_spread_pct"]) / 100


def _fit_budget(seed_row, counts: dict[str, float], checked, fit_on=SEED_INSTRUCTION_FIT, kinds=KINDS,
                rows=None) -> tuple[dict[str, float], str]:
    """(budget terms, why) of a row priced from the 4096^3 fit of the 18:01 run: its fit rungs' round spreads
    propagated through the fit, plus the checked row's."""
    rows = _beats(seed_row, 4096) if rows is None else rows
    noise = {k: round_spread(seed_row(k, 4096)) for k in fit_on}
    return (kb.fit_budget(rows, fit_on, kinds, counts, noise, round_spread(checked)),
            kb.fit_why(fit_on, kinds, SEED_NOISE))


def _beats(seed_row, size: int, shape: str = "square") -> dict[str, tuple[dict[str, float], float]]:
    return {k: (a.counts(), beat_from_time(seed_row(k, size, shape)["time"].value, size, size, size, SM, SEED_CLOCK_HZ))
            for k, a in SEED_SGEMM.items()}


@pytest.fixture
def prices(seed_row):
    """Instruction prices fitted on K2, K3, K4 at 4096^3 only (the seed's choice)."""
    return fit_prices(_beats(seed_row, 4096), SEED_INSTRUCTION_FIT)


# --- the counting model reproduces the seed's own columns ----------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("kernel", sorted(SEED_SGEMM))
def test_access_counts_match_seed_columns(kernel, seed_row, reconcile):
    rec = seed_row(kernel)
    row = rec.data["row"]
    a = SEED_SGEMM[kernel]
    why = "the seed's CSV prints these counts with 3 decimals (+-0.0005) and the intensity with 2-3"
    for name, pred, col in (("ldg_per_fma", a.ldg, "ldg"), ("lds_distinct_per_fma", a.lds_distinct, "dist"),
                            ("lds_broadcast_per_fma", a.lds_broadcast, "bcast")):
        reconcile(f"{kernel}.{name}", Prediction(pred, "1/FMA", f"access pattern of {kernel}"),
                  _number(rec, col, "1/FMA"), abs=5e-4 + 1e-9, why=why, kind="replay")
    if row["req_per_fma"]:
        reconcile(f"{kernel}.requests_per_fma", Prediction(a.requests, "1/FMA", "distinct 128 B lines per warp-FMA"),
                  _number(rec, "req_per_fma", "1/FMA"), abs=5e-4, why=why, kind="replay")
    n = 4096
    ai = 2.0 * n**3 / (a.issued_bytes_per_fma * n**3 + 4.0 * n * n)
    reconcile(f"{kernel}.arithmetic_intensity", Prediction(ai, "FLOP/B", "2MNK / (issued bytes + 4MN)"),
              _number(rec, "ai", "FLOP/B"), abs=5e-3, why=why, kind="replay")


def _number(rec, column: str, unit: str):
    return Measurement(float(rec.data["row"][column]), unit, source="recorded",
                       provenance={**rec.provenance, "column": column, "note": "the seed's own count, not a timing"})


# --- byte ledger: the roofline is an upper bound on FLOP/s ---------------------------------
ROOF_WHY = ("a roofline is an upper bound: any attainment up to 100% is consistent with it; only "
            "running faster than the bound falsifies the byte count")


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", [
    pytest.param(k, marks=sf.EXCEEDS_MARKS[k]) if k in sf.EXCEEDS_MARKS else k
    for k in sorted(SEED_SGEMM)])
def test_issued_byte_roofline(kernel, seed_row, card, reconcile):
    rec = seed_row(kernel)
    n = 4096
    floor = gemm_byte_ledger(SEED_SGEMM[kernel], n, n, n, peak_flops=card.peak("fp32"),
                             bandwidth=card.memory_bandwidth, model="issued", sources="datasheet peak and bandwidth")
    reconcile("attainable_flop_rate", _rate(floor, n), rec["flop_rate"], ratio=(0.0, 1.0), why=ROOF_WHY)


@pytest.mark.gpu
@pytest.mark.parametrize("size", SIZES)
def test_compulsory_byte_roofline(size, seed_row, card, reconcile):
    """With DRAM bytes = A, B read once and C written once, SGEMM at these sizes is compute-bound,
    so the floor is the FP32 peak. Checked on cuBLAS (k0) only, the one kernel near it (48-71%):
    the hand rungs reach 0.7-50% of it, and a row that cannot come near its bound checks nothing."""
    rec = seed_row("k0", size)
    access = SEED_SGEMM["k2"]  # the DRAM model ignores the access pattern
    floor = gemm_byte_ledger(access, size, size, size, peak_flops=card.peak("fp32"),
                             bandwidth=card.memory_bandwidth, model="dram", sources="datasheet")
    reconcile("attainable_flop_rate_dram", _rate(floor, size), rec["flop_rate"], ratio=(0.0, 1.0), why=ROOF_WHY)


@pytest.mark.gpu
def test_byte_ledger_fails_five_of_seven(target, seed_row, card, reconcile):
    """A claim check, not a prediction: STUDY.md says 5 of the 7 rungs beat their issued-byte
    roofline at 4096^3; recounted here from the ledger and the seed's recorded times."""
    n = 4096
    failures = 0
    for k, a in SEED_SGEMM.items():
        floor = gemm_byte_ledger(a, n, n, n, peak_flops=card.peak("fp32"), bandwidth=card.memory_bandwidth)
        failures += seed_row(k)["time"].value < floor.value
    claim = Prediction(5, "rungs", "STUDY.md stage 02: 'fails 5 of 7'", {"rungs": len(SEED_SGEMM), "size": n},
                       notes=(("a claim check: the value is STUDY.md's count, not derived from specs; the measured "
                               "side recounts it from the issued-byte ledger and the seed's times"),))
    reconcile("rungs_beating_their_byte_roofline", claim,
              Measurement(failures, "rungs", source="recorded", provenance={"hardware": target.name}))


def _rate(floor: Prediction, n: int) -> Prediction:
    flops = 2.0 * n**3
    return Prediction(flops / floor.value, "FLOP/s", f"2MNK / ({floor.formula})", floor.inputs,
                      floor.terms + (Term("2MNK", flops, "FLOP"),), floor.notes)


# --- instruction ledger: prices fitted on K2, K3, K4 at 4096^3 ------------------------------
HELD_OUT = [(s, k) for s in SIZES for k in ("k2", "k3", "k3c", "k4", "k5") if not (s == 4096 and k in SEED_INSTRUCTION_FIT)]


@pytest.mark.gpu
@pytest.mark.parametrize("size,kernel", [pytest.param(s, k, marks=sf.HELD_OUT_MARKS[(s, k)]) if (s, k) in sf.HELD_OUT_MARKS else (s, k)
                                         for s, k in HELD_OUT])
def test_instruction_ledger_held_out(size, kernel, seed_row, prices, reconcile):
    pred = priced_time(SEED_SGEMM[kernel].counts(), prices, size, size, size, sm_count=SM, clock_hz=SEED_CLOCK_HZ,
                       rung=kernel)
    rec = seed_row(kernel, size)
    budget, why = _fit_budget(seed_row, SEED_SGEMM[kernel].counts(), rec)
    reconcile("time_instruction_ledger", pred, rec["time"], budget=budget, why=why)




@pytest.mark.gpu
@pytest.mark.parametrize("size", [pytest.param(s, marks=sf.LDS128_MARKS[s]) for s in SIZES])
def test_instruction_ledger_vectorized_rung(size, seed_row, prices, reconcile):
    pred = priced_time(SEED_SGEMM["k6"].counts(), prices, size, size, size, sm_count=SM, clock_hz=SEED_CLOCK_HZ,
                       rung="k6")
    rec = seed_row("k6", size)
    budget, why = _fit_budget(seed_row, SEED_SGEMM["k6"].counts(), rec)
    reconcile("time_instruction_ledger", pred, rec["time"], budget=budget, why=why)


@pytest.mark.gpu
@pytest.mark.parametrize("size", [pytest.param(s, marks=sf.NAIVE_MARKS[s]) for s in SIZES])
def test_instruction_ledger_naive_rung(size, seed_row, prices, reconcile):
    pred = priced_time(SEED_SGEMM["k1"].counts(), prices, size, size, size, sm_count=SM, clock_hz=SEED_CLOCK_HZ,
                       rung="k1")
    rec = seed_row("k1", size)
    budget, why = _fit_budget(seed_row, SEED_SGEMM["k1"].counts(), rec)
    reconcile("time_instruction_ledger", pred, rec["time"], budget=budget, why=why)


# --- request ledger: cycles per transaction fitted on K2 at 4096^3 --------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("size", [pytest.param(s, marks=sf.L1_HITS_MARKS[s]) for s in SIZES])
def test_request_ledger_naive(size, seed_row, reconcile):
    pred = priced_time({"requests": SEED_SGEMM["k1"].requests}, _request_prices(seed_row), size, size, size,
                       sm_count=SM, clock_hz=SEED_CLOCK_HZ, rung="k1")
    rec = seed_row("k1", size)
    rows = {k: ({"requests": SEED_SGEMM[k].requests}, b) for k, (_, b) in _beats(seed_row, 4096).items()}
    budget, why = _fit_budget(seed_row, {"requests": SEED_SGEMM["k1"].requests}, rec, SEED_REQUEST_FIT,
                              ("requests",), rows)
    reconcile("time_request_ledger", pred, rec["time"], budget=budget, why=why)


def _request_prices(seed_row, shape: str = "square"):
    """One price per 128 B line, fitted on K2 at 4096^3 of the run `shape` names."""
    k2 = seed_row("k2", 4096, shape)
    rows = {"k2": ({"requests": SEED_SGEMM["k2"].requests},
                   beat_from_time(k2["time"].value, 4096, 4096, 4096, SM, SEED_CLOCK_HZ))}
    return fit_prices(rows, ("k2",), kinds=("requests",), ledger="request")


def _roofline_ratios(seed_row, card, shape: str) -> dict[str, float]:
    """Each rung's recorded FLOP rate over its issued-byte roofline at 4096^3, as test_issued_byte_roofline computes it."""
    n = 4096
    observed = {}
    for k in sorted(SEED_SGEMM):
        floor = gemm_byte_ledger(SEED_SGEMM[k], n, n, n, peak_flops=card.peak("fp32"),
                                 bandwidth=card.memory_bandwidth, model="issued", sources="datasheet peak and bandwidth")
        observed[k] = seed_row(k, n, shape)["flop_rate"].value / _rate(floor, n).value
    return observed


@pytest.mark.gpu
def test_byte_ledger_finding_ratios_are_the_seeds(seed_row, card):
    """kernel_seed_findings.EXCEEDS and UNDER_ROOFLINE (the percentages EXCEEDS_REASON prints) are the 18:01 run's
    ratios, the run test_issued_byte_roofline replays; EXCEEDS_1806 (the band centres) the 18:06 run's."""
    observed = _roofline_ratios(seed_row, card, "square")
    quoted = {**sf.EXCEEDS, **sf.UNDER_ROOFLINE}
    assert set(quoted) == set(observed)
    for k, ratio in observed.items():
        assert quoted[k] == pytest.approx(ratio, rel=5e-4), (k, ratio)
        assert (k in sf.EXCEEDS) == (ratio > 1), k
    other = _roofline_ratios(seed_row, card, "square-ref")
    assert set(sf.EXCEEDS_1806) == set(sf.EXCEEDS) == {k for k, r in other.items() if r > 1}
    for k, ratio in sf.EXCEEDS_1806.items():
        assert ratio == pytest.approx(other[k], rel=1e-4), (k, other[k])


@pytest.mark.gpu
def test_band_scatter_is_the_two_runs(seed_row):
    """SEED_RUN_DRIFT, from which each 4096^3 band's half-width leaves its own kernel out (run_scatter), is
    |t(18:01) / t(18:06) - 1| of each of the 8 kernels both runs timed at 4096^3; the two are different runs (their
    stamps), each row a median of 3 rounds."""
    drift = {}
    for k in ("k0", *sorted(SEED_SGEMM)):
        first, second = seed_row(k), seed_row(k, shape="square-ref")
        assert first.data["row"]["stamp"] != second.data["row"]["stamp"], k
        drift[k] = round(abs(first["time"].value / second["time"].value - 1), 5)
    assert drift == sf.SEED_RUN_DRIFT


@pytest.mark.gpu
def test_instruction_ledger_finding_ratios_are_the_seeds(seed_row, prices):
    """kernel_seed_findings.HELD_OUT_OBSERVED, LDS128_OBSERVED and NAIVE_OBSERVED (printed in their reasons, the
    single-run band centres) are the 18:01 run's time over the instruction ledger's, as test_instruction_ledger_held_out,
    _vectorized_rung and _naive_rung price it; LDS128_1806 and NAIVE_1806 (the 4096^3 band centres) are the 18:06
    run's K6 and K1 over the ledger priced on that run's own K2, K3, K4."""
    def observed(size: int, kernel: str, shape: str = "square", fitted=prices) -> float:
        pred = priced_time(SEED_SGEMM[kernel].counts(), fitted, size, size, size, sm_count=SM,
                           clock_hz=SEED_CLOCK_HZ, rung=kernel)
        return seed_row(kernel, size, shape)["time"].value / pred.value

    for (size, kernel), ratio in sf.HELD_OUT_OBSERVED.items():
        assert ratio == pytest.approx(observed(size, kernel), rel=5e-4), (size, kernel)
    prices_1806 = fit_prices(_beats(seed_row, 4096, "square-ref"), SEED_INSTRUCTION_FIT)
    for (size, kernel), ratio in sf.HELD_OUT_1806.items():
        assert ratio == pytest.approx(observed(size, kernel, "square-ref", prices_1806), rel=1e-4), (size, kernel)
    for kernel, first, other in (("k6", sf.LDS128_OBSERVED, sf.LDS128_1806), ("k1", sf.NAIVE_OBSERVED, sf.NAIVE_1806)):
        assert set(first) == set(SIZES) and set(other) == {4096}, kernel
        for size, ratio in first.items():
            assert ratio == pytest.approx(observed(size, kernel), rel=5e-4), (kernel, size)
        for size, ratio in other.items():
            assert ratio == pytest.approx(observed(size, kernel, "square-ref", prices_1806), rel=1e-4), (kernel, size)


@pytest.mark.gpu
def test_request_ledger_finding_ratios_are_the_seeds(seed_row):
    """kernel_seed_findings.L1_HITS_OBSERVED (the single-run band centres; 4096^3 printed in the reason) is the 18:01
    run's K1 over the request ledger priced on its K2, as test_request_ledger_naive prices it; L1_HITS_1806 (the
    4096^3 band centre) the 18:06 run's K1 over the ledger priced on its own K2. K2_CYCLES_PER_LINE, K1_OVER_K2 and
    the 33 lines the reasons quote are the 18:01 run's fitted price, t(K1) / t(K2) at 4096^3, and K1's requests."""
    def observed(size: int, shape: str = "square") -> float:
        pred = priced_time({"requests": SEED_SGEMM["k1"].requests}, _request_prices(seed_row, shape), size, size,
                           size, sm_count=SM, clock_hz=SEED_CLOCK_HZ, rung="k1")
        return seed_row("k1", size, shape)["time"].value / pred.value

    assert set(sf.L1_HITS_OBSERVED) == set(SIZES) and set(sf.L1_HITS_1806) == {4096}
    for size, ratio in sf.L1_HITS_OBSERVED.items():
        assert ratio == pytest.approx(observed(size), rel=5e-4), size
    for size, ratio in sf.L1_HITS_1806.items():
        assert ratio == pytest.approx(observed(size, "square-ref"), rel=1e-4), size
    assert sf.K2_CYCLES_PER_LINE == pytest.approx(_request_prices(seed_row).cycles["requests"], rel=5e-4)
    assert sf.K1_OVER_K2 == pytest.approx(seed_row("k1")["time"].value / seed_row("k2")["time"].value, rel=5e-4)
    assert SEED_SGEMM["k1"].requests == 33 and "33 lines" in sf.L1_HITS[1] and "33 cache lines" in sf.NAIVE[1]
    # the per-line cost of K1's lines the reason infers: the K2 price x the measured/predicted ratio
    assert f"costs ~{sf.K2_CYCLES_PER_LINE * sf.L1_HITS_OBSERVED[4096]:.0f} cycle" in sf.L1_HITS[1]


@pytest.mark.gpu
def test_held_out_finding_arithmetic_is_the_seeds(seed_row, prices, measured, target):
    """The numbers the held-out findings' reasons argue with: K3c's priced beat over K3's (K3C_OVER_K3_PRICED), K5's
    4096^3 ratio with a 0.25-cycle per-FMA term taken out of the fit rows and added back (K5_WITH_FMA_TERM_4096), and
    the seed's static SASS of K3 and K3c (the same shared loads)."""
    def beat(kernel: str, fitted=prices, extra: float = 0.0) -> float:
        return sum(SEED_SGEMM[kernel].counts()[k] * c for k, c in fitted.cycles.items()) + extra

    assert sf.K3C_OVER_K3_PRICED == pytest.approx(beat("k3c") / beat("k3"), abs=5e-5)
    fma = 0.25  # 128 FP32 lanes per SM: 4 warp-FMAs a cycle
    rows = {k: (c, b - fma) for k, (c, b) in _beats(seed_row, 4096).items()}
    with_fma = fit_prices(rows, SEED_INSTRUCTION_FIT)
    k5 = beat_from_time(seed_row("k5")["time"].value, 4096, 4096, 4096, SM, SEED_CLOCK_HZ)
    assert sf.K5_WITH_FMA_TERM_4096 == pytest.approx(k5 / beat("k5", with_fma, fma), abs=5e-4)
    sass = measured("seed-sgemm.sass-counts", target=target)
    for k in ("k3", "k3c"):
        assert (sass[f"{k}.LDS.128"].value, sass[f"{k}.LDS.32"].value) == (8, 32), k
    assert sf.SHARED_TILE_FASTER[1].count("8 LDS.128 and 32 LDS.32") == 1


@pytest.mark.gpu
def test_former_agreements_miss_the_fit_budget_and_the_rest_agree(seed_row, prices):
    """The rows the 15% target had called agreement: those in a held-out finding miss the fit's noise budget
    (kernel_budget.fit_budget), the others sit inside it, so no finding covers a row its budget holds."""
    for size, kernel in HELD_OUT:
        rec = seed_row(kernel, size)
        pred = priced_time(SEED_SGEMM[kernel].counts(), prices, size, size, size, sm_count=SM,
                           clock_hz=SEED_CLOCK_HZ, rung=kernel)
        ratio = rec["time"].value / pred.value
        budget = sum(_fit_budget(seed_row, SEED_SGEMM[kernel].counts(), rec)[0].values())
        assert (abs(ratio - 1) > budget) == ((size, kernel) in sf.HELD_OUT_FINDING), (size, kernel, ratio, budget)
