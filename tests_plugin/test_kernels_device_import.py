"""The kernels plan's output imports into recordings with the fields the H200 tests read."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_anatomy import recordings
from pytest_anatomy.importers.device import import_files
from pytest_anatomy.specs.hardware import match_catalog

# The device name a batch's nvidia-smi reports, and the results folder the importer files it under
GPU = "NVIDIA H200"
CARD = match_catalog(GPU)


def _batch() -> dict:
    timing = {"ms_median": 3.1, "samples_ms": [3.1, 3.2, 3.0]}
    return {"schema": "pytest-anatomy/device-batch/v1",
            "provenance": {"kind": "kernels", "date_utc": "2026-11-30T10:00:00+00:00", "command": "kernels_plan.py",
                           "versions": {"torch": {"version": "2.11.0"}, "cuda-core": {"version": "1.2.0"}},
                           "nvidia_smi": {"summary": {"name": GPU, "driver": "580.159.04"}}},
            "runs": [
                {"id": "kernels-ceilings", "settings": {}, "result": {"kind": "ceilings",
                 "read_bandwidth": {"value": 4.4e12, "samples": [4.4e12]}, "copy_bandwidth": {"value": 4.2e12}}},
                {"id": "sgemm.s7-warptiling.4096x4096x4096", "settings": {"runs": 30},
                 "result": {"kind": "kernel-timing", "status": "ok", "ladder": "sgemm", "rung": "s7-warptiling",
                            "shape": {"M": 4096, "N": 4096, "K": 4096}, "dtype": "fp32", "ms_median": 3.1,
                            "ms_median_repeat": 3.12, "baseline_rung": "s0-cublas", "baseline_ms_median": 2.7,
                            "timings": [timing, {**timing, "ms_median": 3.12}], "correctness": [], "gpu": GPU}},
                {"id": "softmax.x3-registers.128x152064", "settings": {},
                 "result": {"kind": "kernel-timing", "status": "refused", "reason": "holds at most 8,192 columns",
                            "ladder": "softmax", "rung": "x3-registers", "shape": {"M": 128, "N": 152064}, "dtype": "fp32"}},
                {"id": "check.sgemm", "settings": {}, "result": {"kind": "correctness", "checks": {}}},
            ]}


def test_kernel_batch_imports(tmp_path: Path):
    src = tmp_path / "kernels.json"
    src.write_text(json.dumps(_batch()))
    done = import_files([src], tmp_path / "results")
    assert any(s == "wrote" for s, _ in done)
    rec = recordings.load_latest(tmp_path / "results", CARD, "kernels", "sgemm.s7-warptiling.4096x4096x4096")
    for key in ("ladder", "rung", "shape", "dtype", "ms_median", "baseline_ms_median"):
        assert rec.data[key] is not None, key
    assert rec["time"].value == 3.1e-3 and rec["baseline_time"].value == 2.7e-3
    assert rec.provenance["gpu"] == GPU and rec.provenance["driver"] == "580.159.04"
    refused = recordings.load_latest(tmp_path / "results", CARD, "kernels", "softmax.x3-registers.128x152064")
    assert refused.data["status"] == "refused"
    ceil = recordings.load_latest(tmp_path / "results", CARD, "kernels", "kernels-ceilings")
    assert ceil["read_bandwidth"].value == 4.4e12
    assert "clocks" not in rec.data  # a plan run from before the clock readings carries none


def test_kernel_blocks_clock_readings_reach_the_recording(tmp_path: Path):
    """A plan block timed with NVML clock readings (time_flushed since 2026-12-02) gives the recording a brief of
    each block's clocks under data['clocks'], as a live recording has."""
    from pytest_anatomy.measure.kernel_runner import clock_summary

    def reading(mhz: int, reasons: tuple[str, ...] = ()) -> dict:
        return {"sm_clock_mhz": mhz, "mem_clock_mhz": 3201, "sm_clock_max_mhz": 1980, "reasons": list(reasons)}

    doc = _batch()
    run = doc["runs"][1]["result"]
    run["timings"] = [{**run["timings"][0], **clock_summary(reading(1980), [], reading(1755, ("sw_power_cap",)))},
                      {**run["timings"][1], **clock_summary(reading(1755), [], reading(1755))}]
    src = tmp_path / "kernels.json"
    src.write_text(json.dumps(doc))
    import_files([src], tmp_path / "results")
    rec = recordings.load_latest(tmp_path / "results", CARD, "kernels", "sgemm.s7-warptiling.4096x4096x4096")
    first, second = rec.data["clocks"]["time"], rec.data["clocks"]["time_repeat"]
    assert (first["sm_mhz_before"], first["sm_mhz_after"], first["steady"]) == (1980, 1755, False)
    assert first["reasons"] == ["sw_power_cap"] and second["steady"] is True


def test_autotune_choice_imports(tmp_path: Path):
    """The fp32 autotuner's choice run becomes autotune.sgemm.s9-tile.<shape> with the chosen candidate's time,
    cuBLAS fp32's, and every candidate's time and prediction (what test_kernels_autotune replays)."""
    doc = _batch()
    doc["runs"].append({"id": "autotune.sgemm.s9-tile.4096x4096x4096", "settings": {"runs": 30},
                        "result": {"kind": "autotune", "ladder": "sgemm", "shape": {"M": 4096, "N": 4096, "K": 4096},
                                   "choice": "s9-tile-128x256x8-b1",
                                   "candidates_ms": {"s9-tile-128x256x8-b1": 2.9, "s9-tile-128x128x16-b2": 3.1,
                                                     "s9-tile-64x64x32-b4": None},
                                   "predicted_ms": {"s9-tile-128x256x8-b1": 2.934}, "baseline_rung": "s0-cublas",
                                   "baseline_ms": 2.68, "rejected": {}, "gpu": GPU}})
    src = tmp_path / "kernels.json"
    src.write_text(json.dumps(doc))
    import_files([src], tmp_path / "results")
    rec = recordings.load_latest(tmp_path / "results", CARD, "kernels", "autotune.sgemm.s9-tile.4096x4096x4096")
    assert rec.data["choice"] == "s9-tile-128x256x8-b1" and rec.data["candidates_ms"]["s9-tile-64x64x32-b4"] is None
    assert rec["time"].value == 2.9e-3 and rec["baseline_time"].value == 2.68e-3
