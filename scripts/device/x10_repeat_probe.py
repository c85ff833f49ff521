#!/usr/bin/env python3
"""Why did the 2026-12-05 02:56 kernels call stall at the vocabulary softmax timing? One probe, each step under a
watchdog that ends the process (exit 2, naming the step) if the GPU does not finish within STEP_TIMEOUT_S.

x10's checks (kernels_plan.py: the preflight child and the parent) launch it once per freshly zeroed workspace; the
timing protocol launches it 33+ times on one workspace, which only the CPU emulator had run (test_kernels_x10: twice
on one workspace). So the repeated launch on the GPU is the first suspect; x6 at the same shape (timed in 30 earlier
sessions) is the control.

Expected, written before the run (2026-12-05 03:40): every step finishes. After k launches of x10 at 128 x 152,064
every row counter reads k x T = 132 k (each launch adds T: one atom.inc per tile, no wrap below T x 65,536), every
output is correct (rel. error <= the fp32 tolerance), and the flushed median is near x10's pre-registered 0.041 ms
(alternatives 41.79 us, 54 us). If launch 2 is the one that hangs while launch 1's counters read 132 each, the
repeat protocol has a GPU-only flaw the emulator cannot show; if x6 hangs too, the suspect is the timing harness.

Usage on the device:  PYTHONUNBUFFERED=1 python3 scripts/device/x10_repeat_probe.py 2>&1 | tee $OUT/x10_probe.log
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

STEP_TIMEOUT_S = 20.0
_step = {"name": "start", "deadline": float("inf")}


def _watchdog() -> None:
    while True:
        time.sleep(0.2)
        if time.monotonic() > _step["deadline"]:
            print(f"HANG: step {_step['name']!r} did not finish within {STEP_TIMEOUT_S:.0f} s", flush=True)
            os._exit(2)


def step(name: str) -> None:
    _step["name"], _step["deadline"] = name, time.monotonic() + STEP_TIMEOUT_S
    print(f"[{time.strftime('%H:%M:%S')}] step {name}", flush=True)


def main() -> int:
    import torch

    from pytest_anatomy.kernels import fused
    from pytest_anatomy.kernels.ladders import variant
    from pytest_anatomy.kernels.reference import TOLERANCE
    from pytest_anatomy.measure.kernel_runner import KernelRunner

    threading.Thread(target=_watchdog, daemon=True).start()
    shape = dict(fused.VOCAB_SHAPE)
    runner = KernelRunner()
    x10, x6 = variant("softmax", "x10-grid-tiles"), variant("softmax", "x6-cluster-row")
    step("inputs and prepare")
    inputs = runner.inputs("softmax", shape, "fp32", seed=7)
    ref = torch.softmax(inputs["x"].double(), dim=-1)
    run10 = runner.prepare(x10, shape, inputs)
    run6 = runner.prepare(x6, shape, inputs)
    count = run10.workspace["count"].view(torch.int32)
    torch.cuda.synchronize()

    def report(label: str, out: torch.Tensor, launches: int) -> None:
        c = count.cpu().tolist()
        err = float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))
        print(f"  {label}: counters min {min(c)} max {max(c)} (expected {launches * fused.grid_tiles(shape['N'])}),"
              f" rel. error {err:.2e} (tolerance {TOLERANCE['fp32']:.0e})", flush=True)

    for k in (1, 2):
        step(f"x10 launch {k}")
        out = run10()
        torch.cuda.synchronize()
        report(f"after launch {k}", out, k)
    step("x10 three launches back to back")
    for _ in range(3):
        out = run10()
    torch.cuda.synchronize()
    report("after launch 5", out, 5)
    for name, fn in (("x6", run6), ("x10", run10)):
        step(f"{name} timed (5 runs, L2 flushed)")
        t = runner.time(fn, runs=5, warmup=1)
        print(f"  {name}: median {t['ms_median']:.4f} ms over {t['runs']} runs", flush=True)
    report("after the timing", run10(), 5 + 6 + 1)
    torch.cuda.synchronize()
    step("x10 timed as the plan does (30 runs, warm-up 3)")
    t = runner.time(run10, runs=30, warmup=3)
    print(f"  x10: median {t['ms_median']:.4f} ms over {t['runs']} runs", flush=True)
    _step["deadline"] = float("inf")
    print("done: every step finished", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
