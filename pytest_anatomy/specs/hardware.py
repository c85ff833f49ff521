"""GPU specs: a catalog where every number carries its source, plus live detection.

Catalog numbers are datasheet values (dense, no sparsity; tensor-core fp16/bf16/fp8 with
fp32 accumulate). Predictions that need a *measured* ceiling (copy bandwidth, matmul peak)
get it from measure/, not from here. Units are SI: bytes, B/s, FLOP/s, Hz.

Memory capacities: NVIDIA's "24 GB", "80 GB", "141 GB" are read as printed (decimal GB).
The driver reports more than that (nvidia-smi: 24,564 MiB = 25.76e9 B on a 24 GB card),
so `memory_bytes` is a label, and `nvml_memory_bytes` / `cuda_visible_memory_bytes` are
the numbers capacity predictions should use. L2 sizes printed as "MB" are MiB (CUDA
reports the A100's "40 MB" as 41,943,040 B and the 4090's "72 MB" as 73,728 KiB).

Detection (`detect()`) uses NVML through `pynvml` (package nvidia-ml-py), imported lazily by
gpu_query.py, which holds every NVML and nvidia-smi query.
It never raises and never initialises CUDA unless `use_torch=True` (torch is only read
when its CUDA state is already initialised), so a CPU-only machine collects every suite.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pytest_anatomy import suggest
from pytest_anatomy.gpu_query import (  # noqa: F401 - visible_gpu_count re-exported: suites ask the catalog module
    nvml_device_info,
    torch_cuda_initialised,
    torch_device_info,
    visible_gpu_count,
)
from pytest_anatomy.option_names import HARDWARE_OPTION
from pytest_anatomy.specs.errors import MissingHardwareFactError, UnknownHardwareError
from pytest_anatomy.units import GB, TB, MiB

PEAK_DTYPES: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")
_NUMERIC_FIELDS: tuple[str, ...] = (
    "memory_bytes", "nvml_memory_bytes", "cuda_visible_memory_bytes", "memory_bandwidth",
    "sm_count", "l2_bytes", "boost_clock_hz", "fp32_cores_per_sm", "memory_bus_bits",
    "memory_clock_hz",
)
# Said by both the CLI (--hardware) and the plugin ({HARDWARE_OPTION}), so it names both spellings.
_FIX = (f"name one of {{names}} (--hardware in the CLI, {HARDWARE_OPTION} in pytest) or add an entry to HARDWARE "
        "in pytest_anatomy/specs/hardware.py")


@dataclass(frozen=True)
class HardwareSpec:
    """One GPU model. `sources` maps each field name (and "peak_flops.<dtype>") to where the
    number comes from; `from_catalog` is False for specs built from a detected, unknown GPU."""

    name: str
    display_name: str
    nvml_names: tuple[str, ...]
    memory_bytes: int | None
    memory_bandwidth: float | None
    peak_flops: Mapping[str, float] = field(hash=False)
    sm_count: int | None
    l2_bytes: int | None
    boost_clock_hz: float | None
    fp32_cores_per_sm: int | None
    sources: Mapping[str, str] = field(hash=False)
    nvml_memory_bytes: int | None = None
    cuda_visible_memory_bytes: int | None = None
    memory_bus_bits: int | None = None
    memory_clock_hz: float | None = None
    from_catalog: bool = True
    notes: tuple[str, ...] = ()
    compute_capability: tuple[int, int] | None = None  # (major, minor): which sm_XY the card runs

    def __post_init__(self) -> None:
        # Read-only copies: a catalog entry must not be edited by a test at runtime.
        object.__setattr__(self, "peak_flops", MappingProxyType(dict(self.peak_flops)))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))
        bad = sorted(set(self.peak_flops) - set(PEAK_DTYPES))
        if bad:
            raise ValueError(f"HardwareSpec {self.name!r}: peak_flops keys {bad} not in {PEAK_DTYPES}")
        needed = [f for f in _NUMERIC_FIELDS if getattr(self, f) is not None]
        needed += [f"peak_flops.{d}" for d in self.peak_flops]
        unsourced = [f for f in needed if not self.sources.get(f)]
        if unsourced:
            raise ValueError(f"HardwareSpec {self.name!r}: no source for {unsourced}; every number needs one")

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s for `dtype` (one of PEAK_DTYPES)."""
        if dtype not in PEAK_DTYPES:
            hint = suggest.did_you_mean(dtype, PEAK_DTYPES)
            raise KeyError(f"unknown dtype {dtype!r}{f'; {hint}' if hint else ''}; "
                           f"known: {', '.join(PEAK_DTYPES)}")
        if dtype not in self.peak_flops:
            raise MissingHardwareFactError(self._missing(f"peak_flops[{dtype!r}]"))
        return self.peak_flops[dtype]

    def require(self, field_name: str) -> Any:
        """The value of a numeric field, or a MissingHardwareFactError saying what to do."""
        value = getattr(self, field_name)
        if value is None:
            raise MissingHardwareFactError(self._missing(field_name))
        return value

    @property
    def sm_arch(self) -> str:
        """'sm_90' for compute capability (9, 0): the target ptxas and NVRTC compile for."""
        cc = self.compute_capability
        if cc is None:
            raise MissingHardwareFactError(self._missing("compute_capability"))
        return f"sm_{cc[0]}{cc[1]}"

    def ridge_point(self, dtype: str = "bf16") -> float:
        """Arithmetic intensity (FLOP/B) where the roofline turns from memory- to compute-bound."""
        bandwidth: float = self.require("memory_bandwidth")
        return self.peak(dtype) / bandwidth

    @property
    def bandwidth_from_clocks(self) -> float | None:
        """memory clock x 2 (DDR) x bus width / 8, as nvbench prints it; None if unknown."""
        if self.memory_clock_hz is None or self.memory_bus_bits is None:
            return None
        return self.memory_clock_hz * 2 * self.memory_bus_bits / 8

    @property
    def fp32_from_cores(self) -> float | None:
        """SMs x fp32 cores/SM x 2 (FMA) x boost clock; None if a factor is unknown."""
        if self.sm_count is None or self.fp32_cores_per_sm is None or self.boost_clock_hz is None:
            return None
        return self.sm_count * self.fp32_cores_per_sm * 2 * self.boost_clock_hz

    @property
    def missing(self) -> tuple[str, ...]:
        """Fields and peak dtypes with no value: predictions using them will raise."""
        absent = [f for f in _NUMERIC_FIELDS if getattr(self, f) is None]
        return tuple(absent + [f"peak_flops.{d}" for d in PEAK_DTYPES if d not in self.peak_flops])

    def to_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies and mappingproxy cannot be copied.
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["peak_flops"], out["sources"] = dict(self.peak_flops), dict(self.sources)
        out["nvml_names"], out["notes"] = list(self.nvml_names), list(self.notes)
        return out

    def _missing(self, what: str) -> str:
        origin = "catalog entry" if self.from_catalog else "detected GPU, not in catalog"
        return (f"hardware {self.name!r} ({origin}) has no {what}. Predictions that need it "
                f"cannot run on these specs; {_FIX.format(names=', '.join(HARDWARE))}.")


