"""Findings of the first run of s13, its tuner family and x7 (2026-12-04 14:56), the tile ledger's cases the
noise budget uncovered (issue 10), and s14's first run (2026-12-04 16:38): their bands by table through
s13_x7_banded() and s14_banded(), the reasons that join the s9 cases' (JOINED_REASONS), and what s14 changes in
the tables before it (S14_NOT_STRICT, S14_BANDED_FROM_KEYS, S14_MET_THE_BF16_TARGET). kernel_findings.py
assembles them.
Split out of kernel_findings.py on 2026-12-07 to keep modules under 500 lines."""

from __future__ import annotations

import json

from kernel_findings_shared import (
    COPY_1109,
    FFN_SHAPES,
    KERNEL_RUN_2151,
    MEASURED_ON,
    PREREG_ACCEPT,
    READ_1109,
    RESULTS,
    S9_1109_MS,
    S9_OWN_TILE,
    S9_RUNG,
    SGEMM_SHAPE,
    SGEMM_SHAPES,
    TARGET_1109,
    VOCAB,
    ceiling_at,
    ledger_ipc,
    ms_list,
    run_ms,
    s9_ledger_bias,
    sm_count,
    spread,
    spread_terms,
    stamp,
)
from kernel_x6_s11_s12_findings import (
    AUTOTUNED_FP32_TARGET,
    TILE_CLOCK_BIAS_AND_MORE,
    TILE_PARTIAL_GRID,
    VOCAB_BYTES,
    X6_VOCAB_MS,
)

