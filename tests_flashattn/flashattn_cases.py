"""Attention cases of the GPU tests: what one case is, its pre-registered prediction, and what
measuring it costs on the H200 (priced before a visit; `--anatomy-plan` now uses constants fitted on
the recorded sessions, tests_flashattn/conftest.py).

The prediction and the cost model read theory/attention.py only; the cost model's constants are
planning numbers (what the first H200 session spent), never a tolerance of any test.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.theory import attention as at
from pytest_anatomy.theory.prediction import Prediction


@dataclass(frozen=True)
class Case:
    rung: str
    batch: int
    heads: int
    n: int
    head_dim: int
    causal: bool
    kv_heads: int | None = None
    dtype: str = "bf16"  # or "fp16": the same 2 bytes and, on Hopper, the same dense tensor-core peak

    @property
    def name(self) -> str:
        from pytest_anatomy.measure.flashattn_runner import case_name

        return case_name(self.rung, self.batch, self.heads, self.n, self.head_dim, self.causal,
                         kv_heads=self.kv_heads, dtype=self.dtype)

    def shape(self) -> at.AttentionShape:
        return at.AttentionShape.prefill(self.batch, self.heads, self.n, self.head_dim, causal=self.causal,
                                         kv_heads=self.kv_heads)

    def live(self) -> Any:
        from pytest_anatomy.measure.flashattn_runner import live_case

        return live_case(self.rung, batch=self.batch, heads=self.heads, n=self.n, head_dim=self.head_dim,
                         causal=self.causal, kv_heads=self.kv_heads, dtype=self.dtype)


def as_ceilings(c: Any) -> at.Ceilings:
    """conftest's SessionCeilings -> the theory's Ceilings."""
    return at.Ceilings(c.gemm_flops, c.read_bandwidth, c.source)


def predict(case: Case, ceil: at.Ceilings, spec: Any) -> tuple[Prediction, tuple[float, float], str]:
    """The rung's prediction at its stated mid efficiency, and the time ratio its range allows."""
    r = registry.rung(case.rung)
    fn = at.naive_time if r.time_model == "naive" else at.forward_time
    tiling = at.Tiling(*registry.PREDICTION_TILING)
    kw = {"l2_bytes": spec.require("l2_bytes"), "sm_count": spec.require("sm_count")}

    def at_eff(x: float) -> Prediction:
        e = r.efficiency
        return fn(case.shape(), tiling, ceil, at.Efficiency(min(e.lo, x), x, max(e.hi, x), e.why), **kw)
    e = r.efficiency
    mid = at_eff(e.mid)
    band = (at_eff(e.hi).value / mid.value, at_eff(e.lo).value / mid.value)
    why = (f"{case.rung}'s stated efficiency range {e.lo}-{e.hi} (mid {e.mid}) on the tensor-core work, "
           f"carried through the time model: measured/predicted in [{band[0]:.3g}, {band[1]:.3g}]")
    return mid, band, why


def decode_prediction(d: at.DecodeShape, ceil: at.Ceilings, sm_count: int, fraction: float | None = None) -> Prediction:
    """Flash-decoding's pre-registered time: K/V at `fraction` (default: the stated mid) of the read ceiling, plus the
    split-K reduction (registry.DECODE_BANDWIDTH, DECODE_LAUNCH_S)."""
    splits = at.decode_splits(d, sm_count, registry.DECODE_BLOCK_N)
    return at.decode_time(d, splits, ceil, launch_s=registry.DECODE_LAUNCH_S,
                          bandwidth_fraction=fraction or registry.DECODE_BANDWIDTH.mid)


