"""Pre-registration as a mechanism: `pytest-anatomy preregister` writes the theory's predictions for
planned runs with the theory's commit; the device importer refuses a held-out run unless a
pre-registration of it was committed before the run; the capacity suite reconciles the run
against the pre-registered values beside the current theory."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pytest_anatomy import preregistration as pre
from pytest_anatomy import recordings
from pytest_anatomy.importers.device import DeviceImportError, import_files
from pytest_anatomy.kernels.registry import PREREGISTERED_ON
from pytest_anatomy.specs.hardware import HARDWARE

REPO = Path(__file__).resolve().parents[1]
BATCH = REPO / "results" / "h200" / "batches" / "20261130T020635Z" / "capacity-2.json"  # holds a held-out TP2 run
HELD_OUT_ID = "llama-3.1-70b.u0.90.len8192.eager.tp2"
PLANNED = "qwen2.5-72b.u0.90.len8192.eager.tp4"  # in the capacity plan, never run yet


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _git(repo: Path, *args: str, when: datetime | None = None) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    if when is not None:
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = _iso(when)
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(tmp_path, "init", "-q")
    (tmp_path / "README").write_text("x\n")
    _git(tmp_path, "add", "README")
    _git(tmp_path, "commit", "-qm", "start")
    return tmp_path


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_anatomy", "preregister", *args,
                           "--results", str(repo / "results")], cwd=repo, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_preregister_writes_the_theorys_predictions_with_its_commit(repo: Path) -> None:
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory.vllm_memory import predict_ledger
    from pytest_anatomy.theory.vllm_settings import LedgerSettings

    proc = _cli(repo, "capacity", PLANNED, "--hardware", "h200")
    assert proc.returncode == 0, proc.stderr
    (path,) = (repo / "results" / "h200" / "preregistered").glob("capacity-*.json")
    doc = json.loads(path.read_text())
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert doc["schema"] == pre.SCHEMA and doc["theory_commit"] == head
    run = doc["runs"]["vllm-ledger." + PLANNED]
    expected = predict_ledger(load_model("qwen2.5-72b"), get_hardware("h200"),
                              LedgerSettings.from_mapping(run["settings"]))
    assert run["settings"]["tensor_parallel_size"] == 4
    assert {k: v["value"] for k, v in run["predictions"].items()} == {k: p.value for k, p in expected.items()}


def test_a_suites_preregistration_document_names_the_commit_and_refuses_a_dirty_theory(repo: Path) -> None:
    """write_document (the quant suite's *_preregistered.json writers): what, written_utc, theory_commit, then the
    body, at the given time; an uncommitted theory file refuses it and writes nothing."""
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    path = repo / "doc.json"
    pre.write_document(repo, path, "a plan", {"predictions": {"x": 1}}, "2026-12-04T18:28:51Z")
    doc = json.loads(path.read_text())
    assert list(doc) == ["what", "written_utc", "theory_commit", "predictions"]
    assert (doc["written_utc"], doc["theory_commit"], doc["predictions"]) == ("2026-12-04T18:28:51Z", head, {"x": 1})
    theory = repo / pre.THEORY_PATHS[0]
    theory.mkdir(parents=True, exist_ok=True)
    (theory / "new.py").write_text("x = 1\n")
    with pytest.raises(pre.PreregistrationError, match="uncommitted"):
        pre.write_document(repo, repo / "other.json", "a plan", {})
    assert not (repo / "other.json").exists()


def test_preregister_refuses_an_uncommitted_theory_and_an_unknown_id_in_one_line(repo: Path) -> None:
    (repo / "pytest_anatomy" / "theory").mkdir(parents=True)
    (repo / "pytest_anatomy" / "theory" / "capacity.py").write_text("# edited\n")
    dirty = _cli(repo, "capacity", PLANNED)
    assert dirty.returncode == 2 and "uncommitted changes" in dirty.stderr and len(dirty.stderr.splitlines()) == 1
    unknown = _cli(repo, "capacity", PLANNED.replace("tp4", "tp5"))
    assert unknown.returncode == 2 and "did you mean 'qwen2.5-72b.u0.90.len8192.eager.tp" in unknown.stderr
    assert not (repo / "results").exists()


def _batch_at(tmp: Path, when: datetime, batch: Path = BATCH, name: str = "capacity-2.json") -> Path:
    """A copy of a recorded device batch (the capacity one by default) whose provenance says it ran at `when`."""
    doc = json.loads(batch.read_text())
    doc["provenance"]["date_utc"] = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    path = tmp / name
    path.write_text(json.dumps(doc))
    return path


def _preregister_held_out_run(repo: Path, committed: datetime) -> Path:
    doc = pre.build([pre.PlannedRun(HELD_OUT_ID, "llama-3.1-70b",
                                    {"gpu_memory_utilization": 0.9, "max_model_len": 8192, "enforce_eager": True,
                                     "tensor_parallel_size": 2})],
                    "h200", "0" * 40, _iso(committed), "test")
    path = pre.write(repo / "results", doc)
    _git(repo, "add", str(path.relative_to(repo)))
    _git(repo, "commit", "-qm", "pre-register", when=committed)
    return path


def test_a_held_out_run_needs_a_preregistration_committed_before_it(repo: Path, tmp_path_factory) -> None:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    results = repo / "results"
    before_any = _batch_at(tmp_path_factory.mktemp("b1"), now - timedelta(minutes=30))
    with pytest.raises(DeviceImportError, match=rf"vllm-ledger.{HELD_OUT_ID} is marked held out but no "
                                                r"pre-registration .* found: none\)"):
        import_files([before_any], results, dry_run=True)
    _preregister_held_out_run(repo, now - timedelta(minutes=20))
    earlier_run = _batch_at(tmp_path_factory.mktemp("b2"), now - timedelta(minutes=25))
    with pytest.raises(DeviceImportError, match=r"committed 20\d\d-"):  # committed, but after the run
        import_files([earlier_run], results, dry_run=True)
    later_run = _batch_at(tmp_path_factory.mktemp("b3"), now - timedelta(minutes=10))
    import_files([later_run], results)
    (rec_path,) = (results / "h200" / "capacity").glob(f"vllm-ledger.{HELD_OUT_ID}@*.json")
    prov = json.loads(rec_path.read_text())["provenance"]
    assert prov["held_out"] is True
    assert prov["preregistration"]["file"].startswith("h200/preregistered/capacity-")


def test_in_sample_files_an_unregistered_held_out_run_as_not_held_out(repo: Path, tmp_path: Path) -> None:
    batch = _batch_at(tmp_path, datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=5))
    import_files([batch], repo / "results", in_sample=True)
    (rec_path,) = (repo / "results" / "h200" / "capacity").glob(f"vllm-ledger.{HELD_OUT_ID}@*.json")
    prov = json.loads(rec_path.read_text())["provenance"]
    assert prov["held_out"] is False and "no pre-registration" in prov["held_out_refused"]


def test_batches_measured_before_the_mechanism_existed_import_as_before(tmp_path: Path) -> None:
    assert not pre.required_for("2026-11-30T02:06:35Z")
    import_files([BATCH], tmp_path / "results", dry_run=True)  # no git, no pre-registration: still imports


def test_the_suite_reconciles_a_run_against_its_preregistered_values(repo: Path, tmp_path_factory) -> None:
    """A pre-registration whose blocks are 2% off: the pre-registered check diverges although the
    current theory's check of the same run agrees."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    path = _preregister_held_out_run(repo, now - timedelta(minutes=20))
    doc = json.loads(path.read_text())
    entry = doc["runs"][f"vllm-ledger.{HELD_OUT_ID}"]["predictions"]
    entry["num_gpu_blocks"]["value"] *= 1.02
    path.write_text(json.dumps(doc))
    _git(repo, "commit", "-qam", "amend", when=now - timedelta(minutes=19))
    import_files([_batch_at(tmp_path_factory.mktemp("b"), now - timedelta(minutes=10))], repo / "results")
    report = repo / "r.html"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--benchmark-disable", "-o", f"anatomy_results_dir={repo / 'results'}",
                           "--anatomy-source=recorded", "--anatomy-hardware=h200", f"--anatomy-report={report}",
                           "tests_capacity/test_capacity_ledger.py", "-k",
                           "test_preregistered_prediction or test_num_gpu_blocks_from_config_alone"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    recs = json.loads(report.with_suffix(".json").read_text())["reconciliations"]
    verdicts = {r["name"]: r["verdict"] for r in recs}
    assert verdicts["num_gpu_blocks"] == "agree", proc.stdout[-2000:]
    assert verdicts["preregistered_num_gpu_blocks"] == "diverge"
    assert verdicts["preregistered_available_kv_bytes"] == "agree"
    # blocks + 3 terms + available: the run's V2 runner has no CUDA-graph estimate to check (0 by the release's rule,
    # which test_capacity_ledger leaves unchecked for the pre-registration as for the term itself)
    assert sum(r["name"].startswith("preregistered_") for r in recs) == 5
    assert "preregistered_cudagraph_estimate_bytes" not in verdicts


# --- deployment batches: their predictions are committed files of the suite (preregistration.PLAN_FILES) -----------
def _plan_file(repo: Path, text: str, committed: datetime | None) -> str:
    """tests_deployment/preregistered.json with `text`, committed at `committed` (None: left uncommitted); its sha256."""
    import hashlib

    path = repo / "tests_deployment" / "preregistered.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    if committed is not None:
        _git(repo, "add", "tests_deployment/preregistered.json")
        _git(repo, "commit", "-qm", "predictions", when=committed)
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_deployment_batchs_predictions_were_committed_before_it_ran(repo: Path) -> None:
    """The file the device plan read (its sha256 in the batch) must be in a commit made before the run; a later commit,
    or content no commit holds, is refused in one line naming the way out."""
    from pytest_anatomy.preregistration import PreregistrationError, plan_files_committed

    run = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)
    early = _plan_file(repo, '{"v": 1}\n', run - timedelta(hours=1))
    named = {"preregistered": {"file": "tests_deployment/preregistered.json", "sha256": early}}
    found = plan_files_committed(named, _iso(run), repo)
    assert found["preregistered"]["committed_at"] == _iso(run - timedelta(hours=1))
    late = _plan_file(repo, '{"v": 2}\n', run + timedelta(hours=1))
    with pytest.raises(PreregistrationError, match="first committed 2026-12-03T13:00:00Z, after the run"):
        plan_files_committed({"preregistered": {**named["preregistered"], "sha256": late}}, _iso(run), repo)
    loose = _plan_file(repo, '{"v": 3}\n', None)
    with pytest.raises(PreregistrationError, match="is in no commit"):
        plan_files_committed({"preregistered": {**named["preregistered"], "sha256": loose}}, _iso(run), repo)


