"""Clock state per timing block, on the CPU: NVML faked, the block's summary a pure function.

An H200 with unlocked clocks times a kernel on discrete levels 2-14% apart (boost, then the power
limit); gpu_query.clock_state reads the SM clock and the clocks-event reasons, and
kernel_runner.clock_summary decides whether a block ran at one clock.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from pytest_anatomy import gpu_query
from pytest_anatomy.measure import flashattn_runner, kernel_runner
from pytest_anatomy.measure.kernel_runner import clock_brief, clock_summary

IDLE, APP, POWER_CAP, HW_SLOW, SYNC, SW_THERMAL, HW_THERMAL, BRAKE = 0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80


class _NVMLError(Exception):
    pass


def _fake_nvml(*, sm: int = 1980, mask: int = 0, new_api: bool = True, fails: tuple[str, ...] = (),
               constants: bool = True) -> types.ModuleType:
    """A pynvml stand-in for one H200: `new_api` spells the reasons call ...ClocksEventReasons (12.535+)
    or ...ClocksThrottleReasons (older); `fails` names calls that raise; without `constants` the
    module has no reason constants (clock_state falls back to nvml.h's bits)."""
    mod = types.ModuleType("pynvml")
    mod.NVML_CLOCK_SM, mod.NVML_CLOCK_MEM, mod.NVML_TEMPERATURE_GPU = 1, 2, 0  # type: ignore[attr-defined]
    mod.init_calls = 0  # type: ignore[attr-defined]
    prefix = "nvmlClocksEventReason" if new_api else "nvmlClocksThrottleReason"
    if constants:
        for name, bit in (("GpuIdle", IDLE), ("ApplicationsClocksSetting", APP), ("SwPowerCap", POWER_CAP),
                          ("HwSlowdown", HW_SLOW), ("SyncBoost", SYNC), ("SwThermalSlowdown", SW_THERMAL),
                          ("HwThermalSlowdown", HW_THERMAL), ("HwPowerBrakeSlowdown", BRAKE)):
            setattr(mod, prefix + name, bit)

    def fn(name: str, body: Any) -> None:
        def wrapped(*args: Any) -> Any:
            if name in fails:
                raise _NVMLError(f"{name}: Not Supported")
            return body(*args)
        setattr(mod, name, wrapped)

    def init() -> None:
        mod.init_calls += 1  # type: ignore[attr-defined]

    fn("nvmlInit", init)
    fn("nvmlShutdown", lambda: None)
    fn("nvmlDeviceGetHandleByIndex", lambda i: f"handle{i}")
    fn("nvmlDeviceGetClockInfo", lambda h, c: {1: sm, 2: 3201}[c])
    fn("nvmlDeviceGetMaxClockInfo", lambda h, c: {1: 1980, 2: 3201}[c])
    fn("nvmlDeviceGetCurrentClocksEventReasons" if new_api else "nvmlDeviceGetCurrentClocksThrottleReasons",
       lambda h: mask)
    fn("nvmlDeviceGetPowerUsage", lambda h: 612_345)
    fn("nvmlDeviceGetTemperature", lambda h, sensor: 54)
    return mod


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Install a fake pynvml (a fresh handle cache around it); returns the installer."""
    monkeypatch.setattr(gpu_query, "_CLOCK_HANDLES", {})
    monkeypatch.setattr(gpu_query, "_MAX_SM_CLOCK", {})
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    def install(mod: types.ModuleType | None) -> types.ModuleType | None:
        monkeypatch.setattr(gpu_query, "nvml_module", lambda: mod)
        return mod
    return install


# --- gpu_query.clock_state ----------------------------------------------------------------------
@pytest.mark.parametrize("new_api", [True, False], ids=["ClocksEventReasons", "ClocksThrottleReasons"])
def test_clock_state_reads_clocks_power_temperature_and_names_the_reasons(nvml: Any, new_api: bool) -> None:
    nvml(_fake_nvml(sm=1755, mask=POWER_CAP | HW_THERMAL, new_api=new_api))
    state = gpu_query.clock_state(0)
    assert state is not None
    assert {k: state[k] for k in ("sm_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz", "reasons_mask",
                                  "power_w", "temperature_c")} == {
        "sm_clock_mhz": 1755, "mem_clock_mhz": 3201, "sm_clock_max_mhz": 1980, "reasons_mask": 0x44,
        "power_w": pytest.approx(612.345), "temperature_c": 54}
    assert state["reasons"] == ["sw_power_cap", "hw_thermal_slowdown"]


@pytest.mark.parametrize(("mask", "names"), [
    (0, []),
    (IDLE, ["gpu_idle"]),
    (APP | SYNC, ["applications_clocks_setting", "sync_boost"]),
    (HW_SLOW | SW_THERMAL | BRAKE, ["hw_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"]),
    (0x100 | 0x400 | 0x1000, ["display_clock_setting", "reliability", "bit_0x1000"]),  # an unknown bit is kept
])
def test_reasons_decode_with_or_without_the_constants(mask: int, names: list[str]) -> None:
    for mod in (_fake_nvml(), _fake_nvml(new_api=False), _fake_nvml(constants=False)):
        assert gpu_query.decode_clock_reasons(mod, mask) == names


def test_clock_state_is_none_without_nvml(nvml: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    nvml(None)
    assert gpu_query.clock_state() is None
    monkeypatch.undo()  # the real lookup, with `import pynvml` failing
    monkeypatch.setitem(sys.modules, "pynvml", None)  # type: ignore[arg-type]
    monkeypatch.setattr(gpu_query, "_CLOCK_HANDLES", {})
    assert gpu_query.clock_state() is None


@pytest.mark.parametrize("failing", ["nvmlInit", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetClockInfo"])
def test_clock_state_is_none_when_nvml_cannot_answer(nvml: Any, failing: str) -> None:
    nvml(_fake_nvml(fails=(failing,)))
    assert gpu_query.clock_state() is None


def test_clock_state_is_none_even_when_the_module_is_broken(nvml: Any) -> None:
    nvml(types.ModuleType("pynvml"))  # no nvmlInit at all: AttributeError inside, None outside
    assert gpu_query.clock_state() is None


def test_a_field_the_gpu_does_not_report_is_none_not_a_failure(nvml: Any) -> None:
    nvml(_fake_nvml(fails=("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetPowerUsage")))
    state = gpu_query.clock_state()
    assert state is not None and state["sm_clock_mhz"] == 1980
    assert state["reasons"] is None and state["reasons_mask"] is None and state["power_w"] is None


def test_nvml_is_initialised_once_and_never_shut_down(nvml: Any) -> None:
    mod = nvml(_fake_nvml())
    for _ in range(5):
        assert gpu_query.clock_state() is not None
    assert mod is not None and mod.init_calls == 1


def test_the_max_sm_clock_is_read_once(nvml: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = nvml(_fake_nvml())
    asked: list[int] = []
    assert mod is not None
    monkeypatch.setattr(mod, "nvmlDeviceGetMaxClockInfo", lambda h, c: asked.append(c) or 1980)
    assert [gpu_query.clock_state()["sm_clock_max_mhz"] for _ in range(4)] == [1980] * 4  # type: ignore[index]
    assert asked == [1]


def test_clock_state_honours_cuda_visible_devices(nvml: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = nvml(_fake_nvml())
    seen: list[int] = []
    assert mod is not None
    monkeypatch.setattr(mod, "nvmlDeviceGetHandleByIndex", lambda i: seen.append(i) or f"handle{i}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert gpu_query.clock_state(0) is not None and seen == [3]


# --- kernel_runner.clock_summary: is a block at one clock? --------------------------------------
def _reading(sm: int, *reasons: str) -> dict[str, Any]:
    return {"sm_clock_mhz": sm, "reasons": list(reasons), "sm_clock_max_mhz": 1980}


def test_a_steady_block_passes() -> None:
    # 1980 -> 1965 is 0.76%: within 1%; idle is read in the instant before the block
    s = clock_summary(_reading(1980, "gpu_idle"), [_reading(1980), _reading(1965)], _reading(1980))
    assert s["clock_steady"] is True
    assert (s["sm_clock_mhz_min"], s["sm_clock_mhz_max"], s["clock_reasons"]) == (1965, 1980, ["gpu_idle"])
    assert s["clocks"]["before"]["sm_clock_mhz"] == 1980 and len(s["clocks"]["during"]) == 2


def test_a_ten_percent_drop_is_not_steady() -> None:
    s = clock_summary(_reading(1980), [], _reading(1782))
    assert s["clock_steady"] is False and (s["sm_clock_mhz_min"], s["sm_clock_mhz_max"]) == (1782, 1980)


def test_a_drop_and_recovery_inside_the_block_is_not_steady() -> None:
    assert clock_summary(_reading(1980), [_reading(1755)], _reading(1980))["clock_steady"] is False


@pytest.mark.parametrize("reason", ["sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                                    "hw_power_brake_slowdown", "applications_clocks_setting", "sync_boost"])
def test_a_throttle_reason_is_not_steady_even_at_one_clock(reason: str) -> None:
    s = clock_summary(_reading(1830), [_reading(1830, reason)], _reading(1830))
    assert s["clock_steady"] is False and s["clock_reasons"] == [reason]


def test_without_readings_steadiness_is_unknown() -> None:
    s = clock_summary(None, [], None)
    assert s["clock_steady"] is None and s["sm_clock_mhz_min"] is None and s["clock_reasons"] == []
    assert clock_summary(_reading(1980), [], None)["clock_steady"] is None  # no after: unknown
    assert clock_brief(s) is None
    assert clock_brief({"ms_median": 1.0}) is None  # a block timed before clocks were recorded


def test_the_brief_says_before_after_range_reasons_and_steadiness() -> None:
    block = clock_summary(_reading(1980), [_reading(1830, "sw_power_cap")], _reading(1755, "sw_power_cap"))
    assert clock_brief(block) == {"sm_mhz_before": 1980, "sm_mhz_after": 1755, "sm_mhz_min": 1755,
                                  "sm_mhz_max": 1980, "reasons": ["sw_power_cap"], "steady": False,
                                  "probe_sm_mhz": None}
    probed = {**block, "sm_clock_probe": {"sm_mhz": 1758.2}}
    assert clock_brief(probed)["probe_sm_mhz"] == 1758.2  # type: ignore[index]
    assert clock_brief({"ms_median": 1.0, "sm_clock_probe": {"sm_mhz": 1758.2}}) == {  # NVML absent, probe present
        "sm_mhz_before": None, "sm_mhz_after": None, "sm_mhz_min": None, "sm_mhz_max": None, "reasons": None,
        "steady": None, "probe_sm_mhz": 1758.2}


# --- reading during the block ---------------------------------------------------------------------
class _Event:
    """A CUDA end event that completes after `pending` queries."""

    def __init__(self, pending: int) -> None:
        self.pending = pending

    def query(self) -> bool:
        self.pending -= 1
        return self.pending < 0


def test_readings_during_the_block_wait_for_even_fractions_of_it() -> None:
    ends = [_Event(i) for i in range(30)]
    readings = kernel_runner._clocks_while_running(ends, lambda: _reading(1980))  # type: ignore[arg-type]
    assert [r["after_run"] for r in readings] == [7, 15, 22]
    assert all(ends[k - 1].pending < 0 for k in (7, 15, 22))  # each waited for its run to end
    assert [r["block_running"] for r in readings] == [True, True, True]


def test_few_runs_take_fewer_readings_and_a_missing_reading_is_skipped() -> None:
    three = kernel_runner._clocks_while_running([_Event(9) for _ in range(3)], lambda: _reading(1980))
    assert [r["after_run"] for r in three] == [1, 2] and all(r["block_running"] for r in three)
    assert kernel_runner._clocks_while_running([_Event(i) for i in range(30)], lambda: None) == []


def test_no_reading_once_the_block_is_over() -> None:
    """A block the GPU finished before the CPU's first wait (launches slower than the GPU) gets no reading
    during it: each would repeat `after`. One that ends between two readings keeps those taken before."""
    taken: list[int] = []
    assert kernel_runner._clocks_while_running([_Event(0) for _ in range(30)],
                                               lambda: taken.append(1) or _reading(1980)) == [] and taken == []
    ends = [_Event(0) for _ in range(29)] + [_Event(1)]  # the last run ends after the first reading
    readings = kernel_runner._clocks_while_running(ends, lambda: _reading(1980))  # type: ignore[arg-type]
    assert [r["after_run"] for r in readings] == [7] and readings[0]["block_running"] is False


# --- flash attention carries the same record -----------------------------------------------------
def test_flashattn_data_carries_each_blocks_clocks_by_measurement_name() -> None:
    steady = clock_summary(_reading(1980), [], _reading(1980))
    dropped = clock_summary(_reading(1980), [], _reading(1755, "sw_power_cap"))
    clocks = flashattn_runner._clocks(steady, dropped, steady, {"ms_median": 1.0})
    assert set(clocks) == {"time", "time_repeat", "sdpa_default_time", "sdpa_flash_time"}
    assert clocks["time"]["steady"] is True and clocks["time_repeat"]["sm_mhz_after"] == 1755
    assert clocks["sdpa_flash_time"] is None


def test_the_timing_method_says_clocks_are_read() -> None:
    assert "NVML before and after each block" in kernel_runner.TIMING_METHOD
