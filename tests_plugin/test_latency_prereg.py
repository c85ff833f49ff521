"""`pytest-anatomy preregister latency`: a model's decode steps and lone prefills predicted from the recorded Qwen2.5-7B
calibration before the model is run, and the importer's check that a model's first latency run on a card with latency
pre-registrations was pre-registered and committed before it ran (issue 10 items 1 and 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import device_scripts
import pytest
from test_preregistration import _git, _iso, repo  # noqa: F401 - `repo` is a fixture

from pytest_anatomy import latency_prereg as lp
from pytest_anatomy import preregistration as pre
from pytest_anatomy.importers.device import DeviceImportError, import_files

REPO = Path(__file__).resolve().parents[1]
# A second model's batch as the latency plan writes it (Llama-3.1-8B, 2026-12-02): re-dated below to play a new run,
# on the card whose folder keeps it (results/<card>/batches/<stamp>/).
LLAMA_BATCH = next((REPO / "results").glob("*/batches/20261202T023952.680543Z/latency-llama-3.1-8b.json"))
CARD = LLAMA_BATCH.parents[2].name


def test_the_planned_ids_and_the_latency_plans_parts_agree() -> None:
    plan = device_scripts.load("latency_plan")
    assert (lp.DECODE_BATCHES, lp.PREFILL_LENS) == (plan.DECODE_BATCHES, plan.PREFILL_LENS)
    got = lp.planned(["qwen2.5-32b", "qwen2.5-3b.decode.b8", "qwen2.5-3b.prefill.l512", "qwen2.5-3b.decode.b1"])
    assert got == {"qwen2.5-32b": (lp.DECODE_BATCHES, lp.PREFILL_LENS), "qwen2.5-3b": ((8, 1), (512,))}
    for bad in ("qwen2.5-3b.decode.l8", "qwen2.5-3b.prefill.l0", "qwen2.5-3b.decode.bx"):
        with pytest.raises(pre.PreregistrationError, match="give MODEL, MODEL.decode.bB or MODEL.prefill.lN"):
            lp.planned([bad])


def test_the_predictions_are_predict_latencys_and_refuse_the_calibration_model() -> None:
    from pytest_anatomy.cli_calibration import recorded_calibration
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import latency as lat

    runs, note = lp.predict_runs({"qwen2.5-3b": ((1, 64), (8192,))}, CARD, REPO / "results")
    found = recorded_calibration(REPO / "results", get_hardware(CARD))
    assert not isinstance(found, str) and note == found.note()
    m = load_model("qwen2.5-3b")
    for b in (1, 64):
        run = runs[f"qwen2.5-3b.decode.b{b}"]
        want = lat.decode_step_time(m, found.ceilings, found.calib, b, lp.mean_context()).value
        assert run["predictions"][lp.DECODE_QUANTITY]["value"] == want
        assert set(run["sensitivity"]) == {e.name for e in lp.TERM_ERRORS}
    assert runs["qwen2.5-3b.prefill.l8192"]["predictions"][lp.PREFILL_QUANTITY]["value"] == \
        lat.prefill_time(m, found.ceilings, found.calib, 8192, lp.MAX_NUM_BATCHED_TOKENS).value
    with pytest.raises(pre.PreregistrationError, match="is the calibration model"):
        lp.predict_runs({lp.CALIBRATION_MODEL: ((1,), ())}, CARD, REPO / "results")
    with pytest.raises(pre.PreregistrationError, match="not a catalog model"):
        lp.predict_runs({"qwen9": ((1,), ())}, CARD, REPO / "results")


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:  # noqa: F811 - `repo` is the fixture's value
    return subprocess.run([sys.executable, "-m", "pytest_anatomy", "preregister", "latency", *args, "--hardware", CARD,
                           "--results", str(repo / "results")], cwd=repo, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_preregister_latency_writes_the_file_or_says_why_not_in_one_line(repo: Path) -> None:  # noqa: F811
    none = _cli(repo, "qwen2.5-3b")
    assert none.returncode == 2 and len(none.stderr.splitlines()) == 1
    assert f"no recorded calibration session for {CARD}" in none.stderr and not (repo / "results").exists()
    for suite in ("latency", "ceilings"):  # the recorded calibration sessions, read in place
        (repo / "results" / CARD).mkdir(parents=True, exist_ok=True)
        (repo / "results" / CARD / suite).symlink_to(REPO / "results" / CARD / suite)
    proc = _cli(repo, "qwen2.5-3b.decode.b1", "qwen2.5-3b.prefill.l512")
    assert proc.returncode == 0, proc.stderr
    (path,) = (repo / "results" / CARD / pre.FOLDER).glob("latency-*.json")
    doc = json.loads(path.read_text())
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert (doc["schema"], doc["suite"], doc["theory_commit"]) == (pre.SCHEMA, "latency", head)
    assert set(doc["runs"]) == {"qwen2.5-3b.decode.b1", "qwen2.5-3b.prefill.l512"}
    assert "calibrated from the typical recorded session" in doc["calibration"]
    bad = _cli(repo, "qwen2.5-7b")
    assert bad.returncode == 2 and "calibration model" in bad.stderr and len(bad.stderr.splitlines()) == 1


def _llama_batch_at(tmp: Path, when: datetime) -> Path:
    doc = json.loads(LLAMA_BATCH.read_text())
    doc["provenance"]["date_utc"] = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    path = tmp / LLAMA_BATCH.name
    path.write_text(json.dumps(doc))
    raw = LLAMA_BATCH.with_name(LLAMA_BATCH.stem + "-raw.jsonl")
    (tmp / raw.name).write_bytes(raw.read_bytes())
    return path


def _preregister_llama(results: Path, repo: Path, committed: datetime) -> Path:  # noqa: F811
    runs, note = lp.predict_runs({"llama-3.1-8b": (lp.DECODE_BATCHES, lp.PREFILL_LENS)}, CARD, REPO / "results")
    path = pre.write(results, lp.build(runs, CARD, "0" * 40, _iso(committed), "test", note))
    _git(repo, "add", str(path.relative_to(repo)))
    _git(repo, "commit", "-qm", "pre-register", when=committed)
    return path


def test_a_models_first_latency_run_needs_a_preregistration_committed_before_it(
        repo: Path, tmp_path_factory, monkeypatch) -> None:  # noqa: F811
    """On a card with latency pre-registrations, a model's first decode run is refused unless one covering it was
    committed before it ran; a later run of the same parts repeats it (not held out); a card with none imports as
    before; the calibration model's own runs are never held out."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    monkeypatch.setattr(pre, "LATENCY_REQUIRED_FROM", _iso(now - timedelta(hours=1)))
    results = repo / "results"
    import_files([_llama_batch_at(tmp_path_factory.mktemp("none"), now - timedelta(minutes=40))], results,
                 dry_run=True)  # no latency pre-registration on this card at all: imports as before
    other = results / CARD / pre.FOLDER
    other.mkdir(parents=True)
    placeholder = lp.build({}, CARD, "0" * 40, _iso(now - timedelta(hours=2)), "test", "")
    pre.write(results, placeholder)  # the card now has latency pre-registrations, none of Llama
    with pytest.raises(DeviceImportError, match=r"^llama-3.1-8b.decode.b1 is marked held out but no pre-registration "
                                                r".*: run `pytest-anatomy preregister latency llama-3.1-8b.decode.b1"):
        import_files([_llama_batch_at(tmp_path_factory.mktemp("a"), now - timedelta(minutes=30))], results,
                     dry_run=True)
    _preregister_llama(results, repo, now - timedelta(minutes=20))
    with pytest.raises(DeviceImportError, match=r"committed 20\d\d-"):  # committed, but after the run
        import_files([_llama_batch_at(tmp_path_factory.mktemp("b"), now - timedelta(minutes=25))], results,
                     dry_run=True)
    import_files([_llama_batch_at(tmp_path_factory.mktemp("c"), now - timedelta(minutes=10))], results)
    (first,) = (results / CARD / "latency").glob("llama-3.1-8b.decode.b1@*.json")
    prov = json.loads(first.read_text())["provenance"]
    assert prov["held_out"] is True and prov["preregistration"]["file"].startswith(f"{CARD}/preregistered/latency-")
    import_files([_llama_batch_at(tmp_path_factory.mktemp("d"), now - timedelta(minutes=5))], results)
    repeat = max((results / CARD / "latency").glob("llama-3.1-8b.decode.b1@*.json"))
    assert repeat != first and "preregistration" not in json.loads(repeat.read_text())["provenance"]


