"""Findings of the kernel ladders, as data: one finding per cause, per card measured.

Why the H200 rungs missed their pre-registered times and ledgers: one finding per cause.

Each explanation cites the rung's Nsight Compute counters (results/h200/kernels/ncu.*, same
kernels, same shapes, a separate device call: scripts/device/kernels_profile.sh) and the
compiler's resource report. Bands are centred on the measured/predicted ratio observed on the
first H200 run (results/h200/kernels/*@20261130T020210Z; test_kernels_ladders.py recomputes them),
while the suite judges the newest run: each band comes from a different run than the one it
checks. Their half-width is measured noise, term by term (spread_terms, read from the recordings):
the two runs' timing-block scatter (2 x the largest |time / time_repeat - 1| of the first run), the
session-to-session drift of the code that did not change (the largest drift of a ladder's rung 0,
cuBLAS or torch, between the two runs), and for a ratio that divides by the session's read
ceiling, that ceiling's drift between the two runs. A change of mechanism (another limiter) moves
a ratio by tens of percent. The pre-registered predictions themselves (the .cu headers,
Variant.h200_ms) are never edited.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import kernel_h100_findings as h100
import kernel_s15_x8_findings as s15x8
import kernel_s16_x9_findings as s16x9
import kernel_s18_x10_findings as s18x10
import pytest

from pytest_anatomy.kernels import autotune as at
from pytest_anatomy.kernels import fused, sgemm


# The first H200 run, whose measured/predicted ratios centre the bands (the suite replays the newest run).
FIRST_RUN = "2026-11-30T02:02:10Z"


RESULTS = Path(__file__).resolve().parents[1] / "results" / "h200" / "kernels"
RUNG_ZERO = ("sgemm.s0-", "reduction.r0-", "rmsnorm.n0-", "softmax.x0-")


def _stamp(recorded_at: str) -> str:
    return recorded_at.replace("-", "").replace(":", "")


@functools.cache
def spread_terms() -> dict[str, float]:
    """The named noise terms of a band, read from the recordings: the first run's two timing blocks, and the largest
    drift from the first run that any later session showed (rung 0's library kernels, the read ceiling). Every
    session, not the newest alone: a band's width must not depend on which card the last visit drew (until
    2026-12-03 it did, and a new card whose read ceiling sat near the first run's narrowed every ceiling band)."""
    first = {p.name.split("@")[0]: json.loads(p.read_text())["measurements"]
             for p in RESULTS.glob(f"*@{_stamp(FIRST_RUN)}.json")}
    blocks = max((abs(m["time"]["value"] / m["time_repeat"]["value"] - 1) for m in first.values()
                  if "time" in m and "time_repeat" in m), default=0.0)

    def sessions(name: str) -> list[dict]:
        return [json.loads(p.read_text())["measurements"] for p in sorted(RESULTS.glob(f"{name}@*.json"))]

    drift = max((abs(s["time"]["value"] / m["time"]["value"] - 1) for n, m in first.items()
                 if n.startswith(RUNG_ZERO) and "time" in m for s in sessions(n) if "time" in s), default=0.0)
    ceiling = max((abs(s["read_bandwidth"]["value"] / first["kernels-ceilings"]["read_bandwidth"]["value"] - 1)
                   for s in sessions("kernels-ceilings") if "read_bandwidth" in s),
                  default=0.0) if "kernels-ceilings" in first else 0.0
    return {"timing_blocks_both_runs": 2 * blocks, "session_drift_of_rung_0": drift, "read_ceiling_drift": ceiling}


def spread(divides_by_ceiling: bool = False) -> float:
    terms = spread_terms()
    return sum(v for k, v in terms.items() if divides_by_ceiling or k != "read_ceiling_drift")


def band(ratio: float, divides_by_ceiling: bool = False) -> tuple[float, float]:
    """The first run's ratio +- the measured noise terms (spread_terms)."""
    s = spread(divides_by_ceiling)
    return (round(ratio * (1 - s), 4), round(ratio * (1 + s), 4))


def band_note(divides_by_ceiling: bool = False) -> str:
    terms = {k: v for k, v in spread_terms().items() if divides_by_ceiling or k != "read_ceiling_drift"}
    return (f" Band: the first H200 run's ratio +-{spread(divides_by_ceiling):.1%} ("
            + " + ".join(f"{k.replace('_', ' ')} {v:.1%}" for k, v in terms.items()) + ").")


def first_run_time(name: str) -> float:
    """The first H200 run's time (s) of one recording, which the reasons quote (the run their bands are centred
    on); NaN where this checkout lacks the recording, so a reason then prints nan rather than a retyped number."""
    path = RESULTS / f"{name}@{_stamp(FIRST_RUN)}.json"
    if not path.exists():
        return float("nan")
    return float(json.loads(path.read_text())["measurements"]["time"]["value"])


SGEMM_SHAPE = "4096x4096x4096"
SGEMM_FLOP = 2 * 4096**3


def sgemm_ms(rung: str) -> float:
    return first_run_time(f"sgemm.{rung}.{SGEMM_SHAPE}") * 1e3


def sgemm_tflops(rung: str) -> float:
    return SGEMM_FLOP / first_run_time(f"sgemm.{rung}.{SGEMM_SHAPE}") / 1e12


def reduction_ms(rung: str) -> float:
    return first_run_time(f"reduction.{rung}.n268435456") * 1e3


def softmax_s(rung: str, shape: str) -> float:
    return first_run_time(f"softmax.{rung}.{shape}")


SHORT_ROW_FUSED = ("x2-online", "x3-registers", "x4-vectorized")
_SHORT_ROW_US = [softmax_s(r, "8192x2048") * 1e6 for r in SHORT_ROW_FUSED]
FP32_RUNGS = ("s5-2d-regtile", "s6-vectorized", "s7-warptiling")
_BEST_FP32 = min(sgemm_ms(r) for r in FP32_RUNGS)


# A finding is a fact about one card's measurements: every mark here carries hardware=CHECKED_ON,
# so the plugin applies it to that card's reconciliations (recorded or live) and to no other card's.
MEASURED_ON = "h200"
# The cards each band is applied on: written on the H200, held unchanged against the first H100 session
# (results/h100-sxm/live-runs/20261202T182700Z.full.json), as pre-registered in docs/RECORDING.md ("The first
# H100 visit": the compute-bound findings are GH100 properties). A finding whose H100 ratio fell outside its
# band keeps MEASURED_ON alone (and the H100's miss has its own finding).
CHECKED_ON = (MEASURED_ON, h100.H100)


def finding(fid: str, reason: str, ratio: float, quantity: str | None = None,
            divides_by_ceiling: bool = False, cards: str | tuple[str, ...] = CHECKED_ON) -> pytest.MarkDecorator:
    return pytest.mark.finding(fid, reason=reason + band_note(divides_by_ceiling),
                               expected=band(ratio, divides_by_ceiling), hardware=cards,
                               band_from="other-runs",  # the first run's ratio; the suite judges the newest run
                               **({"quantity": quantity} if quantity else {}))


PRICES_TOO_HIGH = (
    "The pre-registration carried the RTX 4090's cycle prices per load instruction to the H200. s2 (2 global loads "
    "per FMA, L1 hit 95%) runs at 2.92 SM-cycles per warp-FMA, not 3.88 (1.46 per load, not 1.94); s3 (1 distinct + "
    "1 broadcast shared load + 1/16 global load per FMA, MIO-queue stalls) at 1.93, not 3.34: the H200's L1 and "
    "shared-memory pipes deliver more per SM-cycle than the 4090's. Both rungs run at 99.6-99.8% occupancy, so the "
    "prices are pipe throughputs, not latencies.")
LATENCY_BOUND_GEMM = (
    "s5-s7 are not bound by load instructions but by issue latency at low occupancy. Registers cap residency: s5/s6 "
    "(128/121 registers x 256 threads) hold 2 blocks = 16 warps per SM, s7 (181 x 128 threads) 2 blocks = 8 warps. "
    "ncu: issue slots 57% / 52% / 37% busy, a warp issuing every 6.7 / 7.1 / 5.2 cycles, so 4 (s5/s6) or 2 (s7) "
    "warps per scheduler cannot fill the FMA pipe; s7's 8x4 sub-tiles leave too little independent work per warp "
    "and its k-loop waits on un-overlapped global loads (long-scoreboard the top stall). cuBLAS's fp32 kernel "
    "(sm80_xmma 256x128x8, 3 stages, 254 registers) has the same 12.5% occupancy yet issues 86% of slots at 2.2 "
    "cycles per instruction: software pipelining, which no rung here has. Measured "
    + " / ".join(f"{sgemm_tflops(r):.1f}" for r in FP32_RUNGS)
    + f" TFLOP/s against cuBLAS's {sgemm_tflops('s0-cublas'):.1f} (first H200 run).")
MMA_SYNC = (
    f"mma.sync.m16n8k16 with 32-bit fragment loads reaches {sgemm_tflops('s8-bf16-mma'):.0f} TFLOP/s, "
    f"{sgemm_ms('s0-cublas-bf16') / sgemm_ms('s8-bf16-mma'):.1%} of cuBLAS bf16 ({sgemm_ms('s0-cublas-bf16'):.3f} ms "
    "in the first H200 run, an nvjet "
    "wgmma kernel with TMA: 90% SM throughput at 15% occupancy). The rung: 24% occupancy (124 registers), SM "
    "throughput 52%, a warp issuing every 10.1 cycles: fragments come from shared memory through the load pipe "
    "each k-step, no asynchronous copy pipeline overlaps them, and mma.sync issues from the warp rather than "
    "the warpgroup. The pre-registration (0.45 ms, ~45% of cuBLAS) assumed the tensor pipe would be the limit.")
TREE_BOUND = (
    "r1-r4 launch one block per 256 (r1/r2) or 512 (r3/r4) elements: 1,048,576 or 524,288 blocks, each a shared-"
    "memory tree of 8 barrier steps. ncu: SM throughput 59-77%, DRAM throughput 19-50%, ~29 cycles between a "
    "warp's instructions at 73-86% occupancy: the tree, not DRAM, sets the time. r2 (sequential addressing, no "
    f"modulo, no bank conflicts) is no faster than r1 ({reduction_ms('r2-sequential'):.2f} vs "
    f"{reduction_ms('r1-interleaved'):.2f} ms in the first H200 run, both 28.7 cycles per instruction): on the "
    "H200 the barrier steps and their latency dominate, not the divergent modulo the 4090-style prediction priced.")
BYTES_IN_FLIGHT = (
    "r5/r6 are latency-bound, not bandwidth-bound: 1,056 blocks x 256 threads = 2,048 threads per SM at 99% "
    "occupancy, each with one 4-byte load in flight (ncu: 92 cycles of long-scoreboard stall per instruction, DRAM "
    "throughput 53%). Little's law: 132 x 2,048 x 4 B = 1.08 MB in flight / 2.54 TB/s achieved = 426 ns of loaded "
    f"DRAM latency. r7's float4 loads put 4.3 MB in flight and reach 92.5% of DRAM (ncu; "
    f"{reduction_ms('r7-vectorized'):.3f} ms in the first H200 run). The 4090 reached 95% "
    "with r5's pattern because its bandwidth x latency product is ~4x smaller (1 TB/s).")
TWO_PASS_APPLY = (
    "n1's second kernel (rmsnorm_apply: 14 x 8,192 blocks of 256 threads, one element each) reaches only 48% of "
    "DRAM throughput at 73% occupancy (93.5 us of the 125.6 us); the 1/rms pass runs at 78%. The bytes are right "
    "(ncu: 235 MB read, two passes, as the ledger says): the short blocks, not the byte count, miss the bandwidth.")
SHORT_ROWS = (
    "At 8,192 x 2,048 the fused softmax rungs are instruction-bound, not DRAM-bound: ncu shows issue slots 64-84% "
    "busy (x2 76%, x3 84%, x4 64%) with DRAM throughput 53-57%. A 2,048-float row gives each of a block's 256 threads "
    "8 elements, so the two block-wide reductions per row (max and sum: warp shuffles, a barrier, a shared-memory "
    "exchange) and the exp per element are amortised over very little data; torch's warp-per-row kernel takes 38.6 "
    f"us under ncu against 41.9-44.2 us ({min(_SHORT_ROW_US):.1f}-{max(_SHORT_ROW_US):.1f} us in the first H200 "
    "timing run). x1 adds a third pass whose normalising kernel (8 x 8,192 blocks) runs at 41% of DRAM "
    "(58.8 of 95.6 us); its DRAM reads are the ledger's three passes (201 MB): nothing of the 67 MB input stayed in "
    "L2 between kernels, as its pre-registration had hoped. The bytes match the ledger (test_kernels_h200_counters).")
VOCAB_FASTER = (
    "At 128 x 152,064 the pre-registration expected one block per row on 132 SMs to be far below bandwidth; it is "
    "below, but less than feared: x1's two row kernels (128 blocks, 12% occupancy) still reach 51-55% of DRAM "
    f"throughput and its normalising kernel (594 x 128 blocks) 45%, {softmax_s('x1-three-pass', '128x152064') * 1e3:.3f}"
    f" ms in all; x2 reaches 24% ({softmax_s('x2-online', '128x152064') * 1e3:.3f} ms, first H200 run) while "
    "reading every row twice (the rows in flight exceed L2: h200-online-softmax-vocab-rereads-dram). With long rows a "
    "block keeps many independent loads in flight, which short-row intuition (from 8 elements per thread) misses.")
REQUEST_PRICE = (
    "The request price is fitted on s2 (2 requests per warp-FMA, 1.46 cycles each), but s2 is not request-bound: "
    "ncu shows it waiting on load latency (33 cycles per instruction, 47% issue). s1 is: LG-queue stalls of 358 "
    "cycles per instruction, 33 distinct lines per warp load at 99.2% L1 hit, 33.6 SM-cycles per warp-FMA = 1.02 "
    "cycles per request. The ledger's premise holds for s1 (time proportional to requests, ~1 per cycle per SM); "
    "its price, taken from a rung another limit binds, is 43% too high.")
INSTRUCTION_LEDGER = (
    "The instruction ledger prices load instructions only (fitted on s2-s4: lds_distinct 0.95, lds_broadcast 0.89, "
    "ldg 1.46 cycles per warp-FMA), so for s5-s7, which issue 1/16-1/8 of a load per FMA, it predicts less time "
    "than the FMAs themselves take (s6: 0.52 ms, under the 2.05 ms fp32 floor). What binds them is issue latency at "
    "8-16 warps per SM (h200-sgemm-latency-bound-low-occupancy), which the ledger has no term for. The seed's "
    "4090 ledger failed the same rungs for a related reason (128-bit shared loads unpriced).")


# (finding id, reason, observed measured/predicted) per test and rung; the ratio is the first run's
PREREGISTERED: dict[str, tuple[str, str, float]] = {
    "s2-coalesced-4096x4096x4096": ("h200-4090-load-prices-too-high", PRICES_TOO_HIGH, 0.749),
    "s3-smem-tiling-4096x4096x4096": ("h200-4090-load-prices-too-high", PRICES_TOO_HIGH, 0.587),
    "s5-2d-regtile-4096x4096x4096": ("h200-sgemm-latency-bound-low-occupancy", LATENCY_BOUND_GEMM, 1.231),
    "s6-vectorized-4096x4096x4096": ("h200-sgemm-latency-bound-low-occupancy", LATENCY_BOUND_GEMM, 1.343),
    "s7-warptiling-4096x4096x4096": ("h200-sgemm-latency-bound-low-occupancy", LATENCY_BOUND_GEMM, 2.024),
    "s8-bf16-mma-4096x4096x4096": ("h200-mma-sync-below-wgmma", MMA_SYNC, 1.244),
    "r1-interleaved-n268435456": ("h200-reduction-tree-bound", TREE_BOUND, 1.311),
    "r2-sequential-n268435456": ("h200-reduction-tree-bound", TREE_BOUND, 2.081),
    "r3-first-add-n268435456": ("h200-reduction-tree-bound", TREE_BOUND, 1.918),
    "r4-unrolled-warp-n268435456": ("h200-reduction-tree-bound", TREE_BOUND, 1.540),
    "r5-grid-stride-n268435456": ("h200-reduction-bytes-in-flight", BYTES_IN_FLIGHT, 1.628),
    "r6-warp-shuffle-n268435456": ("h200-reduction-bytes-in-flight", BYTES_IN_FLIGHT, 1.660),
    "n1-two-pass-8192x3584": ("h200-rmsnorm-two-pass-apply-kernel", TWO_PASS_APPLY, 1.420),
    "x1-three-pass-8192x2048": ("h200-softmax-short-rows-instruction-bound", SHORT_ROWS, 1.623),
    "x2-online-8192x2048": ("h200-softmax-short-rows-instruction-bound", SHORT_ROWS, 1.241),
    "x3-registers-8192x2048": ("h200-softmax-short-rows-instruction-bound", SHORT_ROWS, 1.377),
    "x4-vectorized-8192x2048": ("h200-softmax-short-rows-instruction-bound", SHORT_ROWS, 1.342),
    "x1-three-pass-128x152064": ("h200-softmax-vocab-rows-faster-than-feared", VOCAB_FASTER, 0.530),
    "x2-online-128x152064": ("h200-softmax-vocab-rows-faster-than-feared", VOCAB_FASTER, 0.622),
}
X4_FLOOR_RATIO = 1.440  # x4's measured / DRAM-byte floor at 8192 x 2048, first run
# measured / DRAM-byte floor of test_streaming_floor (the same causes, against the floor)
STREAMING_FLOOR: dict[str, tuple[str, str, float]] = {
    "r1-interleaved": ("h200-reduction-tree-bound", TREE_BOUND, 4.846),
    "r2-sequential": ("h200-reduction-tree-bound", TREE_BOUND, 4.701),
    "r3-first-add": ("h200-reduction-tree-bound", TREE_BOUND, 2.532),
    "r4-unrolled-warp": ("h200-reduction-tree-bound", TREE_BOUND, 1.842),
    "r5-grid-stride": ("h200-reduction-bytes-in-flight", BYTES_IN_FLIGHT, 1.753),
    "r6-warp-shuffle": ("h200-reduction-bytes-in-flight", BYTES_IN_FLIGHT, 1.753),
    "n1-two-pass": ("h200-rmsnorm-two-pass-apply-kernel", TWO_PASS_APPLY, 1.536),
    "x1-three-pass": ("h200-softmax-short-rows-instruction-bound", SHORT_ROWS, 1.536),
    "x2-online": ("h200-softmax-short-rows-instruction-bound", SHORT_ROWS, 1.410),
    "x3-registers": ("h200-softmax-short-rows-instruction-bound", SHORT_ROWS, 1.478),
    "x4-vectorized": ("h200-softmax-short-rows-instruction-bound", SHORT_ROWS, X4_FLOOR_RATIO),
}
INSTRUCTION_HELD_OUT: dict[str, float] = {"s5-2d-regtile": 2.138, "s6-vectorized": 8.547, "s7-warptiling": 15.018}


FP32_BELOW_TARGET = (
    f"The best fp32 rungs (s5 2D register tiling, s6 vectorized: {_BEST_FP32:.2f} ms in the first H200 run) reach "
    f"{sgemm_ms('s0-cublas') / _BEST_FP32:.1%} of cuBLAS fp32 ({sgemm_ms('s0-cublas'):.2f} ms), under the 90% target; "
    "s7 (warp tiling), pre-registered at 3.0 ms = 90-93% of cuBLAS, is the slowest of the three at "
    f"{sgemm_ms('s0-cublas') / sgemm_ms('s7-warptiling'):.0%} ({sgemm_ms('s7-warptiling'):.2f} ms). " + LATENCY_BOUND_GEMM)
BYTE_LEDGER_EXCEEDED = (
    "Pre-registered at {prereg:.2f}x its issued-byte roofline ({prereg_ms} ms); measured {observed:.2f}x "
    "({measured_ms:.1f} ms, first H200 run). The coalesced "
    "rung issues 2 loads per FMA, 550 GB if every load reached DRAM, but ncu counts 4.26 GB of DRAM reads: L1 serves "
    "95% of the loads and L2 60% of the rest. The 'arithmetic intensity' of the textbook roofline counts cache hits "
    "as DRAM traffic, as K2 did on the 4090.")

# Tests with one case per target: (finding id, reason, observed measured/predicted).
TENSOR_CORE_TARGET_RATIO = 2.540  # s8 / (cuBLAS bf16 / 0.80), first run; test_kernel_findings_reasons recomputes it
SINGLE: dict[str, tuple[str, str, float]] = {
    "test_sgemm_request_ledger_naive": ("h200-request-price-from-a-latency-bound-rung", REQUEST_PRICE, 0.698),
    "test_best_fp32_rung_vs_cublas": ("h200-fp32-below-cublas-target", FP32_BELOW_TARGET, 1.483),
    "test_tensor_core_rung_vs_cublas_bf16": ("h200-mma-sync-below-wgmma", MMA_SYNC + " Target 80%: measured/target "
                                             f"time {TENSOR_CORE_TARGET_RATIO:.2f}.", TENSOR_CORE_TARGET_RATIO),
}
STREAMING_TARGET: dict[str, tuple[str, str, float]] = {
    "x4-vectorized": ("h200-softmax-short-rows-instruction-bound",  # reached: floor / measured = 1 / ratio
                      SHORT_ROWS + f" Target 92% of the copy bandwidth: reached {1 / X4_FLOOR_RATIO:.0%}.",
                      X4_FLOOR_RATIO),
}
BYTE_LEDGER: dict[str, float] = {"s2-coalesced": 5.159}  # measured / issued-byte roofline
INSTRUCTION_HELD_OUT_TABLE: dict[str, tuple[str, str, float]] = {
    rung: ("h200-instruction-ledger-no-latency-term", INSTRUCTION_LEDGER, ratio)
    for rung, ratio in INSTRUCTION_HELD_OUT.items()}

# --- rungs written after the first two runs (s9, s10): bands from the mechanism or the pre-registration ---------
# Their first run (2026-12-01 11:09, with Nsight Compute counters at 11:11) came after the ratios above were taken,
# so their bands are not an observed ratio: each is what the mechanism the reason names allows, computed from the
# pre-registration, the issue ledger's fit and the earlier rungs' first-run times (test_kernel_findings_reasons and
# test_kernels_issue_ledger recompute them), never from the time being checked.
NEW_RUNGS_PROFILE = "2026-12-01T11:11:38Z"
# The ladders' 15% goal for a pre-registered time: since 2026-12-04 no longer its tolerance (kernel_budget: measured
# noise), but still the edge of the bands below whose findings say a rung missed that goal.
PREREG_ACCEPT = 0.15
S9_PREREG_MS, S10_PREREG_MS = 2.9, 0.34  # the headers' pre-registered 4096^3 times (never edited)
# The issue ledger's time with its latency term removed (c = c0: a pipeline that hides every staged load), over its
# time with the fitted term, for s9 (ilp 64, 16 warps per SM): min(4, 16 / c0) over min(4, 16 / (c0 + L / 64)).
ISSUE_LEDGER_NO_LATENCY_RATIO = {"s9-cp-async-pipeline": 0.5772}


def ncu_metric(rung: str, metric: str, profiled_at: str = NEW_RUNGS_PROFILE) -> float:
    """One Nsight Compute counter of a 4096^3 SGEMM rung from the profile a reason quotes; NaN where absent."""
    path = RESULTS / f"ncu.sgemm.{rung}.{SGEMM_SHAPE}@{_stamp(profiled_at)}.json"
    if not path.exists():
        return float("nan")
    return float(json.loads(path.read_text())["data"]["kernels"][0]["metrics"][metric])


_CPI = "Warp Cycles Per Issued Instruction"
ISSUE_LEDGER_WITHOUT_PIPELINE = (
    "The issue ledger's latency term was fitted on s5-s7, whose k-loops wait on staged global loads between "
    "barriers; s9 overlaps the next tile's cp.async copies with this tile's FMAs, so its warps wait less per "
    f"instruction: ncu counts {ncu_metric('s9-cp-async-pipeline', _CPI):.2f} warp cycles per issued instruction where "
    f"the fitted c0 + L / ilp says 6.93, and {ncu_metric('s9-cp-async-pipeline', 'Executed Ipc Active'):.2f} "
    "instructions per cycle where the ledger says 2.31. The pre-registration's note named this miss before the "
    "run. Band: between the ledger with no latency term at all (every load hidden: "
    f"{ISSUE_LEDGER_NO_LATENCY_RATIO['s9-cp-async-pipeline']:.3f}x) and the ledger as fitted (1.0x).")
LDMATRIX_KEPT_THE_COUNT = (
    f"s10 (ldmatrix.x4 fragments, three cp.async stages) was pre-registered at {S10_PREREG_MS} ms = s8's time x 0.63, "
    "the share of s8's instructions per mma the header counted it would still issue, at s8's pace. The pace did "
    f"improve ({ncu_metric('s10-bf16-ldmatrix', _CPI):.1f} warp cycles per issued instruction against s8's "
    f"{ncu_metric('s8-bf16-mma', _CPI):.1f} in the same profile; "
    f"{ncu_metric('s10-bf16-ldmatrix', 'Executed Ipc Active'):.2f} against "
    f"{ncu_metric('s8-bf16-mma', 'Executed Ipc Active'):.2f} instructions per cycle), but time = instructions / rate "
    "puts s10's executed instructions at about s8's: the per-tile count the header made from the static loop body "
    "is not what runs (address arithmetic and the stage bookkeeping of a three-stage ring). Band: between the "
    f"pre-registration (1.0x) and no gain over s8 at all (s8's first-run {sgemm_ms('s8-bf16-mma'):.4f} ms / "
    f"{S10_PREREG_MS} ms).")
_FP32_TARGET_MS = sgemm_ms("s0-cublas") / 0.9
_BF16_TARGET_MS = sgemm_ms("s0-cublas-bf16") / 0.8
FP32_S9_BELOW_TARGET = (
    "The best fp32 rung is now s9 (cp.async two-stage pipeline), pre-registered at "
    f"{S9_PREREG_MS} ms = {S9_PREREG_MS / _FP32_TARGET_MS:.3f}x the 90%-of-cuBLAS target time "
    f"({_FP32_TARGET_MS:.3f} ms from the first run's cuBLAS fp32): within its 15% it could land either side of the "
    "target, and it lands above it. " + LATENCY_BOUND_GEMM.split(" Measured")[0].split("software pipelining")[0]
    + "software pipelining, which s9 now has, with fewer stages (2) and more registers per thread "
    f"(ncu: {ncu_metric('s9-cp-async-pipeline', 'Issue Slots Busy'):.0f}% of issue slots busy against cuBLAS's 86%). "
    "Band: s9's pre-registration +-15%, in target units.")
TC_S10_BELOW_TARGET = (
    MMA_SYNC + f" s10 (ldmatrix, three stages) closes part of the gap: pre-registered at {S10_PREREG_MS} ms = "
    f"{S10_PREREG_MS / _BF16_TARGET_MS:.2f}x the 80%-of-cuBLAS target time ({_BF16_TARGET_MS:.4f} ms), short of it "
    "by design (80% needs wgmma). Band: from s10's pre-registration -15% to s8's first-run ratio to the target "
    f"({TENSOR_CORE_TARGET_RATIO:.2f}x: the best rung is never slower than s8).")
BANDED: dict[str, dict[str, tuple[str, str, tuple[float, float]]]] = {
    "issue_preregistered": {
        f"s9-cp-async-pipeline-{shape}": ("h200-issue-ledger-without-the-pipeline", ISSUE_LEDGER_WITHOUT_PIPELINE,
                                          (ISSUE_LEDGER_NO_LATENCY_RATIO["s9-cp-async-pipeline"], 1.0))
        for shape in ("4096x4096x4096", "2048x18944x3584", "32x18944x3584")},
    "preregistered": {
        "s10-bf16-ldmatrix-4096x4096x4096": ("h200-ldmatrix-kept-the-instruction-count", LDMATRIX_KEPT_THE_COUNT,
                                             (1.0, round(sgemm_ms("s8-bf16-mma") / S10_PREREG_MS, 4)))},
    "single": {
        "test_best_fp32_rung_vs_cublas": ("h200-fp32-below-cublas-target", FP32_S9_BELOW_TARGET,
                                          (round(S9_PREREG_MS * (1 - PREREG_ACCEPT) / _FP32_TARGET_MS, 4),
                                           round(S9_PREREG_MS * (1 + PREREG_ACCEPT) / _FP32_TARGET_MS, 4))),
        "test_tensor_core_rung_vs_cublas_bf16": ("h200-mma-sync-below-wgmma", TC_S10_BELOW_TARGET,
                                                 (round(S10_PREREG_MS * (1 - PREREG_ACCEPT) / _BF16_TARGET_MS, 4),
                                                  TENSOR_CORE_TARGET_RATIO))},
}


# --- the first run of x6, s11, s12 and the fp32 autotuner (2026-12-01 21:51) -------------------------------------
# None of these rungs or candidates had run before, so no band is a ratio of theirs: each comes from the mechanism's
# own arithmetic, from the pre-registration's acceptance edge, or from other rungs' times recorded in the 11:09 run
# (a different session from the one judged), widened by the measured noise (spread_terms) where it compares runs.
NEW_RUNGS_RUN = "2026-12-01T11:09:05Z"  # s9/s10's first run: the other rungs' times the bands read
KERNEL_RUN_2151 = "2026-12-01T21:51:10Z"  # the run the reasons below describe (results/h200/batches/20261201T215110Z)
VOCAB = "128x152064"
SHORT_ROW = "8192x2048"
FFN_SHAPES = ("2048x18944x3584", "32x18944x3584")


def run_s(name: str, recorded_at: str) -> float:
    """One recording's time (s) from the run stamped `recorded_at`; NaN where this checkout lacks it."""
    path = RESULTS / f"{name}@{_stamp(recorded_at)}.json"
    if not path.exists():
        return float("nan")
    return float(json.loads(path.read_text())["measurements"]["time"]["value"])


def run_ms(name: str, recorded_at: str = KERNEL_RUN_2151) -> float:
    return run_s(name, recorded_at) * 1e3


def ceiling_at(kind: str, recorded_at: str) -> float:
    path = RESULTS / f"kernels-ceilings@{_stamp(recorded_at)}.json"
    if not path.exists():
        return float("nan")
    return float(json.loads(path.read_text())["measurements"][f"{kind}_bandwidth"]["value"])


def _prereg(rung: str, label: str) -> float:
    return sgemm.MMA_ISSUE_PREREGISTERED[(rung, label)]


def _x6_prereg_ms(label: str) -> float:
    x6 = next(v for v in fused.SOFTMAX if v.id == "x6-cluster-row")
    m, n = (int(x) for x in label.split("x"))
    ms = x6.preregistered_ms({"M": m, "N": n})
    assert ms is not None
    return ms


SGEMM_SHAPES = (SGEMM_SHAPE, *FFN_SHAPES)
_S10_MS = {lab: run_ms(f"sgemm.s10-bf16-ldmatrix.{lab}", NEW_RUNGS_RUN) for lab in SGEMM_SHAPES}
_S11_MS = {lab: run_ms(f"sgemm.s11-bf16-warp64.{lab}") for lab in SGEMM_SHAPES}
_S12_MS = {lab: run_ms(f"sgemm.s12-bf16-wgmma.{lab}") for lab in SGEMM_SHAPES}


def _ms_list(times: dict[str, float], labels: tuple[str, ...] = SGEMM_SHAPES) -> str:
    return ", ".join(f"{lab} {times[lab]:.4f} ms" for lab in labels)


WARP64_KEPT_S10S_TIME = (
    "s11 (64 x 64 warp tiles, both k-steps' fragments loaded first, addresses as immediate offsets) was "
    "pre-registered by the mma issue ledger at "
    + ", ".join(f"{lab} {_prereg('s11-bf16-warp64', lab)} ms" for lab in SGEMM_SHAPES)
    + ": its compiled loop issues 2.6 instructions per mma against s10's 4.9, so at the ledger's pace it should "
    f"take ~0.66x s10's time. It ran {_ms_list(_S11_MS)} (21:51 run): s10's time (11:09 run: {_ms_list(_S10_MS)}) "
    "to within the two runs' noise, with about half s10's instructions per mma. The hypothesis behind the "
    "prediction, that s10 is bound by how many instructions it issues, is falsified: halving them changed nothing, "
    "so something the two rungs share sets their time. They share the 128 x 128 x 32 block tile, the three-stage "
    "cp.async ring with one barrier per k-tile, the XOR swizzle and the mma.sync path; which of these binds is not "
    "established (no Nsight Compute profile of s11 was taken: the 21:51 call had no time for it). Band: the same "
    f"bound as s10, s10's 11:09 times over s11's pre-registration, +-{spread():.1%} (the measured noise terms, "
    "spread_terms: timing blocks and the session drift of rung 0).")

# --- the fourth visit (2026-12-02 00:00-00:20): live pytest runs and an Nsight Compute profile of every rung -------
LIVE_RUNS_0202 = ("2026-12-02T00:12", "2026-12-02T00:17")  # the catalog- and NVML-spec live sessions' kernel runs
LIVE_RUNS_0240 = ("2026-12-02T02:40", "2026-12-02T02:46")  # the fifth visit's two live sessions' kernel runs
LIVE_RUNS_0457 = ("2026-12-02T04:57", "2026-12-02T05:01")  # the sixth visit's, the first with the SM clock probe
PROFILE_0018 = "20261202T001813Z"  # results/h200/batches/<this>/ncu.csv.xz: the raw Nsight Compute export
HAND_TENSOR_CORE_KERNELS = ("sgemm_bf16_mma", "sgemm_bf16_ldmatrix", "sgemm_bf16_warp64", "sgemm_bf16_wgmma")


def boost_clock_hz() -> float:
    """The catalog's boost clock of the card these findings are of: the clock the issue ledger prices."""
    from pytest_anatomy.specs.hardware import get_hardware

    hz = get_hardware(MEASURED_ON).boost_clock_hz
    assert hz is not None, f"the catalog has no boost clock for {MEASURED_ON}"
    return hz


def _live_recording(name: str, prefix: str) -> dict | None:
    """A rung's recording (the JSON document) in the live run whose recordings are stamped `prefix...`; None where absent."""
    paths = sorted(RESULTS.glob(f"{name}@{_stamp(prefix)}*.json"))
    return json.loads(paths[-1].read_text()) if paths else None


def _live_measurements(name: str, prefix: str) -> dict | None:
    """The measurements of a rung in the live run whose recordings are stamped `prefix...`; None where absent."""
    doc = _live_recording(name, prefix)
    return doc["measurements"] if doc else None


def live_probe_mhz(name: str, prefix: str) -> list[float]:
    """The SM clock probe's readings (MHz, measure/clock_probe.py) right behind a rung's two timing blocks in the live
    run stamped `prefix...`; empty where the run or the probe is absent."""
    doc = _live_recording(name, prefix)
    clocks = doc["data"].get("clocks", {}) if doc else {}
    return [c["probe_sm_mhz"] for c in (clocks.get(k) or {} for k in ("time", "time_repeat"))
            if c.get("probe_sm_mhz") is not None]


def live_ms(name: str, prefix: str) -> float:
    """A rung's time (ms) in the live run stamped `prefix...`; NaN where absent."""
    m = _live_measurements(name, prefix)
    return m["time"]["value"] * 1e3 if m else float("nan")


def ncu_profile_path(batch: str = PROFILE_0018) -> Path:
    """The raw Nsight Compute export a profile batch kept (clocks uncontrolled, --clock-control none)."""
    return RESULTS.parent / "batches" / batch / "ncu.csv.xz"


@functools.cache
def ncu_sm_frequency_hz(batch: str = PROFILE_0018) -> dict[str, float]:
    """The lowest 'SM Frequency' each kernel ran at in a profile, read from its imported recordings
    (results/<hw>/kernels/ncu.*@<batch>.json): the clock a kernel actually ran at, independent of any timing run.
    The imported recordings, not the raw export under batches/, because they are what a live session's checkout
    holds: a device call carries the tree without the batch folders (64 MiB), and on 2026-12-02 the finding built
    from the raw export had a NaN band edge there."""
    out: dict[str, float] = {}
    for path in sorted(RESULTS.glob(f"ncu.*@{batch}.json")):
        for k in json.loads(path.read_text())["data"]["kernels"]:
            hz = k["metrics"].get("SM Frequency")
            if isinstance(hz, float):
                out[k["name"]] = min(hz, out.get(k["name"], hz))
    return out


def tensor_core_clock_drop() -> float:
    """The boost clock over the lowest clock a hand tensor-core rung ran at in the 00:18 profile: how much
    slower a clock-bound rung can be than at the clock its pre-registration priced, measured apart. Raises where
    the profile's recordings are missing, so a band is never built on a NaN."""
    freqs = ncu_sm_frequency_hz()
    lows = [freqs[k] for k in HAND_TENSOR_CORE_KERNELS if k in freqs]
    if not lows:
        raise FileNotFoundError(f"no Nsight Compute recordings {RESULTS}/ncu.*@{PROFILE_0018}.json with the hand "
                                "tensor-core rungs' SM Frequency: restore them from git (results/ is committed)")
    return boost_clock_hz() / min(lows)


def _block_step(name: str, prefix: str) -> float:
    """|time / time_repeat - 1| of a live run's two timing blocks of one rung."""
    m = _live_measurements(name, prefix)
    return abs(m["time"]["value"] / m["time_repeat"]["value"] - 1) if m else float("nan")


def _warp64_live() -> str:
    lab = FFN_SHAPES[1]
    name = f"sgemm.s11-bf16-warp64.{lab}"
    live = [live_ms(name, run) for run in LIVE_RUNS_0202]
    big = FFN_SHAPES[0]
    big_live = [live_ms(f"sgemm.s11-bf16-warp64.{big}", run) for run in LIVE_RUNS_0202 + LIVE_RUNS_0240]
    freqs = ncu_sm_frequency_hz()
    tc = [freqs.get(k, float("nan")) / 1e6 for k in HAND_TENSOR_CORE_KERNELS]
    drop = tensor_core_clock_drop()
    return (
        f" In the two live sessions of 2026-12-02 00:12/00:17 s11 ran {' / '.join(f'{x:.4f}' for x in live)} ms at {lab} "
        f"({live[0] / _S11_MS[lab]:.2f}x its 21:51 time), while its 4096^3 time held within 1%; the live runs' 30 "
        f"samples sit on levels {_block_step(name, LIVE_RUNS_0202[0]):.1%} apart (the first run's two timing blocks) "
        "and step between them inside one block of the second, the signature of an "
        "SM clock change, not of the kernel. Nsight Compute (00:18, clocks uncontrolled) shows the hand tensor-core "
        f"rungs s8/s10/s11/s12 running at {' / '.join(f'{x:.0f}' for x in tc)} MHz where fp32 rungs run at ~1,980 MHz: "
        "bf16 MMA load lowers the clock, and the ledger prices the 1.98 GHz boost. At 32 rows (148 blocks on 132 SMs, "
        "latency-bound) the time follows the clock the previous, power-hungry shape left behind. The other way at "
        f"{big}: the four live sessions ran s11 at {' / '.join(f'{x:.4f}' for x in big_live)} ms, the last two "
        f"{1 - big_live[-1] / _S10_MS[big]:.0%} under s10's 11:09 time, with NVML reading the boost clock before, "
        "during and after every block (NVML's SM clock is not the clock the kernels run at under MMA load, so it "
        f"cannot say which clock a block ran at): s10's time at the boost clock instead of its profiled {tc[1]:.0f} MHz would be "
        f"{_S10_MS[big] * tc[1] / (boost_clock_hz() / 1e6):.4f} ms. The timing neither controls nor observes the "
        "clock under load, and the reference (s10's plan-run time) and the session judged may each have run anywhere "
        "between the lowest profiled tensor-core clock and the boost. Band: s10's 11:09 time over the pre-registration "
        f"+-{spread():.1%} (noise), times the measured clock range both ways, x1/{drop:.3f} to x{drop:.3f} "
        f"({boost_clock_hz() / 1e6:.0f} MHz / the lowest tensor-core rung clock in that profile). An in-kernel clock "
        "reading per timing block would narrow it to the noise (docs/RECORDING.md, the fifth visit). Since the sixth "
        "visit the SM clock probe reads one behind each block: where a run's reading (run_clock_hz) lies below that "
        "profile's lowest clock, its band's upper edge takes that run's own slowdown, boost / its clock, instead "
        "(warp64_band_at_its_clock, set at test time): the fourteenth visit's NVML session (2026-12-03 12:16) ran s11 at "
        "32 rows at a 1,560 MHz probe reading (NVML 1,680 MHz), after the power-capped FFN shapes, in 0.1216 ms.")


WGMMA_FFN = (
    "s12 (wgmma from swizzled shared memory, cp.async three stages, no TMA) was pre-registered at "
    + ", ".join(f"{lab} {_prereg('s12-bf16-wgmma', lab)} ms" for lab in SGEMM_SHAPES)
    + f" and ran {_ms_list(_S12_MS)} (21:51 run): inside the 15% at 4096^3 "
    f"({_S12_MS[SGEMM_SHAPE] / _prereg('s12-bf16-wgmma', SGEMM_SHAPE):.2f}x), above it at the two FFN shapes ("
    + ", ".join(f"{_S12_MS[lab] / _prereg('s12-bf16-wgmma', lab):.2f}x" for lab in FFN_SHAPES)
    + "). The ledger scales the time from 4096^3 to 2048 x 18944 x 3584 by waves x k-tiles "
    f"({_prereg('s12-bf16-wgmma', FFN_SHAPES[0]) / _prereg('s12-bf16-wgmma', SGEMM_SHAPE):.2f}x); s10 scaled by "
    f"{_S10_MS[FFN_SHAPES[0]] / _S10_MS[SGEMM_SHAPE]:.2f}x between the same shapes (11:09 run), so the extra cost "
    "of the FFN shapes is not s12's own: something the issue ledger does not count grows with the shape. A "
    "candidate, not established: B is 3584 x 18944 bf16 = 136 MB, over the 60 MB L2, so the 16 row tiles of the "
    "2,048-row GEMM re-read it from DRAM in a way 4096^3's 64 MB of operands do not. At 32 rows a 128-row tile also "
    "computes 4x the rows. No Nsight Compute profile of s12 exists yet. Band: from the pre-registration (1.0x: "
    "wgmma's issue savings fully realised) to no slower than the mma.sync rung it replaces (s10's 11:09 time at the "
    f"shape over s12's pre-registration, +{spread():.1%} measured noise); it straddles the 15% acceptance edge, so "
    "the finding is strict=False.")

_X6_SHORT_MS, _X6_VOCAB_MS = run_ms(f"softmax.x6-cluster-row.{SHORT_ROW}"), run_ms(f"softmax.x6-cluster-row.{VOCAB}")
_X5_SHORT_MS = run_ms(f"softmax.x5-warp-row.{SHORT_ROW}")
_TORCH_VOCAB_1109_MS = run_ms(f"softmax.x0-torch.{VOCAB}", NEW_RUNGS_RUN)
_TORCH_VOCAB_MS = run_ms(f"softmax.x0-torch.{VOCAB}")
_SHORT_BYTES = 2 * 4 * fused.SOFTMAX_TIMING_SHAPE["M"] * fused.SOFTMAX_TIMING_SHAPE["N"]  # one read, one write
_VOCAB_BYTES = 2 * 4 * fused.VOCAB_SHAPE["M"] * fused.VOCAB_SHAPE["N"]
_COPY_1109, _READ_1109 = ceiling_at("copy", NEW_RUNGS_RUN), ceiling_at("read", NEW_RUNGS_RUN)
STREAM_ORDER_OF_MAGNITUDE = 10.0  # test_streaming_floor's bound on a rung without a pre-registration: 10x its floor
_X6_CLUSTERS = fused.SOFTMAX_TIMING_SHAPE["M"]
CLUSTER_ROW_SHORT_ROWS = (
    f"x6 at 8,192 x 2,048 was pre-registered at {_x6_prereg_ms(SHORT_ROW):.3f} ms and ran {_X6_SHORT_MS:.4f} ms "
    f"(21:51 run), {_X6_SHORT_MS / _x6_prereg_ms(SHORT_ROW):.1f}x, against x5's {_X5_SHORT_MS:.4f} ms in the same "
    f"run. A 2,048-column row is split over a cluster of 8 one-warp blocks: {_X6_CLUSTERS:,} clusters, "
    f"{8 * _X6_CLUSTERS:,} blocks of 32 threads, each block holding 256 floats (1 KB). The header charged ~0.9 us "
    "per wave of blocks for the round trip and the cluster exchange; what came back is far more, so a per-cluster "
    "fixed cost (co-scheduling 8 blocks on one GPC, two barrier.cluster round trips, the distributed-shared-memory "
    "reads) dominates a row this short. Which part is not established: no recording measures a cluster's launch or "
    "barrier cost apart from x6 itself, and deriving it from x6's own vocabulary-row time would make the band "
    "circular. Band, wide for that reason: from the pre-registration's acceptance edge (1.15x: the miss is a miss) "
    f"to {STREAM_ORDER_OF_MAGNITUDE:g}x the rung's DRAM-byte floor (134 MB at the 11:09 run's copy bandwidth), the "
    "suite's own bound on a streaming rung an order of magnitude off its bytes (test_streaming_floor), in "
    "pre-registration units.")
CLUSTER_ROW_VOCAB = (
    f"x6 at 128 x 152,064 was pre-registered at {_x6_prereg_ms(VOCAB):.3f} ms (89% of the read ceiling on read + "
    f"write bytes, target 85%) and ran {_X6_VOCAB_MS:.4f} ms (21:51 run), "
    f"{_X6_VOCAB_MS / _x6_prereg_ms(VOCAB):.2f}x: {_VOCAB_BYTES / (_X6_VOCAB_MS * 1e-3) / ceiling_at('read', KERNEL_RUN_2151):.0%} of "
    f"that run's read ceiling, short of the 85% target, yet {_TORCH_VOCAB_MS / _X6_VOCAB_MS:.1f}x faster than torch's "
    f"softmax ({_TORCH_VOCAB_MS:.4f} ms in the same run): one DRAM read and one write per element hold, the time "
    "above the bytes does not. The header priced 3.9 waves x ~0.8 us exposed per wave; the excess over it is "
    "several times that, the same direction as the short rows' per-cluster cost (h200-cluster-row-short-rows-pay-"
    "per-cluster), but how much of it is the cluster exchange is not established (no Nsight Compute profile of x6 "
    "yet). Band: from the pre-registration's acceptance edge (1.15x) to torch's time at this shape in the 11:09 "
    f"run ({_TORCH_VOCAB_1109_MS:.4f} ms: a hand rung that reads each row once is not slower than the library's), in "
    "the test's units.")


def _tile(cid: str) -> at.TileShape:
    return next(t for t, _, _ in sgemm.S9_TILE_SPACE if t.id == cid)


_S9_RUNG = "s9-cp-async-pipeline"
_S9_1109_MS = {lab: run_ms(f"sgemm.{_S9_RUNG}.{lab}", NEW_RUNGS_RUN) for lab in SGEMM_SHAPES}
_S9_OWN_TILE = "s9-tile-128x128x16-b2"


def s9_ledger_bias(label: str) -> float:
    """s9's 11:09 time over its own tile's ledger prediction (the b2 candidate is s9): the clock bias every
    candidate shares (the ledger prices the 1.98 GHz boost clock; ncu ran at 1.78 GHz)."""
    return _S9_1109_MS[label] / sgemm.S9_TILE_PREREGISTERED[(_S9_OWN_TILE, label)]


def _tile_ms(cid: str, label: str) -> float:
    return run_ms(f"sgemm.{cid}.{label}")


_S9_CPI = ncu_metric(_S9_RUNG, _CPI)


def _sm_count() -> int:
    from pytest_anatomy.specs.hardware import get_hardware

    sms = get_hardware(MEASURED_ON).sm_count
    assert sms, f"the catalog has no SM count for {MEASURED_ON}"
    return sms


def resident_warps(cid: str, label: str) -> int:
    """Warps on the busiest SM when the grid is smaller than the SMs' block slots: ceil(blocks / SMs) blocks."""
    t = _tile(cid)
    m, n, _ = (int(x) for x in label.split("x"))
    blocks = -(-m // t.bm) * -(-n // t.bn)
    w = next(w for tt, w, _ in sgemm.S9_TILE_SPACE if tt.id == cid)
    return min(w, -(-blocks // _sm_count()) * t.threads // 32)


def _ipc(warps: float) -> float:
    return min(4.0, warps / _S9_CPI)


def partial_grid_upper(cid: str, label: str) -> float:
    """The ledger at the warps the busiest SM actually holds, over the ledger at full residency, x s9's bias."""
    w = next(w for tt, w, _ in sgemm.S9_TILE_SPACE if tt.id == cid)
    return round(s9_ledger_bias(label) * _ipc(w) / _ipc(resident_warps(cid, label)), 4)


TILE_CLOCK_BIAS_AND_MORE = (
    "These candidates ran slower than the tile ledger's pre-registration by more than their noise budget (each "
    "case's numbers and budget, term by term, are in its reconciliation; the first four, 15-19% slow in the 21:51 "
    "run, were the only ones found while the 15% acceptance target was the tolerance). Part is the "
    "bias every candidate shares: s9 itself (the 128x128x16-b2 candidate) ran "
    + ", ".join(f"{s9_ledger_bias(lab):.3f}x" for lab in SGEMM_SHAPES)
    + " its ledger time at the three shapes in the 11:09 run, the ledger pricing the 1.98 GHz boost clock where ncu "
    "saw 1.78 GHz. The remaining 8-12% is not established: no candidate was profiled, and the ledger counts only the "
    "compiled loop's FFMA share and the warps per SM, not each tile's copy loop, barrier count per FMA or wave tail. "
    f"Band: from s9's 11:09 bias at the shape -{spread():.1%} measured noise (the shared part alone) to that bias "
    "+15% (the pre-registration's acceptance edge, for the candidate's own share); its lower edge reaches into the "
    "noise budget, so a session may agree: strict=False.")
_PG = (("s9-tile-64x128x16-b4", "32x18944x3584"), ("s9-tile-64x64x32-b4", "32x18944x3584"))
TILE_PARTIAL_GRID = (
    "At 32 x 18,944 x 3,584 the 64-row tiles leave the SMs part-empty: "
    + "; ".join(f"{cid.removeprefix('s9-tile-')} launches "
                f"{-(-32 // _tile(cid).bm) * -(-18944 // _tile(cid).bn)} blocks for {_sm_count()} SMs, so the busiest SM "
                f"holds {resident_warps(cid, lab)} warps where the ledger counts "
                f"{next(w for tt, w, _ in sgemm.S9_TILE_SPACE if tt.id == cid)}" for cid, lab in _PG)
    + f". At s9's counted {_S9_CPI:.2f} warp cycles per issue the ledger would halve the issue rate for half the "
    "warps; measured (21:51 run) "
    + ", ".join(f"{cid.removeprefix('s9-tile-')} {_tile_ms(cid, lab):.4f} ms against "
                f"{sgemm.S9_TILE_PREREGISTERED[(cid, lab)]} ms" for cid, lab in _PG)
    + ": slower than priced, by much less than half the warps would cost under the ledger; the one-block-per-SM "
    "candidate says the same (h200-tile-ledger-occupancy-term-overcharges). Band, wide: from s9's 11:09 bias at the "
    f"shape -{spread():.1%} (full residency, the shared clock bias only) to the ledger at the warps resident on the "
    "busiest SM times that bias; it straddles the acceptance edge, so strict=False.")
_B1 = "s9-tile-128x128x16-b1"
TILE_OCCUPANCY_OVERCHARGES = (
    "The candidate without a register cap (128x128x16, __launch_bounds__ min-blocks 1: 161 registers, one block = "
    "8 warps per SM) was pre-registered at "
    + ", ".join(f"{sgemm.S9_TILE_PREREGISTERED[(_B1, lab)]} ms" for lab in SGEMM_SHAPES)
    + " at the three shapes, twice the same tile at 16 warps (128x128x16-b2, s9 itself), because the ledger's issue "
    f"rate is min(4, W / c) with c = s9's counted {_S9_CPI:.2f} warp cycles per issue: 8 / {_S9_CPI:.2f} = "
    f"{_ipc(8):.2f} per cycle against 16 / {_S9_CPI:.2f} = {_ipc(16):.2f}. It ran "
    + ", ".join(f"{_tile_ms(_B1, lab):.4f} ms" for lab in SGEMM_SHAPES)
    + " (21:51 run), about 40% under its prediction and "
    + ", ".join(f"{_tile_ms(_B1, lab) / _tile_ms(_S9_OWN_TILE, lab):.2f}x" for lab in SGEMM_SHAPES)
    + " the b2 tile's time in the same run: halving the warps cost ~12%, not 2x. The likely mechanism, not "
    "established (no profile of the candidate): s9's counted pace is not a latency. ncu saw s9's issue slots "
    f"{ncu_metric(_S9_RUNG, 'Issue Slots Busy'):.0f}% busy with 4 warps per scheduler, so most of a warp's "
    f"{_S9_CPI:.2f} cycles between issues is waiting behind the other three warps for the slot, a wait that shrinks "
    "with fewer warps; the ledger's refit (L from s9's counted pace) books it as latency, which then charges every "
    "missing warp in full. Band: from 'one block per SM costs nothing' (s9's 11:09 time at the shape over this "
    f"candidate's prediction, -{spread():.1%} measured noise) to the acceptance edge (0.85x).")
_TARGET_1109 = {lab: run_ms(f"sgemm.s0-cublas.{lab}", NEW_RUNGS_RUN) / sgemm.AUTOTUNE_TARGETS[lab]
                for lab in SGEMM_SHAPES}
_BEST_PREREG = {lab: min((ms, cid) for (cid, lb), ms in sgemm.S9_TILE_PREREGISTERED.items() if lb == lab)
                for lab in SGEMM_SHAPES}


def _choice(label: str) -> tuple[str, float, float]:
    """The 21:51 run's choice at `label`: candidate id, its time and the target time (ms) the test checks, cuBLAS
    fp32 timed beside it / the goal."""
    path = RESULTS / f"autotune.sgemm.s9-tile.{label}@{_stamp(KERNEL_RUN_2151)}.json"
    if not path.exists():
        return ("?", float("nan"), float("nan"))
    rec = json.loads(path.read_text())
    m = rec["measurements"]
    return (rec["data"]["choice"], m["time"]["value"] * 1e3,
            m["baseline_time"]["value"] * 1e3 / sgemm.AUTOTUNE_TARGETS[label])


AUTOTUNED_FP32_TARGET = (
    "The autotuner's fp32 targets for the tuned tile (sgemm.AUTOTUNE_TARGETS): 90% of cuBLAS fp32 at 4096^3, "
    "80% at the FFN shapes. The tuner "
    "(21:51 run) chose "
    + "; ".join(f"{lab}: {_choice(lab)[0].removeprefix('s9-tile-')} at {_choice(lab)[1]:.4f} ms, target "
                f"{_choice(lab)[2]:.4f} ms" for lab in SGEMM_SHAPES)
    + ". The 2,048-row FFN shape meets its target. At 4096^3 no candidate beat s9's own tile: the ledger ranked "
    f"128x256x8 first ({sgemm.S9_TILE_PREREGISTERED[('s9-tile-128x256x8-b1', SGEMM_SHAPE)]} ms) and it ran "
    f"{_tile_ms('s9-tile-128x256x8-b1', SGEMM_SHAPE):.4f} ms, so the choice is s9 and the cause is "
    "h200-fp32-below-cublas-target's (software pipelining with fewer stages and less issue than cuBLAS's kernel). "
    f"At 32 rows the best pre-registered candidate ({_BEST_PREREG['32x18944x3584'][1].removeprefix('s9-tile-')}, "
    f"{_BEST_PREREG['32x18944x3584'][0]} ms) was already "
    f"{_BEST_PREREG['32x18944x3584'][0] / _TARGET_1109['32x18944x3584']:.2f}x the target before the run: cuBLAS "
    "at M = 32 does not spend a 64- or 128-row tile on 32 rows and a grid of 148-296 blocks on 132 SMs (split-K or "
    "a small-M kernel, which the space does not contain); the miss was built into the search space. Band: from the "
    "best pre-registered candidate -15% (the acceptance band) to s9's own 11:09 time (the tuner never picks worse "
    f"than candidate 0, s9) +{spread():.1%} measured noise, over the 11:09 run's cuBLAS / goal; at 4096^3 it "
    "straddles the target, so strict=False.")

def warp64_band(lab: str) -> tuple[float, float]:
    """s11's band: s10's time at the shape (the same bound) +- noise, times the tensor-core clock range measured by
    Nsight Compute both ways: neither the reference run's clock nor the judged session's is known under load."""
    lo, hi = band(_S10_MS[lab] / _prereg("s11-bf16-warp64", lab))
    drop = tensor_core_clock_drop()
    return (round(lo / drop, 4), round(hi * drop, 4))


def block_clock_mhz(data: dict, block: str = "time") -> float | None:
    """The SM clock one timing block of a recorded rung ran at: the clock probe's reading right behind the block where
    it read one (measure/clock_probe.py: the clock the kernel ran at), else NVML's lowest in the block; None where the
    recording carries no clock (runs before 2026-12-02)."""
    c = (data.get("clocks") or {}).get(block) or {}
    mhz = c.get("probe_sm_mhz") or c.get("sm_mhz_min")
    return float(mhz) if mhz else None


def run_clock_hz(rec) -> float | None:
    """The lowest SM clock a recorded rung's two timing blocks ran at (block_clock_mhz); None where it has none."""
    mhz = [m for m in (block_clock_mhz(rec.data, k) for k in ("time", "time_repeat")) if m]
    return min(mhz) * 1e6 if mhz else None


def warp64_band_at_its_clock(lab: str, rec) -> tuple[float, float] | None:
    """s11's band for a run whose own clock reading lies below the lowest Nsight Compute clock warp64_band allows
    for: the same band with that run's measured slowdown (boost / its clock, run_clock_hz) in place of the profile's,
    since h200-warp64-kept-s10s-time says the time follows the clock. The clock is measured apart from the time it
    judges (the probe spins on %clock64 against %globaltimer after the block). None where the profile's range already
    covers the run's clock, or no clock was read: the static band stands."""
    clock = run_clock_hz(rec)
    if clock is None or boost_clock_hz() / clock <= tensor_core_clock_drop():
        return None
    lo, hi = warp64_band(lab)
    return lo, round(hi / tensor_core_clock_drop() * boost_clock_hz() / clock, 4)


def wgmma_clock_ratio() -> float:
    """The boost clock the issue ledger priced over the clock Nsight Compute measured s12 at (00:18 profile): the
    ledger's time at the clock s12 runs at, over its pre-registration."""
    return boost_clock_hz() / ncu_sm_frequency_hz()["sgemm_bf16_wgmma"]


_S12_PREREG_MS = _prereg("s12-bf16-wgmma", SGEMM_SHAPE)
_S12_SESSIONS_MS = [live_ms(f"sgemm.s12-bf16-wgmma.{SGEMM_SHAPE}", r)
                    for r in LIVE_RUNS_0202 + LIVE_RUNS_0240 + LIVE_RUNS_0457]
_S12_PROBE_MHZ = [x for r in LIVE_RUNS_0457 for x in live_probe_mhz(f"sgemm.s12-bf16-wgmma.{SGEMM_SHAPE}", r)]
WGMMA_BOOST_CLOCK = (
    f"s12 at 4096^3 was pre-registered by the mma issue ledger at {_S12_PREREG_MS} ms, priced "
    f"at the {boost_clock_hz() / 1e6:.0f} MHz boost. Nsight Compute (00:18 profile, clocks uncontrolled) measured s12 "
    f"at {ncu_sm_frequency_hz().get('sgemm_bf16_wgmma', float('nan')) / 1e6:.0f} MHz, "
    f"{1 - 1 / wgmma_clock_ratio():.1%} below the boost: at the clock it runs at, the same ledger predicts "
    f"{_S12_PREREG_MS * wgmma_clock_ratio():.4f} ms. The sessions measured "
    + " / ".join(f"{x:.4f}" for x in _S12_SESSIONS_MS)
    + f" ms (live sessions 00:12, 00:17, 02:40, 02:46, 04:57, 05:01; the 21:51 plan run {_S12_MS[SGEMM_SHAPE]:.4f}): "
    f"{min(_S12_SESSIONS_MS) / _S12_PREREG_MS - 1:.1%} to "
    f"{max(_S12_SESSIONS_MS) / _S12_PREREG_MS - 1:.1%} over the pre-registration, "
    f"{min(_S12_SESSIONS_MS) / (_S12_PREREG_MS * wgmma_clock_ratio()) - 1:+.1%} to "
    f"{max(_S12_SESSIONS_MS) / (_S12_PREREG_MS * wgmma_clock_ratio()) - 1:+.1%} from the "
    "ledger at the measured clock. The miss is the clock the ledger "
    "priced, not the ledger's pace, by Nsight Compute's reading; the SM clock probe (first run 04:57 / 05:01), "
    f"enqueued right behind each of s12's timing blocks, read {min(_S12_PROBE_MHZ, default=float('nan')):.0f}-"
    f"{max(_S12_PROBE_MHZ, default=float('nan')):.0f} MHz instead: whether the clock recovers in the microseconds "
    "between the last kernel and the probe, or Nsight Compute's replay loads the GPU differently, is not "
    "established, so that explanation is unconfirmed. Band: that clock ratio +-"
    f"{spread():.1%} measured noise; it straddles the 15% acceptance edge, so strict=False.")


BANDED.update({
    "mma_issue_preregistered": {
        **{f"s11-bf16-warp64-{lab}": ("h200-warp64-kept-s10s-time", WARP64_KEPT_S10S_TIME + _warp64_live(),
                                      warp64_band(lab)) for lab in SGEMM_SHAPES},
        **{f"s12-bf16-wgmma-{lab}": ("h200-wgmma-ffn-shapes-slower-than-the-ledger", WGMMA_FFN,
                                     (1.0, round(_S10_MS[lab] / _prereg("s12-bf16-wgmma", lab) * (1 + spread()), 4)))
           for lab in FFN_SHAPES},
        f"s12-bf16-wgmma-{SGEMM_SHAPE}": ("h200-wgmma-ledger-priced-the-boost-clock", WGMMA_BOOST_CLOCK,
                                          band(wgmma_clock_ratio()))},
    "streaming_floor": {
        "x6-cluster-row": ("h200-cluster-row-short-rows-pay-per-cluster", CLUSTER_ROW_SHORT_ROWS,
                           (round(_x6_prereg_ms(SHORT_ROW) * 1e-3 * (1 + PREREG_ACCEPT) * _COPY_1109 / _SHORT_BYTES, 4),
                            STREAM_ORDER_OF_MAGNITUDE))},
    "vocab_target": {
        "x6-cluster-row": ("h200-cluster-row-vocab-short-of-its-ledger", CLUSTER_ROW_VOCAB,
                           (round(_x6_prereg_ms(VOCAB) * 1e-3 * (1 + PREREG_ACCEPT) * _READ_1109 / _VOCAB_BYTES, 4),
                            round(_TORCH_VOCAB_1109_MS * 1e-3 * _READ_1109 / _VOCAB_BYTES, 4)))},
    "tile_preregistered": {
        **{f"{cid}-{lab}": ("h200-tile-ledger-clock-bias-and-more", TILE_CLOCK_BIAS_AND_MORE,
                            (round(s9_ledger_bias(lab) * (1 - spread()), 4),
                             round(s9_ledger_bias(lab) * (1 + PREREG_ACCEPT), 4)))
           for cid, lab in (("s9-tile-128x256x8-b1", SGEMM_SHAPE), ("s9-tile-128x256x8-b1", FFN_SHAPES[0]),
                            ("s9-tile-256x64x16-b2", FFN_SHAPES[0]), ("s9-tile-64x128x16-b4", FFN_SHAPES[0]))},
        **{f"{cid}-{lab}": ("h200-tile-ledger-partial-grid-residency", TILE_PARTIAL_GRID,
                            (round(s9_ledger_bias(lab) * (1 - spread()), 4), partial_grid_upper(cid, lab)))
           for cid, lab in _PG},
        **{f"{_B1}-{lab}": ("h200-tile-ledger-occupancy-term-overcharges", TILE_OCCUPANCY_OVERCHARGES,
                            (round(_S9_1109_MS[lab] / sgemm.S9_TILE_PREREGISTERED[(_B1, lab)] * (1 - spread()), 4),
                             1 - PREREG_ACCEPT)) for lab in SGEMM_SHAPES}},
    "autotune_target": {
        lab: ("h200-autotuned-fp32-below-cublas-target", AUTOTUNED_FP32_TARGET,
              (round(_BEST_PREREG[lab][0] * (1 - PREREG_ACCEPT) / _TARGET_1109[lab], 4),
               round(_S9_1109_MS[lab] * (1 + spread()) / _TARGET_1109[lab], 4)))
        for lab in (SGEMM_SHAPE, FFN_SHAPES[1])},
})
# s11 and s12's header times are the mma issue ledger's (test_kernels_registry keeps them equal): the same finding
# marks test_preregistered_time.
BANDED["preregistered"].update(BANDED["mma_issue_preregistered"])
BANDED["preregistered"].update({
    f"x6-cluster-row-{SHORT_ROW}": ("h200-cluster-row-short-rows-pay-per-cluster", CLUSTER_ROW_SHORT_ROWS,
                                    (1 + PREREG_ACCEPT, round(STREAM_ORDER_OF_MAGNITUDE * _SHORT_BYTES / _COPY_1109
                                                              / (_x6_prereg_ms(SHORT_ROW) * 1e-3), 4))),
    f"x6-cluster-row-{VOCAB}": ("h200-cluster-row-vocab-short-of-its-ledger", CLUSTER_ROW_VOCAB,
                                (1 + PREREG_ACCEPT, round(_TORCH_VOCAB_1109_MS / _x6_prereg_ms(VOCAB), 4)))})
# --- the first run of s13, its tuner family and x7 (2026-12-04 14:56, batch 20261204T145622Z) ----------------------
# No band below reads a time of that run: each comes from s9's 11:09 times (the tile ledger's shared bias), the 11:09
# run's cuBLAS and read ceiling, the pre-registrations and their stated outcomes or risks (the .cu headers).
KERNEL_RUN_1456 = "2026-12-04T14:56:22Z"
_S13 = "s13-fp32-multistage"
_S13_OWN_TILE = "s13-tile-128x128x16-s3-b2"
_S13_MS = {lab: run_ms(f"sgemm.{_S13}.{lab}", KERNEL_RUN_1456) for lab in SGEMM_SHAPES}
_S9_S13_SPACES = (*sgemm.S9_TILE_SPACE, *sgemm.S13_TILE_SPACE)


def _space_warps(cid: str) -> int:
    return next(w for t, w, _ in _S9_S13_SPACES if t.id == cid)


def tile_bias_band(lab: str) -> tuple[float, float]:
    """h200-tile-ledger-clock-bias-and-more's band: s9's 11:09 bias at the shape -noise to that bias +15%."""
    return (round(s9_ledger_bias(lab) * (1 - spread()), 4), round(s9_ledger_bias(lab) * (1 + PREREG_ACCEPT), 4))


def s13_partial_grid_upper(cid: str, lab: str) -> float:
    """partial_grid_upper for a candidate of s13's space: the ledger at the busiest SM's resident warps x s9's bias."""
    t = next(t for t, _, _ in sgemm.S13_TILE_SPACE if t.id == cid)
    m, n, _ = (int(x) for x in lab.split("x"))
    blocks = -(-m // t.bm) * -(-n // t.bn)
    resident = min(_space_warps(cid), -(-blocks // _sm_count()) * t.threads // 32)
    return round(s9_ledger_bias(lab) * _ipc(_space_warps(cid)) / _ipc(resident), 4)


def _block_scatter(name: str, recorded_at: str) -> float:
    """|time / time_repeat - 1| of one recording of the run stamped `recorded_at`; NaN where absent."""
    path = RESULTS / f"{name}@{_stamp(recorded_at)}.json"
    if not path.exists():
        return float("nan")
    m = json.loads(path.read_text())["measurements"]
    return abs(m["time"]["value"] / m["time_repeat"]["value"] - 1)


# s9's time over its own tile's ledger time in every recorded session at 4096^3 (the bias s13 shares)
_S9_BIASES = [json.loads(p.read_text())["measurements"]["time"]["value"] * 1e3
              / sgemm.S9_TILE_PREREGISTERED[(_S9_OWN_TILE, SGEMM_SHAPE)]
              for p in sorted(RESULTS.glob(f"sgemm.{_S9_RUNG}.{SGEMM_SHAPE}@*.json"))] or [float("nan")]
_S13_OWN_SHARE = [_S13_MS[lab] / sgemm.S13_TILE_PREREGISTERED[(_S13_OWN_TILE, lab)] / s9_ledger_bias(lab) - 1
                  for lab in SGEMM_SHAPES]
S13_KEPT_S9S_PACE = (
    f" s13 (three-stage cp.async ring, one barrier per k-tile, cross-tile fragment prefetch; its header is this "
    f"ledger's price for its own tile) ran {_ms_list(_S13_MS)} ({KERNEL_RUN_1456[:16]} run), "
    + ", ".join(f"{_S13_MS[lab] / sgemm.S13_TILE_PREREGISTERED[(_S13_OWN_TILE, lab)]:.3f}x" for lab in SGEMM_SHAPES)
    + " its pre-registration, against s9's "
    + ", ".join(f"{s9_ledger_bias(lab):.3f}x" for lab in SGEMM_SHAPES)
    + f" of its own tile's ledger time (11:09 run; {min(_S9_BIASES):.3f}-{max(_S9_BIASES):.3f}x at 4096^3 over "
    f"{len(_S9_BIASES)} recorded s9 sessions): s9's clock bias (the ledger prices the 1.98 GHz boost, the bias "
    "h200-fp32-sgemm-slower-than-its-headers names against s9's hand header) plus "
    + "-".join(f"{x:.1%}" for x in sorted(_S13_OWN_SHARE)[::len(_S13_OWN_SHARE) - 1]) + " of s13's own. The header stated two outcomes in advance: the deeper "
    "pipeline lowers the pace (~2.8 ms at 4096^3) or the pace stays s9's (~1.07x the ledger, ~3.25 ms, slower "
    "than s9). The second held, and worse: with the ledger already charging s13's 3.5% more instructions, s13 ran "
    f"{_S13_MS[SGEMM_SHAPE] / _S9_1109_MS[SGEMM_SHAPE]:.3f}x s9's 11:09 time at 4096^3, so the stall per instruction "
    "did not fall with a third stage and one barrier fewer; it rose. The stalls that keep s9 under cuBLAS are not "
    "the pipeline's; the next step the header named is a larger thread tile. Why s13's pace is worse than s9's "
    "is not established (no Nsight Compute profile of s13; candidates: the ring's index wraps and clamped copy "
    "addresses on the issue path, the swizzled A reads). The s13 tuner candidate 64x128x16-s4-b4 at 2,048 rows is "
    "the same case (its two timing blocks " f"{_block_scatter('sgemm.s13-tile-64x128x16-s4-b4.' + FFN_SHAPES[0], KERNEL_RUN_1456):.1%} apart)."
    " Same ledger, same shared bias, the candidate's own share "
    "unexplained: this finding, with s13's cases in its band.")
TILE_CLOCK_BIAS_AND_MORE_S13 = TILE_CLOCK_BIAS_AND_MORE + S13_KEPT_S9S_PACE
_S13_PG = ("s13-tile-64x128x16-s4-b4", "32x18944x3584")
TILE_PARTIAL_GRID_S13 = (
    TILE_PARTIAL_GRID + f" s13's 64x128x16-s4-b4 at 32 rows ({KERNEL_RUN_1456[:16]} run) is the same grid: "
    f"{run_ms(f'sgemm.{_S13_PG[0]}.{_S13_PG[1]}', KERNEL_RUN_1456):.4f} ms against "
    f"{sgemm.S13_TILE_PREREGISTERED[_S13_PG]} ms, its upper edge from s13's space "
    f"({s13_partial_grid_upper(*_S13_PG)}).")
_S13_CHOICE = {lab: (lambda p: json.loads(p.read_text()) if p.exists() else None)(
    RESULTS / f"autotune.sgemm.s13-tile.{lab}@{_stamp(KERNEL_RUN_1456)}.json") for lab in SGEMM_SHAPES}
_S13_BEST_PREREG = {lab: min(ms for (cid, lb), ms in sgemm.S13_TILE_PREREGISTERED.items() if lb == lab)
                    for lab in SGEMM_SHAPES}


def s13_autotune_band(lab: str) -> tuple[float, float]:
    """From the best pre-registered s13 candidate -15% to candidate 0 (s13) at the top of the tile-ledger finding's
    band (its ledger x s9's 11:09 bias x 1.15), over the 11:09 run's cuBLAS / goal."""
    top = sgemm.S13_TILE_PREREGISTERED[(_S13_OWN_TILE, lab)] * s9_ledger_bias(lab) * (1 + PREREG_ACCEPT)
    return (round(_S13_BEST_PREREG[lab] * (1 - PREREG_ACCEPT) / _TARGET_1109[lab], 4),
            round(top / _TARGET_1109[lab], 4))


S13_AUTOTUNED_FP32_TARGET = (
    f"s13's tuner family (sgemm.S13_TILE_SPACE, {KERNEL_RUN_1456[:16]} run) chose "
    + "; ".join(f"{lab}: {(c or {}).get('data', {}).get('choice', '?').removeprefix('s13-tile-')} at "
                f"{(c or {}).get('measurements', {}).get('time', {}).get('value', float('nan')) * 1e3:.4f} ms, target "
                f"{_TARGET_1109[lab]:.4f} ms (11:09 cuBLAS)" for lab, c in _S13_CHOICE.items())
    + ". The same causes as s9's family: at 4096^3 and 2,048 rows the fp32 pace (s13 kept s9's stall per "
    "instruction: h200-tile-ledger-clock-bias-and-more), so s13's best tile is slower than s9's own and misses the "
    "2,048-row target s9's family met, by about 1%; at 32 rows no 64- or 128-row tile of a 148-block grid reaches "
    "cuBLAS's small-M kernel (the miss built into the space). Band: from the best pre-registered s13 candidate -15% "
    "to candidate 0 (s13) at the top of the tile-ledger finding's band (its ledger x s9's 11:09 bias x 1.15: the "
    "tuner never picks worse than candidate 0), over the 11:09 run's cuBLAS / goal; at 4096^3 and 2,048 rows it "
    "straddles the target, so strict=False there.")
_X7_PREREG_MS = dict(next(v for v in fused.SOFTMAX if v.id == "x7-pipelined").h200_ms)[VOCAB]
_X7_VOCAB_MS = run_ms(f"softmax.x7-pipelined.{VOCAB}", KERNEL_RUN_1456)
X7_RISK_DOUBLES = 2.0  # the header's risk 1: "the vocabulary time roughly doubles" if fewer than 14 clusters fit
X7_VOCAB_SHORT = (
    f"x7 at 128 x 152,064 (a persistent grid of 14 one-block-per-SM clusters of 8, the next row's loads in flight "
    f"while this one is reduced, exchanged and written) was pre-registered at {_X7_PREREG_MS:.3f} ms and ran "
    f"{_X7_VOCAB_MS:.4f} ms ({KERNEL_RUN_1456[:16]} run), {_X7_VOCAB_MS / _X7_PREREG_MS:.2f}x: "
    f"{_VOCAB_BYTES / (_X7_VOCAB_MS * 1e-3) / ceiling_at('read', KERNEL_RUN_1456):.0%} of that run's read ceiling "
    f"(target 85%), slower than x6's {_X6_VOCAB_MS:.4f} ms (21:51 run), though "
    f"{run_ms(f'softmax.x0-torch.{VOCAB}', KERNEL_RUN_1456) / _X7_VOCAB_MS:.2f}x faster than torch in the same run. "
    "Its 8,192 x 2,048 path (x5's warp per row) agreed with its header. The candidate is the risk the header named "
    "before the run: if fewer than 14 one-block-per-SM clusters of 8 are co-resident, the last clusters' rows wait "
    "for another cluster's and the time up to roughly doubles. Unconfirmed: no Nsight Compute profile of x7 (Max "
    "Active Clusters would say), and in its plain form the risk predicts ~2x, not 1.35x; the excess, "
    f"{(_X7_VOCAB_MS - _X7_PREREG_MS) * 1e3:.1f} us over 10 row rounds, would also fit a per-row exchange round trip "
    "(barrier.cluster and the DSMEM reads, which the ledger charged once) left exposed each row. Band, from the "
    "pre-registration: from its acceptance edge (1.15x: the miss is a miss) to the risk's own size (2x the "
    "prediction), in the test's units (the 11:09 run's read ceiling where the test divides by one).")
BANDED["preregistered"].update({
    **{f"{_S13}-{lab}": ("h200-tile-ledger-clock-bias-and-more", TILE_CLOCK_BIAS_AND_MORE_S13, tile_bias_band(lab))
       for lab in SGEMM_SHAPES},
    f"x7-pipelined-{VOCAB}": ("h200-pipelined-cluster-vocab-short-of-its-ledger", X7_VOCAB_SHORT,
                              (1 + PREREG_ACCEPT, X7_RISK_DOUBLES))})
BANDED["tile_preregistered"].update({
    f"s13-tile-64x128x16-s4-b4-{FFN_SHAPES[0]}": ("h200-tile-ledger-clock-bias-and-more", TILE_CLOCK_BIAS_AND_MORE_S13,
                                                  tile_bias_band(FFN_SHAPES[0])),
    f"{_S13_PG[0]}-{_S13_PG[1]}": ("h200-tile-ledger-partial-grid-residency", TILE_PARTIAL_GRID_S13,
                                   (tile_bias_band(_S13_PG[1])[0], s13_partial_grid_upper(*_S13_PG)))})
BANDED["vocab_target"]["x7-pipelined"] = (
    "h200-pipelined-cluster-vocab-short-of-its-ledger", X7_VOCAB_SHORT,
    (round(_X7_PREREG_MS * 1e-3 * (1 + PREREG_ACCEPT) * _READ_1109 / _VOCAB_BYTES, 4),
     round(_X7_PREREG_MS * 1e-3 * X7_RISK_DOUBLES * _READ_1109 / _VOCAB_BYTES, 4)))
BANDED["s13_autotune_target"] = {
    lab: ("h200-autotuned-fp32-below-cublas-target", S13_AUTOTUNED_FP32_TARGET, s13_autotune_band(lab))
    for lab in SGEMM_SHAPES}
# --- the tile ledger's cases the noise budget uncovered (issue 10, 2026-12-04) -------------------------------------
# Until then the candidates' tolerance was the 15% acceptance target; kernel_budget.tile_budget replaced it with the
# candidate's timing blocks + its other sessions (or rung 0's session drift) + s9's counted pace. These 21 cases, 6.3%
# to 14.8% slower than their pre-registration, agreed under 15% and exceed that budget (~7%; s9's own tile ~0.4-1.1%).
# Same sign, same ledger, same cause as the finding's first cases: its band, from s9's 11:09 bias (another run).
_NOISE_FIRST = {"s9-tile-128x128x16-b2", "s13-tile-128x128x16-s3-b2"}  # each family's rung itself
TILE_NOISE_UNCOVERED = (
    *((cid, lab) for cid in (*_NOISE_FIRST, "s9-tile-128x128x8-b2", "s13-tile-128x128x8-s4-b2",
                             "s13-tile-128x256x8-s3-b1") for lab in SGEMM_SHAPES),
    ("s13-tile-64x128x16-s4-b4", SGEMM_SHAPE), ("s9-tile-128x64x16-b4", SGEMM_SHAPE),
    ("s9-tile-256x64x16-b2", SGEMM_SHAPE), *((cid, FFN_SHAPES[1]) for cid in (
        "s9-tile-128x256x8-b1", "s9-tile-128x64x16-b4", "s9-tile-256x64x16-b2")))


def _tile_ratio(cid: str, lab: str) -> float:
    run = KERNEL_RUN_1456 if cid.startswith("s13-") else KERNEL_RUN_2151
    prereg = {**sgemm.S9_TILE_PREREGISTERED, **sgemm.S13_TILE_PREREGISTERED}
    return run_ms(f"sgemm.{cid}.{lab}", run) / prereg[(cid, lab)]


_NOISE_RATIOS = {case: _tile_ratio(*case) for case in TILE_NOISE_UNCOVERED}
_S9_OWN = [r for (cid, _), r in _NOISE_RATIOS.items() if cid == _S9_OWN_TILE]
_REST_SHARE = [r / s9_ledger_bias(lab) - 1 for (cid, lab), r in _NOISE_RATIOS.items() if cid not in _NOISE_FIRST]
TILE_NOISE_UNCOVERED_WHY = (
    f" Issue 10 (2026-12-04): with the tolerance the measured noise (kernel_budget.tile_budget) instead of the 15% "
    f"target, {len(TILE_NOISE_UNCOVERED)} more cases that had agreed under 15% join this finding, against budgets "
    f"of about 7% (a candidate met in one session: rung 0's {spread_terms()['session_drift_of_rung_0']:.1%} session "
    "drift, its two timing blocks, s9's counted pace) or under about 1% (s9's own tile, whose session term is s9's "
    f"spread over its {len(_S9_BIASES)} recorded sessions). s9's own tile (128x128x16-b2) ran "
    f"{min(_S9_OWN):.3f}-{max(_S9_OWN):.3f}x its ledger time: the shared clock bias alone (its band at test time: "
    "the rung's other sessions' envelope +- the run's block scatter); s13's own tile (128x128x16-s3-b2) ran "
    "the s13 paragraph's ratios at all three shapes; the other "
    f"{len(_REST_SHARE)} candidate-shape pairs ran {min(_REST_SHARE):.1%}-{max(_REST_SHARE):.1%} above s9's 11:09 "
    "bias at their shape, the candidate's own share, unexplained as for the first cases (no candidate profiled).")
BANDED["tile_preregistered"].update({f"{cid}-{lab}": ("h200-tile-ledger-clock-bias-and-more",
                                                      TILE_CLOCK_BIAS_AND_MORE_S13, tile_bias_band(lab))
                                     for cid, lab in TILE_NOISE_UNCOVERED})
# One reason per finding: the s9 cases' entries carry the s13 paragraphs too.
_JOINED = {"h200-tile-ledger-clock-bias-and-more": TILE_CLOCK_BIAS_AND_MORE_S13 + TILE_NOISE_UNCOVERED_WHY,
           "h200-tile-ledger-partial-grid-residency": TILE_PARTIAL_GRID_S13,
           "h200-autotuned-fp32-below-cublas-target": AUTOTUNED_FP32_TARGET + " " + S13_AUTOTUNED_FP32_TARGET}
for _table in BANDED.values():
    for _key, (_fid, _, _band) in _table.items():
        if _fid in _JOINED:
            _table[_key] = (_fid, _JOINED[_fid], _band)

# Findings whose band straddles the goal they judge: a session may land either side (pytest_anatomy.findings).
NOT_STRICT = frozenset({"h200-wgmma-ffn-shapes-slower-than-the-ledger", "h200-wgmma-ledger-priced-the-boost-clock",
                        "h200-tile-ledger-clock-bias-and-more",
                        "h200-tile-ledger-partial-grid-residency"})
NOT_STRICT_KEYS = frozenset({("autotune_target", SGEMM_SHAPE), ("s13_autotune_target", SGEMM_SHAPE),
                             ("s13_autotune_target", FFN_SHAPES[0])})


# Where a BANDED table's bands come from (band_from): s9's issue-ledger band is the ledger's own arithmetic (with and
# without its latency term); every other BANDED band reads runs other than the one judged (the first run's, the 11:09
# run's times or ceilings, the 00:18 profile's clocks), beside the pre-registration's edges.
BANDED_FROM: dict[str, str] = {"issue_preregistered": "explanation"}
# Per case where a table's default does not hold: x7's band is its header's acceptance edge and its stated risk.
BANDED_FROM_KEYS: dict[tuple[str, str], str] = {("preregistered", f"x7-pipelined-{VOCAB}"): "preregistered",
                                                ("vocab_target", "x7-pipelined"): "preregistered"}


# Tables whose ratio divides by the session's read ceiling (a floor at the measured bandwidth).
CEILING_TABLES = frozenset({"streaming_floor", "streaming_target"})
TABLES: dict[str, dict[str, tuple[str, str, float]]] = {
    "preregistered": PREREGISTERED, "streaming_floor": STREAMING_FLOOR, "single": SINGLE,
    "streaming_target": STREAMING_TARGET, "instruction_held_out": INSTRUCTION_HELD_OUT_TABLE}


def marks_for(table: str, key: str) -> tuple[pytest.MarkDecorator, ...]:
    """The finding mark of `key` in `table` (for MEASURED_ON's reconciliations only), or none. A mechanism band
    (BANDED) takes the place of an observed ratio's."""
    banded = BANDED.get(table, {}).get(key)
    if banded is not None:
        fid, reason, expected = banded
        strict = fid not in NOT_STRICT and (table, key) not in NOT_STRICT_KEYS
        return (pytest.mark.finding(fid, reason=reason, expected=expected,
                                    hardware=CARDS_KEYS.get((table, key), cards_for(table)),
                                    band_from=BANDED_FROM_KEYS.get((table, key), BANDED_FROM.get(table, "other-runs")),
                                    **({} if strict else {"strict": False})),)
    entry = TABLES.get(table, {}).get(key)
    if entry is None:
        return ()
    fid, reason, ratio = entry
    return (finding(fid, reason, ratio, divides_by_ceiling=table in CEILING_TABLES, cards=cards_for(table)),
            *h100.scaled_marks(table, key, band(ratio, table in CEILING_TABLES)))


# Tables whose ratio is the H200's alone: a pre-registration written for the H200 (its checks run on the H200
# only, or judge another card by a looser bound: the streaming floor's x10 without one), or a floor priced at
# the session's read ceiling, which moves with the card's bandwidth while an instruction- or LSU-bound rung's
# time does not (kernel_h100_findings scales those bands by the two cards' ceilings instead).
H200_ONLY_TABLES = CEILING_TABLES | {"preregistered", "issue_preregistered", "mma_issue_preregistered", "vocab_target",
                                     "s13_autotune_target"}


def cards_for(table: str) -> str | tuple[str, ...]:
    return MEASURED_ON if table in H200_ONLY_TABLES else CHECKED_ON


# Per case where a table's cards do not hold (a finding retired on one card, kept on another).
CARDS_KEYS: dict[tuple[str, str], str | tuple[str, ...]] = {}


# --- SASS of the compiled rungs (test_kernels_compiled.py) -----------------------------------
COMPILER_VECTORIZES_S5 = pytest.mark.finding("compiler-vectorizes-s5", reason="ptxas turns s5's scalar shared loads into LDS.128 (both operands: "
                     "B is contiguous per k, A per unrolled k-loop), as the seed saw for its K5: the scalar access "
                     "pattern counts 0.25 LDS per FMA, the SASS has 1/16 -- s5 and s6 differ only in global loads.",
                     # LDS.128 carries four 32-bit loads, so the compiled count is exactly a quarter of the scalar one
                     expected=(0.25, 0.25), band_from="explanation")


# --- Nsight Compute counters (test_kernels_counters.py) -------------------------------------
VOCAB_ROWS_EXCEED_L2 = pytest.mark.finding(
    # both passes from DRAM: twice the one-pass ledger, within the counter check's own 1% (test_kernels_counters.py)
    "h200-online-softmax-vocab-rereads-dram", quantity="dram_read_bytes", expected=(1.98, 2.02), hardware=CHECKED_ON,
    band_from="explanation",
    reason="The online softmax reads each row twice (the running max/sum pass, then the normalising pass) and the "
           "ledger assumes the block's second read of its own row hits L2. At 128 x 152,064 the 128 rows run at "
           "once, one block each, so the rows in flight are 128 x 594 KiB = 74 MiB, more than the H200's 60 MiB "
           "L2 (50 MB on H100): ncu counts 155.7 MB of DRAM reads, both passes. At 8192 x 2048 the rows in flight "
           "(~1,056 x 8 KiB) fit and the second pass never reaches DRAM (67.1 MB read, one pass).")


def byte_ledger_exceeded(prereg_ratio: float, prereg_ms: float, observed: float) -> tuple[pytest.MarkDecorator, ...]:
    """test_sgemm_issued_byte_roofline's finding, where the pre-registration already put the rung past its
    roofline (prereg_ratio > 1); band: the first run's observed ratio."""
    reason = BYTE_LEDGER_EXCEEDED.format(prereg=prereg_ratio, prereg_ms=prereg_ms, observed=observed,
                                         measured_ms=sgemm_ms("s2-coalesced"))
    return (pytest.mark.finding("h200-byte-ledger-exceeded", reason=reason + band_note(True),
                                expected=band(observed, True), hardware=MEASURED_ON, band_from="other-runs"),
            *h100.byte_ledger_marks(band(observed, True)))


# --- s14's first run (2026-12-04 16:38, batch 20261204T163802Z; issue 17's Hopper rung) -------------------------
# No band below reads a time of that run: the 4096^3 band is the header's stated per-tile bias (written before the
# run), the 2,048-row band the DRAM bytes of s14's launch order at the 11:09 run's ceilings, the 32-row band s12's
# recorded times. Each is widened by the measured noise terms (spread_terms), as the bands above.
KERNEL_RUN_1638 = "2026-12-04T16:38:02Z"
_S14 = "s14-bf16-wgmma-tma"
_S14_MS = {lab: run_ms(f"sgemm.{_S14}.{lab}", KERNEL_RUN_1638) for lab in SGEMM_SHAPES}
_S14_CUBLAS_MS = {lab: run_ms(f"sgemm.s0-cublas-bf16.{lab}", KERNEL_RUN_1638) for lab in SGEMM_SHAPES}
S14_EXPOSED_US = (3.0, 5.0)  # the header's "~3-5 us per tile" of exposed pipeline fill and epilogue


def _s14_prereg_ms(lab: str) -> float:
    return sgemm.TENSOR_PIPE_PREREGISTERED[(_S14, lab)]


def _dims(lab: str) -> tuple[int, int, int]:
    m, n, k = (int(x) for x in lab.split("x"))
    return m, n, k


def _s14_grid(lab: str) -> tuple[int, int]:
    """(row tiles, column tiles) of s14's grid at `lab` (blockIdx.x walks the columns: N-fastest)."""
    m, n, _ = _dims(lab)
    bm, bn, _ = sgemm.S14_TILE
    return -(-m // bm), -(-n // bn)


def get_l2_bytes() -> int | None:
    from pytest_anatomy.specs.hardware import get_hardware

    return get_hardware(MEASURED_ON).l2_bytes


def s14_tiles_on_busiest_sm(lab: str) -> int:
    rows, cols = _s14_grid(lab)
    return -(-(rows * cols) // _sm_count())


def s14_fill_band(lab: str) -> tuple[float, float]:
    """The pre-registration plus the header's stated 3-5 us of exposed fill and epilogue per tile on the busiest SM,
    over the pre-registration, +- the measured noise."""
    pre_us = _s14_prereg_ms(lab) * 1e3
    lo, hi = (1 + s14_tiles_on_busiest_sm(lab) * us / pre_us for us in S14_EXPOSED_US)
    return round(lo * (1 - spread()), 4), round(hi * (1 + spread()), 4)


def s14_dram_bytes(lab: str) -> float:
    """B read once per row tile (no reuse between row tiles), A and C once: bf16 operands and output."""
    m, n, k = _dims(lab)
    rows, _ = _s14_grid(lab)
    return 2.0 * (rows * k * n + m * k + m * n)


def s14_reuse_distance_bytes(lab: str) -> float:
    """Distinct bytes of B the resident blocks read between two row tiles' uses of one B tile: the next row's block
    on the same columns starts cols / SMs of a tile's life later, while every column's block streams its panel."""
    _, _, k = _dims(lab)
    _, cols = _s14_grid(lab)
    bn = sgemm.S14_TILE[1]
    return cols * (cols / _sm_count()) * k * bn * 2.0


def s14_dram_band(lab: str) -> tuple[float, float]:
    """s14_dram_bytes at the 11:09 run's read ceiling to at its copy ceiling (read + write traffic), over the
    pre-registration, +- the measured noise with the read ceiling's drift."""
    b, pre = s14_dram_bytes(lab), _s14_prereg_ms(lab) * 1e-3
    return (round(b / _READ_1109 / pre * (1 - spread(True)), 4), round(b / _COPY_1109 / pre * (1 + spread(True)), 4))


_S12_SESSIONS_32 = sorted(json.loads(p.read_text())["measurements"]["time"]["value"] * 1e3
                          for p in RESULTS.glob(f"sgemm.s12-bf16-wgmma.{FFN_SHAPES[1]}@*.json")
                          if _stamp(KERNEL_RUN_1638) not in p.name) or [float("nan")]
_BIG, _SMALL = FFN_SHAPES
_S12_SESSIONS_BIG = sorted(json.loads(p.read_text())["measurements"]["time"]["value"] * 1e3
                           for p in RESULTS.glob(f"sgemm.s12-bf16-wgmma.{_BIG}@*.json")) or [float("nan")]
S14_FILL_AND_EPILOGUE = (
    f"s14 at 4096^3 ran {_S14_MS[SGEMM_SHAPE]:.4f} ms ({KERNEL_RUN_1638[:16]} run) against its tensor-pipe price "
    f"{_s14_prereg_ms(SGEMM_SHAPE)} ms, {_S14_MS[SGEMM_SHAPE] / _s14_prereg_ms(SGEMM_SHAPE):.3f}x: inside the ladders' "
    "15% goal, outside the run's timing noise. The header named the bias before the run: s14 is not persistent and "
    "holds one block per SM, so each tile's pipeline fill (a DRAM round trip before its first k-tile lands) and its "
    f"epilogue (64 KB of bf16 stores) are exposed, ~3-5 us per tile; the busiest SM runs "
    f"{s14_tiles_on_busiest_sm(SGEMM_SHAPE)} tiles, so {S14_EXPOSED_US[0] * s14_tiles_on_busiest_sm(SGEMM_SHAPE):.0f}-"
    f"{S14_EXPOSED_US[1] * s14_tiles_on_busiest_sm(SGEMM_SHAPE):.0f} us over the price; measured "
    f"{(_S14_MS[SGEMM_SHAPE] - _s14_prereg_ms(SGEMM_SHAPE)) * 1e3:.1f} us, the top of that range (the header's own "
    "'up to +8%' understated its 5 us x 4 tiles). Unconfirmed by counters (no Nsight Compute profile of s14). "
    f"Issue 17's target is met all the same: {_S14_CUBLAS_MS[SGEMM_SHAPE] / _S14_MS[SGEMM_SHAPE]:.0%} of cuBLAS "
    f"bf16 ({_S14_CUBLAS_MS[SGEMM_SHAPE]:.4f} ms in the same run). Band: the pre-registration plus 3-5 us per tile "
    f"on the busiest SM, +-{spread():.1%} measured noise; it straddles the timing tolerance, so strict=False.")
S14_ROW_TILES_REREAD_B = (
    f"s14 at {_BIG} ran {_S14_MS[_BIG]:.4f} ms ({KERNEL_RUN_1638[:16]} run) against its tensor-pipe price "
    f"{_s14_prereg_ms(_BIG)} ms, {_S14_MS[_BIG] / _s14_prereg_ms(_BIG):.2f}x, where cuBLAS bf16 took "
    f"{_S14_CUBLAS_MS[_BIG]:.4f} ms. Wave quantisation is not it: the price already counts "
    f"{s14_tiles_on_busiest_sm(_BIG)} tiles on the busiest SM ({_s14_grid(_BIG)[0] * _s14_grid(_BIG)[1]:,} tiles of "
    f"128 x 256 on {_sm_count()} SMs, {_s14_grid(_BIG)[0] * _s14_grid(_BIG)[1] / _sm_count():.2f} waves), and the "
    "header's exposed fill and epilogue (3-5 us per tile) would add "
    f"{S14_EXPOSED_US[0] * s14_tiles_on_busiest_sm(_BIG) / (_s14_prereg_ms(_BIG) * 1e3):.0%}-"
    f"{S14_EXPOSED_US[1] * s14_tiles_on_busiest_sm(_BIG) / (_s14_prereg_ms(_BIG) * 1e3):.0%}. The DRAM does: "
    f"blockIdx.x walks B's {_s14_grid(_BIG)[1]} column tiles, so a row tile's {_s14_grid(_BIG)[1]} blocks run "
    f"together and the next row's block on the same columns starts {_s14_grid(_BIG)[1] / _sm_count():.2f} of a "
    "tile's life later; in between the resident blocks stream "
    f"{s14_reuse_distance_bytes(_BIG) / 2**20:.0f} MiB of other B tiles through a "
    f"{(get_l2_bytes() or 0) / 2**20:.0f} MiB L2, so (LRU) none of B ({_dims(_BIG)[1] * _dims(_BIG)[2] * 2 / 1e6:.0f} "
    f"MB) survives to its next row tile: {_s14_grid(_BIG)[0]} reads of B plus A and C, "
    f"{s14_dram_bytes(_BIG) / 1e9:.2f} GB, {s14_dram_bytes(_BIG) / _READ_1109 * 1e3:.3f} ms at the 11:09 run's "
    f"{_READ_1109 / 1e12:.2f} TB/s read ceiling "
    f"({s14_dram_bytes(_BIG) / _READ_1109 / (_s14_prereg_ms(_BIG) * 1e-3):.2f}x the price): above the tensor work, "
    f"so the DRAM binds. At 4096^3 B is {_dims(SGEMM_SHAPE)[1] * _dims(SGEMM_SHAPE)[2] * 2 / 1e6:.0f} MB and a row "
    f"tile is {_s14_grid(SGEMM_SHAPE)[1]} blocks: it stays in L2 and the same order costs nothing. cuBLAS, under "
    "this floor, must keep B in L2 across row tiles (its persistent kernel's tile order); s12, with the same "
    f"N-fastest order, ran this shape in {_S12_SESSIONS_BIG[0]:.4f}-{_S12_SESSIONS_BIG[-1]:.4f} ms over "
    f"{len(_S12_SESSIONS_BIG)} sessions, its slower pace above the same DRAM floor. Unconfirmed by counters (no "
    "Nsight Compute profile of s14 at this shape: its DRAM read "
    "bytes would say). Band: those bytes at the 11:09 run's read ceiling to at its copy ceiling (read and write "
    f"traffic), over the price, +-{spread(True):.1%} measured noise with the ceilings' drift.")
S14_32_ROWS = (
    f"s14 at {_SMALL} ran {_S14_MS[_SMALL]:.4f} ms ({KERNEL_RUN_1638[:16]} run) against its price "
    f"{_s14_prereg_ms(_SMALL)} ms, {_S14_MS[_SMALL] / _s14_prereg_ms(_SMALL):.2f}x; cuBLAS bf16 took "
    f"{_S14_CUBLAS_MS[_SMALL]:.4f} ms. The price already charges every 128-row wgmma in full for its 32 real rows "
    f"(3/4 of each wasted) and {s14_tiles_on_busiest_sm(_SMALL)} tile per SM on {_s14_grid(_SMALL)[1]} SMs; the "
    "header's exposed fill and epilogue (3-5 us) would add "
    f"{S14_EXPOSED_US[0] / (_s14_prereg_ms(_SMALL) * 1e3):.0%}-{S14_EXPOSED_US[1] / (_s14_prereg_ms(_SMALL) * 1e3):.0%}"
    f", and B's {_dims(_SMALL)[1] * _dims(_SMALL)[2] * 2 / 1e6:.0f} MB read once take "
    f"{s14_dram_bytes(_SMALL) / _READ_1109 * 1e3:.4f} ms at the read ceiling, under the tensor work. Neither "
    "reaches the measured time; why is not established. Candidates: only "
    f"{_s14_grid(_SMALL)[1]} of {_sm_count()} SMs pull the 136 MB (each SM's TMA stream, not the DRAM, may bind), "
    "and the tensor work and the stream overlap less than the price's max() assumes. Band, weak for that reason: "
    "from the 15% goal (the miss is a miss) to s12's fastest recorded time at this shape over the price "
    f"({_S12_SESSIONS_32[0]:.4f} ms over {len(_S12_SESSIONS_32)} sessions: the TMA rung no slower than the "
    "cp.async wgmma rung it follows).")
BANDED["preregistered"].update({
    f"{_S14}-{SGEMM_SHAPE}": ("h200-s14-fill-and-epilogue-per-tile", S14_FILL_AND_EPILOGUE,
                             s14_fill_band(SGEMM_SHAPE)),
    f"{_S14}-{_BIG}": ("h200-s14-row-tiles-reread-b-from-dram", S14_ROW_TILES_REREAD_B, s14_dram_band(_BIG)),
    f"{_S14}-{_SMALL}": ("h200-s14-32-rows-slower-than-its-price", S14_32_ROWS,
                         (1 + PREREG_ACCEPT, round(_S12_SESSIONS_32[0] / _s14_prereg_ms(_SMALL), 4)))})
NOT_STRICT = NOT_STRICT | {"h200-s14-fill-and-epilogue-per-tile"}
BANDED_FROM_KEYS.update({("preregistered", f"{_S14}-{SGEMM_SHAPE}"): "preregistered",
                         ("preregistered", f"{_S14}-{_BIG}"): "explanation"})
# Issue 17's bf16 target is met on the H200 since s14's first run (88% of cuBLAS bf16 at 4096^3): the finding that
# it is missed stays for the H100, where s14 has not run.
CARDS_KEYS[("single", "test_tensor_core_rung_vs_cublas_bf16")] = h100.H100
_TC_FID, _TC_REASON, _TC_BAND = BANDED["single"]["test_tensor_core_rung_vs_cublas_bf16"]
BANDED["single"]["test_tensor_core_rung_vs_cublas_bf16"] = (_TC_FID, _TC_REASON + (
    f" Retired on the H200 by s14 (TMA, warp-specialised wgmma): {_S14_MS[SGEMM_SHAPE]:.4f} ms at 4096^3 in its first "
    f"run ({KERNEL_RUN_1638[:16]}), {_S14_CUBLAS_MS[SGEMM_SHAPE] / _S14_MS[SGEMM_SHAPE]:.0%} of cuBLAS bf16's "
    f"{_S14_CUBLAS_MS[SGEMM_SHAPE]:.4f} ms beside it; held on the H100, where s14 has not run."), _TC_BAND)


# --- s15's and x8's first run (2026-12-04 18:46, batch 20261204T184632Z): kernel_s15_x8_findings.py --------------
# Their bands are the headers' stated outcome (s15) and risk (x8), with this module's noise terms, s9's 11:09 bias
# and the 11:09 read ceiling; none reads a time of the 18:46 run.
for _table, _entries in s15x8.banded(spread(), {lab: s9_ledger_bias(lab) for lab in SGEMM_SHAPES}, _READ_1109,
                                     PREREG_ACCEPT).items():
    BANDED[_table].update(_entries)
BANDED_FROM_KEYS.update(s15x8.BANDED_FROM_KEYS)


# --- s16's and x9's first run (2026-12-04 20:21 / 20:22, batches 20261204T202122Z and 20261204T202216Z), explained
# by Nsight Compute at 20:38 (ncu.*@20261204T203849Z): kernel_s16_x9_findings.py. s16's band reads other runs (s9's
# earlier sessions, the profile's s16 / s9 cycles) with the timing-block term; x9's edges are its header's outcomes.
for _table, _entries in s16x9.banded(spread_terms()["timing_blocks_both_runs"], _READ_1109).items():
    BANDED[_table].update(_entries)
BANDED_FROM_KEYS.update(s16x9.BANDED_FROM_KEYS)
NOT_STRICT = NOT_STRICT | s16x9.NOT_STRICT
# The 20:38 profile counted x7's and x8's co-resident clusters, which their reasons said no profile had.
for _table, _key in (("preregistered", f"x7-pipelined-{VOCAB}"), ("vocab_target", "x7-pipelined"),
                     ("preregistered", f"{s15x8.X8}-{VOCAB}"), ("vocab_target", s15x8.X8)):
    _fid, _reason, _band = BANDED[_table][_key]
    BANDED[_table][_key] = (_fid, _reason + s16x9.x78_profile_note(), _band)

# Issue 17's fp32 target is met on the H200 since s17's first run (2026-12-05 02:56, kernels batch 20261205T025617Z:
# 2.933 ms at 4096^3, 91.6% of cuBLAS fp32's 2.688 ms beside it; the target is 2.987 ms): the finding that it is
# missed stays for the H100, where s17 has not run.
CARDS_KEYS[("single", "test_best_fp32_rung_vs_cublas")] = h100.H100


# --- x10's and s18's first run at their own shapes (2026-12-05 03:52 / 03:53, batches 20261205T035220Z and
# 20261205T035327Z; Nsight Compute at 03:54): kernel_s18_x10_findings.py. x10's band reads another run (the batch's
# x10_probe.log, a minute earlier) with the timing-block term; s18's edges are its header's headline and outcome (a).
for _table, _entries in s18x10.banded(spread_terms()["timing_blocks_both_runs"], _READ_1109,
                                      spread_terms()["read_ceiling_drift"]).items():
    BANDED[_table].update(_entries)
BANDED_FROM_KEYS.update(s18x10.BANDED_FROM_KEYS)
NOT_STRICT = NOT_STRICT | s18x10.NOT_STRICT
