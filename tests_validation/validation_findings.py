"""Findings of the validation suite, as data: the sourced causes (each with the arithmetic of its
band), the grouping of misses whose cause is not established, and the candidate texts those
findings cite. The test modules route each miss here at collection (sweeps.py predicts; nothing
here reads a prediction's inputs from the measurement it is checked against).

Numbers in a reason are formatted from the constants they come from (shares of a published profile,
the catalog's memory total, the calibration spread), or, for a finding whose cause is not
established, from the routed misses themselves (the observed range, stated as such)."""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
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
    finding_marks into one finding per source, card, engine and metric). A miss set apart by name
    (set_apart) carries its own finding with band_from "checked-run"."""

    quantity: str
    ratio: float  # measured / predicted
    tolerance: tuple[float, float]
    finding: tuple[str, str, tuple[float, float]] | None = None
    band_from: str = "explanation"
    group: str = ""  # a population of its own among the misses without an established cause (GROUPS)


def route(measured: float, central: float, tolerance: tuple[float, float], quantity: str,
          causes: tuple[tuple[str, str, tuple[float, float]], ...] = (), group: str = "") -> Route | None:
    """None when the measurement is within tolerance; else the first cause whose band covers it,
    else a miss whose cause is not established (in `group`, when its rows are a population of their own)."""
    r = measured / central
    if tolerance[0] <= r <= tolerance[1]:
        return None
    for fid, reason, band in causes:
        if band[0] <= r <= band[1]:
            return Route(quantity, r, tolerance, finding=(fid, reason, band))
    return Route(quantity, r, tolerance, group=group)


def _outward(lo: float, hi: float) -> tuple[float, float]:
    """The observed range rounded outward to 3 significant digits (the band printed in the reason)."""
    def sig(x: float, up: bool) -> float:
        if x <= 0:
            return 0.0
        scale = 10 ** (math.floor(math.log10(x)) - 2)
        return (math.ceil if up else math.floor)(x / scale - (1e-9 if up else -1e-9)) * scale
    return sig(lo, False), sig(hi, True)


# A miss's band from other runs needs at least this many other recordings holding the group's misses: their scatter
# (how far one lay outside the rest) is measured only where a rest exists.
MIN_OTHER_RUNS = 2


def _beyond(xs: Sequence[float], lo: float, hi: float) -> float:
    """How far `xs` reach outside [lo, hi], relative to that range's nearer end (0 inside it)."""
    return max(0.0, 1 - min(xs) / lo, max(xs) / hi - 1)


def other_runs_band(by_run: Mapping[str, Sequence[float]], checked: str) -> tuple[float, float] | None:
    """The band of a miss recorded in run `checked`, from the group's misses in the other runs only (issue 10: a band
    is never read off the run it judges): their range of measured/predicted, widened by their measured scatter as
    runs, the most any one of them reached outside the range of the rest (how far a new run has landed beyond the runs
    before it). Rounded outward to 4 decimals; None with fewer than MIN_OTHER_RUNS other runs."""
    others = {run: tuple(xs) for run, xs in by_run.items() if run != checked and xs}
    if len(others) < MIN_OTHER_RUNS:
        return None
    every = [x for xs in others.values() for x in xs]
    scatter = 0.0
    for run, xs in others.items():
        rest = [x for other, ys in others.items() if other != run for x in ys]
        scatter = max(scatter, _beyond(xs, min(rest), max(rest)))
    return (math.floor(min(every) * (1 - scatter) * 1e4) / 1e4, math.ceil(max(every) * (1 + scatter) * 1e4) / 1e4)


# A miss that too few other recordings hold may still have a repeat: the source ran the same experiment again, and the
# importer kept that row as the same key with a suffix (importers/third_party: key.r2, .r3). The repeat is not the run
# judged, so its ratio bands the miss, widened by how repeats differ on the card's other repeated experiments.
_REPEAT = re.compile(r"\.r(\d+)$")
MIN_REPEAT_PAIRS = 5  # fewer pairs give no usable spread of the differences between repeats
# Student's t quantile at 0.995 by degrees of freedom (a two-sided 99% prediction interval for one new pair's
# difference); above 30 the 30 value, which is larger than every later one.
_T995 = {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355, 9: 3.250, 10: 3.169,
         11: 3.106, 12: 3.055, 13: 3.012, 14: 2.977, 15: 2.947, 16: 2.921, 17: 2.898, 18: 2.878, 19: 2.861,
         20: 2.845, 21: 2.831, 22: 2.819, 23: 2.807, 24: 2.797, 25: 2.787, 26: 2.779, 27: 2.771, 28: 2.763,
         29: 2.756, 30: 2.750}


