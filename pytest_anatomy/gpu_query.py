"""Asking the driver about a GPU: NVML (pynvml), nvidia-smi and the CUDA driver's attributes, in one place.

specs/hardware.py builds a DetectedGPU from these answers; measure/ records clocks and device
memory around a measurement with them. None of it initialises CUDA in this process (vLLM forks
its engine workers, and a CUDA-initialised parent breaks them), torch is only read when this process already
initialised CUDA or the caller asks, and every query degrades to None on a machine without a GPU,
a driver or the bindings: a CPU-only machine collects every suite.

One device numbering: callers pass CUDA's device index. NVML and nvidia-smi ignore
CUDA_VISIBLE_DEVICES, so `nvml_handle` and `smi_id` map the CUDA index through it.
It imports nothing from the package but units, so specs/ and measure/ can both use it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from pytest_anatomy.units import MiB

# nvidia-smi fields read before and after the measurements: clocks tell whether the card
# boosted, power.limit whether it is capped (docs/FACTS.md M1: never change these, only record them).
SMI_FIELDS: tuple[str, ...] = (
    "name", "driver_version", "pstate", "clocks.sm", "clocks.mem", "clocks.max.sm",
    "clocks.max.mem", "power.draw", "power.limit", "temperature.gpu", "memory.total",
    "memory.used",
)
_SMI_TEXT_FIELDS = ("name", "driver_version", "pstate")


# ------------------------------------------------------------------ NVML
def nvml_module() -> Any:
    """pynvml (nvidia-ml-py), or vLLM's vendored copy once vllm is imported; None without either."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the `pynvml` shim warns that it is deprecated
        try:
            import pynvml

            return pynvml
        except ImportError:
            pass
        if "vllm" in sys.modules:  # vLLM vendors nvidia-ml-py; only worth it once vllm is imported
            try:
                from vllm.third_party import pynvml as vendored

                return vendored
            except ImportError:
                pass
    return None


def nvml_call(fn: Any, *args: Any) -> Any:
    """One NVML query; None when unsupported on this GPU/driver (NVMLError_NotSupported etc.)."""
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001
        return None


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value  # old pynvml returned bytes


