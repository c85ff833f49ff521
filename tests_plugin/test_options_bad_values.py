"""Bad values of the pytest options and ini keys found by the option audit: each is one line naming the problem
and the fix before any test runs, or (what only the end can tell) a non-zero exit, never a traceback, a silent
default or a report lost with exit 0. Every run here is in pytester's temp folder: none writes into results/."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest
from test_options_validated import PLAIN, ROOT, USES_MODEL  # the same inner test files


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


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc (a folder no file can be made in)")
def test_a_report_folder_is_checked_by_making_a_file_there(pytester: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """os.access says yes to root everywhere: a report into /proc (or a read-only mount) passed the check and was
    lost at the end, exit 0. Here os.access answers as it does for root, whoever runs the test."""
    monkeypatch.setattr("pytest_anatomy.options.os.access", lambda *args, **kwargs: True)
    pytester.makepyfile(PLAIN)
    _one_line_usage_error(pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=/proc/r.html"),
                          "--anatomy-report=/proc/r.html:", "cannot be written")


def test_a_report_lost_at_the_end_is_not_a_green_run(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk that filled up during the run: the report was not written and the run exited 0."""
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("pytest_anatomy.report.html.write_report", full)
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=r.html", "--anatomy-summary=s.md")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["anatomy report not written: *No space left on device*"])
    assert pytester.path.joinpath("s.md").is_file()  # the summary is still written


@pytest.mark.parametrize("option", ["--collect-only", "--anatomy-plan"])
def test_a_run_that_runs_nothing_keeps_the_report_already_there(pytester: pytest.Pytester, option: str) -> None:
    """Adding --anatomy-plan (or --collect-only) to the command that writes the report replaced the last real
    report, ledger and summary with empty ones."""
    for name in ("r.html", "r.json", "s.md"):
        pytester.path.joinpath(name).write_text("the last real run's")
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("-p", "no:cacheprovider", option, "--anatomy-report=r.html", "--anatomy-summary=s.md")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["anatomy: nothing ran, so --anatomy-report and --anatomy-summary wrote nothing*"])
    assert all(pytester.path.joinpath(n).read_text() == "the last real run's" for n in ("r.html", "r.json", "s.md"))


TARGETED = """
def test_targeted(target, reconcile):
    reconcile("n", 7, 7)
"""


def test_a_missing_results_folder_is_refused_when_only_recordings_are_replayed(pytester: pytest.Pytester) -> None:
    """With a typo'd folder every replayed test was deselected and the rest passed: exit 0."""
    pytester.makepyfile(PLAIN + TARGETED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-source=recorded", "-o", "anatomy_results_dir=nope")
    _one_line_usage_error(result, "anatomy_results_dir=nope:", "does not exist", "nothing to replay")


def test_a_missing_results_folder_is_named_where_tests_were_deselected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN + TARGETED)
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", "anatomy_results_dir=nope")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["anatomy: 1 tests have no case*deselected; anatomy_results_dir: *nope does not exist"])


def test_record_help_names_the_results_ini_key(pytester: pytest.Pytester) -> None:
    """--anatomy-record writes into anatomy_results_dir, which need not be results/."""
    out = " ".join(pytester.runpytest("-p", "no:cacheprovider", "--help").stdout.str().split())
    assert "write live measurements into <anatomy_results_dir>/<hardware>/<suite>/" in out


def test_the_suites_without_the_plugin_are_one_line_not_a_traceback() -> None:
    """`-p no:anatomy` in this checkout: the suites' conftests answer the plugin's hook, and pytest ended collection
    with an INTERNALERROR traceback about an unknown hook."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:anatomy", "--collect-only", "-q",
               "tests_capacity/test_seed_vllm_pool.py"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert "INTERNALERROR" not in run.stdout + run.stderr
    assert "-p no:anatomy" in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_tests_deselected_for_want_of_a_case_are_said_under_xdist(pytester: pytest.Pytester) -> None:
    """The workers collect and deselect: under `-n 2` the deselected tests vanished unsaid ("1 passed"), where one
    process says how many and why."""
    pytest.importorskip("xdist")
    pytester.makepyfile(PLAIN + TARGETED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-o", "anatomy_results_dir=nope")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["anatomy: 1 tests have no case on this session's targets (none) and were "
                                 "deselected; anatomy_results_dir: *nope does not exist"])


@pytest.mark.parametrize("summary", ["r.json", "r.html", "./r.json"])
def test_a_summary_named_like_the_report_or_its_ledger_is_refused(pytester: pytest.Pytester, summary: str) -> None:
    """The summary, written after the report, replaced the ledger (or the report) and the run said 'ledger: r.json',
    exit 0."""
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=r.html", f"--anatomy-summary={summary}")
    _one_line_usage_error(result, f"--anatomy-summary={summary.removeprefix('./')} is a file --anatomy-report writes")


def test_a_spec_source_without_a_live_gpu_is_reported_unused(pytester: pytest.Pytester) -> None:
    """--anatomy-spec-source picks the live GPU's spec: on a session without one it changed nothing, unsaid."""
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-source=recorded", "--anatomy-spec-source=nvml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["anatomy: warning: --anatomy-spec-source=nvml was not used: *no live GPU"])


def test_help_is_true_to_the_code(pytester: pytest.Pytester) -> None:
    """--anatomy-hardware's help lists the catalog (a card added to it must be listed there too), and the report's
    help says that a run that runs nothing writes no report."""
    from pytest_anatomy.specs.hardware import HARDWARE

    out = " ".join(pytester.runpytest("-p", "no:cacheprovider", "--help").stdout.str().split())
    listed = out.split("--anatomy-hardware=NAME", 1)[1].split("--anatomy-model", 1)[0]
    assert all(name in listed.replace("- ", "-") for name in HARDWARE), listed
    assert "a run that runs nothing (--collect-only, --anatomy-plan) writes neither" in out
