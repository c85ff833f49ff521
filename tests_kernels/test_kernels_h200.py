"""The ladders on the H200: each rung's recorded (or live) time against the three ledgers.

Recordings: results/h200/kernels/<ladder>.<rung>.<shape>@<stamp>.json, written by
`pytest-anatomy import-device` from scripts/device/kernels_plan.py's kernels.json, or live with
`--anatomy-record` on an H200. Ceilings (read and copy bandwidth) come from the same device run
(`kernels-ceilings`), never from the rung being checked. Until the device run exists every test
here skips, naming the missing file.

Pre-registered expectations (written before any H200 measurement): every rung's H200 time is in
its header and in Variant.h200_ms (test_kernels_registry keeps them equal), and is reconciled here
within issue 5's 15% band; a miss is a finding to explain, not a band to widen.

First H200 run (2026-11-30): 6 of 25 pre-registered times held (s1, s4, r7, n2, n3, n4); the 19
misses carry findings (h200_findings.py) whose explanations cite the rungs' Nsight Compute
counters (results/h200/kernels/ncu.*): the 4090's load prices were too high for the H200 (s2,
s3), s5-s7 are latency-bound at 8-16 warps per SM, r1-r4 tree-bound, r5/r6 short of bytes in
flight, the 8,192 x 2,048 softmax rungs instruction-bound. Targets: best fp32 rung 61% of cuBLAS
(target 90%), mma.sync 31% of cuBLAS bf16 (80%), r7 98% and n4 96% of the measured bandwidth
(95%, 92%: met), x4 69% (92%: missed).
"""

from __future__ import annotations

import pytest

import h200_findings as hf

from pytest_anatomy.kernels import fused, reduction, sgemm
from pytest_anatomy.kernels.ladders import LADDERS
from pytest_anatomy.kernels.registry import DeviceFacts, Variant, shape_label
from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory.kernels import (
    beat_from_time,
    fit_prices,
    gemm_byte_ledger,
    priced_time,
    reduction_ledger,
    stream_ledger,
)
from pytest_anatomy.theory.prediction import Prediction

HW = "h200"
SHAPES = {"sgemm": sgemm.TIMING_SHAPE, "reduction": reduction.TIMING_SHAPE, "rmsnorm": fused.RMSNORM_TIMING_SHAPE,
          "softmax": fused.SOFTMAX_TIMING_SHAPE}
ISSUE_BAND = 0.15
ISSUE_WHY = "issue 5's acceptance band for held-out rungs (the timing noise is reported as time vs time_repeat)"


def baseline_of(v: Variant) -> Variant:
    return sgemm.BF16_BASELINE if (v.ladder == "sgemm" and v.dtype == "bf16") else LADDERS[v.ladder][0]


def _live_tools() -> None:
    import importlib.util

    missing = [m for m in ("torch", "cuda.core") if importlib.util.find_spec(m.split(".")[0]) is None
               or (m == "cuda.core" and importlib.util.find_spec(m) is None)]
    if missing:
        pytest.skip(f"a live H200 was detected but {', '.join(missing)} is not importable here: install torch and "
                    "cuda-core (the H200 image has both), or replay recordings with --anatomy-source=recorded")


def rung_rec(measured, v: Variant, shape: dict[str, int]):
    def live():
        _live_tools()
        from pytest_anatomy.measure.kernel_runner import live_rung

        return live_rung(v, baseline_of(v), shape)
    return measured(f"{v.ladder}.{v.id}.{shape_label(shape)}", live=live, hardware=HW)


@pytest.fixture
def ceilings(measured):
    def live():
        _live_tools()
        from pytest_anatomy.measure.kernel_runner import live_ceilings

        return live_ceilings()
    return measured("kernels-ceilings", live=live, hardware=HW)


def _params(ladder: str, marks: dict[str, pytest.MarkDecorator] | None = None):
    return [pytest.param(v, id=v.id, marks=(marks or {}).get(v.id, ())) for v in LADDERS[ladder]]


