"""Live measurement of one attention case on the local GPU, for the `measured` fixture.

Protocol per case (the kernel ladders' protocol, kernel_runner.time_flushed):
1. fresh random inputs (seeded, randn: never zeros), the rung's workspace allocated once;
2. a first call compiles and autotunes (its wall time is recorded; the chosen config with it);
3. the outputs are poisoned with NaN, the rung runs once, and O (batch 0, every head and row)
   and the LSE (batch 0, 64 sampled rows per head) are checked against an fp32 reference on the
   GPU under a tolerance derived from the dtype and N (kernels/flashattn/reference.py); a wrong
   or unwritten output raises instead of being timed. A Gluon rung (registry.Rung.dialect) has first run once
   per session in a child process (`preflight`, measure/flashattn_preflight.py) on small shapes: should its
   hand-placed barriers hang or fault the GPU, the child dies, the rung's cases fail with its output, and the
   session's CUDA context, with every other rung's measurement, is untouched;
4. timing, each with warm-up and an L2 flush before every run: the rung, torch's default sdpa
   backend, sdpa restricted to FLASH_ATTENTION, then the rung again (its repeat shows the noise);
   each block's SM clock, read with NVML before, during and after it, goes into data["clocks"].

Recording names: `fa2.<rung>.b{B}h{H}n{N}d{D}.{full|causal}`, with `kv{H_kv}` after h{H} when
the KV heads are fewer (GQA), `-fp16` appended to the mask for fp16; flash-decoding
`fd.b{B}h{H}kv{H_kv}l{L}d{D}`. torch and triton are imported inside functions only.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from pytest_anatomy import gpu_arch
from pytest_anatomy.kernels.flashattn import reference
from pytest_anatomy.kernels.flashattn.registry import DECODE_VARIANTS, decode_variant
from pytest_anatomy.kernels.flashattn.registry import rung as rung_by_id
from pytest_anatomy.measure.kernel_runner import FLUSH_BYTES, clock_brief, time_flushed

DTYPES = ("bf16", "fp16")
LSE_SAMPLE_ROWS = 64
PREFLIGHT_TIMEOUT_S = 300  # a dozen Gluon compiles (~1-4 s each) and runs on small shapes; far longer is a hang
_PREFLIGHT: dict[str, str | None] = {}  # rung id -> None (passed) or why it failed, once per session


class WrongOutput(AssertionError):
    """The kernel's output failed its check: it is not timed."""


def _warnings_recorded(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Run a live measurement with every warning recorded into its provenance instead of raised:
    the suite runs under filterwarnings=error, and a backend's advisory warning (torch's sdpa
    explains each backend it skips) must neither abort a GPU visit nor go unseen."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> dict[str, Any]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(*args, **kwargs)
        if caught:
            seen = sorted({f"{w.category.__name__}: {str(w.message)[:300]}" for w in caught})
            out["provenance"] = {**out.get("provenance", {}), "warnings": seen}
        return out
    return run


def case_name(rung: str, batch: int, heads: int, n: int, head_dim: int, causal: bool, *,
              kv_heads: int | None = None, dtype: str = "bf16") -> str:
    kv = f"kv{kv_heads}" if kv_heads is not None and kv_heads != heads else ""
    suffix = "" if dtype == "bf16" else f"-{dtype}"
    return f"fa2.{rung}.b{batch}h{heads}{kv}n{n}d{head_dim}.{'causal' if causal else 'full'}{suffix}"


def decode_name(batch: int, heads: int, kv_heads: int, context: int, head_dim: int,
                variant: str = DECODE_VARIANTS[0].id, splits: int | None = None) -> str:
    """`fd.b{B}h{H}kv{H_kv}l{L}d{D}` for the two-kernel flash-decoding, `fd2.` for the fused reduction (its variant's
    prefix, registry.DECODE_VARIANTS); `.s{n}` after it where the split count was forced (live_decode's `splits`)."""
    forced = "" if splits is None else f".s{splits}"
    return f"{decode_variant(variant).prefix}.b{batch}h{heads}kv{kv_heads}l{context}d{head_dim}{forced}"


def _torch_dtype(torch: Any, dtype: str, device: str) -> Any:
    # fp32 only off the GPU: the CPU test of this module runs the kernels in Triton's
    # interpreter, which has no bf16 dot; on a GPU fp32 dots would silently be TF32
    allowed = DTYPES if device == "cuda" else DTYPES + ("fp32",)
    if dtype not in allowed:
        raise ValueError(f"cases on {device} run in {' or '.join(allowed)}, got {dtype!r}")
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]


