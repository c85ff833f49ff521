"""The batched7b phase on the CPU: its plan, llama-batched-bench's JSONL read back, the importer's names, and the
batched theory's two rules (theory/llamacpp_batched.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import quant_batched as qb
import quant_prefill as qp

from pytest_anatomy.importers.device_quant import quant_records
from pytest_anatomy.measure import llama_cpp
from pytest_anatomy.theory import llamacpp_batched as lb
from pytest_anatomy.theory import llamacpp_latency as ll
from pytest_anatomy.theory.llamacpp_memory import gpu_tensors

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "device"))
import quant_plan  # noqa: E402

CALIB = ll.LlamaCalibration(4.0e12, 700e12, 1.0e-3)


def _row(pl: int, speed_pp: float, speed_tg: float) -> str:
    return json.dumps({"n_kv_max": 40960, "pp": 512, "tg": 128, "pl": pl, "n_kv": pl * 640, "t_pp": pl * 512 / speed_pp,
                       "speed_pp": speed_pp, "t_tg": pl * 128 / speed_tg, "speed_tg": speed_tg, "t": 1.0, "speed": 1.0})


def test_the_plan_benches_f16_first_and_quantizes_every_other_type_before_its_bench():
    steps = quant_plan.plan_batched_7b()
    assert steps[0].id == "F16.batched" and quant_plan.BATCHED_TYPES == qb.TYPES
    for ft in qb.TYPES[1:]:
        ids = [s.id for s in steps]
        assert ids.index(f"{ft}.quantize") + 1 == ids.index(f"{ft}.batched")


def test_batched_jsonl_is_grouped_by_batch_with_its_repetitions():
    text = "\n".join(["main: loading", _row(1, 12000, 250), _row(64, 11000, 9000), _row(1, 12100, 251),
                      _row(64, 11200, 9100), _row(1, 12200, 252), _row(64, 11100, 9050)])
    rows = llama_cpp.batched_summary(llama_cpp.parse_batched_jsonl(text))
    assert [r["pl"] for r in rows] == [1, 64]
    assert rows[1]["samples"]["speed_pp"] == [11000, 11200, 11100] and rows[1]["median"]["speed_tg"] == 9050


def test_no_jsonl_row_is_a_clear_error():
    with pytest.raises(llama_cpp.LlamaRunError, match="no JSONL row"):
        llama_cpp.parse_batched_jsonl("main: n_kv_max = 40960\n")


def test_the_importer_names_each_batch_and_keeps_the_repetitions():
    rows = llama_cpp.batched_summary([json.loads(_row(pl, 1e4 + pl, 200 + pl)) for pl in (1, 64, 1, 64)])
    batch = {"provenance": {"model": {"id": "qwen2.5-7b"}},
             "runs": [{"id": "qwen2.5-7b.Q8_0.batched", "kind": "batched", "file_type": "Q8_0", "result": {"rows": rows}}]}
    (rec,) = quant_records(batch, {}, "card-x", "2026-12-04T19:00:00Z")
    assert rec.name == "qwen2.5-7b.q8_0.batched"
    assert set(rec.measurements) == {"pp512.b1.tok_per_s", "tg128.b1.tok_per_s", "pp512.b64.tok_per_s",
                                     "tg128.b64.tok_per_s"}
    assert rec["pp512.b64.tok_per_s"].samples == (10064.0, 10064.0)


@pytest.mark.parametrize("file_type", ["F16", "Q4_K_M"])
def test_batched_prefill_is_b_lone_prompts(file_type):
    h = qp.header(file_type)
    one = ll.prefill_time(h, CALIB, 512).value
    assert lb.batched_prefill_time(h, CALIB, 64, 512).value == pytest.approx(64 * one, rel=1e-12)
    assert lb.batched_prefill_tokens_per_s(h, CALIB, 64, 512).value == pytest.approx(512 / one, rel=1e-12)


def test_batched_decode_is_each_tensors_larger_roofline_plus_kv_and_overhead():
    h = qp.header("Q8_0")
    t = lb.batched_decode_time(h, CALIB, 64, 575.5)
    weights = sum(term.value for term in t.terms if term.name.endswith(" weights"))
    kv = 64 * ll.kv_read_bytes(h, 575.5) / (CALIB.read_bandwidth * CALIB.attainment[ll.UNQUANTIZED_KERNEL])
    assert t.value == pytest.approx(weights + kv + CALIB.overhead_s, rel=1e-12)
    # each weight term is at least its read and at least its multiply: the larger of the two, never their sum
    reads = sum(x.nbytes for x in gpu_tensors(h) if x.ggml_type == "Q8_0") / (
        CALIB.read_bandwidth * CALIB.attainment[ll.QUANTIZED_DECODE_KERNEL])
    q8 = next(term.value for term in t.terms if term.name.startswith("Q8_0"))
    assert reads <= q8 * (1 + 1e-12)
    # doubling the batch never speeds a step up
    assert lb.batched_decode_time(h, CALIB, 128, 575.5).value > t.value


def test_a_batch_inside_the_vector_kernels_range_is_refused():
    with pytest.raises(ValueError, match="batch-1 kernels"):
        lb.batched_decode_time(qp.header("F16"), CALIB, lb.MMVQ_MAX_BATCH, 100)


def test_the_binaries_commit_is_read_from_version_and_carried_into_the_recordings(tmp_path, monkeypatch):
    tool = tmp_path / "llama-batched-bench"
    tool.write_text("#!/bin/sh\necho 'version: 0 (build 0, commit 0c1e57098bba43ac29e6e3b677cdceebdd22334f)' >&2\n")
    tool.chmod(0o755)
    monkeypatch.setenv("ANATOMY_LLAMA_BIN", str(tmp_path))
    assert llama_cpp.binary_commit() == "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
    batch = {"provenance": {"versions": {"llama.cpp": {"binary_commit": llama_cpp.binary_commit()}}},
             "runs": [{"id": "qwen2.5-7b.Q8_0.batched", "kind": "batched", "file_type": "Q8_0",
                       "result": {"rows": llama_cpp.batched_summary([json.loads(_row(1, 1e4, 200))])}}]}
    (rec,) = quant_records(batch, {}, "card-x", "2026-12-04T19:40:00Z")
    assert rec.provenance["build_commit"] == "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
    monkeypatch.setenv("ANATOMY_LLAMA_BIN", str(tmp_path / "absent"))
    assert llama_cpp.binary_commit() is None