# --- correctness and noise, every rung ---------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("v", [p for lad in LADDERS for p in _params(lad)] + [pytest.param(sgemm.BF16_BASELINE, id="s0-cublas-bf16")])
def test_rung_is_correct_and_timed_twice(v, measured):
    rec = rung_rec(measured, v, SHAPES[v.ladder])
    checks = rec.data["run"]["result"].get("correctness") or []
    wrong = [c for c in checks if c.get("status") == "wrong"]
    assert not wrong, f"{v.ladder}.{v.id} computed wrong results: {wrong}"
    assert rec.data["ms_median"] > 0 and rec.data["baseline_ms_median"] > 0
    assert rec.data["ms_median_repeat"] is not None, "each rung is timed in two blocks so the noise is known"


# --- every rung: its pre-registered time -----------------------------------------------------
PREREG_WHY = ("issue 5's 15% acceptance band for a prediction made without the measurement (the rung's own "
              "two timing blocks, time vs time_repeat, show the noise is far smaller)")
PREREGISTERED = [pytest.param(v, shape, id=f"{v.id}-{shape_label(shape)}",
                              marks=hf.marks_for(hf.PREREGISTERED, f"{v.id}-{shape_label(shape)}"))
                 for lad in LADDERS for v in LADDERS[lad]
                 for shape in (SHAPES[lad], fused.VOCAB_SHAPE) if v.preregistered_ms(shape) is not None]


@pytest.mark.gpu
@pytest.mark.parametrize("v,shape", PREREGISTERED)
def test_preregistered_time(v, shape, measured, reconcile):
    ms = v.preregistered_ms(shape)
    pred = Prediction(ms * 1e-3, "s", "pre-registered in the rung header before any H200 measurement",
                      {"rung": v.id, "shape": shape_label(shape), "source": v.source},
                      notes=(("a hand prediction from the 4090's prices and the ledgers, written down first; "
                              "never adjusted after the measurement"),))
    reconcile("time_vs_preregistered", pred, rung_rec(measured, v, shape)["time"], rel=ISSUE_BAND, why=PREREG_WHY)


# --- SGEMM: byte ledger, instruction ledger, request ledger, targets ---------------------------
# Finding bands: the first run's measured ratio +-10% (h200_findings.py says why).
PREREG_READ_BW = 4.47e12  # B/s: the read bandwidth the headers cite (results/h200/ceilings, torch.sum)


def _prereg_roofline_ratio(v: Variant) -> float:
    """measured/predicted FLOP rate the pre-registered time implies: issued-byte floor / pre-registered time."""
    s = SHAPES["sgemm"]
    floor = gemm_byte_ledger(v.theory, s["M"], s["N"], s["K"], peak_flops=get_hardware(HW).peak("fp32"),
                             bandwidth=PREREG_READ_BW)
    return floor.value / (v.preregistered_ms(s) * 1e-3)


def _exceeds(v: Variant) -> pytest.MarkDecorator:
    r = _prereg_roofline_ratio(v)
    return pytest.mark.finding(
        "h200-byte-ledger-exceeded", reason=f"Pre-registered at {r:.2f}x its issued-byte roofline "
        f"({v.preregistered_ms(SHAPES['sgemm'])} ms); measured 5.16x (24.0 ms). The coalesced rung issues 2 loads "
        "per FMA, 550 GB if every load reached DRAM, but ncu counts 4.26 GB of DRAM reads: L1 serves 95% of the loads "
        "and L2 60% of the rest. The 'arithmetic intensity' of the textbook roofline counts cache hits as DRAM "
        "traffic, as K2 did on the 4090. Band: the measured ratio +-10%.", expected=hf.band(5.159))


ROOFLINE_RUNGS = [v for v in LADDERS["sgemm"][1:] if not v.theory.tensor_core]


@pytest.mark.gpu
@pytest.mark.parametrize("v", [pytest.param(v, id=v.id, marks=_exceeds(v) if _prereg_roofline_ratio(v) > 1 else ())
                               for v in ROOFLINE_RUNGS])
