"""Writes tests_quant/preregistered.json (run by `python3 scripts/device/quant_plan.py --preregister`).

Frozen at writing: the H200 calibration of the newest recorded session (the latency suite's recipe,
cli_calibration.py), the read ceiling llama.cpp's priors divide by, and the quality constant c
fitted on the CPU slice's Q8_0 and Q4_0 with S of every legacy file type gguf-py quantizes.
Refused while the theory has uncommitted changes: the file names the commit that made it.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from quality_slice import FIT, HELD_OUT, build_reference, run_format

from pytest_anatomy import quant_data, quant_prereg
from pytest_anatomy.cli_calibration import RecordedCalibration, recorded_calibration
from pytest_anatomy.cli_llama import _ceilings
from pytest_anatomy.preregistration import repo_root, theory_commit
from pytest_anatomy.specs.hardware import get_hardware
import numpy as np

from pytest_anatomy.theory import quant_noise

REPO = Path(__file__).resolve().parents[1]
LEGACY = ("Q8_0", "Q4_0", "Q5_0", "Q5_1")  # the file types whose every tensor gguf-py quantizes for SmolLM2


def frozen_constants() -> dict[str, float]:
    hw = get_hardware(quant_prereg.CARD)
    rc = recorded_calibration(REPO / "results", hw)
    if not isinstance(rc, RecordedCalibration):
        raise SystemExit(f"no recorded H200 calibration to freeze: {rc}")
    read, _matmul, _source = _ceilings(hw, REPO / "results")
    return {"bandwidth": rc.ceilings.bandwidth, "peak": rc.ceilings.peak, "step_overhead_s": rc.calib.step_overhead_s,
            "compute_efficiency": rc.calib.compute_efficiency, "llama_read_bandwidth": float(read)}


def quality() -> dict:
    ref = build_reference(quant_data.locate())
    results = {ft: run_format(ref, ft) for ft in LEGACY}
    fit_on = {ft: (results[ft].budget.total, results[ft].kld_mean) for ft in FIT}
    model = quant_noise.fit(fit_on)
    cpu_slice = {"ppl_ref": float(np.exp(ref.nll.mean())),
                 "delta_ln_ppl": {ft: r.delta_ln_ppl for ft, r in results.items()},
                 "kld": {ft: r.kld_mean for ft, r in results.items()}}
    return quant_prereg.quality_section(model.c, fit_on, {ft: r.budget.total for ft, r in results.items()}, HELD_OUT,
                                        cpu_slice)


def write(path: Path) -> Path:
    commit = theory_commit(repo_root(REPO) or REPO)
    written = datetime.now(timezone.utc).isoformat(timespec="seconds")
    doc = quant_prereg.build(frozen_constants(), quality(), written, commit)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path
