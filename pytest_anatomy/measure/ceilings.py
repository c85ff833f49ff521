"""Hardware ceilings measured in-session with PyTorch: the denominators of every roofline.

- copy bandwidth: device-to-device copy, bytes read + bytes written (the STUDY's convention)
- read bandwidth: one large fp32 sum; reads every byte once, writes 4
- bf16 matmul peak: 8192^3 through cuBLAS (torch.matmul), 2*n^3 FLOP
- fp32 matmul peak: the same with TF32 off (IEEE fp32), the seed's "pure FP32" cuBLAS rung

Each ceiling is the median of >= 20 runs timed with CUDA events after warm-up, on random data
(zeros run a matmul faster: seen on this workplace's H200), with buffers many times the L2 so
the cache cannot serve repeated runs. torch is imported inside functions only, so this module
imports on a CPU-only machine; `python -m pytest_anatomy.measure.ceilings --json PATH` runs
everything in a fresh process (the latency plan does that, to keep its own process CUDA-free
for vLLM's engine fork).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable, Sequence

from pytest_anatomy.gpu_query import nvidia_smi_snapshot, nvml_clock_facts
from pytest_anatomy.stats import median
from pytest_anatomy.units import GiB

DEFAULT_BUFFER_BYTES = 4 * GiB
DEFAULT_RUNS = 25
DEFAULT_WARMUP = 5
MATMUL_N = 8192

def summarize_runs(seconds: Sequence[float], work: float, unit: str, method: str,
                   **extra: Any) -> dict[str, Any]:
    """A ceiling as a dict: value = work / median(seconds), in SI units (B/s or FLOP/s).

    samples holds the per-run rates, so the spread is visible next to the median."""
    if len(seconds) == 0 or min(seconds) <= 0:
        raise ValueError(f"need positive run times to summarize {method!r}, got {list(seconds)!r}")
    median_s = median(seconds)
    return {
        "value": work / median_s,
        "unit": unit,
        "samples": [work / s for s in seconds],
        "method": method,
        "seconds_median": median_s,
        "work_per_run": work,
        "runs": len(seconds),
        **extra,
    }


def gpu_facts(index: int = 0) -> dict[str, Any]:
    """Name, SMs, L2, memory, capability and versions, from torch (+ nvidia-smi, pynvml)."""
    import torch

    props = torch.cuda.get_device_properties(index)
    facts: dict[str, Any] = {
        "name": props.name,
        "sm_count": props.multi_processor_count,
        "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        "total_memory_bytes": props.total_memory,
        "compute_capability": f"{props.major}.{props.minor}",
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
    }
    smi = nvidia_smi_snapshot(index)
    if smi:
        facts["driver"] = smi.get("driver_version")
    facts.update(nvml_clock_facts(index))  # the CUDA driver API version and max clocks; optional
    return facts


def _time_cuda(fn: Callable[[], object], runs: int, warmup: int) -> list[float]:
    """Seconds per call, one CUDA event pair per call, calls queued back to back (no host
    sync between them, so the GPU never idles and clocks stay where the workload puts them)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(runs)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) / 1e3 for start, end in events]


def copy_bandwidth(nbytes: int = DEFAULT_BUFFER_BYTES, runs: int = DEFAULT_RUNS,
                   warmup: int = DEFAULT_WARMUP) -> dict[str, Any]:
    import torch

    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    seconds = _time_cuda(lambda: dst.copy_(src), runs, warmup)
    if not torch.equal(dst, src):
        raise RuntimeError("device-to-device copy produced a wrong result; the timing is void")
    return summarize_runs(seconds, 2.0 * nbytes, "B/s",
                          f"torch copy_ of {nbytes / GiB:g} GiB fp32, bytes read + written, "
                          f"median of {runs} CUDA-event runs after {warmup} warm-up",
                          buffer_bytes=nbytes)


def read_bandwidth(nbytes: int = DEFAULT_BUFFER_BYTES, runs: int = DEFAULT_RUNS,
                   warmup: int = DEFAULT_WARMUP) -> dict[str, Any]:
    import torch

    x = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    # the 4-byte result comes from the caching allocator: no cudaMalloc inside the timing
    seconds = _time_cuda(lambda: x.sum(), runs, warmup)
    return summarize_runs(seconds, float(nbytes), "B/s",
                          f"torch.sum over {nbytes / GiB:g} GiB fp32 (bytes read), "
                          f"median of {runs} CUDA-event runs after {warmup} warm-up",
                          buffer_bytes=nbytes)


