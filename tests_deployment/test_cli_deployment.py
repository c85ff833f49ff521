"""The CLI's deployment questions: `predict latency --prefix-cached-tokens / --speculative` and `plan`.
Numbers are checked against the theory functions they must come from (never against constants), and
every refusal is one line on stderr with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
# hypothesis is a dev dependency; the reconciliation report (README's main command) installs only the core
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_anatomy.cli import main
from pytest_anatomy.theory import speculative as sp
from pytest_anatomy.theory.prefix_cache import hit_tokens
from pytest_anatomy.deployment_ladder import HARDWARE

BASE = ("predict", "latency", "--model", "qwen2.5-7b", "--hardware", HARDWARE, "--batch", "32", "--input-len", "1024",
        "--output-len", "256", "--json")


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_prefix_cached_tokens_shorten_prefill_and_ttft_by_the_hit(capsys) -> None:
    cold, warm = _json(capsys, *BASE), _json(capsys, *BASE, "--prefix-cached-tokens", "1000")
    assert warm["prefix_hit_tokens"]["value"] == hit_tokens(1024, 1000) == 992
    assert warm["prefill_ms"]["value"] < cold["prefill_ms"]["value"] / 3  # 32 of 1,024 tokens left to compute
    assert warm["ttft_ms"]["value"] < cold["ttft_ms"]["value"]
    assert warm["itl_ms"] == cold["itl_ms"]  # decoding does not see the cache
    assert warm["ttft_ms"]["uncertainty"] is None  # no reconciled prefix-cached prefill to quote


def test_prefix_hits_enter_the_simulation_with_rate(capsys) -> None:
    args = (*BASE, "--rate", "4", "--requests", "60", "--max-num-seqs", "64")  # a small knee run: CPU time
    cold, warm = _json(capsys, *args), _json(capsys, *args, "--prefix-cached-tokens", "1000")
    assert warm["ttft_ms"]["value"] < cold["ttft_ms"]["value"]


def test_speculative_answers_follow_the_closed_form(capsys) -> None:
    blind = _json(capsys, *BASE, "--speculative", "ngram:k=4")
    assert "spec_verify_step_ms" in blind and "spec_itl_ms" not in blind  # no acceptance: no per-token ITL
    seen = _json(capsys, *BASE, "--speculative", "ngram:k=4,acceptance=0.7")
    e = sp.expected_tokens(0.7, 4)
    assert seen["spec_tokens_per_step"]["value"] == pytest.approx(e, rel=1e-12)
    assert seen["spec_itl_ms"]["value"] == pytest.approx(seen["spec_verify_step_ms"]["value"] / e, rel=1e-12)
    assert seen["spec_verify_step_ms"]["value"] > seen["itl_ms"]["value"]  # 160 query tokens cost more than 32


@pytest.mark.parametrize(("flag", "message"), [
    (("--speculative", "eagle:k=3"), "not modelled"), (("--speculative", "ngram:k=0"), "k >= 1"),
    (("--speculative", "ngram:acceptance=0.5"), "needs k=K"), (("--speculative", "ngram:k=4,acceptance=1.5"), "[0, 1]"),
    (("--prefix-cached-tokens", "-5"), ">= 0")], ids=["method", "k0", "no-k", "acceptance", "negative"])
def test_bad_knob_flags_are_one_line(capsys, flag: tuple[str, str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*BASE, *flag])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


PLAN = ("plan", "--model", "qwen2.5-7b", "--hardware", HARDWARE, "--workload", "rag")


def test_plan_ranks_configurations_that_meet_the_slo(capsys) -> None:
    doc = _json(capsys, *PLAN, "--json", "--top", "3")
    assert doc["workload"] == "rag" and 1 <= len(doc["plans"]) <= 3
    slo = doc["slo"]
    for p in doc["plans"]:
        m = p["predicted"]
        assert m["ttft_p99_s"] * 1e3 <= slo["ttft_p99_ms"] and m["itl_p99_s"] * 1e3 <= slo["itl_p99_ms"]
    goodputs = [p["predicted"]["goodput"] / p["tp"] for p in doc["plans"]]
    assert goodputs == sorted(goodputs, reverse=True)
    top = doc["plans"][0]
    assert "prefix_caching" in top["knobs_on"]  # 3,000 shared tokens of ~3,200: the cache is the first gain
    assert top["gains_by_knob"]["prefix_caching"]["ttft_p50_s"] < 0.5
    # knob_gains depends on which recordings exist: test_knob_gain_uncertainty_counts_this_workloads_rungs


def test_knob_gain_uncertainty_counts_this_workloads_rungs(tmp_path) -> None:
    """Only <model>.<workload>.<rung> recordings speak for this plan's gains: engine starts and other
    workloads' rungs do not (the first ladder visit filed 5 engine starts beside 5 rag rungs, and `plan`
    said "10 deployment recordings exist" for any workload)."""
    from pytest_anatomy.cli_plan import knob_gain_uncertainty

    card = "any-card"  # a folder name only: the count does not depend on the card
    folder = tmp_path / card / "deployment"
    assert "no reconciliation of a knob's gain" in knob_gain_uncertainty(card, tmp_path, "qwen2.5-7b", "rag")
    folder.mkdir(parents=True)
    for name in ("qwen2.5-7b.engine.0", "qwen2.5-7b.chat.baseline", "llama-3.1-8b.rag.limits",
                 "qwen2.5-7b.rag.baseline", "qwen2.5-7b.rag.fp8_kv", "qwen2.5-7b.rag.plan_top+graphs-to-budget"):
        (folder / f"{name}@20261202T050156Z.json").write_text("{}")
    (folder / "qwen2.5-7b.rag.baseline@20261203T000000Z.json").write_text("{}")  # a second visit: one rung still
    text = knob_gain_uncertainty(card, tmp_path, "qwen2.5-7b", "rag")
    assert text.startswith(f"2 rungs of qwen2.5-7b/rag measured on {card} (baseline, fp8_kv)"), text
    assert text.endswith("; cause test plan_top+graphs-to-budget recorded (tests_deployment/test_cause_tests.py)")
    assert "no reconciliation of a knob's gain" in knob_gain_uncertainty(card, tmp_path, "llama-3.1-8b", "chat")


def test_plan_prints_a_readable_table(capsys) -> None:
    assert main([*PLAN, "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("plan for qwen2.5-7b on 1 x h200, workload rag") and "engine: {" in out


@pytest.mark.parametrize(("seqs", "budget", "spec", "eager", "captured"), [
    (1024, 8192, 0, False, 512), (32, 1024, 0, False, 64), (256, 512, 0, False, None), (1024, 8192, 0, True, None),
    (32, 1024, 4, False, 320), (256, 8192, 4, False, 500)])
def test_a_plan_says_which_steps_run_outside_the_captured_graphs(seqs: int, budget: int, spec: int, eager: bool,
                                                                  captured: int | None) -> None:
    """vLLM's default capture list ends at min(2 x max_num_seqs x (1 + gamma), 512) rounded for speculation, or
    at the budget; a plan whose budget is larger says its larger steps run outside the graphs (the simulation prices
    them as captured) and names the engine argument that captures them; an eager engine or a budget inside the
    graphs has no such note."""
    from pytest_anatomy.theory.deployment import EngineKnobs
    from pytest_anatomy.theory.deployment_plan import graph_note

    notes = graph_note(EngineKnobs(seqs, budget, cudagraphs=not eager, spec_tokens=spec))
    if captured is None:
        assert notes == ()
    else:
        (note,) = notes
        assert f"up to {captured} tokens at max_num_seqs {seqs}" in note
        assert f"max_cudagraph_capture_size={budget}" in note


def test_plan_prints_each_plans_notes(capsys) -> None:
    assert main(["plan", "--model", "llama-3.1-8b", "--hardware", HARDWARE, "--workload", "chat", "--top", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(["plan", "--model", "llama-3.1-8b", "--hardware", HARDWARE, "--workload", "chat", "--top", "2"]) == 0
    out = capsys.readouterr().out
    notes = [n for p in doc["plans"] for n in p["notes"]]
    assert notes and all(f"   note: {n}" in out for n in notes)


@pytest.mark.parametrize(("argv", "message"), [
    (("--model", "nope", "--hardware", HARDWARE, "--workload", "chat"), "not a catalog model"),
    (("--model", "qwen2.5-7b", "--hardware", "h9000", "--workload", "chat"), "unknown hardware"),
    (("--model", "qwen2.5-7b", "--hardware", HARDWARE, "--workload", "no-such-workload"), "not found"),
    (("--model", "qwen2.5-7b", "--hardware", HARDWARE, "--workload", "chat", "--slo-ttft-ms", "1"), "loosen the SLO"),
    (("--model", "qwen2.5-72b", "--hardware", HARDWARE, "--workload", "chat"), "> budget"),
    (("--model", "qwen2.5-72b", "--hardware", HARDWARE, "--workload", "chat"), "pass --gpus for a tensor-parallel"),
], ids=["model", "hardware", "workload", "slo", "too-big-arithmetic", "too-big-fix"])
def test_plan_refusals_are_one_line(capsys, argv: tuple[str, ...], message: str) -> None:
    assert main(["plan", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_plan_refuses_a_malformed_workload(capsys, tmp_path) -> None:
    bad = tmp_path / "w.json"
    bad.write_text(json.dumps({"name": "x", "seed": 1, "num_requests": 5}))
    assert main([*PLAN[:-1], str(bad)]) == 2
    assert "missing field 'arrival'" in capsys.readouterr().err


@pytest.mark.parametrize(("path", "value", "message"), [
    (("num_requests",), True, "num_requests has the wrong type: True is not a JSON integer"),
    (("num_requests",), 96.7, "num_requests has the wrong type: 96.7 is not a JSON integer"),
    (("arrival", "concurrency"), "16", "arrival.concurrency has the wrong type: '16' is not a JSON integer"),
    (("slo", "ttft_ms"), "400", "slo.ttft_ms has the wrong type: '400' is not a JSON number"),
    (("suffix_len", "max"), 1000.5, "suffix_len.max has the wrong type: 1000.5 is not a JSON integer"),
], ids=["bool-requests", "fraction-requests", "string-concurrency", "string-slo", "fraction-length"])
def test_plan_refuses_a_workload_number_of_the_wrong_type(capsys, tmp_path, path, value, message) -> None:
    """int() and float() coerced them: true planned 1 request, 96.7 planned 96, "400" was taken as 400 ms; a
    config.json field of the wrong type is refused, so is a workload's."""
    doc = json.loads((Path(__file__).parent / "workloads" / "chat.json").read_text())
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    bad = tmp_path / "w.json"
    bad.write_text(json.dumps(doc))
    assert main([*PLAN[:-1], str(bad)]) == 2
    assert capsys.readouterr().err == (f"pytest-anatomy: error: workload file {bad}: {message}; write it as in "
                                       "tests_deployment/workloads/chat.json\n")