def experiment(case_id: str) -> tuple[str, int]:
    """A case's experiment (its id without a repeat suffix) and which run of it the case is (1 for the first)."""
    m = _REPEAT.search(case_id)
    return (case_id[:m.start()], int(m.group(1))) if m else (case_id, 1)


def repeat_band(runs_of: Mapping[str, Mapping[int, float]], key: str, run: int) -> tuple[float, float] | None:
    """The band of run `run` of experiment `key` from its other runs only: each other run's measured/predicted (the
    prediction is the same for every run of an experiment) times the 99% prediction interval of the log ratio between
    an earlier and a later run, from the pairs of runs of every other experiment in `runs_of` (never `key`'s own:
    their mean carries the drift between a source's first and later runs, their spread the noise). Rounded outward to
    4 decimals; None where `key` has no other run or fewer than MIN_REPEAT_PAIRS pairs exist."""
    others = {n: x for n, x in runs_of.get(key, {}).items() if n != run}
    diffs = [math.log(xs[a] / xs[b]) for k, xs in runs_of.items() if k != key
             for a in xs for b in xs if a < b]
    if not others or len(diffs) < MIN_REPEAT_PAIRS:
        return None
    mean, sd = statistics.fmean(diffs), statistics.stdev(diffs)
    half = _T995[min(len(diffs) - 1, 30)] * sd * math.sqrt(1 + 1 / len(diffs))
    # run `run` from run n: ln(x_run / x_n) = +-(earlier over later), its sign by which of the two came first
    ends = [x * math.exp((mean if run < n else -mean) + side) for n, x in others.items() for side in (-half, half)]
    return (math.floor(min(ends) * 1e4) / 1e4, math.ceil(max(ends) * 1e4) / 1e4)


def _runs_of(routes: Sequence[Sequence[Route | None]], experiments: Sequence[str]
             ) -> dict[str, dict[str, dict[int, float]]]:
    """measured/predicted by quantity, experiment and run, over every routed case (misses of any finding)."""
    out: dict[str, dict[str, dict[int, float]]] = {}
    for case_id, rs in zip(experiments, routes):
        key, run = experiment(case_id)
        for r in rs:
            if r is not None:
                out.setdefault(r.quantity, {}).setdefault(key, {})[run] = r.ratio
    return out


def _sign(r: Route) -> str:
    """Which side of its declared band a miss lies on."""
    return "above" if r.ratio > r.tolerance[1] else "below"


def _key(r: Route) -> tuple[str, str, str]:
    """The finding a miss without an established cause joins: its metric, its side of the band, its group."""
    return r.quantity, _sign(r), r.group


def _open_groups(hardware: str, source: str, engine: str, open_: dict[tuple[str, str, str], list[Route]],
                 total: dict[str, int], candidates: str
                 ) -> dict[tuple[str, str, str], tuple[str, str, tuple[float, float]]]:
    """(finding id, reason, observed range) of each metric's misses without an established cause, one finding per side
    of the band (a reason that covered misses above and below would explain both signs, issue 10) and per group."""
    groups = {}
    for (quantity, side, group), rs in open_.items():
        ratios = sorted(r.ratio for r in rs)
        lo, hi = ratios[0], ratios[-1]
        mid = len(ratios) // 2
        median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
        tol_lo, tol_hi = min(r.tolerance[0] for r in rs), max(r.tolerance[1] for r in rs)
        band = _outward(lo, hi)
        both = {s for q, s, _ in open_ if q == quantity} == {"above", "below"}
        split = (f"-{side}" if both else "") + (f"-{group}" if group else "")
        fid = f"{source}-{hardware}-{engine.replace('.', '')}-{quantity.replace('_', '-')}{split}-cause-not-established"
        others = total[quantity] - sum(len(v) for (q, _, _), v in open_.items() if q == quantity)
        sourced = f" ({others} other misses have a sourced cause)" if others else ""
        apart = (f"; the {sum(len(v) for (q, s, _), v in open_.items() if q == quantity and s != side)} misses "
                 "on the other side are a finding of their own" if both else "")
        for (q, s, g), v in open_.items():
            if q == quantity and s == side and g != group:
                apart += f"; the {len(v)} {g or 'other'} misses on this side are a finding of their own"
        who = f" {GROUPS[group]}" if group else ""
        reason = (f"{len(rs)} {source} {engine} {quantity} measurements on {hardware} lie {side} their declared bands "
                  f"(unknown settings swept, +-{CALIBRATION_SPREAD:.0%} calibration spread; across these cases the "
                  f"bands lie within {tol_lo:.3g}-{tol_hi:.3g} x predicted): measured/predicted {lo:.3g} to "
                  f"{hi:.3g}, median {median:.3g}{sourced}{apart}.{who} Cause not established. {candidates} "
                  f"{_OPEN_BAND.format(n=MIN_OTHER_RUNS, lo=band[0], hi=band[1])}")
        groups[(quantity, side, group)] = (fid, reason, band)
    return groups


