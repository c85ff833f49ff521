"""Findings of the seed's RTX 4090 kernels (test_kernels_seed_sgemm.py, test_kernels_seed_streaming.py), as data.

A finding's band comes from a different run than the one its check replays; its half-width is the seed's own
round-to-round scatter of the same kind of number, never an acceptance target:

- SGEMM. The checks replay the 18:01 run (bench_20260924_180114: square 1024..8192^3, each row the median of 3
  rounds). The 18:06 run (bench_20260924_180619, the shape sweep) timed all 8 kernels again at 4096^3 (its
  '方阵基准' rows, recorded as shape square-ref). A 4096^3 band is the 18:06 run's ratio +- run_scatter(kernel):
  2 x the largest |t(18:01) / t(18:06) - 1| over the other 7 of those 8 kernels; a ledger's ratio there is priced on the 18:06
  run's own fit (K2, K3, K4; K2 alone for the request ledger). A test over sizes carries one mark per size
  (by_size): the 18:06 band at 4096^3, single_run at the others.
- fused streaming. The main ladder (M = 8192) logs 3 rounds of each kernel (the recording's samples); the checks
  replay round 3 and a band spans rounds 1-2: [min x (1 - h), max x (1 + h)], h = round_scatter(op): 2 x the
  largest max/min - 1 of one kernel's 3 rounds, over the ladder's 7 other kernels.
- one run only. The 1024, 2048 and 8192^3 SGEMM rows and the 32-row vocab softmax were timed in one run (the
  per-round rows of 18:01, csv/bench_20260924_180114.csv, were not copied: seed-results/MANIFEST.md). No second
  run exists to centre a band on, so theirs stays the checked ratio +-15% (single_run): it cannot fail, and says so
  in its reason, until a second run of those rows exists. Two findings price a size-free quantity (K1's lines per
  load: seed-naive-is-request-bound, seed-request-ledger-l1-hits): their 2048 and 8192^3 rows are banded by the other
  sizes from 2048^3 instead (by_size_free: both runs' ratios there, +- run_scatter), their 1024^3 row stays single_run.

test_kernels_seed_sgemm.py and test_kernels_seed_streaming.py recompute every number below from the recordings.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

# --- how wide a band is ------------------------------------------------------------------------
# |t(18:01) / t(18:06) - 1| of each of the 8 kernels both SGEMM runs timed at 4096^3 (k0 is cuBLAS). A band's
# half-width is 2 x the largest of the OTHER kernels' (run_scatter): the checked kernel's own drift is its 18:01 time,
# the number the check judges, and a width that holds it would always hold the checked ratio (until 2026-12-04 it did).
SEED_RUN_DRIFT: dict[str, float] = {"k0": 0.0046, "k1": 0.0004, "k2": 0.00085, "k3": 0.00269, "k3c": 0.00189,
                                    "k4": 0.00334, "k5": 0.00151, "k6": 0.00449}
RUN_SCATTER_WHY = "2x the largest difference between the two runs' 4096^3 medians over the 7 other kernels"
# max/min - 1 of each fused kernel's 3 rounds at M = 8192; a band's half-width is 2 x the largest of the other
# kernels' (round_scatter), for the same reason: the checked kernel's spread holds its checked round 3.
FUSED_ROUND_SPREAD: dict[str, float] = {"n1": 0.00026, "n2": 0.00347, "n3": 0.0, "n4": 0.00431, "s1": 0.00399,
                                        "s2": 0.00454, "s3": 0.00678, "s4": 0.00068}
ROUND_SCATTER_WHY = "2x the largest spread of another kernel's 3 rounds on the main ladder"


def run_scatter(kernel: str) -> float:
    """The 4096^3 bands' half-width for `kernel`: 2 x the largest 18:01-vs-18:06 drift of the other kernels."""
    return round(2 * max(d for k, d in SEED_RUN_DRIFT.items() if k != kernel), 4)


