"""The finding of the fp8 decode sweep across vLLM's Hopper fp8 dispatch M buckets (test_vllm_fp8_sweep.py), with the
sweep's recorded steps and the line through its bucket batches that the reason quotes and the tests reconcile."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
import vllm_decode_findings as vf

from pytest_anatomy import recordings

qd = vf.qd
PRE = json.loads(qd.SWEEP_PREREGISTRATION.read_text())
EXP = PRE["expected"]
METHOD = qd.SWEEP_METHOD


def _name(b: int) -> str:
    return f"{vf.MODEL}-{METHOD}.decode.b{b}"


@cache
def _recorded() -> dict[int, float] | None:
    try:
        recs = {b: recordings.load_latest(vf.RESULTS, vf.HARDWARE, "latency", _name(b)) for b in qd.SWEEP_BATCHES}
    except recordings.MissingRecording:
        return None
    stamps = {r.recorded_at for r in recs.values()}
    assert len(stamps) == 1, f"the sweep's batches come from different runs: {sorted(stamps)}"
    return {b: r["step_time_s"].value * 1e3 for b, r in recs.items()}


def _repeat(steps: dict[int, float]) -> float:
    return max(abs(steps[b] - float(EXP["first_run_ms"][str(b)]))
               for b in qd.SWEEP_BATCHES if str(b) in EXP["first_run_ms"])


def line_fit(steps: dict[int, float]) -> tuple[float, float, float, float]:
    """slope (ms a sequence), intercept, residual sd and the slope's standard error of the line through the sweep's
    bucket batches other than b=32."""
    x = np.array(qd.SWEEP_LINE_BATCHES, dtype=float)
    y = np.array([steps[b] for b in qd.SWEEP_LINE_BATCHES])
    slope, intercept = np.polyfit(x, y, 1)
    sd = float(np.sqrt(np.sum((y - (slope * x + intercept)) ** 2) / (len(x) - 2)))
    return float(slope), float(intercept), sd, sd / float(np.sqrt(np.sum((x - x.mean()) ** 2)))


def _flat_reason() -> str:
    steps = _recorded()
    if steps is None:
        return "[the sweep this reason quotes is not recorded in this checkout]"
    slope, intercept, _, se = line_fit(steps)
    bf16 = vf._bf16_step(64, METHOD) - vf._bf16_step(32, METHOD)
    jump = steps[17] - steps[16]
    return (
        "vLLM's fp8 decode step does not grow with the batch inside the dispatch's (16, 64] bucket. Pre-registered "
        f"({PRE['written_utc']}, before the sweep): the bucket line, the first run's b=8 and b=64 steps extended by "
        f"the theory's KV slope ({EXP['kv_slope_ms_per_seq']} ms a sequence: 1,088 tokens of bf16 K/V read once), "
        f"put a {EXP['jump_16_to_17_ms']:.2f} ms jump between b=16 and b=17 (the GEMMs' 16-wide tile giving way to "
        f"the 64-wide one) and {47 * EXP['kv_slope_ms_per_seq']:.2f} ms more between b=17 and b=64. Measured (one "
        f"engine): b=16 at {steps[16]:.3f} ms against the line's {EXP['bucket_ms']['16']:.3f}, then "
        f"{' / '.join(f'{steps[b]:.3f}' for b in qd.SWEEP_BATCHES if b > 16)} ms at b = "
        f"{' / '.join(str(b) for b in qd.SWEEP_BATCHES if b > 16)}: a jump of {jump:.2f} ms, "
        f"{jump / EXP['jump_16_to_17_ms']:.1f}x the pre-registered one, and no KV slope after it ({slope:+.4f} +- "
        f"{se:.4f} ms a sequence through b = {', '.join(map(str, qd.SWEEP_LINE_BATCHES))}, where the theory prices "
        f"{EXP['kv_slope_ms_per_seq']} and the last recorded bf16 steps before it grow by {bf16:.2f} ms from b=32 to "
        f"b=64). The first run's b=32 excess was the bucket's: b=32 lies {steps[32] - (slope * 32 + intercept):+.2f} "
        f"ms off the sweep's line, where the written alternative put it {EXP['b32_above_the_line_ms']['own']:.2f} "
        "above. What holds a flat step from M=17 to M=64 is unknown: the 64-wide swap-AB tile does the same work for "
        "any M in the bucket, which explains the jump's sign but not its size (the fp8 weights stream in ~1.7 ms at "
        "the read ceiling), nor why the KV reads, which the bf16 steps show, vanish. Candidates, untested: the CUDA "
        "graphs captured at 24-64 choose other attention splits than at 16; a GEMM bound by something other than DRAM "
        "whose time falls as M grows inside the bucket. Bands: the jump from the first run's level (the mean of its "
        "b=32 and b=64 steps) over the bucket line at 16, +- the card-to-card spread (other-runs); b=64 from the flat "
        "explanation itself (b=17's step +- two repeat scatters over b=17 + the priced KV reads: explanation).")


FLAT_REASON = _flat_reason()


def _flat_band_jump() -> tuple[float, float]:
    first = EXP["first_run_ms"]
    level = (float(first["32"]) + float(first["64"])) / 2 - float(EXP["bucket_ms"]["16"])
    half = vf.card_spread_ms()
    return (round((level - half) / EXP["jump_16_to_17_ms"], 3), round((level + half) / EXP["jump_16_to_17_ms"], 3))


def _flat_band_b64() -> tuple[float, float]:
    steps = _recorded()
    if steps is None:
        return (0.0, 0.0)
    s17, noise = steps[17], 2 * _repeat(steps)
    pred = s17 + 47 * EXP["kv_slope_ms_per_seq"]
    return (round((s17 - noise) / pred, 3), round((s17 + noise) / pred, 3))


FLAT_JUMP = pytest.mark.finding("h200-fp8-decode-flat-across-the-64-wide-tile", hardware=vf.HARDWARE,
                                expected=_flat_band_jump(), reason=FLAT_REASON, band_from="other-runs")
FLAT_B64 = pytest.mark.finding("h200-fp8-decode-flat-across-the-64-wide-tile", hardware=vf.HARDWARE,
                               expected=_flat_band_b64(), reason=FLAT_REASON, band_from="explanation")
