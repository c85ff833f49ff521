"""The llama.cpp measure layer without a GPU: its parsers on llama.cpp's own output formats, the missing
binary's message, and the device plan's dry run (the visit fits its budget)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_anatomy.measure import llama_cpp
from pytest_anatomy.measure.llama_log import parse_load_log
from pytest_anatomy.units import MiB

ROOT = Path(__file__).resolve().parents[1]
F16_LOG = Path(__file__).parent / "data" / "h200-binding-qwen2.5-0.5b-f16-load.log"

# llama-bench -o json prints one object per test with these fields (tools/llama-bench/llama-bench.cpp
# json_printer); the values here are made up.
BENCH_JSON = """[
  {
    "build_commit": "abc1234", "build_number": 1, "model_type": "qwen2 1B F16", "model_size": 988208640,
    "model_n_params": 494032768, "n_batch": 2048, "n_ubatch": 512, "n_threads": 16, "type_k": "f16",
    "type_v": "f16", "n_gpu_layers": 99, "flash_attn": 1, "n_prompt": 512, "n_gen": 0, "n_depth": 0,
    "test_time": "2026-12-01T00:00:00Z", "avg_ns": 9000000, "stddev_ns": 100000, "avg_ts": 56888.9,
    "stddev_ts": 600.1,
    "samples_ns": [ 9000000, 9100000, 8900000 ],
    "samples_ts": [ 56888.9, 56263.7, 57528.1 ]
  },
  {
    "build_commit": "abc1234", "build_number": 1, "n_prompt": 0, "n_gen": 128, "n_depth": 0, "flash_attn": 1,
    "avg_ts": 775.2, "stddev_ts": 6.8,
    "samples_ns": [ 165000000, 166000000 ],
    "samples_ts": [ 775.7, 771.1 ]
  }
]
"""


def test_bench_json_to_named_tests():
    tests = [llama_cpp.bench_summary(e) for e in llama_cpp.parse_bench_json(BENCH_JSON)]
    assert [t["test"] for t in tests] == ["pp512", "tg128"]
    assert tests[1]["tok_per_s"]["median"] == pytest.approx((775.7 + 771.1) / 2)
    assert tests[0]["samples"]["tok_per_s"] == [56888.9, 56263.7, 57528.1]
    assert tests[0]["build"] == {"commit": "abc1234", "number": 1}


def test_bench_output_that_is_not_json_is_one_line():
    with pytest.raises(llama_cpp.LlamaRunError, match="printed no JSON"):
        llama_cpp.parse_bench_json("error: failed to load model\n")


def test_load_log_lines_of_the_device_readme():
    log = parse_load_log(F16_LOG.read_text())
    assert log.offloaded_layers == (25, 25)
    assert log.buffer("model", "CPU_Mapped") == 259.66 * MiB and log.buffer("model", "CUDA0") == 942.43 * MiB
    assert log.buffer("output", "CUDA_Host") == 0.58 * MiB and log.buffer("KV", "CUDA0") == 48.00 * MiB
    assert log.buffer("compute", "CUDA0") == 298.50 * MiB and log.buffer("compute", "CUDA_Host") == 12.01 * MiB


def test_kv_summary_and_context_lines():
    # formats of llama-kv-cache.cpp and llama-context.cpp (LLAMA_LOG_INFO), values made up
    text = ("llama_context: n_ctx                 = 8448\nllama_context: n_ctx_seq             = 2816\n"
            "llama_context: kv_unified            = false\n"
            "llama_kv_cache: size =   99.00 MiB (  2816 cells,  24 layers,  3/3 seqs), K (f16):   49.50 MiB, "
            "V (f16):   49.50 MiB\n"
            "print_info: file size   = 373.71 MiB (6.35 BPW) \n")
    log = parse_load_log(text)
    assert log.context == {"n_ctx": "8448", "n_ctx_seq": "2816", "kv_unified": "false"}
    assert log.kv["cells"] == 2816 and log.kv["seq_max"] == 3 and log.kv["type_k"] == "f16"
    assert log.file_size_bytes == 373.71 * MiB and log.file_bpw == 6.35


def test_metrics_and_perplexity_text():
    metrics = llama_cpp.parse_metrics("# HELP llamacpp:prompt_tokens_total x\n# TYPE llamacpp:prompt_tokens_total counter\n"
                                      "llamacpp:prompt_tokens_total 4096\nllamacpp:requests_processing 2\n")
    assert metrics == {"llamacpp:prompt_tokens_total": 4096.0, "llamacpp:requests_processing": 2.0}
    ppl = llama_cpp.parse_perplexity("[1]12.3456,[2]11.2345,[3]10.9876,\nFinal estimate: PPL = 10.9876 +/- 0.12345\n")
    assert ppl == {"ppl": 10.9876, "ppl_stderr": 0.12345, "chunks": [12.3456, 11.2345, 10.9876]}
    with pytest.raises(llama_cpp.LlamaRunError, match="no final estimate"):
        llama_cpp.parse_perplexity("main: error\n")


def test_slots_summary():
    # server_slot::to_json of this build: an idle slot has no next_token; one that served a task has it as a
    # one-element list (nlohmann's {{...}}); values made up
    doc = [{"id": 0, "n_ctx": 2816, "speculative": False, "is_processing": False},
           {"id": 1, "n_ctx": 2816, "speculative": False, "is_processing": True, "id_task": 7,
            "next_token": [{"has_next_token": True, "has_new_line": False, "n_remain": 100, "n_decoded": 156}]},
           {"id": 2, "n_ctx": 2816, "is_processing": False, "next_token": {"n_decoded": 256}}]
    assert llama_cpp.parse_slots(doc) == {"count": 3, "n_ctx": [2816] * 3, "processing": 1,
                                          "n_decoded": [None, 156, 256]}
    with pytest.raises(llama_cpp.LlamaRunError, match="--slots"):
        llama_cpp.parse_slots({"error": {"code": 501, "message": "This server does not support slots endpoint."}})


def test_completion_timings_in_seconds():
    t = llama_cpp.completion_timings({"timings": {"prompt_n": 512, "prompt_ms": 12.5, "predicted_n": 128,
                                                  "predicted_ms": 256.0, "predicted_per_token_ms": 2.0}})
    assert t == {"prompt_n": 512.0, "prompt_s": 0.0125, "predicted_n": 128.0, "predicted_s": 0.256,
                 "predicted_per_token_s": 0.002}


def test_missing_binary_names_the_build(monkeypatch, tmp_path):
    monkeypatch.setenv(llama_cpp.BIN_ENV, str(tmp_path))
    with pytest.raises(llama_cpp.LlamaBinaryMissing, match="build.sh"):
        llama_cpp.binary("llama-bench")


def test_device_plan_dry_run_fits_its_budget():
    proc = subprocess.run([sys.executable, "scripts/device/llama_plan.py", "--dry-run"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "qwen2.5-7b.q4_k_m.server-sweep" in proc.stdout and "tiny-28l.q4_k_m.bench" in proc.stdout
    tight = subprocess.run([sys.executable, "scripts/device/llama_plan.py", "--dry-run", "--budget-s", "60"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60, check=False)
    assert tight.returncode == 1


def test_plan_quant_types_are_the_suite_s():
    """The plan's tiny shape is theory/llamacpp_latency.TINY_OVERHEAD_SHAPE itself (one object, nothing to compare);
    its quantized types are the two the suite's tiny-model checks expect."""
    sys.path.insert(0, str(ROOT / "scripts" / "device"))
    try:
        import llama_plan
    finally:
        sys.path.pop(0)

    assert json.dumps(sorted(llama_plan.QUANT_TYPES)) == json.dumps(["Q4_K_M", "Q8_0"])
