"""The declared protocol (docs/VALIDATION.md) as code: which experiments are reconciled, the central
prediction of each, and the band its unknown settings span. Shared by the suite's tests.

Experiments are listed from the committed recordings at collection time (ids are stable: recording
name + experiment key); each test replays its recording through the `measured` fixture.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_anatomy import recordings
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory import transfer as tr
from pytest_anatomy.theory.latency import StepModel
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.theory.vllm_versions import predict_ledger_for_version
from pytest_anatomy.units import GiB

RESULTS = Path(__file__).resolve().parents[1] / "results"
# The transferred calibration's own held-out accuracy on the H200 (Llama-3.1-8B predicted with
# Qwen2.5-7B's calibration: decode b = 1-64 within 10%, tests_latency): widens every latency band.
CALIBRATION_SPREAD = 0.10
SPREAD_WHY = ("band of the unknown settings (docs/VALIDATION.md) widened by the transferred calibration's "
              "held-out spread (+-10%, Llama-3.1-8B on the H200 with Qwen's calibration)")


# The card whose recorded calibration transfers to the others (docs/VALIDATION.md's protocol).
CALIBRATION_CARD = "h200"


def h200_transfer(root: Path = RESULTS) -> tr.Transfer:
    """The calibration `predict latency` and the latency suite fit (cli_calibration: the newest
    session's ceilings, t_overhead on its b=1 decode step, eta on its lone 8,192-token prefill), as a
    Transfer. Raises recordings.MissingRecording, with the reason, when that session is absent."""
    from pytest_anatomy.cli_calibration import recorded_calibration

    got = recorded_calibration(root, get_hardware(CALIBRATION_CARD))
    if isinstance(got, str):
        raise recordings.MissingRecording(got)
    return tr.Transfer.from_calibration(got.calib, got.ceilings)


@dataclass(frozen=True)
class Case:
    source: str
    hardware: str
    recording: str
    key: str  # experiment key inside the recording ("" for one-experiment recordings)
    settings: tuple[tuple[str, Any], ...]  # group settings + the experiment's own
    engine: str
    measured: tuple[tuple[str, float], ...] = ()  # the experiment's numbers, to route misses at collection

    @property
    def id(self) -> str:
        """The experiment within its card's folder (the test id prefixes the target's name)."""
        return self.recording + (f":{self.key}" if self.key else "")

    def s(self, name: str) -> Any:
        return dict(self.settings)[name]


def cases(source: str, hardware: str | None = None, root: Path = RESULTS) -> list[Case]:
    """Every experiment of one source in the recordings (newest file per name), of one hardware
    folder when `hardware` is given."""
    out: list[Case] = []
    for hw_dir in sorted(p for p in Path(root).iterdir() if p.is_dir() and hardware in (None, p.name)):
        folder = hw_dir / "third-party" / source
        if not folder.is_dir():
            continue
        newest: dict[str, Path] = {}
        for path in sorted(folder.glob("*@*.json")):
            newest[path.name.rsplit("@", 1)[0]] = path  # stamps sort lexically within one importer
        for name, path in sorted(newest.items()):
            doc = json.loads(path.read_text(encoding="utf-8"))
            group = doc["provenance"]["settings"]
            engine = doc["provenance"]["engine"]
            exps = (doc.get("data") or {}).get("experiments")
            meas = doc["measurements"]
            if exps is None:
                out.append(Case(source, hw_dir.name, name, "", tuple(sorted(group.items())), engine,
                                tuple(sorted((q, m["value"]) for q, m in meas.items()))))
                continue
            for key, exp in exps.items():
                mine = {k: v for k, v in exp.items() if k not in ("row", "csv_line", "id", "date")}
                values = tuple(sorted((q.removeprefix(key + "."), m["value"]) for q, m in meas.items()
                                      if q.rsplit(".", 1)[0] == key))
                out.append(Case(source, hw_dir.name, name, key, tuple(sorted({**group, **mine}.items())), engine,
                                values))
    return out


def _band_terms(central: float, lo: float, hi: float, unit: str, what: str) -> tuple[Term, ...]:
    return (Term("band low (unknown settings)", lo, unit, what), Term("band high (unknown settings)", hi, unit, what))


def ratio_band(central: float, lo: float, hi: float, spread: float = CALIBRATION_SPREAD) -> tuple[float, float]:
    """measured/predicted band: the sweep's extremes over the central value, widened by the spread."""
    return (lo / central / (1 + spread), hi / central * (1 + spread))


# --- KV blocks (inference-sim) -------------------------------------------------------------------
KV_UTILS = (0.90, 0.95)