from pytest_anatomy.kernels import fused, sgemm


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
    resident = min(_space_warps(cid), -(-blocks // sm_count()) * t.threads // 32)
    return round(s9_ledger_bias(lab) * ledger_ipc(_space_warps(cid)) / ledger_ipc(resident), 4)


def _block_scatter(name: str, recorded_at: str) -> float:
    """|time / time_repeat - 1| of one recording of the run stamped `recorded_at`; NaN where absent."""
    path = RESULTS / f"{name}@{stamp(recorded_at)}.json"
    if not path.exists():
        return float("nan")
    m = json.loads(path.read_text())["measurements"]
    return abs(m["time"]["value"] / m["time_repeat"]["value"] - 1)


# s9's time over its own tile's ledger time in every recorded session at 4096^3 (the bias s13 shares)
_S9_BIASES = [json.loads(p.read_text())["measurements"]["time"]["value"] * 1e3
              / sgemm.S9_TILE_PREREGISTERED[(S9_OWN_TILE, SGEMM_SHAPE)]
              for p in sorted(RESULTS.glob(f"sgemm.{S9_RUNG}.{SGEMM_SHAPE}@*.json"))] or [float("nan")]
_S13_OWN_SHARE = [_S13_MS[lab] / sgemm.S13_TILE_PREREGISTERED[(_S13_OWN_TILE, lab)] / s9_ledger_bias(lab) - 1
                  for lab in SGEMM_SHAPES]
S13_KEPT_S9S_PACE = (
    f" s13 (three-stage cp.async ring, one barrier per k-tile, cross-tile fragment prefetch; its header is this "
    f"ledger's price for its own tile) ran {ms_list(_S13_MS)} ({KERNEL_RUN_1456[:16]} run), "
    + ", ".join(f"{_S13_MS[lab] / sgemm.S13_TILE_PREREGISTERED[(_S13_OWN_TILE, lab)]:.3f}x" for lab in SGEMM_SHAPES)
    + " its pre-registration, against s9's "
    + ", ".join(f"{s9_ledger_bias(lab):.3f}x" for lab in SGEMM_SHAPES)
    + f" of its own tile's ledger time (11:09 run; {min(_S9_BIASES):.3f}-{max(_S9_BIASES):.3f}x at 4096^3 over "
    f"{len(_S9_BIASES)} recorded s9 sessions): s9's clock bias (the ledger prices the 1.98 GHz boost, the bias "
    "h200-fp32-sgemm-slower-than-its-headers names against s9's hand header) plus "
    + "-".join(f"{x:.1%}" for x in sorted(_S13_OWN_SHARE)[::len(_S13_OWN_SHARE) - 1]) + " of s13's own. The header stated two outcomes in advance: the deeper "
    "pipeline lowers the pace (~2.8 ms at 4096^3) or the pace stays s9's (~1.07x the ledger, ~3.25 ms, slower "
    "than s9). The second held, and worse: with the ledger already charging s13's 3.5% more instructions, s13 ran "
    f"{_S13_MS[SGEMM_SHAPE] / S9_1109_MS[SGEMM_SHAPE]:.3f}x s9's 11:09 time at 4096^3, so the stall per instruction "
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
    RESULTS / f"autotune.sgemm.s13-tile.{lab}@{stamp(KERNEL_RUN_1456)}.json") for lab in SGEMM_SHAPES}
_S13_BEST_PREREG = {lab: min(ms for (cid, lb), ms in sgemm.S13_TILE_PREREGISTERED.items() if lb == lab)
                    for lab in SGEMM_SHAPES}


def s13_autotune_band(lab: str) -> tuple[float, float]:
    """From the best pre-registered s13 candidate -15% to candidate 0 (s13) at the top of the tile-ledger finding's
    band (its ledger x s9's 11:09 bias x 1.15), over the 11:09 run's cuBLAS / goal."""
    top = sgemm.S13_TILE_PREREGISTERED[(_S13_OWN_TILE, lab)] * s9_ledger_bias(lab) * (1 + PREREG_ACCEPT)
    return (round(_S13_BEST_PREREG[lab] * (1 - PREREG_ACCEPT) / TARGET_1109[lab], 4),
            round(top / TARGET_1109[lab], 4))


S13_AUTOTUNED_FP32_TARGET = (
    f"s13's tuner family (sgemm.S13_TILE_SPACE, {KERNEL_RUN_1456[:16]} run) chose "
    + "; ".join(f"{lab}: {(c or {}).get('data', {}).get('choice', '?').removeprefix('s13-tile-')} at "
                f"{(c or {}).get('measurements', {}).get('time', {}).get('value', float('nan')) * 1e3:.4f} ms, target "
                f"{TARGET_1109[lab]:.4f} ms (11:09 cuBLAS)" for lab, c in _S13_CHOICE.items())
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
    f"{VOCAB_BYTES / (_X7_VOCAB_MS * 1e-3) / ceiling_at('read', KERNEL_RUN_1456):.0%} of that run's read ceiling "
    f"(target 85%), slower than x6's {X6_VOCAB_MS:.4f} ms (21:51 run), though "
    f"{run_ms(f'softmax.x0-torch.{VOCAB}', KERNEL_RUN_1456) / _X7_VOCAB_MS:.2f}x faster than torch in the same run. "
    "Its 8,192 x 2,048 path (x5's warp per row) agreed with its header. The candidate is the risk the header named "
    "before the run: if fewer than 14 one-block-per-SM clusters of 8 are co-resident, the last clusters' rows wait "
    "for another cluster's and the time up to roughly doubles. Unconfirmed: no Nsight Compute profile of x7 (Max "
    "Active Clusters would say), and in its plain form the risk predicts ~2x, not 1.35x; the excess, "
    f"{(_X7_VOCAB_MS - _X7_PREREG_MS) * 1e3:.1f} us over 10 row rounds, would also fit a per-row exchange round trip "
    "(barrier.cluster and the DSMEM reads, which the ledger charged once) left exposed each row. Band, from the "
    "pre-registration: from its acceptance edge (1.15x: the miss is a miss) to the risk's own size (2x the "
    "prediction), in the test's units (the 11:09 run's read ceiling where the test divides by one).")
# The tables s13's and x7's entries join, filled in the order written (s13_x7_banded returns them).
BANDED_1456: dict[str, dict[str, tuple[str, str, tuple[float, float]]]] = {
    "preregistered": {}, "tile_preregistered": {}, "vocab_target": {}}
BANDED_1456["preregistered"].update({
    **{f"{_S13}-{lab}": ("h200-tile-ledger-clock-bias-and-more", TILE_CLOCK_BIAS_AND_MORE_S13, tile_bias_band(lab))
       for lab in SGEMM_SHAPES},
    f"x7-pipelined-{VOCAB}": ("h200-pipelined-cluster-vocab-short-of-its-ledger", X7_VOCAB_SHORT,
                              (1 + PREREG_ACCEPT, X7_RISK_DOUBLES))})
BANDED_1456["tile_preregistered"].update({
    f"s13-tile-64x128x16-s4-b4-{FFN_SHAPES[0]}": ("h200-tile-ledger-clock-bias-and-more", TILE_CLOCK_BIAS_AND_MORE_S13,
                                                  tile_bias_band(FFN_SHAPES[0])),
    f"{_S13_PG[0]}-{_S13_PG[1]}": ("h200-tile-ledger-partial-grid-residency", TILE_PARTIAL_GRID_S13,
                                   (tile_bias_band(_S13_PG[1])[0], s13_partial_grid_upper(*_S13_PG)))})
BANDED_1456["vocab_target"]["x7-pipelined"] = (
    "h200-pipelined-cluster-vocab-short-of-its-ledger", X7_VOCAB_SHORT,
    (round(_X7_PREREG_MS * 1e-3 * (1 + PREREG_ACCEPT) * READ_1109 / VOCAB_BYTES, 4),
     round(_X7_PREREG_MS * 1e-3 * X7_RISK_DOUBLES * READ_1109 / VOCAB_BYTES, 4)))
BANDED_1456["s13_autotune_target"] = {
    lab: ("h200-autotuned-fp32-below-cublas-target", S13_AUTOTUNED_FP32_TARGET, s13_autotune_band(lab))
    for lab in SGEMM_SHAPES}
# --- the tile ledger's cases the noise budget uncovered (issue 10, 2026-12-04) -------------------------------------
# Until then the candidates' tolerance was the 15% acceptance target; kernel_budget.tile_budget replaced it with the
# candidate's timing blocks + its other sessions (or rung 0's session drift) + s9's counted pace. These 21 cases, 6.3%
# to 14.8% slower than their pre-registration, agreed under 15% and exceed that budget (~7%; s9's own tile ~0.4-1.1%).
# Same sign, same ledger, same cause as the finding's first cases: its band, from s9's 11:09 bias (another run).
_NOISE_FIRST = ("s9-tile-128x128x16-b2", "s13-tile-128x128x16-s3-b2")  # each family's rung itself (a tuple: BANDED keeps one order)
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
_S9_OWN = [r for (cid, _), r in _NOISE_RATIOS.items() if cid == S9_OWN_TILE]
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
BANDED_1456["tile_preregistered"].update({f"{cid}-{lab}": ("h200-tile-ledger-clock-bias-and-more",
                                                      TILE_CLOCK_BIAS_AND_MORE_S13, tile_bias_band(lab))
                                     for cid, lab in TILE_NOISE_UNCOVERED})
# One reason per finding: the s9 cases' entries carry the s13 paragraphs too.
JOINED_REASONS = {"h200-tile-ledger-clock-bias-and-more": TILE_CLOCK_BIAS_AND_MORE_S13 + TILE_NOISE_UNCOVERED_WHY,
                  "h200-tile-ledger-partial-grid-residency": TILE_PARTIAL_GRID_S13,
                  "h200-autotuned-fp32-below-cublas-target": AUTOTUNED_FP32_TARGET + " " + S13_AUTOTUNED_FP32_TARGET}


def s13_x7_banded() -> dict[str, dict[str, tuple[str, str, tuple[float, float]]]]:
    """kernel_findings.BANDED's entries for s13's and x7's first run and the noise cases, by table (fresh tables)."""
    return {table: dict(entries) for table, entries in BANDED_1456.items()}


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
    return -(-(rows * cols) // sm_count())


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
    return cols * (cols / sm_count()) * k * bn * 2.0


def s14_dram_band(lab: str) -> tuple[float, float]:
    """s14_dram_bytes at the 11:09 run's read ceiling to at its copy ceiling (read + write traffic), over the
    pre-registration, +- the measured noise with the read ceiling's drift."""
    b, pre = s14_dram_bytes(lab), _s14_prereg_ms(lab) * 1e-3
    return (round(b / READ_1109 / pre * (1 - spread(True)), 4), round(b / COPY_1109 / pre * (1 + spread(True)), 4))


_S12_SESSIONS_32 = sorted(json.loads(p.read_text())["measurements"]["time"]["value"] * 1e3
                          for p in RESULTS.glob(f"sgemm.s12-bf16-wgmma.{FFN_SHAPES[1]}@*.json")
                          if stamp(KERNEL_RUN_1638) not in p.name) or [float("nan")]
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
    f"128 x 256 on {sm_count()} SMs, {_s14_grid(_BIG)[0] * _s14_grid(_BIG)[1] / sm_count():.2f} waves), and the "
    "header's exposed fill and epilogue (3-5 us per tile) would add "
    f"{S14_EXPOSED_US[0] * s14_tiles_on_busiest_sm(_BIG) / (_s14_prereg_ms(_BIG) * 1e3):.0%}-"
    f"{S14_EXPOSED_US[1] * s14_tiles_on_busiest_sm(_BIG) / (_s14_prereg_ms(_BIG) * 1e3):.0%}. The DRAM does: "
    f"blockIdx.x walks B's {_s14_grid(_BIG)[1]} column tiles, so a row tile's {_s14_grid(_BIG)[1]} blocks run "
    f"together and the next row's block on the same columns starts {_s14_grid(_BIG)[1] / sm_count():.2f} of a "
    "tile's life later; in between the resident blocks stream "
    f"{s14_reuse_distance_bytes(_BIG) / 2**20:.0f} MiB of other B tiles through a "
    f"{(get_l2_bytes() or 0) / 2**20:.0f} MiB L2, so (LRU) none of B ({_dims(_BIG)[1] * _dims(_BIG)[2] * 2 / 1e6:.0f} "
    f"MB) survives to its next row tile: {_s14_grid(_BIG)[0]} reads of B plus A and C, "
    f"{s14_dram_bytes(_BIG) / 1e9:.2f} GB, {s14_dram_bytes(_BIG) / READ_1109 * 1e3:.3f} ms at the 11:09 run's "
    f"{READ_1109 / 1e12:.2f} TB/s read ceiling "
    f"({s14_dram_bytes(_BIG) / READ_1109 / (_s14_prereg_ms(_BIG) * 1e-3):.2f}x the price): above the tensor work, "
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
    f"{s14_dram_bytes(_SMALL) / READ_1109 * 1e3:.4f} ms at the read ceiling, under the tensor work. Neither "
    "reaches the measured time; why is not established. Candidates: only "
    f"{_s14_grid(_SMALL)[1]} of {sm_count()} SMs pull the 136 MB (each SM's TMA stream, not the DRAM, may bind), "
    "and the tensor work and the stream overlap less than the price's max() assumes. Band, weak for that reason: "
    "from the 15% goal (the miss is a miss) to s12's fastest recorded time at this shape over the price "
    f"({_S12_SESSIONS_32[0]:.4f} ms over {len(_S12_SESSIONS_32)} sessions: the TMA rung no slower than the "
    "cp.async wgmma rung it follows).")
BANDED_1638: dict[str, dict[str, tuple[str, str, tuple[float, float]]]] = {"preregistered": {
    f"{_S14}-{SGEMM_SHAPE}": ("h200-s14-fill-and-epilogue-per-tile", S14_FILL_AND_EPILOGUE,
                             s14_fill_band(SGEMM_SHAPE)),
    f"{_S14}-{_BIG}": ("h200-s14-row-tiles-reread-b-from-dram", S14_ROW_TILES_REREAD_B, s14_dram_band(_BIG)),
    f"{_S14}-{_SMALL}": ("h200-s14-32-rows-slower-than-its-price", S14_32_ROWS,
                         (1 + PREREG_ACCEPT, round(_S12_SESSIONS_32[0] / _s14_prereg_ms(_SMALL), 4)))}}
S14_NOT_STRICT = frozenset({"h200-s14-fill-and-epilogue-per-tile"})
S14_BANDED_FROM_KEYS: dict[tuple[str, str], str] = {("preregistered", f"{_S14}-{SGEMM_SHAPE}"): "preregistered",
                                                  ("preregistered", f"{_S14}-{_BIG}"): "explanation"}
# The note on issue 17's bf16 target that kernel_findings appends to the H200's reason (the finding stays for the
# H100, where s14 has not run).
S14_MET_THE_BF16_TARGET = (
    f" Retired on the H200 by s14 (TMA, warp-specialised wgmma): {_S14_MS[SGEMM_SHAPE]:.4f} ms at 4096^3 in its first "
    f"run ({KERNEL_RUN_1638[:16]}), {_S14_CUBLAS_MS[SGEMM_SHAPE] / _S14_MS[SGEMM_SHAPE]:.0%} of cuBLAS bf16's "
    f"{_S14_CUBLAS_MS[SGEMM_SHAPE]:.4f} ms beside it; held on the H100, where s14 has not run.")


def s14_banded() -> dict[str, dict[str, tuple[str, str, tuple[float, float]]]]:
    """kernel_findings.BANDED's entries for s14's first run, by table (fresh tables)."""
    return {table: dict(entries) for table, entries in BANDED_1638.items()}
