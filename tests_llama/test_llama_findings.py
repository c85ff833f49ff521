"""The numbers llama_findings.py's reasons quote, recomputed from what they were read from (the recordings, the
kept server logs of the visit's batch, the binding log, the theory), and its band checked to be the mechanism's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from llama_findings import (
    BINDING_COMPUTE_MIB,
    BUILD_0C1E570,
    MEASURED_ON,
    PREDICTED_COMPUTE_MIB,
    SERVER_COMPUTE_MIB,
    ffn_floor_bytes,
    server_compute_band,
    server_marks,
)
from llama_runs import LlamaRun, header_for, parse_run

from pytest_anatomy import recordings
from pytest_anatomy.measure.llama_log import parse_load_log
from pytest_anatomy.theory import llamacpp_memory as lm
from pytest_anatomy.units import MiB

ROOT = Path(__file__).resolve().parents[1]
BATCH = ROOT / "results" / MEASURED_ON / "batches" / "20261202T050740Z"  # the visit's raw files, kept verbatim
STAMP = "2026-12-02T05:07:40Z"


def _recording(name: str) -> recordings.Recording:
    return recordings.load_latest(ROOT / "results", MEASURED_ON, "llama", name, STAMP)


@pytest.mark.parametrize("name", sorted(SERVER_COMPUTE_MIB))
def test_server_compute_numbers_are_the_recorded_ones(name):
    mib, n_outputs = SERVER_COMPUTE_MIB[name]
    rec = _recording(name)
    assert rec.provenance["source_commit"] == BUILD_0C1E570
    assert round(rec["load.buffers_bytes.compute.CUDA0"].value / MiB, 2) == mib
    log = (BATCH / f"{name}.log").read_text()
    assert re.search(rf"llama_context: n_outputs_max\s+= {n_outputs}\n", log), "the logged n_outputs_max"
    assert re.search(rf"llama_context: n_seq_max\s+= {n_outputs}\n", log), "no draft: n_outputs_max = -np"
    run = parse_run(MEASURED_ON, name)
    settings = lm.ContextSettings.from_flags(rec.provenance["settings"]["args"])
    assert round(lm.compute_buffer_gpu(header_for(run), settings).value / MiB, 2) == PREDICTED_COMPUTE_MIB


def test_the_binding_on_the_same_build_reserved_the_predicted_buffer():
    """The theory's reserve (n_ubatch outputs) is what this build does outside the server: the explanation's
    control. The device README's binding load of the same 0.5B F16 logged the predicted size."""
    log = parse_load_log((Path(__file__).parent / "data" / "h200-binding-qwen2.5-0.5b-f16-load.log").read_text())
    assert round(log.buffer("compute", "CUDA0") / MiB, 2) == BINDING_COMPUTE_MIB == PREDICTED_COMPUTE_MIB


def test_band_is_the_ffn_floor_up_to_the_prediction():
    run = LlamaRun(MEASURED_ON, "x", "qwen2.5-0.5b", "F16", "server-load")
    settings = lm.ContextSettings(n_ctx=8000, n_seq_max=3)
    lo, hi = server_compute_band(header_for(run), settings)
    # (2 x 4,864 + 896) x 512 x 4 B = 20.75 MiB against 298.50 MiB; the measurement plays no part
    assert ffn_floor_bytes(header_for(run), settings) == (2 * 4864 + 896) * 512 * 4
    assert (round(lo, 4), hi) == (round(20.75 / 298.5, 4), 1.0)


def test_the_finding_applies_to_its_build_only():
    run = LlamaRun(MEASURED_ON, "x", "qwen2.5-0.5b", "F16", "server-load")
    assert len(server_marks(run, {"source_commit": BUILD_0C1E570})) == 1
    assert server_marks(run, {"source_commit": "synthetic"}) == ()
    assert server_marks(LlamaRun(MEASURED_ON, "x", "qwen2.5-0.5b", "F16", "bench"), {"source_commit": BUILD_0C1E570}) == ()