def round_scatter(op: str) -> float:
    """The fused bands' half-width for `op`: 2 x the largest 3-round spread of the other main-ladder kernels."""
    return round(2 * max(d for k, d in FUSED_ROUND_SPREAD.items() if k != op), 4)
# The band of a row the seed timed once: its own ratio +-15% (the held-out rungs' acceptance band), kept only
# until a second run exists; it is centred on the number it checks, so it cannot fail.
SINGLE_RUN_SPREAD = 0.15


def other_run_band(ratios: Sequence[float], spread: float) -> tuple[float, float]:
    """measured/predicted band from other runs' (or rounds') ratios: their range widened by the scatter."""
    return (round(min(ratios) * (1 - spread), 4), round(max(ratios) * (1 + spread), 4))


def single_run(fid: str, reason: str, observed: float) -> pytest.MarkDecorator:
    band = (round(observed * (1 - SINGLE_RUN_SPREAD), 3), round(observed * (1 + SINGLE_RUN_SPREAD), 3))
    return pytest.mark.finding(fid, reason=f"{reason} (observed x{observed:.3g}; band: that ratio +-15%, the seed "
                               "timed this row once, so the band cannot fail until a second run exists)", expected=band,
                               band_from="checked-run")


def from_1806(fid: str, reason: str, other: float, kernel: str) -> pytest.MarkDecorator:
    """A 4096^3 check of `kernel` in the 18:01 run, banded by the 18:06 run's ratio +- the other kernels' drift."""
    spread = run_scatter(kernel)
    return pytest.mark.finding(fid, reason=f"{reason} (band: the 18:06 run's x{other:.4g} +-{spread:.2%}, "
                               f"{RUN_SCATTER_WHY})", expected=other_run_band((other,), spread),
                               band_from="other-runs")


def by_size(finding: tuple[str, str], observed: dict[int, float], other: dict[int, float],
            kernel: str) -> dict[int, pytest.MarkDecorator]:
    """One finding's mark per size: banded by the 18:06 run where it timed the size too (4096^3), else single_run."""
    return {s: from_1806(*finding, other[s], kernel) if s in other else single_run(*finding, r)
            for s, r in observed.items()}


# The sizes at which a per-line or per-load mechanism's ratio holds size for size: the seed's K1 ratios at 2048-8192^3
# agree within 0.2% in both runs, where 1024^3 sits 5% off them (a size effect no ledger here sizes).
SIZE_FREE_FROM = 2048
OTHER_SIZES_WHY = ("band: the other sizes' ratios from {sizes}^3 (both runs), +-{spread:.2%}, " + RUN_SCATTER_WHY
                   + ": the mechanism prices a line or a load the same at every size there")


def from_other_sizes(fid: str, reason: str, size: int, observed: dict[int, float], other: dict[int, float],
                     kernel: str) -> pytest.MarkDecorator:
    """A size-free mechanism's check at `size`, banded by its ratios at the other sizes from SIZE_FREE_FROM (the
    18:01 run's and the 18:06 run's), never its own, widened by run_scatter(kernel)."""
    ratios = [r for s, r in observed.items() if s >= SIZE_FREE_FROM and s != size]
    ratios += [r for s, r in other.items() if s >= SIZE_FREE_FROM and s != size]
    spread = run_scatter(kernel)
    sizes = "/".join(str(s) for s in sorted({*observed, *other}) if s >= SIZE_FREE_FROM and s != size)
    return pytest.mark.finding(fid, reason=f"{reason} ({OTHER_SIZES_WHY.format(sizes=sizes, spread=spread)})",
                               expected=other_run_band(ratios, spread), band_from="other-runs")


