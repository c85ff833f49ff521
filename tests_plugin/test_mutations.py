"""Falsifiability: each deliberate error in the theory must turn a recorded reconciliation into a diverge.

The catalogue (tests_plugin/theory_mutants.py; what a mutation is and how it is
applied: mutation_mechanics.py) lists one-line mutations of pytest_anatomy/theory/:
a term dropped, a constant x1.05, a rounding changed. For each, the recorded reconciliations that depend on
the mutated function are replayed with the mutation applied, and the JSON ledger is read back. The mutations
of one area share an interpreter (`-p mutant_batch`): it collects the union of their selections once and forks
one child per mutation, which applies it and runs its own selection (a mutation whose function collection calls
is replayed alone instead, in a fresh interpreter with `-p theory_mutants`). A mutation is caught when at least
one `prediction` reconciliation's verdict is `diverge` (mutation_mechanics.catches: identities, replays, fits and
settings do not count).
A known survivor (its `survivor` field says why nothing can catch it) must stay uncaught, so the list stays
true: catching it fails too, asking for the mark to be removed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from mutant_batch import MARK, NAMES_ENV, OUT_ENV
from mutation_mechanics import Mutation, catalog_value, catches, mutated_source
from theory_mutants import BY_NAME, CATALOGUE, LEDGER_ENV, MUTATION_ENV

from pytest_anatomy import run_share

ROOT = Path(__file__).resolve().parents[1]
# Without the h100-sxm replays (2026-12-02: our H100 sessions, and the third-party H100 rows with them): they
# repeat the H200's checks on the same theory and add ~35 s of CPU across the catalogue; every mutation is still
# caught (or a listed survivor) without them, which the tests below assert.
# Nor the table checks (*_is_the_recorded_one(s)): they recompute a committed table from every recorded session and
# assert it, reconciling nothing, so they cannot turn a prediction into a diverge; they were ~45% of a latency
# replay's time (14.5 s -> 8.0 s for the same 198 reconciliations, 2026-12-03).
SKIP = "not h100-sxm and not recorded_one"


def _run(selection: tuple[str, ...], keyword: str, plugin: str, env_set: dict[str, str], basetemp: Path,
         timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in (MUTATION_ENV, LEDGER_ENV, NAMES_ENV, OUT_ENV)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "tests_plugin"), env.get("PYTHONPATH", "")]))
    env.update(env_set)
    # Parsed raw files and compiler outputs, computed once per run (none of them theory: run_share's rule)
    shared = run_share.folder()
    if shared is not None:
        env[run_share.ENV] = str(shared)
    cmd = [sys.executable, "-m", "pytest", *selection, "-p", plugin, "-p", "no:cacheprovider",
           "-p", "no:xdist", "-q", "--anatomy-source=recorded", "-k", f"({keyword}) and {SKIP}" if keyword else SKIP,
           # its own tmp root: pytest's default one would first sweep the run's older numbered folders (~1.7 s each)
           f"--basetemp={basetemp}"]
    return subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def _replay(selection: tuple[str, ...], keyword: str, ledger: Path, mutation: str) -> dict:
    """One mutation, applied before collection in a fresh interpreter (`-p theory_mutants`)."""
    proc = _run(selection, keyword, "theory_mutants", {MUTATION_ENV: mutation, LEDGER_ENV: str(ledger)},
                ledger.parent / f"{ledger.stem}.tmp", timeout=300)
    # 0: all passed, 1: some tests failed; anything else is an error of the run itself.
    if proc.returncode not in (0, 1) or not ledger.exists():
        pytest.fail(f"replay under {mutation} exited {proc.returncode}:\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(ledger.read_text())


def _replay_group(mutations: list[Mutation], out: Path) -> dict[str, dict]:
    """Each mutation's ledger, from one interpreter that collects the union of their selections once and forks a
    child per mutation (tests_plugin/mutant_batch.py); a mutation whose function collection calls is replayed
    alone (_replay), since applying it after collection would miss that call. A group with fewer than two forkable
    mutations is replayed alone outright: the batch's one collection would save nothing, and a mutation it cannot
    fork costs that collection twice (2026-12-06, serially: the catalog group, three catalog numbers whose batch
    forked nothing, 20.6 -> 15.3 s; the validation group, whose one mutation collection calls, 4.0 -> 2.3 s)."""
    if sum(m.forkable for m in mutations) < 2:
        return {m.name: _replay(m.selection, m.keyword, out / f"{m.name}.alone.json", m.name) for m in mutations}
    union = tuple(dict.fromkeys(arg for m in mutations for arg in m.selection))
    proc = _run(union, mutations[0].keyword, "mutant_batch",
                {NAMES_ENV: ",".join(m.name for m in mutations), OUT_ENV: str(out)}, out / "tmp",
                timeout=120 + 60 * len(mutations))
    if proc.returncode != 0 or not (out / "outcome.json").exists():
        pytest.fail(f"batch replay of {[m.name for m in mutations]} exited {proc.returncode}:\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    outcome = json.loads((out / "outcome.json").read_text())
    ledgers = {}
    for m in mutations:
        if m.name in outcome["collection_called"]:
            ledgers[m.name] = _replay(m.selection, m.keyword, out / f"{m.name}.alone.json", m.name)
            continue
        code, ledger = outcome["exit"].get(m.name), out / f"{m.name}.json"
        # 0: all passed, 1: some tests failed; anything else is an error of the run itself.
        if code not in (0, 1) or not ledger.exists():
            output = proc.stdout.split(MARK + m.name + "\n", 1)[-1].split(MARK, 1)[0]
            pytest.fail(f"replay under {m.name} exited {code}:\n{output[-3000:]}\n{proc.stderr[-3000:]}")
        ledgers[m.name] = json.loads(ledger.read_text())
    return ledgers


def _diverges(ledger: dict) -> list[str]:
    return [f"{r['test_id']} {r['name']}: predicted {r['predicted']:.6g}, measured {r['measured']:.6g}"
            for r in ledger["reconciliations"] if catches(r)]


def test_catalogue_matches_the_current_theory_source():
    """Every mutation's text occurs exactly once in its function, and names are unique: a refactor
    of the theory must update the catalogue rather than leave a mutation that changes nothing."""
    assert len(BY_NAME) == len(CATALOGUE)
    for m in CATALOGUE:
        if m.catalog:  # a catalog number: it must exist and be a number (or, peak_flops, a map of numbers) to scale
            value = catalog_value(m)
            assert isinstance(value, float) or (isinstance(value, Mapping) and value), (m.name, value)
        else:
            assert mutated_source(m) != ""


def test_the_plugin_without_a_mutation_changes_nothing(monkeypatch):
    """The baseline: each diverge below must be one the mutation caused. Without ANATOMY_MUTATION the plugin patches
    nothing, so an unmutated replay of the selections is this suite's own replay of the same tests, where any
    diverge fails its own test in the same run (it was a 39 s replay of their union here, repeating that run). Checked
    here: the no-mutation path leaves every catalogued function and catalog number as it is."""
    import mutation_mechanics
    import theory_mutants

    monkeypatch.delenv(MUTATION_ENV, raising=False)

    def now() -> dict[str, object]:
        return {m.name: catalog_value(m) if m.catalog else mutation_mechanics.member(m) for m in CATALOGUE}

    before = now()
    theory_mutants.pytest_configure(None)
    assert "mutation" not in theory_mutants._STATE
    assert now() == before


def _groups() -> dict[str, list[Mutation]]:
    """The catalogue by area (and -k keyword: one collection has one): ~2-8 replays each, ~10-40 s."""
    groups: dict[str, list[Mutation]] = {}
    for m in CATALOGUE:
        name = m.area.replace(" ", "-") + (f"-k-{m.keyword}" if m.keyword else "")
        groups.setdefault(name, []).append(m)
    return groups


def _verdict(mutation: Mutation, ledger: dict) -> str:
    """What is wrong with this mutation's replay; "" when it is caught, or a listed survivor that survived."""
    if not ledger["reconciliations"]:
        return f"{mutation.name}: the selection replayed no reconciliation"
    caught = _diverges(ledger)
    if mutation.survivor and caught:
        return (f"{mutation.name} is listed as a known survivor but is now caught by "
                f"{len(caught)} reconciliation(s); remove its survivor reason:\n" + "\n".join(caught[:10]))
    if not mutation.survivor and not caught:
        return (f"{mutation.name} ({mutation.what}) survived: no reconciliation of "
                f"{', '.join(mutation.selection)} diverged. Add a check computed from theory in the suite it "
                "belongs to, or list it as a known survivor with the reason")
    return ""