# --- what a live case costs (the plan's estimate) ---------------------------------------------
# Planning constants from the first H200 session (2026-12-01, 20 cases in 76 s; aot.py's compile
# times): they size the visit, they judge nothing.
PLAN_CEILINGS = at.Ceilings(7.8e14, 4.3e12, "planning: the H200's ceilings of 2026-12-01 (results/h200/ceilings)")
PLAN_L2_BYTES, PLAN_SM_COUNT = 60 * 2**20, 132
COMPILE_S = 1.0  # one Triton config compiled for sm_90 (0.5-1.3 s measured)
AUTOTUNE_S_PER_CONFIG = 0.25  # do_bench's warm-up + repetitions per (config, shape)
SETUP_S = 0.4  # inputs, poisoning, a first sdpa call per shape (cuDNN plan), Python
FP32_CHECK_FLOPS = 2.5e13  # the fp32 reference (memory-efficient sdpa) on batch 0, FLOP/s
SDPA_FACTOR = 4.1  # ours, default (~0.67x ours), FLASH_ATTENTION (~1.35x ours), ours again: first H200 run
RUNS, WARMUP, BLOCK_CAP_S = 20, 3, 3.0  # live_case's defaults; time_flushed caps a block near 3 s
FLUSH_S = 512 * 2**20 / 4.3e12  # the L2 eviction read before each timed run
# autotune configs of the rungs that have more than one (test_flashattn_plan.py counts them in their files); others 1-2
AUTOTUNE_CONFIGS = {registry.BEST: 4, "r7-warp-specialized": 3, "r8-pingpong": 2}


def compile_key(case: Case) -> tuple[str, int, bool, bool, str]:
    """What makes Triton compile anew: the rung, D and CAUSAL (constexprs), whether GROUP == 1
    (Triton specialises an integer argument equal to 1) and the dtype (the pointers' element type);
    N, B and H are runtime integers."""
    return (case.rung, case.head_dim, case.causal, (case.kv_heads or case.heads) == case.heads, case.dtype)


def case_seconds(case: Case) -> float:
    """GPU seconds of one live case once its kernels are compiled: set-up, autotuning, the fp32
    check of batch 0 and four timing blocks of (warm-up + runs), each block capped as the runner caps it."""
    r = registry.rung(case.rung)
    mod_configs = AUTOTUNE_CONFIGS.get(case.rung, 1)
    fn = at.naive_time if r.time_model == "naive" else at.forward_time
    e = r.efficiency
    t = fn(case.shape(), at.Tiling(*registry.PREDICTION_TILING), PLAN_CEILINGS,
           at.Efficiency(e.lo, e.mid, e.hi, e.why), l2_bytes=PLAN_L2_BYTES, sm_count=PLAN_SM_COUNT).value
    block = min(BLOCK_CAP_S + WARMUP * t, WARMUP * t + RUNS * (t + FLUSH_S))
    batch0 = at.AttentionShape.prefill(1, case.heads, case.n, case.head_dim, causal=case.causal)
    check = at.attention_flops(batch0).value / FP32_CHECK_FLOPS
    return SETUP_S + mod_configs * AUTOTUNE_S_PER_CONFIG + check + block * SDPA_FACTOR


def estimate_s(cases: Iterable[Case], compiled: Iterable[Case] = ()) -> float:
    """GPU seconds to measure `cases` in a session that has already measured `compiled`:
    each case's own cost, plus a compile per config of every kernel specialisation not yet built."""
    built = {compile_key(c) for c in compiled}
    todo = [c for c in dict.fromkeys(cases) if c not in set(compiled)]
    new_keys = {compile_key(c) for c in todo} - built
    configs = {k: AUTOTUNE_CONFIGS.get(k[0], 1) for k in new_keys}
    return sum(case_seconds(c) for c in todo) + COMPILE_S * sum(configs.values())


