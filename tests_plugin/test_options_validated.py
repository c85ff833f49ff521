"""Every --anatomy-* option is validated before any test runs; an option that changed nothing is
reported; the ledger's hardware and source are always set and say what was used."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from pytest_anatomy import option_names, recordings

ROOT = Path(__file__).resolve().parents[1]
PLAIN = """
def test_plain(reconcile):
    reconcile("n", 7, 7)
"""
USES_MODEL = """
def test_model(model_spec, reconcile):
    reconcile("layers", model_spec.num_layers, model_spec.num_layers)
"""
REPLAY = """
def test_replay(measured, reconcile):
    rec = measured("pool", hardware="rtx4090", suite="capacity")
    reconcile("kv_tokens", 120064.0, rec["kv_tokens"])
"""


def _usage_error(result: pytest.RunResult, *fragments: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stderr.str()
    assert "Traceback" not in text and "passed" not in result.stdout.str()
    for fragment in fragments:
        assert fragment in text, text


def test_an_unknown_model_is_refused_before_any_test_runs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USES_MODEL)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-model=nope")
    _usage_error(result, "--anatomy-model=nope:", "nope")


def test_an_unknown_replay_hardware_ini_is_refused(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nanatomy_replay_hardware = h300\n")
    pytester.makepyfile(PLAIN)
    _usage_error(pytester.runpytest("-p", "no:cacheprovider"), "anatomy_replay_hardware:", "h300")


@pytest.mark.parametrize("path, problem", [
    ("report.txt", "the suffix must say which file it is"),
    ("afile/report.html", "is a file, not a folder"),
    ("adir.html", "is a directory"),
])
def test_a_report_path_that_cannot_be_written_is_refused_at_start(pytester: pytest.Pytester, path: str,
                                                                   problem: str) -> None:
    pytester.path.joinpath("afile").write_text("x")
    pytester.path.joinpath("adir.html").mkdir()
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--anatomy-report={path}")
    _usage_error(result, f"--anatomy-report={path}:", problem)


def test_a_summary_path_that_cannot_be_written_is_refused_at_start(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("afile").write_text("x")
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-summary=afile/summary.md")
    _usage_error(result, "--anatomy-summary=afile/summary.md:", "is a file, not a folder")


def test_the_report_suffix_decides_what_goes_where(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN)
    pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=out/x.json").assert_outcomes(passed=1)
    ledger = json.loads(pytester.path.joinpath("out", "x.json").read_text())
    assert ledger["schema"] == "pytest-anatomy/report/v1"
    assert pytester.path.joinpath("out", "x.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert not pytester.path.joinpath("out", "x.json.json").exists()


def test_an_option_no_collected_test_uses_is_reported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-model=qwen2.5-0.5b",
                                "--anatomy-strict-findings", "--anatomy-report=r.html")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "anatomy: warning: --anatomy-model=qwen2.5-0.5b was not used: "
        "no collected test requests the model_spec fixture",
        "anatomy: warning: --anatomy-strict-findings was not used: no collected test carries a finding mark",
    ])
    env = json.loads(pytester.path.joinpath("r.json").read_text())["environment"]
    assert len(env["unused_options"]) == 2


def test_a_used_option_is_not_reported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USES_MODEL)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-model=qwen2.5-0.5b")
    result.assert_outcomes(passed=1)
    assert "was not used" not in result.stdout.str()


def _recording(root: Path) -> None:
    recordings.save(root, recordings.Recording(
        suite="capacity", name="pool", hardware="rtx4090", recorded_at="2026-08-25T00:00:00Z",
        provenance={"source": "seed"}, measurements={"kv_tokens": {"value": 120064, "unit": "tokens"}}))


def test_a_hardware_option_that_replays_ignore_is_reported_and_the_ledger_names_the_real_gpu(
        pytester: pytest.Pytester) -> None:
    _recording(pytester.path / "results")
    pytester.makepyfile(REPLAY)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-hardware=l40s", "--anatomy-report=r.html")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["anatomy: warning: --anatomy-hardware=l40s was not used: no collected test requests "
                                 "the hardware fixture and no reconciliation is of l40s; the reconciliations are "
                                 "of their recordings' hardware: rtx4090 (1)"])
    ledger = json.loads(pytester.path.joinpath("r.json").read_text())
    entry = ledger["reconciliations"][0]
    assert entry["hardware"] == "rtx4090" and entry["source"] == "recorded"
    assert ledger["environment"]["hardware_spec_used_by"].startswith("0 collected tests")


def test_unused_options_are_reported_under_xdist(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Collection happens on the workers; the controller reports what none of them used."""
    pytest.importorskip("xdist")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the subprocess imports this checkout's plugin
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--anatomy-model=qwen2.5-0.5b")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*--anatomy-model=qwen2.5-0.5b was not used*"])


