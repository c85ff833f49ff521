"""Hardware catalog facts, lookup errors, and live detection against a fake NVML."""

from __future__ import annotations

import dataclasses

import json
import subprocess
import sys
import types
from typing import Any

import pytest

from pytest_anatomy.specs.hardware import (
    HARDWARE,
    PEAK_DTYPES,
    DetectedGPU,
    HardwareSpec,
    MissingHardwareFactError,
    UnknownHardwareError,
    detect,
    get_hardware,
    match_catalog,
    spec_for_detected,
    spec_from_nvml,
)
from pytest_anatomy.units import GB, GiB, MiB

# --- catalog -----------------------------------------------------------------------------


def test_catalog_names_are_the_documented_ones() -> None:
    assert list(HARDWARE) == ["rtx4090", "h100-sxm", "h200", "a100-80gb", "l40s",
                              "h100-pcie", "a100-40gb", "b200", "b300", "gb200"]


@pytest.mark.parametrize("name", list(HARDWARE))
def test_every_number_has_a_source(name: str) -> None:
    spec = HARDWARE[name]
    numeric = [f for f in ("memory_bytes", "nvml_memory_bytes", "cuda_visible_memory_bytes",
                           "memory_bandwidth", "sm_count", "l2_bytes", "boost_clock_hz",
                           "fp32_cores_per_sm", "memory_bus_bits", "memory_clock_hz")
               if getattr(spec, f) is not None]
    numeric += [f"peak_flops.{d}" for d in spec.peak_flops]
    assert all(spec.sources.get(f) for f in numeric), [f for f in numeric if not spec.sources.get(f)]
    assert set(spec.peak_flops) <= set(PEAK_DTYPES)


def test_unsourced_number_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"no source for \['sm_count'\]"):
        HardwareSpec(name="x", display_name="X", nvml_names=(), memory_bytes=None, memory_bandwidth=None,
                     peak_flops={}, sm_count=10, l2_bytes=None, boost_clock_hz=None,
                     fp32_cores_per_sm=None, sources={})


def test_rtx4090_matches_the_seed_constants() -> None:
    # seed/STUDY.md: 128 SM x 128 cores x 2 x 2.52 GHz = 82,575 GFLOP/s; 10,501 MHz x 2 x 384 / 8.
    gpu = HARDWARE["rtx4090"]
    assert gpu.fp32_from_cores == pytest.approx(82.575e12, rel=1e-4)
    assert gpu.bandwidth_from_clocks == pytest.approx(1008.096e9)
    assert gpu.memory_bandwidth == 1008e9
    assert gpu.peak("bf16") == pytest.approx(165.2e12)
    assert gpu.l2_bytes == 75_497_472  # the "75.5 MB" the seed's program printed
    assert gpu.nvml_memory_bytes == 24_564 * MiB
    assert gpu.ridge_point("fp32") == pytest.approx(82, abs=0.2)  # "ridge 82 FLOP/B"


def test_h200_matches_the_project_machine() -> None:
    gpu = get_hardware("h200")
    assert gpu.cuda_visible_memory_bytes == 150_109_880_320
    assert gpu.nvml_memory_bytes == 143_771 * MiB
    assert (gpu.sm_count, gpu.l2_bytes) == (132, 60 * MiB)
    assert gpu.peak("fp8") == pytest.approx(2 * gpu.peak("bf16"), rel=1e-3)
    assert gpu.memory_bandwidth == 4.8e12


