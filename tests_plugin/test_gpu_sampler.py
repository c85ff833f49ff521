"""The load runs' GPU/host sampler (measure/gpu_sampler.py), driven on CPU by a fake NVML and a fake /proc/stat."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_anatomy.measure.gpu_sampler import COLUMNS, GpuSampler, summarize

POWER_CAP = 0x4  # NVML's clocksEventReasonSwPowerCap bit


class FakeNvml:
    """Answers the sampler's queries from scripted sequences; clocks dip to 1,500 MHz under a power cap."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, sm: list[int], reasons: list[int], unsupported: tuple[str, ...] = ()) -> None:
        self._sm, self._reasons = itertools.cycle(sm), itertools.cycle(reasons)
        self.unsupported = unsupported
        self.inited = False

    def nvmlInit(self) -> None:
        self.inited = True

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return f"gpu{i}"

    def nvmlDeviceGetClockInfo(self, h: str, kind: int) -> int:
        return next(self._sm) if kind == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetPowerUsage(self, h: str) -> int:
        if "power" in self.unsupported:
            raise RuntimeError("NVMLError_NotSupported")
        return 612_345

    def nvmlDeviceGetUtilizationRates(self, h: str) -> Any:
        return SimpleNamespace(gpu=97, memory=40)

    def nvmlDeviceGetTemperature(self, h: str, sensor: int) -> int:
        return 55

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: str) -> int:
        return next(self._reasons)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: str) -> int:
        return 700_000


def proc_stat(tmp_path: Path, busy: int, idle: int) -> Path:
    p = tmp_path / "stat"
    p.write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n")
    return p


def test_rows_columns_and_summary_name_a_power_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    stat = proc_stat(tmp_path, busy=100, idle=900)
    ticks = iter(range(1000, 2000))
    sampler = GpuSampler(nvml=FakeNvml([1980, 1980, 1500], [0, 0, POWER_CAP]),
                         clock=lambda: float(next(ticks)), proc_stat=stat)
    sampler.__enter__()
    sampler._stop.set()  # no thread rows: drive the rows by hand, deterministically
    sampler._thread.join()  # type: ignore[union-attr]
    sampler._thread = None
    stat.write_text("cpu  400 0 0 1600 0 0 0 0 0 0\n")  # 300 busy of 1000 jiffies since the first row
    sampler.sample()
    sampler.sample()  # no jiffies elapsed: the busy share is unknown, not 0
    cols = sampler.columns(start=1000.0)
    assert set(COLUMNS) <= set(cols) and cols["error"] is None
    assert cols["t"] == [0.0, 1.0, 2.0]
    assert cols["sm_mhz"] == [1980, 1980, 1500] and cols["mem_mhz"] == [3201] * 3
    assert cols["power_w"] == [612.345] * 3 and cols["gpu_util_pct"] == [97] * 3
    assert cols["host_cpu_busy"] == [None, 0.3, None]
    summary = sampler.summary()
    assert (summary["sm_mhz_min"], summary["sm_mhz_max"], summary["sm_mhz_mean"]) == (1500, 1980, 1820.0)
    assert summary["event_reasons_any"] == POWER_CAP and summary["host_cpu_busy_max"] == 0.3
    assert summary["power_capped_share"] == 0.3333 and summary["power_limit_w"] == 700.0
    assert summarize(cols) == summary, "a kept raw file's columns recompute the summary recorded beside the run"


def test_the_thread_samples_until_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with GpuSampler(interval_s=0.01, nvml=FakeNvml([1980], [0]), proc_stat=proc_stat(tmp_path, 1, 1)) as s:
        time.sleep(0.15)
    n = len(s.rows)
    assert n >= 5, "a row every 10 ms for 150 ms, plus the start and end rows"
    time.sleep(0.05)
    assert len(s.rows) == n, "no row after __exit__"
    t = s.columns(start=s.rows[0][0])["t"]
    assert t == sorted(t) and t[0] == 0.0


def test_an_unsupported_query_reads_none_and_no_nvml_is_an_error_not_a_raise(tmp_path: Path) -> None:
    s = GpuSampler(nvml=FakeNvml([1980], [0], unsupported=("power",)), proc_stat=tmp_path / "missing")
    s.__enter__()
    s.__exit__(None, None, None)
    cols = s.columns(start=0.0)
    assert cols["power_w"] and all(v is None for v in cols["power_w"])
    assert all(v is None for v in cols["host_cpu_busy"])

    class Broken:
        def nvmlInit(self) -> None:
            raise RuntimeError("NVML Shared Library Not Found")

    with GpuSampler(nvml=Broken()) as b:
        pass
    assert b.rows == [] and "NVML Shared Library Not Found" in (b.error or "")
    assert b.summary() == {"rows": 0, "error": b.error, "sm_mhz_min": None, "sm_mhz_max": None, "sm_mhz_mean": None,
                           "power_w_max": None, "power_limit_w": None, "event_reasons_any": None,
                           "power_capped_share": None, "host_cpu_busy_max": None}