def _time_beside_sdpa(run: Any, q: Any, k: Any, v: Any, causal: bool, device: str, runs: int,
                      warmup: int) -> tuple[Any, Any, Any, Any, str, Any]:
    """Timing blocks in the order every case uses: ours, torch's default sdpa, its FLASH_ATTENTION
    backend, ours again (the repeat shows the noise), each with the L2 flushed before every run.
    Returns (ours, default, flash, repeat, how GQA reached sdpa, the flush buffer)."""
    default, flash, gqa_how = _sdpa_callables(q, k, v, causal)
    flush = _flush(device)
    times = [time_flushed(fn, flush, runs=runs, warmup=warmup) for fn in (run, default, flash, run)]
    return times[0], times[1], times[2], times[3], gqa_how, flush


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def _flush(device: str) -> Any:
    import torch

    n = FLUSH_BYTES // 4 if device == "cuda" else 1  # no L2 to evict off the GPU
    return torch.ones(n, dtype=torch.float32, device=device)


def _versions(device: str) -> dict[str, Any]:
    import torch
    import triton

    out = {"engine": "triton", "triton": triton.__version__, "torch": torch.__version__,
           "cuda_runtime": torch.version.cuda}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        out.update(gpu_name=props.name, sm_count=props.multi_processor_count)
    else:
        out.update(gpu_name=None, note="run on the CPU through Triton's interpreter (a test of this module)")
    return out


def _sm_count(device: str) -> int:
    import torch

    return torch.cuda.get_device_properties(0).multi_processor_count if device == "cuda" else 4


def _measurement(t: dict[str, Any]) -> dict[str, Any]:
    return {"value": t["ms_median"] / 1e3, "unit": "s", "samples": [x / 1e3 for x in t["samples_ms"]]}


def _clocks(rung: dict[str, Any], repeat: dict[str, Any], default: dict[str, Any], flash: dict[str, Any]
            ) -> dict[str, Any]:
    """Each block's SM clock in brief, by measurement name (the readings stay in data's timings):
    the clocks are not locked, and a step between blocks reads like a kernel effect otherwise."""
    return {"time": clock_brief(rung), "time_repeat": clock_brief(repeat), "sdpa_default_time": clock_brief(default),
            "sdpa_flash_time": clock_brief(flash)}


def _sdpa_callables(q: Any, k: Any, v: Any, causal: bool) -> tuple[Any, Any, str]:
    """(default backend, FLASH_ATTENTION only, how GQA was passed). GQA goes in as
    enable_gqa=True where both accept it; otherwise K/V are expanded once, outside the timing."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sdpa = torch.nn.functional.scaled_dot_product_attention
    gqa = q.shape[1] != k.shape[1]
    kw: dict[str, Any] = {"is_causal": causal}
    how = "same heads"
    kk, vv = k, v
    if gqa:
        try:
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                sdpa(q, k, v, enable_gqa=True, **kw)
            sdpa(q, k, v, enable_gqa=True, **kw)
            kw["enable_gqa"] = True
            how = "enable_gqa=True"
        except (RuntimeError, TypeError):  # warnings are recorded, not raised (_warnings_recorded)
            group = q.shape[1] // k.shape[1]
            kk, vv = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            how = "K/V expanded to all query heads before timing (enable_gqa refused)"

    def default() -> Any:
        return sdpa(q, kk, vv, **kw)

    def flash() -> Any:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return sdpa(q, kk, vv, **kw)
    return default, flash, how


def check_forward(q: Any, k: Any, v: Any, o: Any, lse: Any, *, causal: bool, sm_scale: float, dtype: str
                  ) -> dict[str, Any]:
    """O of batch 0 against sdpa in fp32 (memory-efficient backend: no N^2 buffer), and the LSE of
    sampled rows against an fp32 logsumexp; both under reference.tolerance doubled for the
    reference's own fp32 sums (it accumulates over the same D and N)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    _, h, n, d = q.shape
    group = h // k.shape[1]
    q0 = q[:1].float()
    k0 = k[:1].float().repeat_interleave(group, dim=1)
    v0 = v[:1].float().repeat_interleave(group, dim=1)
    backends = [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH] if q.is_cuda else [SDPBackend.MATH]
    with sdpa_kernel(backends):
        o_ref = torch.nn.functional.scaled_dot_product_attention(q0, k0, v0, is_causal=causal, scale=sm_scale)
    rows = torch.linspace(0, n - 1, min(LSE_SAMPLE_ROWS, n), device=q.device).round().long()
    s = torch.matmul(q0[0][:, rows], k0[0].transpose(-1, -2)) * sm_scale  # [H, R, N] fp32
    smax = float(s.abs().max())
    if causal:
        s = s.masked_fill(torch.arange(n, device=q.device)[None, None, :] > rows[None, :, None], float("-inf"))
    lse_ref = torch.logsumexp(s, dim=-1)
    tol = reference.tolerance(dtype, n, d, float(v0.abs().max()), smax)
    written = bool(torch.isfinite(o).all()) and bool(torch.isfinite(lse).all())
    o_err = float((o[:1].float() - o_ref).abs().max()) if written else math.inf
    lse_err = float((lse[0][:, rows] - lse_ref).abs().max()) if written else math.inf
    ok = written and o_err <= 2 * tol.o_abs and lse_err <= 2 * tol.lse_abs
    return {"status": "ok" if ok else "wrong", "all_written": written, "o_max_abs_error": o_err,
            "o_tolerance": 2 * tol.o_abs, "lse_max_abs_error": lse_err, "lse_tolerance": 2 * tol.lse_abs,
            "tolerance_why": tol.why + "; doubled: the fp32 reference sums over the same D and N",
            "checked": f"O of batch 0 (all {h} heads, {n} rows); LSE of {len(rows)} rows per head of batch 0"}