def _main_batch_at(tmp: Path, when: datetime) -> Path:
    """The Qwen2.5-7B batch of LLAMA_BATCH's session (its calibration and ceilings), unpacked and re-dated."""
    import lzma

    folder = LLAMA_BATCH.parent
    doc = json.loads(lzma.open(folder / "latency.json.xz").read())
    doc["provenance"]["date_utc"] = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    (tmp / "latency.json").write_text(json.dumps(doc))
    (tmp / "latency-raw.jsonl").write_bytes(lzma.open(folder / "latency-raw.jsonl.xz").read())
    return tmp / "latency.json"


def _qwen_entries(runs: dict[str, Any]) -> dict[str, Any]:
    """Qwen2.5-7B's decode entries beside Llama's, as a second pre-registered model of the same session (the real
    command refuses the calibration model; here it only supplies the pair a session of two models gives)."""
    from pytest_anatomy.cli_calibration import recorded_calibration
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import latency as lat

    found = recorded_calibration(REPO / "results", get_hardware(CARD))
    assert not isinstance(found, str)
    qwen, out = load_model(lp.CALIBRATION_MODEL), {}
    for name, run in runs.items():
        b = run["settings"]["batch"]
        pred = lat.decode_step_time(qwen, found.ceilings, found.calib, b, lp.mean_context())
        out[name.replace("llama-3.1-8b", lp.CALIBRATION_MODEL)] = {
            **run, "model": lp.CALIBRATION_MODEL, "sensitivity": {},
            "predictions": {lp.DECODE_QUANTITY: {**run["predictions"][lp.DECODE_QUANTITY], "value": pred.value}}}
    return out


