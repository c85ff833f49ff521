"""Findings of r7's N sweep (the twenty-third visit, live session 2026-12-04 16:39, results/h200/live-runs/
20261204T163916Z.r7sweep.*): why r7 missed its pre-registered band at short sequences and at D=64.

No band here reads a time of that session. Each is built from other runs: a fixed cost per program measured on r6's
recorded sweep sessions (one 128-row program per SM, as r7), and r7's ratio at the target shape in its first session
(2026-12-04 14:57), priced at that session's ceilings. Nsight Compute (2026-12-04 16:38, the same kernel at the target
shape) shows r7 at one 12-warp program per SM: theoretical occupancy 18.75%, 168 registers per thread.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import flashattn_findings as ff
import pytest
from flashattn_cases import Case, predict

from pytest_anatomy import recordings
from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.specs.hardware import get_hardware

R7 = registry.TARGET_RUNGS[1]
R6 = registry.BEST
SWEEP_SESSION = "2026-12-04T16:39"  # the session judged (its recordings' stamps start so); never read here
BLOCK_M = 128  # r7's every config, and the r6 configs the fixed cost is read from (num_warps 8: one program per SM)
# r6's cases the fixed cost is read from: the shortest sequence r6 runs with 128-row 8-warp programs, and the longest
F_SHORT = Case(R6, 8, 32, 2048, 128, causal=False)
F_LONG = Case(R6, 1, 16, 32768, 128, causal=False)
TARGET = {m: Case(R7, 4, 32, 4096, 128, causal=m == "causal") for m in ("full", "causal")}


def _recs(case: Case) -> list[recordings.Recording]:
    paths = recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn", case.name)
    return [r for r in map(recordings.load_file, paths) if not r.recorded_at.startswith(SWEEP_SESSION)]


def _when(rec: recordings.Recording) -> datetime:
    return datetime.fromisoformat(rec.recorded_at.replace("Z", "+00:00"))


def _mid_s(case: Case, rec: recordings.Recording) -> float:
    return predict(case, ff.session_ceilings(rec), get_hardware(ff.MEASURED_ON))[0].value


def programs_per_sm(case: Case) -> float:
    sms = get_hardware(ff.MEASURED_ON).require("sm_count")
    return case.batch * case.heads * -(-case.n // BLOCK_M) / sms


def _one_program_per_sm(rec: recordings.Recording) -> bool:
    cfg = rec.data.get("config") or {}
    return cfg.get("BLOCK_M") == BLOCK_M and cfg.get("num_warps") == 8


def fixed_costs_s() -> list[float]:
    """Per r6 session with both F_SHORT and F_LONG at one 128-row program per SM: the per-program fixed time F of
    time / mid = R + P F / mid (P programs per SM, mid the compute-bound prediction) solved from the two cases."""
    longs = [r for r in _recs(F_LONG) if _one_program_per_sm(r)]
    out = []
    for s in (r for r in _recs(F_SHORT) if _one_program_per_sm(r)):
        near = [g for g in longs if abs(_when(g) - _when(s)) < timedelta(minutes=10)]
        if not near:
            continue
        g = near[0]
        ms, mg = _mid_s(F_SHORT, s), _mid_s(F_LONG, g)
        rs, rg = s["time"].value / ms, g["time"].value / mg
        out.append((rs - rg) / (programs_per_sm(F_SHORT) * (1 / ms - 1 / mg)))
    if not out:
        raise ValueError("no r6 session with both fixed-cost cases at one 128-row program per SM")
    return sorted(out)


def _target_first() -> dict[str, recordings.Recording]:
    return {m: _recs(c)[0] for m, c in TARGET.items()}


def ratio_at(case: Case, fixed_s: float, extra: float = 0.0) -> float:
    """r7's measured/mid at `case` if its target-shape ratio (first session) holds apart from a fixed cost per
    program: (R_T - P F / mid_T) + extra + P F / mid_case, both mids at the first session's ceilings."""
    t = _target_first()["causal" if case.causal else "full"]
    mid_t, mid_c = _mid_s(TARGET["causal" if case.causal else "full"], t), _mid_s(case, t)
    p = programs_per_sm(case)
    return t["time"].value / mid_t - p * fixed_s / mid_t + extra + p * fixed_s / mid_c


# r3's stated floor on the executed-FLOP efficiency: loads, MMAs and softmax serialised (registry, pre-registered)
SERIALISED_EFF = registry.rung("r3-fa2").efficiency.lo


def fixed_cost_band(case: Case) -> tuple[float, float]:
    f = fixed_costs_s()
    vals = [ratio_at(case, x) for x in (f[0], f[-1])]
    return round(min(vals), 3), round(max(vals), 3)


def head_dim_64_band(case: Case) -> tuple[float, float]:
    """From the case's pre-registered limit (a miss is a miss) to r7 at the serialised floor (r3's stated 0.25 of
    the GEMM peak: nothing overlapped) plus the largest fixed cost r6's sessions give, over r7's mid."""
    t = _target_first()["causal" if case.causal else "full"]
    limit = predict(case, ff.session_ceilings(t), get_hardware(ff.MEASURED_ON))[1][1]
    serial = registry.rung(R7).efficiency.mid / SERIALISED_EFF
    return round(limit, 3), round(serial + programs_per_sm(case) * fixed_costs_s()[-1] / _mid_s(case, t), 3)


