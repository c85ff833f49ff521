#!/usr/bin/env python3
"""Launch every kernel rung once at its timing shape, for Nsight Compute to read counters.

The timings come from kernels_plan.py; this run answers *why* a rung takes the time it does:
DRAM and L2 bytes, achieved occupancy, FMA-pipe use and the warp stall reasons, per kernel.
Each rung's launches are preceded by a one-thread marker kernel whose grid is (index + 1), so
the report's rows map to rungs without relying on launch counts of torch's own kernels; the
manifest ($OUT/profile-manifest.json) lists index -> rung.

On the device: `bash scripts/device/kernels_profile.sh` runs this script under ncu (its one
command line is the reference: --clock-control none, as docs/FACTS.md M1 asks, caches flushed before
every replayed kernel, the sections and metrics the importer reads, a timeout).

Here: `python3 scripts/device/kernels_profile.py --dry-run` lists the launches. `--only` profiles a
part of the plan: `--only sgemm.s18-fp32-small-m-splitk.32x18944x3584,sgemm.s0-cublas.32x18944x3584`
(LADDER, LADDER.RUNG or LADDER.RUNG.SHAPE; a shape among those the kernels plan times, e.g. sgemm's FFN
shapes), and `bash scripts/device/kernels_profile.sh --only ...` passes it on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pytest_anatomy.kernels import fused, sgemm  # noqa: E402
from pytest_anatomy.kernels.ladders import LADDERS, TIMING_SHAPES  # noqa: E402
from pytest_anatomy.kernels.registry import DeviceFacts, RungRefused, shape_label  # noqa: E402

MARKER_SOURCE = 'extern "C" __global__ void anatomy_marker(int tag) { if (tag < 0) asm volatile("trap;"); }'


def ladder_shapes(ladder: str) -> list[dict[str, int]]:
    """The shapes the kernels plan times `ladder` at (kernels_plan.py's main and extra shapes): its timing shape
    first, the softmax vocab row, sgemm's FFN shapes."""
    extra = {"softmax": [fused.VOCAB_SHAPE], "sgemm": list(sgemm.EXTRA_SHAPES)}.get(ladder, [])
    return [TIMING_SHAPES[ladder], *extra]


def _default_shapes(ladder: str) -> list[dict[str, int]]:
    """Every rung at its timing shape, the softmax rungs also at the vocab row (the whole plan's shapes)."""
    return [TIMING_SHAPES[ladder]] + ([fused.VOCAB_SHAPE] if ladder == "softmax" else [])


def _selection(only: list[str]) -> dict[tuple[str, str | None], list[dict[str, int]] | None]:
    """{(ladder, rung or None): shapes or None (the default ones)} from --only's LADDER[.RUNG[.SHAPE]] ids; SystemExit
    with one line naming the unknown part and the choices."""
    picked: dict[tuple[str, str | None], list[dict[str, int]] | None] = {}
    for item in only:
        ladder, _, rest = item.partition(".")
        rung, _, label = rest.partition(".")
        variants = [*LADDERS.get(ladder, ()), *([sgemm.BF16_BASELINE] if ladder == "sgemm" else [])]
        if not variants:
            raise SystemExit(f"--only {item}: no ladder {ladder!r} (ladders: {', '.join(LADDERS)})")
        if rung and rung not in {v.id for v in variants}:
            raise SystemExit(f"--only {item}: no rung {rung!r} in {ladder} (rungs: {', '.join(v.id for v in variants)})")
        shapes = {shape_label(sh): sh for sh in ladder_shapes(ladder)}
        if label and label not in shapes:
            raise SystemExit(f"--only {item}: {ladder} is not timed at {label} (shapes: {', '.join(shapes)})")
        key = (ladder, rung or None)
        before = picked.get(key, [])
        picked[key] = None if not label or before is None else [*before, shapes[label]]
    return picked


def plan(only: list[str] | None = None) -> list[tuple[str, Any, dict[str, int]]]:
    """(ladder, variant, shape) in launch order: every rung at its timing shape, the softmax rungs also at the vocab
    row, and cuBLAS bf16 beside the tensor-core rung; with `only`, the rungs and shapes it names (_selection)."""
    picked = _selection(only) if only else None

    def wanted(ladder: str, rung: str) -> list[dict[str, int]]:
        """The shapes to profile `rung` at: the default ones, or those `only` names for its ladder or for it."""
        if picked is None:
            return _default_shapes(ladder)
        chosen = [picked[k] for k in ((ladder, None), (ladder, rung)) if k in picked]
        return [s for c in chosen for s in (_default_shapes(ladder) if c is None else c)]

    out = []
    for ladder, variants in LADDERS.items():
        extra = [sgemm.BF16_BASELINE] if ladder == "sgemm" else []
        for shape in ladder_shapes(ladder):
            for v in [*variants, *extra]:
                if shape not in wanted(ladder, v.id):
                    continue
                try:
                    v.check(shape)
                except RungRefused:
                    continue
                out.append((ladder, v, shape))
    return out


def manifest_of(launches: list[tuple[str, Any, dict[str, int]]]) -> list[dict[str, Any]]:
    """The manifest's launches (import-ncu maps the report's rows to them by marker grid): index + 1 -> rung, shape,
    dtype and the kernels it launches (named at the H200's 132 SMs: a split's kernel count depends on them)."""
    return [{"marker_grid": i + 1, "ladder": lad, "rung": v.id, "shape": shape_label(s), "dtype": v.dtype,
             "kernels": [c.kernel for c in v.calls(s, DeviceFacts(sm_count=132))] if not v.is_baseline
             else [f"torch: {v.baseline}"]}
            for i, (lad, v, s) in enumerate(launches)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--manifest", type=Path, default=Path("profile-manifest.json"))
    p.add_argument("--dry-run", action="store_true", help="list the launches; no GPU")
    p.add_argument("--only", default=None, metavar="ID[,ID...]",
                   help="profile only these: LADDER, LADDER.RUNG or LADDER.RUNG.SHAPE (a shape the kernels plan times "
                        "the ladder at, e.g. sgemm.s18-fp32-small-m-splitk.32x18944x3584); default: every rung at its "
                        "timing shape")
    args = p.parse_args(argv)
    launches = plan(args.only.split(",") if args.only else None)
    if not launches:
        raise SystemExit(f"--only {args.only}: every rung it names refuses its shape; nothing to profile")
    manifest = manifest_of(launches)
    if args.dry_run:
        for m in manifest:
            print(f"{m['marker_grid']:3d} {m['ladder']:9s} {m['rung']:18s} {m['shape']:16s} {', '.join(m['kernels'])}")
        return 0
    args.manifest.parent.mkdir(parents=True, exist_ok=True)
    import platform
    import shutil
    import subprocess
    from datetime import datetime, timezone

    def _out(cmd: list[str]) -> str | None:
        exe = shutil.which(cmd[0])
        if exe is None:
            return None
        return subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, check=False).stdout.strip() or None

    provenance = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
                  "command": " ".join([sys.executable, *sys.argv]), "ncu": (_out(["ncu", "--version"]) or "").splitlines()[-1:],
                  "nvidia_smi": _out(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                                      "--format=csv,noheader"])}
    args.manifest.write_text(json.dumps({"provenance": provenance, "launches": manifest}, indent=1) + "\n")

    import numpy as np
    from cuda.core import LaunchConfig, Program, ProgramOptions, launch

    from pytest_anatomy.measure.clock_probe import torch_current_stream
    from pytest_anatomy.measure.kernel_runner import KernelRunner

    runner = KernelRunner()
    marker = Program(MARKER_SOURCE, "c++", ProgramOptions(arch=runner.arch, name="marker.cu")).compile(
        "cubin").get_kernel("anatomy_marker")
    inputs: dict[tuple[str, str, str], Any] = {}
    for i, (lad, v, shape) in enumerate(launches):
        key = (lad, shape_label(shape), v.dtype)
        if key not in inputs:
            inputs[key] = runner.inputs(lad, shape, v.dtype, seed=7)
        fn = runner.prepare(v, shape, inputs[key])
        launch(torch_current_stream(), LaunchConfig(grid=(i + 1, 1, 1), block=(1, 1, 1)), marker, np.int32(i))
        fn()
        runner.torch.cuda.synchronize()
        print(f"[profile] {i + 1:3d} {lad}.{v.id} {shape_label(shape)}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
