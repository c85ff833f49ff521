"""The visit's decode predictions, frozen before it (tests_llama/preregistered.json, written by
`python scripts/device/llama_plan.py --preregister` from priors only: the newest H200 ceilings, the
prior kernel attainment, an overhead per layer from the device README's 0.5B run). A recorded run is
compared with the frozen number, in the band the priors' own uncertainty gives, and must be stamped
after the pre-registration was written; the current theory's prediction is test_llama_speed.py's.
qwen2.5-7b Q4_K_M missed its band (llama_findings.KQUANT_REASON): its finding band is the k-quant mechanism's,
computed from the same session's Q8_0 fit (llama_findings.kquant_band) against the frozen number.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from llama_findings import bench_marks, kquant_band
from llama_speed import N_GEN, SessionCalibration

from pytest_anatomy.theory.prediction import Prediction, Term

PREREG = json.loads((Path(__file__).parent / "preregistered.json").read_text())
BY_RUN = {row["run"]: row for row in PREREG["predictions"]}


def test_preregistration_covers_the_checked_decodes():
    assert set(BY_RUN) == {"qwen2.5-0.5b.q8_0.bench", "qwen2.5-7b.f16.bench", "qwen2.5-7b.q8_0.bench",
                           "qwen2.5-7b.q4_k_m.bench"}
    for row in BY_RUN.values():
        lo, hi = row["ratio"]
        assert lo < 1 < hi and row["predicted"] > 0


@pytest.mark.gpu
@pytest.mark.llama_runs("bench", select=lambda run: run.name in BY_RUN, findings=bench_marks)
def test_decode_against_its_preregistered_number(target, run, measured, header_for, reconcile, request):
    rec = measured(run.name)
    written = datetime.fromisoformat(PREREG["written_utc"])
    recorded = datetime.fromisoformat(rec.recorded_at.replace("Z", "+00:00"))
    assert recorded > written, (f"{run.name} was recorded at {rec.recorded_at}, before its pre-registration "
                                f"({PREREG['written_utc']}): it cannot test it")
    row = BY_RUN[run.name]
    pred = Prediction(row["predicted"], "tokens/s", "frozen before the visit: 1 / (bytes at prior attainment + "
                      "prior overhead per layer x layers)", {"written_utc": PREREG["written_utc"]},
                      terms=tuple(Term(k, v, "s") for k, v in row["terms_s"].items()))
    band = None
    if any(mk.kwargs.get("quantity") == "llamacpp_tg128_tok_per_s_preregistered"
           for mk in request.node.iter_markers("finding")):
        calib = SessionCalibration(run, measured, header_for, "decode").calibration()
        band = kquant_band(header_for(run), calib, N_GEN, against=row["predicted"])
    reconcile("llamacpp_tg128_tok_per_s_preregistered", pred, rec[row["quantity"]], ratio=tuple(row["ratio"]),
              why=f"the priors' uncertainty summed per term: attainment +-{PREREG['priors']['band']['attainment']:.0%} "
                  f"of the bytes term, overhead +-{PREREG['priors']['band']['overhead']:.0%} of its term",
              model=run.model, finding_band=band)
