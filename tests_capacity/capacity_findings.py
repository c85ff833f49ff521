"""Findings of the capacity suite, as data: one definition per cause, next to nothing else.

Test modules import the marks (or the functions that compute a run's mark) from here. Every number
a reason quotes is either formatted in from the recordings it describes (the memory-on-top bands)
or checked against them by test_capacity_findings.py, so a reason cannot drift from its data.

Bands: the H200 ledger findings below keep the bands they were written with; the instance-memory
findings (gpu_memory_utilization is not a cap) are split by cause, each band from its mechanism's
arithmetic on the theory's own prediction, or from the other recorded runs than the one checked."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy import recordings
from pytest_anatomy.units import GiB, MiB

REPOSITORY_RESULTS = Path(__file__).resolve().parents[1] / "results"

# --- the V1 model runner (qwen2.5-7b with CUDA graphs, VLLM_USE_V2_MODEL_RUNNER=0) ---------------------
# Two engine starts: 2026-11-30 00:56 and 2026-12-05 04:08 (the second pre-registered, below). Every ledger term
# of the second equals the first's to the byte, so the bands below, read off the first run before the second ran,
# judge the second (the run a replay checks: the latest) from another run: band_from="other-runs".
V1_RUN = "vllm-ledger.qwen2.5-7b.u0.90.len8192.graphs.v1runner"
V1_NON_TORCH_BYTES = 249_561_088
V2_NON_TORCH_BYTES = 241_172_480  # theory/vllm_memory.NON_TORCH_INCREASE
# The card whose committed ledger recordings these findings describe (results/h200/capacity/): the
# numbers below are its. The instance-memory findings are each card's own (budget_mark): none is borrowed.
MEASURED_ON = "h200"
V2_SINGLE_GPU_RUNS = 25  # recorded V2 single-GPU runs with a ledger, every one at V2_NON_TORCH_BYTES
V1_RUNS = 2  # recorded V1-runner starts, every one at V1_NON_TORCH_BYTES
V1_AVAILABLE_PREDICTED, V1_AVAILABLE_MEASURED = 116_556_612_608, 116_548_209_664

V1_NON_TORCH = pytest.mark.finding(
    "vllm-v1-runner-non-torch", quantity="non_torch_increase_bytes", expected=(1.02, 1.05), band_from="other-runs",
    reason=f"The V1 runner's non-torch growth is {V1_NON_TORCH_BYTES:,} B, 8 MiB "
           f"({V1_NON_TORCH_BYTES - V2_NON_TORCH_BYTES:,} B) above the "
           f"{V2_NON_TORCH_BYTES:,} B all {V2_SINGLE_GPU_RUNS} single-GPU V2 runs with a ledger show (constant "
           f"fitted on qwen2.5-7b eager), to the byte in both of its {V1_RUNS} engine starts. Best explanation, not "
           "established (no recording splits non-torch memory): the V1 runner loads more CUDA code during profiling "
           "(its Triton top-k/top-p sampler, the torch-sort path); not fitted separately (one configuration). Band "
           "read off the first start (2026-11-30) before the second ran; the second (the one judged) lands on it "
           "(other-runs).")
V1_AVAILABLE = pytest.mark.finding(
    "vllm-v1-runner-non-torch-in-available", quantity="available_kv_bytes", expected=(0.99990, 0.99999),
    band_from="other-runs",
    reason="Carries the V1 non-torch excess (8 MiB) and 14,336 B of the V1 sampler's small tensors into available "
           f"KV memory: predicted {V1_AVAILABLE_PREDICTED:,} B, measured {V1_AVAILABLE_MEASURED:,} B "
           f"({(V1_AVAILABLE_MEASURED - V1_AVAILABLE_PREDICTED) / 1e6:+.1f} MB, 9 blocks) in both V1 starts. Band read "
           "off the first start before the second ran; the second (the one judged) lands on it (other-runs).")
V1_POOL = pytest.mark.finding(
    "vllm-v1-cudagraph-estimate-undercounts-pool", expected=(1.15, 1.40), band_from="other-runs",
    reason="The V1 runner subtracts its estimate (476 MiB: max first capture 226 MiB + 50 x 4 MiB PIECEWISE + "
           "50 x 1 MiB FULL, the FULL per-graph cost clamped at the 1 MiB floor) but then logs 'CUDA graph pool "
           "memory: 0.59 GiB (actual), 0.46 GiB (estimated), difference 0.12 GiB (20.9%)': the second capture of "
           "a mode underestimates later captures, so ~0.13 GiB still lands on top of the budget. Band read off the "
           "first V1 start's log before the second ran; the second logs the same figures (other-runs).")

# The second V1 start was pre-registered (results/h200/preregistered/capacity-20261204T234446Z.json, theory
# 94903dd, committed 2026-12-04 23:44, before the 04:08 run). It wrote the theory's values, which price the V1
# runner's non-torch growth at the V2 constant: the 8 MiB the first start had already shown (vllm-v1-runner-non-
# torch) is not in them, so the pre-registered non-torch and available KV bytes miss by exactly it.
V1_PREREGISTRATION = ("capacity-20261204T234446Z.json", MEASURED_ON, V1_RUN)
V1_PREREGISTRATION_MISSES = ("non_torch_increase_bytes", "available_kv_bytes")
V1_PREREGISTRATION_WHY = (
    "Pre-registered for the second V1-runner start from the theory at 94903dd, which prices the V1 runner's "
    "non-torch growth at the V2 constant (241,172,480 B, fitted on V2 runs): the pre-registration left out the "
    "V1 runner's 8 MiB (8,388,608 B) excess that the first start (2026-11-30) had already shown and "
    "vllm-v1-runner-non-torch explains (mechanism not established), and available KV bytes carry it (with the V1 "
    "sampler's 14,336 B). The second start reproduced the first to the byte. Band: the other V1 starts' "
    "measured / pre-registered, exactly (no width: the engine's byte counts are exact, so only the same excess "
    "lands in it).")


def v1_preregistration_mark(file: str, hardware: str, run_name: str, quantity: str,
                            band: tuple[float, float] | None) -> Any | None:
    """The V1-runner pre-registration's finding on one of its two missed quantities, with the band the other
    V1 starts set (v1_preregistration_band), or None for any other file, card, run or quantity, or where no
    other start exists to set the band (then the miss is a plain divergence)."""
    if (file, hardware, run_name) != V1_PREREGISTRATION or quantity not in V1_PREREGISTRATION_MISSES or band is None:
        return None
    return pytest.mark.finding("vllm-v1-preregistration-priced-v2-non-torch", quantity=f"preregistered_{quantity}",
                               hardware=hardware, expected=band, reason=V1_PREREGISTRATION_WHY,
                               band_from="other-runs")


def v1_preregistration_band(results: Path, hardware: str, run_name: str, quantity: str, predicted: float,
                            judged_at: str) -> tuple[float, float] | None:
    """min..max of measured / pre-registered over the run's recorded starts other than the one judged."""
    ratios = [rec[quantity].value / predicted
              for rec in recordings.load_runs([results, REPOSITORY_RESULTS], hardware, "capacity", run_name)
              if rec.recorded_at != judged_at and quantity in rec.measurements]
    return (min(ratios), max(ratios)) if ratios else None


