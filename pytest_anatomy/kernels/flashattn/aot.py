"""Compile every attention kernel for the H200's architecture (sm_90) on a machine without a GPU.

Triton compiles ahead of time for a named target with the ptxas it ships, so a CPU machine can
check, before a GPU visit spends device minutes, that each rung's every autotune config lowers
to sm_90 (wgmma tensor-core MMAs, TMA bulk copies where the rung uses descriptors) and fits the
227 KiB of shared memory one block may use there. A Gluon rung (r7, r8) goes through Gluon's own source class
(GluonASTSource: its tensor descriptors carry their shared-memory layout in the signature) and its register cap
(maxnreg, which warp specialisation redistributes with setmaxnreg). Each launch is compiled twice: plain, and with the
divisible-by-16 marks Triton's launch gives its arguments (aligned_args; the row's `aligned` facts), which is the
kernel that launches. Run in a process without TRITON_INTERPRET:

    python -m pytest_anatomy.kernels.flashattn.aot [--all-configs] [--json] [--record FILE]

`--record FILE` writes the rows (less their compile times) with `sources_key()`: a hash of this package's sources
and the Triton version, so a CPU check can read the every-config sm_90 compile back while neither changed
(tests_flashattn/test_flashattn_sm90.py; ~40 s of a cold CPU run) and compiles again when either did.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

from pytest_anatomy import gpu_arch
from pytest_anatomy.kernels.flashattn.registry import LADDER, Rung

SM90_MAX_SHARED = 227 * 1024  # cudaDevAttrMaxSharedMemoryPerBlockOptin on Hopper
_FP32_POINTERS = {"LSE", "O32", "M", "L", "S", "PO", "PL"}
_FLOAT_SCALARS = {"sm_scale"}


Job = tuple[Any, dict[str, Any], int, int, Optional[int]]  # kernel, constexprs, num_warps, num_stages, maxnreg


def sources_key() -> str:
    """What an sm_90 compile of this package's kernels depends on: every source file of the package (the kernels,
    their configs, this driver) and the installed Triton's version (its compiler and bundled ptxas). Read without
    importing triton: a process running the interpreter must not import it before TRITON_INTERPRET is set."""
    digest = hashlib.sha256(importlib.metadata.version("triton").encode())
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _is_gluon(fn: Any) -> bool:
    return type(fn).__name__ == "GluonJITFunction"


def _descriptor(fn: Any, dtype: str, rows: int, d: int) -> str:
    if not _is_gluon(fn):
        return f"tensordesc<{dtype}[{rows},{d}]>"
    from triton.experimental.gluon import language as gl

    layout = gl.NVMMASharedLayout.get_default_for([rows, d], {"bf16": gl.bfloat16, "fp16": gl.float16}[dtype])
    return f"tensordesc<{dtype}[{rows},{d}],{layout!r}>"


def _signature(fn: Any, dtype: str, block: dict[str, int], d: int) -> dict[str, str]:
    sig: dict[str, str] = {}
    for p in fn.params:
        name = p.name
        if p.is_constexpr:
            sig[name] = "constexpr"
        elif name.startswith("desc_"):
            rows = block["BLOCK_M"] if name == "desc_q" else block["BLOCK_N"]
            sig[name] = _descriptor(fn, dtype, rows, d)
        elif name in _FP32_POINTERS:
            sig[name] = "*fp32"
        elif name == "CNT":
            sig[name] = "*i32"
        elif name in ("Q", "K", "V", "O"):
            sig[name] = f"*{dtype}"
        elif name in _FLOAT_SCALARS:
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    return sig


# Integer arguments that are not multiples of 16 at the shapes the tests launch (GQA's 4 query heads a KV head, or 1
# for MHA; flash-decoding's 9 splits). Every other integer there is one (strides at D 64/128, H 32, N and the context
# multiples of 16, the split chunk a multiple of BLOCK_N), and every pointer is 16-byte aligned (torch's allocations).
NOT_MULTIPLE_OF_16 = frozenset({"GROUP", "SPLITS"})


def aligned_args(signature: dict[str, str]) -> dict[tuple[int, ...], list[list[Any]]]:
    """The tt.divisibility=16 marks Triton's launch gives the kernel at the tests' shapes: each pointer and each
    integer argument outside NOT_MULTIPLE_OF_16 (argument positions over the signature, constexprs included). An
    integer equal to 1 (GROUP under MHA) is specialised further at launch; that is not marked here."""
    return {(i,): [["tt.divisibility", 16]] for i, (name, kind) in enumerate(signature.items())
            if kind.startswith("*") or (kind == "i32" and name not in NOT_MULTIPLE_OF_16)}


def compile_one(fn: Any, constexprs: dict[str, Any], *, dtype: str, d: int, num_warps: int, num_stages: int,
                maxnreg: int | None = None, arch: int = 90) -> dict[str, Any]:
    """One launch's compile rows: the plain compile's resources and PTX counts, and `aligned`, the registers and
    shared bytes of the same kernel compiled with the launch's alignment marks (aligned_args). The launch compiles
    the aligned one: the plain compile of decode_split holds 255 registers and 22,528 B, the launched kernel 72 and
    38,912 B (recorded 2026-12-07; tests_flashattn/test_flashattn_launched_resources.py)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if type(fn).__name__ not in ("JITFunction", "GluonJITFunction"):
        raise RuntimeError("kernels were imported under TRITON_INTERPRET=1; compile in a fresh process without it")
    t0 = time.perf_counter()
    signature = _signature(fn, dtype, constexprs, d)
    source_class: Any = ASTSource
    if _is_gluon(fn):
        from triton.experimental.gluon._runtime import GluonASTSource

        source_class = GluonASTSource
    options: dict[str, Any] = {"num_warps": num_warps, "num_stages": num_stages}
    if maxnreg is not None:
        options["maxnreg"] = maxnreg
    target = GPUTarget("cuda", arch, 32)
    k = triton.compile(source_class(fn=fn, signature=signature, constexprs=constexprs), target=target, options=options)
    aligned = triton.compile(source_class(fn=fn, signature=signature, constexprs=constexprs,
                                          attrs=aligned_args(signature)), target=target, options=options)
    return {"kernel": fn.__name__, "constexprs": constexprs, "num_warps": num_warps, "num_stages": num_stages,
            "maxnreg": maxnreg, "dtype": dtype, **_facts(k), "aligned": _facts(aligned),
            "compile_s": time.perf_counter() - t0}