def by_size_free(finding: tuple[str, str], observed: dict[int, float], other: dict[int, float],
                 kernel: str) -> dict[int, pytest.MarkDecorator]:
    """by_size for a mechanism that holds at every size from SIZE_FREE_FROM: a size the 18:06 run did not time is
    banded by the other sizes (from_other_sizes); a smaller one keeps single_run, with what would replace it."""
    again = f"; the sizes from {SIZE_FREE_FROM}^3 cannot band this row, its ratio sits off theirs"
    return {s: from_1806(*finding, other[s], kernel) if s in other else
            from_other_sizes(*finding, s, observed, other, kernel) if s >= SIZE_FREE_FROM else
            single_run(finding[0], finding[1] + again, r) for s, r in observed.items()}


# --- the seed's RTX 4090 SGEMM rungs (test_kernels_seed_sgemm.py) ---------------------------
# measured / issued-byte roofline FLOP rate of the seed's rungs at 4096^3 in the 18:01 run, the one the checks
# replay: above 1 (a finding each) and under it; EXCEEDS_REASON quotes them
EXCEEDS = {"k1": 2.574, "k2": 21.13, "k4": 2.586, "k5": 2.691, "k6": 3.192}
UNDER_ROOFLINE = {"k3": 0.770, "k3c": 0.522}
# the same ratios in the 18:06 run: the band centres
EXCEEDS_1806 = {"k1": 2.5729, "k2": 21.112, "k4": 2.5944, "k5": 2.6952, "k6": 3.2063}


def _percent_of_roofline(ratios: dict[str, float]) -> str:
    return ", ".join(f"K{k[1:]} {r:.0%}" for k, r in ratios.items())


EXCEEDS_REASON = ("The textbook byte ledger (every load instruction's bytes from DRAM, the tiling's arithmetic "
                  f"intensity) is beaten by {len(EXCEEDS)} of {len(EXCEEDS) + len(UNDER_ROOFLINE)} rungs at 4096^3 "
                  f"({_percent_of_roofline(EXCEEDS)} of their rooflines; {_percent_of_roofline(UNDER_ROOFLINE)} stay "
                  "under): the re-reads of A and B come from L1/L2, not DRAM, so issued bytes are not DRAM bytes. The "
                  "request and instruction ledgers below explain the steps instead")

EXCEEDS_MARKS = {k: from_1806("seed-byte-ledger-exceeded", EXCEEDS_REASON, r, k) for k, r in EXCEEDS_1806.items()}

# measured / instruction-ledger time of the seed's held-out rows that carry a finding (the 18:01 run: the band
# centres where no other run timed the row; the reasons print them). Until 2026-12-04 the rows of k3 at 2048 and 8192,
# k3c at 1024-8192 and k5 at 4096 agreed under the 15% acceptance target; judged by the fit's noise budget
# (kernel_budget.fit_budget: the round spreads of the fit rows and of the checked row, 0.5-5.3%) they miss.
HELD_OUT_OBSERVED = {(1024, "k4"): 1.219, (1024, "k5"): 1.605, (2048, "k5"): 1.168, (4096, "k5"): 1.0975,
                     (8192, "k2"): 1.165, (8192, "k4"): 1.441, (8192, "k5"): 1.844, (8192, "k3"): 1.0525,
                     (8192, "k3c"): 1.0376, (2048, "k3"): 0.9236, (1024, "k3c"): 0.9459, (2048, "k3c"): 0.9156,
                     (4096, "k3c"): 0.937}
# the same at 4096^3 in the 18:06 run, priced on that run's own K2, K3, K4: the band centres there
HELD_OUT_1806 = {(4096, "k5"): 1.09481, (4096, "k3c"): 0.93626}

SMALL_GRID_ID = "seed-instruction-ledger-small-grid"
LARGE_DRAM_ID = "seed-instruction-ledger-dram-at-8192"
K5_SLOWER_ID = "seed-instruction-ledger-k5-slower-than-priced"
SHARED_TILE_FASTER_ID = "seed-instruction-ledger-shared-tile-faster-than-priced"
HELD_OUT_FINDING = {(1024, "k4"): SMALL_GRID_ID, (1024, "k5"): SMALL_GRID_ID, (2048, "k5"): K5_SLOWER_ID,
                    (4096, "k5"): K5_SLOWER_ID, **{(8192, k): LARGE_DRAM_ID for k in ("k2", "k3", "k3c", "k4", "k5")},
                    **{key: SHARED_TILE_FASTER_ID for key in ((2048, "k3"), (1024, "k3c"), (2048, "k3c"),
                                                              (4096, "k3c"))}}


