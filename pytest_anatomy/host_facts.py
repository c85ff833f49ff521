"""The host a device run ran on, beside the GPU's name: the facts that move host-bound timings.

A CPU-bound engine loop (eager launches, scheduling) runs at the host CPU's single-thread speed, so two runs of the
same GPU model on different machines can differ where the GPU's work does not (issue 10: Qwen2.5-7B's eager step
moved 19.5 -> 26.3 ms between two engine starts while Llama-3.1-8B's repeated, and the batches named only the GPU
model and driver, so the machines could not be told apart). Recorded in a device batch's provenance; read by people
and tests, never by a prediction.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from pytest_anatomy.gpu_query import smi_query


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The first 'model name' of /proc/cpuinfo (Linux x86), else platform.processor(), else None."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def runs_openblas_haswell() -> bool:
    """Whether this CPU can run OpenBLAS's Haswell kernels (AVX2 and FMA3; a forced kernel the CPU cannot run dies of
    SIGILL), by numpy's own CPU feature table; False without numpy."""
    try:
        from numpy._core import _multiarray_umath as umath  # type: ignore[attr-defined]
    except ImportError:  # numpy 1.x, or none
        try:
            from numpy.core import _multiarray_umath as umath  # type: ignore[no-redef]
        except ImportError:
            return False
    features = getattr(umath, "__cpu_features__", {})
    return bool(features.get("AVX2")) and bool(features.get("FMA3"))


def host_facts() -> dict[str, Any]:
    """CPU model, logical CPUs on the host and usable by this process, the kernel release, and the GPU's UUID (None
    without nvidia-smi): enough to tell two machines with the same GPU model apart."""
    try:
        usable: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    uuid = smi_query(("uuid",))
    return {"cpu_model": cpu_model(), "logical_cpus": os.cpu_count(), "usable_cpus": usable,
            "kernel": platform.release(), "gpu_uuid": uuid[0] if uuid else None}