def _facts(k: Any) -> dict[str, Any]:
    """What the checks read of one compiled kernel: its shared bytes, warps, PTX counts and cubin resources."""
    ptx = k.asm["ptx"]
    return {"shared_bytes": k.metadata.shared, "wgmma": ptx.count("wgmma.mma_async"),
            "tma_loads": ptx.count("cp.async.bulk.tensor"), "setmaxnreg": ptx.count("setmaxnreg"),
            "total_warps": k.metadata.num_warps, "acq_rel_atomics": ptx.count("atom.global.gpu.acq_rel"),
            "barrier_before_atomic": _barrier_before_atomic(ptx), **resource_usage(k.asm["cubin"])}


def _barrier_before_atomic(ptx: str) -> bool | None:
    """Whether a CTA barrier (bar.sync) lies between the last global store before the first global atomic and the
    atomic: every thread's stores then precede one thread's release (None: the kernel has no atomic)."""
    at = ptx.find("atom.global")
    if at < 0:
        return None
    return "bar.sync" in ptx[ptx.rfind("st.global", 0, at):at]


def resource_usage(cubin: bytes) -> dict[str, int]:
    """{"registers", "stack_bytes"} a thread, read from the cubin by the cuobjdump Triton ships (empty where absent)."""
    import re
    import subprocess
    import tempfile
    from pathlib import Path

    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not tool.exists():
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([str(tool), "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    m = re.search(r"REG:(\d+) STACK:(\d+)", out)
    return {"registers": int(m.group(1)), "stack_bytes": int(m.group(2))} if m else {}


def rung_jobs(r: Rung, all_configs: bool, dtype: str = "bf16", d: int = 128) -> list[Job]:
    """(kernel, constexprs, num_warps, num_stages, maxnreg) for every launch the GPU sweep makes of `r`."""
    mod = importlib.import_module(f"pytest_anatomy.kernels.flashattn.{r.kernel_module or r.module}")
    configs = mod.CONFIGS if all_configs else mod.CONFIGS[:1]
    jobs: list[Job] = []
    for cfg in configs:
        blocks = {k: v for k, v in cfg.kwargs.items()}
        for causal in (False, True):
            if r.id == "r1-naive":
                jobs.append((mod.scores, {"D": d, "CAUSAL": causal, **blocks}, cfg.num_warps, cfg.num_stages, None))
                if not causal:  # the softmax/PV kernel has no mask parameter
                    jobs.append((mod.softmax_pv, {"D": d, **blocks}, cfg.num_warps, cfg.num_stages, None))
            else:
                fn = {"r6-tma-pipelined": "tma_fwd", "r7-warp-specialized": "ws_fwd",
                      "r8-pingpong": "pingpong_fwd"}.get(r.id, r.kernel)
                jobs.append((getattr(mod, fn), {"D": d, "CAUSAL": causal, **blocks, **dict(r.constexprs)},
                             cfg.num_warps, cfg.num_stages, cfg.maxnreg))
    return jobs


def decode_jobs(dtype: str = "bf16", d: int = 128) -> list[Job]:
    """Flash-decoding's launches at the H200 shape (B=8 H=32 H_kv=8: GROUP 4, 9 splits): both kernels of fd, and
    fd2's one (decode_fused.merge_blocks: every split merged in one step)."""
    from pytest_anatomy.kernels.flashattn import decode, decode_fused

    block_g, block_s = decode_fused.merge_blocks(4, 9)
    return [(decode.decode_split, {"D": d, "BLOCK_H": 16, "BLOCK_N": decode.BLOCK_N}, 4, 2, None),
            (decode.decode_reduce, {"D": d, "BLOCK_S": 16}, 4, 3, None),
            (decode_fused.decode_split_fused, {"D": d, "BLOCK_H": 16, "BLOCK_N": decode.BLOCK_N, "BLOCK_G": block_g,
                                               "BLOCK_S": block_s}, 4, 2, None)]


def compile_all(all_configs: bool = False, dtype: str = "bf16", d: int = 128,
                only: list[str] | None = None, arch: int = 90, decode: bool | None = None) -> list[dict[str, Any]]:
    """Compile rows of the `only` rungs (default every rung), and flash-decoding's kernels when `decode` (default:
    when every rung is compiled)."""
    out = []
    for r in (r for r in LADDER if only is None or r.id in only):
        for fn, cx, warps, stages, nreg in rung_jobs(r, all_configs, dtype, d):
            out.append({"rung": r.id, **compile_one(fn, cx, dtype=dtype, d=d, num_warps=warps, num_stages=stages,
                                                    maxnreg=nreg, arch=arch)})
    for fn, cx, warps, stages, nreg in (decode_jobs(dtype, d) if (only is None if decode is None else decode) else []):
        out.append({"rung": "flash-decoding", **compile_one(fn, cx, dtype=dtype, d=d, num_warps=warps,
                                                             num_stages=stages, maxnreg=nreg, arch=arch)})
    return out


def unmet_requirements(only: list[str] | None, arch: int) -> list[str]:
    """One line per selected rung whose architecture requirement `arch` does not meet: compiling it anyway aborts
    the process inside Triton's LLVM (it cannot select Hopper's intrinsics elsewhere)."""
    cc = (arch // 10, arch % 10)
    return [f"{r.id} needs {missing.describe()}" for r in LADDER
            if (only is None or r.id in only) and (missing := gpu_arch.unmet(r.requires, cc)) is not None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compile every attention kernel for sm_90, or another architecture "
                                     "(no GPU needed).")
    parser.add_argument("--all-configs", action="store_true", help="every autotune config, not only the first")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    parser.add_argument("--head-dim", type=int, default=128, choices=[64, 128])
    parser.add_argument("--rung", action="append", help="only this rung (repeatable; default: every rung and "
                        "flash-decoding)")
    parser.add_argument("--arch", type=int, default=90, metavar="CC",
                        help="the target's compute capability as major*10+minor: 80 (A100), 89 (L40S, RTX 4090), "
                             "90 (H100, H200; default), 100 (B200), 120")
    parser.add_argument("--ignore-requirements", action="store_true",
                        help="compile a rung the architecture cannot run (a Gluon rung off sm_90): the compiler's own "
                             "verdict, usually an LLVM abort; for checking a rung's requirement")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="also write the rows (without compile times) and sources_key() to FILE")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("aot: unset TRITON_INTERPRET: the interpreter cannot compile for a GPU", file=sys.stderr)
        return 2
    unmet = [] if args.ignore_requirements else unmet_requirements(args.rung, args.arch)
    if unmet and args.rung:
        print(f"aot: {unmet[0]}; leave --rung out, or pass --ignore-requirements", file=sys.stderr)
        return 2
    only = args.rung or ([r.id for r in LADDER if gpu_arch.unmet(r.requires, (args.arch // 10, args.arch % 10)) is None]
                         if unmet else None)
    if unmet:  # every rung: those the architecture runs, and flash-decoding
        print(f"aot: {len(unmet)} rungs left out at sm_{args.arch}: " + "; ".join(unmet), file=sys.stderr)
    rows = compile_all(args.all_configs, args.dtype, args.head_dim, only, args.arch, decode=not args.rung)
    if args.record is not None:
        given = list(sys.argv[1:] if argv is None else argv)
        dropped = {i + 1 for i, a in enumerate(given) if a == "--record"}  # its FILE, given apart
        args.record.write_text(json.dumps({
            "key": sources_key(), "triton": importlib.metadata.version("triton"),
            "args": [a for i, a in enumerate(given) if i not in dropped and a not in ("--record", "--json")
                     and not a.startswith("--record=")], "arch": args.arch,
            "dtype": args.dtype, "head_dim": args.head_dim, "all_configs": args.all_configs,
            "rows": [{k: v for k, v in row.items() if k != "compile_s"} for row in rows]}, indent=1) + "\n")
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