def matmul_peak(dtype: str = "bf16", n: int = MATMUL_N, runs: int = DEFAULT_RUNS,
                warmup: int = DEFAULT_WARMUP) -> dict[str, Any]:
    """cuBLAS n^3 matmul rate. dtype 'bf16' or 'fp32' (TF32 forced off for fp32)."""
    import torch

    torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}.get(dtype)
    if torch_dtype is None:
        raise ValueError(f"matmul_peak dtype must be 'bf16' or 'fp32', got {dtype!r}")
    matmul_cfg = torch.backends.cuda.matmul
    new_api = hasattr(matmul_cfg, "fp32_precision")  # torch >= 2.9 replaces allow_tf32
    saved = matmul_cfg.fp32_precision if new_api else matmul_cfg.allow_tf32
    try:
        if new_api:
            matmul_cfg.fp32_precision = "ieee"
            precision = f"fp32_precision={matmul_cfg.fp32_precision!r}"
        else:
            matmul_cfg.allow_tf32 = False
            precision = f"allow_tf32={matmul_cfg.allow_tf32!r}"
        a = torch.randn(n, n, dtype=torch_dtype, device="cuda")
        b = torch.randn(n, n, dtype=torch_dtype, device="cuda")
        c = torch.empty(n, n, dtype=torch_dtype, device="cuda")
        seconds = _time_cuda(lambda: torch.matmul(a, b, out=c), runs, warmup)
    finally:
        if new_api:
            matmul_cfg.fp32_precision = saved
        else:
            matmul_cfg.allow_tf32 = saved
    note = f", {precision}" if dtype == "fp32" else ""
    return summarize_runs(seconds, 2.0 * n**3, "FLOP/s",
                          f"torch.matmul {n}x{n}x{n} {dtype} randn{note}, 2*n^3 FLOP, "
                          f"median of {runs} CUDA-event runs after {warmup} warm-up",
                          n=n, dtype=dtype)


def measure_all(buffer_bytes: int = DEFAULT_BUFFER_BYTES, runs: int = DEFAULT_RUNS,
                warmup: int = DEFAULT_WARMUP, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Facts, clocks before, the four ceilings, clocks after."""
    if runs < 20:
        raise ValueError(f"ceilings need >= 20 timed runs for a stable median, got runs={runs!r}")
    t0 = time.perf_counter()
    facts = gpu_facts()
    l2 = facts.get("l2_cache_bytes") or 0
    if l2 and buffer_bytes < 8 * l2:
        raise ValueError(f"buffer of {buffer_bytes} B is under 8x the {l2} B L2: repeated runs "
                         f"would hit the cache; pass a larger buffer")
    result: dict[str, Any] = {"facts": facts, "clocks_before": nvidia_smi_snapshot()}
    import torch

    steps: tuple[tuple[str, Callable[[], dict[str, Any]]], ...] = (
        ("copy_bandwidth", lambda: copy_bandwidth(buffer_bytes, runs, warmup)),
        ("read_bandwidth", lambda: read_bandwidth(buffer_bytes, runs, warmup)),
        ("matmul_bf16", lambda: matmul_peak("bf16", MATMUL_N, runs, warmup)),
        ("matmul_fp32", lambda: matmul_peak("fp32", MATMUL_N, runs, warmup)),
    )
    for key, fn in steps:
        result[key] = fn()
        torch.cuda.empty_cache()  # the previous buffers are garbage now; give their memory back
        shown = "TB/s" if result[key]["unit"] == "B/s" else "TFLOP/s"
        log(f"[ceilings] {key}: {result[key]['value'] / 1e12:.3f} {shown}")
    result["clocks_after"] = nvidia_smi_snapshot()
    result["wall_s"] = time.perf_counter() - t0
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure copy/read bandwidth and matmul peaks.")
    parser.add_argument("--json", default=None, help="write the result here")
    parser.add_argument("--buffer-gib", type=float, default=DEFAULT_BUFFER_BYTES / GiB)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP)
    args = parser.parse_args(argv)
    result = measure_all(int(args.buffer_gib * GiB), args.runs, args.warmup,
                         log=lambda s: print(s, flush=True))
    text = json.dumps(result, indent=1)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
