"""The latency plan's engine starts, reconciled as capacity measurements.

Every latency-plan run records the engine it started (results/<card>/latency/<model>.engine@*.json, read by
latency_engines.py): vLLM's own num_gpu_blocks, its block size and the settings it was given. Per start, the ledger's
num_gpu_blocks from config.json + the card's own CUDA total + those settings (theory/vllm_memory.py, as
test_capacity_ledger.py predicts the capacity plan's starts), exact: the count is an integer and every input exact.
A start pinned by kv_cache_memory_bytes checks the page arithmetic alone. A start whose configuration the ledger
misses carries engine_pool_findings' finding, banded by the other starts of that configuration on its card; a start of
a model outside the catalog is a skip that says why.

Replay only: the live latency plan's starts are recorded by the latency suite and read here from their recordings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import engine_pool_findings as epf
import latency_engines as le
import pytest

from pytest_anatomy import recordings
from pytest_anatomy import session as anatomy_session
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.vllm_memory import predict_ledger
from pytest_anatomy.theory.vllm_settings import LedgerSettings

pytestmark = pytest.mark.targets(recorded="", live=False)


def _row(spec: Any, start: le.EngineStart) -> epf.Row:
    rec, model = start.recording(), le.model_of(start)
    size = int(rec[le.BLOCK_SIZE].value)
    return epf.Row(start.hardware, start.model, int(rec[le.BLOCKS].value),
                   int(cap.kv_bytes_per_token(model).value * size), size,
                   epf.explain(model, le.ledger(spec, start), size), start.settings)


def _configuration(results: Path, start: le.EngineStart) -> list[le.EngineStart]:
    return [s for s in le.engine_starts(results, start.hardware)
            if s.configuration == start.configuration and s.not_modelled is None]


def _marks(results: Path, spec: Any, start: le.EngineStart) -> tuple[Any, ...]:
    """The pool finding of one start, its band from the other starts of its configuration on the card."""
    if start.not_modelled is not None:
        return ()
    same = _configuration(results, start)
    others = [(s.recorded_at, le.ratio(spec, s)) for s in same if s.recorded_at != start.recorded_at]
    logged = lambda: [f for s in same if (f := le.logged_ledger(results, s)) is not None]  # noqa: E731
    mark = epf.pool_mark(_row(spec, start), le.ratio(spec, start), others, logged)
    return () if mark is None else (mark,)


@pytest.fixture
def results(request: pytest.FixtureRequest) -> Path:
    return anatomy_session.get_session(request.config).settings.results_dir


@pytest.mark.gpu
def test_engine_pool_from_config(target, start, reconcile):
    """num_gpu_blocks = (requested - weights - peak - non-torch) // page // layers, from config + card + settings."""
    if start.not_modelled is not None:
        pytest.skip(f"{start.test_id}: not predicted by the ledger ({start.not_modelled})")
    rec = start.recording()
    predicted = le.ledger(target.spec, start)["num_gpu_blocks"]
    reconcile("num_gpu_blocks", predicted, rec.measurement(le.BLOCKS), model=start.model)


@pytest.mark.gpu
def test_the_card_total_stands_in_where_a_start_names_none(target, results):
    """A start without the card's CUDA total takes its session's ceilings total: in every session of the card that
    recorded both they are one number, and at least one such session vouches for the stand-in where it is used."""
    starts = le.engine_starts(results, target.name)
    both = [(s.test_id, s.total, le.session_ceilings_total(results, s.recording())) for s in starts
            if s.total_from.startswith("the recorded card's")]
    checked = [(sid, own, ceil) for sid, own, ceil in both if ceil is not None]
    assert all(own == ceil for _, own, ceil in checked), checked
    if any(s.total_from.startswith("the card's total in its session's ceilings") for s in starts):
        assert checked, f"{target.name}: the ceilings total stands in, but no session recorded both to compare"


@pytest.mark.gpu
def test_the_explanation_reproduces_every_pool(target, results):
    """What the finding's reason claims, on every modelled start of the card: with the explanation's compiled peak
    (engine_pool_findings.compile_benchmark_peak) the ledger's pool is the engine's to the block, agreeing starts
    included; and where a start's batch kept vLLM's ledger line, its weights, non-torch memory, peak activation and
    available KV memory are the ledger's with that peak, to the line's 0.01 GiB; and on the card's compiled capacity
    starts (every one at N = 16,384, each exact) the explanation's peak stays under the ledger's."""
    misses, logged, kept = [], 0, 0
    for start in le.engine_starts(results, target.name):
        if start.not_modelled is not None or start.pinned:
            continue
        row, ledger = _row(target.spec, start), le.ledger(target.spec, start)
        if row.explained.blocks != row.measured_blocks:
            misses.append(f"{start.test_id}: pool {row.measured_blocks:,}, explained {row.explained.blocks:,}")
        kept += le.kept_ledger_log(results, start)
        facts = le.logged_ledger(results, start)
        if facts is None:
            continue
        logged += 1
        explained_available = ledger["available_kv_bytes"].value - (row.explained.peak - row.explained.predicted_peak)
        for key, value in (("ledger_weights_gib", ledger["model_memory_bytes"].value),
                           ("ledger_non_torch_gib", ledger["non_torch_increase_bytes"].value),
                           ("ledger_peak_activation_gib", row.explained.peak),
                           ("available_kv_cache_gib", explained_available)):
            if abs(facts[key] * 2**30 - value) > epf.HALF_GIB_STEP:
                misses.append(f"{start.test_id}: {key} {facts[key]} GiB logged, {value / 2**30:.4f} GiB explained")
    for name, n_tokens, peak, bench in _compiled_capacity_starts(results, target):
        if bench >= peak:  # the capacity ledger is exact on these: the explanation must leave them so
            misses.append(f"{name}: explained peak {bench:,} B >= the ledger's {peak:,.0f} B at N = {n_tokens:,}")
    assert misses == []
    assert logged == kept, f"{kept - logged} starts' kept logs hold a ledger line the matcher did not find"


def _compiled_capacity_starts(results: Path, target: Any) -> list[tuple[str, int, float, int]]:
    """(name, N, the ledger's peak, the explanation's) of the card's compiled single-GPU capacity starts."""
    out = []
    for name in recordings.list_recordings(results, target.name, "capacity", "vllm-ledger."):
        rec = recordings.load_latest(results, target.name, "capacity", name)
        settings = rec.provenance.get("settings") or {}
        if rec.provenance.get("status") != "ok" or settings.get("enforce_eager") or int(
                settings.get("tensor_parallel_size") or 1) > 1 or "peak_activation_bytes" not in rec.measurements:
            continue
        model = load_model(str(rec.provenance["model"]))
        ledger = predict_ledger(model, target.spec, LedgerSettings.from_mapping(settings))
        n_tokens, peak = int(ledger["max_num_batched_tokens"].value), ledger["peak_activation_bytes"]
        out.append((name, n_tokens, peak.value, epf.compile_benchmark_peak(model, n_tokens, peak)))
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" not in metafunc.fixturenames:
        return
    targets, results = anatomy_session.of_config(metafunc.config, le.SUITE)
    targets = [t for t in targets if not t.live and t.spec is not None and le.engine_starts(results, t.name)]
    if "start" in metafunc.fixturenames:
        metafunc.parametrize(["target", "start"], [
            pytest.param(t, s, id=s.test_id, marks=_marks(results, t.spec, s))
            for t in targets for s in le.engine_starts(results, t.name)])
    else:
        metafunc.parametrize("target", targets, ids=[t.name for t in targets])
