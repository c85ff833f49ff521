#!/usr/bin/env python3
"""One device call (~9 min budget): every kernel ladder on the GPU -- correctness first, then timing.

Parts, in priority order; $OUT/kernels.json (schema pytest-anatomy/device-batch/v1) is rewritten
after every part, so a killed run keeps what it measured:
  ceilings            read bandwidth (torch.sum), copy bandwidth (read + write), clocks
  compile             NVRTC for sm_XY of every .cu file: ptxas -v log, registers, occupancy;
                      cubins packed as $OUT/cubins.tar.xz and, where cuobjdump exists, SASS counts
  check.<ladder>      every rung on fresh random inputs at the odd correctness shapes and at the
                      timing shape, output poisoned with NaN, vs float64 (refusals recorded); a rung that
                      refuses K % 8 != 0 (TMA, s14) also at K-aligned odd shapes and the 32-row FFN shape, and a
                      rung in PREFLIGHT (sgemm's and fused's CHILD_PREFLIGHT) first in a child process
                      (--preflight RUNG): a hang or a
                      fault there is recorded as that rung's error and cannot take this process's CUDA context
  <ladder>.<rung>.<shape>   timing: rung 0 first, every rung (block A), every rung again
                      (block B), rung 0 again; medians of CUDA-event runs after warm-up, L2
                      flushed (512 MB read) before each run
  autotune            issue 17's fp32 autotuner, per family of sgemm.TILE_FAMILIES (s9's kernel at other
                      block tiles; s13's at other block tiles and pipeline depths): every candidate checked
                      at the odd shapes, then timed beside cuBLAS fp32 in two blocks at 4096^3 and the FFN
                      shapes; sgemm.<candidate>.<shape> per candidate and autotune.sgemm.<family>.<shape>
                      with the choice (the fastest correct candidate)
Shapes: SGEMM 4096^3 (then the Qwen2.5-7B FFN shapes if time is left), reduction 2^28 floats,
RMSNorm 8192 x 3584, softmax 8192 x 2048 and 128 x 152,064 (register rungs refuse it).

On the device:   PYTHONUNBUFFERED=1 python3 scripts/device/kernels_plan.py --out-dir $OUT 2>&1 | tee $OUT/kernels.log
Anywhere:        python3 scripts/device/kernels_plan.py --dry-run
Then here:       pytest-anatomy import-device <files>/kernels.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pytest_anatomy.kernels import autotune, fused, reduction, sgemm
from pytest_anatomy.kernels.ladders import LADDERS, TIMING_SHAPES
from pytest_anatomy.kernels.registry import DeviceFacts, RungRefused, Variant

SCHEMA = "pytest-anatomy/device-batch/v1"
T0 = time.monotonic()
CORRECTNESS = {"sgemm": sgemm.CORRECTNESS_SHAPES, "reduction": reduction.CORRECTNESS_SHAPES,
               "rmsnorm": fused.CORRECTNESS_SHAPES, "softmax": fused.CORRECTNESS_SHAPES}
MAIN_SHAPES: list[tuple[str, dict[str, int]]] = [
    ("sgemm", sgemm.TIMING_SHAPE), ("reduction", reduction.TIMING_SHAPE), ("rmsnorm", fused.RMSNORM_TIMING_SHAPE),
    ("softmax", fused.SOFTMAX_TIMING_SHAPE), ("softmax", fused.VOCAB_SHAPE)]
EXTRA_SHAPES = [("sgemm", s) for s in sgemm.EXTRA_SHAPES]


def log(msg: str) -> None:
    print(f"[kernels {time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def shape_label(shape: dict[str, int]) -> str:
    if "n" in shape:
        return f"n{shape['n']}"
    if "K" in shape:
        return f"{shape['M']}x{shape['N']}x{shape['K']}"
    return f"{shape['M']}x{shape['N']}"


def baseline_for(v: Variant) -> Variant:
    if v.ladder == "sgemm" and v.dtype == "bf16":
        return sgemm.BF16_BASELINE
    return LADDERS[v.ladder][0]


def nvidia_smi() -> dict[str, Any]:
    from pytest_anatomy.gpu_query import smi_query  # CUDA_VISIBLE_DEVICES-aware

    fields = "name,driver_version,pstate,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu"
    vals = smi_query(fields.split(","))
    if vals is None:
        return {"error": "nvidia-smi did not answer (absent, failed or timed out)"}
    summary: dict[str, Any] = dict(zip(fields.split(","), vals))
    summary["driver"] = summary.get("driver_version")
    summary["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    return {"summary": summary}


def versions() -> dict[str, Any]:
    from importlib import metadata

    out: dict[str, Any] = {}
    for pkg in ("torch", "cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc", "numpy"):
        try:
            out[pkg] = {"version": metadata.version(pkg)}
        except metadata.PackageNotFoundError:
            out[pkg] = {"version": None}
    return out


class Batch:
    def __init__(self, out_dir: Path, args: argparse.Namespace) -> None:
        self.path = out_dir / "kernels.json"
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=False).stdout.strip() or None
        self.doc: dict[str, Any] = {"schema": SCHEMA, "provenance": {
            "kind": "kernels", "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "host": socket.gethostname(), "command": " ".join([sys.executable, *sys.argv]),
            "python": platform.python_version(), "git_commit": commit, "budget_s": args.budget_s,
            "versions": versions(), "nvidia_smi": nvidia_smi()}, "runs": []}

    def add(self, run: dict[str, Any]) -> None:
        self.doc["runs"].append(run)
        self.write()

    def write(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.doc, indent=1, default=str) + "\n")
        os.replace(tmp, self.path)


def compile_all(runner: Any, out_dir: Path, facts: DeviceFacts) -> dict[str, Any]:
    # One archive, not a file per cubin: a device call returns at most 8 files from $OUT (26 cubins once
    # crowded out the profile's files on 2026-12-01).
    import tempfile

    cubins = Path(tempfile.mkdtemp(prefix="kernels-cubins-"))
    sources = sorted({s for vs in LADDERS.values() for v in vs if not v.is_baseline
                      for s in v.sources({**TIMING_SHAPES[v.ladder], "N": min(TIMING_SHAPES[v.ladder].get("N", 1), 8192)},
                                         facts)})
    result: dict[str, Any] = {"sources": {}}
    cuobjdump = shutil.which("cuobjdump")
    for src in sources:
        t = time.perf_counter()
        try:
            c = runner.compile(src)
        except Exception:  # noqa: BLE001 - one source's failure is its rungs' (their checks raise), not the plan's
            result["sources"][src] = {"status": "error", "error": traceback.format_exc()}
            log(f"compile {src} failed: {traceback.format_exc()[-300:]}")
            continue
        path = cubins / (src.replace("/", "__").replace(".cu", ".cubin"))
        path.write_bytes(c.cubin)
        entry: dict[str, Any] = {"nvrtc_log": c.log, "compile_s": time.perf_counter() - t, "cubin": path.name}
        if cuobjdump:
            from pytest_anatomy.kernels.compile import parse_sass

            sass = subprocess.run([cuobjdump, "--dump-sass", str(path)], capture_output=True, text=True, timeout=120, check=False)
            entry["sass_counts"] = {k: dict(v) for k, v in parse_sass(sass.stdout).items()}
        result["sources"][src] = entry
    result["cuobjdump"] = cuobjdump
    shutil.make_archive(str(out_dir / "cubins"), "xztar", root_dir=cubins)
    result["cubins_archive"] = "cubins.tar.xz"
    return result


def _guarded_check(runner: Any, v: Variant, shape: dict[str, int], seed: int) -> dict[str, Any]:
    """One correctness check; a rung whose compile or launch fails (a new kind of kernel: a cluster launch, a
    candidate's macros) is recorded as an error instead of ending the plan for every other rung."""
    try:
        return runner.check(v, shape, seed)
    except RungRefused:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded with its traceback; the plan goes on
        log(f"check {v.ladder}.{v.id} at {shape_label(shape)} raised {type(exc).__name__}: {str(exc)[:200]}")
        return {"shape": dict(shape), "seed": seed, "status": "error", "error": traceback.format_exc()}


RUNGS: set[str] = set()  # --rungs: only these rungs (and their baselines) are checked and timed; empty: every rung


def selected(variants: list[Variant]) -> list[Variant]:
    """The ladder's rungs --rungs asked for, with the baselines they are timed beside (all when --rungs is empty)."""
    if not RUNGS:
        return variants
    keep = [v for v in variants if v.id in RUNGS]
    bases = {baseline_for(v).id for v in keep}
    return [v for v in variants if v.id in RUNGS or v.id in bases]


def tuned_families() -> list[str]:
    """The autotuner families to run: every one, or with --rungs those whose kernel is a selected rung's."""
    sources = {v.source for v in sgemm.LADDER if v.id in RUNGS}
    return [f for f, (cands, _) in sgemm.TILE_FAMILIES.items() if not RUNGS or cands[0].source in sources]


# The rungs whose first launches run in a child process: the sgemm ladder's TMA pipeline and x8's mbarrier ring
# (sgemm.CHILD_PREFLIGHT), x10's grid-wide spin on L2 counters (fused.CHILD_PREFLIGHT).
PREFLIGHT = sgemm.CHILD_PREFLIGHT | fused.CHILD_PREFLIGHT
PREFLIGHT_TIMEOUT_S = 120.0  # the child needs ~20-40 s (torch, NVRTC, 7 checks); a hang costs this much device time


def check_shapes(ladder: str, v: Variant) -> list[dict[str, int]]:
    """The shapes a rung is checked at: the ladder's odd shapes and timing shape, and for a rung that refuses some K
    (its tensor maps' stride) the odd shapes with K rounded to its multiple and the 32-row FFN shape, and the shapes a
    rung names itself (Variant.check_shapes)."""
    extra = list(sgemm.K_ALIGNED_CORRECTNESS_SHAPES) if ladder == "sgemm" and v.k_multiple else []
    extra += [s for s in v.check_shapes if s not in extra]  # a rung's own (registry: s18's 32-row split)
    return list(CORRECTNESS[ladder]) + extra + [s for lad, s in MAIN_SHAPES if lad == ladder]


def preflight(v: Variant, run: Any = subprocess.run) -> str | None:
    """A new kind of kernel's first launches (PREFLIGHT) in a child process: its checks at every shape
    it is checked and timed at. None when the child finished; otherwise why not (a hang: the timeout; a fault or a
    raise: its exit status and output's tail), which the caller records as the rung's error."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--preflight", v.id]
    try:
        proc = run(cmd, capture_output=True, text=True, timeout=PREFLIGHT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"preflight of {v.id} ran past {PREFLIGHT_TIMEOUT_S:.0f} s (a hang?): not run in this process"
    if proc.returncode != 0:
        return f"preflight of {v.id} exited {proc.returncode}: {(proc.stdout + proc.stderr)[-3000:]}"
    return None


def preflight_child(rung: str) -> int:
    """--preflight RUNG: the rung's checks at its check shapes and the extra timing shapes, one JSON line; exit 0
    when every check ran (right or wrong: the parent records either), 1 when one raised."""
    from pytest_anatomy.measure.kernel_runner import KernelRunner

    v = next(x for lad in LADDERS.values() for x in lad if x.id == rung)
    runner = KernelRunner()
    shapes = check_shapes(v.ladder, v) + [s for lad, s in EXTRA_SHAPES if lad == v.ladder]
    out = []
    for j, shape in enumerate(shapes):
        try:
            out.append(runner.check(v, shape, 9000 + j))
        except RungRefused as exc:
            out.append({"shape": shape, "status": "refused", "reason": str(exc)})
    print(json.dumps({"rung": rung, "checks": out}, default=str), flush=True)
    return 0


def check_ladder(runner: Any, ladder: str, seed0: int, preflight_fn: Any = preflight) -> dict[str, Any]:
    out: dict[str, Any] = {}
    variants = selected(list(LADDERS[ladder]) + ([sgemm.BF16_BASELINE] if ladder == "sgemm" else []))
    for i, v in enumerate(variants):
        shapes = check_shapes(ladder, v)
        why = preflight_fn(v) if v.id in PREFLIGHT else None
        if why is not None:
            log(f"check {ladder}.{v.id}: {why[:300]}")
            out[v.id] = [{"shape": dict(s), "status": "error", "error": why} for s in shapes]
            continue
        out[v.id] = [_guarded_check(runner, v, s, seed0 + 100 * i + j) for j, s in enumerate(shapes)]
        bad = [c for c in out[v.id] if c["status"] == "wrong"]
        log(f"check {ladder}.{v.id}: " + ("ok" if not bad else f"WRONG at {[c['shape'] for c in bad]}"))
    return out


def time_shape(runner: Any, batch: Batch, ladder: str, shape: dict[str, int], checks: dict[str, Any],
               resources_of: Any, runs: int, deadline: float) -> None:
    """Rung 0, every rung (A), every rung (B), rung 0 again; one run entry per rung."""
    variants = list(LADDERS[ladder])
    bases = {v.id: baseline_for(v) for v in variants}
    order = selected([v for v in variants] + ([sgemm.BF16_BASELINE] if ladder == "sgemm" else []))
    inputs: dict[str, Any] = {}
    fns: dict[str, Any] = {}
    refused: dict[str, str] = {}
    errored: dict[str, str] = {}
    for v in order:
        try:
            v.check(shape)
        except RungRefused as exc:
            refused[v.id] = str(exc)
            continue
        key = v.dtype
        if key not in inputs:
            inputs[key] = runner.inputs(ladder, shape, v.dtype, seed=7)
        if any(c.get("status") == "error" for c in checks.get(v.id) or []):
            errored[v.id] = f"not timed: its correctness check raised (check.{ladder} has the traceback)"
            continue
        fns[v.id] = runner.prepare(v, shape, inputs[key])
    timings: dict[str, list[dict[str, Any]]] = {k: [] for k in fns}
    for block in ("A", "B"):
        for vid, fn in fns.items():
            if time.monotonic() > deadline:
                log(f"budget reached during {ladder} {shape_label(shape)} block {block}")
                break
            timings[vid].append(runner.time(fn, runs=runs, warmup=3))
    label = shape_label(shape)
    for v in order:
        rid = f"{ladder}.{v.id}.{label}"
        if v.id in errored:
            batch.add({"id": rid, "settings": {"ladder": ladder, "rung": v.id, "shape": shape},
                       "result": {"kind": "kernel-timing", "status": "error", "reason": errored[v.id],
                                  "ladder": ladder, "rung": v.id, "shape": shape, "dtype": v.dtype}})
            continue
        if v.id in refused:
            batch.add({"id": rid, "settings": {"ladder": ladder, "rung": v.id, "shape": shape},
                       "result": {"kind": "kernel-timing", "status": "refused", "reason": refused[v.id],
                                  "ladder": ladder, "rung": v.id, "shape": shape, "dtype": v.dtype}})
            continue
        t = timings.get(v.id) or []
        if not t:
            continue
        base = bases.get(v.id, v)
        bt = timings.get(base.id) or []
        result = {"kind": "kernel-timing", "status": "ok", "ladder": ladder, "rung": v.id, "shape": shape,
                  "dtype": v.dtype, "ms_median": t[0]["ms_median"],
                  "ms_median_repeat": t[1]["ms_median"] if len(t) > 1 else None,
                  "baseline_rung": base.id, "baseline_ms_median": bt[0]["ms_median"] if bt else None,
                  "baseline_ms_median_repeat": bt[1]["ms_median"] if len(bt) > 1 else None,
                  "timings": t, "correctness": checks.get(v.id), "resources": None if v.is_baseline
                  else resources_of(v, shape), "gpu": runner.gpu_name, "sm_count": runner.facts.sm_count}
        batch.add({"id": rid, "settings": {"ladder": ladder, "rung": v.id, "shape": shape, "runs": runs},
                   "result": result})
        rep = f" / {result['ms_median_repeat']:.4f}" if result["ms_median_repeat"] else ""
        log(f"{rid}: {result['ms_median']:.4f}{rep} ms (baseline {result['baseline_ms_median']})")


def autotune_sgemm(runner: Any, batch: Batch, runs: int, deadline: float, family: str = "s9-tile") -> None:
    """Check every candidate at the odd correctness shapes, then time the correct ones and cuBLAS fp32 in two
    blocks (A: each in turn, B: again) per shape; the choice is the smallest mean of a candidate's two
    block medians. One kernel-timing run per candidate and shape (the ladder's format) and one choice run per
    family (sgemm.TILE_FAMILIES: s9's block tiles, s13's block tiles and depths)."""
    base = sgemm.LADDER[0]
    cands, table = sgemm.TILE_FAMILIES[family]
    checks = {v.id: [_guarded_check(runner, v, s, 5000 + 100 * i + j) for j, s in enumerate(CORRECTNESS["sgemm"])]
              for i, v in enumerate(cands)}
    correct = [v for v in cands if not any(c["status"] in ("wrong", "error") for c in checks[v.id])]
    log(f"autotune {family}: {len(correct)} of {len(cands)} candidates correct")
    for shape in sgemm.AUTOTUNE_SHAPES:
        if time.monotonic() > deadline:
            log(f"autotune: budget reached before {shape_label(shape)}")
            return
        label = shape_label(shape)
        inputs = runner.inputs("sgemm", shape, "fp32", seed=7)
        fns = {v.id: runner.prepare(v, shape, inputs) for v in [base, *correct]}
        timings: dict[str, list[dict[str, Any]]] = {k: [] for k in fns}
        for _block in ("A", "B"):
            for vid, fn in fns.items():
                if time.monotonic() < deadline:
                    timings[vid].append(runner.time(fn, runs=runs, warmup=3))
        bt = timings[base.id]
        mean_ms: dict[str, float | None] = {}
        for v in cands:
            t = timings.get(v.id) or []
            mean_ms[v.id] = sum(x["ms_median"] for x in t) / len(t) if len(t) == 2 else None
            if not t:
                continue
            batch.add({"id": f"sgemm.{v.id}.{label}", "settings": {"ladder": "sgemm", "rung": v.id, "shape": shape,
                                                                   "runs": runs, "defines": v.calls(shape, runner.facts)[0].defines},
                       "result": {"kind": "kernel-timing", "status": "ok", "ladder": "sgemm", "rung": v.id,
                                  "shape": shape, "dtype": "fp32", "ms_median": t[0]["ms_median"],
                                  "ms_median_repeat": t[1]["ms_median"] if len(t) > 1 else None,
                                  "baseline_rung": base.id, "baseline_ms_median": bt[0]["ms_median"] if bt else None,
                                  "baseline_ms_median_repeat": bt[1]["ms_median"] if len(bt) > 1 else None,
                                  "timings": t, "correctness": checks[v.id], "resources": runner.resources(v, shape),
                                  "gpu": runner.gpu_name, "sm_count": runner.facts.sm_count}})
        if not any(mean_ms.values()):
            continue
        choice = autotune.fastest(mean_ms)
        batch.add({"id": f"autotune.sgemm.{family}.{label}", "settings": {"shape": shape, "runs": runs,
                                                                           "space": [v.id for v in cands]},
                   "result": {"kind": "autotune", "ladder": "sgemm", "shape": shape, "choice": choice,
                              "candidates_ms": mean_ms, "baseline_rung": base.id,
                              "baseline_ms": sum(x["ms_median"] for x in bt) / len(bt) if bt else None,
                              "predicted_ms": {v.id: table.get((v.id, label)) for v in cands},
                              "rejected": {k: c for k, c in checks.items()
                                           if any(x["status"] in ("wrong", "error") for x in c)},
                              "gpu": runner.gpu_name}})
        log(f"autotune {family} {label}: {choice} {mean_ms[choice]:.4f} ms (cuBLAS {bt[0]['ms_median'] if bt else None})")


def dry_run(ladders: list[str], facts: DeviceFacts, no_autotune: bool) -> int:
    """--dry-run: every selected rung's launches at its check shapes (and the autotuner's candidates), printed."""
    for lad in ladders:
        for v in selected(list(LADDERS[lad])):
            for shape in check_shapes(lad, v):
                try:
                    calls = v.calls(shape, facts)
                    what = ", ".join(f"{c.kernel}<<<{c.launch.grid},{c.launch.block}>>>"
                                     + (f" cluster {c.launch.cluster}" if c.launch.cluster > 1 else "")
                                     + (" cooperative" if c.launch.cooperative else "")
                                     for c in calls) or v.baseline
                except RungRefused as exc:
                    what = f"REFUSED ({str(exc)[:60]}...)"
                print(f"{lad:9s} {v.id:18s} {shape_label(shape):16s} {what}")
    for cands, table in ([sgemm.TILE_FAMILIES[f] for f in tuned_families()]
                         if "sgemm" in ladders and not no_autotune else ()):
        for v in cands:
            for shape in sgemm.AUTOTUNE_SHAPES:
                (c,) = v.calls(shape, facts)
                pred = table.get((v.id, shape_label(shape)))
                print(f"autotune  {v.id:22s} {shape_label(shape):16s} {c.kernel}<<<{c.launch.grid},{c.launch.block}>>> "
                      f"-D {' '.join(f'{k}={x}' for k, x in c.defines)}  predicted {pred} ms")
    print(f"dry run: {sum(len(LADDERS[x]) for x in ladders)} rungs; nothing measured")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default=os.environ.get("OUT", "out"))
    p.add_argument("--budget-s", type=float, default=520.0)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--ladders", default="sgemm,reduction,rmsnorm,softmax")
    p.add_argument("--dry-run", action="store_true", help="print the plan; import no torch, touch no GPU")
    p.add_argument("--rungs", default="", help="comma-separated rung ids: check and time only these (beside their "
                   "baselines), e.g. s13-fp32-multistage; the autotuner runs unless --no-autotune")
    p.add_argument("--no-autotune", action="store_true", help="skip the fp32 tile autotuners (~30 s each family)")
    p.add_argument("--preflight", default="", help=argparse.SUPPRESS)  # the child process of preflight()
    args = p.parse_args(argv)
    if args.preflight:
        return preflight_child(args.preflight)
    ladders = [x for x in args.ladders.split(",") if x]
    RUNGS.update(x for x in args.rungs.split(",") if x)
    unknown = RUNGS - {v.id for lad in ladders for v in LADDERS[lad]}
    if unknown:
        p.error(f"--rungs: no rung {sorted(unknown)} in ladders {ladders}")
    facts = DeviceFacts(sm_count=132)
    if args.dry_run:
        return dry_run(ladders, facts, args.no_autotune)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    deadline = T0 + args.budget_s
    batch = Batch(out_dir, args)
    from pytest_anatomy.gpu_query import nvidia_smi_snapshot
    from pytest_anatomy.measure import ceilings
    from pytest_anatomy.measure.kernel_runner import KernelRunner

    runner = KernelRunner()
    facts = runner.facts
    cl = {"facts": {"name": runner.gpu_name, "sm_count": facts.sm_count, "arch": runner.arch},
          "read_bandwidth": ceilings.read_bandwidth(2 * 1024**3, 20, 3),
          "copy_bandwidth": ceilings.copy_bandwidth(2 * 1024**3, 20, 3), "clocks": nvidia_smi_snapshot()}
    batch.add({"id": "kernels-ceilings", "settings": {"buffer_gib": 2, "runs": 20}, "result": {"kind": "ceilings", **cl}})
    log(f"read {cl['read_bandwidth']['value'] / 1e12:.3f} TB/s, copy {cl['copy_bandwidth']['value'] / 1e12:.3f} TB/s")
    try:
        comp = compile_all(runner, out_dir, facts)
        batch.add({"id": "kernels-compile", "settings": {"arch": runner.arch}, "result": {"kind": "compile", **comp}})
    except Exception as exc:  # noqa: BLE001 - any compile error voids what follows: record it, stop
        batch.add({"id": "kernels-compile", "settings": {}, "result": {"kind": "compile", "status": "error",
                                                                       "error": traceback.format_exc()}})
        log(f"compile failed: {exc}")
        return 1
    checks: dict[str, Any] = {}
    for i, lad in enumerate(ladders):
        checks[lad] = check_ladder(runner, lad, 1000 * (i + 1))
        batch.add({"id": f"check.{lad}", "settings": {"shapes": list(CORRECTNESS[lad])},
                   "result": {"kind": "correctness", "checks": checks[lad]}})
    for lad, shape in MAIN_SHAPES + EXTRA_SHAPES:
        if lad not in ladders or time.monotonic() > deadline:
            continue
        try:
            time_shape(runner, batch, lad, shape, {k: v for k, v in checks[lad].items()},
                       runner.resources, args.runs, deadline)
        except Exception:  # noqa: BLE001 - one shape's failure must not lose the others
            batch.add({"id": f"error.{lad}.{shape_label(shape)}", "settings": {"shape": shape},
                       "result": {"kind": "error", "error": traceback.format_exc()}})
            log(traceback.format_exc())
    for family in (tuned_families() if "sgemm" in ladders and not args.no_autotune else ()):
        try:
            autotune_sgemm(runner, batch, args.runs, deadline, family)
        except Exception:  # noqa: BLE001 - the autotuner's failure must not lose the ladders' runs
            batch.add({"id": f"error.autotune.{family}", "settings": {},
                       "result": {"kind": "error", "error": traceback.format_exc()}})
            log(traceback.format_exc())
    batch.doc["provenance"]["nvidia_smi_end"] = nvidia_smi()
    batch.doc["provenance"]["wall_s"] = time.monotonic() - T0
    batch.write()
    log(f"done: {len(batch.doc['runs'])} runs in {batch.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