def _off_priced(fid: str) -> str:
    return ", ".join(f"K{k[1:]} {r - 1:+.1%}" + ("" if fid == LARGE_DRAM_ID else f" at {s}^3")
                     for (s, k), r in HELD_OUT_OBSERVED.items() if HELD_OUT_FINDING[(s, k)] == fid)


SMALL_GRID = (SMALL_GRID_ID,
              ("At 1024^3 the grid is under one wave: K4 launches 1,024 blocks for 128 SMs x 9 slots, K5 256 blocks "
              f"for 128 x 4 slots, so SMs idle and per-SM cycles per FMA rise ({_off_priced(SMALL_GRID_ID)}) -- the "
              "ledger prices a full SM"))

LARGE_DRAM = (LARGE_DRAM_ID,
              ("At 8192^3 each matrix is 256 MiB, 3.5x the 72 MiB L2: the tiles' re-reads stop hitting L2 and "
              f"the load prices fitted at 4096 (L2-resident inputs) are too low ({_off_priced(LARGE_DRAM_ID)}; K3 "
              "and K3c's small excesses were agreements under the 15% target until 2026-12-04 and miss the fit's "
              "noise budget); K5's 8192 median also has a 28.5% spread between rounds"))

# The candidate K5_SLOWER rules out: a per-FMA issue cost the load-only ledger lacks, at the SM's 4 warp-FMAs a
# cycle (0.25 cycles per warp-FMA) taken out of the fit rows' beats and added back to K5's; what K5's 4096^3 ratio
# becomes under it (test_kernels_seed_sgemm recomputes it)
K5_WITH_FMA_TERM_4096 = 0.820
# the ledger's K3c beat over its K3 beat (K3c's fewer global loads): the only difference it prices between them
K3C_OVER_K3_PRICED = 0.9864

K5_SLOWER = (K5_SLOWER_ID,
             (f"K5 runs slower than the instruction ledger prices it at 2048^3 and 4096^3 ({_off_priced(K5_SLOWER_ID)}"
              "; at 1024 and 8192 the small-grid and DRAM findings hold it); the 4096^3 row was an agreement under "
              "the 15% target until 2026-12-04 and misses the fit's noise budget. Its 1,024 blocks at 2048^3 are "
              "exactly two waves of 512 slots. Cause not established. Ruled out as stated: a per-FMA issue cost the "
              "load-only ledger lacks (the fit rows, >= 1.1 loads per FMA, would absorb it into their load prices; "
              "K5 issues 0.41): priced at the SM's 0.25 cycles per warp-FMA it turns K5's 4096^3 ratio to "
              f"{K5_WITH_FMA_TERM_4096:.2f}, too far the other way"))

SHARED_TILE_FASTER = (SHARED_TILE_FASTER_ID,
                      ("The one-output-per-thread shared-tile rungs run faster than priced "
                       f"({_off_priced(SHARED_TILE_FASTER_ID)}), beyond the fit's noise budget (agreements under the "
                       "15% target until 2026-12-04). K3c (PMPP coarsening by 4) is faster at every size to 4096^3, "
                       f"though the ledger prices it only {1 - K3C_OVER_K3_PRICED:.1%} under K3 (its fewer global "
                       "loads); K3 itself is faster at 2048^3 than at its 4096^3 fit point. Cause unknown: the seed's "
                       "static SASS shows K3 and K3c with the same shared loads in their loop bodies (8 LDS.128 and 32 "
                       "LDS.32 each), so the gap is not in the load counts the ledger prices"))

