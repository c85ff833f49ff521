"""Compile the ladder kernels with NVRTC and launch them through cuda.core on torch tensors.

One KernelRunner per process and GPU. Kernels are compiled once per source file with NVRTC
(`cuda.core.Program`, target = the device's own sm_XY, ptxas -v captured as the resource
report) and launched with `cuda.core.launch` on torch's *current* stream, with the tensors'
device pointers as arguments -- so kernel launches, torch's baselines, the L2 flush and the
CUDA events all live on one stream, in order.

Protocol (docs/FACTS.md M2-M4): correctness first on fresh random inputs (never zeros; odd sizes), the
output poisoned with NaN before the run and checked against a float64 reference; then timing
with CUDA events after warm-up, the L2 flushed by a read of a buffer several times its size
before every timed run, the median of many runs, and every variant timed in two separate blocks
so their difference shows the noise.

torch and cuda.core are imported inside methods only: importing this module costs nothing on
a CPU-only machine.
"""

from __future__ import annotations

import functools
import io
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pytest_anatomy import gpu_arch
from pytest_anatomy.gpu_query import clock_state
from pytest_anatomy.kernels.reference import TOLERANCE
from pytest_anatomy.kernels.registry import CUDA_DIR, DeviceFacts, RungRefused, Variant, shape_label
from pytest_anatomy.measure.clock_probe import enqueue_probe, read_probe, torch_current_stream
from pytest_anatomy.measure.tma_launch import STATIC_SMEM_LIMIT, RawLaunch, needs_raw_launch, opt_in_shared
from pytest_anatomy.stats import median
from pytest_anatomy.units import GiB, MiB

FLUSH_BYTES = 512 * MiB  # > 8x the H200's 60 MB L2
EPS = 1e-6
# Clocks are not locked (docs/FACTS.md M1), and an H200's timings sit on discrete levels 2-14% apart
# (boost, then the power limit): every block records NVML's SM clock before, a few times during and
# after it, so a clock step can be told from a kernel effect.
CLOCK_SAMPLES_DURING = 3
CLOCK_STEADY_TOLERANCE = 0.01  # 20 MHz at 1980: well under the 2-14% levels the timings show
BENIGN_CLOCK_REASONS = frozenset({"gpu_idle"})  # read in the instant between warm-up and the block


@dataclass
class Compiled:
    source: str
    code: Any  # cuda.core ObjectCode
    cubin: bytes
    log: str
    kernels: dict[str, Any] = field(default_factory=dict)


@contextmanager
def ieee_fp32() -> Iterator[str]:
    """cuBLAS in true fp32 (TF32 off), restoring torch's setting afterwards."""
    import torch

    cfg = torch.backends.cuda.matmul
    new_api = hasattr(cfg, "fp32_precision")
    saved = cfg.fp32_precision if new_api else cfg.allow_tf32
    try:
        if new_api:
            cfg.fp32_precision = "ieee"
        else:
            cfg.allow_tf32 = False
        yield "fp32_precision='ieee'" if new_api else "allow_tf32=False"
    finally:
        if new_api:
            cfg.fp32_precision = saved
        else:
            cfg.allow_tf32 = saved


