"""vLLM's lone-prompt prefill per weight format (scripts/device/quant_decode.py prefill's runs, results/<hw>/latency/
qwen2.5-7b-<method>.prefill.l<L>) against its pre-registration (vllm_prefill_preregistered.json, written before any
run from a committed theory): issue 13's prefill speed for fp8, AWQ and GPTQ at 7B. The theory: fp8 W8A8 on the fp8
tensor cores (the datasheet's fp8/bf16 ratio on the calibrated bf16 peak), AWQ and GPTQ dequantized to fp16 on the
bf16 peak (theory/quant_planning.py). bf16 itself is the latency suite's qwen2.5-7b.prefill.l<L>, recorded every
session. Recorded only, and no case is collected until a run of the plan exists (docs/RECORDING.md names the call).

Tolerance: the decode replay's approach (test_vllm_decode_replay.py), the calibration's transfer uncertainty from the
one recorded session the pre-registration carries to any H200, two terms:
  1. per chunk, the largest distance of any recorded session's b=1 overhead from the calibration's (each chunk's
     step carries one t_overhead; tests_latency/latency_b1_overheads.py pins them);
  2. the priced part (the prediction less its chunks' overheads: FLOPs / (eta x peak x ratio)) times the recorded
     bf16 matmul ceilings' spread (max / min - 1 over every ceilings recording of the card): the compute-bound
     analogue of the decode replay's read-ceiling spread.
Not the run's noise: a prefill's five repeats scatter ~1% at 2,048 tokens and above, under both terms."""

from __future__ import annotations

import json
from typing import Any

import pytest
import vllm_decode_findings as vf
import vllm_prefill_findings as pf

from pytest_anatomy import recordings
from pytest_anatomy.theory.prediction import Prediction, Term

qd = vf.qd
PREREG = json.loads(qd.PREFILL_PREREGISTRATION.read_text())
METHODS = qd.METHODS  # the JSON's "bf16" rows are the baseline's prediction, reconciled by the latency suite


def run_name(method: str, length: int) -> str:
    return f"{vf.MODEL}-{method}.prefill.l{length}"


RECORDED = [(m, n) for m in METHODS for n in qd.PREFILL_LENS
            if recordings.candidates(vf.RESULTS, vf.HARDWARE, "latency", run_name(m, n))]


matmul_spread = vf.matmul_spread  # the recorded bf16 matmul ceilings' max / min - 1


def tolerance_terms_ms(method: str, length: int) -> dict[str, float]:
    row = PREREG["predictions"][method][str(length)]
    spread = max(abs(o - vf.CALIBRATION_OVERHEAD_MS) for o in vf.b1_overheads().values())
    priced = row["prefill_ms"] - row["chunks"] * vf.CALIBRATION_OVERHEAD_MS
    return {"overhead transfer x chunks": row["chunks"] * spread, "priced x matmul spread": priced * matmul_spread()}


def tolerance_ms(method: str, length: int) -> tuple[float, str]:
    terms = tolerance_terms_ms(method, length)
    return sum(terms.values()), ("calibration transfer: " + "; ".join(f"{k} {v:.3f} ms" for k, v in terms.items())
                                 + f" (matmul ceilings' spread {matmul_spread():.1%})")


def test_the_preregistration_carries_the_decode_replays_calibration() -> None:
    """The overhead term 1 subtracts is the pinned overhead of the session the pre-registration names."""
    for method in METHODS:
        for n in qd.PREFILL_LENS:
            row = PREREG["predictions"][method][str(n)]
            assert row["calibration"].endswith(f"recorded {vf.CALIBRATION_RECORDED_AT}"), (method, n)
            assert row["prefill_ms"] > row["chunks"] * vf.CALIBRATION_OVERHEAD_MS, (method, n)
    assert vf.b1_overheads()[vf.CALIBRATION_RECORDED_AT] == vf.CALIBRATION_OVERHEAD_MS


def test_the_tolerance_is_its_two_recorded_terms() -> None:
    for method in METHODS:
        for n in qd.PREFILL_LENS:
            tol, why = tolerance_ms(method, n)
            terms = tolerance_terms_ms(method, n)
            assert set(terms) == {"overhead transfer x chunks", "priced x matmul spread"}
            assert tol == pytest.approx(sum(terms.values())) and all(v > 0 for v in terms.values())
            assert all(k in why for k in terms)


if RECORDED:  # nothing to collect before the plan's first run
    @pytest.mark.gpu
    @pytest.mark.targets(recorded="", live=False, hardware=vf.HARDWARE)  # the runs are the latency suite's
    @pytest.mark.parametrize("method,length", [pytest.param(m, n, id=f"{m}-l{n}", marks=pf.lone_marks(m, n))
                                               for m, n in RECORDED])
    def test_prefill_per_weight_format(method: str, length: int, target: Any, measured: Any, reconcile: Any) -> None:
        rec = measured(run_name(method, length), target=target, suite="latency")
        row = PREREG["predictions"][method][str(length)]
        pred = Prediction(row["prefill_ms"] / 1e3, "s", f"pre-registered {PREREG['written_utc']}: {row['formula']}",
                          {"calibration": row["calibration"], "theory_commit": PREREG["theory_commit"],
                           "tokens": length, "method": method},
                          (Term("t_overhead x chunks (calibration)", row["chunks"] * vf.CALIBRATION_OVERHEAD_MS / 1e3,
                                "s"),
                           Term("priced at the method's GEMM peak",
                                row["prefill_ms"] / 1e3 - row["chunks"] * vf.CALIBRATION_OVERHEAD_MS / 1e3, "s")))
        tol, why = tolerance_ms(method, length)
        band = pf.short_prefill_band(row["prefill_ms"]) if length == 512 else None
        if length != 512 and method == "awq":
            band = pf.awq_checked_run_band(run_name(method, length), "engine_prefill_s.median", pred.value, tol / 1e3)
        reconcile("prefill_per_weight_format", pred, rec["engine_prefill_s.median"], abs=tol / 1e3, why=why,
                  model=vf.MODEL, finding_band=band)
