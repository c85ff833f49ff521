"""`predict latency --engine llama.cpp` on a card with llama.cpp recordings answers what the speed suite predicts.

The CLI fits its constants itself (cli_llama.py, theory/llamacpp_latency.py fit_constants); these tests rebuild
them the speed suite's way (llama_speed.SessionCalibration) from the same recordings and ask for the same numbers,
so a CLI that fell back to the priors, picked another session or another overhead model fails here. The server
marginal is refitted from the sweep's C = 1 and C = 8 median ITLs, as test_llama_crossover.py reads them.
"""

from __future__ import annotations

import json

import llama_findings
import llama_speed
import pytest
import test_llama_crossover
from llama_runs import SUITE, LlamaRun
from llama_speed import SessionCalibration

from pytest_anatomy import cli_llama, recordings
from pytest_anatomy import session as anatomy_session
from pytest_anatomy.cli import main
from pytest_anatomy.specs.hardware import HARDWARE as CATALOG
from pytest_anatomy.theory import llamacpp_latency as ll

N_IN, N_OUT = 512, 256  # one ubatch of prompt: the prefill overhead is the tiny model's pp512 as measured


def _cli(capsys, results, target: str, run: LlamaRun, *flags: str) -> dict:
    assert main(["predict", "latency", "--engine", "llama.cpp", "--model", run.model, "--hardware", target,
                 "--weights", run.weights, "--input-len", str(N_IN), "--output-len", str(N_OUT),
                 "--results", str(results), "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_cli_names_the_suites_fit_runs():
    """The sweep level and the findings the CLI cites are the crossover's and the findings module's (the fit plan
    itself is one: llama_speed.py reads the theory's)."""
    assert cli_llama.SWEEP_FIT_LEVEL == test_llama_crossover.FIT_LEVEL
    assert cli_llama.MARGINAL_FINDING == llama_findings.MARGINAL_FINDING.args[0]
    assert cli_llama.KQUANT_FINDING == llama_findings.KQUANT_FINDING.args[0]


@pytest.mark.gpu
@pytest.mark.llama_runs("bench", select=lambda run: run.model in llama_speed.TINY_FOR)
def test_latency_is_the_speed_suites_prediction(target, run, measured, header_for, request, capsys):
    decode = SessionCalibration(run, measured, header_for, "decode").calibration()
    prefill = SessionCalibration(run, measured, header_for, "prefill").calibration()
    _, results = anatomy_session.of_config(request.config, SUITE)
    out = _cli(capsys, results, target.name, run)
    header = header_for(run)
    itl = ll.decode_time(header, decode, context=N_IN + N_OUT / 2).value
    assert out["itl_ms"]["value"] == pytest.approx(itl * 1e3, rel=1e-12)
    assert out["throughput_tok_s"]["value"] == pytest.approx(1 / itl, rel=1e-12)
    assert out["prefill_ms"]["value"] == pytest.approx(ll.prefill_time(header, prefill, N_IN).value * 1e3, rel=1e-12)
    notes = out["itl_ms"]["notes"]
    assert any(n.startswith("kernel constants: fitted on") for n in notes), notes
    assert not any("prior" in n for n in notes if n.startswith(("kernel constants", "overhead"))), notes


@pytest.mark.gpu
@pytest.mark.llama_runs("server-sweep", select=lambda run: run.model in llama_speed.TINY_FOR)
@pytest.mark.parametrize("np_", [4, 16])
def test_server_burst_uses_the_marginal_fitted_at_c8(target, run, measured, header_for, request, capsys, np_):
    rec = measured(run.name)
    lv = test_llama_crossover.FIT_LEVEL
    bench = LlamaRun(run.target, f"{run.model}.{run.weights.lower()}.bench", run.model, run.weights, "bench")
    decode = SessionCalibration(bench, measured, header_for, "decode", bench=measured(bench.name, beside=rec))
    prefill = SessionCalibration(bench, measured, header_for, "prefill", bench=decode.bench)
    d, p = decode.calibration(), prefill.calibration()
    header = header_for(run)
    sweep = rec.provenance["settings"]["sweep"]
    context = sweep["n_prompt"] + sweep["n_gen"] / 2
    kv_s = ll.kv_read_bytes(header, context) / (d.read_bandwidth * d.attainment[ll.UNQUANTIZED_KERNEL])
    marginal = (rec[f"c{lv}.itl_s.median"].value - rec["c1.itl_s.median"].value) / (lv - 1) - kv_s
    burst = ll.server_burst(header, d, np_, N_IN, N_OUT, marginal, prompt_calib=p)
    _, results = anatomy_session.of_config(request.config, SUITE)
    out = _cli(capsys, results, target.name, run, "-c", str(np_ * (N_IN + N_OUT)), "-np", str(np_))
    assert out["server_throughput_tok_s"]["value"] == pytest.approx(burst["throughput_tok_s"].value, rel=1e-12)
    assert out["server_itl_ms"]["value"] == pytest.approx(burst["itl_s"].value * 1e3, rel=1e-12)
    assert out["server_ttft_median_ms"]["value"] == pytest.approx(burst["ttft_median_s"].value * 1e3, rel=1e-12)
    notes = out["server_throughput_tok_s"]["notes"]
    assert any(n.startswith("server marginal:") and run.name in n for n in notes), notes
    above = [n for n in notes if cli_llama.MARGINAL_FINDING in n]
    assert bool(above) == (np_ > lv), notes


def test_a_card_without_fit_runs_takes_the_priors(request, capsys):
    """The same question on a card whose recordings hold no llama.cpp session: the priors, said so."""
    _, results = anatomy_session.of_config(request.config, SUITE)
    card = next(h for h in CATALOG if not recordings.candidates(results, h, SUITE, f"{ll.FIT_MODEL}.f16.bench"))
    run = LlamaRun(card, "qwen2.5-7b.q4_k_m.bench", "qwen2.5-7b", "Q4_K_M", "bench")
    out = _cli(capsys, results, card, run)
    notes = out["itl_ms"]["notes"]
    assert any(n.startswith("kernel constants: prior") for n in notes), notes
    assert out["itl_ms"]["inputs"]["attainment"] == dict(ll.PRIOR_ATTAINMENT)