@pytest.mark.parametrize("name", list(HARDWARE))
def test_derived_numbers_agree_with_datasheets(name: str) -> None:
    gpu = HARDWARE[name]
    # The cards added for third-party data (Blackwell) have no published SM count, clock or
    # NVML total to derive from; every card with those facts must agree with its datasheet.
    if name in ("rtx4090", "h100-sxm", "h200", "a100-80gb", "l40s"):
        assert None not in (gpu.fp32_from_cores, gpu.nvml_memory_bytes)
    if gpu.fp32_from_cores is not None:
        assert gpu.fp32_from_cores == pytest.approx(gpu.peak("fp32"), rel=5e-3)
    if gpu.bandwidth_from_clocks is not None and gpu.memory_bus_bits is not None:
        assert gpu.bandwidth_from_clocks == pytest.approx(gpu.memory_bandwidth, rel=1e-3)
    # Datasheet "GB" read as decimal is always below what the driver reports.
    assert gpu.memory_bytes is not None
    if gpu.nvml_memory_bytes is not None:
        assert gpu.memory_bytes < gpu.nvml_memory_bytes <= gpu.memory_bytes * GiB / GB


def test_missing_dtype_peak_names_gpu_and_fix() -> None:
    with pytest.raises(MissingHardwareFactError, match=r"a100-80gb.*peak_flops\['fp8'\].*--anatomy-hardware in pytest"):
        HARDWARE["a100-80gb"].peak("fp8")
    with pytest.raises(KeyError, match="did you mean 'bf16'"):
        HARDWARE["h200"].peak("bf61")


def test_specs_are_read_only_and_serialisable() -> None:
    gpu = HARDWARE["l40s"]
    with pytest.raises(AttributeError):
        gpu.sm_count = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        gpu.peak_flops["bf16"] = 1.0  # type: ignore[index]
    assert json.loads(json.dumps(gpu.to_dict()))["peak_flops"]["bf16"] == 362.05e12
    assert hash(gpu) == hash(HARDWARE["l40s"])


# --- lookup ------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["h200", "H200", " h200 ", "NVIDIA H200", "nvidia h200"])
def test_lookup_by_key_or_nvml_name(query: str) -> None:
    assert get_hardware(query).name == "h200"


def test_unknown_hardware_suggests_and_says_how_to_fix() -> None:
    with pytest.raises(UnknownHardwareError) as info:
        get_hardware("h20")
    message = str(info.value)
    assert isinstance(info.value, KeyError)
    assert "Did you mean 'h200'" in message
    assert "name one of rtx4090, h100-sxm, h200, a100-80gb, l40s, h100-pcie, a100-40gb, b200, b300, gb200" in message
    # both spellings of the option: the CLI's and pytest's (the message is raised by either)
    assert "(--hardware in the CLI, --anatomy-hardware in pytest)" in message


def test_catalog_match_is_exact() -> None:
    assert match_catalog("NVIDIA GeForce RTX 4090") == "rtx4090"
    assert match_catalog("NVIDIA H200 NVL") is None  # other power/clocks: never fuzzy-matched
    assert match_catalog("NVIDIA H100 80GB HBM3") == "h100-sxm"


# --- detection ---------------------------------------------------------------------------


class _NVMLError(Exception):
    pass