def test_every_kept_deployment_batch_ran_from_committed_predictions() -> None:
    """Each ladder and cause batch kept under results/ read preregistered.json (and cause_tests.json) as committed
    before it ran: what import-device now checks, held for the batches imported before it did."""
    from pytest_anatomy.preregistration import PACKAGE_REPO, plan_files_committed

    if shutil.which("git") is None or not (PACKAGE_REPO / ".git").exists():
        pytest.skip("needs this checkout's git history")
    checked = 0
    for path in sorted(REPO.glob("results/*/batches/*/deployment.json")):
        prov = json.loads(path.read_text())["provenance"]
        if prov.get("kind") == "deployment":
            found = plan_files_committed(prov, prov["date_utc"])
            assert "preregistered" in found and ("causes" in found) == ("causes" in prov), path
            checked += 1
    assert checked >= 10


# --- kernels: the rung headers' pre-registered times (issue 10 item 5) ---------------------------------------------
KERNELS_BATCH = REPO / "results" / PREREGISTERED_ON / "batches" / "20261205T025617Z" / "kernels.json"
OTHER_CARD = next(name for name in HARDWARE if name != PREREGISTERED_ON)  # any card the headers do not price
FIRST_TIMINGS = ("sgemm.s17-fp32-ktile32-lean.4096x4096x4096", "sgemm.s18-fp32-small-m-splitk.4096x4096x4096",
                 "softmax.x10-grid-tiles.8192x2048")  # that batch's first timings of these rungs at these shapes