@functools.lru_cache(maxsize=64)
def kv_blocks(hardware: str, model: str, tp: int, max_num_seqs: int, max_num_batched_tokens: int, version: str,
              cuda_total: int | None = None) -> tuple[Prediction, float, float]:
    """Central blocks (util 0.90, fitted non-torch) and the band: (0.90, 2x non-torch) to (0.95, none).
    cuda_total replaces the total the ledger divides (a catalog entry with only NVML's total)."""
    spec, hw = load_model(model), get_hardware(hardware)
    if cuda_total is not None:
        hw = dataclasses.replace(hw, cuda_visible_memory_bytes=cuda_total, sources={
            **hw.sources, "cuda_visible_memory_bytes": "torch out-of-memory messages on 80 GB cards (a finding's band)"})

    def ledger(util: float) -> dict[str, Prediction]:
        return predict_ledger_for_version(spec, hw, {
            "gpu_memory_utilization": util, "max_model_len": 4096, "max_num_seqs": max_num_seqs,
            "max_num_batched_tokens": max_num_batched_tokens, "tensor_parallel_size": tp}, version)

    central, high = ledger(KV_UTILS[0]), ledger(KV_UTILS[1])
    non_torch = central["non_torch_increase_bytes"].value

    def blocks(available: float) -> float:
        return cap.vllm_num_gpu_blocks(spec, available, 16, "auto", tp).value

    lo = blocks(central["available_kv_bytes"].value - non_torch)
    hi = blocks(high["available_kv_bytes"].value + non_torch)
    p = central["num_gpu_blocks"]
    pred = Prediction(p.value, "blocks", f"vLLM {version} ledger on the {hw.name} catalog spec, util 0.90 "
                      "(theory/vllm_versions.py over vllm_memory.py)", {**p.inputs, "version": version},
                      terms=(*p.terms, *_band_terms(p.value, lo, hi, "blocks", "util 0.90-0.95, non-torch 0-2x")),
                      notes=(*central["available_kv_bytes"].notes, *p.notes))
    return pred, lo, hi


# --- closed loop at fixed concurrency (AIConfigurator) --------------------------------------------
BUDGETS = (2048, 8192, 16384)  # max_num_batched_tokens: range and central (8192)


def deployment(hardware: str, model: str, precision: str, tp: int, latency: float) -> tr.Deployment:
    fp8 = precision == "fp8"
    return tr.Deployment(hardware, model, "fp8" if fp8 else "auto", "fp8" if fp8 else precision, tp, latency)


@functools.lru_cache(maxsize=4096)
def closed_loop(transfer: tr.Transfer, hardware: str, model: str, precision: str, tp: int, concurrency: int,
                isl: int, osl: int) -> dict[str, tuple[float, float, float]]:
    """{metric: (central, band low, band high)} for ttft_mean and tpot_mean."""
    lat_lo, lat_mid, lat_hi = tr.ALLREDUCE_LATENCY_S

    def run(latency: float, budget: int, sync: bool) -> tr.LoadResult:
        sm = tr.step_model(transfer, deployment(hardware, model, precision, tp, latency))
        return tr.closed_loop(sm, concurrency, isl, osl, budget, synchronized=sync)

    central = run(lat_mid, 8192, True)
    lows = [run(lat_lo, b, s) for b in BUDGETS for s in (True, False)]
    highs = [run(lat_hi, b, s) for b in BUDGETS for s in (True, False)]
    out = {}
    for metric in ("ttft_mean_s", "tpot_mean_s"):
        out[metric.removesuffix("_s")] = (getattr(central, metric), min(getattr(r, metric) for r in lows),
                                          max(getattr(r, metric) for r in highs))
    return out


# --- offline batch (Argonne) --------------------------------------------------------------------------
ARGONNE_CARDS = {"a100-40gb": ("a100-40gb", "a100-80gb"), "h100-sxm": ("h100-sxm", "h100-pcie")}


@functools.lru_cache(maxsize=4096)
def offline(transfer: tr.Transfer, hardware: str, model: str, engine: str, gpus: int, length: int, batch: int
            ) -> tuple[float, float, float]:
    """Latency (s): central and band over the card variant, the prefill budget, the all-reduce latency and, for vLLM,
    the KV pool (a batch whose B x 2L tokens it cannot hold runs in waves: transfer.kv_limited_offline_batch; central
    2L per sequence and 1 GiB reserved, band 1.5L with none to 2L with 2 GiB)."""
    spec = load_model(model)
    lat_lo, lat_mid, lat_hi = tr.ALLREDUCE_LATENCY_S
    if engine == "llama.cpp":  # layer split over GPUs: one GPU's time; f16 weights; n_batch = "Batch Size"

        def run_cpp(card: str) -> float:
            sm = tr.step_model(transfer, tr.Deployment(card, model, "auto", "fp16", 1))
            return tr.llamacpp_single(sm, length, batch)
        times = [run_cpp(c) for c in ARGONNE_CARDS[hardware]]
        return run_cpp(hardware), min(times), max(times)
    default_budget = max(spec.max_position_embeddings, 2048)  # old vLLM: max(max_model_len, 2048), no chunking

    def run(card: str, latency: float, budget: int, reserve: float, per_request: float) -> float:
        sm = tr.step_model(transfer, tr.Deployment(card, model, "auto", "fp16", gpus, latency))
        return tr.kv_limited_offline_batch(sm, batch, length, budget, offline_kv_pool(card, model, gpus, reserve),
                                           per_request)
    budgets = (2048, default_budget, batch * length)
    lows = [run(c, lat_lo, b, 0.0, 1.5 * length) for c in ARGONNE_CARDS[hardware] for b in budgets]
    highs = [run(c, lat_hi, b, OFFLINE_RESERVE[-1], 2.0 * length) for c in ARGONNE_CARDS[hardware] for b in budgets]
    return run(hardware, lat_mid, default_budget, OFFLINE_RESERVE[1], 2.0 * length), min(lows), max(highs)