# Groups of misses without an established cause that are populations of their own (Route.group), and why.
GROUPS = {
    "tp1": ("These are the TP 1 rows: they have no all-reduce, so tp-allreduce-serialized-with-compute cannot reach "
            "them, and the TP > 1 misses that remain beyond it are no replicates of theirs (their other-runs band "
            "comes from TP 1 recordings only)."),
}


_OPEN_BAND = (
    "Band of a miss: where at least {n} other recordings hold this finding's misses, their range of measured/predicted "
    "(never the miss's own recording), widened by the most any one of them reached outside the rest (other-runs); "
    "else, where the source ran the same experiment again (a repeat row), the repeat's measured/predicted times the "
    "99% prediction interval of the log ratio between a first and a later run over the card's other repeated "
    "experiments (other-runs); otherwise the observed range {lo:.3g}-{hi:.3g}, the miss's own included (checked-run: "
    "it tests nothing until another run exists). A measurement outside its band is a divergence again.")


def finding_marks(hardware: str, source: str, engine: str, routes: list[list[Route | None]],
                  candidates: str, runs: Sequence[str] | None = None,
                  experiments: Sequence[str] | None = None) -> list[list[Any]]:
    """The finding marks of each case (same order as `routes`). A sourced cause keeps its own id and
    band; the misses without an established cause become one finding per metric and side of the band on
    this card (and per Route.group). `runs` names each case's recording (an independent run); with it, such a miss's
    band comes from the same finding's misses in the other recordings (other_runs_band); failing that, with
    `experiments` (each case's id, a repeat's suffix and all), from the source's repeat of the same experiment
    (repeat_band); else it is the observed range with the case's own ratio in it (checked-run)."""
    import pytest

    total: dict[str, int] = {}
    open_: dict[tuple[str, str, str], list[Route]] = {}
    by_run: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for i, case_routes in enumerate(routes):
        for r in case_routes:
            if r is not None and r.band_from == "explanation":  # set-apart misses have no sourced cause
                total[r.quantity] = total.get(r.quantity, 0) + 1
                if r.finding is None:
                    open_.setdefault(_key(r), []).append(r)
                    if runs is not None:
                        by_run.setdefault(_key(r), {}).setdefault(runs[i], []).append(r.ratio)
    groups = _open_groups(hardware, source, engine, open_, total, candidates)
    runs_of = _runs_of(routes, experiments) if experiments is not None else {}
    out = []
    for i, case_routes in enumerate(routes):
        marks = []
        for r in case_routes:
            if r is None:
                continue
            if r.finding:  # a sourced cause's band is its prediction re-run under the cause (or a set-apart miss's)
                fid, reason, band = r.finding
                band_from = r.band_from
            else:
                fid, reason, band = groups[_key(r)]
                derived = None if runs is None else other_runs_band(by_run[_key(r)], runs[i])
                if derived is None and experiments is not None:
                    derived = repeat_band(runs_of.get(r.quantity, {}), *experiment(experiments[i]))
                band, band_from = (band, "checked-run") if derived is None else (derived, "other-runs")
            marks.append(pytest.mark.finding(fid, reason=reason, quantity=r.quantity, expected=band, hardware=hardware,
                                             band_from=band_from))
        out.append(marks)
    return out



@dataclass(frozen=True)
class Apart:
    """Named rows of one card and metric whose misses lie beyond what every other recording of the card showed: a
    finding of their own, <source>-<card>-<engine>-<metric>-<side>-<name>-cause-not-established, banded by their
    own observed range (checked-run), never folded into a band the other recordings' data do not support."""

    name: str
    quantity: str
    cases: tuple[str, ...]  # Case.id of each row
    why: str  # what was computed for them and fell short, and the candidates left


