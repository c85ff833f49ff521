"""Compile every attention kernel for the H200's architecture (sm_90) on a machine without a GPU.

Triton compiles ahead of time for a named target with the ptxas it ships, so a CPU machine can
check, before a GPU visit spends device minutes, that each rung's every autotune config lowers
to sm_90 (wgmma tensor-core MMAs, TMA bulk copies where the rung uses descriptors) and fits the
227 KiB of shared memory one block may use there. Run in a process without TRITON_INTERPRET:

    python -m pytest_anatomy.kernels.flashattn.aot [--all-configs] [--json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from typing import Any

from pytest_anatomy.kernels.flashattn.registry import LADDER, Rung

SM90_MAX_SHARED = 227 * 1024  # cudaDevAttrMaxSharedMemoryPerBlockOptin on Hopper
_FP32_POINTERS = {"LSE", "O32", "M", "L", "S", "PO", "PL"}
_FLOAT_SCALARS = {"sm_scale"}


def _signature(fn: Any, dtype: str, block: dict[str, int], d: int) -> dict[str, str]:
    sig: dict[str, str] = {}
    for p in fn.params:
        name = p.name
        if p.is_constexpr:
            sig[name] = "constexpr"
        elif name.startswith("desc_"):
            rows = block["BLOCK_M"] if name == "desc_q" else block["BLOCK_N"]
            sig[name] = f"tensordesc<{dtype}[{rows},{d}]>"
        elif name in _FP32_POINTERS:
            sig[name] = "*fp32"
        elif name in ("Q", "K", "V", "O"):
            sig[name] = f"*{dtype}"
        elif name in _FLOAT_SCALARS:
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    return sig


def compile_one(fn: Any, constexprs: dict[str, Any], *, dtype: str, d: int, num_warps: int, num_stages: int
                ) -> dict[str, Any]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if type(fn).__name__ != "JITFunction":
        raise RuntimeError("kernels were imported under TRITON_INTERPRET=1; compile in a fresh process without it")
    t0 = time.perf_counter()
    src = ASTSource(fn=fn, signature=_signature(fn, dtype, constexprs, d), constexprs=constexprs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps, "num_stages": num_stages})
    ptx = k.asm["ptx"]
    return {"kernel": fn.__name__, "constexprs": constexprs, "num_warps": num_warps, "num_stages": num_stages,
            "dtype": dtype, "shared_bytes": k.metadata.shared, "wgmma": ptx.count("wgmma.mma_async"),
            "tma_loads": ptx.count("cp.async.bulk.tensor"), "compile_s": time.perf_counter() - t0}


def rung_jobs(r: Rung, all_configs: bool, dtype: str = "bf16", d: int = 128) -> list[tuple[Any, dict[str, Any], int, int]]:
    """(kernel, constexprs, num_warps, num_stages) for every launch the GPU sweep makes of `r`."""
    mod = importlib.import_module(f"pytest_anatomy.kernels.flashattn.{r.kernel_module or r.module}")
    configs = mod.CONFIGS if all_configs else mod.CONFIGS[:1]
    jobs = []
    for cfg in configs:
        blocks = {k: v for k, v in cfg.kwargs.items()}
        for causal in (False, True):
            if r.id == "r1-naive":
                jobs.append((mod.scores, {"D": d, "CAUSAL": causal, **blocks}, cfg.num_warps, cfg.num_stages))
                if not causal:  # the softmax/PV kernel has no mask parameter
                    jobs.append((mod.softmax_pv, {"D": d, **blocks}, cfg.num_warps, cfg.num_stages))
            else:
                fn = mod.tma_fwd if r.id == "r6-tma-pipelined" else getattr(mod, r.kernel)
                jobs.append((fn, {"D": d, "CAUSAL": causal, **blocks, **dict(r.constexprs)}, cfg.num_warps,
                             cfg.num_stages))
    return jobs


def decode_jobs(dtype: str = "bf16", d: int = 128) -> list[tuple[Any, dict[str, Any], int, int]]:
    from pytest_anatomy.kernels.flashattn import decode

    return [(decode.decode_split, {"D": d, "BLOCK_H": 16, "BLOCK_N": decode.BLOCK_N}, 4, 2),
            (decode.decode_reduce, {"D": d, "BLOCK_S": 16}, 4, 3)]


def compile_all(all_configs: bool = False, dtype: str = "bf16", d: int = 128) -> list[dict[str, Any]]:
    out = []
    for r in LADDER:
        for fn, cx, warps, stages in rung_jobs(r, all_configs, dtype, d):
            out.append({"rung": r.id, **compile_one(fn, cx, dtype=dtype, d=d, num_warps=warps, num_stages=stages)})
    for fn, cx, warps, stages in decode_jobs(dtype, d):
        out.append({"rung": "flash-decoding", **compile_one(fn, cx, dtype=dtype, d=d, num_warps=warps,
                                                             num_stages=stages)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compile every attention kernel for sm_90 (no GPU needed).")
    parser.add_argument("--all-configs", action="store_true", help="every autotune config, not only the first")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    parser.add_argument("--head-dim", type=int, default=128, choices=[64, 128])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("aot: unset TRITON_INTERPRET: the interpreter cannot compile for a GPU", file=sys.stderr)
        return 2
    rows = compile_all(args.all_configs, args.dtype, args.head_dim)
    if args.json:
        print(json.dumps(rows))
    else:
        for row in rows:
            print(f"{row['rung']:18s} {row['kernel']:14s} {json.dumps(row['constexprs'])} w{row['num_warps']} "
                  f"s{row['num_stages']} smem {row['shared_bytes']:7d} wgmma {row['wgmma']:3d} tma {row['tma_loads']:3d} "
                  f"{row['compile_s']:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