# --- sources ----------------------------------------------------------------------------
_ADA = ("NVIDIA Ada Lovelace GPU Architecture whitepaper v2.1, Appendix A (GeForce RTX 4090), "
        "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf")
_SEED_SMI = "nvidia-smi on the seed's machine (seed-results/*/fingerprint.txt)"
_NVBENCH = "nvbench device report of an RTX 4090, https://github.com/NVIDIA/nvbench/pull/207"
_H100_DS = ("NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column, "
            "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet")
_H100_WP = ("NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5), "
            "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper")
_H200_DS = ("NVIDIA H200 datasheet / product page, H200 SXM column (printed with sparsity; "
            "dense = half), https://www.nvidia.com/en-us/data-center/h200/")
_H200_OURS = "measured on the project's H200 (torch device properties), see docs/FACTS.md H1"
_MODAL = "nvidia-smi totals listed in https://github.com/modal-labs/modal-client/pull/2797"
_A100_DS = ("NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column, https://www.nvidia.com/content/"
            "dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_A100_WP = ("NVIDIA A100 Tensor Core GPU Architecture whitepaper (GA100), https://images.nvidia.com/"
            "aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf")
_A100_DQ = "CUDA deviceQuery of an A100-SXM4 (1410 MHz, 5120-bit, L2 41,943,040 B), https://github.com/bottlerocket-os/bottlerocket/pull/3873"
_L40S_DS = "NVIDIA L40S datasheet, https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"
_L40S_BOARD = "L40S board specs (2520 MHz boost, 384-bit GDDR6 at 18 Gb/s), https://www.itcreations.com/nvidia-gpu/nvidia-l40s-gpu-accelerator"
# Cards of the third-party measurements (docs/VALIDATION.md). Blackwell datasheets print peaks with
# 2:4 sparsity; the dense value (half) is what the catalog holds, as for the H200.
_H100_PCIE_DS = ("NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column (printed with sparsity; dense = half), "
                 "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet")
