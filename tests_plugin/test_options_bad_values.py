"""Bad values of the pytest options and ini keys found by the option audit: each is one line naming the problem
and the fix before any test runs, or (what only the end can tell) a non-zero exit, never a traceback, a silent
default or a report lost with exit 0. Every run here is in pytester's temp folder: none writes into results/."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLAIN = """
def test_plain(reconcile):
    reconcile("n", 7, 7)
"""
USES_MODEL = """
def test_model(model_spec, reconcile):
    reconcile("layers", model_spec.num_layers, model_spec.num_layers)
"""


def _one_line_usage_error(result: pytest.RunResult, *fragments: str) -> None:
    text = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + text
    assert "Traceback" not in text and "passed" not in result.stdout.str()
    assert len([line for line in result.stderr.lines if line.strip()]) == 1, text
    for fragment in fragments:
        assert fragment in text, text


@pytest.mark.parametrize("option", ["--anatomy-hardware", "--anatomy-model", "--anatomy-report", "--anatomy-summary"])
def test_an_option_given_empty_is_refused_not_taken_for_absent(pytester: pytest.Pytester, option: str) -> None:
    """`--anatomy-report=$REPORT` with REPORT unset ran without the report (and the others on their defaults),
    exit 0."""
    pytester.makepyfile(USES_MODEL)
    _one_line_usage_error(pytester.runpytest("-p", "no:cacheprovider", f"{option}="), f"{option}= is empty")


@pytest.mark.parametrize("ini, problem", [
    ("anatomy_model =", "anatomy_model is empty"),
    ("anatomy_results_dir =", "anatomy_results_dir is empty"),
], ids=["model", "results-dir"])
def test_an_empty_ini_value_is_refused(pytester: pytest.Pytester, ini: str, problem: str) -> None:
    """An empty anatomy_results_dir was the rootdir itself; an empty anatomy_model read ./config.json and said
    '--anatomy-model=: ...', a flag nobody gave."""
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(PLAIN)
    _one_line_usage_error(pytester.runpytest("-p", "no:cacheprovider"), problem)


@pytest.mark.parametrize("how", ["ini", "-o"])
def test_an_unknown_anatomy_ini_key_is_refused_with_the_nearest_one(pytester: pytest.Pytester, how: str) -> None:
    """pytest only warned of it and the run went on with the default source (auto, not recorded); under
    filterwarnings = error (this project's setting) it was an INTERNALERROR traceback."""
    pytester.makepyfile(PLAIN)
    args = ["-p", "no:cacheprovider"]
    if how == "ini":
        pytester.makeini("[pytest]\nanatomy_sorce = recorded\n")
    else:
        args += ["-o", "anatomy_sorce=recorded"]
    _one_line_usage_error(pytester.runpytest(*args), "unknown ini key 'anatomy_sorce'",
                          "Did you mean 'anatomy_source'?")


def test_a_summary_path_under_home_is_checked_where_it_will_be_written(pytester: pytest.Pytester,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary is written to the path with ~ expanded; the check looked at a folder named '~' instead, passed,
    and the run ended with the summary not written (exit 3, after every test ran)."""
    monkeypatch.setenv("HOME", str(pytester.path))
    pytester.path.joinpath("afile").write_text("x")
    pytester.makepyfile(PLAIN)
    _one_line_usage_error(pytester.runpytest("-p", "no:cacheprovider", "--anatomy-summary=~/afile/s.md"),
                          "is a file, not a folder")


TARGETED = """
def test_targeted(target, reconcile):
    reconcile("n", 7, 7)
"""


def test_a_missing_results_folder_is_refused_when_only_recordings_are_replayed(pytester: pytest.Pytester) -> None:
    """With a typo'd folder every replayed test was deselected and the rest passed: exit 0."""
    pytester.makepyfile(PLAIN + TARGETED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-source=recorded", "-o", "anatomy_results_dir=nope")
    _one_line_usage_error(result, "anatomy_results_dir=nope:", "does not exist", "nothing to replay")