@pytest.mark.parametrize("kind, message", [
    ("folder", "is a folder; pass a workload JSON file or a name in tests_deployment/workloads/ (chat, rag)"),
    ("not-utf8", "is not readable JSON ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte); "
                 "fix the file"),
], ids=["folder", "not-utf8"])
def test_plan_names_a_workload_path_it_cannot_read(capsys, tmp_path, kind, message) -> None:
    """A file that is not UTF-8 printed 'error: utf-8' (the codec's name, a bare UnicodeDecodeError); a folder
    printed errno's tuple inside 'not readable JSON'."""
    bad = tmp_path / "w.json"
    bad.mkdir() if kind == "folder" else bad.write_bytes(b"\xff\xfe{")
    assert main([*PLAN[:-1], str(bad)]) == 2
    assert capsys.readouterr().err == f"pytest-anatomy: error: workload file {bad} {message}\n"


def test_plan_uses_every_gpu_given(capsys) -> None:
    doc = _json(capsys, *PLAN, "--json", "--gpus", "2", "--top", "40")
    assert {p["tp"] * p["replicas"] for p in doc["plans"]} == {2}
    assert {p["tp"] for p in doc["plans"]} == {1, 2}  # two tp-1 replicas and one tp-2 engine both compete


@given(st.text(max_size=40))
def test_any_speculative_text_parses_or_is_refused_with_a_reason(text: str) -> None:
    import argparse

    from pytest_anatomy.cli_knobs import parse_speculative

    try:
        spec = parse_speculative(text)
    except argparse.ArgumentTypeError as exc:
        assert str(exc)  # argparse prints it as the one line
    else:
        assert spec.method == "ngram" and spec.k >= 1


