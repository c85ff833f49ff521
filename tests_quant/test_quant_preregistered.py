"""tests_quant/preregistered.json, written before the GPU visit, equals what the theory computes today
from the file's own frozen constants: a change of the theory shows here as a difference to explain
(re-register before the visit, or keep the miss visible after it); a new recording changes nothing.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
# regex (the quant extra, in dev) tokenizes the text: README's main command installs the core only, so these skip there
pytest.importorskip("regex", reason="the quant suite's tokenizer needs regex: pip install -e '.[quant]' (or '.[dev]')")
from quality_slice import FIT, HELD_OUT

from pytest_anatomy import quant_prereg

ROOT = Path(__file__).resolve().parents[1]
PREREG = json.loads((Path(__file__).parent / "preregistered.json").read_text())


def test_schema_and_what_it_covers():
    assert PREREG["schema"] == quant_prereg.SCHEMA and len(PREREG["theory_commit"]) == 40
    assert set(PREREG["gguf"]["smollm2-135m"]) == set(quant_prereg.FILE_TYPES)
    assert {label for label, _m, _kv in quant_prereg.VLLM_CASES} == set(PREREG["vllm"])
    assert set(PREREG["quality"]["fit_on"]) == set(FIT) and PREREG["quality"]["held_out_on_cpu"] == list(HELD_OUT)


@pytest.mark.parametrize("section", ["gguf", "vllm", "speed"])
def test_the_theory_still_computes_the_file(section):
    today = {"gguf": quant_prereg.gguf_section, "vllm": quant_prereg.vllm_section,
             "speed": lambda: quant_prereg.speed_section(PREREG["frozen"])}[section]()
    assert json.loads(json.dumps(today)) == PREREG[section]


def test_the_quality_constant_and_noise_are_reproduced(format_result, noise_model):
    q = PREREG["quality"]
    # c comes from a float32 forward: another CPU's BLAS kernels round differently, by ~1e-6; a theory change
    # moves it by percents. S is the quantizer's own arithmetic in numpy float64: reproduced to 1e-9.
    assert noise_model.c == pytest.approx(q["c"], rel=1e-4)
    for ft, row in q["types"].items():
        assert format_result(ft).budget.total == pytest.approx(row["S"], rel=1e-9), ft
        assert row["kld"] == pytest.approx(q["c"] * row["S"], rel=1e-9)


def test_the_cpu_slice_measurements_are_reproduced(reference, format_result):
    """The numbers the visit's llama.cpp replays on the same tokens; float32 forward: 1e-4 across CPUs' BLAS."""
    import numpy as np

    cpu = PREREG["quality"]["cpu_slice"]
    assert float(np.exp(reference.nll.mean())) == pytest.approx(cpu["ppl_ref"], rel=1e-4)
    for ft, value in cpu["delta_ln_ppl"].items():
        # absolute: Q8_0's change (~0.007 nat) is a difference of two float32 forwards, rounding ~1e-6
        assert format_result(ft).delta_ln_ppl == pytest.approx(value, rel=1e-4, abs=1e-5), ft
        assert format_result(ft).kld_mean == pytest.approx(cpu["kld"][ft], rel=1e-4), ft


def test_written_before_any_quant_recording():
    written = datetime.fromisoformat(PREREG["written_utc"])
    for rec in ROOT.glob("results/*/quant/*.json"):
        stamp = rec.stem.split("@", 1)[1]
        recorded = datetime.strptime(stamp[:15], "%Y%m%dT%H%M%S").replace(tzinfo=written.tzinfo)
        assert recorded > written, f"{rec} predates the pre-registration"