def nvml_handle(pynvml: Any, index: int) -> Any:
    """NVML handle of CUDA device `index`, honouring CUDA_VISIBLE_DEVICES (indices or UUIDs)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return nvml_call(pynvml.nvmlDeviceGetHandleByIndex, index)
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if index >= len(entries):
        return None  # "" or "-1" hides every GPU, as CUDA does
    entry = entries[index]
    if entry.isdigit():
        return nvml_call(pynvml.nvmlDeviceGetHandleByIndex, int(entry))
    if not entry.startswith(("GPU-", "MIG-")):
        return None  # CUDA stops at the first invalid entry
    for i in range(nvml_call(pynvml.nvmlDeviceGetCount) or 0):  # CUDA accepts UUID prefixes
        handle = nvml_call(pynvml.nvmlDeviceGetHandleByIndex, i)
        uuid = _text(nvml_call(pynvml.nvmlDeviceGetUUID, handle)) if handle is not None else None
        if uuid and uuid.startswith(entry):
            return handle
    return None


def nvml_device_info(index: int) -> dict[str, Any] | None:
    """Name, memory, clocks, power limit, versions, MIG mode, capability, bus width and core count
    of CUDA device `index` (the fields of specs.hardware.DetectedGPU); None without NVML or the device."""
    pynvml = nvml_module()
    if pynvml is None:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver / no GPU
        return None
    try:
        handle = nvml_handle(pynvml, index)
        if handle is None:
            return None
        name = _text(pynvml.nvmlDeviceGetName(handle))
        mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
        sm, mem_clk = getattr(pynvml, "NVML_CLOCK_SM", 1), getattr(pynvml, "NVML_CLOCK_MEM", 2)
        power_mw = nvml_call(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle)
        if power_mw is None:
            power_mw = nvml_call(pynvml.nvmlDeviceGetPowerManagementLimit, handle)
        cuda_v = nvml_call(pynvml.nvmlSystemGetCudaDriverVersion)
        mig = nvml_call(pynvml.nvmlDeviceGetMigMode, handle)
        cc = nvml_call(pynvml.nvmlDeviceGetCudaComputeCapability, handle)
        return {
            "name": name, "memory_total_bytes": int(mem.total), "memory_free_bytes": int(mem.free),
            "uuid": _text(nvml_call(pynvml.nvmlDeviceGetUUID, handle)),
            "sm_clock_mhz": nvml_call(pynvml.nvmlDeviceGetClockInfo, handle, sm),
            "mem_clock_mhz": nvml_call(pynvml.nvmlDeviceGetClockInfo, handle, mem_clk),
            "sm_clock_max_mhz": _max_sm_clock(pynvml, handle, index, sm),
            "mem_clock_max_mhz": nvml_call(pynvml.nvmlDeviceGetMaxClockInfo, handle, mem_clk),
            "power_limit_w": power_mw / 1000 if power_mw is not None else None,
            "driver_version": _text(nvml_call(pynvml.nvmlSystemGetDriverVersion)),
            "cuda_driver_version": f"{cuda_v // 1000}.{cuda_v % 1000 // 10}" if cuda_v else None,
            "mig_enabled": bool(mig[0]) if mig is not None else None,
            "compute_capability": (int(cc[0]), int(cc[1])) if cc is not None else None,
            "memory_bus_bits": nvml_call(getattr(pynvml, "nvmlDeviceGetMemoryBusWidth", None), handle),
            "cuda_cores": nvml_call(getattr(pynvml, "nvmlDeviceGetNumGpuCores", None), handle),
        }
    finally:
        nvml_call(pynvml.nvmlShutdown)


def visible_gpu_count() -> int:
    """How many GPUs this process may use: NVML's device count, narrowed by CUDA_VISIBLE_DEVICES
    (0 without NVML or a driver). Never raises, never initialises CUDA."""
    pynvml = nvml_module()
    if pynvml is None:
        return 0
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver / no GPU
        return 0
    try:
        return sum(1 for i in range(16) if nvml_handle(pynvml, i) is not None)
    finally:
        nvml_call(pynvml.nvmlShutdown)


def nvml_clock_facts(index: int = 0) -> dict[str, Any]:
    """The CUDA driver API version and the max SM / memory clocks of CUDA device `index`, for a
    ceilings recording's facts; {"pynvml": "unavailable: <why>"} when NVML cannot answer."""
    facts: dict[str, Any] = {}
    try:
        pynvml = nvml_module()
        if pynvml is None:
            raise ImportError("no pynvml")
        pynvml.nvmlInit()
        try:
            facts["cuda_driver_version"] = pynvml.nvmlSystemGetCudaDriverVersion()
            handle = nvml_handle(pynvml, index)
            if handle is None:
                raise LookupError(f"CUDA device {index} is not visible")
            facts["nvml_id"] = smi_id(index)
            facts["max_sm_clock_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
            facts["max_mem_clock_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
        finally:
            nvml_call(pynvml.nvmlShutdown)
    except Exception as exc:  # noqa: BLE001 - absent or refused in the sandbox: the facts say so
        facts["pynvml"] = f"unavailable: {type(exc).__name__}"
    return facts


# Clocks-event ("throttle") reasons: our name, pynvml's constant names (nvidia-ml-py 12.535+ spells
# most of them ClocksEventReason*, older releases ClocksThrottleReason*; the hardware ones kept the old
# name for a while) and nvml.h's bit, used when this pynvml has neither name.
CLOCK_REASONS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("gpu_idle", ("nvmlClocksEventReasonGpuIdle", "nvmlClocksThrottleReasonGpuIdle"), 0x1),
    ("applications_clocks_setting", ("nvmlClocksEventReasonApplicationsClocksSetting",
                                     "nvmlClocksThrottleReasonApplicationsClocksSetting"), 0x2),
    ("sw_power_cap", ("nvmlClocksEventReasonSwPowerCap", "nvmlClocksThrottleReasonSwPowerCap"), 0x4),
    ("hw_slowdown", ("nvmlClocksEventReasonHwSlowdown", "nvmlClocksThrottleReasonHwSlowdown"), 0x8),
    ("sync_boost", ("nvmlClocksEventReasonSyncBoost", "nvmlClocksThrottleReasonSyncBoost"), 0x10),
    ("sw_thermal_slowdown", ("nvmlClocksEventReasonSwThermalSlowdown",
                             "nvmlClocksThrottleReasonSwThermalSlowdown"), 0x20),
    ("hw_thermal_slowdown", ("nvmlClocksEventReasonHwThermalSlowdown",
                             "nvmlClocksThrottleReasonHwThermalSlowdown"), 0x40),
    ("hw_power_brake_slowdown", ("nvmlClocksEventReasonHwPowerBrakeSlowdown",
                                 "nvmlClocksThrottleReasonHwPowerBrakeSlowdown"), 0x80),
    ("display_clock_setting", ("nvmlClocksEventReasonDisplayClockSetting",
                               "nvmlClocksThrottleReasonDisplayClockSetting"), 0x100),
    ("board_limit", ("nvmlClocksEventReasonBoardLimit", "nvmlClocksThrottleReasonBoardLimit"), 0x200),
    ("reliability", ("nvmlClocksEventReasonReliability", "nvmlClocksThrottleReasonReliability"), 0x400),
)

# clock_state is read several times per timing block, so NVML is initialised once per (module,
# device, CUDA_VISIBLE_DEVICES) and never shut down: nvmlInit is reference-counted, so the other
# functions' init/shutdown pairs leave this one standing. A failed init is cached too (None), so a
# CPU box with the bindings but no driver does not retry it every block.
_CLOCK_HANDLES: dict[tuple[Any, int, str | None], Any] = {}
# The max SM clock is the card's, fixed: read once per key above, not in each of a session's ~900 readings
_MAX_SM_CLOCK: dict[tuple[Any, int, str | None], int] = {}


def _clock_handle(pynvml: Any, index: int) -> Any:
    key = (pynvml, index, os.environ.get("CUDA_VISIBLE_DEVICES"))
    if key not in _CLOCK_HANDLES:
        try:
            pynvml.nvmlInit()
            _CLOCK_HANDLES[key] = nvml_handle(pynvml, index)
        except Exception:  # noqa: BLE001 - no driver / no GPU
            _CLOCK_HANDLES[key] = None
    return _CLOCK_HANDLES[key]


def decode_clock_reasons(pynvml: Any, mask: int) -> list[str]:
    """The names of the bits set in a clocks-event reasons mask (unknown bits as 'bit_0x...')."""
    names, known = [], 0
    for name, attrs, default in CLOCK_REASONS:
        bit = next((int(getattr(pynvml, a)) for a in attrs if isinstance(getattr(pynvml, a, None), int)), default)
        known |= bit
        if mask & bit:
            names.append(name)
    rest = mask & ~known
    names += [f"bit_{1 << i:#x}" for i in range(64) if rest >> i & 1]
    return names


def _max_sm_clock(pynvml: Any, handle: Any, index: int, sm: int) -> int | None:
    key = (pynvml, index, os.environ.get("CUDA_VISIBLE_DEVICES"))
    if key not in _MAX_SM_CLOCK:
        value = nvml_call(pynvml.nvmlDeviceGetMaxClockInfo, handle, sm)
        if value is None:  # no answer: asked again next time
            return None
        _MAX_SM_CLOCK[key] = value
    return _MAX_SM_CLOCK[key]


def clock_state(index: int = 0) -> dict[str, Any] | None:
    """CUDA device `index`'s clocks now: SM and memory clock (MHz), the max SM clock, the
    clocks-event reasons (mask and names), power draw (W) and GPU temperature (C). None without
    NVML, the device, or an answer for the SM clock; a field the GPU does not report is None.
    Never raises and never changes a clock (docs/FACTS.md M1)."""
    try:
        pynvml = nvml_module()
        if pynvml is None:
            return None
        handle = _clock_handle(pynvml, index)
        if handle is None:
            return None
        sm, mem = getattr(pynvml, "NVML_CLOCK_SM", 1), getattr(pynvml, "NVML_CLOCK_MEM", 2)
        sm_mhz = nvml_call(pynvml.nvmlDeviceGetClockInfo, handle, sm)
        if sm_mhz is None:
            return None
        reasons_fn = (getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                      or getattr(pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
        mask = nvml_call(reasons_fn, handle) if reasons_fn is not None else None
        power_mw = nvml_call(getattr(pynvml, "nvmlDeviceGetPowerUsage", None), handle)
        temp = nvml_call(getattr(pynvml, "nvmlDeviceGetTemperature", None), handle,
                         getattr(pynvml, "NVML_TEMPERATURE_GPU", 0))
        return {
            "time": time.time(), "sm_clock_mhz": int(sm_mhz),
            "mem_clock_mhz": nvml_call(pynvml.nvmlDeviceGetClockInfo, handle, mem),
            "sm_clock_max_mhz": _max_sm_clock(pynvml, handle, index, sm),
            "reasons_mask": None if mask is None else int(mask),
            "reasons": None if mask is None else decode_clock_reasons(pynvml, int(mask)),
            "power_w": None if power_mw is None else power_mw / 1000,
            "temperature_c": temp,
        }
    except Exception:  # noqa: BLE001 - a timing block must never fail for want of a clock reading
        return None


def read_gpu_memory(index: int = 0, *, processes: bool = False) -> dict[str, Any] | None:
    """Device memory of CUDA device `index` as NVML sees it (pynvml, vLLM's vendored copy, or
    nvidia-smi), with the processes holding it if asked; None on a CPU box."""
    nvml = nvml_module()
    if nvml is not None:
        try:
            nvml.nvmlInit()
            try:
                handle = nvml_handle(nvml, index)
                if handle is not None:
                    info = nvml.nvmlDeviceGetMemoryInfo(handle)
                    out: dict[str, Any] = {"source": "nvml", "total_bytes": int(info.total),
                                           "used_bytes": int(info.used), "free_bytes": int(info.free),
                                           "time": time.time()}
                    if processes:
                        out["processes"] = [{"pid": int(p.pid), "used_bytes": None if p.usedGpuMemory is None
                                             else int(p.usedGpuMemory)}
                                            for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)]
                    return out
            finally:
                nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001, S110 - any NVML failure falls back to nvidia-smi
            pass
    values = smi_query(("memory.total", "memory.used", "memory.free"), index)
    try:
        total, used, free = (int(float(v)) * MiB for v in values or ())
    except ValueError:
        return None
    return {"source": "nvidia-smi (MiB)", "total_bytes": total, "used_bytes": used, "free_bytes": free,
            "time": time.time()}


# ------------------------------------------------------------------ CUDA driver attributes, in a subprocess
# NVML has no SM count, no L2 size and no CUDA-visible memory total; the CUDA driver has all three
# as device attributes (cuDeviceGetAttribute, cuDeviceTotalMem: no context is created). They are
# read in a *subprocess* so that this process never calls cuInit: vLLM forks its engine workers,
# and a CUDA-initialised parent breaks them. cuda-python (`cuda.bindings`, the `gpu` extra) is the
# binding; without it the facts are simply absent and the caller says so.
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


# ------------------------------------------------------------------ torch (only if already initialised)
def torch_cuda_initialised() -> bool:
    torch = sys.modules.get("torch")  # never import torch just to ask
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001
        return False


def torch_device_info(index: int) -> dict[str, Any] | None:
    """What torch's CUDA runtime says about device `index` (this creates a CUDA context)."""
    import torch  # lazy: only when asked or already initialised

    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        return None
    props = torch.cuda.get_device_properties(index)
    free, total = torch.cuda.mem_get_info(index)
    l2 = getattr(props, "L2_cache_size", None)
    return {
        "name": props.name, "cuda_memory_total_bytes": int(total), "memory_free_bytes": int(free),
        "sm_count": int(props.multi_processor_count), "l2_bytes": int(l2) if l2 else None,
        "compute_capability": (int(props.major), int(props.minor)),
        "torch_cuda_version": getattr(torch.version, "cuda", None),
    }


# ------------------------------------------------------------------ nvidia-smi
def smi_id(cuda_index: int = 0, visible: str | None = None) -> str:
    """The nvidia-smi/NVML id of CUDA device `cuda_index`. nvidia-smi and NVML ignore
    CUDA_VISIBLE_DEVICES, so with CUDA_VISIBLE_DEVICES=1 CUDA's device 0 is nvidia-smi's 1: read
    the variable (never CUDA itself: vLLM's parent process must stay CUDA-free before it forks).
    Entries may be indices or GPU UUIDs; both are valid `--id` values."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    entries = [e.strip() for e in (visible or "").split(",") if e.strip()]
    if not entries:
        return str(cuda_index)
    if cuda_index >= len(entries):
        raise ValueError(f"CUDA device {cuda_index} is not visible (CUDA_VISIBLE_DEVICES={visible!r})")
    return entries[cuda_index]


def parse_nvidia_smi_csv(fields: Sequence[str], line: str) -> dict[str, Any]:
    """One `--format=csv,noheader,nounits` line -> {field: number or string}."""
    values = [v.strip() for v in line.split(",")]
    if len(values) != len(fields):
        raise ValueError(f"nvidia-smi returned {len(values)} values for {len(fields)} fields: {line!r}")
    out: dict[str, Any] = {}
    for key, raw in zip(fields, values, strict=True):
        try:
            out[key] = float(raw) if key not in _SMI_TEXT_FIELDS else raw
        except ValueError:  # "[N/A]", "[Not Supported]"
            out[key] = raw
    return out


def _smi_line(fields: Sequence[str], index: int, timeout_s: float) -> str:
    """The first csv line nvidia-smi prints for `fields` of CUDA device `index` (raises on failure)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        raise FileNotFoundError("nvidia-smi")
    cmd = [exe, f"--id={smi_id(index)}", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=True).stdout.strip().splitlines()[0]


def smi_query(fields: Sequence[str], index: int = 0) -> list[str] | None:
    """nvidia-smi's raw values of `fields` for CUDA device `index`; None when it cannot answer."""
    try:
        values = [v.strip() for v in _smi_line(fields, index, timeout_s=30).split(",")]
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None
    return values if len(values) == len(fields) else None


def nvidia_smi_snapshot(index: int = 0) -> dict[str, Any] | None:
    """Clocks, power and memory of CUDA device `index` as nvidia-smi reports them (its own id
    from smi_id); None without nvidia-smi, {"error": ...} when it fails."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        return parse_nvidia_smi_csv(SMI_FIELDS, _smi_line(SMI_FIELDS, index, timeout_s=20))
    except (subprocess.SubprocessError, OSError, ValueError, IndexError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def gpu_identity(index: int = 0) -> dict[str, str] | None:
    """Name and driver of the GPU, without creating a CUDA context."""
    values = smi_query(("name", "driver_version"), index)
    return None if values is None else {"name": values[0], "driver": values[1]}