def test_more_cached_tokens_than_the_prompt_is_refused(capsys) -> None:
    """--prefix-cached-tokens 100000 with a 1,024-token prompt was answered (capped at the prompt), exit 0."""
    assert main([*BASE, "--prefix-cached-tokens", "100000"]) == 2
    assert capsys.readouterr().err == ("pytest-anatomy: error: --prefix-cached-tokens 100,000 is more than the prompt "
                                       "(--input-len 1,024); the cache can hold at most the prompt: pass N <= "
                                       "--input-len\n")
    assert main([*BASE, "--prefix-cached-tokens", "1024"]) == 0  # the whole prompt: answered (the last token recomputed)


def test_a_speculative_field_given_twice_is_refused(capsys) -> None:
    """ngram:k=4,k=5 answered k=5, the last one silently winning."""
    with pytest.raises(SystemExit) as exit_:
        main([*BASE, "--speculative", "ngram:k=4,k=5"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err
    assert err == ("pytest-anatomy predict latency: error: argument --speculative: k is given twice in "
                   "'ngram:k=4,k=5'; give each of k and acceptance once (see pytest-anatomy predict latency --help)\n")


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 5000) | st.floats(allow_nan=True) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
                     max_leaves=12)


_LEAVES = [("name",), ("seed",), ("num_requests",), ("arrival",), ("arrival", "process"), ("arrival", "concurrency"),
           ("arrival", "rate"), ("suffix_len",), ("suffix_len", "median"), ("suffix_len", "sigma"), ("suffix_len", "min"),
           ("output_len", "max"), ("output_len", "distribution"), ("shared_prefix",), ("shared_prefix", "tokens"),
           ("shared_prefix", "fraction"), ("shared_prefix", "count"), ("slo",), ("slo", "ttft_ms"), ("slo", "itl_ms")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_LEAVES), _JSON), min_size=1, max_size=3))
