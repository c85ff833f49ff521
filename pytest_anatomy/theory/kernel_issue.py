"""The instruction ledger's latency / occupancy term: how fast an SM issues a GEMM rung's instructions.

The load-price ledger (theory/kernels.py) charges cycles per load instruction and nothing for the
FMAs, so it predicts s5-s7 under their own FFMA floor. What binds them is issue: an SM's four
schedulers issue at most one instruction per cycle each, and only when a resident warp has an
instruction whose operands are ready. Per SM

    IPC  = min(4, W / c)            W: resident warps, c: cycles a warp takes per issued instruction
    c    = c0 + L / ilp             ilp: independent FMA chains per thread (its accumulators)
    time = (busiest SM's blocks x bm bn K / 32) / ffma_share / IPC / clock

c0 is a warp's own pace with unlimited independent work (dual-issue limits, register-bank and
pipe conflicts), L the dependent latency per instruction that the thread's ilp chains share out.
c0 and L are a *fit*: least squares over the rungs the caller names, on the warp cycles per
issued instruction Nsight Compute counted for them -- never on the time being predicted.
A rung outside that fit is predicted from its own facts (kernels/access.py: accumulators, warps
per SM, FFMA share) and the fitted c0, L. What the term does not see: a pipeline that overlaps a
tile's global loads with the previous tile's FMAs changes the latency a warp waits on, not its
ilp; the fit rungs all stage tiles through registers between barriers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_anatomy.held_out import FitSet
from pytest_anatomy.theory.prediction import Prediction, Term

ISSUE_WIDTH = 4  # schedulers per SM, one instruction per cycle each (Hopper, like Volta onward)


@dataclass(frozen=True)
class IssueFit:
    """c = c0 + latency / ilp, fitted on named rungs' counted warp cycles per issued instruction."""

    c0: float
    latency: float
    fitted_on: tuple[str, ...]
    residuals: Mapping[str, float]

    def cycles_per_issue(self, ilp: float) -> float:
        return self.c0 + self.latency / ilp

    def note(self) -> str:
        res = ", ".join(f"{k} {v:+.1%}" for k, v in self.residuals.items())
        return (f"latency term fitted on {', '.join(self.fitted_on)} only (least squares on Nsight Compute's warp "
                f"cycles per issued instruction; residuals {res}): c0 {self.c0:.3g} cycles, L {self.latency:.4g} "
                "cycles shared over the thread's independent FMA chains")


def fit_issue(rows: Mapping[str, tuple[float, float]], fit_on: Sequence[str]) -> IssueFit:
    """rows: rung -> (ilp, counted warp cycles per issued instruction); only `fit_on` rungs are read.

    Two parameters need two distinct ilp values among the fitted rungs."""
    missing = [r for r in fit_on if r not in rows]
    if missing:
        raise KeyError(f"cannot fit the latency term on {missing}: no counters for them (have {sorted(rows)})")
    if len({rows[r][0] for r in fit_on}) < 2:
        raise ValueError(f"c0 and L need rungs with at least two different ilp values, got {list(fit_on)}")
    import numpy as np  # here, not at module import: the rest of the theory is plain arithmetic

    a = np.array([[1.0, 1.0 / rows[r][0]] for r in fit_on])
    y = np.array([rows[r][1] for r in fit_on])
    (c0, lat), *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = {r: float((c0 + lat / rows[r][0]) / rows[r][1] - 1.0) for r in fit_on}
    return IssueFit(float(c0), float(lat), tuple(fit_on), resid)


def _issue_rate(fit: IssueFit, ilp: float, warps_per_sm: float) -> tuple[float, float]:
    """(warp cycles per issue, the SM's instructions per cycle): min(4, W / c)."""
    c = fit.cycles_per_issue(ilp)
    return c, min(float(ISSUE_WIDTH), warps_per_sm / c)


