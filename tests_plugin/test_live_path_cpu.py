"""The live path rehearsed on CPU: a session that believes it has an H200 (live_rehearsal/
fake_h200.py answers NVML, the engine starts and the latency plan with recorded device batches)
must reconcile exactly what the replay of the same recordings reconciles, with the same verdicts,
each measurement made once, every recording written once and no error. Every other card with recorded
vLLM ledgers is rehearsed the same way for the capacity suite (live_rehearsal/recorded_card.py), every card with a
recorded run of the fast latency plan for the latency steps too (the same plugin answers the plan with that run), and
the kernel ladders and the attention suite on one recorded live H200 session (live_rehearsal/recorded_kernels.py)."""

from __future__ import annotations

import ast
import importlib.util
import json
import lzma
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy import recordings
from pytest_anatomy.targets import recorded_hardware

REPO = Path(__file__).resolve().parents[1]


def _session(tmp_path: Path, *args: str, plugin: str | None = "fake_h200",
             extra_env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict]:
    report = tmp_path / "report.html"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests_plugin" / "live_rehearsal"), str(REPO)]),
           **(extra_env or {})}
    env.pop("GITHUB_STEP_SUMMARY", None)
    plugins = ("-p", plugin) if plugin else ()
    proc = subprocess.run([sys.executable, "-m", "pytest", *plugins, "-p", "no:cacheprovider", "-q",
                           f"--anatomy-report={report}", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    written = report.with_suffix(".json")
    # A session that dies before its report (a plugin's configure raising) says why only in its own output.
    assert written.exists(), f"the sub-session wrote no {written.name} (rc {proc.returncode}):\n" \
                             f"{(proc.stdout + proc.stderr)[-4000:]}"
    return proc, json.loads(written.read_text())


def _key(e: dict) -> tuple:
    return (e["suite"], e["name"], round(e["predicted"], 9), round(e["measured"], 9))


def _import_the_batches(into: Path) -> None:
    """The device batches fake_h200 answers with, imported as recordings: the replay then reads
    exactly what the live session measured (newer recordings in results/ would supersede them)."""
    from pytest_anatomy.importers.device import import_files

    batches = REPO / "results" / "h200" / "batches"
    for folder, pattern in (("20261130T003745Z", "*.json"), *((p.name, "capacity-*.json") for p in batches.iterdir())):
        files = []
        for f in sorted((batches / folder).glob(pattern)):
            if f.name.endswith(".xz"):
                continue
            files.append(f)
        if files:
            import_files(files, into)


@pytest.fixture(scope="module")
def live_and_replay(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    results = tmp_path_factory.mktemp("results")
    replayed = tmp_path_factory.mktemp("replayed")
    _import_the_batches(replayed)
    live, live_ledger = _session(tmp_path_factory.mktemp("live"), "-m", "gpu and not slow", "--anatomy-source=live",
                                 "--anatomy-record", "-o", f"anatomy_results_dir={results}",
                                 "tests_capacity/test_capacity_ledger.py", "tests_latency/test_latency_steps.py")
    replay, replay_ledger = _session(tmp_path_factory.mktemp("replay"), "--anatomy-source=recorded",
                                     "-o", f"anatomy_results_dir={replayed}",
                                     "tests_capacity/test_capacity_ledger.py", "tests_latency/test_latency_steps.py")
    return live, live_ledger, replay, replay_ledger, results


def test_live_session_has_no_error_and_measures_live(live_and_replay) -> None:
    live, ledger, *_ = live_and_replay
    assert live.returncode == 0, live.stdout[-3000:] + live.stderr[-2000:]
    assert ledger["environment"]["hardware_spec_source"] == "catalog"
    assert [t["name"] for t in ledger["environment"]["targets"]] == ["h200"]
    assert ledger["reconciliations"] and all(e["source"] == "live" for e in ledger["reconciliations"])
    assert ledger["session_duration_s"] > 0
    assert "measuring capacity/vllm-ledger.qwen2.5-7b.u0.90.len8192.eager on h200" in live.stdout


def test_live_verdicts_equal_the_replay_of_the_same_data(live_and_replay) -> None:
    _, live_ledger, _, replay_ledger, _ = live_and_replay
    replay = {_key(e): e["verdict"] for e in replay_ledger["reconciliations"] if e["hardware"] == "h200"}
    live = {_key(e): e["verdict"] for e in live_ledger["reconciliations"]}
    assert len(live) >= 30
    assert {k: v for k, v in live.items() if replay.get(k) != v} == {}


def _ledger_cards() -> list[str]:
    """Every card with recorded vLLM ledgers in this checkout (results/<card>/capacity/vllm-ledger.*)."""
    results = REPO / "results"
    return [card for card in recorded_hardware(results, "capacity")
            if recordings.list_recordings(results, card, "capacity", "vllm-ledger.")]


_CAPACITY_REPLAYS: dict[str, dict] = {}


def _capacity_replay(card: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The ledger of the checkout's replay of the capacity ledger on `card`: the same session for both of the card's
    live sessions below (fresh or checkout results change the live session only), so run once per process (~1 s
    of a replay session saved per card, 2026-12-06)."""
    if card not in _CAPACITY_REPLAYS:
        _, _CAPACITY_REPLAYS[card] = _session(tmp_path_factory.mktemp(f"replay-{card}"), "--anatomy-source=recorded",
                                              f"--anatomy-hardware={card}", "tests_capacity/test_capacity_ledger.py",
                                              plugin=None)
    return _CAPACITY_REPLAYS[card]


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh-results", "checkout-results"])
@pytest.mark.parametrize("card", _ledger_cards())
def test_a_recorded_cards_live_capacity_verdicts_equal_its_replay(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
                                                                  card: str, fresh: bool) -> None:
    """A live session on the card (every planned engine start answered with the card's newest recording of
    that configuration) must give each capacity check the verdict the replay of the same recordings gives,
    whether it records into a fresh results folder (the device's live sessions) or reads the checkout's, which
    holds the card's recordings (a user's `pytest -m gpu`). The H100's one CUDA-graphs run diverged live there
    and was a finding in replay: the live band took the graph pool from the card's other runs, all eager."""
    results = ("-o", f"anatomy_results_dir={tmp_path / 'results'}") if fresh else ()
    live, live_ledger = _session(tmp_path / "live", "-m", "gpu", "--anatomy-source=live", *results,
                                 "tests_capacity/test_capacity_ledger.py",
                                 plugin="recorded_card", extra_env={"ANATOMY_REHEARSE_CARD": card})
    replay_ledger = _capacity_replay(card, tmp_path_factory)
    assert live.returncode == 0, live.stdout[-3000:] + live.stderr[-2000:]
    assert [t["name"] for t in live_ledger["environment"]["targets"]] == [card]
    replay = {_key(e): e["verdict"] for e in replay_ledger["reconciliations"] if e["hardware"] == card}
    live_verdicts = {_key(e): e["verdict"] for e in live_ledger["reconciliations"]}
    assert len(live_verdicts) >= 30
    assert {k: v for k, v in live_verdicts.items() if replay.get(k) != v} == {}


# --- the latency suite, live on every card with a recorded plan run (live_rehearsal/recorded_card.py) ---------------
LATENCY_FILES = ("tests_capacity/test_capacity_ledger.py", "tests_latency/test_latency_steps.py")


def _module(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _latency_cards() -> list[str]:
    """Every card with a recorded run of the fast live plan (results/<card>/batches/*/latency*.json holding each of
    its parts): the folder recorded_card answers that plan with."""
    plugin = _module(REPO / "tests_plugin" / "live_rehearsal" / "recorded_card.py")
    fast = _module(REPO / "tests_latency" / "latency_live_plan.py").FAST
    return [card for card in recorded_hardware(REPO / "results", "latency")
            if plugin.latency_batch(REPO / "results", card, fast) is not None]


def _replay_folder(into: Path, live_results: Path, card: str, ledgers: list[str]) -> None:
    """The replay's results: the plan files the live session kept (its batch folder, as the device program wrote them),
    imported as a device batch is, and the card's recording of each engine start the live session measured (the one
    recorded_card answered with)."""
    from pytest_anatomy.importers.device import import_files

    plain = into.parent / f"{into.name}-plan"
    plain.mkdir()
    files = []
    for kept in sorted(live_results.glob(f"{card}/batches/*/latency*")):
        if kept.name.endswith(".json.xz"):  # the importer reads a batch as JSON; keep_raw xz'd the large ones
            (plain / kept.name.removesuffix(".xz")).write_bytes(lzma.decompress(kept.read_bytes()))
            files.append(plain / kept.name.removesuffix(".xz"))
        else:
            files.append(kept)
    assert any(f.name.endswith(".json") for f in files), files
    import_files(files, into)
    for name in ledgers:
        rec = recordings.load_latest(REPO / "results", card, "capacity", name)
        assert rec.path is not None
        (into / card / "capacity").mkdir(parents=True, exist_ok=True)
        shutil.copy(rec.path, into / card / "capacity" / rec.path.name)



def _live_slow_tests(module: str) -> set[str]:
    """A test module's LIVE_SLOW_TESTS (tests_latency/conftest.py marks them slow live: the slow plan measures what
    they read), read from its source."""
    tree = ast.parse((REPO / module).read_text())
    return next(set(ast.literal_eval(node.value)) for node in tree.body if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "LIVE_SLOW_TESTS" for t in node.targets))


@pytest.mark.parametrize("card", _latency_cards())
def test_a_recorded_cards_live_latency_verdicts_equal_its_replay(tmp_path: Path, card: str) -> None:
    """The fast live session (`-m "gpu and not slow"`) of the latency steps and the capacity ledger on the card, its
    plan answered with the card's newest recorded run of that plan and each engine start with its newest recording
    (recorded_card), must reconcile what the replay of those same recordings reconciles, with the same verdicts,
    tolerances and finding bands, and nothing more: no error, each measurement made and recorded once. A live-only
    path (the plan as fitted to the card, a finding mark a card's live run carries, the streamed-weight check reading
    the capacity suite's live engine start) that differs fails here on CPU. The replay's only own checks are the
    tests that need the slow plan live (LIVE_SLOW_TESTS, deselected: test_marginal_cost_per_sequence's Qwen case
    among them)."""
    live_results = tmp_path / "results"
    live, live_ledger = _session(tmp_path / "live", "-m", "gpu and not slow", "--anatomy-source=live",
                                 "--anatomy-record", "-o", f"anatomy_results_dir={live_results}", *LATENCY_FILES,
                                 plugin="recorded_card", extra_env={"ANATOMY_REHEARSE_CARD": card})
    assert live.returncode == 0 and "INTERNALERROR" not in live.stdout, live.stdout[-3000:] + live.stderr[-2000:]
    assert [t["name"] for t in live_ledger["environment"]["targets"]] == [card]
    assert live_ledger["reconciliations"] and all(e["source"] == "live" for e in live_ledger["reconciliations"])
    made = Counter(line.split("] measuring ", 1)[1].split(" on ")[0] for line in live.stdout.splitlines()
                   if "] measuring " in line)
    assert made and max(made.values()) == 1, made
    written = [p.relative_to(live_results / card).as_posix().rsplit("@", 1)[0] for p in live_results.rglob("*@*.json")]
    assert len(written) == len(set(written)) and set(written) <= set(made), written  # a part the card left out: no file
    replayed = tmp_path / "replayed"
    _replay_folder(replayed, live_results, card, [m.split("/", 1)[1] for m in made if m.startswith("capacity/")])
    _, replay_ledger = _session(tmp_path / "replay", "--anatomy-source=recorded", f"--anatomy-hardware={card}",
                                "-o", f"anatomy_results_dir={replayed}", *LATENCY_FILES, plugin=None)
    streamed = [e for e in live_ledger["reconciliations"] if e["name"] == "streamed_weight_bytes_vs_loaded_parameters"]
    assert streamed, "the streamed-weight check did not read the capacity suite's live engine start"
    live_judged, replay = _judged(live_ledger), _judged(replay_ledger)
    assert len(live_judged) >= 30
    # bands that leave the checked session out compare instants (recordings.same_instant): the importer spells a
    # session's start '...T10:12:03Z', the live lab '...T10:12:03.000000Z'; compared as text the replay kept its own run
    assert {k: v for k, v in live_judged.items() if replay.get(k) != v} == {}
    slow = _live_slow_tests(LATENCY_FILES[1])
    only_replay = {e["test_id"] for e in replay_ledger["reconciliations"] if _key(e) not in live_judged}
    assert {t for t in only_replay if t.split("::")[1].split("[")[0] not in slow} == set()


def test_each_measurement_is_made_and_recorded_once(live_and_replay) -> None:
    live, _, _, _, results = live_and_replay
    made = Counter(line.split("measuring ", 1)[1].split(" on ")[0] for line in live.stdout.splitlines()
                   if "] measuring " in line)
    assert made and max(made.values()) == 1, made
    written = sorted(p.relative_to(results).as_posix() for p in results.rglob("*@*.json"))
    names = [w.rsplit("@", 1)[0] for w in written]
    assert len(names) == len(set(names)) == len(made), written
    assert any(w.startswith("h200/latency/qwen2.5-7b.decode.b64@") for w in written)
    assert any(w.startswith("h200/ceilings/ceilings@") for w in written)


def test_a_suite_reads_another_suites_live_measurement(live_and_replay) -> None:
    """The latency suite's streamed-weight-bytes check reads the engine start the capacity suite measured live in the
    same session (the session cache), not a recording and not a second start; it was a skip on every live card."""
    live, live_ledger, *_ = live_and_replay
    streamed = [e for e in live_ledger["reconciliations"] if e["name"] == "streamed_weight_bytes_vs_loaded_parameters"]
    assert streamed and all(e["source"] == "live" and e["verdict"] == "agree" for e in streamed), streamed
    (card,) = [t["name"] for t in live_ledger["environment"]["targets"]]  # the detected (faked) card
    assert live.stdout.count(f"measuring capacity/vllm-ledger.qwen2.5-7b.u0.90.len8192.eager on {card}") == 1


def test_live_session_without_xdist_installed(tmp_path: Path) -> None:
    """A GPU box with only the core and gpu extras has no pytest-xdist: marking live tests for
    xdist's loadgroup there broke collection under --strict-markers (found by the core-only main job)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests_plugin" / "live_rehearsal"), str(REPO)])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "fake_h200", "-p", "no:xdist", "-p", "no:cacheprovider",
                           "-q", "-m", "gpu and not slow", "--anatomy-source=live", "tests_capacity/test_capacity_ledger.py"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-1000:]
    assert "INTERNALERROR" not in proc.stdout


@pytest.mark.parametrize(("batch", "case"), [
    ("20261202T071850.637487Z", "poisson_ttft_p50_below_the_knee and qwen2.5-7b-0.8"),
    ("20261202T142348.532586Z", "poisson_itl_mean_and_median and qwen2.5-7b-1.3")], ids=["0708-ttft-0.8x", "1418-itl-1.3x"])
def test_a_live_load_run_is_judged_from_the_plans_own_raw_timelines(tmp_path: Path, batch: str, case: str) -> None:
    """The Poisson runs' prompt-pace check (measure/prompt_pace.py) read only kept batches, so a live session that
    did not record never applied it. Rehearsed, unrecorded, with the 2026-12-02 07:08 session (its 0.8x run's prompt
    steps 1.32x slower than its other runs) and the 14:13 session (its 1.3x run at 1.23x, whose mean ITL failed live
    because the check looked only for finding marks naming the quantity): each run must carry
    h200-load-run-slow-prompt-steps and pass, as its replay does."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests_plugin" / "live_rehearsal"), str(REPO)]),
           "ANATOMY_REHEARSE_LATENCY": batch}
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "fake_h200", "-p", "no:cacheprovider", "-q", "-rx",
                           "-m", "gpu", "--anatomy-source=live", "tests_latency/test_latency_load.py", "-k", case],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
    assert "h200-load-run-slow-prompt-steps" in proc.stdout, proc.stdout[-3000:]