REPEATS = ("sgemm.s9-cp-async-pipeline.4096x4096x4096", "softmax.x6-cluster-row.8192x2048")  # timed before it


def test_preregister_kernels_writes_the_rung_headers_times_with_the_commit(repo: Path) -> None:
    from pytest_anatomy.kernels.ladders import variant

    proc = _cli(repo, "kernels", "sgemm.s18-fp32-small-m-splitk.32x18944x3584", "softmax.x10-grid-tiles")
    assert proc.returncode == 0, proc.stderr
    (path,) = (repo / "results" / PREREGISTERED_ON / "preregistered").glob("kernels-*.json")
    doc = json.loads(path.read_text())
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert (doc["schema"], doc["suite"], doc["theory_commit"]) == (pre.SCHEMA, "kernels", head)
    x10 = variant("softmax", "x10-grid-tiles")
    expected = {"sgemm.s18-fp32-small-m-splitk.32x18944x3584":
                variant("sgemm", "s18-fp32-small-m-splitk").preregistered_ms({"M": 32, "N": 18944, "K": 3584}),
                **{f"softmax.x10-grid-tiles.{label}": ms for label, ms in x10.h200_ms}}
    assert {k: r["predictions"]["time"]["value"] * 1e3 for k, r in doc["runs"].items()} == pytest.approx(expected)