def _fake_nvml(devices: list[dict[str, Any]], *, init_fails: bool = False,
               unsupported: tuple[str, ...] = ()) -> types.ModuleType:
    """A pynvml stand-in: handles are device indices; `unsupported` functions raise."""
    mod = types.ModuleType("pynvml")
    mod.NVMLError = _NVMLError  # type: ignore[attr-defined]
    mod.NVML_CLOCK_SM, mod.NVML_CLOCK_MEM = 1, 2  # type: ignore[attr-defined]
    mod.calls = []  # type: ignore[attr-defined]

    def fn(name: str, body: Any) -> None:
        def wrapped(*args: Any) -> Any:
            mod.calls.append(name)  # type: ignore[attr-defined]
            if name in unsupported:
                raise _NVMLError(f"{name}: Not Supported")
            return body(*args)
        setattr(mod, name, wrapped)

    def init() -> None:
        if init_fails:
            raise _NVMLError("Driver Not Loaded")

    def handle(i: int) -> int:
        if not 0 <= i < len(devices):
            raise _NVMLError("Invalid Argument")
        return i

    def clock(key: str) -> Any:
        return lambda h, c: devices[h][key][c]

    fn("nvmlInit", init)
    fn("nvmlShutdown", lambda: None)
    fn("nvmlDeviceGetCount", lambda: len(devices))
    fn("nvmlDeviceGetHandleByIndex", handle)
    fn("nvmlDeviceGetName", lambda h: devices[h]["name"])
    fn("nvmlDeviceGetUUID", lambda h: devices[h]["uuid"])
    fn("nvmlDeviceGetMemoryInfo", lambda h: types.SimpleNamespace(
        total=devices[h]["total"], free=devices[h]["free"], used=devices[h]["total"] - devices[h]["free"]))
    fn("nvmlDeviceGetClockInfo", clock("clocks"))
    fn("nvmlDeviceGetMaxClockInfo", clock("max_clocks"))
    fn("nvmlDeviceGetEnforcedPowerLimit", lambda h: devices[h]["power_mw"])
    fn("nvmlDeviceGetPowerManagementLimit", lambda h: devices[h]["power_mw"])
    fn("nvmlSystemGetDriverVersion", lambda: b"550.54.15")  # old pynvml returned bytes
    fn("nvmlSystemGetCudaDriverVersion", lambda: 12040)
    fn("nvmlDeviceGetMigMode", lambda h: [0, 0])
    fn("nvmlDeviceGetCudaComputeCapability", lambda h: (9, 0))
    fn("nvmlDeviceGetMemoryBusWidth", lambda h: devices[h]["bus"])
    fn("nvmlDeviceGetNumGpuCores", lambda h: devices[h]["cores"])
    return mod


def _device(name: str = "NVIDIA H200", uuid: str = "GPU-1111-aaaa", bus: int = 6144) -> dict[str, Any]:
    return {"name": name, "uuid": uuid, "total": 143_771 * MiB, "free": 143_000 * MiB,
            "clocks": {1: 345, 2: 3199}, "max_clocks": {1: 1980, 2: 3201}, "power_mw": 700_000,
            "bus": bus, "cores": 16_896}


