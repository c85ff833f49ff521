"""vLLM's prefill of 64 prompts of 512 tokens sent at once, per weight format (scripts/device/quant_decode.py
prefill's batched part, latency_plan.py's prefill_batch: results/<hw>/latency/qwen2.5-7b-<method>.prefill.b64.l512)
against its pre-registration (vllm_prefill_batch_preregistered.json, written before any run from a committed theory):
issue 13's prefill at batch 64 for fp8, AWQ and GPTQ at 7B. The theory (theory/latency.py batch_prefill_work): vLLM
V1 packs whole prompts into each step's 8,192-token budget, 4 steps of 16 prompts, each step priced as the lone
prefill's (fp8 on the fp8 tensor cores, AWQ and GPTQ dequantized onto the bf16 peak). The measurement is the engine
span's median over three rounds: the last first token less the first schedule, the engine core's clock. No bf16 run
is in the call: its row in the JSON is the baseline's prediction. No case is collected until a run exists.

Tolerance: the lone prefill replay's calibration-transfer rule (test_vllm_prefill_replay.py), per step:
  1. steps x the largest distance of any recorded session's b=1 overhead from the calibration's (each step carries
     one t_overhead);
  2. the priced part (the prediction less its steps' overheads) x the recorded bf16 matmul ceilings' spread.
A partially-filled first step (requests queued after the round's first schedule) would add one more step, which the
pre-registration prices (partial_first_step.extra_ms_max: one t_overhead at this calibration) and which the run
tells (queued_after_first_schedule_max); it is reported beside the reconciliation, not added to the tolerance."""

from __future__ import annotations

import json
from typing import Any

import pytest
import vllm_decode_findings as vf
import vllm_prefill_findings as pf

from pytest_anatomy import recordings
from pytest_anatomy.theory.prediction import Prediction, Term

qd = vf.qd
PREREG = json.loads(qd.PREFILL_BATCH_PREREGISTRATION.read_text())
METHODS = ("bf16", *qd.METHODS)  # bf16's 64 x 512 was run too (2026-12-04 18:56), as the batch's baseline


def run_name(method: str) -> str:
    model = vf.MODEL if method == "bf16" else f"{vf.MODEL}-{method}"
    return f"{model}.prefill.b{qd.PREFILL_BATCH}.l{qd.PREFILL_BATCH_LEN}"


RECORDED = [m for m in METHODS if recordings.candidates(vf.RESULTS, vf.HARDWARE, "latency", run_name(m))]


def tolerance_terms_ms(method: str) -> dict[str, float]:
    row = PREREG["predictions"][method]
    spread = max(abs(o - vf.CALIBRATION_OVERHEAD_MS) for o in vf.b1_overheads().values())
    priced = row["engine_span_ms"] - row["steps"] * vf.CALIBRATION_OVERHEAD_MS
    return {"overhead transfer x steps": row["steps"] * spread, "priced x matmul spread": priced * vf.matmul_spread()}


def tolerance_ms(method: str) -> tuple[float, str]:
    terms = tolerance_terms_ms(method)
    return sum(terms.values()), ("calibration transfer: " + "; ".join(f"{k} {v:.3f} ms" for k, v in terms.items())
                                 + f" (matmul ceilings' spread {vf.matmul_spread():.1%})")


def test_the_preregistration_carries_the_decode_replays_calibration() -> None:
    for method in METHODS:
        row = PREREG["predictions"][method]
        assert row["calibration"].endswith(f"recorded {vf.CALIBRATION_RECORDED_AT}"), method
        assert row["engine_span_ms"] > row["steps"] * vf.CALIBRATION_OVERHEAD_MS, method
        assert row["partial_first_step"]["extra_ms_max"] == pytest.approx(vf.CALIBRATION_OVERHEAD_MS, abs=1e-3)


def test_the_tolerance_is_its_two_recorded_terms() -> None:
    for method in METHODS:
        tol, why = tolerance_ms(method)
        terms = tolerance_terms_ms(method)
        assert set(terms) == {"overhead transfer x steps", "priced x matmul spread"}
        assert tol == pytest.approx(sum(terms.values())) and all(v > 0 for v in terms.values())
        assert all(k in why for k in terms)


def _late(rec: Any) -> str:
    """The most requests any kept round had queued after its first schedule, as the run recorded it."""
    try:
        return f"{rec['queued_after_first_schedule_max'].value:.0f}"
    except KeyError:
        return "not recorded"


if RECORDED:  # nothing to collect before the plan's first run
    @pytest.mark.gpu
    @pytest.mark.targets(recorded="", live=False, hardware=vf.HARDWARE)  # the runs are the latency suite's
    @pytest.mark.parametrize("method", [pytest.param(m, marks=pf.batch_marks(m)) for m in RECORDED])
    def test_batched_prefill_per_weight_format(method: str, target: Any, measured: Any, reconcile: Any) -> None:
        rec = measured(run_name(method), target=target, suite="latency")
        row = PREREG["predictions"][method]
        overheads = row["steps"] * vf.CALIBRATION_OVERHEAD_MS / 1e3
        pred = Prediction(row["engine_span_ms"] / 1e3, "s", f"pre-registered {PREREG['written_utc']}: {row['formula']}",
                          {"calibration": row["calibration"], "theory_commit": PREREG["theory_commit"],
                           "batch": PREREG["batch"], "tokens": PREREG["input_len"], "steps": row["steps"],
                           "method": method},
                          (Term("t_overhead x steps (calibration)", overheads, "s"),
                           Term("priced at the method's GEMM peak", row["engine_span_ms"] / 1e3 - overheads, "s")),
                          notes=(PREREG["note"],
                                 f"partially-filled first step: +{row['partial_first_step']['extra_ms_max']} ms at most;"
                                 f" the run's requests queued after a round's first schedule: {_late(rec)}",))
        tol, why = tolerance_ms(method)
        band = (pf.awq_checked_run_band(run_name(method), "engine_span_s.median", pred.value, tol / 1e3)
                if method == "awq" else None)
        reconcile("batched_prefill_per_weight_format", pred, rec["engine_span_s.median"], abs=tol / 1e3, why=why,
                  model=vf.MODEL, finding_band=band)