_A100_40_DS = ("NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM column, https://www.nvidia.com/content/"
               "dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_GB200_DS = ("NVIDIA GB200 NVL72 datasheet / product page, 'Individual Blackwell GPU Specifications', GB200 column "
             "(printed with sparsity; dense = half), https://www.nvidia.com/en-us/data-center/gb200-nvl72/")
_B200_DS = ("NVIDIA GB200 NVL72 datasheet / product page, 'Individual Blackwell GPU Specifications', HGX B200 column "
            "(printed with sparsity; dense = half), https://www.nvidia.com/en-us/data-center/gb200-nvl72/")
_B300_DS = ("NVIDIA HGX platform page, HGX B300 column, 8-GPU totals / 8 (printed with sparsity; dense = half), "
            "https://www.nvidia.com/en-us/data-center/hgx/")
_CC = "NVIDIA, CUDA GPU Compute Capability table, https://developer.nvidia.com/cuda-gpus"
_B300_BW = "8 TB/s per B300 GPU (HGX B300: 'up to 8 TB/s per GPU'), https://glennklockwood.com/garden/processors/B300"


def _peaks(src: str, **tflops: float) -> tuple[dict[str, float], dict[str, str]]:
    return {d: v * 1e12 for d, v in tflops.items()}, {f"peak_flops.{d}": src for d in tflops}


def _entry(peaks: tuple[dict[str, float], dict[str, str]], sources: dict[str, str], **kw: Any) -> HardwareSpec:
    return HardwareSpec(peak_flops=peaks[0], sources={**peaks[1], **sources}, **kw)