def test_preregister_takes_the_card_in_any_spelling_predict_takes(repo: Path) -> None:
    """--hardware H200 is the catalog's h200, as predict reads it (it was refused as 'not in the catalog'); the file
    goes to the catalog name's folder."""
    proc = _cli(repo, "kernels", "softmax.x10-grid-tiles", "--hardware", PREREGISTERED_ON.upper())
    assert proc.returncode == 0, proc.stderr
    (path,) = (repo / "results" / PREREGISTERED_ON / "preregistered").glob("kernels-*.json")
    assert json.loads(path.read_text())["hardware"] == PREREGISTERED_ON


def test_preregister_kernels_refuses_in_one_line(repo: Path) -> None:
    """Another card (the headers pre-register H200 times), an unknown rung, a shape its header gives no time, and
    uncommitted kernel code each refuse in one line, writing nothing."""
    for args, says in ((("kernels", "softmax.x10-grid-tiles", "--hardware", OTHER_CARD), f"{PREREGISTERED_ON} times only"),
                       (("kernels", "softmax.x10-grid-tile"), "did you mean 'x10-grid-tiles'"),
                       (("kernels", "softmax.x3-registers.128x152064"), "no h200 time at 128x152064 (it does at")):
        proc = _cli(repo, *args)
        assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    (repo / "pytest_anatomy" / "kernels").mkdir(parents=True)
    (repo / "pytest_anatomy" / "kernels" / "fused.py").write_text("# edited\n")
    dirty = _cli(repo, "kernels", "softmax.x10-grid-tiles")
    assert dirty.returncode == 2 and "uncommitted changes" in dirty.stderr
    assert not (repo / "results").exists()


def _kernels_batch_at(tmp: Path, when: datetime) -> Path:
    return _batch_at(tmp, when, KERNELS_BATCH, "kernels.json")


