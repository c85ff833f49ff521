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
AUTOTUNE_CONFIGS = {registry.BEST: 4, "r7-warp-specialized": 3}


def compile_key(case: Case) -> tuple[str, int, bool, bool]:
    """What makes Triton compile anew: the rung, D and CAUSAL (constexprs) and whether GROUP == 1
    (Triton specialises an integer argument equal to 1); N, B and H are runtime integers."""
    return (case.rung, case.head_dim, case.causal, (case.kv_heads or case.heads) == case.heads)


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
