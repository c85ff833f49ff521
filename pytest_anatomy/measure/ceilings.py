"""Hardware ceilings measured in-session with PyTorch: the denominators of every roofline.

- copy bandwidth: device-to-device copy, bytes read + bytes written (the STUDY's convention)
- read bandwidth: one large fp32 sum; reads every byte once, writes 4
- bf16 matmul peak: 8192^3 through cuBLAS (torch.matmul), 2*n^3 FLOP
- fp32 matmul peak: the same with TF32 off (IEEE fp32), the seed's "pure FP32" cuBLAS rung
- linear shapes (optional, --gemm-shapes FILE): bf16 x @ W^T through cuBLAS (F.linear's layout, what
  vLLM's unquantized linear layers run) at each (m tokens, k in, n out) a model's step runs, so a step's
  compute and streaming rates come from the shapes it runs rather than from one square matmul;
  weights rotate over enough copies that no run finds its W in L2

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
import os
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


def _time_cuda(fn: Callable[[], object], runs: int, warmup: int, warmup_s: float = 0.0) -> list[float]:
    """Seconds per call, one CUDA event pair per call, calls queued back to back (no host
    sync between them, so the GPU never idles and clocks stay where the workload puts them).
    Warm-up: `warmup` calls, then more in groups of `warmup` until `warmup_s` of wall time (synchronized, so GPU
    time) has passed: a short kernel's few warm-up calls last microseconds, less than a clock ramp."""
    import torch

    began = time.perf_counter()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    while time.perf_counter() - began < warmup_s:
        for _ in range(max(1, warmup)):
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


GEMM_RUNS = 20  # the large-m shapes are compute-bound and steady; 20 keeps the whole set to ~15 s
GEMM_WARMUP = 3
# ... and at least this long: triton.testing.do_bench's default warm-up (25 ms). Three calls of a 512-row GEMM last
# ~0.3 ms; in the H200 session of 2026-12-07 17:25 the first 13 of 20 timed calls at m512_k3584_n4608 ran at
# 1.2-1.8e14 FLOP/s before climbing to 5.3e14 (the median fell 2-3x under the other sessions', docs/RECORDING.md),
# a ramp the warm-up had not outlasted. Added after that session; the recordings before it warmed up by count only.
GEMM_WARMUP_S = 0.025
GEMM_ROTATE_BYTES = 512 * 2**20  # > 8x an H200's L2: a W is evicted before its copy comes round again
GEMM_BUDGET_S = 60.0  # the linear shapes never hold the session's other parts back longer (~15 s planned)


def gemm_key(m: int, k: int, n: int) -> str:
    """The name of one linear shape's timing: gemm.m<tokens>_k<in>_n<out> in a recording."""
    return f"m{m}_k{k}_n{n}"


def linear_rate(m: int, k: int, n: int, runs: int = GEMM_RUNS, warmup: int = GEMM_WARMUP,
                warmup_s: float = GEMM_WARMUP_S) -> dict[str, Any]:
    """bf16 x @ W^T of an (m, k) activation with an (n, k) weight (F.linear's layout): FLOP/s (2*m*k*n per run) and the
    seconds, with the bytes it must move (W + x + y, bf16) so a memory-bound shape reads as B/s too."""
    import torch

    w_bytes = 2 * k * n
    copies = max(1, min(32, -(-GEMM_ROTATE_BYTES // w_bytes)))
    weights = [torch.randn(n, k, dtype=torch.bfloat16, device="cuda") for _ in range(copies)]
    x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    y = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    turn = iter(range(1 << 62))

    def run() -> None:  # x @ W^T on the transposed view: cuBLAS's op(T), as F.linear without a bias
        torch.mm(x, weights[next(turn) % copies].t(), out=y)

    seconds = _time_cuda(run, runs, warmup, warmup_s)
    moved = 2.0 * (k * n + m * k + m * n)
    return summarize_runs(seconds, 2.0 * m * k * n, "FLOP/s",
                          f"bf16 torch.mm x({m}x{k}) @ W({n}x{k})^T randn, {copies} W copies rotated (L2 cold), "
                          f"median of {runs} CUDA-event runs after >= {warmup} warm-up runs and >= "
                          f"{warmup_s * 1e3:g} ms of them",
                          m=m, k=k, n=n, bytes_moved=moved, bytes_per_s=moved / median(seconds),
                          weight_copies=copies)


def measure_all(buffer_bytes: int = DEFAULT_BUFFER_BYTES, runs: int = DEFAULT_RUNS,
                warmup: int = DEFAULT_WARMUP, log: Callable[[str], None] = print,
                gemm_shapes: Sequence[tuple[int, int, int]] = (),
                checkpoint: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Facts, clocks before, the four ceilings, the linear shapes asked for, clocks after.
    `checkpoint` receives the result once the four ceilings are in, before the linear shapes: a
    process killed during those still leaves the ceilings every prediction divides by."""
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
    if checkpoint is not None:
        checkpoint(result)
    if gemm_shapes:
        t1 = time.perf_counter()
        result["gemm"], problems = {}, {}
        for m, k, n in sorted(set(gemm_shapes)):
            key = gemm_key(m, k, n)
            if time.perf_counter() - t1 > GEMM_BUDGET_S:
                problems[key] = f"not timed: the linear shapes' {GEMM_BUDGET_S:g} s were spent"
                continue
            try:
                result["gemm"][key] = linear_rate(m, k, n)
            except RuntimeError as exc:  # out of memory, a cuBLAS error: this shape only
                problems[key] = f"{type(exc).__name__}: {exc}"
            torch.cuda.empty_cache()
        if problems:
            result["gemm_not_timed"] = problems
        log(f"[ceilings] {len(result['gemm'])} linear shapes in {time.perf_counter() - t1:.1f} s"
            + (f", {len(problems)} not timed" if problems else ""))
    result["clocks_after"] = nvidia_smi_snapshot()
    result["wall_s"] = time.perf_counter() - t0
    return result


def read_gemm_shapes(path: str) -> list[tuple[int, int, int]]:
    """A JSON list of {"m": tokens, "k": in, "n": out} (more keys allowed) -> (m, k, n) triples."""
    with open(path) as fh:
        doc = json.load(fh)
    try:
        shapes = [(int(s["m"]), int(s["k"]), int(s["n"])) for s in doc]
    except (TypeError, KeyError, ValueError):
        raise SystemExit(f"--gemm-shapes {path}: expected a JSON list of objects with integer m, k, n") from None
    if any(min(s) < 1 for s in shapes):
        raise SystemExit(f"--gemm-shapes {path}: every m, k, n must be >= 1")
    return shapes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure copy/read bandwidth and matmul peaks.")
    parser.add_argument("--json", default=None, help="write the result here")
    parser.add_argument("--buffer-gib", type=float, default=DEFAULT_BUFFER_BYTES / GiB)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP)
    parser.add_argument("--gemm-shapes", default=None,
                        help="JSON file: a list of {m, k, n} linear shapes to time as well (bf16 x @ W^T)")
    args = parser.parse_args(argv)
    shapes = read_gemm_shapes(args.gemm_shapes) if args.gemm_shapes else []
    def write(result: dict[str, Any]) -> None:
        text = json.dumps(result, indent=1)
        if args.json:
            tmp = args.json + ".tmp"
            with open(tmp, "w") as fh:
                fh.write(text + "\n")
            os.replace(tmp, args.json)
        else:
            print(text)

    result = measure_all(int(args.buffer_gib * GiB), args.runs, args.warmup, log=lambda s: print(s, flush=True),
                         gemm_shapes=shapes, checkpoint=write if args.json and shapes else None)
    write(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
