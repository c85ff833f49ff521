"""The device plan's measure phase end to end on the CPU, with stand-ins for llama.cpp's tools.

tests_llama/fake_tools/ holds scripts that answer like llama-bench (-o json), llama-quantize,
llama-server (/health, /slots, /metrics, a streamed /completion, buffer lines in its log) and
nvidia-smi, with made-up numbers. The plan writes the tiny models for real (gguf-py and the device
README's make_random_gguf.py), runs every step against the stand-ins, and its batch must import:
what a device visit would waste minutes on (a wrong flag, a key error, a file that does not import)
fails here first. The numbers prove nothing about llama.cpp.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_anatomy import recordings
from pytest_anatomy.importers.device import import_files

ROOT = Path(__file__).resolve().parents[1]
FAKE = Path(__file__).parent / "fake_tools"
WRITER = ROOT.parent / "shared" / "device" / "llama"


@pytest.fixture
def plan(monkeypatch):
    sys.path.insert(0, str(ROOT / "scripts" / "device"))
    try:
        import llama_plan
    finally:
        sys.path.pop(0)
    monkeypatch.setenv("PATH", f"{FAKE}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("ANATOMY_LLAMA_BIN", str(FAKE))
    return llama_plan


def test_measure_phase_runs_and_its_batch_imports(plan, tmp_path, monkeypatch):
    pytest.importorskip("gguf", reason="pip install -e '.[llama]' (gguf-py writes the tiny models)")
    if not (WRITER / "make_random_gguf.py").is_file():
        pytest.skip(f"{WRITER}/make_random_gguf.py is not here (shared/ lies beside the checkout)")
    models, out = tmp_path / "models", tmp_path / "out"
    common = dict(models_dir=str(models), writer_dir=str(WRITER), budget_s=300.0, dry_run=False, preregister=False)
    assert plan.phase_models(argparse.Namespace(**common, phase="models", out=str(out), models="tiny-24l")) == 0
    # a server load and a two-level sweep on the tiny model (the real cases name the 0.5B and 7B files)
    monkeypatch.setattr(plan, "SERVERS", (
        plan.ServerCase("tiny-24l", "F16", ("-c", "8000", "-np", "3", "-fa", "on")),
        replace(plan.ServerCase("tiny-24l", "Q8_0", ("-c", "4096", "-np", "2", "-fa", "on"), sweep=True), levels=(1, 2))))
    monkeypatch.setattr(plan, "SWEEP_PROMPT", 16)
    monkeypatch.setattr(plan, "SWEEP_GEN", 8)
    (out).mkdir()
    (out / "ceilings.json").write_text('{"read_bandwidth": {"value": 4.4e12}, "matmul_bf16": {"value": 7.9e14}}')
    assert plan.phase_measure(argparse.Namespace(**common, phase="measure", out=str(out), models="")) == 0

    batch = out / "llama.json"
    runs = json.loads(batch.read_text())["runs"]
    assert [(r["id"], r["result"].get("status")) for r in runs
            if r["kind"] != "ceilings" and r["result"].get("status") != "ok"] == [], runs
    assert {r["kind"] for r in runs} == {"ceilings", "quantize", "header", "bench", "server"}
    done = import_files([batch], tmp_path / "results")
    assert any(status == "wrote" for status, _ in done)
    res = tmp_path / "results"
    bench = recordings.load_latest(res, "h200", "llama", "tiny-24l.q4_k_m.bench")
    assert bench.data["run"]["result"]["status"] == "ok" and len(bench["tg128.tok_per_s.median"].samples) == 5
    quant = recordings.load_latest(res, "h200", "llama", "tiny-24l.q8_0.quantize")
    assert quant["tensor_bytes"].value > 0 and quant.data["run"]["result"]["header"]["block_count"] == 24
    load = recordings.load_latest(res, "h200", "llama", "tiny-24l.f16.server-load.c_8000_np_3_fa_on")
    assert load["load.buffers_bytes.model.CUDA0"].value == 8 * 2**20
    assert load["load.gpu_memory_used_bytes"].value == 1024 * 2**20
    assert load["load.slots"].value == 3 and load["load.slot_ctx_tokens"].value == 8000 // 3
    sweep = recordings.load_latest(res, "h200", "llama", "tiny-24l.q8_0.server-sweep.c_4096_np_2_fa_on")
    assert sweep["c2.completed"].value == 2 and sweep["c2.throughput_tok_per_s"].value > 0
    assert len(sweep["c2.itl_s.median"].samples) == 2 and len(sweep["c2.ttft_s.median"].samples) == 2
    assert sweep["c1.ttft_s.median"].value > 0 and sweep.provenance["build_commit"] == "fake000"
    # the stand-in holds 2 of every request's 8 tokens (no chunk): the level counts the server's 8, keeps the client's 6
    assert sweep["c2.output_tokens"].value == 16 and sweep["c2.output_tokens_client"].value == 12
    assert sweep["c2.output_tokens"].samples == (8.0, 8.0) and sweep["c2.output_tokens_client"].samples == (6.0, 6.0)
    assert sweep["c2.held_tokens.median"].samples == (2.0, 2.0)  # client + held = server, per request
    assert sweep["c2.throughput_tok_per_s"].value == pytest.approx(sweep["c2.throughput_tok_per_s_client"].value * 16 / 12)
    assert sweep.provenance["source_commit"] == plan.ENGINE["source_commit"]
    assert recordings.load_latest(res, "h200", "ceilings", "ceilings")["read_bandwidth.value"].value == 4.4e12
