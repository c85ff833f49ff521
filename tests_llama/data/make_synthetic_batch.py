"""Write synthetic-llama-batch.json: a llama_plan.py batch with SYNTHETIC numbers, for the CPU test of
the import + replay path (tests_llama/test_llama_replay_synthetic.py). Nothing here was measured.

The buffer lines are the theory's own bytes printed the way llama.cpp prints them (%8.2f MiB), and
the tokens/s come from the decode/prefill theory with made-up "true" constants and a fixed 1%
scatter; both then go through the plan's own parsers (parse_load_log, parse_bench_json). So the file
has the shape a device visit writes, and a replay of it must agree; it proves the plumbing, never
the theory. Regenerate with `python tests_llama/data/make_synthetic_batch.py` from the repo root.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent)]

from llama_runs import LlamaRun, header_for  # noqa: E402

from pytest_anatomy.measure.llama_cpp import bench_summary, load_log_dict, parse_bench_json  # noqa: E402
from pytest_anatomy.measure.llama_log import parse_load_log  # noqa: E402
from pytest_anatomy.specs.gguf_file import header_to_dict  # noqa: E402
from pytest_anatomy.theory import llamacpp_latency as ll  # noqa: E402
from pytest_anatomy.theory import llamacpp_memory as lm  # noqa: E402

READ, MATMUL = 4.4e12, 7.9e14  # synthetic ceilings
TRUE = ll.LlamaCalibration(READ, MATMUL, 0.0, {"F16": 0.80, "MMVQ": 0.70}, {"F16": 0.60, "MMQ": 0.90}, "synthetic")
SCATTER = (0.99, 1.0, 1.01, 1.005, 0.995)


def overhead(layers: int, phase: str) -> float:
    return (2e-4 + 2e-5 * layers) if phase == "decode" else (1e-3 + 4e-5 * layers)


def log_text(header, settings: lm.ContextSettings) -> str:
    def line(fn: str, dev: str, kind: str, pred) -> str:
        return f"{fn}: {dev:>12s} {kind} buffer size = {pred.value / 2**20:8.2f} MiB"
    lines = [line("load_tensors", "CPU_Mapped", "model", lm.model_buffer_host(header)),
             line("load_tensors", "CUDA0", "model", lm.model_buffer_gpu(header, settings)),
             line("llama_context", "CUDA_Host", " output", lm.output_buffer(header, settings)),
             line("llama_kv_cache", "CUDA0", "KV", lm.kv_buffer(header, settings)),
             line("sched_reserve", "CUDA0", "compute", lm.compute_buffer_gpu(header, settings))]
    size = sum(t.nbytes for t in header.tensors)
    lines.append(f"print_info: file size   = {size / 2**20:.2f} MiB (8.00 BPW) " if size < 2**30 else
                 f"print_info: file size   = {size / 2**30:.2f} GiB (8.00 BPW) ")
    return "\n".join(lines) + "\n"


def bench_run(run: LlamaRun) -> dict:
    h = header_for(run)
    layers = h.block_count
    dec = replace(TRUE, overhead_s=overhead(layers, "decode"))
    pre = replace(TRUE, overhead_s=overhead(layers, "prefill"))
    tg = ll.decode_tokens_per_s(h, dec, n_gen=128).value
    pp = ll.prefill_tokens_per_s(h, pre, 512).value
    entries = [{"n_prompt": n_p, "n_gen": n_g, "n_depth": 0, "avg_ts": v, "stddev_ts": 0.01 * v,
                "samples_ts": [v * f for f in SCATTER], "flash_attn": 1, "n_batch": 2048, "n_ubatch": 512,
                "build_commit": "synthetic", "build_number": 0} for n_p, n_g, v in ((512, 0, pp), (0, 128, tg))]
    tests = [bench_summary(e) for e in parse_bench_json(json.dumps(entries))]
    log = load_log_dict(parse_load_log(log_text(h, lm.ContextSettings(n_ctx=640, n_seq_max=1))))
    metrics = {t["test"]: {"tok_per_s": t["tok_per_s"]} for t in tests}
    metrics["load"] = {"buffers_bytes": log["buffers_bytes"], "file_size_bytes": log["file_size_bytes"]}
    return {"id": run.name, "kind": "bench",
            "settings": {"model": run.model, "weights": run.weights, "n_prompt": 512, "n_gen": 128,
                         "repetitions": 5, "flash_attn": True, "n_gpu_layers": 99},
            "result": {"status": "ok", "metrics": metrics,
                       "samples": {f"{t['test']}.tok_per_s": t["samples"]["tok_per_s"] for t in tests},
                       "tests": tests, "load_log": log}}


def server_run(model: str, weights: str, args: list[str]) -> dict:
    run = LlamaRun("h200", f"{model}.{weights.lower()}.server-load.x", model, weights, "server-load")
    h = header_for(run)
    settings = lm.ContextSettings.from_flags(args)
    log = load_log_dict(parse_load_log(log_text(h, settings)))
    buffers = lm.gpu_buffers_total(h, settings).value
    return {"id": f"{model}.{weights.lower()}.server-load.{'_'.join(a.lstrip('-') for a in args)}", "kind": "server",
            "settings": {"model": model, "weights": weights, "args": args, "sweep": None},
            "result": {"status": "ok", "metrics": {"load": {
                "buffers_bytes": log["buffers_bytes"], "file_size_bytes": log["file_size_bytes"],
                "gpu_memory_before_bytes": 4 * 2**20,
                "gpu_memory_used_bytes": 4 * 2**20 + buffers + 400 * 2**20, "ready_s": 1.5}},
                "load_log": log}}


def sweep_run() -> dict:
    """A burst sweep of the 7B Q4_K_M: itl(C) = itl(1) + (C - 1) x 0.1 ms, prompts at 25 ms each."""
    itl1, marginal, ttft1 = 2.5e-3, 1e-4, 25e-3
    metrics: dict = {}
    samples: dict = {}
    for c in (1, 2, 4, 8, 16, 32, 64):
        itl = itl1 + (c - 1) * marginal
        wall = c * ttft1 + 256 * itl
        per_request = [itl * f for f in SCATTER][: max(2, min(c, 5))]
        metrics[f"c{c}"] = {"throughput_tok_per_s": c * 256 / wall, "ttft_s": {"median": (c + 1) / 2 * ttft1},
                            "itl_s": {"median": itl}, "wall_s": wall, "completed": c, "failed": 0,
                            "output_tokens": c * 256}
        samples[f"c{c}.itl_s"] = per_request
        samples[f"c{c}.ttft_s"] = [(i + 1) * ttft1 for i in range(c)]
    args = ["-c", "81920", "-np", "64", "-fa", "on"]
    metrics["load"] = server_run("qwen2.5-7b", "Q4_K_M", args)["result"]["metrics"]["load"]
    return {"id": "qwen2.5-7b.q4_k_m.server-sweep." + "_".join(a.lstrip("-") for a in args), "kind": "server",
            "settings": {"model": "qwen2.5-7b", "weights": "Q4_K_M", "args": args,
                         "sweep": {"levels": [1, 2, 4, 8, 16, 32, 64], "n_prompt": 1024, "n_gen": 256}},
            "result": {"status": "ok", "metrics": metrics, "samples": samples}}


def quantize_run(model: str, weights: str) -> dict:
    run = LlamaRun("h200", f"{model}.{weights.lower()}.quantize", model, weights, "quantize")
    # in the order the plan's writer leaves a file (output_norm, output / token_embd, then the blocks), not the
    # predicted header's: the replay must match tensors by name, as it must on the device's files
    h = header_for(run)
    first = [t for t in h.tensors if not t.name.startswith("blk.")][::-1]
    h = replace(h, tensors=(*first, *(t for t in h.tensors if t.name.startswith("blk."))))
    return {"id": run.name, "kind": "quantize", "settings": {"model": model, "weights": weights},
            "result": {"status": "ok", "header": header_to_dict(h), "seconds": 3.0,
                       "metrics": {"tensor_bytes": sum(t.nbytes for t in header_for(run).tensors)}}}


def batch() -> dict:
    benches = [LlamaRun("h200", f"{m}.{w.lower()}.bench", m, w, "bench")
               for m in ("tiny-24l", "tiny-28l", "qwen2.5-0.5b", "qwen2.5-7b") for w in ("F16", "Q8_0", "Q4_K_M")]
    ceilings = {"read_bandwidth": {"value": READ}, "matmul_bf16": {"value": MATMUL}}
    return {"schema": "pytest-anatomy/device-batch/v1",
            "provenance": {"kind": "llama", "date_utc": "2026-12-01T00:00:00+00:00", "command": "SYNTHETIC (no device)",
                           "nvidia_smi": {"summary": {"name": "NVIDIA H200", "driver": "synthetic"}},
                           "versions": {"llama.cpp": {"engine": "llama.cpp", "version": "synthetic",
                                                      "ggml": "synthetic", "build_commit": "synthetic"}},
                           "model": {"id": "synthetic"}},
            "runs": [{"id": "ceilings", "kind": "ceilings", "settings": {}, "result": ceilings},
                     quantize_run("qwen2.5-0.5b", "Q4_K_M"), quantize_run("qwen2.5-7b", "Q4_K_M"),
                     *(bench_run(r) for r in benches),
                     server_run("qwen2.5-0.5b", "F16", ["-c", "8000", "-np", "3", "-fa", "on"]),
                     server_run("qwen2.5-0.5b", "Q4_K_M", ["-c", "16384", "-np", "4", "-fa", "on", "--kv-unified",
                                                           "-ub", "256"]),
                     sweep_run(),
                     # as the plan writes a run its budget left out: the replay must skip it with this reason
                     {"id": "qwen2.5-7b.q8_0.server-load.c_8192_np_1_fa_off", "kind": "server",
                      "settings": {"model": "qwen2.5-7b", "weights": "Q8_0", "args": ["-c", "8192", "-np", "1", "-fa",
                                                                                    "off"], "sweep": None},
                      "result": {"status": "skipped", "reason": "estimate 10 s > 9 s left"}}]}


if __name__ == "__main__":
    (HERE / "synthetic-llama-batch.json").write_text(json.dumps(batch(), indent=1) + "\n")