def _kernel_results(repo: Path) -> Path:
    """A results folder holding one earlier timing of each repeated rung: the newest recorded before the kept batch
    was timed. Never the repository's newest: a later visit's timing of the rung (the 03:53 batch's s9, say) would
    postdate the batch as the test re-dates it, making the repeat a first timing."""
    results = repo / "results"
    (results / PREREGISTERED_ON / "kernels").mkdir(parents=True)
    batch_timed = _when(json.loads(KERNELS_BATCH.read_text())["provenance"]["date_utc"])
    for name in REPEATS:
        before = [p for p in (REPO / "results" / PREREGISTERED_ON / "kernels").glob(f"{name}@*.json")
                  if _when(recordings.load_file(p).recorded_at) < batch_timed]
        older = max(before, key=lambda p: _when(recordings.load_file(p).recorded_at))
        shutil.copy(older, results / PREREGISTERED_ON / "kernels" / older.name)
    return results


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_a_rungs_first_timing_needs_a_kernels_preregistration_committed_before_it(
        repo: Path, tmp_path_factory, monkeypatch) -> None:
    """A first timing of a rung and shape whose header pre-registers a time is refused unless a kernels
    pre-registration of it was committed before the run; a repeat is not held out; --in-sample files it as not held
    out. Batches timed before KERNELS_REQUIRED_FROM import as before (the kept one of 02:56)."""
    import_files([KERNELS_BATCH], tmp_path_factory.mktemp("old") / "results", dry_run=True)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    monkeypatch.setattr(pre, "KERNELS_REQUIRED_FROM", _iso(now - timedelta(hours=1)))
    results = _kernel_results(repo)
    with pytest.raises(DeviceImportError, match=rf"^{re.escape(FIRST_TIMINGS[0])} is marked held out but no "
                                                r"pre-registration .* found: none\): run `pytest-anatomy preregister "
                                                rf"kernels {re.escape(FIRST_TIMINGS[0])} --hardware h200`"):
        import_files([_kernels_batch_at(tmp_path_factory.mktemp("k1"), now - timedelta(minutes=30))], results,
                     dry_run=True)
    committed = now - timedelta(minutes=20)
    doc = pre.build_kernels(pre.kernel_timings(list(FIRST_TIMINGS)), PREREGISTERED_ON, "0" * 40, _iso(committed), "test")
    path = pre.write(results, doc)
    _git(repo, "add", str(path.relative_to(repo)))
    _git(repo, "commit", "-qm", "pre-register", when=committed)
    with pytest.raises(DeviceImportError, match=r"committed 20\d\d-"):  # committed, but after the run
        import_files([_kernels_batch_at(tmp_path_factory.mktemp("k2"), now - timedelta(minutes=25))], results,
                     dry_run=True)
    import_files([_kernels_batch_at(tmp_path_factory.mktemp("k3"), now - timedelta(minutes=10))], results)
    for name in FIRST_TIMINGS + REPEATS:
        (newest,) = [p for p in (results / PREREGISTERED_ON / "kernels").glob(f"{name}@*.json") if p.stat().st_size
                     and json.loads(p.read_text())["recorded_at"] >= _iso(now - timedelta(minutes=10))]
        prov = json.loads(newest.read_text())["provenance"]
        if name in FIRST_TIMINGS:
            assert prov["held_out"] is True and prov["preregistration"]["file"].startswith("h200/preregistered/kernels-")
        else:
            assert "preregistration" not in prov and "held_out" not in prov


def test_in_sample_files_an_unregistered_first_kernel_timing_as_not_held_out(repo: Path, tmp_path: Path,
                                                                            monkeypatch) -> None:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    monkeypatch.setattr(pre, "KERNELS_REQUIRED_FROM", _iso(now - timedelta(hours=1)))
    results = _kernel_results(repo)
    import_files([_kernels_batch_at(tmp_path, now - timedelta(minutes=5))], results, in_sample=True)
    (rec_path,) = (results / PREREGISTERED_ON / "kernels").glob(f"{FIRST_TIMINGS[1]}@*.json")
    prov = json.loads(rec_path.read_text())["provenance"]
    assert prov["held_out"] is False and "no pre-registration" in prov["held_out_refused"]


def test_every_committed_kernels_preregistration_is_what_its_rung_header_still_says() -> None:
    """A rung header's pre-registered time (what test_preregistered_time reconciles) never moves after a kernels
    pre-registration of it: the committed file and the header agree for every timing it holds."""
    from pytest_anatomy.kernels.ladders import variant

    checked = 0
    for path in sorted(REPO.glob("results/*/preregistered/kernels-*.json")):
        for name, run in json.loads(path.read_text())["runs"].items():
            header = dict(variant(run["ladder"], run["rung"]).h200_ms).get(run["shape"])
            assert name == f"{run['ladder']}.{run['rung']}.{run['shape']}" and header is not None, (path.name, name)
            assert run["predictions"]["time"]["value"] == pytest.approx(header * 1e-3, rel=1e-12), (path.name, name)
            checked += 1
    assert checked >= 5
