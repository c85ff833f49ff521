"""Three ledgers for hand-written kernels, as Predictions (the seed's stage 02: docs/FACTS.md S8).

1. Byte ledger: bytes over bandwidth, FLOPs over peak; the larger is the floor. Two byte
   counts: *issued* (what the kernel's load instructions ask for if no cache helped: the
   textbook arithmetic intensity of a tiling) and *DRAM* (compulsory: each input read once, each
   output written once; for streaming rungs, re-reads by the same block are assumed on-chip).
2. Request ledger: memory transactions (distinct 128-byte lines per warp load) per warp-FMA,
   priced by one constant (cycles per request) fitted on a named rung.
3. Instruction ledger: load instructions per FMA by kind -- distinct-address shared loads,
   broadcast shared loads, global loads -- priced in SM-cycles per warp-FMA ("beat"); three
   prices fitted on named rungs by least squares, predicting the other rungs.

Every function here is pure: counts come from a rung's access pattern (kernels/access.py: facts
about a kernel, which the registries fill in and this theory reads), hardware numbers from a HardwareSpec or from ceilings measured in a
separate run, fitted prices from rungs the caller names. Nothing here reads a measurement of the
rung it predicts. Occupancy from a compiler resource report lives in theory/kernel_occupancy.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_anatomy.held_out import FitSet
from pytest_anatomy.kernels.access import GemmAccess, StreamAccess
from pytest_anatomy.theory.prediction import Prediction, Term

KINDS = ("lds_distinct", "lds_broadcast", "ldg")


# --- byte ledger ---------------------------------------------------------------------------
def gemm_bytes(access: GemmAccess, m: int, n: int, k: int, model: str = "issued", elem_bytes: int = 4) -> float:
    """Issued: every global load's bytes from DRAM, plus C written once. DRAM: A, B read once, C
    written once (beta = 0: C is not read)."""
    if model == "issued":
        return access.issued_bytes_per_fma * m * n * k * elem_bytes / 4 + elem_bytes * m * n
    if model == "dram":
        return float(elem_bytes * (m * k + k * n + m * n))
    raise ValueError(f"bytes model must be 'issued' or 'dram', got {model!r}")


def gemm_byte_ledger(access: GemmAccess, m: int, n: int, k: int, *, peak_flops: float, bandwidth: float,
                     model: str = "issued", elem_bytes: int = 4, sources: str = "") -> Prediction:
    """max(2MNK / peak, bytes / bandwidth): the roofline floor of one GEMM rung, in seconds."""
    flops = 2.0 * m * n * k
    nbytes = gemm_bytes(access, m, n, k, model, elem_bytes)
    t_flop, t_byte = flops / peak_flops, nbytes / bandwidth
    return Prediction(
        max(t_flop, t_byte), "s", f"max(2MNK / peak, {model} bytes / bandwidth)",
        {"M": m, "N": n, "K": k, "peak_flops": peak_flops, "bandwidth": bandwidth, "bytes_model": model,
         "arithmetic_intensity": flops / nbytes, "rung": access.name},
        (Term("2MNK / peak", t_flop, "s"), Term(f"{model} bytes / bandwidth", t_byte, "s", f"{nbytes:.4g} B")),
        notes=(f"a floor: a rung faster than this moved fewer DRAM bytes than counted; {sources}".rstrip("; "),),
    )


def stream_bytes(access: StreamAccess, m: int, n: int, model: str = "issued") -> float:
    passes = access.reads if model == "issued" else access.dram_reads
    if model not in ("issued", "dram"):
        raise ValueError(f"bytes model must be 'issued' or 'dram', got {model!r}")
    return 4.0 * m * n * (passes + access.writes) + access.aux_bytes_row * m + (4.0 * n if access.weight else 0.0)


def stream_dram_traffic(access: StreamAccess, m: int, n: int) -> tuple[float, float]:
    """(read, written) DRAM bytes of a streaming rung under the on-chip re-read assumption: its
    DRAM read passes, the side traffic and the weight vector read; its write passes."""
    read = 4.0 * m * n * access.dram_reads + access.aux_bytes_row * m / 2 + (4.0 * n if access.weight else 0.0)
    return read, 4.0 * m * n * access.writes + access.aux_bytes_row * m / 2


def reduction_dram_traffic(n: int, partials: int) -> tuple[float, float]:
    """(read, written): the input once and every 4-byte partial read back; each partial written once."""
    return 4.0 * n + 4.0 * partials, 4.0 * partials


def stream_ledger(access: StreamAccess, m: int, n: int, *, bandwidth: float, model: str = "issued",
                  bandwidth_source: str = "") -> Prediction:
    """bytes / bandwidth for a streaming rung (reads and writes: price with the copy bandwidth)."""
    nbytes = stream_bytes(access, m, n, model)
    return Prediction(
        nbytes / bandwidth, "s", f"{model} bytes / bandwidth",
        {"M": m, "N": n, "bandwidth": bandwidth, "bytes_model": model, "rung": access.name,
         "passes_read": access.reads if model == "issued" else access.dram_reads, "passes_written": access.writes},
        (Term(f"{model} bytes", nbytes, "B"), Term("bandwidth", bandwidth, "B/s", bandwidth_source)),
    )


def reduction_ledger(n: int, partials: int, *, read_bandwidth: float, bandwidth_source: str = "") -> Prediction:
    """4N bytes read, plus each partial written once and read once, over the read bandwidth."""
    nbytes = 4.0 * n + 8.0 * partials
    return Prediction(
        nbytes / read_bandwidth, "s", "(4N + 8 x partials) / read bandwidth",
        {"n": n, "partials": partials, "read_bandwidth": read_bandwidth},
        (Term("4N", 4.0 * n, "B"), Term("8 x partials", 8.0 * partials, "B"),
         Term("read bandwidth", read_bandwidth, "B/s", bandwidth_source)),
    )


# --- instruction and request ledgers ---------------------------------------------------------
def fma_rounds_per_sm(m: int, n: int, k: int, sm_count: int) -> float:
    """Warp-FMA instructions each SM must issue: MNK / 32 / SMs."""
    return m * n * k / 32.0 / sm_count


def beat_from_time(seconds: float, m: int, n: int, k: int, sm_count: int, clock_hz: float) -> float:
    """SM-cycles per warp-FMA implied by a time (the seed's 'beat' column)."""
    return seconds * clock_hz / fma_rounds_per_sm(m, n, k, sm_count)


def time_from_beat(beat: float, m: int, n: int, k: int, sm_count: int, clock_hz: float) -> float:
    return beat * fma_rounds_per_sm(m, n, k, sm_count) / clock_hz


@dataclass(frozen=True)
class Prices:
    """Fitted cycle prices and where they came from (the fit's own rungs, residuals)."""

    cycles: Mapping[str, float]
    fitted_on: tuple[str, ...]
    residuals: Mapping[str, float]
    ledger: str

    def note(self) -> str:
        prices = ", ".join(f"{k} {v:.3g}" for k, v in self.cycles.items())
        return (f"{self.ledger} prices fitted on rungs {', '.join(self.fitted_on)} only (least squares; "
                f"fit residuals {', '.join(f'{k} {v:+.1%}' for k, v in self.residuals.items())}): {prices} cycles")


def fit_prices(rows: Mapping[str, tuple[Mapping[str, float], float]], fit_on: Sequence[str],
               kinds: Sequence[str] = KINDS, ledger: str = "instruction") -> Prices:
    """Least-squares prices (cycles per instruction of each kind) from named rungs only.

    rows -- rung -> (counts per FMA by kind, measured beat); only rungs in fit_on are used."""
    missing = [r for r in fit_on if r not in rows]
    if missing:
        raise KeyError(f"cannot fit on {missing}: no data for them (have {sorted(rows)})")
    if len(fit_on) < len(kinds):
        raise ValueError(f"{len(kinds)} prices need at least {len(kinds)} rungs, got {list(fit_on)}")
    import numpy as np  # here, not at module import: the rest of the theory is plain arithmetic

    a = np.array([[rows[r][0].get(kind, 0.0) for kind in kinds] for r in fit_on])
    y = np.array([rows[r][1] for r in fit_on])
    sol, *_ = np.linalg.lstsq(a, y, rcond=None)
    cycles = {kind: float(c) for kind, c in zip(kinds, sol)}
    resid = {r: float(a[i] @ sol / y[i] - 1.0) for i, r in enumerate(fit_on)}
    return Prices(cycles, tuple(fit_on), resid, ledger)


def priced_time(counts: Mapping[str, float], prices: Prices, m: int, n: int, k: int, *, sm_count: int,
                clock_hz: float, rung: str) -> Prediction:
    """Time = (sum over kinds of count per FMA x price) x warp-FMAs per SM / clock."""
    terms = tuple(Term(f"{kind} {counts.get(kind, 0.0):.4g}/FMA x {price:.3g} cyc", counts.get(kind, 0.0) * price,
                       "cycles") for kind, price in prices.cycles.items())
    beat = sum(t.value for t in terms)
    fits = FitSet.of(f"the {prices.ledger} prices", prices.fitted_on)
    held_out = fits.is_held_out(rung)
    return Prediction(
        time_from_beat(beat, m, n, k, sm_count, clock_hz), "s",
        "beat x (MNK / 32 / SMs) / clock, beat = sum(count_kind x price_kind)",
        {"M": m, "N": n, "K": k, "sm_count": sm_count, "clock_hz": clock_hz, "beat_cycles": beat, "rung": rung,
         "held_out": held_out},
        terms, notes=(prices.note(), fits.note(rung)),
    )

