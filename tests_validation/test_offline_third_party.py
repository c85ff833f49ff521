"""Offline fixed-batch latency and throughput (Argonne's LLM-Inference-Bench, vLLM and llama.cpp on
A100 and H100), predicted with the H200 calibration transferred (theory/transfer.py)."""

from __future__ import annotations

from typing import Any

import pytest
from sweeps import (SPREAD_WHY, Case, cases, offline, offline_kv_pool, parametrize, ratio_band, replay_targets,
                    transfer_for)
from validation_findings import (
    LLAMACPP_CANDIDATES,
    OFFLINE_VLLM_CANDIDATES,
    OLD_VLLM_CPU,
    OLD_VLLM_REASON,
    experiment,
    finding_marks,
    route,
)

from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory.prediction import Prediction, Term

SOURCE = "argonne"



CASES = cases(SOURCE)


def _tokens(case: Case) -> int:
    return 2 * case.s("input_len") * (1 if case.engine == "llama.cpp" else case.s("batch"))


def _routes(answer: tuple[float, float, float], case: Case) -> list[Any]:
    central, lo, hi = answer
    meas = dict(case.measured)
    tokens = _tokens(case)
    lat_band, thr_band = ratio_band(central, lo, hi), ratio_band(tokens / central, tokens / hi, tokens / lo)
    causes_lat: tuple[Any, ...] = ()
    causes_thr: tuple[Any, ...] = ()
    if case.engine == "vllm":
        causes_lat = (("vllm-pre-0.6-cpu-overhead", OLD_VLLM_REASON, ratio_band(central, lo, hi * OLD_VLLM_CPU)),)
        causes_thr = (("vllm-pre-0.6-cpu-overhead", OLD_VLLM_REASON,
                       ratio_band(tokens / central, tokens / (hi * OLD_VLLM_CPU), tokens / lo)),)
    return [route(meas["latency"], central, lat_band, "latency", causes_lat),
            route(meas["throughput"], tokens / central, thr_band, "throughput", causes_thr)]


