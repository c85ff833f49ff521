"""Every number a capacity finding's reason quotes equals what the recordings and the theory say
(capacity_findings.py): a reason is data checked against its reconciliations, never retyped prose."""

from __future__ import annotations

from pathlib import Path

import capacity_findings as cf
import pytest

from pytest_anatomy import preregistration, recordings
from pytest_anatomy.specs.hardware import HARDWARE, get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory.vllm_memory import NON_TORCH_INCREASE, predict_ledger
from pytest_anatomy.theory.vllm_settings import LedgerSettings
from pytest_anatomy.units import GiB, MiB

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _rec(hardware: str, name: str) -> recordings.Recording:
    try:
        return recordings.load_latest(RESULTS, hardware, "capacity", name)
    except recordings.MissingRecording:
        pytest.skip(f"results/{hardware}/capacity/{name}@*.json is not in this checkout")


def _predicted(rec: recordings.Recording) -> dict:
    settings = rec.provenance["settings"]
    return predict_ledger(load_model(rec.provenance["model"]), get_hardware(rec.hardware),
                          LedgerSettings.from_mapping(settings))


def _reason(mark) -> str:
    return mark.kwargs["reason"]


def test_v1_runner_numbers() -> None:
    v1 = _rec(cf.MEASURED_ON, cf.V1_RUN)
    assert v1["non_torch_increase_bytes"].value == cf.V1_NON_TORCH_BYTES
    assert NON_TORCH_INCREASE.value == cf.V2_NON_TORCH_BYTES
    single_gpu_v2 = []
    for name in recordings.list_recordings(RESULTS, cf.MEASURED_ON, "capacity", "vllm-ledger."):
        rec = _rec(cf.MEASURED_ON, name)
        log = rec.data["run"]["result"].get("log") or {}
        if ("non_torch_increase_bytes" in rec.measurements and log.get("model_runner") == "v2"
                and int(rec.provenance["settings"].get("tensor_parallel_size") or 1) == 1):
            single_gpu_v2.append(rec["non_torch_increase_bytes"].value)
    assert len(single_gpu_v2) == cf.V2_SINGLE_GPU_RUNS and set(single_gpu_v2) == {cf.V2_NON_TORCH_BYTES}
    assert _predicted(v1)["available_kv_bytes"].value == cf.V1_AVAILABLE_PREDICTED
    assert v1["available_kv_bytes"].value == cf.V1_AVAILABLE_MEASURED
    starts = recordings.load_runs([RESULTS], cf.MEASURED_ON, "capacity", cf.V1_RUN)
    assert len(starts) == cf.V1_RUNS and {r["non_torch_increase_bytes"].value for r in starts} == {cf.V1_NON_TORCH_BYTES}
    assert {r["available_kv_bytes"].value for r in starts} == {cf.V1_AVAILABLE_MEASURED}


def test_v1_preregistration_reason_quotes_its_file() -> None:
    """The pre-registration priced the V1 runner's non-torch growth at the V2 constant, and its available KV
    bytes at the current theory's value: the miss is the V1 excess the finding's reason names, nothing else."""
    file, hardware, run = cf.V1_PREREGISTRATION
    prereg = next(p for p in preregistration.load_all(RESULTS, hardware) if p.path.name == file)
    written = prereg.run(run)["predictions"]
    assert written["non_torch_increase_bytes"]["value"] == cf.V2_NON_TORCH_BYTES
    assert written["available_kv_bytes"]["value"] == cf.V1_AVAILABLE_PREDICTED
    reason = cf.V1_PREREGISTRATION_WHY
    assert f"{cf.V2_NON_TORCH_BYTES:,} B" in reason and f"{cf.V1_NON_TORCH_BYTES - cf.V2_NON_TORCH_BYTES:,} B" in reason
    assert f"{cf.V1_AVAILABLE_PREDICTED - cf.V1_AVAILABLE_MEASURED - (cf.V1_NON_TORCH_BYTES - cf.V2_NON_TORCH_BYTES):,} B" \
        in reason  # the V1 sampler's small tensors
    assert str(prereg.doc.get("theory_commit", ""))[:7] in reason


def test_v1_pool_reason_quotes_the_log() -> None:
    v1 = _rec(cf.MEASURED_ON, cf.V1_RUN)
    log = v1.data["run"]["result"]["log"]
    modes = log["cudagraph_estimate_per_mode"]
    reason = _reason(cf.V1_POOL)
    assert f"({v1['cudagraph_estimate_bytes'].value / MiB:.0f} MiB: max first capture " \
           f"{max(m['first_capture_mib'] for m in modes.values()):.0f} MiB" in reason
    for mode, m in modes.items():
        assert f"{m['num_graphs'] - 1} x {m['per_graph_mib']:.0f} MiB {mode}" in reason
    assert (f"{log['cudagraph_pool_actual_gib']:.2f} GiB (actual), {log['cudagraph_pool_estimated_gib']:.2f} GiB "
            f"(estimated), difference {log['cudagraph_pool_diff_gib']:.2f} GiB ({log['cudagraph_pool_diff_pct']:.1f}%)"
            ) in reason