# --- torch.compile + CUDA graphs under tensor parallel (one recording) --------------------------------
TP_GRAPHS_RUN = "vllm-ledger.mistral-7b-v0.3.u0.90.len8192.graphs.tp2"
TP_GRAPHS_PEAK_BYTES = 1_136_673_280
TP_GRAPHS_BLOCKS_MEASURED, TP_GRAPHS_BLOCKS_PREDICTED = 120_767, 120_705
TP_GRAPHS_WHY = (
    "mistral-7b-v0.3 with CUDA graphs at TP2, the only compiled TP run, held out: the profile peak is "
    f"{TP_GRAPHS_PEAK_BYTES:,} B, "
    "64 MiB under the prediction, i.e. 4 MiB under N (3I + 3h) x 2 B + workspaces: the 60 MiB that torch.compile "
    "added above that at TP1 (COMPILED_FORWARD_EXTRA, fitted on llama-3.1-8b graphs) is absent under TP, and 4 MiB "
    "more is missing, which leaves that much more for the KV cache (less the 2 MiB of vllm-tp-graphs-non-torch-above-"
    "eager-tp2, a cause of its own). Mechanism not established from one run; blocks still land "
    f"{TP_GRAPHS_BLOCKS_MEASURED / TP_GRAPHS_BLOCKS_PREDICTED - 1:+.2%} from config alone "
    f"({TP_GRAPHS_BLOCKS_MEASURED:,} vs {TP_GRAPHS_BLOCKS_PREDICTED:,}). Band read off this run (checked-run): a second "
    "compiled TP run (another model with graphs at TP2, or this one on another engine start) would band it.")
