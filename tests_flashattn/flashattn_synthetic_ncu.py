"""A synthetic Nsight Compute report of scripts/device/flashattn_profile.sh, for the CPU replay test.

SYNTHETIC: no GPU produced these numbers. Each launch's counters are the pre-registered
expectation of test_flashattn_counters.py times a factor inside its band (FACTORS; L2 bytes at the
middle of the launch's band, flashattn_io.l2_band), split over the kernels the rung launches as the
real report would list them (a marker, then r1's two kernels, r2's three fills and its kernel, one
kernel for r3-r8), in ncu's `--csv --page details` layout.
tests_flashattn/data/ holds the output of `python tests_flashattn/flashattn_synthetic_ncu.py`;
a test keeps the two equal, so the data is never edited by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
REPORT, MANIFEST = DATA / "flashattn-ncu-synthetic.csv", DATA / "flashattn-profile-manifest-synthetic.json"
DATE = "2026-12-01T00:00:00+00:00"
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}
OCCUPANCY_PCT = 12.5  # 8 warps of 64: one program per SM
# the Gluon rung's: its ring depth (STAGES) and 12 warps a program (8 consumers, the producer's warpgroup)
GLUON_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "STAGES": 2, "num_warps": 8, "num_stages": 1}
# r8's (its first session's bf16 choice): 128 x 128 tiles, 4 warps a consumer warpgroup (the default partition's
# num_warps; the second warpgroup and the producer are workers), 12 warps a program as r7's
GLUON_CONFIGS = {"r8-pingpong": {"BLOCK_M": 128, "BLOCK_N": 128, "STAGES": 2, "num_warps": 4, "num_stages": 1}}
GLUON_OCCUPANCY_PCT = 18.75
FACTORS = {"reads": 1.03, "writes": 0.99, "streamed": 0.9}

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
          '"Rule Description","Estimated Speedup Type","Estimated Speedup"')
KERNELS = {"r1-naive": ["scores", "softmax_pv"],
           "r2-fa1": ["vectorized_elementwise_kernel<FillFunctor>"] * 3 + ["fa1_fwd"], "r3-fa2": ["fa2_fwd"],
           "r4-causal-split": ["split_fwd"], "r5-exp2": ["split_fwd"],
           "r6-tma-pipelined": ["tma_fwd"], "r7-warp-specialized": ["ws_fwd"], "r8-pingpong": ["pingpong_fwd"]}


def _rows(kid: int, name: str, grid: str, metrics: dict[str, float]) -> list[str]:
    return [f'"{kid}","1","python3","synthetic","{name}","1","7","(256, 1, 1)","{grid}","0","9.0",'
            f'"GPU Speed Of Light Throughput","{metric}","","{value:,.1f}","","","","",""'
            for metric, value in metrics.items()]


def launch_counters(launch: dict[str, Any], overrides: dict[str, dict[str, float]] | None = None) -> dict[str, float]:
    """The launch's synthetic totals: dram_read, dram_write, l2 (bytes), from the tests' own models."""
    import flashattn_io as tc

    from pytest_anatomy.theory import attention as at

    shape = tc.shape_of(launch)
    config = GLUON_CONFIGS.get(launch["rung"], CONFIG)
    tiling = at.Tiling(config["BLOCK_M"], config["BLOCK_N"])
    if tc.fits_one_head(launch, 60 * 2**20):
        absorbed = at.l2_absorbs(shape, tiling, 60 * 2**20, 132)
        reads = tc.expected_reads(launch["rung"], shape, absorbed)[0].value * FACTORS["reads"]
    else:
        reads = at.streamed_kv_reads(shape, tiling, 132).value * FACTORS["streamed"]
    writes = tc.expected_writes(launch["rung"], shape)[0].value * FACTORS["writes"]
    l2 = at.tiled_bytes(shape, tiling).value * sum(tc.l2_band(launch)[0]) / 2
    out = {"dram_read": reads, "dram_write": writes, "l2": l2}
    out.update((overrides or {}).get(tc.name(launch), {}))
    return out


def build(overrides: dict[str, dict[str, float]] | None = None) -> tuple[str, dict[str, Any]]:
    """(the CSV text, the manifest) for every launch of registry.profile_launches()."""
    sys.path.insert(0, str(HERE))
    from pytest_anatomy.kernels.flashattn import registry

    lines = ["==PROF== Connected to process 1 (synthetic)", HEADER]
    entries, kid = [], 0
    for i, launch in enumerate(registry.profile_launches()):
        grid = i + 1
        lines += _rows(kid, "anatomy_marker", f"({grid}, 1, 1)", {"Duration": 2_000})
        kid += 1
        total = launch_counters(launch, overrides)
        names = KERNELS[launch["rung"]]
        gluon = registry.rung(launch["rung"]).dialect == "gluon"
        occupancy = GLUON_OCCUPANCY_PCT if gluon else OCCUPANCY_PCT
        for name in names:
            share = 1 / len(names)
            lines += _rows(kid, name, "(32, 128, 1)", {
                "Duration": 1_000_000, "dram__bytes_read.sum": total["dram_read"] * share,
                "dram__bytes_write.sum": total["dram_write"] * share, "lts__t_bytes.sum": total["l2"] * share,
                "Theoretical Occupancy": occupancy, "Achieved Occupancy": occupancy})
            kid += 1
        label = registry.profile_label(launch["batch"], launch["heads"], launch["n"], launch["head_dim"],
                                       launch["causal"])
        entries.append({"marker_grid": grid, "ladder": "fa2", "rung": launch["rung"], "shape": label, "dtype": "bf16",
                        "suite": "flashattn", "settings": {k: v for k, v in launch.items() if k != "rung"},
                        "config": GLUON_CONFIGS.get(launch["rung"], GLUON_CONFIG) if gluon else CONFIG,
                        "all_written": True})
    manifest = {"provenance": {"date_utc": DATE, "host": "synthetic", "note": "SYNTHETIC: written by "
                               "tests_flashattn/flashattn_synthetic_ncu.py, never measured"}, "launches": entries}
    return "\n".join(lines) + "\n", manifest


def write(folder: Path, overrides: dict[str, dict[str, float]] | None = None) -> tuple[Path, Path]:
    text, manifest = build(overrides)
    folder.mkdir(parents=True, exist_ok=True)
    report, man = folder / REPORT.name, folder / MANIFEST.name
    report.write_text(text, encoding="utf-8")
    man.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return report, man


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))  # this checkout's pytest_anatomy, not an installed one
    print(*write(DATA), sep="\n")
