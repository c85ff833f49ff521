"""Findings of the seed's RTX 4090 kernels (test_kernels_seed_sgemm.py, test_kernels_seed_streaming.py), as data.

A finding's band comes from a different run than the one its check replays; its half-width is the seed's own
round-to-round scatter of the same kind of number, never an acceptance target:

- SGEMM. The checks replay the 18:01 run (bench_20260924_180114: square 1024..8192^3, each row the median of 3
  rounds). The 18:06 run (bench_20260924_180619, the shape sweep) timed all 8 kernels again at 4096^3 (its
  '方阵基准' rows, recorded as shape square-ref). A 4096^3 band is the 18:06 run's ratio +- SEED_RUN_SCATTER:
  2 x the largest |t(18:01) / t(18:06) - 1| over those 8 kernels.
- fused streaming. The main ladder (M = 8192) logs 3 rounds of each kernel (the recording's samples); the checks
  replay round 3 and a band spans rounds 1-2: [min x (1 - h), max x (1 + h)], h = FUSED_ROUND_SCATTER: 2 x the
  largest max/min - 1 of one kernel's 3 rounds, over the ladder's 8 kernels.
- one run only. The 1024, 2048 and 8192^3 SGEMM rows and the 32-row vocab softmax were timed in one run (the
  per-round rows of 18:01, csv/bench_20260924_180114.csv, were not copied: seed-results/MANIFEST.md). No second
  run exists to centre a band on, so theirs stays the checked ratio +-15% (single_run): it cannot fail, and says so
  in its reason, until a second run of those rows exists.

test_kernels_seed_sgemm.py and test_kernels_seed_streaming.py recompute every number below from the recordings.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

# --- how wide a band is ------------------------------------------------------------------------
# 2 x the largest |t(18:01) / t(18:06) - 1| of the 8 kernels both SGEMM runs timed at 4096^3 (K6: 3.358 vs
# 3.343 ms, 0.45%; cuBLAS 2.401 vs 2.390 ms, 0.46%)
SEED_RUN_SCATTER = 0.0092
RUN_SCATTER_WHY = "2x the largest difference between the two runs' 4096^3 medians, 8 kernels"
# 2 x the largest max/min - 1 of one fused kernel's 3 rounds at M = 8192 (s3: 0.1475 / 0.1485 / 0.1475 ms, 0.68%)
FUSED_ROUND_SCATTER = 0.0136
ROUND_SCATTER_WHY = "2x the largest spread of one kernel's 3 rounds on the main ladder"
# The band of a row the seed timed once: its own ratio +-15% (the held-out rungs' acceptance band), kept only
# until a second run exists; it is centred on the number it checks, so it cannot fail.
SINGLE_RUN_SPREAD = 0.15


def other_run_band(ratios: Sequence[float], spread: float) -> tuple[float, float]:
    """measured/predicted band from other runs' (or rounds') ratios: their range widened by the scatter."""
    return (round(min(ratios) * (1 - spread), 4), round(max(ratios) * (1 + spread), 4))


def single_run(fid: str, reason: str, observed: float) -> pytest.MarkDecorator:
    band = (round(observed * (1 - SINGLE_RUN_SPREAD), 3), round(observed * (1 + SINGLE_RUN_SPREAD), 3))
    return pytest.mark.finding(fid, reason=f"{reason} (observed x{observed:.3g}; band: that ratio +-15%, the seed "
                               "timed this row once, so the band cannot fail until a second run exists)", expected=band)


def from_1806(fid: str, reason: str, other: float) -> pytest.MarkDecorator:
    """A 4096^3 check of the 18:01 run, banded by the 18:06 run's ratio."""
    return pytest.mark.finding(fid, reason=f"{reason} (band: the 18:06 run's x{other:.4g} +-{SEED_RUN_SCATTER:.2%}, "
                               f"{RUN_SCATTER_WHY})", expected=other_run_band((other,), SEED_RUN_SCATTER))


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

EXCEEDS_MARKS = {k: from_1806("seed-byte-ledger-exceeded", EXCEEDS_REASON, r) for k, r in EXCEEDS_1806.items()}

# measured / instruction-ledger time of the seed's held-out rows that carry a finding (one run each: the band
# centres; the reasons print them)
HELD_OUT_OBSERVED = {(1024, "k4"): 1.219, (1024, "k5"): 1.605,
                     (8192, "k2"): 1.165, (8192, "k4"): 1.441, (8192, "k5"): 1.844}


def _slower_than_priced(size: int) -> str:
    return ", ".join(f"K{k[1:]} {r - 1:+.0%}" for (s, k), r in HELD_OUT_OBSERVED.items() if s == size)


SMALL_GRID = ("seed-instruction-ledger-small-grid",
              ("At 1024^3 the grid is under one wave: K4 launches 1,024 blocks for 128 SMs x 9 slots, K5 256 blocks "
              f"for 128 x 4 slots, so SMs idle and per-SM cycles per FMA rise ({_slower_than_priced(1024)}) -- the "
              "ledger prices a full SM"))