# The same run's non-torch growth, above its prediction where the peak is below: another cause, its own finding
# (issue 10 item 3: one reason never covers both signs).
TP_NON_TORCH_ID = "vllm-tp-graphs-non-torch-above-eager-tp2"
TP_NON_TORCH_WHY = (
    "mistral-7b-v0.3 with CUDA graphs at TP2, the only compiled TP run, held out: the non-torch growth is 2 MiB above "
    "the eager TP2 constant (68 vs 66 MiB); likely the custom all-reduce registering the graphs' buffers. Not "
    "established from one run. Band read off it (checked-run): a second compiled TP2 run would band it.")
TP_GRAPHS = {
    "peak_activation_bytes": pytest.mark.finding("vllm-compiled-forward-under-tp", quantity="peak_activation_bytes",
                                                 expected=(0.93, 0.96), band_from="checked-run", reason=TP_GRAPHS_WHY),
    "non_torch_increase_bytes": pytest.mark.finding(TP_NON_TORCH_ID,
                                                    quantity="non_torch_increase_bytes", expected=(1.02, 1.04),
                                                    band_from="checked-run", reason=TP_NON_TORCH_WHY),
    "available_kv_bytes": pytest.mark.finding("vllm-compiled-forward-under-tp", quantity="available_kv_bytes",
                                              expected=(1.0003, 1.0008), band_from="checked-run", reason=TP_GRAPHS_WHY),
}

# --- the V2 runner's CUDA-graph pool (documented as subtracted, it is not) ------------------------------
HALF_GIB_STEP = 0.005 * GiB
GRAPH_POOL_EXAMPLE = "vllm-ledger.qwen2.5-7b.u0.90.len8192.graphs"  # the run the reason quotes beside its eager twin


def _growth_over_budget(rec: recordings.Recording) -> float:
    mem = rec.data["run"]["result"]["memory"]
    return mem["after_start"]["used_bytes"] - mem["before_start"]["used_bytes"] - rec["requested_memory_bytes"].value