def test_a_sessions_own_data_keys_stay_out_of_its_recordings(live_and_replay) -> None:
    *_, results = live_and_replay
    latency = sorted(results.rglob("h200/latency/*@*.json"))
    assert latency and not any("_raw_files" in json.loads(p.read_text()).get("data", {}) for p in latency)


def test_a_live_sessions_collection_reads_nothing_the_device_tree_leaves_behind(tmp_path: Path) -> None:
    """`pytest -m gpu --anatomy-source=live` collects on the device (scripts/device/live_session.sh: a fresh results
    dir) with slim_tree.sh's LIVE folders absent: no module may read them at import (the 2026-12-02 08:30 full
    session stopped at collection on one such read). Rehearsed on the fake H200."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests_plugin" / "live_rehearsal"), str(REPO)])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "fake_h200", "-p", "hidden_guard", "-p",
                           "no:cacheprovider", "-q", "--co", "-m", "gpu", "-s", "--anatomy-source=live",
                           "-o", f"anatomy_results_dir={tmp_path}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-1000:]
    assert "hidden-guard: 0 opens under the hidden folders during collection" in proc.stdout, proc.stdout[-2000:]


# --- the kernel ladders and the attention suite, live on one recorded session (live_rehearsal/recorded_kernels.py) --
KERNEL_FILES = ("tests_kernels/test_kernels_ladders.py", "tests_flashattn/test_flashattn_gpu.py",
                "tests_flashattn/test_flashattn_sweep.py")


def _rehearsal_plugin(name: str) -> Any:
    """A live_rehearsal plugin as a module of this process (its constants and session files; no hook runs here)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "tests_plugin" / "live_rehearsal" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def kernels_live_and_replay(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The session recorded_kernels replays, run live (every suite selected, slow included: on CPU the whole
    session takes ~2 s) into a fresh results folder, and its recordings replayed from another."""
    plugin = _rehearsal_plugin("recorded_kernels")
    files = plugin.session_files(plugin.SESSION)
    replayed, results = tmp_path_factory.mktemp("replayed"), tmp_path_factory.mktemp("results")
    for path in files.values():
        copy = replayed / path.relative_to(REPO / "results")
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, copy)
    live, live_ledger = _session(tmp_path_factory.mktemp("live"), "-m", "gpu", "--anatomy-source=live",
                                 "--anatomy-record", "-o", f"anatomy_results_dir={results}", *KERNEL_FILES,
                                 plugin="recorded_kernels", extra_env={"ANATOMY_REHEARSE_SESSION": plugin.SESSION})
    replay, replay_ledger = _session(tmp_path_factory.mktemp("replay"), "-m", "gpu", "--anatomy-source=recorded",
                                     "-o", f"anatomy_results_dir={replayed}", *KERNEL_FILES, plugin=None)
    return plugin, files, results, live, live_ledger, replay, replay_ledger


def _judged(ledger: dict) -> dict[tuple, tuple]:
    """Each reconciliation's verdict and what decided it: the tolerance and the covering finding's band."""
    return {_key(e): (e["verdict"], e["tolerance"], (e.get("finding") or {}).get("expected"))
            for e in ledger["reconciliations"]}


def test_kernels_live_session_measures_live_and_fails_only_where_its_replay_fails(kernels_live_and_replay) -> None:
    """No error: the session's recordings judged by today's suites fail a few checks in replay too (r6, its best
    attention rung, misses the targets that r8 met later; a kernel finding resolved), and live fails exactly those
    of them that ran live: a live-only failure would be a bug of the live path."""
    plugin, _, _, live, ledger, _, replay_ledger = kernels_live_and_replay
    assert "INTERNALERROR" not in live.stdout and " error" not in live.stdout.splitlines()[-1], live.stdout[-3000:]
    assert [t["name"] for t in ledger["environment"]["targets"]] == [plugin.session_card(plugin.session_name())]
    assert ledger["environment"]["hardware_spec_source"] == "catalog"
    assert ledger["reconciliations"] and all(e["source"] == "live" for e in ledger["reconciliations"])
    assert all(f["when"] == "call" for f in ledger["failures"]), ledger["failures"]
    ran_live = {e["test_id"] for e in ledger["reconciliations"]}
    assert {f["test_id"] for f in ledger["failures"]} == {f["test_id"] for f in replay_ledger["failures"]
                                                          if f["test_id"] in ran_live}


def test_kernels_live_verdicts_equal_the_replay_of_the_same_session(kernels_live_and_replay) -> None:
    """Every reconciliation of the live session is the replay's, with the same verdict, tolerance and finding band.
    None exists only live (a case the live target takes but the session did not record skips live). The replay's own
    are the aggregates over every rung a live card runs (the best fp32 and tensor-core rungs against cuBLAS): live
    they ask for the rungs added after the session (s13-s18), which skip, so each must be such a skip."""
    *_, ledger, _, replay_ledger = kernels_live_and_replay
    live, replay = _judged(ledger), _judged(replay_ledger)
    assert len(live) >= 140
    assert {k: v for k, v in live.items() if replay.get(k) != v} == {}
    skipped = {s["test_id"]: s["reason"] for s in ledger["skips"]}
    only_replay = {e["test_id"] for e in replay_ledger["reconciliations"] if _key(e) not in live}
    assert {t: skipped.get(t) for t in only_replay if "recorded_kernels: " not in skipped.get(t, "")} == {}


def test_kernels_live_session_measures_and_records_each_of_its_recordings_once(kernels_live_and_replay) -> None:
    _, files, results, live, *_ = kernels_live_and_replay
    made = Counter(line.split("] measured ", 1)[1].split(" on ")[0] for line in live.stdout.splitlines()
                   if "] measured " in line)
    assert made and max(made.values()) == 1, made
    assert sorted(made) == sorted(f"{suite}/{name}" for suite, name in files)
    written = sorted(p.relative_to(results) for p in results.rglob("*@*.json"))
    assert written == sorted(p.relative_to(REPO / "results") for p in files.values())