def test_plain_numbers_are_given_not_live_and_name_no_hardware_they_do_not_have(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN + """
def test_pinned(reconcile):
    reconcile("m", 7, 7, hardware="h200")
""")
    pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=r.html").assert_outcomes(passed=2)
    entries = {e["name"]: e for e in json.loads(pytester.path.joinpath("r.json").read_text())["reconciliations"]}
    assert entries["n"]["source"] == "given" and entries["n"]["hardware"] == "unspecified"
    assert entries["m"]["source"] == "given" and entries["m"]["hardware"] == "h200"


def test_every_committed_recording_replays_with_the_hardware_it_was_measured_on() -> None:
    """What the ledger's `hardware` is for every replayed reconciliation: the recording's GPU, even
    where the recording's provenance (the seed's, a device import's) does not name it."""
    files = [f for f in (ROOT / "results").rglob("*@*.json") if "batches" not in f.parts]
    assert len(files) > 300
    for f in files:
        rec = recordings.load_file(f)
        assert rec.hardware == f.relative_to(ROOT / "results").parts[0]
        for quantity in rec.measurements:
            m = rec[quantity]
            assert m.provenance["hardware"] == rec.hardware and m.source == "recorded"


def test_option_names_are_constants_the_parser_registers(pytestconfig: pytest.Config) -> None:
    names = [getattr(option_names, n) for n in dir(option_names) if n.endswith("_OPTION")]
    assert sorted(names) == sorted(option_names.OPTIONS) and len(names) == 10
    for name in names:
        pytestconfig.getoption(name)  # raises ValueError for an option the parser does not know
    for key in option_names.INI_KEYS:
        pytestconfig.getini(key)  # raises ValueError for an ini key the parser does not know
    readme = (ROOT / "README.md").read_text()
    assert all(name in readme for name in names)


_OPTION_TEXT = re.compile(r"--anatomy-[a-z-]+|\banatomy_(?:source|hardware|model|results_dir|replay_hardware)\b")


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def test_option_names_are_spelled_only_in_option_names() -> None:
    """Messages, help texts and commands name options through option_names' constants, so a renamed
    option cannot leave a message telling the user to pass a flag that no longer exists (docstrings
    may mention them: they are prose for readers of the code)."""
    spelled = []
    for path in sorted((ROOT / "pytest_anatomy").rglob("*.py")):
        if path.name == "option_names.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        spelled += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:60]!r}" for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                    and _OPTION_TEXT.search(node.value)]
    assert not spelled, "spell these with pytest_anatomy.option_names' constants:\n" + "\n".join(spelled)


@pytest.mark.parametrize("ini, problem", [
    ("anatomy_source = sometimes", "anatomy_source='sometimes' is not one of auto, live, recorded"),
    ("anatomy_hardware = h300", "anatomy_hardware: unknown hardware 'h300'"),  # the ini key, not the flag
    ("anatomy_model = nope", "anatomy_model=nope:"),
    ("anatomy_results_dir = afile", "anatomy_results_dir=afile: "),
], ids=["source", "hardware", "model", "results-dir"])
def test_a_bad_ini_value_is_one_line_at_start(pytester: pytest.Pytester, ini: str, problem: str) -> None:
    pytester.path.joinpath("afile").write_text("x")
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("-p", "no:cacheprovider")
    _usage_error(result, problem)
    assert "--anatomy-" not in result.stderr.str().split(":")[0]  # the fix is in the ini file: name its key
    assert len([line for line in result.stderr.lines if line.strip()]) == 1, result.stderr.str()


def test_source_help_says_auto_adds_the_recorded_cards(pytester: pytest.Pytester) -> None:
    """auto is the live card plus every recorded one (targets.session_targets), not 'live, else recorded'."""
    out = " ".join(pytester.runpytest("-p", "no:cacheprovider", "--help").stdout.str().split())
    assert "plus every recorded card of another name" in out and "else recorded" not in out