def test_sgemm_issued_byte_roofline(v, measured, h200, ceilings, reconcile):
    s = SHAPES["sgemm"]
    floor = gemm_byte_ledger(v.theory, s["M"], s["N"], s["K"], peak_flops=h200.peak("fp32"),
                             bandwidth=ceilings["read_bandwidth"].value, sources="datasheet fp32 peak, measured read bandwidth")
    flops = 2.0 * s["M"] * s["N"] * s["K"]
    rec = rung_rec(measured, v, s)
    rate = Measurement(flops / rec["time"].value, "FLOP/s", source=rec["time"].source, provenance=rec["time"].provenance)
    reconcile("attainable_flop_rate", Prediction(flops / floor.value, "FLOP/s", f"2MNK / ({floor.formula})",
                                                 floor.inputs, floor.terms, floor.notes),
              rate, ratio=(0.0, 1.0), why="a roofline is an upper bound; only exceeding it falsifies the byte count")


def _sgemm_beats(measured, h200) -> dict[str, tuple[dict[str, float], float]]:
    s = SHAPES["sgemm"]
    out = {}
    for v in LADDERS["sgemm"][1:]:
        if v.theory.tensor_core:
            continue
        t = rung_rec(measured, v, s)["time"].value
        out[v.id] = (v.theory.counts(), beat_from_time(t, s["M"], s["N"], s["K"], h200.sm_count, h200.boost_clock_hz))
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("rung", [pytest.param(r, marks=hf.finding("h200-instruction-ledger-no-latency-term",
                                                                  hf.INSTRUCTION_LEDGER, ratio))
                                  for r, ratio in hf.INSTRUCTION_HELD_OUT.items()])
def test_sgemm_instruction_ledger_held_out(rung, measured, h200, reconcile):
    """Prices fitted on s2, s3, s4 of the same run; s5-s7 held out. Clock: the datasheet boost
    clock (the run records nvidia-smi's SM clock next to it)."""
    beats = _sgemm_beats(measured, h200)
    prices = fit_prices(beats, sgemm.INSTRUCTION_FIT)
    s = SHAPES["sgemm"]
    v = next(x for x in LADDERS["sgemm"] if x.id == rung)
    pred = priced_time(v.theory.counts(), prices, s["M"], s["N"], s["K"], sm_count=h200.sm_count,
                       clock_hz=h200.boost_clock_hz, rung=rung)
    reconcile("time_instruction_ledger", pred, rung_rec(measured, v, s)["time"], rel=ISSUE_BAND, why=ISSUE_WHY)


@pytest.mark.gpu
@hf.finding("h200-request-price-from-a-latency-bound-rung", hf.REQUEST_PRICE, 0.698)
def test_sgemm_request_ledger_naive(measured, h200, reconcile):
    beats = _sgemm_beats(measured, h200)
    rows = {k: ({"requests": next(v for v in LADDERS["sgemm"] if v.id == k).theory.requests}, b) for k, (_, b) in beats.items()}
    prices = fit_prices(rows, sgemm.REQUEST_FIT, kinds=("requests",), ledger="request")
    s = SHAPES["sgemm"]
    v = LADDERS["sgemm"][1]
    pred = priced_time({"requests": v.theory.requests}, prices, s["M"], s["N"], s["K"], sm_count=h200.sm_count,
                       clock_hz=h200.boost_clock_hz, rung=v.id)
    reconcile("time_request_ledger", pred, rung_rec(measured, v, s)["time"], rel=ISSUE_BAND, why=ISSUE_WHY)


@pytest.mark.gpu
@hf.finding("h200-fp32-below-cublas-target", "The best fp32 rungs (s5 2D register tiling, s6 vectorized: 4.43 ms) "
            "reach 60.7% of cuBLAS fp32 (2.69 ms), under issue 5's 90%; s7 (warp tiling), pre-registered at 3.0 ms "
            "= 90-93% of cuBLAS, is the slowest of the three at 44% (6.07 ms). " + hf.LATENCY_BOUND_GEMM, 1.483)
def test_best_fp32_rung_vs_cublas(measured, reconcile):
    s = SHAPES["sgemm"]
    recs = [rung_rec(measured, v, s) for v in LADDERS["sgemm"][1:] if v.dtype == "fp32"]
    best = min(recs, key=lambda r: r["time"].value)
    cublas = best["baseline_time"].value
    reconcile("best_fp32_time_vs_target", Prediction(cublas / 0.9, "s", "cuBLAS fp32 time / 0.90 (issue 5 target)",
                                                     {"cublas_s": cublas, "best_rung": best.data["rung"]}),
              best["time"], ratio=(0.0, 1.0), why="a target is one-sided: anything at or under it meets it")


