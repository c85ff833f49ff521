"""The FlashAttention ladder: every rung, its file, its kernel and its pre-registered prediction.

Pure Python (no torch, no triton, no theory: the GPU runner imports it): tests, the runner and the report read the same objects. Each
rung's module docstring states what changes, the predicted effect and the measured outcome;
the efficiency range here is the one its header states (a test keeps the two equal), written
before any GPU measurement of the rung.

Predictions use the session's measured ceilings (bf16 GEMM rate, read bandwidth) and the
rung's stated efficiency on the tensor-core work (theory/attention.py): time =
max(executed FLOPs / (eff * GEMM peak), DRAM bytes / read bandwidth), except the naive rung
whose S round trip adds (naive_time). Executed FLOPs are counted on PREDICTION_TILING, the
tiling every rung's first config uses.

Warp specialization is r7's change. In Triton 3.6 the `triton.language` path,
`tl.range(..., warp_specialize=True)`, is documented as "only supported on Blackwell GPUs and
only works on simple matmul loops" (language/core.py); the compiler's sm_90 branch runs an
undocumented Hopper pass (backends/nvidia/compiler.py: add_hopper_warpspec). Triton 3.6 does
offer it on Hopper through its experimental Gluon dialect: `triton.experimental.gluon.language.
warp_specialize` (partitions of warps; its lowering, add_warp_specialize_to_llvm, is not gated
on the architecture) with `gluon.language.nvidia.hopper`'s warpgroup_mma, tma and mbarrier. r7 is
that rung (a producer warp issuing TMA, consumer warpgroups issuing wgmma); it compiles for sm_90a
here (aot.py) and was first measured on the H200 on 2026-12-04. r8 is FA-3's inter-warpgroup ping-pong on top of it
(each consumer warpgroup its own partition, their GEMMs in turns), also Gluon, written 2026-12-04 before any run.
Triton's interpreter cannot run Gluon (NOT_INTERPRETED), so on the GPU each Gluon rung is first run in a child
process (its preflight, measure/flashattn_runner.py) before it is timed in the test process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_anatomy.gpu_arch import Requirement


HERE = Path(__file__).resolve().parent
PREDICTION_TILING = (128, 64)  # (BLOCK_M, BLOCK_N)
_EFF_RE = re.compile(r"efficiency (\d\.\d+)-(\d\.\d+) \(mid (\d\.\d+)\)")


@dataclass(frozen=True)
class Stated:
    """An efficiency range as the rung header states it (theory.attention.Efficiency takes it)."""

    lo: float
    mid: float
    hi: float
    why: str


@dataclass(frozen=True)
class Rung:
    id: str
    title: str
    module: str  # file in kernels/flashattn/ (without .py) holding the header
    kernel: str  # jit function name in `kernel_module` (or module's own launch())
    efficiency: Stated
    time_model: str = "forward"  # "forward" | "naive"
    constexprs: tuple[tuple[str, object], ...] = ()
    kernel_module: str | None = None  # where the kernel lives when another rung's file has it
    dialect: str = "triton"  # "gluon": triton.experimental.gluon (no interpreter; compiled by aot.py, preflighted)
    # What the card's architecture must offer (gpu_arch): none for a triton.language rung, which Triton lowers for
    # every target it supports (r1-r6 and flash-decoding, every config, compiled for sm_80, 89, 100 and 120 on
    # 2026-12-05, TMA descriptors included; sm_80 in CI: tests_flashattn/test_flashattn_arch.py); a Gluon rung
    # written against Hopper's own instructions names sm_90a.
    requires: tuple[Requirement, ...] = ()

    @property
    def path(self) -> Path:
        return HERE / f"{self.module}.py"


# Gluon's hopper module: warpgroup_mma (wgmma), TMA and setmaxnreg; Triton's LLVM cannot select them for sm_80-89
# (setmaxnreg) or sm_100/120 (wgmma), and aborts the compiling process: measure/flashattn_runner checks first.
HOPPER_GLUON = Requirement("sm_90a", "Gluon's Hopper wgmma, TMA and setmaxnreg for warp specialisation")


def _eff(lo: float, mid: float, hi: float, why: str) -> Stated:
    return Stated(lo, mid, hi, why)


LADDER: tuple[Rung, ...] = (
    Rung("r1-naive", "naive tiled: S materialised in HBM", "r1_naive", "launch",
         _eff(0.25, 0.40, 0.60, "two plain tiled GEMM kernels (no softmax in the MMA loop), unpipelined"),
         time_model="naive"),
    Rung("r2-fa1", "online softmax, FA-1 loop order (KV outer, O in HBM)", "r2_fa1", "fa1_fwd",
         _eff(0.08, 0.15, 0.30, "O/m/l read and written per KV step (L2-resident), 128-row programs")),
    Rung("r3-fa2", "FA-2 loop order (queries outer, O in registers)", "r3_fa2", "fa2_fwd",
         _eff(0.25, 0.38, 0.50, "dependent MMAs serialised with softmax and unpipelined loads")),
    Rung("r4-causal-split", "causal split: unmasked off-diagonal tiles, masked diagonal", "r4_causal_split",
         "split_fwd", _eff(0.25, 0.40, 0.52, "as r3, minus the masking of off-diagonal and interior tiles"),
         constexprs=(("EXP2", False),)),
    Rung("r5-exp2", "exp2 with the softmax scale folded in", "r5_exp2", "split_fwd",
         _eff(0.28, 0.43, 0.58, "as r4, one FMA per score instead of a multiply plus exp's own scaling"),
         constexprs=(("EXP2", True),), kernel_module="r4_causal_split"),
    Rung("r6-tma-pipelined", "TMA tensor descriptors and software pipelining (num_stages 2-3)",
         "r6_tma_pipelined", "launch",
         _eff(0.40, 0.55, 0.72, "K/V loads overlap the MMAs; Triton's FA on Hopper without warp specialization")),
    Rung("r7-warp-specialized", "warp specialisation in Gluon: a TMA producer warp, two consumer warpgroups",
         "r7_warp_specialized", "launch",
         _eff(0.55, 0.71, 0.88, "loads leave the consumers (a producer warp, an mbarrier ring); QK^T(j+1) and "
                                "PV(j-1) in flight under softmax(j); no inter-warpgroup ping-pong"),
         dialect="gluon", requires=(HOPPER_GLUON,)),
    Rung("r8-pingpong", "FA-3 ping-pong in Gluon: each consumer warpgroup its own partition, GEMMs in turns",
         "r8_pingpong", "launch",
         _eff(0.58, 0.74, 0.90, "one warpgroup's softmax under the other's GEMMs (turns ordered by mbarriers, "
                                "Gluon has no named barrier); PV(j-1) in flight under softmax(j); 128 x 128 tiles"),
         dialect="gluon", requires=(HOPPER_GLUON,)),
)
BEST = "r6-tma-pipelined"  # the best rung measured so far: the N sweep's and the long profiles' rung
# The rungs the targets take the fastest of, each where it was measured in the same session (r7 from its first
# measured session on; recordings without it keep r6): tests_flashattn/test_flashattn_gpu.py.
TARGET_RUNGS = (BEST, "r7-warp-specialized", "r8-pingpong")  # r8 (issue 22's FA-3 rung) joined 2026-12-04, first run 18:48
NOT_INTERPRETED = ("Triton 3.6's interpreter (TRITON_INTERPRET=1) runs triton.language kernels only: a Gluon kernel "
                   "(explicit layouts, mbarriers, TMA, wgmma, warp_specialize) has no interpreter path, so on the CPU "
                   "this rung is checked by its sm_90a compile (aot.py) and on the GPU against the fp32 reference")

# flash-decoding: fraction of measured read bandwidth the split-K kernel streams K/V at
DECODE_BANDWIDTH = _eff(0.75, 0.85, 0.95, "one pass over K/V in 64-token tiles, 4 programs per SM in flight")
DECODE_LAUNCH_S = 4e-6  # the gap of one extra back-to-back kernel (the reduction), stated, not fitted
DECODE_BLOCK_N = 64


@dataclass(frozen=True)
class DecodeVariant:
    """A flash-decoding kernel variant: its file, and the prefix of its recordings' names
    (`<prefix>.b{B}h{H}kv{H_kv}l{L}d{D}`; measure/flashattn_runner.decode_name)."""

    id: str
    prefix: str
    fused_reduce: bool
    module: str
    title: str

    @property
    def path(self) -> Path:
        return HERE / f"{self.module}.py"


DECODE_VARIANTS = (
    DecodeVariant("fd-split-reduce", "fd", False, "decode", "split-K kernel, then a reduction kernel (two launches)"),
    DecodeVariant("fd2-fused-reduce", "fd2", True, "decode_fused",
                  "split-K kernel whose last program per (sequence, KV head) reduces: an acq_rel arrival counter, "
                  "reset by that program (one launch)"),
)
# fd2's pre-registered effect (issue 22 item 5; written 2026-12-04 ~21:30, before any run of it): the time it takes off
# the line's fixed part (~10.6 us: the split-K kernel's start and the reduction kernel's launch and run, which no
# recording separates; every timing is one CUDA-event pair around both kernels), at the same inputs in the same
# session. Stated, not fitted: the removed reduction kernel priced as the first pre-registration priced its boundary
# (DECODE_LAUNCH_S), less what the fusion adds to the end of each group's last program.
DECODE_FUSED_TAIL_S = 1.5e-6  # the last program's release fence and atomic (~1 us), then its partials read from L2
DECODE_FUSED_SAVING = _eff(
    1.0e-6, DECODE_LAUNCH_S - DECODE_FUSED_TAIL_S, 5.0e-6,
    "the reduction kernel's launch gap and run (4 us as stated for it; 2.5-6 us) gone, the last split's serialised "
    "tail (atomic, partials from L2, O stores: 1-1.5 us) added")


def decode_variant(variant_id: str) -> DecodeVariant:
    for v in DECODE_VARIANTS:
        if v.id == variant_id:
            return v
    raise KeyError(f"no flash-decoding variant {variant_id!r}; variants: {[v.id for v in DECODE_VARIANTS]}")


# Nsight Compute launches (scripts/device/flashattn_profile.py; tests_flashattn/test_flashattn_counters.py):
# every rung at the target shape, the best rung where K/V outgrow the L2's share (the N sweep's 32k
# shape: 2 heads' K/V in flight, 32 MiB > L2/2) and where one head's K/V alone exceed the L2 (128k:
# 64 MiB > 60 MiB). Full and causal each.
PROFILE_TARGET = {"batch": 4, "heads": 32, "n": 4096, "head_dim": 128}
PROFILE_LONG = ({"batch": 1, "heads": 16, "n": 32768, "head_dim": 128},
                {"batch": 1, "heads": 4, "n": 131072, "head_dim": 128})


# The rungs Nsight Compute reads: every rung. Each Gluon rung joined after it passed its first GPU session (a hang or a
# fault would end the profile run, whose launches are not isolated as the live session's are), with an IO prediction of
# its own written before its counters existed (tests_flashattn/test_flashattn_counters.py's header): r7 on 2026-12-04
# (first run 14:57), r8 on 2026-12-04 (first run 18:48; prediction written ~19:45, before any counter of it).
PROFILED = LADDER


def profile_launches() -> list[dict[str, Any]]:
    """{rung, batch, heads, n, head_dim, causal} in launch order."""
    out: list[dict[str, Any]] = [{"rung": r.id, **PROFILE_TARGET, "causal": c}
                                 for r in PROFILED for c in (False, True)]
    out += [{"rung": BEST, **s, "causal": c} for s in PROFILE_LONG for c in (False, True)]
    return out


def profile_label(batch: int, heads: int, n: int, head_dim: int, causal: bool) -> str:
    """The shape part of a counter recording's name: ncu.fa2.<rung>.<label>."""
    return f"b{batch}h{heads}n{n}d{head_dim}.{'causal' if causal else 'full'}"