@cache
def graph_pool_reason(results: Path, hardware: str) -> str:
    """The V2 graph-pool reason, its ranges taken from the card's recorded V2 graph runs and their
    eager twins (the same configuration with enforce_eager)."""
    pools, overs, twins = [], [], []
    example: tuple[float, float, float] | None = None
    for name in recordings.list_recordings(results, hardware, "capacity", "vllm-ledger."):
        rec = recordings.load_latest(results, hardware, "capacity", name)
        log = rec.data["run"]["result"].get("log") or {}
        if (rec.provenance.get("status") != "ok" or log.get("model_runner") != "v2"
                or not log.get("cudagraph_capture_gib")):
            continue
        pools.append(log["cudagraph_capture_gib"])
        overs.append(_growth_over_budget(rec))
        twin_name = name.replace(".graphs", ".eager")
        if twin_name in recordings.list_recordings(results, hardware, "capacity", twin_name):
            twin = recordings.load_latest(results, hardware, "capacity", twin_name)
            twins.append(_growth_over_budget(twin))
            if name == GRAPH_POOL_EXAMPLE:
                example = (rec["available_kv_bytes"].value, twin["available_kv_bytes"].value, overs[-1])
    quoted = (f" (qwen2.5-7b: {example[0] / 1e9:.2f} GB with graphs vs {example[1] / 1e9:.2f} GB eager)"
              if example else "")
    return (
        "vLLM documents the CUDA-graph memory estimate as subtracted from the KV budget by default since v0.21.0, "
        "but the V2 model runner (the default in 0.26.0) returns 0 from profile_cudagraph_memory, so the graph pool "
        f"captured afterwards ({min(pools):.2f}-{max(pools):.2f} GiB here) lands ON TOP of gpu_memory_utilization: the "
        f"KV pool is as large as without graphs{quoted} and the instance's NVML-measured growth exceeds its budget by "
        f"{min(overs) / 1e9:.2f}-{max(overs) / 1e9:.2f} GB"
        + (f" ({example[2] / 1e9:.3f} GB for qwen2.5-7b)" if example else "")
        + (f", while the eager twins stay within {min(twins) / 1e9:.2f}..{max(twins) / 1e9:+.2f} GB of it" if twins
           else "")
        + ". If the pool is what is missing from the subtraction, measured / documented = 1 + pool / documented KV "
          "exactly; each run's band is that, +- the log's 0.005 GiB rounding of the pool.")


def graph_pool_mark(pool: float, documented: float, reason: str) -> Any:
    """The band a V2 graph run's own logged pool implies (1 + pool / documented +- the log's rounding)."""
    band = (1 + (pool - HALF_GIB_STEP) / documented, 1 + (pool + HALF_GIB_STEP) / documented)
    return pytest.mark.finding(
        "vllm-v2-cudagraph-memory-not-subtracted", expected=band, band_from="explanation",
        reason=f"{reason} This run: a {pool / GiB:.2f} GiB pool on {documented / GiB:.2f} GiB "
               f"documented, 1 + pool / documented = {1 + pool / documented:.4f}.")


# --- the seed's RTX 4090 runs ------------------------------------------------------------------------------
SEED_KV_INTERCEPT_TOKENS = 3_933
SEED_KV_PEAK = pytest.mark.finding(
    "seed-kv-peak-below-full-length",
    reason=f"Peak KV at C=16 is 16L + {SEED_KV_INTERCEPT_TOKENS:,} tokens, not 16L + 4,096: at the sampled peak the 16 "
           "requests are not all at their last output token (closed-loop requests start and finish staggered, and "
           "the 1 Hz sampler misses the exact peak), so they hold on average "
           f"~{SEED_KV_INTERCEPT_TOKENS / 16:.0f} of 256 output tokens. Band read off round 2's fit (checked-run; "
           "round 1's length sweep published no KV fit): a second sweep's fit, or the 1 Hz samples this one came "
           "from, would band it.",
    expected=(0.90, 1.0), band_from="checked-run",
)
# Round 2's logged terms + its graph pool, and 0.9 x its logged total (GiB, as the log's 2 decimals allow)
SEED_GRAPHS_USED_GIB, SEED_BUDGET_GIB, SEED_GRAPHS_GIB = 21.50, 21.17, 0.34
SEED_GRAPHS_NOT_SUBTRACTED = pytest.mark.finding(
    "seed-vllm-cudagraph-not-subtracted",
    reason=f"In the seed's vLLM 0.27.1 runs the logged CUDA-graph memory ({SEED_GRAPHS_GIB:.2f} GiB) is NOT taken out "
           "of the KV budget, although vLLM documents the estimate as subtracted by default since v0.21.0: budget - "
           "consumed - peak already equals the logged KV pool (see the test above), so the engine then "
           f"exceeds its 0.9 budget by the graph pool ({SEED_GRAPHS_USED_GIB:.2f} vs {SEED_BUDGET_GIB:.2f} GiB). "
           "Best explanation: the graph "
           "estimate was disabled or only reported in that build; to be checked on a live engine. Band, from that "
           "arithmetic: if the logged graph memory is what the subtraction misses, measured / documented = 1 + graphs "
           "/ documented, +- the log's 2-decimal rounding of its six GiB figures (seed_graphs_band).",
    band_from="explanation",
)


