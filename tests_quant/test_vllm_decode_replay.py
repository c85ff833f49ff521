"""vLLM's decode step per weight format (scripts/device/quant_decode.py's runs, results/<hw>/latency/
qwen2.5-7b-<method>.decode.b<N>) against its pre-registration (vllm_decode_preregistered.json, written before any run
from a committed theory): issue 13's "decode step vs bytes moved" for fp8, AWQ and GPTQ. Recorded only: the device
plan measures these (docs/RECORDING.md); a method not yet run skips, naming the call that runs it.

Tolerance: the pre-registered step carries the calibration of one recorded session (its b=1 overhead, its read
ceiling); the card that runs the plan is any H200. So the tolerance is the calibration's transfer uncertainty:
the largest distance of any recorded session's b=1 overhead from the calibration's (pinned in
tests_latency/latency_b1_overheads.py), plus the priced part of the step times the recorded read ceilings' spread.
Not the run's noise: the run's repeat scatter (~1%) is far under both terms."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import vllm_decode_findings as vf

from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction, Term

ROOT = Path(__file__).resolve().parents[1]
METHODS = tuple(vf.PREREG["predictions"])


@cache
def _ceiling_spread() -> float:
    """max / min - 1 of every recorded read ceiling on the card."""
    folder = vf.RESULTS / vf.HARDWARE / "ceilings"
    values = [json.loads(p.read_text())["measurements"]["read_bandwidth.value"]["value"]
              for p in sorted(folder.glob("ceilings@*.json"))]
    return max(values) / min(values) - 1


def test_the_findings_use_the_preregistrations_calibration() -> None:
    """The overhead the reasons subtract is the pinned overhead of the session the pre-registration names."""
    for method in METHODS:
        for row in vf.PREREG["predictions"][method].values():
            assert row["calibration"].endswith(f"recorded {vf.CALIBRATION_RECORDED_AT}")
    assert vf.b1_overheads()[vf.CALIBRATION_RECORDED_AT] == vf.CALIBRATION_OVERHEAD_MS


def tolerance_ms(method: str, b: int) -> tuple[float, str]:
    overheads = vf.b1_overheads().values()  # cached: read once, not per case
    spread = max(abs(o - vf.CALIBRATION_OVERHEAD_MS) for o in overheads)
    priced = vf._priced(method, b) * _ceiling_spread()
    return spread + priced, (f"calibration transfer: recorded b=1 overheads within {spread:.3f} ms of the "
                             f"calibration's, plus the priced {vf._priced(method, b):.3f} ms x the read ceilings' "
                             f"{_ceiling_spread():.1%} spread")


@pytest.mark.gpu
@pytest.mark.targets(recorded="", live=False, hardware=vf.HARDWARE)  # the quant suite's folder; the runs are latency's
@pytest.mark.parametrize("method,batch", [pytest.param(m, b, marks=vf.decode_marks(m, b), id=f"{m}-b{b}")
                                          for m in METHODS for b in vf.BATCHES])
def test_decode_step_per_weight_format(method: str, batch: int, target: Any, measured: Any, reconcile: Any) -> None:
    name = f"{vf.MODEL}-{method}.decode.b{batch}"
    rec = measured(name, target=target, suite="latency")  # skips a method not yet run (GPTQ, 2026-12-04)
    row = vf.PREREG["predictions"][method][str(batch)]
    streamed = cap.weight_bytes(load_model(vf.MODEL), weight_format=method, matmul_only=True).value
    pred = Prediction(row["step_ms"] / 1e3, "s", f"pre-registered {vf.PREREG['written_utc']}: {row['formula']}",
                      {"calibration": row["calibration"], "theory_commit": vf.PREREG["theory_commit"],
                       # the report's decode-step figure: x = the weights a step streams, one chart per batch
                       "weight_bytes_per_token": streamed, "batch": batch, "method": method},
                      (Term("t_overhead (calibration)", vf.CALIBRATION_OVERHEAD_MS / 1e3, "s"),
                       Term("priced at the bytes", vf._priced(method, batch) / 1e3, "s")))
    tol, why = tolerance_ms(method, batch)
    reconcile("decode_step_per_weight_format", pred, rec["step_time_s"], abs=tol / 1e3, why=why,
              model=vf.MODEL)  # the method is an input: the report draws the methods of one model together


@cache
def _theory_now() -> dict[str, dict[str, Any]]:
    """`predict latency --quantization M`'s steps today, at the pre-registration's shapes (quant_decode.predictions)."""
    return vf.qd.predictions()  # type: ignore[no-any-return]


@pytest.mark.gpu
@pytest.mark.targets(recorded="", live=False, hardware=vf.HARDWARE)
@pytest.mark.parametrize("method,batch", [pytest.param(m, b, marks=vf.decode_marks(m, b), id=f"{m}-b{b}")
                                          for m in METHODS for b in vf.BATCHES])
def test_decode_step_per_weight_format_by_the_current_theory(method: str, batch: int, target: Any, measured: Any,
                                                             reconcile: Any) -> None:
    """The same runs against the theory as it is now (equal to the pre-registration until the theory changes): the
    reconciliation a theory change moves (tests_plugin/theory_mutants.py replays it under each mutation)."""
    rec = measured(f"{vf.MODEL}-{method}.decode.b{batch}", target=target, suite="latency")
    row = _theory_now()[method][str(batch)]
    pred = Prediction(row["step_ms"] / 1e3, "s", f"the current theory: {row['formula']}",
                      {"calibration": row["calibration"], "method": method, "batch": batch})
    tol, why = tolerance_ms(method, batch)
    reconcile("decode_step_per_weight_format_now", pred, rec["step_time_s"], abs=tol / 1e3, why=why, model=vf.MODEL)


def test_the_cli_caveat_quotes_the_recorded_runs() -> None:
    """`predict latency --quantization` warns with the measured misses (cli_latency.MEASURED_DECODE_MISSES): its
    numbers are the recorded runs' ratios to this prediction."""
    from pytest_anatomy.cli_latency import MEASURED_DECODE_MISSES

    for method in vf.INT4:
        r = vf.ratios(method)
        assert f"{min(r.values()):.2f}-{max(r.values()):.2f}x" in MEASURED_DECODE_MISSES[method], method
    fp8 = vf.ratios("fp8")
    assert f"{round((fp8[64] - 1) * 100)}-{round((fp8[32] - 1) * 100)}% over" in MEASURED_DECODE_MISSES["fp8"]