def set_apart(hardware: str, source: str, engine: str, routes: list[list[Route | None]], case_ids: Sequence[str],
              runs: Sequence[str], apart: Sequence[Apart]) -> list[list[Route | None]]:
    """`routes` with each named row's miss without an established cause turned into its Apart finding while it lies
    outside the range that its group's misses on its side span in every other recording (the data other_runs_band
    widens); inside that range, or with no other recording holding such misses, it stays with its group."""
    out = [list(rs) for rs in routes]
    for a in apart:
        open_ = [(i, j, r) for i, rs in enumerate(routes) for j, r in enumerate(rs)
                 if r is not None and r.finding is None and r.quantity == a.quantity]
        beyond: dict[str, list[tuple[int, int, Route, tuple[float, float]]]] = {}
        for i, j, r in open_:
            if case_ids[i] not in a.cases:
                continue
            rest = [x.ratio for k, _, x in open_ if runs[k] != runs[i] and _key(x) == _key(r)
                    and case_ids[k] not in a.cases]
            if rest and not min(rest) <= r.ratio <= max(rest):
                beyond.setdefault(_sign(r), []).append((i, j, r, (min(rest), max(rest))))
        for side, rows in beyond.items():
            ratios = [r.ratio for _, _, r, _ in rows]
            own = _outward(min(ratios), max(ratios))
            span = (min(x[0] for *_, x in rows), max(x[1] for *_, x in rows))
            fid = (f"{source}-{hardware}-{engine.replace('.', '')}-{a.quantity.replace('_', '-')}-{side}-{a.name}"
                   "-cause-not-established")
            reason = (f"{len(rows)} {source} {engine} {a.quantity} measurements on {hardware} "
                      f"({', '.join(case_ids[i] for i, *_ in rows)}) lie {side} their declared bands at "
                      f"measured/predicted {min(ratios):.4g} to {max(ratios):.4g}, beyond the {span[0]:.4g}-"
                      f"{span[1]:.4g} that this metric's other misses {side} their bands span in the card's other "
                      f"recordings: no other recording reaches that far. {a.why} Cause not established. Band: their "
                      f"observed range {own[0]:.4g}-{own[1]:.4g}, their own included (checked-run: it tests nothing "
                      "until another recording reaches these rows).")
            for i, j, r, _ in rows:
                out[i][j] = Route(r.quantity, r.ratio, r.tolerance, (fid, reason, own), band_from="checked-run")
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
OFFLINE_VLLM_CANDIDATES = ("Beyond the pre-0.6 CPU-overhead finding's band, with the KV pool modelled (a batch the pool "
                           "cannot hold runs in waves; these rows' pools hold B x 2L many times over, TP >= 2); "
                           "candidate, not established: the pre-0.6 per-step CPU cost growing with the batch and the "
                           "TP workers (the profile behind the CPU-overhead band is one GPU's; the V0 driver broadcast "
                           "each step's inputs to the other ranks, whose all-reduce then waited on the skew, vLLM "
                           "issues #5775 and #5792, with no per-step size we could price); docs/VALIDATION.md "
                           "section 7.")


# --- cause: TP all-reduces serialized with the GEMMs (AIConfigurator TPOT; sweeps.serial_allreduce_band) ----------
SERIAL_ALLREDUCE_REASON = (
    "The step model takes max(bytes / bandwidth, FLOPs / peak) and counts each TP all-reduce's ring traffic (2 per "
    "layer, tokens x hidden x 2 B, 2 (TP - 1) / TP of it over one direction of the datasheet's NVLink) as HBM bytes "
    "inside that max, so in a step whose GEMMs bound it (prefill chunks mixed with decodes) the all-reduces cost "
    "nothing; vLLM runs them between the GEMMs on their stream, where nothing overlaps them. Band: the declared "
    "sweep (budgets, synchronized or not, all-reduce latency 5-20 us) re-run with that same traffic as its own time "
    f"after each step, +-{CALIBRATION_SPREAD:.0%} calibration spread. NVLink at its datasheet rate is the most NCCL "
    "can attain, so the band's top is the least this cost can add.")

# --- rows set apart (set_apart): beyond every other recording of their card, cause not established -------------------
TPOT_APART: dict[str, tuple[Apart, ...]] = {
    "h100-sxm": (Apart(
        "tp8-c128-extreme-rows", "tpot_mean",
        ("qwen3-32b.bf16.tp8.vllm-0.12.0:isl1024.osl128.c128", "qwen3-32b.bf16.tp8.vllm-0.12.0:isl4096.osl128.c128"),
        "They are the corner of a trend that runs through the whole Qwen3-32B bf16 grid (measured/predicted grows "
        "with TP, with C and as OSL shortens to 128, where each step carries C x ISL / OSL prompt tokens). Computed "
        "and short of them: the TP all-reduces serialized at the datasheet's NVLink (finding "
        "tp-allreduce-serialized-with-compute, whose band they lie above); KV reads at their context are already in "
        "the prediction. Candidates not computable from specs: NCCL below the datasheet's NVLink rate, the GEMM "
        "efficiency of TP 8's narrow per-rank matrices in prefill-heavy steps, per-request CPU time at C = 128."),),
}