def test_compiled_tp_numbers() -> None:
    run = _rec(cf.MEASURED_ON, cf.TP_GRAPHS_RUN)
    assert run["peak_activation_bytes"].value == cf.TP_GRAPHS_PEAK_BYTES
    assert run["num_gpu_blocks"].value == cf.TP_GRAPHS_BLOCKS_MEASURED
    assert _predicted(run)["num_gpu_blocks"].value == cf.TP_GRAPHS_BLOCKS_PREDICTED


def test_seed_numbers() -> None:
    assert _rec("rtx4090", "seed-r2-kv-linearity")["intercept_tokens"].value == cf.SEED_KV_INTERCEPT_TOKENS
    graphs = {_rec("rtx4090", f"seed-r{r}-vllm-memory-ledger")["cudagraph_bytes"].value for r in (1, 2)}
    assert len(graphs) == 1
    assert f"{graphs.pop() / GiB:.2f}" == f"{cf.SEED_GRAPHS_GIB:.2f}"


def test_the_memory_on_top_bands_are_the_mechanisms_arithmetic() -> None:
    """Below the budget by at most the predicted peak; above it by at most context + pool + the largest
    slack of the other runs - peak: a run whose slack exceeds every other run's would fall outside."""
    others = cf.recorded_on_top(RESULTS, cf.MEASURED_ON)
    if not others:
        pytest.skip("no H200 ledger recordings in this checkout")
    under = cf.peak_released_mark(2 * GiB, 100 * GiB).kwargs["expected"]
    assert under == (1 - 0.02, 1.0)
    one = others[0]
    over = cf.on_top_mark(one.name, one.tensor_parallel, one.graphs, 2 * GiB, 100 * GiB, one.context, one.pool, others)
    slack = max(o.fragments_and_outside for o in others if o.name != one.name)
    assert over.kwargs["expected"] == (1.0, 1 + (one.context + (one.pool if one.graphs else 0) + slack - 2 * GiB)
                                       / (100 * GiB))


def test_a_card_without_ledger_recordings_of_its_own_borrows_no_band(tmp_path: Path) -> None:
    """The instance-memory finding's band is set by the card's own recorded runs. A catalog card with none (in the
    session's results folder or the checkout's) gets no mark, on either side of the budget: its gap is a divergence
    to explain there, never excused by the H200's runs (README: a finding applies only on the cards its band was
    checked on). Such a card used to borrow the H200's runs, and their band excused its gap."""
    bare = [card for card in HARDWARE if not cf.card_runs(tmp_path, card)]
    assert bare and cf.MEASURED_ON not in bare
    for card in bare:
        for peak in (0.0, 50 * GiB):  # the on-top side and the released-peak side
            for tensor_parallel, graphs in ((False, False), (False, True), (True, False)):
                assert cf.budget_mark(cf.GRAPH_POOL_EXAMPLE, tensor_parallel, graphs, peak, 100 * GiB, tmp_path, card,
                                      None) is None, card


def _ledger_cards() -> list[str]:
    return [card for card in HARDWARE if cf.recorded_on_top(RESULTS, card)]


def test_a_cards_budget_marks_name_the_card() -> None:
    """A card's instance-memory mark is limited to that card (hardware=): its band was set by its own runs."""
    cards = _ledger_cards()
    if not cards:
        pytest.skip("no ledger recordings in this checkout")
    for card in cards:
        for peak in (0.0, 50 * GiB):
            mark = cf.budget_mark(cf.GRAPH_POOL_EXAMPLE, False, True, peak, 100 * GiB, RESULTS, card, None)
            assert mark is not None and mark.kwargs["hardware"] == card