class KernelRunner:
    def __init__(self, device_index: int = 0) -> None:
        import torch
        from cuda.core import Device

        torch.cuda.init()
        torch.cuda.set_device(device_index)
        self.torch = torch
        self.device = Device(device_index)
        self.device.set_current()  # the primary context, the one torch uses
        cc = self.device.compute_capability
        self.compute_capability = (int(cc.major), int(cc.minor))
        self.arch = f"sm_{cc.major}{cc.minor}"
        props = torch.cuda.get_device_properties(device_index)
        self.facts = DeviceFacts(sm_count=int(props.multi_processor_count))
        self.shared_optin = getattr(props, "shared_memory_per_block_optin", None)  # a block's dynamic shared memory
        self.gpu_name = props.name
        self._compiled: dict[str, Compiled] = {}
        self._flush: Any = None

    # --- compile and launch ----------------------------------------------------------------
    def compile(self, source: str, defines: tuple[tuple[str, int], ...] = ()) -> Compiled:
        key = source + "".join(f" -D{k}={v}" for k, v in defines)
        if key not in self._compiled:
            from cuda.core import Program

            from pytest_anatomy.kernels.compile import nvrtc_options  # the CPU checks compile with the same

            code = (CUDA_DIR / source).read_text(encoding="utf-8")
            log = io.StringIO()
            obj = Program(code, "c++", nvrtc_options(source, self.arch, defines)).compile("cubin", logs=log)
            self._compiled[key] = Compiled(source, obj, bytes(obj.code), log.getvalue().replace("\x00", ""))
        return self._compiled[key]

    def kernel(self, source: str, name: str, defines: tuple[tuple[str, int], ...] = ()) -> Any:
        c = self.compile(source, defines)
        if name not in c.kernels:
            c.kernels[name] = c.code.get_kernel(name)
        return c.kernels[name]

    def resources(self, variant: Variant, shape: Mapping[str, int]) -> list[dict[str, Any]]:
        """Per launch: registers, static shared memory, local (spill) bytes and the driver's
        occupancy for the launch's block size, read from the loaded kernels."""
        out = []
        for call in variant.calls(shape, self.facts):
            k = self.kernel(call.source, call.kernel, call.defines)
            if call.launch.shmem > STATIC_SMEM_LIMIT:  # the occupancy query counts the opted-in dynamic window
                opt_in_shared(k, call.launch.shmem)
            a = k.attributes
            out.append({"kernel": call.kernel, "registers": a.num_regs, "shared_bytes": a.shared_size_bytes,
                        "dynamic_shared_bytes": call.launch.shmem,
                        "local_bytes": a.local_size_bytes, "threads_per_block": call.launch.threads_per_block,
                        "grid": list(call.launch.grid), "block": list(call.launch.block),
                        "blocks_per_sm": k.occupancy.max_active_blocks_per_multiprocessor(
                            call.launch.threads_per_block, call.launch.shmem)})
        return out

    def prepare(self, variant: Variant, shape: Mapping[str, int], inputs: Mapping[str, Any]) -> Callable[[], Any]:
        """A zero-argument callable that runs the rung once on `inputs` and returns its output
        tensor. Allocations happen here, never inside the callable."""
        torch = self.torch
        ladder = variant.ladder
        if variant.is_baseline:
            return self._baseline(variant, shape, inputs)
        calls = variant.calls(shape, self.facts)  # raises RungRefused first
        import numpy as np
        from cuda.core import LaunchConfig, launch

        out_dtype = torch.bfloat16 if variant.dtype == "bf16" else torch.float32
        if ladder == "reduction":
            out_shape: tuple[int, ...] = (1,)
        elif ladder == "sgemm":
            out_shape = (shape["M"], shape["N"])
        else:
            out_shape = (shape["M"], shape["N"])
        out = torch.empty(out_shape, dtype=out_dtype, device="cuda")
        bindings: dict[str, Any] = {**shape, **inputs, "eps": EPS, "C": out, "y": out, "out": out}
        for name, count in (variant.workspace(shape, self.facts) if variant.workspace else {}).items():
            alloc = torch.zeros if variant.workspace_zeroed else torch.empty  # zeroed: counters (x10's rows)
            bindings[name] = alloc(count, dtype=torch.float32, device="cuda")
        prepared: list[Callable[[], Any]] = []
        stream = torch_current_stream()
        for call in calls:
            k = self.kernel(call.source, call.kernel, call.defines)
            if needs_raw_launch(call):  # a tensor map, dynamic shared memory past 48 KB, a cooperative grid
                prepared.append(RawLaunch(k, call, bindings, int(torch.cuda.current_stream().cuda_stream)))
                continue
            args = []
            for kind, value in call.bind(bindings):
                args.append(value.data_ptr() if kind == "ptr" else np.int32(value) if kind == "i32" else np.float32(value))
            cfg = LaunchConfig(grid=call.launch.grid, block=call.launch.block, shmem_size=call.launch.shmem)
            prepared.append(functools.partial(launch, stream, cfg, k, *args))

        def run() -> Any:
            for one in prepared:
                one()
            return out

        run.poison = lambda: out.fill_(float("nan"))  # type: ignore[attr-defined]
        run.workspace = {n: bindings[n] for n in (variant.workspace(shape, self.facts)  # type: ignore[attr-defined]
                                                  if variant.workspace else {})}  # x10's counters, for probes
        return run

    def _baseline(self, variant: Variant, shape: Mapping[str, int], inputs: Mapping[str, Any]) -> Callable[[], Any]:
        torch = self.torch
        b = variant.baseline
        if b == "torch.matmul":
            a_, b_ = inputs["A"], inputs["B"]
            c = torch.empty(a_.shape[0], b_.shape[1], dtype=torch.float32, device="cuda")

            def run() -> Any:
                with ieee_fp32():
                    return torch.matmul(a_, b_, out=c)
        elif b == "torch.matmul.bf16":
            a_, bt = inputs["A"], inputs["B"]
            c = torch.empty(a_.shape[0], bt.shape[0], dtype=torch.bfloat16, device="cuda")

            def run() -> Any:
                return torch.matmul(a_, bt.t(), out=c)
        elif b == "torch.sum":
            x, c = inputs["x"], torch.empty(1, dtype=torch.float32, device="cuda")

            def run() -> Any:
                return torch.sum(x.view(1, -1), dim=1, out=c)
        elif b == "torch.rms_norm":
            x, w = inputs["x"], inputs["w"]

            def run() -> Any:
                return torch.nn.functional.rms_norm(x, (x.shape[1],), w, EPS)
        elif b == "torch.softmax":
            x = inputs["x"]

            def run() -> Any:
                return torch.softmax(x, dim=-1)
        else:
            raise ValueError(f"unknown baseline {b!r} for {variant.id}")
        run.poison = ((lambda: c.fill_(float("nan"))) if b.startswith(("torch.matmul", "torch.sum"))  # type: ignore[attr-defined]
                      else (lambda: None))
        return run

    # --- inputs, correctness, timing ---------------------------------------------------------
    def inputs(self, ladder: str, shape: Mapping[str, int], dtype: str, seed: int) -> dict[str, Any]:
        """Fresh random device tensors (same distributions as reference.make_inputs)."""
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        if ladder == "sgemm":
            m, n, k = shape["M"], shape["N"], shape["K"]
            a = torch.randn(m, k, generator=g, device="cuda")
            b = torch.randn(k, n, generator=g, device="cuda")
            if dtype == "bf16":
                return {"A": a.to(torch.bfloat16), "B": b.t().contiguous().to(torch.bfloat16)}
            return {"A": a, "B": b}
        if ladder == "reduction":
            return {"x": torch.rand(shape["n"], generator=g, device="cuda")}
        x = 3.0 * torch.randn(shape["M"], shape["N"], generator=g, device="cuda")
        if ladder == "rmsnorm":
            return {"x": x, "w": 1.0 + 0.5 * torch.randn(shape["N"], generator=g, device="cuda")}
        return {"x": x}

    def reference(self, ladder: str, inputs: Mapping[str, Any], dtype: str) -> Any:
        torch = self.torch
        d = {k: v.double() for k, v in inputs.items()}
        if ladder == "sgemm":
            return d["A"] @ (d["B"].t() if dtype == "bf16" else d["B"])
        if ladder == "reduction":
            return d["x"].sum().reshape(1)
        x = d["x"]
        if ladder == "rmsnorm":
            return x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + EPS) * d["w"]
        return torch.softmax(x, dim=-1)

    def check(self, variant: Variant, shape: Mapping[str, int], seed: int) -> dict[str, Any]:
        """Run once on fresh inputs with a poisoned output; compare with float64."""
        torch = self.torch
        try:
            inputs = self.inputs(variant.ladder, shape, variant.dtype, seed)
            run = self.prepare(variant, shape, inputs)
        except RungRefused as exc:
            return {"shape": dict(shape), "status": "refused", "reason": str(exc)}
        run.poison()  # type: ignore[attr-defined]
        out = run()
        torch.cuda.synchronize()
        ref = self.reference(variant.ladder, inputs, variant.dtype)
        o = out.double()
        finite = bool(torch.isfinite(o).all())
        err = float(torch.linalg.vector_norm(o - ref) / torch.linalg.vector_norm(ref)) if finite else float("inf")
        tol = TOLERANCE[variant.dtype]
        return {"shape": dict(shape), "seed": seed, "status": "ok" if err <= tol else "wrong", "rel_error": err,
                "tolerance": tol, "all_written": finite}

    def time(self, fn: Callable[[], Any], *, runs: int, warmup: int, max_seconds: float = 3.0) -> dict[str, Any]:
        """Median ms of `runs` CUDA-event timings (fewer if a run is slow: at most ~max_seconds)."""
        if self._flush is None:
            self._flush = self.torch.ones(FLUSH_BYTES // 4, dtype=self.torch.float32, device="cuda")
        return time_flushed(fn, self._flush, runs=runs, warmup=warmup, max_seconds=max_seconds)


def time_flushed(fn: Callable[[], Any], flush: Any, *, runs: int, warmup: int, max_seconds: float = 3.0
                 ) -> dict[str, Any]:
    """The timing protocol: warm-up, then per run an L2 eviction (a read of `flush`, a float32
    tensor many times the L2) and one CUDA-event pair around `fn`; runs capped so the whole
    takes about max_seconds. Returns ms statistics, the samples, the SM clock read with NVML
    just before the first run, while the runs execute and after the last (clock_summary), and the SM clock
    read on the GPU by a probe enqueued right behind the last run (clock_probe: `sm_clock_probe`)."""
    import torch

    scratch = torch.empty(1, dtype=torch.float32, device="cuda")
    t0 = time.perf_counter()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    first = (time.perf_counter() - t0) / max(warmup, 1)
    runs = max(3, min(runs, int(max_seconds / max(first, 1e-6))))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(runs)]
    device = torch.cuda.current_device()
    before = clock_state(device)  # outside every event pair: the GPU is idle here, between blocks
    for start, end in events:
        torch.sum(flush.view(1, -1), dim=1, out=scratch)  # evict L2: a read, leaves no dirty lines
        start.record()
        fn()
        end.record()
    probe = enqueue_probe()  # behind the last run, no idle gap: the clock the block ended at, read on the GPU
    during = [] if before is None else _clocks_while_running([e for _, e in events], lambda: clock_state(device))
    torch.cuda.synchronize()
    after = clock_state(device)
    ms = [s.elapsed_time(e) for s, e in events]
    return {"ms_median": median(ms), "ms_min": min(ms), "ms_max": max(ms), "runs": runs,
            "warmup": warmup, "samples_ms": ms, "l2_flush_bytes": flush.numel() * flush.element_size(),
            **clock_summary(before, during, after), "sm_clock_probe": read_probe(probe)}


