#!/usr/bin/env python3
"""Launch every FlashAttention rung once, for Nsight Compute to count its DRAM and L2 bytes.

The timings come from the live suite (tests_flashattn); this run answers whether the bytes the
theory prices are the bytes that moved (tests_flashattn/test_flashattn_counters.py reconciles
them). Launches (registry.profile_launches): every rung (the Gluon rungs r7 and r8 since 2026-12-04) at
the target shape B=4 H=32 N=4096 D=128 bf16, full and causal; the best rung at B=1 H=16 N=32k (the
sweep's shape: 2 heads' K/V in flight, 32 MiB, more than the half of L2 the theory's criterion
allows) and at B=1 H=4 N=128k (one head's K/V, 64 MiB, more than the whole 60 MiB L2), full and
causal.

Only the launches themselves are profiled: the script runs under `ncu --profile-from-start off`
and opens the profiler (cudaProfilerStart) around each rung's one launch, after its inputs were
made and its Triton kernels compiled and autotuned (autotuning launches every config many
times: none of that is counted). Inside each window a one-program Triton kernel named
`anatomy_marker` with grid (index + 1) precedes the rung's kernels, so `pytest-anatomy
import-ncu` maps rows to launches as it does for the kernel ladders; the manifest lists
index -> rung, shape, the config the autotuner chose (its tiling decides the L2 count) and
whether every output element was written (outputs are poisoned with NaN first).

On the device: `bash scripts/device/flashattn_profile.sh` (its ncu line is the reference); `bash
scripts/device/flashattn_profile.sh --rungs r8` profiles one rung's launches alone (r8's two, numbers 15 and 16 of the
full list of 20, as the manifest keeps them; r7's are 13 and 14). Here: `python3
scripts/device/flashattn_profile.py --dry-run [--rungs ...]` lists the launches.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pytest_anatomy.kernels.flashattn import registry  # noqa: E402

LADDER = "fa2"  # recordings ncu.fa2.<rung>.b{B}h{H}n{N}d{D}.{full|causal} in results/<gpu>/flashattn/
SUITE = "flashattn"


def manifest_entries() -> list[dict[str, Any]]:
    out = []
    for i, launch in enumerate(registry.profile_launches()):
        label = registry.profile_label(launch["batch"], launch["heads"], launch["n"], launch["head_dim"],
                                       launch["causal"])
        out.append({"marker_grid": i + 1, "ladder": LADDER, "rung": launch["rung"], "shape": label, "dtype": "bf16",
                    "suite": SUITE, "settings": {k: v for k, v in launch.items() if k != "rung"}})
    return out


def select_rungs(spec: str) -> set[str]:
    """The rung ids named in a comma-separated list: each an id, or an id's first part (r7 -> r7-warp-specialized)."""
    ids = [r.id for r in registry.PROFILED]
    out = set()
    for token in (t.strip() for t in spec.split(",") if t.strip()):
        hits = [i for i in ids if i == token or i.split("-")[0] == token]
        if not hits:
            raise KeyError(f"--rungs {token!r}: the profiled rungs are {', '.join(ids)}")
        out.update(hits)
    return out


def _marker_kernel() -> Any:
    """A Triton kernel named anatomy_marker that does nothing: ncu lists it, with its grid."""
    import triton

    @triton.jit
    def anatomy_marker(tag):
        pass

    return anatomy_marker