@example([(("seed",), float("inf"))])  # int(inf): OverflowError, not a ValueError
@example([(("num_requests",), 1e300)])  # parses, but would never finish generating
@example([(("suffix_len", "median"), float("nan"))])
def test_any_workload_document_parses_or_is_refused_with_a_reason(edits: list) -> None:
    """The chat workload with up to three fields replaced by any JSON value: a WorkloadError (plan prints
    it as one line) or a usable workload, never another exception."""
    from pytest_anatomy.specs import workload_file as wf

    doc = json.loads((Path(__file__).parent / "workloads" / "chat.json").read_text())
    for path, value in edits:
        parent = doc
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            parent[path[-1]] = value
    try:
        spec = wf.parse(doc)
    except wf.WorkloadError as exc:
        assert str(exc)
    else:
        assert 1 <= spec.num_requests <= wf.MAX_REQUESTS


def test_plan_on_an_open_loop_workload(capsys) -> None:
    """Poisson arrivals at 8/s, far below what one H200 serves: every configuration keeps up, so the
    throughput is the arrival rate's (8 x the mean output length over the run), whatever the knobs."""
    doc = _json(capsys, "plan", "--model", "qwen2.5-7b", "--hardware", HARDWARE, "--workload", "chat-poisson",
                "--json", "--top", "16")
    throughputs = [p["predicted"]["output_throughput"] for p in doc["plans"]]
    assert len(doc["plans"]) > 1 and max(throughputs) / min(throughputs) < 1.05


def test_a_plan_whose_weights_fit_but_whose_pool_is_too_small_says_so() -> None:
    """Where the capacity ledger lets the engine start, the refusal names the pool left beside the weights against
    the workload's longest request (the planner drops every candidate whose pool cannot hold it)."""
    from pytest_anatomy.cli_plan import _why_nothing_fits
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.specs.model import load_model

    line = _why_nothing_fits(load_model("qwen2.5-7b"), "qwen2.5-7b", get_hardware(HARDWARE), 1, 10_000_000)
    assert "KV pool left beside the weights cannot hold the workload's longest request (10,000,000 tokens)" in line
    assert "-token KV pool" in line and "\n" not in line