HELD_OUT_CAUSE = {SMALL_GRID_ID: SMALL_GRID, LARGE_DRAM_ID: LARGE_DRAM, K5_SLOWER_ID: K5_SLOWER,
                  SHARED_TILE_FASTER_ID: SHARED_TILE_FASTER}
# banded by the 18:06 run where it timed the row (4096^3), else single_run
HELD_OUT_MARKS = {key: (from_1806(*HELD_OUT_CAUSE[fid], HELD_OUT_1806[key], key[1]) if key in HELD_OUT_1806
                        else single_run(*HELD_OUT_CAUSE[fid], HELD_OUT_OBSERVED[key]))
                  for key, fid in HELD_OUT_FINDING.items()}

# measured / ledger time of K6 in the 18:01 run (prices fitted on its K2, K3, K4 at 4096^3), and at 4096^3 in the
# 18:06 run (prices fitted on that run's K2, K3, K4): the band centre there
LDS128_OBSERVED = {1024: 5.361, 2048: 3.862, 4096: 3.701, 8192: 4.273}
LDS128_1806 = {4096: 3.6811}

LDS128 = ("seed-instruction-ledger-lds128",
          ("K6's 128-bit shared loads are priced like 32-bit ones (one instruction = one price): the ledger predicts "
          f"{LDS128_OBSERVED[4096]:.1f}x too fast at 4096^3. A float4 shared load moves 4x the bytes through the 128 B/cycle shared-memory "
          "port; the seed never calibrated its price"))

LDS128_MARKS = by_size(LDS128, LDS128_OBSERVED, LDS128_1806, "k6")

# measured / instruction-ledger time of K1 in the 18:01 run, and at 4096^3 in the 18:06 run (priced on that run's
# own K2, K3, K4): the band centre there
NAIVE_OBSERVED = {1024: 8.645, 2048: 8.217, 4096: 8.209, 8192: 8.212}
NAIVE_1806 = {4096: 8.2051}
# t(K1) / t(K2) at 4096^3 in the 18:01 run, and the request ledger's price fitted on its K2 (cycles per 128 B line)
K1_OVER_K2 = 8.209
K2_CYCLES_PER_LINE = 1.939

NAIVE = ("seed-naive-is-request-bound",
         ("K1 issues the same two loads per FMA as K2, so the instruction ledger prices it like K2 and is "
          f"{NAIVE_OBSERVED[4096]:.1f}x too fast at 4096^3: K1's loads each touch 33 cache lines (request ledger)"))

NAIVE_MARKS = by_size_free(NAIVE, NAIVE_OBSERVED, NAIVE_1806, "k1")

# measured / request-ledger time of K1 (one price per line, fitted on K2 at 4096^3) in the 18:01 run, and at 4096^3
# in the 18:06 run (priced on that run's own K2): the band centre there
L1_HITS_OBSERVED = {1024: 0.5239, 2048: 0.4980, 4096: 0.4975, 8192: 0.4977}
L1_HITS_1806 = {4096: 0.49728}

L1_HITS = ("seed-request-ledger-l1-hits",
           (f"One price per transaction, fitted on K2 ({K2_CYCLES_PER_LINE:.2f} cycles per line), predicts K1's 33 "
            f"lines per warp-FMA at {1 / L1_HITS_OBSERVED[4096]:.0f}x its measured time at 4096^3: K1's strided A "
            "lines are re-used by the next 31 k-steps from L1, and a line that hits L1 costs ~1 cycle of tag "
            f"bandwidth, not a K2 request's {K2_CYCLES_PER_LINE:.2f}. The request ledger orders the rungs (K1 is "
            f"{K1_OVER_K2:.1f}x slower than K2) but needs a second price for L1 hits"))

L1_HITS_MARKS = by_size_free(L1_HITS, L1_HITS_OBSERVED, L1_HITS_1806, "k1")


