"""The latency suite's live measurements: the device plan's program (scripts/device/latency_plan.py)
run once per session, in its own process, on this machine's GPU.

Why a subprocess: the plan's program is the one that measured every recorded H200 latency run, so
a live run and a recording are made by the same code (one engine for every part, ceilings in a
side process, the budget, the output schema). It keeps this pytest process CUDA-free, which vLLM's
engine workers and the capacity suite's engine starts need. Its stdout is streamed as progress.
The batch file it writes is mapped to recordings by the same importer as a device batch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

# The device program's engine settings a live plan leaves at their defaults (scripts/device/latency_plan.py
# parse_args; test_latency_plan_pool checks they agree) and its decode shape: what the predicted pools are for.
ENGINE_SETTINGS = {"gpu_memory_utilization": 0.9, "max_model_len": 33024, "max_num_seqs": 128,
                   "max_num_batched_tokens": 8192}
DECODE_SHAPE = (1024, 128)  # prompt, output tokens of every decode part


class LatencyPlanError(RuntimeError):
    """The plan's program failed or wrote no batch; the message has its exit code and log tail."""


@dataclass(frozen=True)
class LatencyLivePlan:
    """Which parts the live session measures (one engine; run ids '<model>.<kind>.<value>')."""

    model: str
    decode_batches: tuple[int, ...]
    prefill_lens: tuple[int, ...]
    closed: tuple[int, ...] = ()
    poisson_factors: tuple[float, ...] = ()
    overload: bool = False
    second_model: str | None = None  # decode + prefill of another model on a fresh engine
    # the second model's decode batches where its pool holds fewer than the main model's (None: the same)
    second_decode_batches: tuple[int, ...] | None = None
    kv_cache_gib: float | None = None
    budget_s: float = 540.0
    # tiny-hidden models whose decode steps are the engine's step overhead, each on a fresh engine
    # after the main model (scripts/device/latency_plan.py --overhead-models), at these batches
    overhead_models: tuple[str, ...] = ()
    overhead_batches: tuple[int, ...] = (1, 16, 64, 128)

    @property
    def kinds(self) -> list[str]:
        out = ["decode", "prefill"]
        out += ["closed"] if self.closed else []
        out += ["poisson"] if self.poisson_factors else []
        out += ["overload"] if self.overload else []
        return out

    def argv(self, out_dir: Path, config: Path) -> list[str]:
        args = ["--out-dir", str(out_dir), "--config", str(config), "--budget-s", f"{self.budget_s:g}",
                "--only", ",".join(self.kinds), "--second-model", self.second_model or "none",
                "--decode-batches", ",".join(map(str, self.decode_batches)),
                "--prefill-lens", ",".join(map(str, self.prefill_lens)),
                "--overhead-models", ",".join(self.overhead_models) or "none",
                "--overhead-batches", ",".join(map(str, self.overhead_batches))]
        if self.second_model and self.second_decode_batches is not None:
            args += ["--second-model-decode-batches", ",".join(map(str, self.second_decode_batches))]
        if self.closed:
            args += ["--closed", ",".join(map(str, self.closed))]
        if self.poisson_factors:
            args += ["--poisson-factors", ",".join(f"{f:g}" for f in self.poisson_factors)]
        if self.kv_cache_gib is not None:
            args += ["--kv-cache-gib", f"{self.kv_cache_gib:g}"]
        return args

    def estimate_s(self) -> float:
        """Wall time on an H200 (vLLM import and engine starts dominate) on the faster of the two machines
        the constants were fitted on, for progress lines and the live plan (estimate_high_s: the slower)."""
        return self._estimate(0)

    def estimate_high_s(self) -> float:
        """estimate_s on the slower machine (a CPU ~20% slower at imports and engine starts)."""
        return self._estimate(1)

    def _estimate(self, m: int) -> float:
        # FITTED on the plan's parts in the two full live sessions results/h200/live-runs/20261201T235925Z.full.log.xz
        # and 20261202T022605Z.full.log.xz, (faster, slower) machine where they differ: vLLM import 15/16 s, the
        # main engine's start with the side-process ceilings 57/69 s, decode parts ~1.5 s and prefill parts ~1.85 s
        # each (warm-up included), closed-loop runs 10.4 s, Poisson runs 8.2 s, the pinned-pool overload 23.9 s, the
        # second engine 46/62 s and its parts ~1.85 s each, the batch written ~1.9 s; then this process reads the
        # batch and keeps its files (keep_raw): 11.9/12.8 s at xz -9, ~3-4 s with keep_raw's fast filters.
        t = (15.0, 16.0)[m] + (57.0, 69.0)[m] + 1.9 + (3.0, 4.0)[m]
        t += 1.5 * len(self.decode_batches) + 1.85 * len(self.prefill_lens)
        t += 10.4 * len(self.closed) + 8.2 * len(self.poisson_factors) + (23.9 if self.overload else 0)
        if self.second_model:
            second = self.decode_batches if self.second_decode_batches is None else self.second_decode_batches
            t += (46.0, 62.0)[m] + 1.85 * (len(second) + len(self.prefill_lens))
        # tiny engines (no live plan runs them since 2026-12-02): ~47-52 s for the first (torch.compile cold),
        # 31 s for the next, ~0.5 s per decode batch; the plan caps the overhead models at 100 s in all
        if self.overhead_models:
            t += min(100, 50 + 31 * (len(self.overhead_models) - 1)
                     + 0.5 * len(self.overhead_models) * len(self.overhead_batches))
        return float(t)


def plan_script() -> Path | None:
    """scripts/device/latency_plan.py of this checkout (the project runs `pytest -m gpu` from it)."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "device" / "latency_plan.py"
    return path if path.is_file() else None


def run_plan(plan: LatencyLivePlan, config: Path, out_dir: Path,
             log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run the plan; return the batch documents it wrote (the main model's, then the second's)."""
    script = plan_script()
    if script is None:
        raise LatencyPlanError("scripts/device/latency_plan.py is not in this checkout: run `pytest -m gpu` from a "
                               "clone of the project (the live latency measurements are its program)")
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-u", str(script), *plan.argv(out_dir, config)]
    log(f"latency plan: {' '.join(cmd[2:])} (~{plan.estimate_s():.0f} s)")
    started = time.monotonic()
    tail: list[str] = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            tail = (tail + [line])[-60:]
            if "[plan]" in line:
                log(f"latency plan {time.monotonic() - started:5.0f}s/{plan.estimate_s():.0f}s "
                    f"{line.split('[plan]', 1)[1].strip()}")
        code = proc.wait(timeout=plan.budget_s + 300)
    docs = [json.loads(p.read_text()) for p in sorted(out_dir.glob("latency*.json"))
            if not p.name.endswith("-raw.jsonl")]
    if not docs:
        raise LatencyPlanError(f"the latency plan exited {code} and wrote no batch\n--- log tail ---\n"
                               + "\n".join(tail[-40:]))
    main = [d for d in docs if not (d.get("provenance") or {}).get("second_model_of")]
    return main + [d for d in docs if d not in main]