LARGE_DRAM = ("seed-instruction-ledger-dram-at-8192",
              ("At 8192^3 each matrix is 256 MiB, 3.5x the 72 MiB L2: the tiles' re-reads stop hitting L2 and "
              f"the load prices fitted at 4096 (L2-resident inputs) are too low ({_slower_than_priced(8192)}); K5's "
              "8192 median also has a 28.5% spread between rounds"))

K5_2048 = pytest.mark.finding(
    "seed-instruction-ledger-k5-2048",
    reason="K5 at 2048^3 runs 17% slower than priced (the band is 15%); its 1,024 blocks are exactly two waves "
           "of 512 slots. Cause not established.", expected=(1.1, 1.25))

HELD_OUT_MARKS = {**{(s, k): single_run(*(SMALL_GRID if s == 1024 else LARGE_DRAM), r)
                    for (s, k), r in HELD_OUT_OBSERVED.items()}, (2048, "k5"): K5_2048}

# measured / ledger time of K6 in the 18:01 run (prices fitted on its K2, K3, K4 at 4096^3), and at 4096^3 in the
# 18:06 run (prices fitted on that run's K2, K3, K4): the band centre there
LDS128_OBSERVED = {1024: 5.361, 2048: 3.862, 4096: 3.701, 8192: 4.273}
LDS128_1806 = {4096: 3.6811}

LDS128 = ("seed-instruction-ledger-lds128",
          ("K6's 128-bit shared loads are priced like 32-bit ones (one instruction = one price): the ledger predicts "
          f"{LDS128_OBSERVED[4096]:.1f}x too fast at 4096^3. A float4 shared load moves 4x the bytes through the 128 B/cycle shared-memory "
          "port; the seed never calibrated its price"))

LDS128_MARKS = {s: from_1806(*LDS128, LDS128_1806[s]) if s in LDS128_1806 else single_run(*LDS128, r)
                for s, r in LDS128_OBSERVED.items()}

NAIVE_IS_REQUEST_BOUND = pytest.mark.finding("seed-naive-is-request-bound",
                     reason="K1 issues the same two loads per FMA as K2, so the instruction ledger prices it like K2 "
                            "and is 8.2x too fast: K1's loads each touch 33 cache lines (request ledger).",
                     expected=(7.0, 10.0))

REQUEST_LEDGER_L1_HITS = pytest.mark.finding("seed-request-ledger-l1-hits",
                     reason="One price per transaction, fitted on K2 (1.94 cycles per line), predicts K1's 33 lines "
                            "per warp-FMA at 2x its measured time: K1's strided A lines are re-used by the next 31 "
                            "k-steps from L1, and a line that hits L1 costs ~1 cycle of tag bandwidth, not a K2 "
                            "request's 1.94. The request ledger orders the rungs (K1 is 8.2x slower than K2) but "
                            "needs a second price for L1 hits.", expected=(0.4, 0.55))


# --- the seed's RTX 4090 fused streaming kernels (test_kernels_seed_streaming.py) ------------
L2_REREAD_ID = "seed-fused-reread-hit-l2"
L2_REREAD_REASON = ("Faster than its issued bytes allow: the re-reads were served by the 72 MiB L2 (n2 re-reads a "
                    "14 KB row it just read: 134.9% 'MBU'; s1's 64 MiB input mostly fits the L2; the 32-row vocab "
                    "input is 18.6 MB)")
# measured / issued-byte time of rounds 1 and 2 (the band; the checks replay round 3) of the main-ladder rows
L2_REREAD_ROUNDS_1_2 = {("n2", 8192, 3584): (0.7413, 0.7438), ("s1", 8192, 2048): (0.9417, 0.9417)}
# the vocab row, timed once: its own ratio
L2_REREAD_SINGLE = {("s1", 32, 152064): 0.676}


def _rounds_1_2(ratios: tuple[float, float]) -> pytest.MarkDecorator:
    return pytest.mark.finding(
        L2_REREAD_ID, reason=f"{L2_REREAD_REASON}; band: rounds 1-2 (x{ratios[0]:.4g}, x{ratios[1]:.4g}) "
        f"+-{FUSED_ROUND_SCATTER:.2%}, {ROUND_SCATTER_WHY}; the check replays round 3.",
        expected=other_run_band(ratios, FUSED_ROUND_SCATTER))


L2_REREAD = {**{key: _rounds_1_2(r) for key, r in L2_REREAD_ROUNDS_1_2.items()},
             **{key: single_run(L2_REREAD_ID, L2_REREAD_REASON, r) for key, r in L2_REREAD_SINGLE.items()}}

S2_DRAM = pytest.mark.finding(
    "seed-online-softmax-reread-from-dram", reason="The seed's online two-pass softmax ran at 90.7% of bandwidth on "
    "12MN bytes, i.e. its second read of each 8 KB row went to DRAM although the same block had just read it; "
    "cause unknown (the seed's source is not published).", expected=(1.4, 1.8))

FEW_ROWS = pytest.mark.finding(
    "seed-vocab-rows-underfill", reason="32 rows of 152,064: one block per row on 128 SMs, so 96 SMs idle and the "
    "DRAM-byte floor is not reached (the 37 MB footprint is L2-resident, which helps the issued-byte view).",
    expected=(1.3, 1.8))