HARDWARE: Mapping[str, HardwareSpec] = MappingProxyType({spec.name: spec for spec in (
    _entry(
        _peaks(_ADA, fp32=82.6, tf32=82.6, bf16=165.2, fp16=165.2, fp8=330.3, int8=660.6),
        {"memory_bytes": _ADA, "nvml_memory_bytes": _SEED_SMI, "memory_bandwidth": _ADA,
         "sm_count": _ADA, "l2_bytes": f"{_ADA}; {_NVBENCH} (73,728 KiB)", "boost_clock_hz": _NVBENCH,
         "fp32_cores_per_sm": _ADA, "memory_bus_bits": _NVBENCH,
         "memory_clock_hz": f"{_SEED_SMI} (clocks.max.memory 10501 MHz); {_NVBENCH}",
         "cuda_visible_memory_bytes": ("unknown exactly: the seed's vLLM log implies 23.52 GiB (rounded to "
                                       "0.01 GiB, docs/FACTS.md S1), while nvbench PR #207 saw 24,563 MiB "
                                       "from cudaMemGetInfo on another 4090; left None")},
        name="rtx4090", compute_capability=(8, 9), display_name="NVIDIA GeForce RTX 4090", nvml_names=("NVIDIA GeForce RTX 4090",),
        memory_bytes=24 * GB, nvml_memory_bytes=24_564 * MiB, memory_bandwidth=1008 * GB, sm_count=128,
        l2_bytes=72 * MiB, boost_clock_hz=2.52e9, fp32_cores_per_sm=128, memory_bus_bits=384,
        memory_clock_hz=10_501e6),
    _entry(
        _peaks(_H100_WP, fp32=67.0, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9, int8=1978.9),
        {"memory_bytes": _H100_DS, "nvml_memory_bytes": _MODAL, "memory_bandwidth": _H100_DS,
         "sm_count": _H100_WP, "l2_bytes": _H100_WP, "fp32_cores_per_sm": _H100_WP,
         "memory_bus_bits": f"{_H100_WP} (5 HBM3 stacks, ten 512-bit controllers)",
         "boost_clock_hz": "1.98 GHz max boost: the datasheet's 67 TFLOP/s fp32 = 132 x 128 x 2 x 1.98 GHz",
         "peak_flops.fp32": _H100_DS},
        name="h100-sxm", compute_capability=(9, 0), display_name="NVIDIA H100 SXM5 80GB", nvml_names=("NVIDIA H100 80GB HBM3",),
        memory_bytes=80 * GB, nvml_memory_bytes=81_559 * MiB, memory_bandwidth=3.35 * TB, sm_count=132,
        l2_bytes=50 * MiB, boost_clock_hz=1.98e9, fp32_cores_per_sm=128, memory_bus_bits=5120),
    _entry(
        _peaks(_H200_DS, fp32=67.0, tf32=494.5, bf16=989.5, fp16=989.5, fp8=1979.0, int8=1979.0),
        {"memory_bytes": _H200_DS, "memory_bandwidth": _H200_DS, "sm_count": _H200_OURS,
         "l2_bytes": _H200_OURS, "cuda_visible_memory_bytes": _H200_OURS,
         "nvml_memory_bytes": "nvidia-smi in https://github.com/NVIDIA/cuda-samples/issues/311 (143,771 MiB)",
         "fp32_cores_per_sm": "Hopper SM (same GH100 SM as H100), " + _H100_WP,
         "boost_clock_hz": "nvidia-smi -q max graphics clock 1980 MHz, https://github.com/awslabs/amazon-eks-ami/pull/1985",
         "memory_clock_hz": "nvidia-smi -q applications memory clock 3201 MHz, https://github.com/awslabs/amazon-eks-ami/pull/1985",
         "memory_bus_bits": "not verified (6 HBM3e stacks suggest 6144 bit, which with 3201 MHz gives 4.92 TB/s, not 4.8); left None"},
        name="h200", compute_capability=(9, 0), display_name="NVIDIA H200 SXM 141GB", nvml_names=("NVIDIA H200",),
        memory_bytes=141 * GB, nvml_memory_bytes=143_771 * MiB, cuda_visible_memory_bytes=150_109_880_320,
        memory_bandwidth=4.8 * TB, sm_count=132, l2_bytes=60 * MiB, boost_clock_hz=1.98e9,
        fp32_cores_per_sm=128, memory_clock_hz=3201e6),
    _entry(
        _peaks(_A100_DS, fp32=19.5, tf32=156.0, bf16=312.0, fp16=312.0, int8=624.0),
        {"memory_bytes": _A100_DS, "nvml_memory_bytes": _MODAL, "memory_bandwidth": _A100_DS + " (2,039 GB/s)",
         "sm_count": _A100_WP, "l2_bytes": f"{_A100_WP}; {_A100_DQ}", "boost_clock_hz": _A100_DQ,
         "fp32_cores_per_sm": _A100_WP, "memory_bus_bits": _A100_DQ},
        name="a100-80gb", compute_capability=(8, 0), display_name="NVIDIA A100 SXM4 80GB", nvml_names=("NVIDIA A100-SXM4-80GB",),
        memory_bytes=80 * GB, nvml_memory_bytes=81_920 * MiB, memory_bandwidth=2039 * GB, sm_count=108,
        l2_bytes=40 * MiB, boost_clock_hz=1.41e9, fp32_cores_per_sm=64, memory_bus_bits=5120),
    _entry(
        _peaks(_L40S_DS, fp32=91.6, tf32=183.0, bf16=362.05, fp16=362.05, fp8=733.0, int8=733.0),
        {"memory_bytes": _L40S_DS, "nvml_memory_bytes": _MODAL, "memory_bandwidth": _L40S_DS,
         "sm_count": _L40S_DS + " (142 RT cores = 1 per SM; 18,176 CUDA cores / 128)",
         "l2_bytes": "96 MB L2 (full AD102, " + _ADA + "); not confirmed on an L40S",
         "boost_clock_hz": _L40S_BOARD, "fp32_cores_per_sm": _ADA, "memory_bus_bits": _L40S_BOARD},
        name="l40s", compute_capability=(8, 9), display_name="NVIDIA L40S", nvml_names=("NVIDIA L40S",),
        memory_bytes=48 * GB, nvml_memory_bytes=46_068 * MiB, memory_bandwidth=864 * GB, sm_count=142,
        l2_bytes=96 * MiB, boost_clock_hz=2.52e9, fp32_cores_per_sm=128, memory_bus_bits=384),
    _entry(
        _peaks(_H100_PCIE_DS, fp32=51.0, tf32=378.0, bf16=756.0, fp16=756.0, fp8=1513.0, int8=1513.0),
        {"memory_bytes": _H100_PCIE_DS, "memory_bandwidth": _H100_PCIE_DS + " (2,000 GB/s)",
         "sm_count": _H100_WP + " (H100 PCIe: 114 SMs)", "l2_bytes": _H100_WP, "fp32_cores_per_sm": _H100_WP,
         "memory_bus_bits": _H100_WP + " (H100 PCIe: 5120-bit HBM2e)",
         "peak_flops.fp32": _H100_PCIE_DS + " (FP32 is printed dense)",
         "boost_clock_hz": "1.755 GHz: the datasheet's 51 TFLOP/s fp32 = 114 x 128 x 2 x 1.755 GHz",
         "compute_capability": _CC + " (9.0: H100)"},
        name="h100-pcie", compute_capability=(9, 0), display_name="NVIDIA H100 PCIe 80GB", nvml_names=("NVIDIA H100 PCIe",),
        memory_bytes=80 * GB, memory_bandwidth=2000 * GB, sm_count=114, l2_bytes=50 * MiB, boost_clock_hz=1.755e9,
        fp32_cores_per_sm=128, memory_bus_bits=5120),
    _entry(
        _peaks(_A100_40_DS, fp32=19.5, tf32=156.0, bf16=312.0, fp16=312.0, int8=624.0),
        {"memory_bytes": _A100_40_DS, "memory_bandwidth": _A100_40_DS + " (1,555 GB/s)",
         "sm_count": _A100_WP, "l2_bytes": f"{_A100_WP}; {_A100_DQ}", "boost_clock_hz": _A100_DQ,
         "fp32_cores_per_sm": _A100_WP, "memory_bus_bits": _A100_WP + " (five HBM2 stacks, 5120-bit)",
         "peak_flops.fp32": _A100_40_DS + " (FP32 is printed dense)", "compute_capability": _CC + " (8.0: A100)"},
        name="a100-40gb", compute_capability=(8, 0), display_name="NVIDIA A100 SXM4 40GB", nvml_names=("NVIDIA A100-SXM4-40GB",),
        memory_bytes=40 * GB, memory_bandwidth=1555 * GB, sm_count=108, l2_bytes=40 * MiB, boost_clock_hz=1.41e9,
        fp32_cores_per_sm=64, memory_bus_bits=5120),
    _entry(
        _peaks(_B200_DS, fp32=75.0, tf32=1100.0, bf16=2250.0, fp16=2250.0, fp8=4500.0, int8=4500.0),
        {"memory_bytes": _B200_DS + " (180 GB HBM3e)", "memory_bandwidth": _B200_DS + " (7.7 TB/s)",
         "peak_flops.fp32": _B200_DS + " (FP32 is printed dense)", "compute_capability": _CC + " (10.0: B200)"},
        name="b200", compute_capability=(10, 0), display_name="NVIDIA B200 (HGX)", nvml_names=("NVIDIA B200",),
        memory_bytes=180 * GB, memory_bandwidth=7.7 * TB, sm_count=None, l2_bytes=None, boost_clock_hz=None,
        fp32_cores_per_sm=None,
        notes=("fp4 peaks (9 PFLOP/s dense) are outside PEAK_DTYPES: fp4 rows are not predicted",)),
    _entry(
        _peaks(_B300_DS, fp32=75.0, tf32=1125.0, bf16=2250.0, fp16=2250.0, fp8=4500.0),
        {"memory_bytes": _B300_DS + " (2.3 TB / 8 = 288 GB HBM3e)", "memory_bandwidth": _B300_BW,
         "peak_flops.fp32": _B300_DS + " (600 TFLOP/s / 8, printed dense)",
         "compute_capability": _CC + " (10.3: B300 and GB300, Blackwell Ultra; not 10.0)"},
        name="b300", compute_capability=(10, 3), display_name="NVIDIA B300 (HGX, Blackwell Ultra)", nvml_names=(),
        memory_bytes=288 * GB, memory_bandwidth=8.0 * TB, sm_count=None, l2_bytes=None, boost_clock_hz=None,
        fp32_cores_per_sm=None,
        notes=("int8 left out: the HGX B300 page prints 2 POPS for 8 GPUs, not a tensor-core int8 rate",
               "NVML name not verified: detection will not match a B300 to this entry")),
    _entry(
        _peaks(_GB200_DS, fp32=80.0, tf32=1250.0, bf16=2500.0, fp16=2500.0, fp8=5000.0, int8=5000.0),
        {"memory_bytes": _GB200_DS + " (186 GB HBM3e)", "memory_bandwidth": _GB200_DS + " (8 TB/s)",
         "peak_flops.fp32": _GB200_DS + " (FP32 is printed dense)", "compute_capability": _CC + " (10.0: GB200)"},
        name="gb200", compute_capability=(10, 0), display_name="NVIDIA GB200 (one Blackwell GPU of an NVL72)", nvml_names=("NVIDIA GB200",),
        memory_bytes=186 * GB, memory_bandwidth=8.0 * TB, sm_count=None, l2_bytes=None, boost_clock_hz=None,
        fp32_cores_per_sm=None),
)})

