"""Host side of the attention rungs: argument checks, grids, autotuned or fixed launches.

torch and triton are imported inside functions: the registry and its tests import nothing heavy.
Layout: q [B,H,N,D], k and v [B,H_kv,N,D], contiguous in D; o like q; lse [B,H,N] fp32 (natural
log). Outputs are passed in, so a caller can poison them before the run.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from pytest_anatomy.kernels.flashattn.registry import Rung

_TUNED: dict[str, Any] = {}


class BadAttentionInput(ValueError):
    """Tensors a rung cannot take; the message names the problem and the fix."""


def check_inputs(q: Any, k: Any, v: Any, o: Any, lse: Any) -> tuple[int, int, int, int, int]:
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise BadAttentionInput(f"q, k, v must be [B, H, N, D]; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    b, h, n, d = q.shape
    hkv = k.shape[1]
    if tuple(k.shape) != (b, hkv, n, d) or tuple(v.shape) != tuple(k.shape):
        raise BadAttentionInput(f"k and v must be [B, H_kv, N, D] = [{b}, H_kv, {n}, {d}]; got {tuple(k.shape)}, "
                                f"{tuple(v.shape)}")
    if h % hkv:
        raise BadAttentionInput(f"H_kv={hkv} must divide H={h} (GQA groups are whole)")
    if d not in (16, 32, 64, 128):
        raise BadAttentionInput(f"head dim {d} not supported: use 64 or 128 (16, 32 for small tests)")
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise BadAttentionInput(f"q, k, v must share a dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        if t.stride(-1) != 1:
            raise BadAttentionInput(f"{name} must be contiguous in its last dim (call .contiguous())")
    if tuple(o.shape) != tuple(q.shape) or tuple(lse.shape) != (b, h, n) or not lse.is_contiguous():
        raise BadAttentionInput(f"o must be {tuple(q.shape)} and lse a contiguous [{b}, {h}, {n}] fp32 tensor")
    return b, h, hkv, n, d


def _module(rung: Rung) -> Any:
    return importlib.import_module(f"pytest_anatomy.kernels.flashattn.{rung.kernel_module or rung.module}")


def forward(rung: Rung, q: Any, k: Any, v: Any, o: Any, lse: Any, *, causal: bool, sm_scale: float,
            config: Mapping[str, int] | None = None, workspace: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run `rung` once. config=None: autotuned over the rung's configs (GPU); else exactly that
    config (BLOCK_M, BLOCK_N, num_warps, num_stages; the interpreter's path). Returns the config
    used: the autotuner's choice for this shape after the call."""
    dims = check_inputs(q, k, v, o, lse)
    mod = _module(rung)
    if hasattr(mod, "launch"):  # rungs with more than one kernel or host descriptors launch themselves
        return mod.launch(q, k, v, o, lse, causal=causal, sm_scale=sm_scale, config=config, dims=dims,
                          workspace=workspace)
    return launch_pointer(rung, getattr(mod, rung.kernel), mod.CONFIGS, q, k, v, o, lse, causal=causal,
                          sm_scale=sm_scale, config=config, dims=dims, **dict(rung.constexprs))


def autotuned(rung_id: str, kernel: Any, configs: Any, key: list[str], **kw: Any) -> Any:
    """One autotuner per rung (two rungs may share a kernel with different constexprs)."""
    if rung_id not in _TUNED:
        import triton

        _TUNED[rung_id] = triton.autotune(configs=configs, key=key, **kw)(kernel)
    return _TUNED[rung_id]


def launch_pointer(rung: Rung, kernel: Any, configs: Any, q: Any, k: Any, v: Any, o: Any, lse: Any, *,
                   causal: bool, sm_scale: float, config: Mapping[str, int] | None,
                   dims: tuple[int, int, int, int, int], **constexprs: Any) -> dict[str, Any]:
    """The pointer-based FA-2 signature shared by the single-kernel rungs."""
    import triton

    b, h, hkv, n, d = dims
    args = (q, k, v, o, lse, *pointer_args(q, k, v, o), h, h // hkv, n, sm_scale)
    if config is not None:
        cfg = dict(config)
        grid = (triton.cdiv(n, cfg["BLOCK_M"]), b * h)
        kernel[grid](*args, D=d, CAUSAL=causal, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                     num_warps=cfg.get("num_warps", 4), num_stages=cfg.get("num_stages", 1), **constexprs)
        return cfg
    tuned = autotuned(rung.id, kernel, configs, key=["N", "D", "CAUSAL", "GROUP"])
    tuned[lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), b * h)](*args, D=d, CAUSAL=causal, **constexprs)
    return chosen(tuned)


def chosen(kernel: Any) -> dict[str, Any]:
    """An autotuner's best config as a plain dict (kwargs + num_warps/num_stages)."""
    cfg = kernel.best_config
    return {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}


def pointer_args(q: Any, k: Any, v: Any, o: Any) -> tuple[int, ...]:
    return (q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2))