@pytest.mark.gpu
@hf.finding("h200-mma-sync-below-wgmma", hf.MMA_SYNC + " Target 80%: measured/target time 2.54.", 2.540)
def test_tensor_core_rung_vs_cublas_bf16(measured, reconcile):
    rec = rung_rec(measured, LADDERS["sgemm"][-1], SHAPES["sgemm"])
    cublas = rec["baseline_time"].value
    reconcile("bf16_time_vs_target", Prediction(cublas / 0.8, "s", "cuBLAS bf16 time / 0.80 (issue 5 target)",
                                                {"cublas_s": cublas}),
              rec["time"], ratio=(0.0, 1.0), why="a target is one-sided: anything at or under it meets it")


# --- streaming ladders: DRAM-byte floors with the run's own ceilings --------------------------
FLOOR_WHY = ("lower: floor from the run's measured bandwidth (a torch kernel's median): a hand kernel may beat "
             "that kernel by a few % (0.95), never by more; upper: the rung's pre-registered time + issue 5's 15% "
             "(test_preregistered_time checks that time from both sides; this bound only keeps the floor finite)")


def streaming_floor(v: Variant, s: dict[str, int], ceilings) -> Prediction:
    """The DRAM-byte floor of a streaming rung from the run's own ceilings (read bandwidth for a
    reduction, copy bandwidth for a read + write rung)."""
    if v.ladder == "reduction":
        return reduction_ledger(s["n"], reduction.partials_of(v.calls(s, DeviceFacts(sm_count=132))),
                                read_bandwidth=ceilings["read_bandwidth"].value,
                                bandwidth_source="kernels-ceilings read_bandwidth")
    return stream_ledger(v.theory, s["M"], s["N"], bandwidth=ceilings["copy_bandwidth"].value, model="dram",
                         bandwidth_source="kernels-ceilings copy_bandwidth (read + write)")


@pytest.mark.gpu
@pytest.mark.parametrize("v", [pytest.param(v, id=v.id, marks=hf.marks_for(hf.STREAMING_FLOOR, v.id))
                               for lad in ("reduction", "rmsnorm", "softmax") for v in LADDERS[lad][1:]])
def test_streaming_floor(v, measured, ceilings, reconcile):
    s = SHAPES[v.ladder]
    floor = streaming_floor(v, s, ceilings)
    upper = v.preregistered_ms(s) * 1e-3 * (1 + ISSUE_BAND) / floor.value
    reconcile("time_floor", floor, rung_rec(measured, v, s)["time"], ratio=(0.95, max(upper, 0.95)), why=FLOOR_WHY)


@pytest.mark.gpu
@pytest.mark.parametrize("ladder,rung,target", [
    ("reduction", "r7-vectorized", 0.95), ("rmsnorm", "n4-vectorized", 0.92),
    pytest.param("softmax", "x4-vectorized", 0.92, marks=hf.finding(
        "h200-softmax-short-rows-instruction-bound", hf.SHORT_ROWS + " Target 92% of the copy bandwidth: reached 69%.",
        1.440))])
def test_best_streaming_rung_target(ladder, rung, target, measured, ceilings, reconcile):
    v = next(x for x in LADDERS[ladder] if x.id == rung)
    s = SHAPES[ladder]
    floor = streaming_floor(v, s, ceilings)
    reconcile("time_vs_bandwidth_target", floor, rung_rec(measured, v, s)["time"], ratio=(0.95, 1.0 / target),
              why=f"issue 5 target: >= {target:.0%} of the measured bandwidth; 0.95 as in the floor tests")


@pytest.mark.gpu
@pytest.mark.parametrize("v", [v for v in fused.SOFTMAX if v.max_cols is not None])
def test_register_rungs_refuse_the_vocab_row(v, measured):
    rec = rung_rec(measured, v, fused.VOCAB_SHAPE)
    assert rec.data["status"] == "refused" and "registers" in rec.data["reason"]
