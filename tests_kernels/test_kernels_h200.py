"""The ladders on the H200: each rung's recorded (or live) time against the three ledgers.

Recordings: results/h200/kernels/<ladder>.<rung>.<shape>@<stamp>.json, written by
`pytest-anatomy import-device` from scripts/device/kernels_plan.py's kernels.json, or live with
`--anatomy-record` on an H200. Ceilings (read and copy bandwidth) come from the same device run
(`kernels-ceilings`), never from the rung being checked. Until the device run exists every test
here skips, naming the missing file.

Pre-registered expectations (written before any H200 measurement): every rung's H200 time is in
its header and in Variant.h200_ms (test_kernels_registry keeps them equal), and is reconciled here
within issue 5's 15% band; a miss is a finding to explain, not a band to widen. Derived from those
times: only s2 beats its issued-byte roofline (3.8x; s1's 260 ms is 0.47x of its 123 ms byte
floor, and s4-s7's floors are the fp32 peak, which no rung beats); the best fp32 rung reaches
~75% of cuBLAS (under the 90% target), the mma.sync rung ~45% of cuBLAS bf16 (under 80%).
"""

from __future__ import annotations

import pytest

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
PREREGISTERED = [pytest.param(v, shape, id=f"{v.id}-{shape_label(shape)}") for lad in LADDERS for v in LADDERS[lad]
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
# Finding bands are the pre-registered ratio +-15% (issue 5's band): a measurement drifting further
# from the pre-registration is a divergence again, not the same finding.
PREREG_READ_BW = 4.47e12  # B/s: the read bandwidth the headers cite (results/h200/ceilings, torch.sum)


def _band(ratio: float) -> tuple[float, float]:
    return (round(ratio * (1 - ISSUE_BAND), 3), round(ratio * (1 + ISSUE_BAND), 3))


def _prereg_roofline_ratio(v: Variant) -> float:
    """measured/predicted FLOP rate the pre-registered time implies: issued-byte floor / pre-registered time."""
    s = SHAPES["sgemm"]
    floor = gemm_byte_ledger(v.theory, s["M"], s["N"], s["K"], peak_flops=get_hardware(HW).peak("fp32"),
                             bandwidth=PREREG_READ_BW)
    return floor.value / (v.preregistered_ms(s) * 1e-3)


def _exceeds(v: Variant) -> pytest.MarkDecorator:
    r = _prereg_roofline_ratio(v)
    return pytest.mark.finding(
        "h200-byte-ledger-exceeded", reason=f"Pre-registered ({v.preregistered_ms(SHAPES['sgemm'])} ms, {r:.2f}x "
        "its roofline): the coalesced rung's loads are re-read from L1/L2, so it beats the issued-byte roofline (its "
        "'arithmetic intensity' counts every load as DRAM traffic), as K2 did on the 4090.", expected=_band(r))


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
@pytest.mark.parametrize("rung", ["s5-2d-regtile", "s6-vectorized", "s7-warptiling"])
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
def test_sgemm_request_ledger_naive(measured, h200, reconcile):
    beats = _sgemm_beats(measured, h200)
    rows = {k: ({"requests": next(v for v in LADDERS["sgemm"] if v.id == k).theory.requests}, b) for k, (_, b) in beats.items()}
    prices = fit_prices(rows, sgemm.REQUEST_FIT, kinds=("requests",), ledger="request")
    s = SHAPES["sgemm"]
    v = LADDERS["sgemm"][1]
    pred = priced_time({"requests": v.theory.requests}, prices, s["M"], s["N"], s["K"], sm_count=h200.sm_count,
                       clock_hz=h200.boost_clock_hz, rung=v.id)
    reconcile("time_request_ledger", pred, rung_rec(measured, v, s)["time"], rel=ISSUE_BAND, why=ISSUE_WHY)


PREREG_FP32_OF_CUBLAS = 0.75  # s7 header: "~75% of cuBLAS fp32"
PREREG_BF16_OF_CUBLAS = 0.45  # s8 header: "~45% of cuBLAS bf16"


@pytest.mark.gpu
@pytest.mark.finding("h200-fp32-below-cublas-target", reason="Pre-registered: the best hand-written fp32 rung (warp "
                     "tiling, no double buffering, no swizzle) is predicted at ~75% of cuBLAS fp32, under the 90% "
                     "target: measured/predicted 0.90 / 0.75 = 1.2, band +-15%.",
                     expected=_band(0.90 / PREREG_FP32_OF_CUBLAS))
def test_best_fp32_rung_vs_cublas(measured, reconcile):
    s = SHAPES["sgemm"]
    recs = [rung_rec(measured, v, s) for v in LADDERS["sgemm"][1:] if v.dtype == "fp32"]
    best = min(recs, key=lambda r: r["time"].value)
    cublas = best["baseline_time"].value
    reconcile("best_fp32_time_vs_target", Prediction(cublas / 0.9, "s", "cuBLAS fp32 time / 0.90 (issue 5 target)",
                                                     {"cublas_s": cublas, "best_rung": best.data["rung"]}),
              best["time"], ratio=(0.0, 1.0), why="a target is one-sided: anything at or under it meets it")


@pytest.mark.gpu
@pytest.mark.finding("h200-mma-sync-below-wgmma", reason="Pre-registered: mma.sync (Ampere's instruction) with 32-bit "
                     "fragment loads is predicted at ~45% of cuBLAS bf16, which uses Hopper's wgmma; target 80%: "
                     "measured/predicted 0.80 / 0.45 = 1.78, band +-15%.",
                     expected=_band(0.80 / PREREG_BF16_OF_CUBLAS))
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
@pytest.mark.parametrize("v", _params("reduction")[1:] + _params("rmsnorm")[1:] + _params("softmax")[1:])
def test_streaming_floor(v, measured, ceilings, reconcile):
    s = SHAPES[v.ladder]
    floor = streaming_floor(v, s, ceilings)
    upper = v.preregistered_ms(s) * 1e-3 * (1 + ISSUE_BAND) / floor.value
    reconcile("time_floor", floor, rung_rec(measured, v, s)["time"], ratio=(0.95, max(upper, 0.95)), why=FLOOR_WHY)


@pytest.mark.gpu
@pytest.mark.parametrize("ladder,rung,target", [("reduction", "r7-vectorized", 0.95), ("rmsnorm", "n4-vectorized", 0.92),
                                               ("softmax", "x4-vectorized", 0.92)])
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