class PreflightFailed(WrongOutput):
    """A Gluon rung's child-process run hung, crashed or gave a wrong result: the rung is not run in this process."""


def _preflight_verdict(proc: subprocess.CompletedProcess[str]) -> str | None:
    """None where the child passed, else what went wrong in one line."""
    lines = proc.stdout.strip().splitlines()
    try:
        rows = json.loads(lines[-1]) if lines else []
    except json.JSONDecodeError:
        rows = []
    bad = [row for row in rows if row.get("status") != "ok"]
    if proc.returncode == 0 and rows and not bad:
        return None
    if bad:
        return f"exit {proc.returncode}, wrong result: {json.dumps(bad[0])}"
    return f"exit {proc.returncode}: {(proc.stderr.strip() or proc.stdout.strip())[-1500:]}"


def preflight(rung_id: str, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> None:
    """Run `rung_id` once in a child process (measure/flashattn_preflight.py) before this process launches it;
    raise PreflightFailed with the child's verdict where it did not pass. Once per session and rung."""
    if rung_id not in _PREFLIGHT:
        cmd = [sys.executable, "-m", "pytest_anatomy.measure.flashattn_preflight", rung_id]
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
            _PREFLIGHT[rung_id] = _preflight_verdict(proc)
        except subprocess.TimeoutExpired:
            _PREFLIGHT[rung_id] = f"no answer in {timeout_s:.0f} s (a hang: a barrier waited on that never completes)"
    if _PREFLIGHT[rung_id] is not None:
        raise PreflightFailed(f"{rung_id} failed its child-process preflight, so it is not run in this session: "
                              f"{_PREFLIGHT[rung_id]}")


@_warnings_recorded
def live_case(rung_id: str, *, batch: int, heads: int, n: int, head_dim: int, causal: bool,
              kv_heads: int | None = None, dtype: str = "bf16", runs: int = 20, warmup: int = 3,
              seed: int = 0, device: str = "cuda", config: dict[str, int] | None = None) -> dict[str, Any]:
    """One rung at one shape: check, then time it beside sdpa's default and FLASH_ATTENTION backends."""
    import torch

    from pytest_anatomy.kernels.flashattn import launch

    r = rung_by_id(rung_id)
    if device == "cuda":  # before any compile: a Gluon rung on another architecture aborts its compiling process
        major, minor = torch.cuda.get_device_capability()
        gpu_arch.check(f"attention rung {rung_id}", r.requires, (int(major), int(minor)))
    if r.dialect == "gluon" and device == "cuda":
        preflight(rung_id)
    kv = heads if kv_heads is None else kv_heads
    tdt = _torch_dtype(torch, dtype, device)
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(batch, heads, n, head_dim, generator=g, device=device).to(tdt)
    k = torch.randn(batch, kv, n, head_dim, generator=g, device=device).to(tdt)
    v = torch.randn(batch, kv, n, head_dim, generator=g, device=device).to(tdt)
    o = torch.empty_like(q)
    lse = torch.empty(batch, heads, n, dtype=torch.float32, device=device)
    sm_scale = 1.0 / math.sqrt(head_dim)
    mod = importlib.import_module(f"pytest_anatomy.kernels.flashattn.{r.kernel_module or r.module}")
    ws = mod.workspace_for(q) if hasattr(mod, "workspace_for") else None

    def run() -> Any:
        return launch.forward(r, q, k, v, o, lse, causal=causal, sm_scale=sm_scale, workspace=ws, config=config)

    t0 = time.perf_counter()
    config = run()  # compile + autotune
    _sync(device)
    compile_s = time.perf_counter() - t0
    o.fill_(float("nan"))
    lse.fill_(float("nan"))
    run()
    _sync(device)
    check = check_forward(q, k, v, o, lse, causal=causal, sm_scale=sm_scale, dtype=dtype)
    if check["status"] != "ok":
        raise WrongOutput(f"{rung_id} gave a wrong result at B={batch} H={heads} H_kv={kv} N={n} D={head_dim} "
                          f"{'causal' if causal else 'full'} {dtype}: max |O err| {check['o_max_abs_error']:.3g} "
                          f"(tol {check['o_tolerance']:.3g}), max |LSE err| {check['lse_max_abs_error']:.3g} "
                          f"(tol {check['lse_tolerance']:.3g}); not timed")
    t_rung, t_default, t_flash, t_repeat, gqa_how, flush = _time_beside_sdpa(run, q, k, v, causal, device, runs,
                                                                            warmup)
    settings = {"batch": batch, "heads": heads, "kv_heads": kv, "n": n, "head_dim": head_dim, "causal": causal,
                "dtype": dtype, "sm_scale": sm_scale, "runs": runs, "warmup": warmup, "seed": seed,
                "l2_flush_bytes": flush.numel() * 4, "device": device}
    return {"measurements": {"time": _measurement(t_rung), "time_repeat": _measurement(t_repeat),
                             "sdpa_default_time": _measurement(t_default), "sdpa_flash_time": _measurement(t_flash)},
            "provenance": {**_versions(device), "rung": rung_id, "config": config, "settings": settings,
                           "compile_and_autotune_s": compile_s, "sdpa_gqa": gqa_how},
            "data": {"rung": rung_id, "config": config, "settings": settings, "correctness": check,
                     "timings": {"rung": t_rung, "rung_repeat": t_repeat, "sdpa_default": t_default,
                                 "sdpa_flash": t_flash},
                     "clocks": _clocks(t_rung, t_repeat, t_default, t_flash)}}


def check_decode(q: Any, k: Any, v: Any, o: Any, lse: Any, *, sm_scale: float, dtype: str) -> dict[str, Any]:
    """Every sequence and head against an fp32 grouped einsum (no expanded K/V)."""
    import torch

    b, h, _, d = q.shape
    hkv, ctx = k.shape[1], k.shape[2]
    o_err = lse_err = smax = vmax = 0.0
    written = bool(torch.isfinite(o).all()) and bool(torch.isfinite(lse).all())
    for i in range(b):
        qf = q[i, :, 0].float().view(hkv, h // hkv, d)
        kf, vf = k[i].float(), v[i].float()
        s = torch.einsum("hgd,hld->hgl", qf, kf) * sm_scale
        ref_lse = torch.logsumexp(s, dim=-1)
        ref_o = torch.einsum("hgl,hld->hgd", torch.softmax(s, dim=-1), vf)
        smax, vmax = max(smax, float(s.abs().max())), max(vmax, float(vf.abs().max()))
        if written:
            o_err = max(o_err, float((o[i, :, 0].float().view(hkv, h // hkv, d) - ref_o).abs().max()))
            lse_err = max(lse_err, float((lse[i, :, 0].view(hkv, h // hkv) - ref_lse).abs().max()))
    tol = reference.tolerance(dtype, ctx, d, vmax, smax)
    ok = written and o_err <= 2 * tol.o_abs and lse_err <= 2 * tol.lse_abs
    return {"status": "ok" if ok else "wrong", "all_written": written,
            "o_max_abs_error": o_err if written else math.inf, "o_tolerance": 2 * tol.o_abs,
            "lse_max_abs_error": lse_err if written else math.inf, "lse_tolerance": 2 * tol.lse_abs,
            "tolerance_why": tol.why + "; doubled: the fp32 reference sums over the same D and L",
            "checked": f"all {b} sequences, all {h} heads"}


@_warnings_recorded
def live_decode(*, batch: int, heads: int, kv_heads: int, context: int, head_dim: int, dtype: str = "bf16",
                runs: int = 30, warmup: int = 5, seed: int = 0, device: str = "cuda",
                block_n: int = 64, variant: str = DECODE_VARIANTS[0].id, splits: int | None = None) -> dict[str, Any]:
    """Flash-decoding (`variant`: registry.DECODE_VARIANTS) for `batch` single-token queries over `context` tokens,
    beside sdpa. The fused reduction's counters must be back at 0 after the checked call (its compile call ran
    before it on the same workspace, so the check is already a second call's). `splits` forces the split count
    (rounded to whole KV tiles as the kernel does: theory.attention.launched_splits); None takes the launch rule's."""
    import torch

    from pytest_anatomy.kernels.flashattn import decode

    tdt = _torch_dtype(torch, dtype, device)
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(batch, heads, 1, head_dim, generator=g, device=device).to(tdt)
    k = torch.randn(batch, kv_heads, context, head_dim, generator=g, device=device).to(tdt)
    v = torch.randn(batch, kv_heads, context, head_dim, generator=g, device=device).to(tdt)
    o = torch.empty_like(q)
    lse = torch.empty(batch, heads, 1, dtype=torch.float32, device=device)
    sm_scale = 1.0 / math.sqrt(head_dim)
    forced = splits is not None
    if splits is None:
        splits = decode.splits_for(batch, kv_heads, context, _sm_count(device), block_n)
    fused = decode_variant(variant).fused_reduce
    ws = decode.workspace_for(q, splits, fused)

    def run() -> Any:
        return decode.decode(q, k, v, o, lse, sm_scale=sm_scale, splits=splits, workspace=ws, block_n=block_n,
                             fused_reduce=fused)

    t0 = time.perf_counter()
    config = run()
    _sync(device)
    compile_s = time.perf_counter() - t0
    o.fill_(float("nan"))
    lse.fill_(float("nan"))
    run()
    _sync(device)
    check = check_decode(q, k, v, o, lse, sm_scale=sm_scale, dtype=dtype)
    if fused:
        check["counters_reset"] = bool((ws["CNT"] == 0).all())
        check["status"] = check["status"] if check["counters_reset"] else "wrong"
    if check["status"] != "ok":
        raise WrongOutput(f"flash-decoding ({variant}) gave a wrong result at B={batch} H={heads} H_kv={kv_heads} "
                          f"L={context} D={head_dim}: max |O err| {check['o_max_abs_error']:.3g} (tol {check['o_tolerance']:.3g}),"
                          f" max |LSE err| {check['lse_max_abs_error']:.3g} (tol {check['lse_tolerance']:.3g})"
                          f"{'' if check.get('counters_reset', True) else '; its arrival counters were not reset'}")
    t_fd, t_default, t_flash, t_repeat, gqa_how, flush = _time_beside_sdpa(run, q, k, v, False, device, runs, warmup)
    settings = {"batch": batch, "heads": heads, "kv_heads": kv_heads, "context": context, "head_dim": head_dim,
                "dtype": dtype, "sm_scale": sm_scale, "runs": runs, "warmup": warmup, "seed": seed,
                "splits": config["splits"], "splits_forced": forced, "l2_flush_bytes": flush.numel() * 4,
                "device": device}
    return {"measurements": {"time": _measurement(t_fd), "time_repeat": _measurement(t_repeat),
                             "sdpa_default_time": _measurement(t_default), "sdpa_flash_time": _measurement(t_flash)},
            "provenance": {**_versions(device), "kernel": "flash-decoding" + (", reduction fused" if fused else ""),
                           "variant": variant, "config": config, "settings": settings,
                           "compile_s": compile_s, "sdpa_gqa": gqa_how},
            "data": {"config": config, "settings": settings, "correctness": check,
                     "timings": {"rung": t_fd, "rung_repeat": t_repeat, "sdpa_default": t_default,
                                 "sdpa_flash": t_flash},
                     "clocks": _clocks(t_fd, t_repeat, t_default, t_flash)}}


@_warnings_recorded
def live_ceilings() -> dict[str, Any]:
    """The two ceilings a prediction of this suite divides by, measured now: bf16 GEMM 8192^3 and
    a 2 GiB read (20 runs after 3 warm-up each: about 1 s)."""
    from pytest_anatomy.measure import ceilings

    read = ceilings.read_bandwidth(2 * 1024**3, 20, 3)
    gemm = ceilings.matmul_peak("bf16", ceilings.MATMUL_N, 20, 3)
    return {"measurements": {"read_bandwidth.value": {"value": read["value"], "unit": "B/s",
                                                      "samples": read["samples"]},
                             "matmul_bf16.value": {"value": gemm["value"], "unit": "FLOP/s",
                                                   "samples": gemm["samples"]}},
            "provenance": {**_versions("cuda"), "kind": "ceilings", "method": [read["method"], gemm["method"]]},
            "data": {"read": read, "matmul_bf16": gemm}}