def seed_graphs_band(graphs: float, documented: float, rounding: float) -> tuple[float, float]:
    """measured / documented available KV if the logged CUDA-graph memory `graphs` is what the documented formula
    subtracts and the engine does not: 1 + graphs / documented, the logged figures' `rounding` (bytes) either way."""
    return (1 + (graphs - rounding) / documented, 1 + (graphs + rounding) / documented)


# --- gpu_memory_utilization is not a cap: split by cause -----------------------------------------------------
# NVML's growth of an instance = requested - the profile peak (budgeted, then released) + what lands on
# top of the budget (the CUDA context and, under TP, NCCL: in use before vLLM's first snapshot; allocator
# fragments; torch allocations outside every ledger term; the V2 graph pool). Which side wins decides the
# sign, so each side is its own finding with its own band.
PEAK_RELEASED = "vllm-profile-peak-released-below-budget"
ON_TOP = "vllm-memory-on-top-of-the-budget"
NCCL_ON_TOP = "vllm-nccl-and-memory-on-top-of-the-budget"


@dataclass(frozen=True)
class OnTop:
    """What one recorded run put on top of its budget, from its own engine log and allocator stats."""

    name: str
    tensor_parallel: bool
    graphs: bool
    context: float  # CUDA memory in use at vLLM's init snapshot (context; NCCL under TP)
    pool: float  # the CUDA-graph pool the log reports (0 when eager)
    fragments_and_outside: float  # reserved - (weights + KV): fragments and allocations outside the terms


def on_top_of(name: str, rec: recordings.Recording) -> OnTop:
    result = rec.data["run"]["result"]
    stats = result["engine"]["memory_stats"]
    settings = rec.provenance["settings"]
    return OnTop(name, int(settings.get("tensor_parallel_size") or 1) > 1, not settings.get("enforce_eager"),
                 float(rec["init_cuda_context_bytes"].value),
                 float(result["log"].get("cudagraph_capture_gib") or 0) * GiB,
                 float(stats["reserved_bytes.all.current"] - rec["model_memory_bytes"].value
                       - rec["kv_allocated_bytes"].value))


@cache
def recorded_on_top(results: Path, hardware: str) -> tuple[OnTop, ...]:
    """Every recorded ledger run of a card with the figures the mechanism needs."""
    out = []
    for name in recordings.list_recordings(results, hardware, "capacity", "vllm-ledger."):
        rec = recordings.load_latest(results, hardware, "capacity", name)
        if rec.provenance.get("status") == "ok" and "peak_activation_bytes" in rec.measurements:
            out.append(on_top_of(name, rec))
    return tuple(out)


def peak_released_mark(peak: float, requested: float) -> Any:
    lo = 1 - peak / requested
    return pytest.mark.finding(
        PEAK_RELEASED, expected=(lo, 1.0), band_from="explanation",
        reason="vLLM documents gpu_memory_utilization as a per-instance limit; this instance stays below it. The "
               "profile run's activation peak is budgeted but released before the KV cache is allocated, and here "
               "it exceeds what lands on top of the budget (the CUDA context, allocator fragments, allocations "
               "outside the ledger). Band from that arithmetic: with the whole predicted peak "
               f"({peak / GiB:.2f} GiB of {requested / GiB:.2f} GiB requested) released and nothing on top, "
               f"growth / requested = 1 - peak / requested = {lo:.4f}; it cannot fall below that, nor reach 1.")