# The 2024 vLLM's KV pool per rank for Argonne's offline runs: the V0 engine's profiler is not modelled
# (vllm_versions refuses < 0.9), so requested (gpu_memory_utilization 0.90, benchmark_throughput's default, of the
# card's total) - the weights per rank - 0, 1 (central) or 2 GiB for activations and non-torch memory.
OFFLINE_UTIL = 0.90
OFFLINE_RESERVE = (0.0, 1.0 * GiB, 2.0 * GiB)


@functools.lru_cache(maxsize=256)
def offline_kv_pool(card: str, model: str, gpus: int, reserve: float = OFFLINE_RESERVE[1]) -> float:
    """KV tokens one rank's pool holds (the catalog's NVML total where it has one, else the datasheet's)."""
    spec, hw = load_model(model), get_hardware(card)
    total = hw.nvml_memory_bytes or hw.memory_bytes
    free = OFFLINE_UTIL * total - cap.weight_bytes(spec, "auto", tp=gpus).value - reserve
    return max(0.0, free) / cap.kv_bytes_per_token(spec, tp=gpus).value


def replay_targets(config: Any, source: str) -> tuple[list[Any], Path]:
    """The session's targets holding recordings of `source`, and the results folder. Published data
    has no live path: a live target (--anatomy-source=live or auto on a GPU) gets no case here."""
    from pytest_anatomy import session as anatomy_session

    targets, results = anatomy_session.of_config(config, f"third-party/{source}")
    return [t for t in targets if not t.live], results


def parametrize(metafunc: Any, argnames: list[str], params: list[Any], source: str, why_none: str = "") -> None:
    """metafunc.parametrize, with one explicit skip instead of pytest's anonymous empty-set item
    when there is nothing to reconcile (a live-only session, --anatomy-hardware elsewhere, or
    `why_none`)."""
    import pytest

    if not params:
        reason = why_none or (f"no replay target holds results/<card>/third-party/{source}/ recordings in this "
                              "session (published measurements have no live path: run with "
                              "--anatomy-source=recorded or auto)")
        params = [pytest.param(*([None] * len(argnames)), id="nothing-to-reconcile",
                               marks=pytest.mark.skip(reason=reason))]
    metafunc.parametrize(argnames, params)


def transfer_for(targets: list[Any], results: Path) -> tuple[tr.Transfer | None, str]:
    """(the H200 calibration, "") when there are targets to predict for; (None, why) when its
    recordings are missing, so collection skips with that line instead of tracing back."""
    if not targets:
        return None, ""
    try:
        return h200_transfer(results), ""
    except recordings.MissingRecording as exc:
        return None, f"the H200 calibration's recording {exc.args[0]} is missing"


