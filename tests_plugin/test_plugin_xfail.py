"""pytester tests: findings in pytest's own language (xfail, strict XPASS, --runxfail), the JUnit
XML and its properties (also under xdist), the CI summary, and failures in the ledger and report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

# One test per verdict, plus a resolved finding relaxed by its mark and a plain pytest xfail.
VERDICTS = """
import pytest

def test_agree(reconcile):
    reconcile("kv_bytes", 57344.0, 57344.0, hardware="h200")

@pytest.mark.finding("seed-pool", reason="the driver reserves more than the formula assumes",
                     expected=(0.6, 0.8), band_from="checked-run")
def test_finding(reconcile):
    reconcile("pool", 100.0, 70.0, rel=0.01, why="log rounding", hardware="h200")

@pytest.mark.finding("seed-closed", reason="a vLLM bug, fixed since", expected=(0.6, 0.8), band_from="checked-run")
def test_resolved(reconcile):
    reconcile("pool", 100.0, 100.2, rel=0.01, why="log rounding", hardware="rtx4090")

@pytest.mark.finding("seed-closing", reason="fix rolling out", strict=False, expected=(0.6, 0.8), band_from="checked-run")
def test_resolved_relaxed(reconcile):
    reconcile("pool", 100.0, 100.2, rel=0.01, why="log rounding", hardware="rtx4090")

@pytest.mark.finding("seed-drift", reason="explained for 0.6-0.8 only", expected=(0.6, 0.8), band_from="preregistered")
def test_drifted(reconcile):
    reconcile("pool", 100.0, 30.0, rel=0.01, why="log rounding", hardware="h200")

def test_diverge(reconcile):
    reconcile("weights", 200.0, 150.0, rel=0.01, why="log rounding", hardware="h200")

@pytest.mark.xfail(reason="a plain pytest xfail", strict=True)
def test_plain_xfail():
    assert False