# --- the seed's RTX 4090 fused streaming kernels (test_kernels_seed_streaming.py) ------------
L2_REREAD_ID = "seed-fused-reread-hit-l2"
L2_REREAD_REASON = ("Faster than its issued bytes allow: the re-reads were served by the 72 MiB L2 (n2 re-reads a "
                    "14 KB row it just read: 134.9% 'MBU'; s1's 64 MiB input mostly fits the L2; the 32-row vocab "
                    "input is 18.6 MB)")
# measured / issued-byte time of rounds 1 and 2 (the band; the checks replay round 3) of the main-ladder rows
L2_REREAD_ROUNDS_1_2 = {("n2", 8192, 3584): (0.7413, 0.7438), ("s1", 8192, 2048): (0.9417, 0.9417)}
# the vocab row, timed once: its own ratio
L2_REREAD_SINGLE = {("s1", 32, 152064): 0.676}


def _rounds_1_2(fid: str, reason: str, ratios: tuple[float, float], op: str) -> pytest.MarkDecorator:
    spread = round_scatter(op)
    return pytest.mark.finding(
        fid, reason=f"{reason}; band: rounds 1-2 (x{ratios[0]:.4g}, x{ratios[1]:.4g}) "
        f"+-{spread:.2%}, {ROUND_SCATTER_WHY}; the check replays round 3.",
        expected=other_run_band(ratios, spread), band_from="other-runs")


L2_REREAD = {**{key: _rounds_1_2(L2_REREAD_ID, L2_REREAD_REASON, r, key[0]) for key, r in L2_REREAD_ROUNDS_1_2.items()},
             **{key: single_run(L2_REREAD_ID, L2_REREAD_REASON, r) for key, r in L2_REREAD_SINGLE.items()}}

# s2 (x2: two reads, one write) issues 12MN bytes; the DRAM ledger counts 8MN (its re-read served on chip)
S2_ISSUED_OVER_DRAM = 1.5
# measured / DRAM-byte time of s2 at M = 8192, N = 2048 in rounds 1 and 2 (the band; the check replays round 3)
S2_DRAM_ROUNDS_1_2 = (1.6537, 1.6530)

_S2_BANDWIDTH = S2_ISSUED_OVER_DRAM / max(S2_DRAM_ROUNDS_1_2)  # the fraction of bandwidth 12MN bytes imply
S2_DRAM = _rounds_1_2(
    "seed-online-softmax-reread-from-dram",
    f"The seed's online two-pass softmax ran at {_S2_BANDWIDTH:.1%} of bandwidth on 12MN bytes in rounds 1-2 "
    f"(x{max(S2_DRAM_ROUNDS_1_2):.3g} = 12MN / 8MN / {_S2_BANDWIDTH:.1%}), i.e. its second read of each 8 KB row went "
    "to DRAM although the same block had just read it; cause unknown (the seed's source is not published)",
    S2_DRAM_ROUNDS_1_2, "s2")

# measured / DRAM-byte and / issued-byte time of s2 on the 32-row vocab input, timed once: its own ratios
FEW_ROWS_OBSERVED = 1.559
FEW_ROWS_ISSUED = 1.039

# The seed named this row's excess an underfill (32 rows, one block per row on 128 SMs). The arithmetic says
# otherwise: the DRAM-byte ratio is 12MN / 8MN times the issued-byte ratio, i.e. the same second read from DRAM as
# S2_DRAM at ~96% of the datasheet rate; an underfill that scaled bandwidth with busy SMs would predict ~4x.
FEW_ROWS = single_run(
    "seed-online-softmax-reread-from-dram",
    f"32 rows of 152,064: x{FEW_ROWS_OBSERVED:.4g} = {S2_ISSUED_OVER_DRAM:g} (12MN / 8MN: the second read of each row "
    f"from DRAM, as at 8,192 rows) x {FEW_ROWS_ISSUED:.4g} (the issued-byte ratio, {1 / FEW_ROWS_ISSUED:.0%} of the "
    "datasheet rate); 96 of 128 SMs idle, yet the idle SMs cost no bandwidth here",
    FEW_ROWS_OBSERVED)