# --- cause: a KV pool smaller than C requests (AIConfigurator TTFT); the finding: validation_findings.py ---
@functools.lru_cache(maxsize=1024)
def kv_pool_tokens(hardware: str, model: str, precision: str, tp: int, util: float, max_model_len: int,
                   budget: int, version: str) -> tuple[float, ...]:
    """KV tokens of one rank's pool from the ledger; fp8 rows load fp8 weights (the bf16 ledger's weights
    swapped for fp8 bytes), the KV stays bf16 (declared). Where the ledger's load replay is not modelled
    (qwen3), requested - weights per rank - 0 to 2 GiB for activations and non-torch memory: two values."""
    spec, hw = load_model(model), get_hardware(hardware)
    weights = cap.weight_bytes(spec, "fp8" if precision == "fp8" else "auto", tp=tp).value
    try:
        ledger = predict_ledger_for_version(spec, hw, {
            "gpu_memory_utilization": util, "max_model_len": max_model_len, "max_num_batched_tokens": budget,
            "tensor_parallel_size": tp, "max_num_seqs": 1024}, version)
        pools = (ledger["available_kv_bytes"].value + cap.weight_bytes(spec, "auto", tp=tp).value - weights,)
    except cap.NotModeled:
        requested = util * hw.require("nvml_memory_bytes")
        pools = (requested - weights, requested - weights - 2 * GiB)
    page = cap.kv_bytes_per_token(spec, tp=tp).value * 16
    return tuple(p // page * 16 for p in pools)


@functools.lru_cache(maxsize=4096)
def kv_queue_band(transfer: tr.Transfer, hardware: str, model: str, precision: str, tp: int, concurrency: int,
                  isl: int, osl: int, version: str | None) -> tuple[float, float]:
    """(low, high) mean TTFT under the KV-capacity cause; (inf, inf)-free: equals the plain band when all fit."""
    lat_lo, _, lat_hi = tr.ALLREDUCE_LATENCY_S
    rules_version = version or "0.26.0"
    lows, highs = [], []
    for budget in BUDGETS:
        for util in KV_UTILS:
            for pool, per_request in itertools.product(
                    kv_pool_tokens(hardware, model, precision, tp, util, isl + osl, budget, rules_version),
                    (isl + osl, isl + osl / 2)):
                for sync in (True, False):
                    for latency, bucket in ((lat_lo, lows), (lat_hi, highs)):
                        sm = tr.step_model(transfer, deployment(hardware, model, precision, tp, latency))
                        bucket.append(tr.kv_limited_closed_loop(sm, concurrency, isl, osl, budget, pool, per_request,
                                                                synchronized=sync).ttft_mean_s)
    return min(lows), max(highs)


# --- cause: TP all-reduces serialized with the GEMMs (AIConfigurator TPOT); the finding: validation_findings.py ------
@dataclass(frozen=True)
class SerialAllReduceSteps(StepModel):
    """A StepModel whose all-reduce traffic is its own time after the step (vLLM's TP all-reduce runs between the
    GEMMs on their stream: nothing overlaps it), instead of bytes inside the roofline's max (step_model counts it as
    the HBM bytes that take as long, which hides it under compute in prefill-heavy steps)."""

    allreduce_s_per_token: float = 0.0

    def seconds(self, decode_tokens: int, decode_context_sum: float, prefill: tuple[tuple[int, int], ...] = (),
                logits_rows: int | None = None, pad_tokens: int = 0) -> float:
        new = decode_tokens + sum(n for n, _ in prefill)
        return (super().seconds(decode_tokens, decode_context_sum, prefill, logits_rows, pad_tokens)
                + new * self.allreduce_s_per_token)


def allreduce_s_per_token(hardware: str, model: str, tp: int) -> float:
    """One token's two all-reduces per layer (hidden x 2 B each, ring traffic 2 (TP - 1) / TP of it) over one
    direction of the datasheet's NVLink (transfer.NVLINK_TOTAL_BPS): the same bytes step_model counts."""
    spec = load_model(model)
    nvlink, _ = tr.NVLINK_TOTAL_BPS[get_hardware(hardware).name]
    return 2 * spec.num_layers * spec.hidden_size * 2 * 2 * (tp - 1) / tp / (nvlink / 2)


def serial_allreduce_steps(transfer: tr.Transfer, dep: tr.Deployment) -> SerialAllReduceSteps:
    sm = tr.step_model(transfer, dep)
    fields = {f.name: getattr(sm, f.name) for f in dataclasses.fields(sm)}
    fields["kv_token_bytes"] = cap.kv_bytes_per_token(load_model(dep.model), tp=dep.tp).value  # the traffic leaves
    return SerialAllReduceSteps(**fields, allreduce_s_per_token=allreduce_s_per_token(dep.hardware, dep.model, dep.tp))


@functools.lru_cache(maxsize=4096)
def serial_allreduce_band(transfer: tr.Transfer, hardware: str, model: str, precision: str, tp: int,
                          concurrency: int, isl: int, osl: int) -> tuple[float, float]:
    """(low, high) mean TPOT of the declared sweep (closed_loop's budgets, schedules and all-reduce latencies) with
    the all-reduce serialized; at TP 1 there is none and this is closed_loop's band."""
    lat_lo, _, lat_hi = tr.ALLREDUCE_LATENCY_S

    def run(latency: float, budget: int, sync: bool) -> float:
        dep = deployment(hardware, model, precision, tp, latency)
        sm = serial_allreduce_steps(transfer, dep) if tp > 1 else tr.step_model(transfer, dep)
        return tr.closed_loop(sm, concurrency, isl, osl, budget, synchronized=sync).tpot_mean_s

    return (min(run(lat_lo, b, s) for b in BUDGETS for s in (True, False)),
            max(run(lat_hi, b, s) for b in BUDGETS for s in (True, False)))