def _clocks_while_running(ends: list[Any], sample: Callable[[], dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Clock readings at even fractions of the block: wait (on the CPU, polling an event, never
    between a timed pair's events) for run k's end event, then read. Each reading says after how
    many runs it was taken and whether the block was still running. Once the block is over (when the
    launches are slower than the GPU, before the first wait) no more are taken: they would repeat
    `after` (the GPU idle since the same last run) at ~1.5-6 ms of NVML each; a reading can still say
    block_running False when the block ended while it was being read."""
    count = min(CLOCK_SAMPLES_DURING, len(ends) - 1)
    out = []
    for i in range(count):
        k = len(ends) * (i + 1) // (count + 1) - 1
        while not ends[k].query():
            time.sleep(2e-4)
        if ends[-1].query():  # the block is over: `after` is this reading
            break
        reading = sample()
        if reading is not None:
            out.append({**reading, "after_run": k + 1, "block_running": not ends[-1].query()})
    return out


def clock_summary(before: dict[str, Any] | None, during: list[dict[str, Any]], after: dict[str, Any] | None
                  ) -> dict[str, Any]:
    """A timing block's clock record from its clock_state readings: the readings, the SM clock's
    range over them, every clocks-event reason seen, and `clock_steady`: True when the SM clock
    stayed within CLOCK_STEADY_TOLERANCE of its highest reading and no reason but idle was seen,
    False otherwise, None without both a before and an after reading (no NVML: unknown, not steady)."""
    readings = [r for r in (before, *during, after) if r is not None]
    sm = [int(r["sm_clock_mhz"]) for r in readings]
    reasons = sorted({name for r in readings for name in (r.get("reasons") or ())})
    steady = None
    if before is not None and after is not None:
        steady = max(sm) - min(sm) <= CLOCK_STEADY_TOLERANCE * max(sm) and set(reasons) <= BENIGN_CLOCK_REASONS
    return {"clocks": {"before": before, "during": during, "after": after},
            "sm_clock_mhz_min": min(sm) if sm else None, "sm_clock_mhz_max": max(sm) if sm else None,
            "clock_reasons": reasons, "clock_steady": steady}


def clock_brief(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """A timing block's clocks in a line a reader can scan: NVML's SM MHz before / after / range, reasons,
    steady, and the on-GPU probe's SM MHz at the block's end (clock_probe: the clock the kernels ran at, which
    NVML's reading is not under tensor-core load). None when the block has neither (a block timed before)."""
    clocks = block.get("clocks") or {}
    before, after = clocks.get("before"), clocks.get("after")
    probe_mhz = (block.get("sm_clock_probe") or {}).get("sm_mhz")
    if before is None and after is None and probe_mhz is None:
        return None
    return {"sm_mhz_before": None if before is None else before["sm_clock_mhz"],
            "sm_mhz_after": None if after is None else after["sm_clock_mhz"],
            "sm_mhz_min": block.get("sm_clock_mhz_min"), "sm_mhz_max": block.get("sm_clock_mhz_max"),
            "reasons": block.get("clock_reasons"), "steady": block.get("clock_steady"),
            "probe_sm_mhz": probe_mhz}


# --- live measurements for the `measured` fixture ------------------------------------------------
TIMING_METHOD = ("CUDA events around each launch; L2 evicted before each (a read of FLUSH_BYTES); warm-up runs "
                 "discarded; median of the runs; blocks baseline / rung / rung / baseline; SM clock, clocks-event "
                 "reasons, power and temperature read with NVML before and after each block (and at a few points "
                 "during it), clocks never changed")
_RUNNER: list[KernelRunner] = []


def shared_runner() -> KernelRunner:
    if not _RUNNER:
        _RUNNER.append(KernelRunner())
    return _RUNNER[0]


def live_rung(variant: Variant, baseline: Variant, shape: Mapping[str, int], *, runs: int = 30,
              seed: int = 7) -> dict[str, Any]:
    """One rung measured now, in the shape of an imported kernels recording: correctness on the
    shape, then baseline / rung / rung / baseline timing blocks."""
    r = shared_runner()
    what = f"{variant.ladder} rung {variant.id} at {shape_label(shape)}"
    gpu_arch.check(what, variant.requirements(shape, r.facts), r.compute_capability)
    try:
        need = max((c.launch.shmem for c in variant.calls(shape, r.facts)), default=0)
    except RungRefused:  # r.check records the refusal
        need = 0
    gpu_arch.check_shared_memory(what, need, r.shared_optin)
    check = r.check(variant, shape, seed)
    if check["status"] == "refused":
        return {"measurements": {}, "provenance": {"gpu_name": r.gpu_name},
                "data": {"ladder": variant.ladder, "rung": variant.id, "shape": dict(shape), "dtype": variant.dtype,
                         "status": "refused", "reason": check["reason"]}}
    inputs = r.inputs(variant.ladder, shape, variant.dtype, seed + 1)
    fn, bfn = r.prepare(variant, shape, inputs), r.prepare(baseline, shape, inputs)
    tb0, t0, t1, tb1 = (r.time(f, runs=runs, warmup=3) for f in (bfn, fn, fn, bfn))
    result = {"kind": "kernel-timing", "status": "ok", "ladder": variant.ladder, "rung": variant.id,
              "shape": dict(shape), "dtype": variant.dtype, "ms_median": t0["ms_median"],
              "ms_median_repeat": t1["ms_median"], "baseline_rung": baseline.id,
              "baseline_ms_median": tb0["ms_median"], "baseline_ms_median_repeat": tb1["ms_median"],
              "timings": [t0, t1], "correctness": [check],
              "resources": None if variant.is_baseline else r.resources(variant, shape)}
    def seconds(t: dict[str, Any]) -> dict[str, Any]:
        return {"value": t["ms_median"] / 1e3, "unit": "s", "samples": [x / 1e3 for x in t["samples_ms"]]}

    # every block's readings are in result["timings"] (rung blocks) and here in brief, baselines too
    clocks = {"time": clock_brief(t0), "time_repeat": clock_brief(t1), "baseline_time": clock_brief(tb0),
              "baseline_time_repeat": clock_brief(tb1)}
    return {"measurements": {"time": seconds(t0), "time_repeat": seconds(t1), "baseline_time": seconds(tb0)},
            "provenance": {"gpu_name": r.gpu_name, "engine": "cuda.core + NVRTC", "timing": TIMING_METHOD},
            "data": {**{k: result[k] for k in ("ladder", "rung", "shape", "dtype", "ms_median", "ms_median_repeat",
                                              "baseline_rung", "baseline_ms_median", "status")},
                     "clocks": clocks, "run": {"id": f"{variant.ladder}.{variant.id}", "result": result}}}


def live_ceilings() -> dict[str, Any]:
    from pytest_anatomy.measure import ceilings

    read, copy = ceilings.read_bandwidth(2 * GiB, 20, 3), ceilings.copy_bandwidth(2 * GiB, 20, 3)
    return {"measurements": {"read_bandwidth": {"value": read["value"], "unit": "B/s", "samples": read["samples"]},
                             "copy_bandwidth": {"value": copy["value"], "unit": "B/s", "samples": copy["samples"]}},
            "provenance": {"gpu_name": shared_runner().gpu_name}, "data": {"read": read, "copy": copy}}