_BY_NVML_NAME: Mapping[str, str] = {n.casefold(): s.name for s in HARDWARE.values() for n in s.nvml_names}


def get_hardware(name: str) -> HardwareSpec:
    """Catalog lookup by key ("h200", case-insensitive) or exact NVML name ("NVIDIA H200")."""
    key = name.strip().casefold()
    if key in HARDWARE:
        return HARDWARE[key]
    if key in _BY_NVML_NAME:
        return HARDWARE[_BY_NVML_NAME[key]]
    names = ", ".join(HARDWARE)
    spelled = [*HARDWARE, *(n for s in HARDWARE.values() for n in s.nvml_names)]
    hint = suggest.did_you_mean(key, spelled, n=3, cutoff=0.5, fold=True, sentence=True)
    hint = f" {hint}" if hint else ""
    raise UnknownHardwareError(f"unknown hardware {name!r}.{hint} Known: {names}. Fix: {_FIX.format(names=names)}.")


def match_catalog(nvml_name: str) -> str | None:
    """Catalog key for an exact device name as NVML/torch report it, else None (no fuzzy match:
    "NVIDIA H200 NVL" has other clocks and power than "NVIDIA H200")."""
    return _BY_NVML_NAME.get(nvml_name.strip().casefold())


# --- live detection ---------------------------------------------------------------------
@dataclass(frozen=True)
class DetectedGPU:
    """What the driver says about the GPU this process would use (provenance for reports)."""

    index: int
    name: str
    backend: str  # "nvml", "torch" or "nvml+torch"
    memory_total_bytes: int  # NVML total (nvidia-smi); torch's total if NVML is absent
    memory_free_bytes: int | None = None
    cuda_memory_total_bytes: int | None = None  # cudaMemGetInfo total (what vLLM budgets); torch only
    uuid: str | None = None
    sm_count: int | None = None
    l2_bytes: int | None = None
    compute_capability: tuple[int, int] | None = None
    cuda_cores: int | None = None
    memory_bus_bits: int | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    mem_clock_max_mhz: int | None = None
    power_limit_w: float | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # newest CUDA the driver supports, e.g. "12.4"
    torch_cuda_version: str | None = None
    mig_enabled: bool | None = None
    catalog_name: str | None = None

    def with_cuda_facts(self, facts: Mapping[str, Any] | None) -> "DetectedGPU":
        """This GPU with the CUDA driver's attributes filled in where NVML had none
        (gpu_query.cuda_device_facts reads them in a subprocess): SM count, L2, CUDA-visible total."""
        if not facts:
            return self
        cc = facts.get("compute_capability")
        return dataclasses.replace(
            self, backend=self.backend + "+cuda-driver",
            sm_count=self.sm_count or facts.get("sm_count"), l2_bytes=self.l2_bytes or facts.get("l2_bytes"),
            cuda_memory_total_bytes=self.cuda_memory_total_bytes or facts.get("cuda_memory_total_bytes"),
            memory_bus_bits=self.memory_bus_bits or facts.get("memory_bus_bits"),
            compute_capability=self.compute_capability or (tuple(cc) if cc else None),
            sm_clock_max_mhz=self.sm_clock_max_mhz or _khz_to_mhz(facts.get("sm_clock_max_khz")),
            mem_clock_max_mhz=self.mem_clock_max_mhz or _khz_to_mhz(facts.get("mem_clock_max_khz")))

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if self.compute_capability is not None:
            out["compute_capability"] = list(self.compute_capability)
        return out