def test_recorded_preregistered_runs_reach_a_verdict(repo: Path, tmp_path_factory) -> None:  # noqa: F811
    """The path after the next visit, on CPU: two pre-registrations committed before a session (the true one, and one
    whose steps are 1.5x), the session imported, tests_latency/test_latency_preregistered.py replaying it. The true
    pre-registration's steps and the pair agree on their noise budgets; the 1.5x one's diverge, prefills included."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    results, committed = repo / "results", now - timedelta(minutes=20)
    runs, note = lp.predict_runs({"llama-3.1-8b": ((1,), (2048,))}, CARD, REPO / "results")
    decode = {k: v for k, v in runs.items() if v["kind"] == "decode"}
    true = pre.write(results, lp.build({**runs, **_qwen_entries(decode)}, CARD, "0" * 40, _iso(committed), "t", note))
    off = {k: {**v, "predictions": {q: {**e, "value": 1.5 * e["value"]} for q, e in v["predictions"].items()}}
           for k, v in runs.items()}
    wrong = pre.write(results, lp.build(off, CARD, "0" * 40, _iso(committed + timedelta(seconds=1)), "t", note))
    _git(repo, "add", str(true.relative_to(repo)), str(wrong.relative_to(repo)))
    _git(repo, "commit", "-qm", "pre-register", when=committed)
    batches = tmp_path_factory.mktemp("session")
    run_at = now - timedelta(minutes=10)
    # --in-sample: the batches Llama ran beside b=1 are not pre-registered here, and are filed as not held out
    import_files([_main_batch_at(batches, run_at), _llama_batch_at(batches, run_at)], results, in_sample=True)
    report = tmp_path_factory.mktemp("report") / "r.html"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--anatomy-report={report}",
                           "-o", f"anatomy_results_dir={results}", "--anatomy-source=recorded",
                           str(REPO / "tests_latency" / "test_latency_preregistered.py"),
                           "-k", "decode_step or pair or prefill"],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    ledger = json.loads(report.with_suffix(".json").read_text())["reconciliations"]
    by: dict[tuple[str, bool], set[str]] = {}
    for e in ledger:  # True: a row of the 1.5x pre-registration (its prediction names its file)
        by.setdefault((e["name"], wrong.name in json.dumps(e["prediction"])), set()).add(e["verdict"])
    # The prefills' verdicts are this folder's, not a finding of the theory: one calibration session here gives no
    # session-to-session spread, and Llama's 2,048-token prefill sits above its GEMMs (h200-prefill-above-its-gemms).
    assert {k: v for k, v in by.items() if "prefill" not in k[0]} == {
        ("preregistered_decode_step", False): {"agree"}, ("preregistered_decode_step", True): {"diverge"},
        ("decode_step_preregistered_model", False): {"agree"}, ("preregistered_pair_ratio", False): {"agree"}
    }, (by, proc.stdout[-3000:])
    assert by[("preregistered_prefill", True)] == {"diverge"} and ("prefill_preregistered_model", False) in by
    budgets = {e["name"]: set(e["tolerance"]["budget"]) for e in ledger}
    for name in ("preregistered_decode_step", "decode_step_preregistered_model", "preregistered_pair_ratio"):
        assert {"repeat_scatter", "card_spread"} <= budgets[name], name  # the transfer's card-to-card spread
    assert {"repeat_scatter", "peak_spread"} <= budgets["preregistered_prefill"]