def _answer(transfer: Any, case: Case) -> tuple[float, float, float]:
    return offline(transfer, case.hardware, case.s("catalog_model"), case.engine, case.s("gpus"),
                   case.s("input_len"), case.s("batch"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """(target, case, answer) for every experiment of each card folder holding Argonne recordings;
    misses are grouped per card, engine and metric."""
    if "target" not in metafunc.fixturenames:
        return
    targets, results = replay_targets(metafunc.config, SOURCE)
    transfer, why_none = transfer_for(targets, results)
    if transfer is None:
        targets = []
    params = []
    for t in targets:
        for engine, why in (("vllm", OFFLINE_VLLM_CANDIDATES), ("llama.cpp", LLAMACPP_CANDIDATES)):
            mine = [c for c in cases(SOURCE, t.name, results) if c.engine == engine]
            answers = [_answer(transfer, c) for c in mine]
            marks = finding_marks(t.name, SOURCE, engine, [_routes(a, c) for a, c in zip(answers, mine)], why,
                                  [c.recording for c in mine], [c.id for c in mine])
            params += [pytest.param(t, c, a, marks=m, id=f"{t.name}-{c.id}") for c, a, m in zip(mine, answers, marks)]
    parametrize(metafunc, ["target", "case", "answer"], params, SOURCE, why_none)


@pytest.mark.gpu
def test_offline_latency_and_throughput(target: Any, case: Case, answer: tuple[float, float, float], measured: Any,
                                        reconcile: Any, h200_transfer: Any) -> None:
    rec = measured(case.recording, suite=f"third-party/{SOURCE}")
    model, length, batch = case.s("catalog_model"), case.s("input_len"), case.s("batch")
    assert answer == _answer(h200_transfer, case)
    central, lo, hi = answer
    engine_formula = ("one sequence: prompt in chunks of n_batch, then L - 1 decode steps (llama.cpp, layer split)"
                      if case.engine == "llama.cpp" else
                      "B prompts prefilled first (whole prompts per step), then L - 1 decode steps at batch B; in "
                      "waves of n = KV pool / 2L sequences where the pool cannot hold B x 2L tokens")
    tokens = _tokens(case)
    inputs: dict[str, Any] = {"input_len": length, "output_len": length, "batch": batch, "gpus": case.s("gpus"),
                              "hardware": target.name, "engine": case.engine}
    if case.engine == "vllm":  # the central pool and the sequences a wave holds (sweeps.offline_kv_pool)
        pool = offline_kv_pool(target.name, model, case.s("gpus"))
        inputs |= {"kv_pool_tokens": round(pool), "sequences_per_wave": max(1, min(batch, int(pool // (2 * length))))}
    notes = (h200_transfer.describe(),)
    latency = Prediction(central, "s", engine_formula, inputs,
                         terms=(Term("band low", lo, "s", "card variant, prefill budget, all-reduce 5 us"),
                                Term("band high", hi, "s", "card variant, prefill budget, all-reduce 20 us")),
                         notes=notes)
    throughput = Prediction(tokens / central, "tokens/s", "(input + output) tokens x sequences / latency", inputs,
                            terms=(Term("band low", tokens / hi, "tokens/s"), Term("band high", tokens / lo, "tokens/s")),
                            notes=notes)
    failures = []
    # The CSV's throughput is its own latency column restated (tokens / latency: the test below), so
    # its check replays that computed column and carries nothing the latency check does not.
    for name, pred, band, kind in (
            ("latency", latency, ratio_band(central, lo, hi), "prediction"),
            ("throughput", throughput, ratio_band(tokens / central, tokens / hi, tokens / lo), "replay")):
        try:  # both are reconciled (and recorded) even when the first diverges
            reconcile(name, pred, rec[f"{case.key}.{name}"], ratio=band, why=SPREAD_WHY, model=model, kind=kind)
        except AssertionError as exc:
            failures.append(str(exc))
    if failures:
        raise AssertionError("\n".join(failures))


def test_the_csv_defines_throughput_as_tokens_over_latency() -> None:
    """The protocol's reading of the CSV (docs/VALIDATION.md section 3): vLLM rows B x 2L / latency,
    llama.cpp rows 2L / latency whatever the 'Batch Size' (one sequence; the column is n_batch)."""
    off = [(c.id, dict(c.measured)["throughput"] * dict(c.measured)["latency"] / _tokens(c)) for c in CASES]
    assert off and all(abs(r - 1) < 1e-6 for _, r in off), [x for x in off if abs(x[1] - 1) >= 1e-6][:5]


def test_the_kv_pools_docs_quote() -> None:
    """docs/VALIDATION.md's KV-pool change quotes these pools (thousands of tokens, one rank) on the smaller of the two
    cards Argonne's vLLM rows are filed under (the A100 40 GB), and how many first runs' B x 2L exceed the pool on each
    (12 there, 3 on the other); recomputed from the catalog and the models (Meta-Llama-3-8B priced as the catalog's
    llama-3.1-8b, the same shapes)."""
    cards = sorted({c.hardware for c in CASES if c.engine == "vllm"}, key=lambda c: get_hardware(c).memory_bytes)
    pools = {(m, tp): round(offline_kv_pool(cards[0], m, tp) / 1e3) for m, tp in
             (("llama-2-7b", 1), ("llama-2-7b", 2), ("llama-3.1-8b", 1), ("mistral-7b-v0.1", 1))}
    assert pools == {("llama-2-7b", 1): 41, ("llama-2-7b", 2): 108, ("llama-3.1-8b", 1): 144,
                     ("mistral-7b-v0.1", 1): 156}
    over = [sum(c.s("batch") * 2 * c.s("input_len") > offline_kv_pool(card, c.s("catalog_model"), c.s("gpus"))
                for c in CASES if c.engine == "vllm" and c.hardware == card and experiment(c.id)[1] == 1)
            for card in cards]
    assert over == [12, 3]