def detect(index: int = 0, *, use_torch: bool = False) -> DetectedGPU | None:
    """The visible GPU number `index` (CUDA numbering), or None on a machine without one.

    Never raises. NVML needs no CUDA context. torch fills sm_count / L2 / cudaMemGetInfo
    only if `use_torch=True` (this creates a CUDA context, several hundred MiB) or if this
    process already initialised CUDA through torch. NVML numbers devices by PCI bus while
    CUDA's default order is fastest-first: set CUDA_DEVICE_ORDER=PCI_BUS_ID on mixed boxes."""
    try:
        nvml = nvml_device_info(index)
    except Exception:  # noqa: BLE001 - detection is best-effort by contract
        nvml = None
    cuda: dict[str, Any] | None = None
    if use_torch or torch_cuda_initialised():
        try:
            cuda = torch_device_info(index)
        except Exception:  # noqa: BLE001
            cuda = None
    if nvml is None and cuda is None:
        return None
    merged: dict[str, Any] = {**(cuda or {}), **(nvml or {})}  # NVML wins on shared keys
    if nvml is None:
        merged["memory_total_bytes"] = cuda["cuda_memory_total_bytes"]  # type: ignore[index]
    for key in ("sm_count", "l2_bytes", "compute_capability"):
        merged[key] = merged.get(key) or (cuda or {}).get(key)
    backend = "+".join(b for b, d in (("nvml", nvml), ("torch", cuda)) if d is not None)
    return DetectedGPU(index=index, backend=backend, catalog_name=match_catalog(merged["name"]), **merged)