def on_top_mark(run_name: str, tensor_parallel: bool, graphs: bool, peak: float, requested: float,
                context: float | None, pool: float, others: tuple[OnTop, ...], pool_from: str = "") -> Any:
    """Band (1, 1 + (context + pool + the largest fragments-and-outside of the OTHER recorded runs
    of the card - peak) / requested). context and pool are this run's logged figures (a live run, not
    run yet: its configuration's recorded pool on the card, else the theory's, as `pool_from` says);
    context None (a live run) takes the largest of the other runs' of the same tensor-parallel kind.
    `others` must hold at least one run besides `run_name` (budget_mark's guard)."""
    same = [o for o in others if o.name != run_name]
    fragments = max(o.fragments_and_outside for o in same)
    if context is None:  # the context (NCCL included) is per card and tensor-parallel size
        context = max(o.context for o in same if o.tensor_parallel == tensor_parallel) if any(
            o.tensor_parallel == tensor_parallel for o in same) else max(o.context for o in same)
    pool = pool if graphs else 0.0
    hi = 1 + (context + pool + fragments - peak) / requested
    graph_pool = (f"the CUDA-graph pool ({pool / GiB:.2f} GiB{pool_from}; the V2 runner does not subtract it), "
                  if graphs else "")
    what = ("NCCL and the custom all-reduce (in use before vLLM's first memory snapshot, with the CUDA context: "
            f"{context:,.0f} B per rank here)" if tensor_parallel else
            f"the CUDA context vLLM's first snapshot already sees ({context:,.0f} B)")
    return pytest.mark.finding(
        NCCL_ON_TOP if tensor_parallel else ON_TOP, expected=(1.0, hi), band_from="other-runs",
        reason="vLLM documents gpu_memory_utilization as a per-instance limit; this instance grows beyond it. On "
               f"top of the budget land {what}, {graph_pool}allocator fragments (reserved, not allocated) and torch "
               "allocations outside every ledger term (runner buffers, sampler state), more than the released profile "
               f"peak ({peak / GiB:.2f} GiB, predicted) gives back. Band from that arithmetic, with the fragments and "
               f"outside allocations bounded by the largest of {len(same)} other recorded runs "
               f"({fragments / GiB:.2f} GiB): growth / requested <= 1 + (context + pool + "
               f"{fragments / GiB:.2f} GiB - peak) / requested = {hi:.4f}.")


# --- the first H100 pre-registration (written before the card was ever run) ------------------------------
# results/h100-sxm/preregistered/capacity-20261202T182502Z.json predicted every ledger term from the catalog:
# h100-sxm had no CUDA-visible total, so the theory used NVML's (85,520,809,984 B), 480 MiB above the card's
# cudaMemGetInfo total (85,017,493,504 B): requested memory 432 MiB too high at utilization 0.9 (240 MiB at
# 0.5), carried into available KV bytes and blocks. The graphs run also priced the compiled forward's extra at
# the H200's fitted 60 MiB; the card's is its 50 MiB L2 (theory/vllm_activation.compiled_forward_extra). The
# current theory, with the recorded card's total and its L2, predicts every term of these runs to the byte.
H100_PREREGISTRATION = ("capacity-20261202T182502Z.json", "h100-sxm")
H100_PREREGISTRATION_WHY = (
    "Pre-registered from the catalog before any H100 run: h100-sxm had no CUDA-visible total, so requested "
    "memory used NVML's total, 480 MiB above the card's cudaMemGetInfo total (432 MiB requested at u0.90, 240 MiB "
    "at u0.50), and the graphs run priced the compiled forward's extra at the H200's 60 MiB where the mechanism "
    "is one L2 (50 MiB on the H100). The band is the current theory's prediction over the pre-registered value: "
    "with the card's own total and L2 the theory lands on the measurement to the byte.")


def preregistration_mark(file: str, hardware: str, quantity: str) -> Any | None:
    """The finding of the first H100 pre-registration's misses (its band is set at test time: the current
    theory's value over the pre-registered one), or None for any other file or card."""
    if (file, hardware) != H100_PREREGISTRATION:
        return None
    return pytest.mark.finding("h100-preregistration-priced-nvml-total", quantity=f"preregistered_{quantity}",
                               hardware=hardware, reason=H100_PREREGISTRATION_WHY, band_from="explanation")