def _profile_one(m: dict[str, Any], marker: Any, tag: Any, *, device: str = "cuda",
                 config: dict[str, int] | None = None) -> dict[str, Any]:
    """Inputs, compile and autotune outside the profiler; then, inside one window, the marker and
    the rung's one launch with the tuned config. Returns the config and whether O and the LSE
    were written everywhere (both poisoned with NaN before the profiled launch).
    device="cpu" (a test, in Triton's interpreter): fp32 inputs, the given config, no profiler."""
    import importlib

    import torch

    from pytest_anatomy.kernels.flashattn import launch as fa_launch

    cuda = device == "cuda"
    s = m["settings"]
    r = registry.rung(m["rung"])
    g = torch.Generator(device=device).manual_seed(7)
    shape = (s["batch"], s["heads"], s["n"], s["head_dim"])
    dtype = torch.bfloat16 if cuda else torch.float32  # the interpreter has no bf16 dot
    q, k, v = (torch.randn(*shape, generator=g, device=device).to(dtype) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(shape[:3], dtype=torch.float32, device=device)
    mod = importlib.import_module(f"pytest_anatomy.kernels.flashattn.{r.kernel_module or r.module}")
    ws = mod.workspace_for(q) if hasattr(mod, "workspace_for") else None
    kw = {"causal": s["causal"], "sm_scale": 1.0 / math.sqrt(s["head_dim"]), "workspace": ws, "config": config}
    chosen = fa_launch.forward(r, q, k, v, o, lse, **kw)  # compile + autotune, not profiled
    o.fill_(float("nan"))
    lse.fill_(float("nan"))
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
    marker[(m["marker_grid"],)](tag)
    fa_launch.forward(r, q, k, v, o, lse, **kw)  # the autotuner's cache: the tuned config, launched once
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    written = bool(torch.isfinite(o).all()) and bool(torch.isfinite(lse).all())
    return {"config": chosen, "all_written": written}


def _provenance() -> dict[str, Any]:
    import platform
    import shutil
    import subprocess
    from datetime import datetime, timezone

    def out(cmd: list[str]) -> str | None:
        exe = shutil.which(cmd[0])
        if exe is None:
            return None
        return subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, check=False).stdout.strip() or None

    import torch
    import triton

    return {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
            "command": " ".join([sys.executable, *sys.argv]), "triton": triton.__version__, "torch": torch.__version__,
            "ncu": (out(["ncu", "--version"]) or "").splitlines()[-1:],
            "nvidia_smi": out(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                               "--format=csv,noheader"])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--manifest", type=Path, default=Path("flashattn-profile-manifest.json"))
    p.add_argument("--dry-run", action="store_true", help="list the launches; no GPU")
    p.add_argument("--only", default="", metavar="I,J,...",
                   help="profile only these launches (their numbers in --dry-run's list): a smoke test")
    p.add_argument("--rungs", default="", metavar="RUNG,...",
                   help="profile only these rungs' launches (ids, or their first part: r7 for r7-warp-specialized); "
                        "each keeps its number in the full list")
    args = p.parse_args(argv)
    entries = manifest_entries()
    if args.rungs:
        try:
            keep = select_rungs(args.rungs)
        except KeyError as e:
            p.error(str(e.args[0]))
        entries = [m for m in entries if m["rung"] in keep]
    if args.only:
        wanted = {int(x) for x in args.only.split(",") if x.strip()}
        unknown = wanted - {m["marker_grid"] for m in entries}
        if unknown:
            p.error(f"--only {sorted(unknown)}: launches are numbered 1..{len(entries)} (see --dry-run)")
        entries = [m for m in entries if m["marker_grid"] in wanted]
    if args.dry_run:
        for m in entries:
            print(f"{m['marker_grid']:3d} {m['ladder']}.{m['rung']:18s} {m['shape']}")
        return 0

    import torch

    marker = _marker_kernel()
    tag = torch.zeros(1, device="cuda")  # one argument, the same every call: compiled once, here
    marker[(1,)](tag)
    torch.cuda.synchronize()
    args.manifest.parent.mkdir(parents=True, exist_ok=True)
    provenance = _provenance()
    for m in entries:
        m.update(_profile_one(m, marker, tag))
        print(f"[profile] {m['marker_grid']:3d} {m['rung']} {m['shape']} config={m['config']} "
              f"written={m['all_written']}", file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
        # written after every launch: a run cut short by its timeout still leaves what it profiled
        done = [e for e in entries if "config" in e]
        args.manifest.write_text(json.dumps({"provenance": provenance, "launches": done}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