def _busiest_sm(m: int, n: int, bm: int, bn: int, sm_count: int) -> tuple[int, int]:
    """(blocks of the grid, blocks the busiest SM runs): partial tiles count whole."""
    blocks = -(-m // bm) * -(-n // bn)
    return blocks, -(-blocks // sm_count)


def issue_time(fit: IssueFit, *, ilp: float, warps_per_sm: float, ffma_share: float, m: int, n: int, k: int,
               sm_count: int, clock_hz: float, rung: str, block_tile: tuple[int, int, int]) -> Prediction:
    """A GEMM rung's time from the issue rate its warps and ilp allow, on the busiest SM.

    block_tile (bm, bn, bk): partial tiles compute whole (a 32-row GEMM in 128-row tiles issues 4x
    its FMAs), and the busiest SM runs ceil(blocks / SMs) of them."""
    if ilp <= 0 or warps_per_sm <= 0 or not 0 < ffma_share <= 1:
        raise ValueError(f"{rung}: the issue ledger needs its accumulators, warps per SM and FFMA share "
                         f"(got {ilp}, {warps_per_sm}, {ffma_share}); state them in the rung's access pattern")
    c, ipc = _issue_rate(fit, ilp, warps_per_sm)
    bm, bn, bk = block_tile
    blocks, busiest = _busiest_sm(m, n, bm, bn, sm_count)
    ffma_per_sm = busiest * bm * bn * (-(-k // bk) * bk) / 32.0
    instructions = ffma_per_sm / ffma_share
    fits = FitSet.of("the latency term", fit.fitted_on)
    return Prediction(
        instructions / ipc / clock_hz, "s",
        "(ceil(blocks / SMs) x bm bn K / 32) / ffma_share / min(4, W / (c0 + L / ilp)) / clock",
        {"M": m, "N": n, "K": k, "block_tile": block_tile, "blocks": blocks, "sm_count": sm_count, "clock_hz": clock_hz, "ilp": ilp, "warps_per_sm": warps_per_sm,
         "ffma_share": ffma_share, "cycles_per_issue": c, "ipc": ipc, "rung": rung, "held_out": fits.is_held_out(rung)},
        (Term("warp-FFMA on the busiest SM", ffma_per_sm, "instructions",
              f"{busiest} of {blocks} blocks x {bm}x{bn}x{-(-k // bk) * bk} / 32"),
         Term("instructions per SM", instructions, "instructions", f"/ FFMA share {ffma_share:.3g}"),
         Term("warp cycles per issue", c, "cycles", f"{fit.c0:.3g} + {fit.latency:.4g} / {ilp:g}"),
         Term("SM issue rate", ipc, "instructions/cycle", f"min(4, {warps_per_sm:g} warps / {c:.3g})")),
        notes=(fit.note(), fits.note(rung)),
    )


def counted_pace(rung: str, counted_cycles_per_issue: float) -> IssueFit:
    """The pace of a kernel taken whole from its counted warp cycles per issued instruction, with no latency term
    (c = c0 at every ilp): for a rung built in another kernel's regime (s15: cuBLAS fp32's 8 warps per SM, 128
    accumulators per thread and a cp.async pipeline), priced at the pace that kernel was counted to keep, which
    the fp32 fit's c0 (3.41 cycles, from rungs that staged tiles through registers) lies above."""
    if counted_cycles_per_issue <= 0:
        raise ValueError(f"{rung}: a counted pace must be positive, got {counted_cycles_per_issue}")
    return IssueFit(counted_cycles_per_issue, 0.0, (rung,), {rung: 0.0})


# --- tensor-core (mma.sync) rungs ----------------------------------------------------------------
# One mma.sync.m16n8k16 is 16 x 8 x 16 multiply-adds: the FFMA-based formula above does not count them,
# so an mma rung is priced by the instructions its compiled K loop issues per warp and k-tile.
def refit_latency(fp32: IssueFit, rung: str, counted_cycles_per_issue: float, ilp: float) -> IssueFit:
    """The latency term for a family of rungs the fp32 fit did not see (mma.sync rungs; the cp.async-pipelined
    rung's tile candidates): c0 (a warp's own pace with unlimited independent work) kept from the fp32 fit, L
    re-fitted on one rung of the family's counted warp cycles per issued instruction at its ilp (independent
    accumulators: FFMA chains, or m16n8 mma tiles per warp). One rung, one parameter: no residual to show."""
    if counted_cycles_per_issue <= fp32.c0 or ilp <= 0:
        raise ValueError(f"{rung}: counted pace {counted_cycles_per_issue} at ilp {ilp} leaves no latency above "
                         f"c0 = {fp32.c0:.3g}")
    return IssueFit(fp32.c0, (counted_cycles_per_issue - fp32.c0) * ilp, (*fp32.fitted_on, rung), {rung: 0.0})


def mma_issue_time(fit: IssueFit, *, ilp: float, warps_per_sm: float, warps_per_block: int, issue_per_ktile: float,
                   m: int, n: int, k: int, sm_count: int, clock_hz: float, rung: str,
                   block_tile: tuple[int, int, int]) -> Prediction:
    """An mma.sync rung's time from the instructions its warps issue and the rate W / c allows, on the
    busiest SM: ceil(blocks / SMs) x warps per block x ceil(K / bk) x issue_per_ktile / min(4, W / c) / clock.

    issue_per_ktile -- instructions one warp issues per k-tile, prologue and epilogue included (the caller
    derives it from the compiled loop body and an earlier rung's counters; the inputs say how)."""
    if ilp <= 0 or warps_per_sm <= 0 or issue_per_ktile <= 0:
        raise ValueError(f"{rung}: the mma issue ledger needs ilp, warps per SM and instructions per k-tile "
                         f"(got {ilp}, {warps_per_sm}, {issue_per_ktile})")
    c, ipc = _issue_rate(fit, ilp, warps_per_sm)
    bm, bn, bk = block_tile
    blocks, busiest = _busiest_sm(m, n, bm, bn, sm_count)
    ktiles = -(-k // bk)
    instructions = busiest * warps_per_block * ktiles * issue_per_ktile
    fits = FitSet.of("the latency term", fit.fitted_on)
    return Prediction(
        instructions / ipc / clock_hz, "s",
        "ceil(blocks / SMs) x warps/block x ceil(K / bk) x issue per k-tile / min(4, W / (c0 + L / ilp)) / clock",
        {"M": m, "N": n, "K": k, "block_tile": block_tile, "blocks": blocks, "sm_count": sm_count,
         "clock_hz": clock_hz, "ilp": ilp, "warps_per_sm": warps_per_sm, "issue_per_ktile": issue_per_ktile,
         "cycles_per_issue": c, "ipc": ipc, "rung": rung, "held_out": fits.is_held_out(rung)},
        (Term("instructions on the busiest SM", instructions, "instructions",
              f"{busiest} of {blocks} blocks x {warps_per_block} warps x {ktiles} k-tiles x {issue_per_ktile:.4g}"),
         Term("warp cycles per issue", c, "cycles", f"{fit.c0:.3g} + {fit.latency:.4g} / {ilp:g}"),
         Term("SM issue rate", ipc, "instructions/cycle", f"min(4, {warps_per_sm:g} warps / {c:.3g})")),
        notes=(fit.note(), fits.note(rung)),
    )


# --- the tensor pipe: a rung whose warps issue next to nothing besides its MMAs -------------------------------
# A warp-specialised TMA rung's consumer warps issue a few instructions per wgmma, so the issue ledger above has
# nothing to charge: the tensor pipe binds. Its price is the busiest SM's tiles at the pipe's FLOP per SM-cycle,
# at the efficiency and clock a recorded kernel reached under a full tensor load (cuBLAS bf16, counted by Nsight
# Compute and timed in the same session).
@dataclass(frozen=True)
class TensorPipeFit:
    """Tensor work over elapsed cycles (efficiency) and elapsed cycles over the timed time (clock) of one kernel."""

    efficiency: float
    clock_hz: float
    fitted_on: str

    def note(self) -> str:
        return (f"tensor-pipe efficiency {self.efficiency:.2%} and clock {self.clock_hz / 1e9:.3f} GHz from "
                f"{self.fitted_on} (Nsight Compute's elapsed cycles, the same kernel's timed median)")


def fit_tensor_pipe(*, elapsed_cycles: float, timed_s: float, m: int, n: int, k: int, sm_count: int,
                    flop_per_sm_cycle: float, fitted_on: str) -> TensorPipeFit:
    """Efficiency = 2 m n k / (SMs x FLOP per SM-cycle) / counted cycles; clock = counted cycles / timed seconds."""
    if elapsed_cycles <= 0 or timed_s <= 0:
        raise ValueError(f"{fitted_on}: the tensor-pipe fit needs counted cycles and a time, got "
                         f"{elapsed_cycles}, {timed_s}")
    work = 2.0 * m * n * k / (sm_count * flop_per_sm_cycle)
    return TensorPipeFit(work / elapsed_cycles, elapsed_cycles / timed_s, fitted_on)


def tensor_pipe_time(fit: TensorPipeFit, *, m: int, n: int, k: int, sm_count: int, flop_per_sm_cycle: float,
                     rung: str, block_tile: tuple[int, int, int]) -> Prediction:
    """ceil(blocks / SMs) x 2 bm bn ceil(K / bk) bk / FLOP per SM-cycle / efficiency / clock: partial tiles
    compute whole (a 32-row GEMM in 128-row tiles runs 4x its FLOPs on the tensor pipe)."""
    bm, bn, bk = block_tile
    blocks, busiest = _busiest_sm(m, n, bm, bn, sm_count)
    cycles = busiest * 2.0 * bm * bn * (-(-k // bk) * bk) / flop_per_sm_cycle
    return Prediction(
        cycles / fit.efficiency / fit.clock_hz, "s",
        "ceil(blocks / SMs) x 2 bm bn ceil(K / bk) bk / FLOP per SM-cycle / efficiency / clock",
        {"M": m, "N": n, "K": k, "block_tile": block_tile, "blocks": blocks, "sm_count": sm_count,
         "flop_per_sm_cycle": flop_per_sm_cycle, "efficiency": fit.efficiency, "clock_hz": fit.clock_hz,
         "rung": rung, "fitted_on": fit.fitted_on},
        (Term("tensor cycles on the busiest SM", cycles, "cycles",
              f"{busiest} of {blocks} tiles x 2 x {bm}x{bn}x{-(-k // bk) * bk} / {flop_per_sm_cycle:g}"),
         Term("efficiency", fit.efficiency, "", fit.fitted_on),
         Term("clock under tensor load", fit.clock_hz, "Hz", fit.fitted_on)),
        notes=(fit.note(),),
    )