def card_runs(results: Path, hardware: str) -> tuple[OnTop, ...]:
    """The card's own recorded ledger runs: the session's results folder's, else the committed ones (a live
    session records into a fresh folder). Never another card's: a band set by the H200's runs was never
    checked on a 4090, and a finding applies only on the cards its band was checked on (README)."""
    return recorded_on_top(results, hardware) or recorded_on_top(REPOSITORY_RESULTS, hardware)


def budget_mark(run_name: str, tensor_parallel: bool, graphs: bool, peak: float, requested: float,
                results: Path, hardware: str, measured: recordings.Recording | None,
                predicted_pool: float = 0.0) -> Any | None:
    """The instance-memory finding of one run: which side won is read from its recording. A live run
    (not measured yet) takes the side its configuration's recording on this card showed, else the
    side the other runs predict (their median on-top against its predicted peak).

    Every figure comes from this card's own recorded runs (card_runs); where they cannot set the band
    (a card without ledger recordings; the on-top side with no other run to bound the fragments) there
    is no mark, and the check is a plain divergence to explain on that card. The mark names the card
    (hardware=), as the other suites' findings do."""
    others = card_runs(results, hardware)
    rest = [o for o in others if o.name != run_name]
    if measured is not None:
        mem = measured.data["run"]["result"]["memory"]
        growth = mem["after_start"]["used_bytes"] - mem["before_start"]["used_bytes"]
        own = on_top_of(run_name, measured)
        if growth < measured["requested_memory_bytes"].value:
            return _on_card(peak_released_mark(peak, requested), hardware)
        return _on_card(on_top_mark(run_name, tensor_parallel, graphs, peak, requested, own.context, own.pool,
                                    others), hardware) if rest else None
    if not others:
        return None
    earlier = next((o for o in others if o.name == run_name), None)
    same = [o for o in others if o.tensor_parallel == tensor_parallel] or list(others)
    typical = (earlier.context + earlier.fragments_and_outside if earlier is not None
               else statistics.median(o.context + o.fragments_and_outside for o in same))
    if typical < peak:
        return _on_card(peak_released_mark(peak, requested), hardware)
    if not rest:
        return None
    # The pool: the replay of this configuration's recording is judged with that recording's own logged pool,
    # so a live run of the same configuration on the same card takes that pool too (the live verdict and the
    # replay of the same data must agree). Without one, the theory's pool for this capture list
    # (theory/vllm_memory.cudagraph_pool): the other runs' pools are other models' and capture lists, and a
    # card with no other graph run has none to offer (the max over its eager runs is 0, which made the H100's
    # one graphs run diverge live while its replay was a finding).
    pool, pool_from = ((earlier.pool, ", this configuration's recorded pool on the card") if earlier is not None
                       else (predicted_pool, ", predicted: graphs x the fitted pool per graph"))
    return _on_card(on_top_mark(run_name, tensor_parallel, graphs, peak, requested, None, pool, others, pool_from),
                    hardware)


def _on_card(mark: Any, hardware: str) -> Any:
    """The mark limited to the card whose runs set its band."""
    return pytest.mark.finding(*mark.args, **mark.kwargs, hardware=hardware)


__all__ = ["GRAPH_POOL_EXAMPLE", "MEASURED_ON", "MiB", "ON_TOP", "PEAK_RELEASED", "NCCL_ON_TOP", "SEED_GRAPHS_NOT_SUBTRACTED",
           "SEED_KV_PEAK", "TP_GRAPHS", "TP_GRAPHS_RUN", "V1_AVAILABLE", "V1_NON_TORCH", "V1_POOL", "budget_mark", "card_runs",
           "graph_pool_mark", "graph_pool_reason", "preregistration_mark", "recorded_on_top", "v1_preregistration_band",
           "v1_preregistration_mark"]