"""


def _only(*names: str) -> list[str]:
    return [f"test_verdicts.py::{name}" for name in names]


def _cases(path: Path) -> dict[str, dict[str, Any]]:
    """JUnit XML -> {test name: {outcome element tag/type/message, properties}} (no times, hosts)."""
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        result = [(el.tag, el.get("type"), el.get("message")) for el in case
                  if el.tag in ("skipped", "failure", "error")]
        props = [(p.get("name"), p.get("value")) for p in case.iter("property")]
        cases[case.get("name")] = {"result": result, "properties": props}
    return cases


def _props(case: dict[str, Any]) -> dict[str, str]:
    return dict(case["properties"])


def test_junit_xml_shows_each_verdict_where_ci_tools_look(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(VERDICTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--junitxml=j.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"passed": 1, "finding": 1, "resolved": 1, "failed": 3, "xfailed": 1}
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures"), suite.get("errors")) == ("7", "2", "3", "0")
    cases = _cases(pytester.path / "j.xml")

    assert cases["test_agree"]["result"] == []
    assert _props(cases["test_agree"]) == {
        "anatomy.kv_bytes.predicted": "57344.0", "anatomy.kv_bytes.measured": "57344.0", "anatomy.kv_bytes.unit": "",
        "anatomy.kv_bytes.gap": "0.0", "anatomy.kv_bytes.tolerance": "exact", "anatomy.kv_bytes.verdict": "agree",
        "anatomy.kv_bytes.kind": "prediction", "anatomy.kv_bytes.source": "given", "anatomy.kv_bytes.hardware": "h200",
    }

    [(tag, kind, message)] = cases["test_finding"]["result"]
    assert (tag, kind) == ("skipped", "pytest.xfail")
    assert message == ("finding seed-pool: pool off by -30.0% (measured 70 vs predicted 100, tolerance ±1%) — "
                       "the driver reserves more than the formula assumes")
    props = _props(cases["test_finding"])
    assert (props["anatomy.pool.predicted"], props["anatomy.pool.measured"], props["anatomy.pool.gap"]) == (
        "100.0", "70.0", "-0.3")
    assert (props["anatomy.pool.tolerance"], props["anatomy.pool.verdict"], props["anatomy.pool.finding"]) == (
        "±1%", "finding", "seed-pool")

    [(tag, _, message)] = cases["test_resolved"]["result"]
    assert tag == "failure" and message.startswith("[XPASS(strict)] finding 'seed-closed' is resolved")
    assert _props(cases["test_resolved"])["anatomy.pool.verdict"] == "resolved"
    assert cases["test_resolved_relaxed"]["result"] == []  # an XPASS: JUnit counts it as passed
    assert _props(cases["test_resolved_relaxed"])["anatomy.pool.hardware"] == "rtx4090"

    for name, verdict in (("test_drifted", "diverge"), ("test_diverge", "diverge")):
        [(tag, _, message)] = cases[name]["result"]
        assert tag == "failure" and "reconciliation diverged" in message
        assert _props(cases[name])[f"anatomy.{'pool' if name == 'test_drifted' else 'weights'}.verdict"] == verdict
    assert _props(cases["test_drifted"])["anatomy.pool.finding"] == "seed-drift"

    assert cases["test_plain_xfail"]["result"] == [("skipped", "pytest.xfail", "a plain pytest xfail")]
    # The whole JSON entry stays out of the XML (it is in the ledger): only the short properties.
    assert all(name.startswith("anatomy.") for case in cases.values() for name, _ in case["properties"])


def test_xdist_gives_the_same_junit_xml(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(VERDICTS)
    serial = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--junitxml=serial.xml")
    parallel = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--junitxml=xdist.xml",
                                             "--anatomy-report=r.html")
    assert serial.parseoutcomes() == parallel.parseoutcomes()
    assert _cases(pytester.path / "serial.xml") == _cases(pytester.path / "xdist.xml")
    assert _cases(pytester.path / "xdist.xml")["test_finding"]["result"][0][:2] == ("skipped", "pytest.xfail")
    # The failures reach the controller's ledger with their traceback text.
    failures = json.loads((pytester.path / "r.json").read_text())["failures"]
    assert sorted(f["test_id"].split("::")[1] for f in failures) == ["test_diverge", "test_drifted", "test_resolved"]
    assert all(f["longrepr"] and f["message"] for f in failures)


def test_findings_are_listed_by_rx_and_counted_as_findings(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_verdicts=VERDICTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rxX", "-v",
                                *_only("test_finding", "test_resolved_relaxed", "test_plain_xfail"))
    result.stdout.fnmatch_lines([
        "*::test_finding FINDING*",
        "*short test summary info*",
        "FINDING *::test_finding - finding seed-pool: pool off by -30.0% (measured 70 vs predicted 100*",
        "XFAIL *::test_plain_xfail - a plain pytest xfail",
        "RESOLVED *::test_resolved_relaxed - finding seed-closing: pool now agrees at +0.20%*",
        "*= 1 xfailed, 1 finding, 1 resolved in *",
    ])


def test_counts_say_findings_in_the_plural(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.finding("f", reason="known", expected=(0.6, 0.8), band_from="checked-run")
        @pytest.mark.parametrize("i", range(2))
        def test_two(reconcile, i):
            reconcile("pool", 100.0, 70.0, rel=0.01, why="rounding")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*= 2 findings in *"])


def test_runxfail_turns_findings_into_failures_with_both_numbers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_verdicts=VERDICTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--runxfail", "--junitxml=j.xml",
                                *_only("test_finding", "test_resolved", "test_resolved_relaxed"))
    # Finding marks are ignored, like xfail marks: the finding fails, the resolved ones simply agree.
    assert result.parseoutcomes() == {"failed": 1, "passed": 2}
    result.stdout.fnmatch_lines([
        "*finding 'seed-pool' fails under --runxfail (finding marks are ignored): reconciliation diverged",
        "pool: measured 70 vs predicted 100 (gap -30%, -30)",
        "  tolerance: ±1% — log rounding",
        "  formula:   (given number)",
        "*finding's explanation: the driver reserves more than the formula assumes",
    ])
    cases = _cases(pytester.path / "j.xml")
    assert cases["test_finding"]["result"][0][0] == "failure"
    assert cases["test_resolved"]["result"] == [] and cases["test_resolved_relaxed"]["result"] == []


def test_a_finding_test_that_fails_for_another_reason_still_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.finding("f", reason="known", expected=(0.6, 0.8), band_from="checked-run")
        def test_x(reconcile):
            reconcile("pool", 100.0, 70.0, rel=0.01, why="rounding")
            assert 1 == 2, "unrelated"
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)


def test_summary_file_has_counts_moved_findings_and_diverges(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_verdicts=VERDICTS)
    step = pytester.path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-summary=ci/summary.md")
    result.stdout.fnmatch_lines(["anatomy summary: *ci/summary.md", "anatomy summary: *step.md"])
    text = (pytester.path / "ci" / "summary.md").read_text()
    assert step.read_text() == "earlier step\n" + text  # appended, not replaced
    assert text.startswith("### pytest-anatomy: 6 reconciliations: 1 agree, 1 finding, 2 resolved, 2 diverge;")
    assert "| default | h200 | 1 | 1 | 0 | 2 |" in text
    assert "| default | rtx4090 | 0 | 0 | 2 | 0 |" in text
    assert "#### Findings that drifted or resolved" in text
    assert "| `seed-drift` | pool | drifted | 0.3 | 0.6–0.8 (preregistered) | test_verdicts.py::test_drifted |" in text
    assert "| `seed-closed` | pool | resolved | 1.002 | 0.6–0.8 (checked-run) |" in text
    assert "#### Diverges" in text
    assert "| weights | default | h200 | 200 | 150 | -25.0% | ±1% |" in text
    assert "#### 3 failed tests" in text and "[XPASS(strict)] finding 'seed-closed' is resolved" in text


def test_step_summary_is_left_alone_when_nothing_was_reconciled(pytester: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step.md"))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert not (pytester.path / "step.md").exists()


def test_summary_path_that_is_a_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    pytester.mkdir("out")
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-summary=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--anatomy-summary='out' is a directory; give a file name such as*"])


FAILURES = """
import pytest