def rung(rung_id: str) -> Rung:
    for r in LADDER:
        if r.id == rung_id:
            return r
    raise KeyError(f"no attention rung {rung_id!r}; rungs: {[r.id for r in LADDER]}")


def header(r: Rung | DecodeVariant) -> dict[str, str]:
    """The rung's (or decode variant's) file's docstring fields: what_changes, predicted_effect, measured_outcome."""
    import ast

    doc = ast.get_docstring(ast.parse(r.path.read_text(encoding="utf-8"))) or ""
    out: dict[str, str] = {}
    names = ("What changes:", "Predicted effect:", "Measured outcome:")
    for i, name in enumerate(names):
        start = doc.find(name)
        if start < 0:
            raise ValueError(f"{r.path}: docstring has no {name!r} paragraph")
        end = doc.find(names[i + 1]) if i + 1 < len(names) else len(doc)
        out[name.rstrip(":").lower().replace(" ", "_")] = " ".join(doc[start + len(name):end].split())
    return out


def header_efficiency(r: Rung) -> tuple[float, float, float]:
    m = _EFF_RE.search(header(r)["predicted_effect"])
    if m is None:
        raise ValueError(f"{r.path}: 'Predicted effect:' states no 'efficiency LO-HI (mid MID)'")
    lo, hi, mid = (float(x) for x in m.groups())
    return lo, mid, hi
