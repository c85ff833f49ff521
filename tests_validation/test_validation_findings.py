"""The validation findings' reasons quote the numbers their bands are computed from
(validation_findings.py), and a miss whose cause is not established is grouped with its
observed range stated as such."""

from __future__ import annotations

from sweeps import CALIBRATION_SPREAD
from validation_findings import (
    CUDA_TOTAL_GIB,
    KV_QUEUE_REASON,
    OLD_VLLM_CPU,
    OLD_VLLM_REASON,
    Route,
    cuda_total_reason,
    finding_marks,
    route,
)

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.units import MiB


def test_the_pre_0_6_band_factor_is_the_reasons_arithmetic() -> None:
    assert OLD_VLLM_CPU == 1 / (1 - 0.29 / 0.67)
    assert "0.29 / 0.67 = 43%" in OLD_VLLM_REASON and f"= {OLD_VLLM_CPU:.2f}x" in OLD_VLLM_REASON


def test_the_cuda_total_reason_quotes_the_catalog() -> None:
    nvml = get_hardware("h100-sxm").require("nvml_memory_bytes")
    reason = cuda_total_reason("h100-sxm")
    assert f"NVML's {nvml / MiB:,.0f} MiB" in reason
    assert f"{CUDA_TOTAL_GIB[0]:.2f}-{CUDA_TOTAL_GIB[1]:.2f} GiB" in reason


def test_the_calibration_spread_quoted_is_the_one_the_bands_use() -> None:
    """Every reason that names the calibration spread prints sweeps.CALIBRATION_SPREAD, the constant the bands add."""
    quoted = f"+-{CALIBRATION_SPREAD:.0%} calibration spread"
    assert quoted in OLD_VLLM_REASON and quoted in KV_QUEUE_REASON
    marks = finding_marks("h100-sxm", "src", "vllm", [[route(2.0, 1.0, (0.9, 1.1), "latency")]], "Candidates: none.")
    assert quoted in marks[0][0].kwargs["reason"]


def test_a_sourced_cause_keeps_its_band_and_unexplained_misses_share_their_observed_range() -> None:
    sourced = route(1.5, 1.0, (0.9, 1.1), "latency", (("cause", "why", (1.2, 1.8)),))
    assert sourced == Route("latency", 1.5, (0.9, 1.1), ("cause", "why", (1.2, 1.8)))
    misses = [[route(2.0, 1.0, (0.9, 1.1), "latency")], [route(3.0, 1.0, (0.9, 1.1), "latency")], [sourced], [None]]
    marks = finding_marks("h100-sxm", "src", "vllm", misses, "Candidates: none.")
    open_ = marks[0][0].kwargs
    assert marks[1][0].kwargs == open_ and marks[3] == []
    assert open_["expected"] == (2.0, 3.0)
    assert "measured/predicted 2 to 3, median 2.5 (1 other misses have a sourced cause)" in open_["reason"]
    assert marks[2][0].args == ("cause",) and marks[2][0].kwargs["expected"] == (1.2, 1.8)
