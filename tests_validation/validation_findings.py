"""Findings of the validation suite, as data: the sourced causes (each with the arithmetic of its
band), the grouping of misses whose cause is not established, and the candidate texts those
findings cite. The test modules route each miss here at collection (sweeps.py predicts; nothing
here reads a prediction's inputs from the measurement it is checked against).

Numbers in a reason are formatted from the constants they come from (shares of a published profile,
the catalog's memory total, the calibration spread), or, for a finding whose cause is not
established, from the routed misses themselves (the observed range, stated as such)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sweeps import CALIBRATION_SPREAD  # every band is widened by it; the reasons quote it

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.units import GiB, MiB

# --- misses: findings (a cause with its own arithmetic, or one whose cause is not established) ------
# Routing needs the measured numbers at collection; predictions and tolerances never use them: a
# sourced finding's `expected` is the prediction re-run under its cause; a miss whose cause is not
# established joins its metric's finding, whose `expected` is the observed range (finding_marks).
# vLLM v0.5.3's profile (Llama 3 8B on one H100; vLLM blog, 2024-09-05, "vLLM v0.6.0: 2.7x Throughput
# Improvement"): shares of execution time in scheduling and in the HTTP API server.
OLD_VLLM_SCHEDULING_SHARE = 0.29
OLD_VLLM_API_SERVER_SHARE = 0.33
OLD_VLLM_WITHOUT_API_SERVER = round(1 - OLD_VLLM_API_SERVER_SHARE, 2)  # to the profile's 2 digits
# An offline run has no API server: the CPU share of what remains, and the step-time factor it allows.
OLD_VLLM_CPU_SHARE = OLD_VLLM_SCHEDULING_SHARE / OLD_VLLM_WITHOUT_API_SERVER
OLD_VLLM_CPU = 1 / (1 - OLD_VLLM_CPU_SHARE)
OLD_VLLM_REASON = (
    f"vLLM before v0.6.0 spent {OLD_VLLM_SCHEDULING_SHARE:.0%} of its execution time scheduling and "
    f"{OLD_VLLM_API_SERVER_SHARE:.0%} in the HTTP API server (profile of v0.5.3, Llama 3 8B on one H100: vLLM blog, "
    "2024-09-05, 'vLLM v0.6.0: 2.7x Throughput Improvement'). Argonne's runs are 2024 offline runs "
    "(LLM-Inference-Bench, version not recorded), which have no API server: up to "
    f"{OLD_VLLM_SCHEDULING_SHARE:.2f} / {OLD_VLLM_WITHOUT_API_SERVER:.2f} = {OLD_VLLM_CPU_SHARE:.0%} of each step "
    f"is CPU time the GPU waits for, so step times up to 1 / (1 - {OLD_VLLM_CPU_SHARE:.2f}) = {OLD_VLLM_CPU:.2f}x "
    "our transferred 0.26.0 calibration. Band: the sweep's low end (no such cost) to its high end x "
    f"{OLD_VLLM_CPU:.2f}, +-{CALIBRATION_SPREAD:.0%} calibration spread.")


@dataclass(frozen=True)
class Route:
    """How one reconciliation of a case is marked: a sourced cause's finding (id, reason, expected
    ratio band), or, with finding None, a miss whose cause is not established (grouped by
    finding_marks into one finding per source, card, engine and metric)."""

    quantity: str
    ratio: float  # measured / predicted
    tolerance: tuple[float, float]
    finding: tuple[str, str, tuple[float, float]] | None = None


def route(measured: float, central: float, tolerance: tuple[float, float], quantity: str,
          causes: tuple[tuple[str, str, tuple[float, float]], ...] = ()) -> Route | None:
    """None when the measurement is within tolerance; else the first cause whose band covers it,
    else a miss whose cause is not established."""
    r = measured / central
    if tolerance[0] <= r <= tolerance[1]:
        return None
    for fid, reason, band in causes:
        if band[0] <= r <= band[1]:
            return Route(quantity, r, tolerance, finding=(fid, reason, band))
    return Route(quantity, r, tolerance)


def _outward(lo: float, hi: float) -> tuple[float, float]:
    """The observed range rounded outward to 3 significant digits (the band printed in the reason)."""
    def sig(x: float, up: bool) -> float:
        if x <= 0:
            return 0.0
        scale = 10 ** (math.floor(math.log10(x)) - 2)
        return (math.ceil if up else math.floor)(x / scale - (1e-9 if up else -1e-9)) * scale
    return sig(lo, False), sig(hi, True)


def finding_marks(hardware: str, source: str, engine: str, routes: list[list[Route | None]],
                  candidates: str) -> list[list[Any]]:
    """The finding marks of each case (same order as `routes`). A sourced cause keeps its own id and
    band; the misses without an established cause become one finding per metric on this card, whose
    expected band is the observed range of measured/predicted (a first comparison: it records what
    was seen, so drifting outside it is a divergence again)."""
    import pytest

    total: dict[str, int] = {}
    open_: dict[str, list[Route]] = {}
    for case_routes in routes:
        for r in case_routes:
            if r is not None:
                total[r.quantity] = total.get(r.quantity, 0) + 1
                if r.finding is None:
                    open_.setdefault(r.quantity, []).append(r)
    groups: dict[str, tuple[str, str, tuple[float, float]]] = {}
    for quantity, rs in open_.items():
        ratios = sorted(r.ratio for r in rs)
        lo, hi = ratios[0], ratios[-1]
        mid = len(ratios) // 2
        median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
        tol_lo, tol_hi = min(r.tolerance[0] for r in rs), max(r.tolerance[1] for r in rs)
        band = _outward(lo, hi)
        fid = f"{source}-{hardware}-{engine.replace('.', '')}-{quantity.replace('_', '-')}-cause-not-established"
        others = total[quantity] - len(rs)
        sourced = f" ({others} other misses have a sourced cause)" if others else ""
        reason = (f"{len(rs)} {source} {engine} {quantity} measurements on {hardware} miss their declared bands "
                  f"(unknown settings swept, +-{CALIBRATION_SPREAD:.0%} calibration spread; across these cases the "
                  f"bands lie within {tol_lo:.3g}-{tol_hi:.3g} x predicted): measured/predicted {lo:.3g} to "
                  f"{hi:.3g}, median {median:.3g}{sourced}. "
                  f"Cause not established. {candidates} Expected band {band[0]:.3g}-{band[1]:.3g} is this observed "
                  "range (first comparison, nothing fitted): a measurement drifting outside it is a divergence again.")
        groups[quantity] = (fid, reason, band)
    out = []
    for case_routes in routes:
        marks = []
        for r in case_routes:
            if r is None:
                continue
            fid, reason, band = r.finding or groups[r.quantity]
            # a sourced cause's band is its prediction re-run under the cause; an open one's is the observed range
            marks.append(pytest.mark.finding(fid, reason=reason, quantity=r.quantity, expected=band, hardware=hardware,
                                             band_from="explanation" if r.finding else "checked-run"))
        out.append(marks)
    return out


KV_QUEUE_REASON = (
    "The KV pool cannot hold all C requests: vLLM admits only as many as fit and the others wait in its queue, so "
    "TTFT includes waiting for a slot. Pool per rank from our memory ledger (the row's vLLM version rules, util "
    "0.90-0.95, fp8 rows with fp8 weights, bf16 KV); n = pool tokens / tokens per request, between ISL + OSL "
    "(admitted for the full length) and ISL + OSL/2 (the mean length while running); TTFT = TTFT at n + "
    f"(C / n - 1) x service time at n (Little's law in a closed loop). Band over those, +-{CALIBRATION_SPREAD:.0%} "
    "calibration spread.")


# --- cause: the H100 SXM's CUDA-visible total (inference-sim KV blocks) --------------------------------
# torch's out-of-memory message prints cudaMemGetInfo's total: 79.10-79.33 GiB on 80 GB cards in public logs,
# while the catalog's H100 SXM entry has only NVML's total, which the ledger then divides.
CUDA_TOTAL_GIB = (79.10, 79.33)


def cuda_total_reason(hardware: str = "h100-sxm") -> str:
    nvml = get_hardware(hardware).require("nvml_memory_bytes")
    return (f"The catalog's H100 SXM has no CUDA-visible total, so the ledger divides NVML's {nvml / MiB:,.0f} MiB "
            f"({nvml / GiB:.2f} GiB); vLLM requests util x cudaMemGetInfo's total, which torch's out-of-memory "
            f"messages print as {CUDA_TOTAL_GIB[0]:.2f}-{CUDA_TOTAL_GIB[1]:.2f} GiB on 80 GB cards. Band: the ledger "
            "re-run with those totals (util 0.90-0.95, non-torch 0-2x), plus one block.")


# --- candidate texts of the findings whose cause is not established ----------------------------------------
KV_BLOCKS_CANDIDATES = "Candidates: vLLM 0.15.1's profile run and, at TP 4, NCCL buffers grown past our TP2 constant."
SERVING_CANDIDATES = ("Candidates (per-kernel costs growing with layers, fp8 activation quantization, all-reduce above "
                      "20 us, client time in TTFT) and why none is claimed: docs/VALIDATION.md section 7.")
LLAMACPP_CANDIDATES = ("Candidate: no llama.cpp calibration exists on our cards (the vLLM one stands in, declared); "
                       "docs/VALIDATION.md section 7.")
OFFLINE_VLLM_CANDIDATES = ("Beyond the pre-0.6 CPU-overhead finding's band; candidate, not established: a 2024 vLLM KV "
                           "pool below B x 2L tokens (preemption); docs/VALIDATION.md section 7.")