@pytest.fixture
def no_gpu_stack(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Make `import pynvml` / `import torch` fail and clear CUDA_VISIBLE_DEVICES."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "torch", None)  # type: ignore[arg-type]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return monkeypatch


def test_detect_on_this_machine_never_raises() -> None:
    # None on a CPU box (the CI case); a DetectedGPU on a GPU box. Never an exception.
    gpu = detect()
    assert gpu is None or isinstance(gpu, DetectedGPU)


def test_detect_returns_none_without_nvml_or_torch(no_gpu_stack: pytest.MonkeyPatch) -> None:
    assert detect() is None
    assert detect(use_torch=True) is None  # torch missing too: still no exception


def test_detect_returns_none_when_driver_is_missing(no_gpu_stack: pytest.MonkeyPatch) -> None:
    no_gpu_stack.setitem(sys.modules, "pynvml", _fake_nvml([_device()], init_fails=True))
    assert detect() is None
    no_gpu_stack.setitem(sys.modules, "pynvml", _fake_nvml([]))
    assert detect() is None


def test_detect_reads_nvml(no_gpu_stack: pytest.MonkeyPatch) -> None:
    nvml = _fake_nvml([_device()])
    no_gpu_stack.setitem(sys.modules, "pynvml", nvml)
    gpu = detect()
    assert gpu is not None
    assert (gpu.name, gpu.backend, gpu.catalog_name) == ("NVIDIA H200", "nvml", "h200")
    assert gpu.memory_total_bytes == 143_771 * MiB and gpu.memory_free_bytes == 143_000 * MiB
    assert (gpu.sm_clock_max_mhz, gpu.mem_clock_max_mhz, gpu.mem_clock_mhz) == (1980, 3201, 3199)
    assert (gpu.power_limit_w, gpu.driver_version, gpu.cuda_driver_version) == (700.0, "550.54.15", "12.4")
    assert (gpu.mig_enabled, gpu.compute_capability, gpu.cuda_cores) == (False, (9, 0), 16_896)
    assert gpu.sm_count is None and gpu.cuda_memory_total_bytes is None  # NVML has neither
    assert nvml.calls[-1] == "nvmlShutdown"
    assert json.loads(json.dumps(gpu.to_dict()))["compute_capability"] == [9, 0]
    assert spec_for_detected(gpu) is HARDWARE["h200"]


def test_detect_tolerates_unsupported_queries(no_gpu_stack: pytest.MonkeyPatch) -> None:
    unsupported = ("nvmlDeviceGetMigMode", "nvmlDeviceGetMemoryBusWidth", "nvmlDeviceGetEnforcedPowerLimit",
                   "nvmlDeviceGetMaxClockInfo", "nvmlSystemGetCudaDriverVersion")
    no_gpu_stack.setitem(sys.modules, "pynvml", _fake_nvml([_device()], unsupported=unsupported))
    gpu = detect()
    assert gpu is not None
    assert (gpu.mig_enabled, gpu.memory_bus_bits, gpu.sm_clock_max_mhz, gpu.cuda_driver_version) == (
        None, None, None, None)
    assert gpu.power_limit_w == 700.0  # fell back to nvmlDeviceGetPowerManagementLimit


@pytest.mark.parametrize(("visible", "expected"), [
    ("1", "NVIDIA L40S"), ("1,0", "NVIDIA L40S"), ("GPU-2222", "NVIDIA L40S"), ("GPU-1111-aaaa", "NVIDIA H200"),
    ("", None), ("-1", None), ("7", None),
])
def test_detect_honours_cuda_visible_devices(no_gpu_stack: pytest.MonkeyPatch, visible: str,
                                             expected: str | None) -> None:
    devices = [_device(), _device("NVIDIA L40S", "GPU-2222-bbbb", 384)]
    no_gpu_stack.setitem(sys.modules, "pynvml", _fake_nvml(devices))
    no_gpu_stack.setenv("CUDA_VISIBLE_DEVICES", visible)
    gpu = detect()
    assert (gpu.name if gpu else None) == expected


def test_unknown_gpu_without_enough_driver_facts_gets_a_spec_with_clear_gaps(no_gpu_stack: pytest.MonkeyPatch) -> None:
    name = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    dev = _device(name, bus=512) | {"max_clocks": {1: 2617, 2: 14001}}
    # No compute capability: the per-architecture table cannot be chosen, so no peaks.
    no_gpu_stack.setitem(sys.modules, "pynvml", _fake_nvml([dev], unsupported=("nvmlDeviceGetCudaComputeCapability",)))
    gpu = detect()
    assert gpu is not None and gpu.catalog_name is None
    with pytest.raises(ValueError, match="compute capability.*cuda-python"):
        spec_from_nvml(gpu)
    spec = spec_for_detected(gpu)
    assert not spec.from_catalog and spec.name == "detected:nvidia-rtx-pro-6000-blackwell-server-edition"
    assert spec.memory_bandwidth == pytest.approx(14_001e6 * 2 * 512 / 8)  # 1.79 TB/s, derived
    assert "derived" in spec.sources["memory_bandwidth"]
    assert spec.nvml_memory_bytes == gpu.memory_total_bytes
    assert "peak_flops.bf16" in spec.missing and "memory_bytes" in spec.missing
    with pytest.raises(MissingHardwareFactError, match=r"detected GPU, not in catalog.*--anatomy-hardware in pytest"):
        spec.ridge_point("bf16")


def test_unknown_gpu_gets_a_complete_spec_from_the_driver(no_gpu_stack: pytest.MonkeyPatch) -> None:
    # An H200 read as if the catalog did not exist: every number from NVML + the CUDA driver.
    no_gpu_stack.setitem(sys.modules, "pynvml", _fake_nvml([_device()]))
    gpu = detect().with_cuda_facts({"sm_count": 132, "l2_bytes": 60 * MiB, "cuda_memory_total_bytes": 150_109_880_320,
                                    "compute_capability": [9, 0]})
    spec = spec_from_nvml(gpu)
    assert not spec.from_catalog and spec.name == "nvidia-h200" and spec.sm_count == 132
    assert spec.peak("bf16") == pytest.approx(132 * 1.98e9 * 4096)  # 1,070 TFLOP/s: the datasheet's 989 is at 1.83 GHz
    assert spec.peak("fp32") == pytest.approx(HARDWARE["h200"].peak("fp32"), rel=0.01)  # 67 TFLOP/s either way
    assert spec.memory_bandwidth == pytest.approx(3201e6 * 2 * 6144 / 8)  # 4.92 TB/s (datasheet: 4.8)
    assert spec.cuda_visible_memory_bytes == HARDWARE["h200"].cuda_visible_memory_bytes  # capacity stays exact
    assert all("datasheet" not in spec.sources[k] or "whitepaper" in spec.sources[k] for k in spec.sources)
    geforce = dataclasses.replace(gpu, name="NVIDIA GeForce RTX 4090", compute_capability=(8, 9), sm_count=128,
                                  sm_clock_max_mhz=2520, mem_clock_max_mhz=10501, memory_bus_bits=384)
    g = spec_from_nvml(geforce)
    assert g.peak("bf16") == pytest.approx(HARDWARE["rtx4090"].peak("bf16"), rel=0.001)  # half rate on GeForce
    assert g.memory_bandwidth == pytest.approx(HARDWARE["rtx4090"].memory_bandwidth, rel=0.001)


def test_mig_mode_is_flagged_on_catalog_spec(no_gpu_stack: pytest.MonkeyPatch) -> None:
    nvml = _fake_nvml([_device()])
    nvml.nvmlDeviceGetMigMode = lambda h: [1, 1]  # type: ignore[attr-defined]
    no_gpu_stack.setitem(sys.modules, "pynvml", nvml)
    gpu = detect()
    assert gpu is not None and gpu.mig_enabled
    spec = spec_for_detected(gpu)
    assert spec.name == "h200" and any("MIG" in n for n in spec.notes)
    assert HARDWARE["h200"].notes == ()  # the catalog entry itself is untouched


def _fake_torch(*, initialised: bool) -> types.ModuleType:
    torch = types.ModuleType("torch")

    def props(i: int) -> types.SimpleNamespace:
        if not initialised:
            raise AssertionError("detect() must not touch CUDA unless asked")
        return types.SimpleNamespace(name="NVIDIA H200", multi_processor_count=132, L2_cache_size=60 * MiB,
                                     major=9, minor=0, total_memory=150_109_880_320)

    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_initialized=lambda: initialised, is_available=lambda: True, device_count=lambda: 1,
        get_device_properties=props, mem_get_info=lambda i: (149 * GiB, 150_109_880_320))
    torch.version = types.SimpleNamespace(cuda="12.8")  # type: ignore[attr-defined]
    return torch


