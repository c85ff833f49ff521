"""What the GPU and the host were doing during a load run: NVML and /proc/stat sampled in a thread.

Why: on 2026-12-02 07:14 one Poisson run's prompt steps ran 1.4x slower than in every other run
(measure/prompt_pace.py flags it) while its decode-only steps kept their pace, and nothing was
sampled that could tell an SM-clock dip (power or thermal capping) from a host-side slowdown. A
load run now carries, beside its step timeline, one row per `interval_s` of:
- the SM and memory clocks NVML reports (MHz), power (W), temperature (C), GPU utilization (%);
- NVML's clock-event (throttle) reason bitmask, so a cap names itself (power, thermal, ...), and once per
  part the enforced power limit (what a software power cap holds the board to);
- the host's busy CPU share over the interval (/proc/stat, all cores), for contention.

NVML's SM clock is a sampled reading, not the clock every kernel runs at (the kernels suite's
clock probe showed it reads the boost clock under bf16 MMA load that Nsight Compute measured lower),
so these rows can show a dip or a cap, never prove its absence inside a single kernel.

Cost: ~8 NVML queries per row (~tens of microseconds each, ctypes calls that release the GIL) every
100 ms, far below the driver's own asyncio work. Any failure is recorded as an error string and the
run goes on: an instrument never stops a measurement.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

from pytest_anatomy.gpu_query import nvml_call, nvml_handle, nvml_module

INTERVAL_S = 0.1
COLUMNS = ("t", "sm_mhz", "mem_mhz", "power_w", "temp_c", "gpu_util_pct", "event_reasons", "host_cpu_busy")


def _cpu_jiffies(proc_stat: Path) -> tuple[int, int] | None:
    """(busy, total) jiffies of all cores from /proc/stat's first line; None where it is unreadable."""
    try:
        fields = [int(x) for x in proc_stat.read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


class GpuSampler:
    """Context manager: samples from __enter__ to __exit__; `columns(start)` gives the rows.

    `nvml` and `clock` are injectable so a CPU test drives it with a fake NVML and a fake clock."""

    def __init__(self, index: int = 0, interval_s: float = INTERVAL_S, nvml: Any = None,
                 clock: Callable[[], float] = time.monotonic, proc_stat: Path = Path("/proc/stat")) -> None:
        self.index, self.interval_s, self.clock, self.proc_stat = index, interval_s, clock, proc_stat
        self._nvml = nvml
        self._handle: Any = None
        self.error: str | None = None
        self.power_limit_w: float | None = None  # the enforced board power limit, read once: what a power cap caps at
        self.rows: list[tuple[Any, ...]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_cpu: tuple[int, int] | None = None

    def __enter__(self) -> "GpuSampler":
        try:
            nvml = self._nvml if self._nvml is not None else nvml_module()
            if nvml is None:
                raise RuntimeError("no NVML module (pip install nvidia-ml-py)")
            nvml.nvmlInit()
            self._handle = nvml_handle(nvml, self.index)
            if self._handle is None:
                raise RuntimeError(f"no NVML handle for CUDA device {self.index}")
            self._nvml = nvml
            limit_mw = nvml_call(getattr(nvml, "nvmlDeviceGetEnforcedPowerLimit", lambda h: None), self._handle)
            self.power_limit_w = None if limit_mw is None else round(limit_mw / 1000.0, 3)
        except Exception as exc:  # noqa: BLE001 - an instrument never stops a measurement
            self.error = f"{type(exc).__name__}: {exc}"
            return self
        self._last_cpu = _cpu_jiffies(self.proc_stat)
        self.sample()  # a row at the start, so even a run shorter than one interval has one
        self._thread = threading.Thread(target=self._loop, name="gpu-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5 * self.interval_s + 1.0)
            self.sample()  # and one at the end

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def _reasons(self, handle: Any) -> Any:
        nvml = self._nvml
        for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            fn = getattr(nvml, name, None)
            if fn is not None:
                return nvml_call(fn, handle)
        return None

    def sample(self) -> None:
        """One row; a query NVML does not support reads None (nvml_call)."""
        try:
            nvml, h = self._nvml, self._handle
            sm, mem = getattr(nvml, "NVML_CLOCK_SM", 1), getattr(nvml, "NVML_CLOCK_MEM", 2)
            power_mw = nvml_call(nvml.nvmlDeviceGetPowerUsage, h)
            util = nvml_call(nvml.nvmlDeviceGetUtilizationRates, h)
            temp = nvml_call(nvml.nvmlDeviceGetTemperature, h, getattr(nvml, "NVML_TEMPERATURE_GPU", 0))
            cpu = _cpu_jiffies(self.proc_stat)
            busy = None
            if cpu is not None and self._last_cpu is not None and cpu[1] > self._last_cpu[1]:
                busy = round((cpu[0] - self._last_cpu[0]) / (cpu[1] - self._last_cpu[1]), 4)
            self._last_cpu = cpu
            self.rows.append((
                self.clock(), nvml_call(nvml.nvmlDeviceGetClockInfo, h, sm),
                nvml_call(nvml.nvmlDeviceGetClockInfo, h, mem),
                None if power_mw is None else round(power_mw / 1000.0, 3), temp,
                None if util is None else getattr(util, "gpu", None), self._reasons(h), busy))
        except Exception as exc:  # noqa: BLE001
            self.error = self.error or f"{type(exc).__name__}: {exc}"

    def columns(self, start: float) -> dict[str, Any]:
        """The rows as columns, times relative to `start` (the run's own t0, the driver's clock)."""
        out: dict[str, Any] = {"interval_s": self.interval_s, "error": self.error, "power_limit_w": self.power_limit_w}
        for i, name in enumerate(COLUMNS):
            values = [row[i] for row in self.rows]
            out[name] = [round(v - start, 4) for v in values] if name == "t" else values
        return out

    def summary(self) -> dict[str, Any]:
        """Small enough to sit beside a run's result (summarize over this sampler's own columns)."""
        return summarize(self.columns(start=0.0))


# NVML's clock-event reason bits (nvml.h, clocksEventReason*): the cap that names itself when the SM clock drops.
SW_POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_THERMAL, HW_POWER_BRAKE = 0x4, 0x8, 0x20, 0x40, 0x80
THERMAL_OR_HARDWARE = HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE


def summarize(columns: dict[str, Any]) -> dict[str, Any]:
    """A part's conditions from its sampled columns (a recording's raw `gpu_samples` or a live sampler's): the SM
    clock's range and mean over the rows, peak power, the reasons seen (OR of the bitmasks), the share of rows under
    the software power cap, peak host CPU. The same function summarises live and recomputes a kept raw file's
    summary on CPU (tests_latency/test_latency_conditions.py), so the two cannot drift."""
    def present(name: str) -> list[Any]:
        return [v for v in columns.get(name) or [] if v is not None]

    sm, cpu, power, reasons_seen = present("sm_mhz"), present("host_cpu_busy"), present("power_w"), present("event_reasons")
    rows = len(columns.get("t") or [])
    reasons = 0
    for r in reasons_seen:
        reasons |= int(r)
    return {"rows": rows, "error": columns.get("error"),
            "sm_mhz_min": min(sm) if sm else None, "sm_mhz_max": max(sm) if sm else None,
            "sm_mhz_mean": round(sum(sm) / len(sm), 1) if sm else None,
            "power_w_max": max(power) if power else None, "power_limit_w": columns.get("power_limit_w"),
            "event_reasons_any": reasons if rows else None,
            "power_capped_share": round(sum(1 for r in reasons_seen if int(r) & SW_POWER_CAP) / len(reasons_seen), 4)
            if reasons_seen else None,
            "host_cpu_busy_max": max(cpu) if cpu else None}