@pytest.fixture
def broken_setup():
    raise RuntimeError("no GPU handle")

@pytest.fixture
def broken_teardown():
    yield
    raise OSError("could not remove the scratch dir")

def test_call_fails():
    assert 41 + 1 == 43, "arithmetic"

def test_setup_errors(broken_setup):
    pass

def test_teardown_errors(broken_teardown):
    pass

def test_diverges(reconcile):
    reconcile("weights", 200.0, 150.0, rel=0.01, why="log rounding")
"""


def test_failures_are_in_the_json_ledger_and_the_html_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FAILURES)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=r.html")
    assert result.parseoutcomes() == {"failed": 2, "passed": 1, "errors": 2}
    failures = json.loads((pytester.path / "r.json").read_text())["failures"]
    by_test = {(f["test_id"].split("::")[1], f["when"]): f for f in failures}
    assert sorted(by_test) == [("test_call_fails", "call"), ("test_diverges", "call"),
                               ("test_setup_errors", "setup"), ("test_teardown_errors", "teardown")]
    assert [by_test[k]["outcome"] for k in sorted(by_test)] == ["failed", "failed", "error", "error"]
    assert by_test[("test_call_fails", "call")]["message"].startswith("AssertionError: arithmetic")
    assert "assert 41 + 1 == 43" in by_test[("test_call_fails", "call")]["longrepr"]
    assert by_test[("test_setup_errors", "setup")]["message"] == "RuntimeError: no GPU handle"
    assert 'raise RuntimeError("no GPU handle")' in by_test[("test_setup_errors", "setup")]["longrepr"]
    assert by_test[("test_teardown_errors", "teardown")]["message"] == "OSError: could not remove the scratch dir"
    assert "weights: measured 150 vs predicted 200" in by_test[("test_diverges", "call")]["longrepr"]

    html = (pytester.path / "r.html").read_text()
    section = html[html.index('<section id="failures">'):html.index('<section id="reconciliations">')]
    assert "4 failed or errored tests" in section
    for (test, when), failure in by_test.items():
        assert f"{test}</code>" in section and f"({when})" in section
    assert "AssertionError: arithmetic" in section and "assert 41 + 1 == 43" in section
    assert "raise RuntimeError(&#34;no GPU handle&#34;)" in section  # autoescaped traceback text
    assert 'href="#failures"' in html


def test_collection_errors_are_failures_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import no_such_module_here\n")
    pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=r.html")
    [failure] = json.loads((pytester.path / "r.json").read_text())["failures"]
    assert failure["when"] == "collect" and failure["outcome"] == "error"
    assert "no_such_module_here" in failure["longrepr"]


def test_pytest_html_lists_a_finding_as_an_expected_failure(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html")
    pytester.makepyfile(test_verdicts=VERDICTS)
    pytester.runpytest("-p", "no:cacheprovider", *_only("test_finding"), "--html=h.html", "--self-contained-html")
    html = (pytester.path / "h.html").read_text()
    data = json.loads(html.split('data-jsonblob="', 1)[1].split('"', 1)[0].replace("&#34;", '"').replace("&amp;", "&"))
    [test] = [t for tests in data["tests"].values() for t in tests if t["testId"].endswith("test_finding")]
    assert test["result"] == "XFailed"


def test_summary_escapes_pipes_and_caps_each_table() -> None:
    from pytest_anatomy.report.ci_summary import MAX_ROWS, render_summary

    recs = [{"suite": "capacity", "name": "kv", "test_id": f"t.py::test[a|{i}]", "predicted": 100.0, "measured": 50.0,
             "unit": "B", "gap_rel": -0.5, "gap_abs": -50.0, "ratio": 0.5, "tolerance": {"rel": 0.01},
             "verdict": "diverge", "hardware": "h200"} for i in range(MAX_ROWS + 5)]
    text = render_summary({"reconciliations": recs, "tests": {"failed": len(recs)}})
    section = text[text.index("#### Diverges"):]
    rows = [line for line in section.splitlines() if line.startswith("| kv")]
    assert len(rows) == MAX_ROWS and "… and 5 more" in section
    assert "| kv[a\\|0] | capacity | h200 | 100 B | 50 B | -50.0% | ±1% | t.py::test[a\\|0] |" in rows
    assert f"| capacity | h200 | 0 | 0 | 0 | {len(recs)} |" in text


def test_junit_properties_leave_out_what_is_unknown() -> None:
    from pytest_anatomy.outcome import junit_properties
    from pytest_anatomy.reconcile import Tolerance, compare

    rec = compare("idle_bytes", 0.0, 0.0, Tolerance(abs=4096.0, why="page granularity"))
    assert dict(junit_properties([rec])) == {
        "anatomy.idle_bytes.predicted": "0.0", "anatomy.idle_bytes.measured": "0.0", "anatomy.idle_bytes.unit": "",
        "anatomy.idle_bytes.tolerance": "±4,096", "anatomy.idle_bytes.verdict": "agree",
        "anatomy.idle_bytes.kind": "prediction", "anatomy.idle_bytes.source": "given",
    }  # no gap (predicted is 0), no hardware, no finding
