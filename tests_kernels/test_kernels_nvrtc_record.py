"""The committed record of compile.py's results (tests_kernels/nvrtc-record.json, nvrtc_record.py) stands for this
checkout's compiles: its key is this checkout's kernel sources', compile.py's and the tools', and a sample of its
entries compiles again, with the record set aside and an empty cache, to exactly what the record holds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import rung_checks

from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import nvrtc_record

# One rung with every kind of entry the fp32 checks read (its ptxas report, SASS counts and K loop: nvrtc_facts.
# RUNG_LOOPS), and one refusal below a file's requirement (check_compiles' answer, test_kernels_arch)
S15, S14 = "sgemm/s15_fp32_thread_tile_8x16.cu", "sgemm/s14_bf16_wgmma_tma.cu"
SAMPLE = (("resource_report", S15, "sm_90"), ("sass_counts", S15, "sm_90"), ("loop_bodies", S15, "sm_90"),
          ("check_compiles", S14, "sm_89"))


def _refresh_run() -> bool:
    return os.environ.get(nvrtc_record.ENV) == "off"  # the refresh command's own run, which writes the record


def test_the_committed_nvrtc_record_is_this_checkouts() -> None:
    rung_checks.need_tools("nvrtc", "cuobjdump", "nvdisasm")
    if _refresh_run():
        pytest.skip("the run that writes the record")
    assert nvrtc_record.recorded_entries() is not None, (
        f"{nvrtc_record.DEFAULT.name} is missing or another checkout's or NVRTC's compile (a kernel source, "
        f"compile.py or a tool changed): {nvrtc_record.refresh_command()}")


def _ask(function: str, source: str, arch: str) -> Any:
    try:
        return getattr(kc, function)(source, arch)
    except RuntimeError as exc:  # a refusal: "NVRTC failed on ..." and the head of its log
        return "refused", str(exc)


def test_a_sample_of_the_record_compiles_again_to_its_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each sample read from the record alone (a compile there fails the test: the entry is missing), then compiled
    and disassembled afresh: the same report, counts, loops and refusal (~4 s)."""
    rung_checks.need_tools("nvrtc", "cuobjdump", "nvdisasm")
    entries = nvrtc_record.recorded_entries()
    if entries is None:
        pytest.skip("no record of this checkout's compiles (the refresh's own run, or a stale record, which "
                    "test_the_committed_nvrtc_record_is_this_checkouts fails)")

    def not_recorded(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"compiled, so not in the record: {args[:2]}")

    with monkeypatch.context() as m:
        m.setattr(kc, "RECORDED", entries)
        m.setenv("PYTEST_ANATOMY_CACHE", str(tmp_path / "record-only"))
        m.setattr(kc, "_compile", not_recorded)
        recorded = [_ask(*s) for s in SAMPLE]
    monkeypatch.setattr(kc, "RECORDED", {})
    monkeypatch.setenv("PYTEST_ANATOMY_CACHE", str(tmp_path / "fresh"))
    fresh = [_ask(*s) for s in SAMPLE]
    assert fresh == recorded
    assert recorded[-1][0] == "refused" and "NVRTC failed" in recorded[-1][1], recorded[-1]