def test_detect_does_not_initialise_cuda_unless_asked(no_gpu_stack: pytest.MonkeyPatch) -> None:
    no_gpu_stack.setitem(sys.modules, "pynvml", _fake_nvml([_device()]))
    no_gpu_stack.setitem(sys.modules, "torch", _fake_torch(initialised=False))
    gpu = detect()
    assert gpu is not None and gpu.backend == "nvml" and gpu.sm_count is None


def test_detect_uses_torch_when_cuda_is_already_up(no_gpu_stack: pytest.MonkeyPatch) -> None:
    no_gpu_stack.setitem(sys.modules, "pynvml", _fake_nvml([_device()]))
    no_gpu_stack.setitem(sys.modules, "torch", _fake_torch(initialised=True))
    gpu = detect()
    assert gpu is not None and gpu.backend == "nvml+torch"
    assert (gpu.sm_count, gpu.l2_bytes, gpu.cuda_memory_total_bytes) == (132, 60 * MiB, 150_109_880_320)
    assert gpu.memory_total_bytes == 143_771 * MiB  # NVML's total wins; CUDA's is kept separately
    assert gpu.torch_cuda_version == "12.8"


def test_detect_torch_only(no_gpu_stack: pytest.MonkeyPatch) -> None:
    no_gpu_stack.setitem(sys.modules, "torch", _fake_torch(initialised=True))
    gpu = detect(use_torch=True)
    assert isinstance(gpu, DetectedGPU) and gpu.backend == "torch"
    assert gpu.memory_total_bytes == 150_109_880_320 and gpu.power_limit_w is None