def test_a_live_graphs_run_takes_its_configurations_recorded_pool_else_the_predicted_one() -> None:
    """Live (not measured yet), a CUDA-graphs run on the on-top side gets the band the replay of its configuration's
    recording on the card gets: that recording's logged pool, not the other runs' (on the H100 all eager, so 0 GiB:
    its one graphs run diverged live and was a finding in replay). A configuration the card never ran takes the
    theory's pool for its capture list."""
    checked = 0
    for card in _ledger_cards():
        for run in (o for o in cf.recorded_on_top(RESULTS, card) if o.graphs):
            rec = _rec(card, run.name)
            predicted = _predicted(rec)
            args = (run.name, run.tensor_parallel, True, predicted["peak_activation_bytes"].value,
                    predicted["requested_memory_bytes"].value, RESULTS, card)
            replay, live = cf.budget_mark(*args, rec, 0.0), cf.budget_mark(*args, None, 0.0)
            if replay.args[0] == live.args[0] != cf.PEAK_RELEASED:
                assert live.kwargs["expected"] == replay.kwargs["expected"], (card, run.name)
                checked += 1
    if not checked:
        pytest.skip("no recorded CUDA-graphs run above its budget in this checkout")
    card = _ledger_cards()[0]
    unrecorded = [cf.budget_mark("vllm-ledger.never-run", False, True, 0.0, 100 * GiB, RESULTS, card, None, pool)
                  for pool in (0.0, GiB)]
    widened = unrecorded[1].kwargs["expected"][1] - unrecorded[0].kwargs["expected"][1]
    assert widened == pytest.approx(GiB / (100 * GiB))


def test_the_smaller_quoted_differences() -> None:
    v1, tp = _rec(cf.MEASURED_ON, cf.V1_RUN), _rec(cf.MEASURED_ON, cf.TP_GRAPHS_RUN)
    assert f"{(cf.V1_NON_TORCH_BYTES - cf.V2_NON_TORCH_BYTES) / MiB:.0f} MiB" == "8 MiB"
    blocks_short = _predicted(v1)["num_gpu_blocks"].value - v1["num_gpu_blocks"].value
    assert f"{blocks_short:.0f} blocks" in _reason(cf.V1_AVAILABLE)
    predicted = _predicted(tp)
    under = (predicted["peak_activation_bytes"].value - cf.TP_GRAPHS_PEAK_BYTES) / MiB
    assert f"{under:.0f} MiB under the prediction" in cf.TP_GRAPHS_WHY
    non_torch = (tp["non_torch_increase_bytes"].value / MiB, predicted["non_torch_increase_bytes"].value / MiB)
    assert f"({non_torch[0]:.0f} vs {non_torch[1]:.0f} MiB" in cf.TP_NON_TORCH_WHY


def test_the_seed_graph_budget_figures() -> None:
    """The logged terms plus the graph pool, against 0.9 x the card's logged total."""
    r2 = _rec("rtx4090", "seed-r2-vllm-memory-ledger")
    terms = ("consumed_bytes", "peak_activation_bytes", "available_kv_bytes", "cudagraph_bytes")
    used = sum(r2[k].value for k in terms)
    budget = r2["total_memory_bytes"].value * r2["gpu_memory_utilization"].value
    quoted = (cf.SEED_GRAPHS_USED_GIB, cf.SEED_BUDGET_GIB)
    assert (f"{used / GiB:.2f}", f"{budget / GiB:.2f}") == (f"{quoted[0]:.2f}", f"{quoted[1]:.2f}")
    assert f"({quoted[0]:.2f} vs {quoted[1]:.2f} GiB)" in _reason(cf.SEED_GRAPHS_NOT_SUBTRACTED)


def test_the_graph_pool_reason_is_read_from_the_recordings() -> None:
    reason = cf.graph_pool_reason(RESULTS, cf.MEASURED_ON)
    example = _rec(cf.MEASURED_ON, cf.GRAPH_POOL_EXAMPLE)
    twin = _rec(cf.MEASURED_ON, cf.GRAPH_POOL_EXAMPLE.replace(".graphs", ".eager"))
    assert (f"(qwen2.5-7b: {example['available_kv_bytes'].value / 1e9:.2f} GB with graphs vs "
            f"{twin['available_kv_bytes'].value / 1e9:.2f} GB eager)") in reason


def test_the_seed_graph_band_is_the_mechanisms_arithmetic_and_a_moved_measurement_diverges() -> None:
    """seed-vllm-cudagraph-not-subtracted's band is 1 + graphs / documented, +- the logged figures' rounding: it takes
    no measured available KV, so moving the measurement by more than the rounding moves the verdict."""
    from pytest_anatomy.reconcile import Tolerance, Verdict, compare

    documented, graphs, rounding = 20 * GiB, 0.34 * GiB, 0.03 * GiB
    band = cf.seed_graphs_band(graphs, documented, rounding)
    assert band == pytest.approx((1 + 0.31 / 20, 1 + 0.37 / 20))
    tol = Tolerance(abs=rounding, why="rounding")
    for measured, verdict in ((documented + graphs, Verdict.FINDING), (documented + 2 * graphs, Verdict.DIVERGE)):
        finding = {"id": "seed-vllm-cudagraph-not-subtracted", "reason": "r", "expected": band}
        assert compare("available_kv_bytes_documented", documented, measured, tol, finding=finding).verdict is verdict
