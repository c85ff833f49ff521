"""The one GPU term no llama.cpp log line reports: nvidia-smi's growth over a llama-server start less the CUDA0
buffers the load log prints (model, KV, compute). Measured per recorded load; the constant it is predicted with is
fitted on the loads recorded in more than one visit (their repeats give the noise), and the other loads are held out.

Recorded on the H200 (2026-12-02 visits, one llama.cpp build): 592.9-599.0 MiB over eight loads from the 0.5B to
the 7B, 1 to 64 slots, flash attention on and off, 0.55 to 17.7 GiB of buffers, so it does not scale with any of
them. It is above vLLM's non-torch memory at start on the same card (527 MiB), the bound the first check used: that
check passed only because it priced the compute buffer the server does not allocate (llama_findings.py's
h200-llama-server-reserves-n-parallel-outputs, ~262 MiB on the 0.5B loads), the compensation docs/LLAMA.md noted.
What the term holds (the CUDA context, cuBLAS's workspace, ggml-cuda's memory pool after the warmup) is not split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from llama_runs import SUITE, parse_run

from pytest_anatomy import recordings

CUDA0 = ".CUDA0"
NVIDIA_SMI_STEP = 2 * 2**20  # two readings in whole MiB


def remainder_bytes(rec: recordings.Recording) -> float | None:
    """Growth (loaded less before) minus every logged CUDA0 buffer; None without both nvidia-smi readings."""
    m = rec.measurements
    if not {"load.gpu_memory_used_bytes", "load.gpu_memory_before_bytes"} <= set(m):
        return None
    growth = rec["load.gpu_memory_used_bytes"].value - rec["load.gpu_memory_before_bytes"].value
    return growth - sum(rec[k].value for k in m if k.startswith("load.buffers_bytes.") and k.endswith(CUDA0))


@dataclass(frozen=True)
class ContextFit:
    value: float  # bytes
    sd: float  # one load's scatter, pooled over the repeated loads
    fit_names: tuple[str, ...]
    n: int

    def tolerance(self) -> float:
        """3 standard deviations of a held-out load about the fitted mean, plus nvidia-smi's whole MiB twice."""
        return 3 * self.sd * math.sqrt(1 + 1 / self.n) + NVIDIA_SMI_STEP


def remainders(results: Path, hardware: str) -> dict[str, list[float]]:
    """Each recorded server load's remainder, oldest first (the loads with nvidia-smi readings)."""
    out: dict[str, list[float]] = {}
    for name in recordings.list_recordings(results, hardware, SUITE):
        run = parse_run(hardware, name)
        if run is None or run.kind not in ("server-load", "server-sweep"):
            continue
        values = [r for r in (remainder_bytes(rec) for rec in recordings.load_runs([results], hardware, SUITE, name)
                              if rec.provenance.get("status") in (None, "ok")) if r is not None]
        if values:
            out[name] = values
    return out


def fit_context(results: Path, hardware: str) -> ContextFit | None:
    """The mean remainder of the loads recorded at least twice, and the pooled scatter of their repeats."""
    repeated = {n: v for n, v in remainders(results, hardware).items() if len(v) >= 2}
    values = [x for v in repeated.values() for x in v]
    dof = len(values) - len(repeated)
    if dof < 1:
        return None
    ss = sum((x - sum(v) / len(v)) ** 2 for v in repeated.values() for x in v)
    return ContextFit(sum(values) / len(values), math.sqrt(ss / dof), tuple(sorted(repeated)), len(values))