def test_importing_specs_pulls_in_no_gpu_stack() -> None:
    code = ("import sys, pytest_anatomy.specs.hardware, pytest_anatomy.specs.formats; "
            "bad = [m for m in ('torch', 'pynvml', 'vllm', 'triton') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_nvml_spec_predicts_the_same_ledger_as_the_catalog(no_gpu_stack: pytest.MonkeyPatch) -> None:
    """Found live: a driver-derived H200 spec lost the compute capability the cuBLAS workspace
    depends on (32 MiB on sm_90), so its ledger was 23.9 MiB off the catalog's. Every term equal now."""
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory.vllm_memory import predict_ledger

    no_gpu_stack.setitem(sys.modules, "pynvml", _fake_nvml([_device()]))
    gpu = detect().with_cuda_facts({"sm_count": 132, "l2_bytes": 60 * MiB, "cuda_memory_total_bytes": 150_109_880_320,
                                    "compute_capability": [9, 0]})
    settings = {"gpu_memory_utilization": 0.9, "max_model_len": 8192, "enforce_eager": True}
    nvml = predict_ledger(load_model("qwen2.5-7b"), spec_from_nvml(gpu), settings)
    catalog = predict_ledger(load_model("qwen2.5-7b"), HARDWARE["h200"], settings)
    assert {k: p.value for k, p in nvml.items()} == {k: p.value for k, p in catalog.items()}


def test_the_live_cards_cuda_total_wins_over_the_catalogs() -> None:
    """A catalog card's live target budgets from the card's own cudaMemGetInfo total, whether its catalog entry has
    none (the first H100 session's capacity misses, 2026-12-02: NVML's total is 480 MiB above what vLLM sees) or holds
    one; an identical reading leaves the entry as it is. The entries are picked by what they hold, not by name."""
    from pytest_anatomy.specs.hardware import DetectedGPU, get_hardware
    from pytest_anatomy.targets import live_target

    without = next(hw for hw in HARDWARE.values() if hw.cuda_visible_memory_bytes is None and hw.memory_bytes)
    reading = int(without.memory_bytes * 0.99)
    gpu = DetectedGPU(index=0, name=f"a card of {without.name}", backend="nvml+cuda-driver",
                      memory_total_bytes=without.memory_bytes, cuda_memory_total_bytes=reading,
                      catalog_name=without.name)
    for option in ("auto", without.name):
        spec = live_target(gpu, option, "catalog").spec
        assert spec.cuda_visible_memory_bytes == reading
        assert "cudaMemGetInfo" in spec.sources["cuda_visible_memory_bytes"]
    assert get_hardware(without.name).cuda_visible_memory_bytes is None  # the catalog itself is left alone
    holding = next(hw for hw in HARDWARE.values() if hw.cuda_visible_memory_bytes)
    same = DetectedGPU(index=0, name=f"a card of {holding.name}", backend="nvml",
                       memory_total_bytes=holding.memory_bytes or holding.cuda_visible_memory_bytes,
                       cuda_memory_total_bytes=holding.cuda_visible_memory_bytes, catalog_name=holding.name)
    assert live_target(same, "auto", "catalog").spec is get_hardware(holding.name)
