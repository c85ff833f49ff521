"""The SM clock a timing block actually ran at, read on the GPU.

NVML's SM clock is not it. On 2026-12-02 NVML read 1,980 MHz before, during and after every bf16
tensor-core block (kernel_runner.clock_summary), while Nsight Compute measured the same kernels at
1,758-1,777 MHz with the same durations (s12 at 4096^3: 374.6 us under ncu, 370-378 us in the timing
runs): the clock the kernels run at under MMA load is lower than the one NVML reports. A clock-bound
rung's time follows that clock, so without it the kernel findings carry the whole measured clock range
as band width (tests_kernels/kernel_x6_s11_s12_findings.py, warp64_band_at_its_clock).

The probe: one 32-thread block per SM whose thread 0 spins for SPIN_CYCLES of its SM's clock
(%clock64) and reads the global nanosecond timer (%globaltimer) at both ends; cycles / ns is that SM's
clock. It is enqueued on the timed stream right behind a block's last run, so it starts the moment the
last kernel ends, before the GPU idles and the clock can move (clock changes take milliseconds; the
probe takes ~0.1-0.2 ms). It reports the median over SMs, and the spread.

Nothing here may break a timing: any failure (no cuda.core, a compile error, a launch error) disables
the probe for the process and is reported as `error` in its reading.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from pytest_anatomy.stats import median

# ~0.1 ms at 2 GHz, ~0.2 ms at 1 GHz: long enough that %globaltimer's granularity (documented only as
# nanoseconds; 32 ns to 1 us in practice) costs <= 1% of the interval, short enough not to change the clock.
SPIN_CYCLES = 200_000

SOURCE = r"""
extern "C" __global__ void sm_clock_probe(unsigned long long spin_cycles, unsigned long long* out) {
    if (threadIdx.x != 0) return;
    unsigned long long t0, t1;
    long long c0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    long long c1 = c0;
    while ((unsigned long long)(c1 - c0) < spin_cycles) { c1 = clock64(); }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    out[2 * blockIdx.x] = (unsigned long long)(c1 - c0);
    out[2 * blockIdx.x + 1] = t1 - t0;
}
"""


@dataclass(frozen=True)
class ProbeReading:
    """One probe: the median SM clock over the SMs and its range, in MHz; `error` when none was taken."""

    sm_mhz: float | None
    sm_mhz_min: float | None = None
    sm_mhz_max: float | None = None
    blocks: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"sm_mhz": self.sm_mhz, "sm_mhz_min": self.sm_mhz_min, "sm_mhz_max": self.sm_mhz_max,
                "blocks": self.blocks, "error": self.error}


def reading_from_counts(counts: list[int]) -> ProbeReading:
    """(cycles, ns) pairs, flattened as the kernel writes them, to a reading. A block whose timer did not
    advance (ns == 0) is left out: no clock can be read from it."""
    mhz = [c / ns * 1e3 for c, ns in zip(counts[0::2], counts[1::2], strict=True) if ns > 0]
    if not mhz:
        return ProbeReading(None, blocks=0, error="no block's %globaltimer advanced")
    return ProbeReading(round(median(mhz), 1), round(min(mhz), 1), round(max(mhz), 1), len(mhz))


def torch_current_stream() -> Any:
    """torch's current CUDA stream as a cuda.core stream, so a launch queues behind torch's work."""
    import torch
    from cuda.core import LEGACY_DEFAULT_STREAM, Stream

    handle = int(torch.cuda.current_stream().cuda_stream)
    return LEGACY_DEFAULT_STREAM if handle == 0 else Stream.from_handle(handle)


def _why(exc: Exception) -> str:
    """An error's one-line, bounded form, as a reading's `error` carries it."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


class SmClockProbe:
    """Compiled once per process; `enqueue` behind the work to read, `read` after synchronizing."""

    def __init__(self) -> None:
        import numpy as np
        import torch
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions

        device = Device(torch.cuda.current_device())
        device.set_current()
        cc = device.compute_capability
        code = Program(SOURCE, "c++", ProgramOptions(arch=f"sm_{cc.major}{cc.minor}", name="sm_clock_probe.cu")
                       ).compile("cubin")
        self._kernel = code.get_kernel("sm_clock_probe")
        sms = int(torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count)
        self._config = LaunchConfig(grid=(sms, 1, 1), block=(32, 1, 1))
        self._out = torch.zeros(2 * sms, dtype=torch.int64, device="cuda")
        self._spin = np.uint64(SPIN_CYCLES)

    def enqueue(self) -> None:
        from cuda.core import launch

        self._out.zero_()
        launch(torch_current_stream(), self._config, self._kernel, self._spin, self._out.data_ptr())

    def read(self) -> ProbeReading:
        """After the stream synchronized: the reading of the last enqueue."""
        return reading_from_counts([int(v) for v in self._out.tolist()])


@functools.cache
def shared_probe() -> SmClockProbe | str:
    """The process's probe, or why there is none (the timing goes on without it)."""
    try:
        return SmClockProbe()
    except Exception as exc:  # noqa: BLE001 - a probe that cannot be built must not stop a measurement
        return _why(exc)


def enqueue_probe() -> SmClockProbe | str:
    """Enqueue the shared probe on the current stream; the probe, or the error that left it out."""
    probe = shared_probe()
    if isinstance(probe, str):
        return probe
    try:
        probe.enqueue()
    except Exception as exc:  # noqa: BLE001 - as above
        return _why(exc)
    return probe


def read_probe(enqueued: SmClockProbe | str) -> dict[str, Any]:
    """After synchronizing: the reading of `enqueued` (enqueue_probe's answer) as a recording field."""
    if isinstance(enqueued, str):
        return ProbeReading(None, error=enqueued).as_dict()
    try:
        return enqueued.read().as_dict()
    except Exception as exc:  # noqa: BLE001 - as above
        return ProbeReading(None, error=_why(exc)).as_dict()