SHORT = [Case(R7, b, 32, n, 128, causal=c) for b, n, c in
         ((32, 512, False), (32, 512, True), (16, 1024, False), (16, 1024, True), (8, 2048, True))]
D64 = [Case(R7, b, h, n, 64, causal=c) for b, h, n in ((32, 32, 512), (1, 16, 32768)) for c in (False, True)]


def _fixed_cost_reason() -> str:
    f = fixed_costs_s()
    first = _target_first()
    p = programs_per_sm(SHORT[0])
    r6_512 = min(r["time"].value for r in _recs(Case(R6, 32, 32, 512, 128, causal=False)))
    return (
        f"r7 ran N <= 2048 at D=128 far above its mid prediction, worst at N=512 (4 KV tiles of 128 per program, "
        f"1-4 causal), and slower than r6 there (r6's fastest N=512 full {r6_512 * 1e3:.4f} ms). Nsight Compute at "
        "the target shape (16:38) counts r7 at one 12-warp program per SM (theoretical occupancy 18.75%, 168 "
        f"registers), so every program's fixed part (the Q load and the ring's first K/V round trip, the first QK^T "
        "and the last PV of the intra-warpgroup pipeline, which nothing overlaps, and the O/LSE epilogue) is paid in "
        f"series: {p:.2f} programs per SM at every sweep shape (B*H*N is held), each paying it, while the work per "
        "program shrinks with N. r6 at N <= 1024 chose 64x64 tiles with 4 warps, several programs per SM, which "
        "overlap one program's fixed part with another's MMAs. The cost is measured apart: r6's sessions that ran "
        "N=2048 and N=32k (D=128 full) with 128-row 8-warp programs (one per SM) put r6's fixed part at "
        f"{f[0] * 1e6:.1f}-{f[-1] * 1e6:.1f} us per program ({len(f)} sessions; time / mid = R + P F / mid). r7's "
        f"first session ({first['full'].recorded_at[:16]}) ran the target shape at "
        f"{first['full']['time'].value / _mid_s(TARGET['full'], first['full']):.3f} / "
        f"{first['causal']['time'].value / _mid_s(TARGET['causal'], first['causal']):.3f} of its mid (full / "
        "causal). Band: that ratio, less the fixed part it already holds, plus r6's fixed part at the case's "
        "programs per SM and mid (both at the first session's ceilings), between r6's smallest and largest F; "
        "r7's own fixed part, with its two-partition start and its deeper consumer pipeline, may well exceed r6's, "
        "which the band's upper edge would then reveal.")


def _r6_ratios(case: Case) -> tuple[float, float]:
    ratios = [r["time"].value / _mid_s(case, r) for r in _recs(case)]
    return min(ratios), max(ratios)


def _d64_reason() -> str:
    r6_32k = min(r["time"].value for r in _recs(Case(R6, 1, 16, 32768, 64, causal=False)))
    d64 = [x for c in (False, True) for x in _r6_ratios(Case(R6, 1, 16, 32768, 64, causal=c))]
    d128 = [x for c in (False, True) for x in _r6_ratios(Case(R6, 1, 16, 32768, 128, causal=c))]
    return (
        "At D=64 r7 missed its band at N=512 (with the fixed part of h200-r7-one-program-per-sm-pays-its-fixed-part, "
        "twice as heavy against MMAs half as long) and at N=32k, where 256 KV tiles per program make the fixed part "
        f"negligible; at 32k it is slower than r6 (r6's fastest {r6_32k * 1e3:.3f} ms full). The pre-registration "
        "expected D=64 to cost r6 10-25% (the softmax work per score stays while each tile's MMAs halve), and r6's "
        f"sessions show {min(d64):.2f}-{max(d64):.2f}x at 32k D=64 against {min(d128):.2f}-{max(d128):.2f}x at "
        "D=128 (full and causal); r7, whose MMAs are faster, loses more. "
        "That is the direction, not a number: how much of r7's softmax runs exposed at D=64 (its two consumer "
        "warpgroups do not ping-pong, and the producer warp and mbarrier waits weigh twice as much per FLOP) is not "
        "established; no Nsight Compute profile of r7 at D=64 exists. Band, weak for that reason: from the case's "
        f"pre-registered limit (the miss is a miss) to r7 at r3's stated efficiency floor ({SERIALISED_EFF}: loads, "
        "MMAs and softmax serialised, nothing overlapped) plus the largest fixed part r6's sessions give.")


FIXED_COST = "h200-r7-one-program-per-sm-pays-its-fixed-part"
FIXED_COST_REASON = ff.quoted(_fixed_cost_reason)
D64_FINDING = "h200-r7-head-dim-64-slower-cause-unknown"
D64_REASON = ff.quoted(_d64_reason)


def _bands() -> dict[str, tuple[str, str, tuple[float, float]]]:
    try:
        return {**{c.name: (FIXED_COST, FIXED_COST_REASON, fixed_cost_band(c)) for c in SHORT},
                **{c.name: (D64_FINDING, D64_REASON, head_dim_64_band(c)) for c in D64}}
    except (recordings.MissingRecording, IndexError, ValueError, KeyError):
        return {}  # a checkout without the recordings the bands read: no mark, the cases diverge visibly


BANDS = _bands()


def sweep_marks(case: str) -> tuple[pytest.MarkDecorator, ...]:
    if case in BANDS:
        fid, reason, expected = BANDS[case]
        return (pytest.mark.finding(fid, hardware=ff.MEASURED_ON, expected=expected, reason=reason,
                                    band_from="other-runs"),)
    return ()