@pytest.mark.parametrize("group", [pytest.param(ms, id=name) for name, ms in _groups().items()])
def test_each_mutation_turns_a_prediction_into_a_diverge(group: list[Mutation], tmp_path):
    """Every mutation of the area is checked (and named in the failure) even when an earlier one fails."""
    ledgers = _replay_group(group, tmp_path)
    problems = [p for m in group if (p := _verdict(m, ledgers[m.name]))]
    assert not problems, f"{len(problems)} of {len(group)} mutation(s):\n\n" + "\n\n".join(problems)


def _outcomes(ledger: dict) -> list[tuple[str, str, str, float]]:
    return sorted((r["test_id"], r["name"], r["verdict"], round(r["predicted"], 12)) for r in ledger["reconciliations"])


def test_a_batched_replay_is_each_mutations_lone_replay(tmp_path):
    """The fork after one collection (mutant_batch) gives each mutation the reconciliations, predictions and verdicts
    a fresh interpreter with the mutation applied before collection gives it: checked on the two vLLM-memory
    mutations, which share one selection (the cheapest pair), the second of them against its lone replay (forked after the
    first child ran, it also shows that nothing of the first leaks into the next), ~10 s."""
    pair = [BY_NAME["quant-vllm-fp8-lm-head-quantized"], BY_NAME["quant-vllm-no-weight-scales"]]
    batched = _replay_group(pair, tmp_path)
    # both forked (neither left to a lone replay, which would make this compare a lone replay with itself)
    assert json.loads((tmp_path / "outcome.json").read_text())["collection_called"] == []
    alone = _replay(pair[1].selection, pair[1].keyword, tmp_path / "alone.json", pair[1].name)
    assert _outcomes(batched[pair[1].name]) == _outcomes(alone)
    assert _outcomes(batched[pair[0].name]) != _outcomes(batched[pair[1].name])


def test_a_childs_items_are_its_own_selection_in_command_line_order():
    """mutant_batch.selected: a node id is kept by the first argument that collects it (a file, a node id, a node id
    with parameters); anything else is dropped."""
    from mutant_batch import selected

    selection = ("tests_b/test_y.py::test_one", "tests_a/test_x.py")
    assert selected(selection, "tests_a/test_x.py::test_any[p]") == 1
    assert selected(selection, "tests_b/test_y.py::test_one[h200]") == 0
    assert selected(selection, "tests_b/test_y.py::test_one") == 0
    assert selected(selection, "tests_b/test_y.py::test_one_more") is None
    assert selected(selection, "tests_b/test_z.py::test_one") is None