# --- `--anatomy-plan`'s entries (tests_flashattn/conftest.py answers the hook with them) -------------------------
# FITTED on the two full live sessions results/h200/live-runs/20261201T235925Z.full.log.xz and
# 20261202T022605Z.full.log.xz (faster, slower machine): the 20 timing cases 50.5 / 56.4 s, Triton compiles
# included (the fast subsets' 6 cases, all of the already-compiled best rung but two, took 4.3-4.9 s: this
# overestimates them), the sweep's 18 more 25.1 / 26.9 s (estimate_s priced them 45 s)
PLAN_TIMING_S, PLAN_TIMING_HIGH_S = 2.5, 2.8  # per timing case
PLAN_SWEEP_S, PLAN_SWEEP_HIGH_S = 1.4, 1.5  # per sweep case beyond them
PLAN_FIRST_COMPILE_S = 5.0  # the best rung's compile, when no timing case builds it
# The Gluon rung, FITTED on its one live session (results/h200/live-runs/20261204T145709Z.r7.log.xz: its 4 target
# cases, 47.5 s in all): its first case took 20.9 s and the next three 6.4-6.7 s, each of those compiling its 3 configs
# anew (causal, fp16). So its child-process preflight ~14 s (20.9 - 6.7), and a kernel specialisation's 3 Gluon
# compiles ~4 s (6.5 s a compiling case, less the timing entry's 2.5 s); the high end 25% above (one session).
# r8, FITTED on its one live session (results/h200/live-runs/20261204T184728Z.r8.log.xz): its first case 42.1 s, the
# next three 13.9, 12.5 and 12.5 s, each compiling its 2 configs anew (causal, fp16): a specialisation's compiles
# ~10.5 s (13.0 s less the timing entry's 2.5 s; three partitions, 2 configs), its preflight ~29 s (42.1 - 13.0).
GLUON_PREFLIGHT_S = {"r7-warp-specialized": 14.0, "r8-pingpong": 29.0}
GLUON_COMPILE_S = {"r7-warp-specialized": 4.0, "r8-pingpong": 10.5}  # per compile_key of the rung: all its configs
GLUON_HIGH = 1.25


def live_plan(timing: set[Any], sweep: set[Any]) -> list[dict[str, Any]]:
    """The plan's entries for the selected timing cases (decode shapes among them) and sweep cases: each case compiled,
    checked and timed once; the sweep's cases beyond the timing tests' (marked slow); a Gluon rung's preflight and
    compiles, which the fitted per-case prices (Triton rungs only) do not hold."""
    out = []
    if timing:
        out.append({"suite": "flashattn", "what": f"{len(timing)} attention cases (the rungs beside torch's sdpa "
                    "backends)", "estimate_s": PLAN_TIMING_S * len(timing),
                    "estimate_high_s": PLAN_TIMING_HIGH_S * len(timing)})
    extra = sweep - timing
    if extra:
        triton_rungs = any(registry.rung(c.rung).dialect == "triton" for c in extra)
        first = PLAN_FIRST_COMPILE_S if triton_rungs and not timing else 0.0  # else the timing entry counts it
        what = f"N sweep: {len(extra)} more cases of the target rungs, N 512-32k (D 64/128, full/causal, GQA)"
        out.append({"suite": "flashattn", "what": what, "estimate_s": round(first + PLAN_SWEEP_S * len(extra), 1),
                    "estimate_high_s": round(first + PLAN_SWEEP_HIGH_S * len(extra), 1)})
    gluon = [c for c in timing | sweep if isinstance(c, Case) and registry.rung(c.rung).dialect == "gluon"]
    if gluon:
        keys = {compile_key(c) for c in gluon}
        rungs = sorted({c.rung for c in gluon})  # one preflight per Gluon rung (r7, r8), each once per session
        low = sum(GLUON_PREFLIGHT_S[r] for r in rungs) + sum(GLUON_COMPILE_S[k[0]] for k in keys)
        out.append({"suite": "flashattn", "what": f"Gluon rungs ({', '.join(rungs)}): child-process preflights and "
                    f"{len(keys)} kernel specialisations' compiles ({len(gluon)} cases)", "estimate_s": low,
                    "estimate_high_s": round(low * GLUON_HIGH, 1)})
    return out