def _khz_to_mhz(value: Any) -> int | None:
    return int(round(value / 1000)) if value else None


def spec_from_nvml(gpu: DetectedGPU) -> HardwareSpec:
    """A complete spec from what the driver reports, never from the catalog: memory (NVML and
    the CUDA driver), SM count, max clocks, bus width -> bandwidth, and peak FLOP/s = SMs x max
    SM clock x the architecture's ops per SM per clock (specs/architectures.py). Raises
    ValueError naming what the driver did not report."""
    from pytest_anatomy.specs.architectures import architecture

    arch = architecture(gpu.compute_capability)
    missing = [what for what, v in (("compute capability", gpu.compute_capability),
                                    ("max SM clock", gpu.sm_clock_max_mhz), ("max memory clock", gpu.mem_clock_max_mhz),
                                    ("memory bus width", gpu.memory_bus_bits)) if not v]
    if arch is None and gpu.compute_capability:
        missing.append(f"a row for compute capability {gpu.compute_capability} in specs/architectures.py")
    sm_count = gpu.sm_count or (gpu.cuda_cores // arch.fp32_cores_per_sm if arch and gpu.cuda_cores else None)
    if not sm_count:
        missing.append("SM count (NVML core count or the CUDA driver's attribute)")
    if missing or arch is None:
        raise ValueError(f"{gpu.name}: cannot build a spec from the driver alone, it did not report "
                         f"{', '.join(missing)}; install cuda-python (the gpu extra) or pass {HARDWARE_OPTION}=NAME")
    via = f"{gpu.backend} on this machine"
    clock = gpu.sm_clock_max_mhz * 1e6  # type: ignore[operator]
    mem_clock = gpu.mem_clock_max_mhz * 1e6  # type: ignore[operator]
    consumer = "geforce" in gpu.name.casefold()
    peaks = {d: sm_count * clock * ops for d in PEAK_DTYPES  # type: ignore[operator]  # sm_count: checked above
             if (ops := arch.ops(d, consumer)) is not None}
    sources: dict[str, str] = {
        f"peak_flops.{d}": f"derived: {sm_count} SMs x {clock / 1e9:.3g} GHz max SM clock ({via}) x "
                           f"{arch.ops(d, consumer)} ops/SM/clock ({arch.name}{', GeForce rate' if consumer else ''}: "
                           f"{arch.source})" for d in peaks}
    sources.update({
        "nvml_memory_bytes": f"NVML total memory, {via}",
        "sm_count": f"{'CUDA driver attribute' if gpu.sm_count else 'NVML core count / cores per SM'}, {via}",
        "boost_clock_hz": f"NVML max SM clock, {via}",
        "memory_clock_hz": f"NVML max memory clock, {via}",
        "memory_bus_bits": f"memory bus width, {via}",
        "memory_bandwidth": f"derived: max memory clock x 2 (DDR) x bus width / 8, {via}",
        "fp32_cores_per_sm": f"{arch.name}: {arch.source}",
    })
    values: dict[str, Any] = {"cuda_visible_memory_bytes": gpu.cuda_memory_total_bytes, "l2_bytes": gpu.l2_bytes}
    for key, value in values.items():
        if value is not None:
            sources[key] = f"CUDA driver attribute, {via}"
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.name.casefold()).strip("-")
    return HardwareSpec(
        name=slug, display_name=gpu.name, nvml_names=(gpu.name,), memory_bytes=None,
        nvml_memory_bytes=gpu.memory_total_bytes, memory_bandwidth=mem_clock * 2 * gpu.memory_bus_bits / 8,  # type: ignore[operator]
        peak_flops=peaks, sm_count=sm_count, boost_clock_hz=clock, fp32_cores_per_sm=arch.fp32_cores_per_sm,
        memory_bus_bits=gpu.memory_bus_bits, memory_clock_hz=mem_clock, sources=sources, from_catalog=False,
        compute_capability=tuple(gpu.compute_capability),  # type: ignore[arg-type]
        notes=(f"{gpu.name!r}: every number from the driver (NVML + CUDA attributes) and the {arch.name} "
               "per-clock table, none from a datasheet",),
        **values)


