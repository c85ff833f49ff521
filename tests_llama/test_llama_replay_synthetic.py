"""The import + replay path end to end, on a SYNTHETIC batch (tests_llama/data/, never results/).

A batch shaped as scripts/device/llama_plan.py writes it (made by data/make_synthetic_batch.py) is
imported into a temporary results folder with `pytest-anatomy import-device`'s function, then this
suite's recorded tests run against that folder in a fresh pytest process: every (target, run) pair is
generated from the files, every reconciliation replays, and the ledger says what was reconciled.
The numbers are the theory's own (plus fixed scatter), so agreement proves the plumbing only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_anatomy import recordings
from pytest_anatomy.importers.device import import_files

ROOT = Path(__file__).resolve().parents[1]
BATCH = Path(__file__).parent / "data" / "synthetic-llama-batch.json"
# the synthetic batch's device (its nvidia_smi line: NVIDIA H200), so also the card whose real vLLM recordings it
# is compared with
CARD = "h200"


def test_synthetic_batch_imports_and_replays(tmp_path):
    results = tmp_path / "results"
    src = tmp_path / "llama.json"
    src.write_bytes(BATCH.read_bytes())
    done = import_files([src], results)
    assert sum(status == "wrote" for status, _ in done) >= 17
    bench = recordings.load_latest(results, CARD, "llama", "qwen2.5-7b.q4_k_m.bench")
    assert bench.provenance["engine"] == "llama.cpp" and bench.provenance["build_commit"] == "synthetic"
    assert len(bench["tg128.tok_per_s.median"].samples) == 5
    assert recordings.load_latest(results, CARD, "ceilings", "ceilings")["read_bandwidth.value"].value == 4.4e12

    # vLLM's side of the crossover: the real recorded closed-loop runs, copied beside the synthetic batch
    latency = results / CARD / "latency"
    latency.mkdir(parents=True)
    for c in (1, 8, 32, 64):
        src_rec = max((ROOT / "results" / CARD / "latency").glob(f"qwen2.5-7b.closed.c{c}@*.json"))
        shutil.copyfile(src_rec, latency / src_rec.name)

    ledger = tmp_path / "ledger.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests_llama/test_llama_capacity.py", "tests_llama/test_llama_speed.py",
         "tests_llama/test_llama_crossover.py",
         "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rs", "--anatomy-source=recorded",
         "-o", f"anatomy_results_dir={results}", f"--anatomy-report={ledger}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    recs = json.loads(ledger.read_text())["reconciliations"]
    names = {r["name"] for r in recs}
    assert {"gguf_tensor_bytes", "llamacpp_model_buffer_CUDA0", "llamacpp_kv_buffer_CUDA0",
            "llamacpp_compute_buffer_CUDA0", "llamacpp_tg128_tok_per_s", "llamacpp_pp512_tok_per_s",
            "gguf_tensor_bytes_logged", "itl_median_c64", "crossover_concurrency_vs_vllm"} <= names
    # one visit: no load recorded twice, so the GPU growth's unlogged term has nothing to be fitted on (it skips)
    assert "llamacpp_gpu_memory_growth" not in names
    # the run the plan skipped: its tests skip with the plan's reason (2 of them: buffers and GPU memory)
    assert proc.stdout.count("qwen2.5-7b.q8_0.server-load.c_8192_np_1_fa_off was skipped on the device "
                             "(2026-12-01T00:00:00Z): estimate 10 s > 9 s left") == 1, proc.stdout[-3000:]
    assert all(r["verdict"] == "agree" and r["source"] == "recorded" for r in recs), [
        (r["test_id"], r["name"], r["verdict"], r["source"]) for r in recs
        if r["verdict"] != "agree" or r["source"] != "recorded"]
    # the checked (not fitted) decode runs: 0.5B in three types and the 7B Q4_K_M
    assert sum(r["name"] == "llamacpp_tg128_tok_per_s" for r in recs) == 4
