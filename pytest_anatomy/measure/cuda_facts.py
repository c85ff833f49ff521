"""What the CUDA driver says about a device, read in a short subprocess.

NVML has no SM count, no L2 size and no CUDA-visible memory total; the CUDA driver has all three
as device attributes (cuDeviceGetAttribute, cuDeviceTotalMem: no context is created). They are
read in a *subprocess* so that this process never calls cuInit: vLLM forks its engine workers,
and a CUDA-initialised parent breaks them. cuda-python (`cuda.bindings`, the `gpu` extra) is the
binding; without it the facts are simply absent and the caller says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

_PROBE = r"""
import json, sys
from cuda.bindings import driver as cu
def ok(res):
    err, *vals = res
    if err != cu.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"CUDA driver error {err}")
    return vals[0] if len(vals) == 1 else vals
ok(cu.cuInit(0))
dev = ok(cu.cuDeviceGet(int(sys.argv[1])))
A = cu.CUdevice_attribute
attr = lambda a: int(ok(cu.cuDeviceGetAttribute(a, dev)))
print(json.dumps({
    "sm_count": attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
    "l2_bytes": attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
    "memory_bus_bits": attr(A.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
    "sm_clock_max_khz": attr(A.CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
    "mem_clock_max_khz": attr(A.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
    "compute_capability": [attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                           attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)],
    "cuda_memory_total_bytes": int(ok(cu.cuDeviceTotalMem(dev))),
}))
"""


def cuda_device_facts(index: int = 0, timeout_s: float = 60.0) -> dict[str, Any] | None:
    """Driver attributes of CUDA device `index`, or None (no cuda-python, no driver, no device)."""
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE, str(index)], capture_output=True, text=True,
                             timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    try:
        facts = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return facts if isinstance(facts, dict) else None