def with_card_memory(spec: HardwareSpec, cuda_total_bytes: int | None,
                     source: str = "this card's cudaMemGetInfo total, detected") -> HardwareSpec:
    """`spec` with one card's CUDA-visible total (cudaMemGetInfo), what vLLM budgets from. A catalog
    total is the modal card's or absent (h100-sxm: 480 MiB below NVML's on our first H100, 2026-12-02);
    the card's own reading is exact, so it wins: the live card, and a recording that names its GPU."""
    if not cuda_total_bytes or cuda_total_bytes == spec.cuda_visible_memory_bytes:
        return spec
    return dataclasses.replace(spec, cuda_visible_memory_bytes=int(cuda_total_bytes),
                               sources={**spec.sources, "cuda_visible_memory_bytes": source})


def spec_for_detected(gpu: DetectedGPU) -> HardwareSpec:
    """The catalog spec for a known GPU; otherwise the spec derived from the driver
    (spec_from_nvml), or, when the driver reports too little for that, a spec of detected numbers
    only whose datasheet fields are None, so predictions needing them fail with a clear message."""
    if gpu.catalog_name is None:
        try:
            return spec_from_nvml(gpu)
        except ValueError:
            pass
    if gpu.catalog_name is not None:
        spec = with_card_memory(HARDWARE[gpu.catalog_name], gpu.cuda_memory_total_bytes)
        if gpu.mig_enabled:
            spec = dataclasses.replace(spec, notes=spec.notes + (
                "MIG is enabled: a MIG slice has fewer SMs and less bandwidth than these whole-GPU numbers",))
        return spec
    src = f"detected on this machine via {gpu.backend}, not in catalog"
    mem_clock = gpu.mem_clock_max_mhz * 1e6 if gpu.mem_clock_max_mhz else None
    values: dict[str, Any] = {
        "nvml_memory_bytes": gpu.memory_total_bytes if "nvml" in gpu.backend else None,
        "cuda_visible_memory_bytes": gpu.cuda_memory_total_bytes, "sm_count": gpu.sm_count,
        "l2_bytes": gpu.l2_bytes, "memory_bus_bits": gpu.memory_bus_bits, "memory_clock_hz": mem_clock,
    }
    sources = {k: src for k, v in values.items() if v is not None}
    bandwidth = None
    if mem_clock and gpu.memory_bus_bits:
        # Same formula nvbench prints; matches the datasheet for every catalog GPU that has both.
        bandwidth = mem_clock * 2 * gpu.memory_bus_bits / 8
        sources["memory_bandwidth"] = f"derived: max memory clock x 2 (DDR) x bus width / 8, {src}"
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.name.casefold()).strip("-")
    return HardwareSpec(
        name=f"detected:{slug}", display_name=gpu.name, nvml_names=(gpu.name,), memory_bytes=None,
        memory_bandwidth=bandwidth, peak_flops={}, boost_clock_hz=None, fp32_cores_per_sm=None,
        sources=sources, from_catalog=False,
        notes=((f"{gpu.name!r} is not in the catalog: no datasheet peaks or nominal memory; "
                "predictions needing them raise MissingHardwareFactError"),),
        **values)
