"""pytest hooks of pytest-anatomy (entry point `pytest11: anatomy`).

Hooks only: fixtures live in fixtures.py, state in session.py, rendering in report/. This
module imports nothing heavy, so `pytest` on a CPU machine stays fast and never touches CUDA.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_anatomy import hookspecs
from pytest_anatomy.findings import parse_finding_marks
from pytest_anatomy.fixtures import hardware, measured, model_spec, reconcile  # noqa: F401 (fixtures)
from pytest_anatomy.options import add_options, parse_settings
from pytest_anatomy.session import SESSION_KEY, USER_PROPERTY, AnatomySession, get_session

SUITES = ("capacity", "latency", "kernels", "quant", "flashattn", "deployment", "validation", "plugin")
_MARKERS = (
    *(f"{suite}: tests in tests_{suite}/ (added automatically)" for suite in SUITES),
    "gpu: needs a live GPU or a recording of one; skipped with the reason when it has neither",
    "finding(id, *, reason, quantity=None, expected=None): an expected, explained divergence "
    "(reported as a finding, not a failure)",
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in _MARKERS:
        config.addinivalue_line("markers", line)
    session = AnatomySession(parse_settings(config), is_worker=hasattr(config, "workerinput"))
    config.stash[SESSION_KEY] = session
    if not session.is_worker and config.pluginmanager.get_plugin("anatomy-ledger") is None:
        config.pluginmanager.register(LedgerCollector(config), "anatomy-ledger")
    if (config.pluginmanager.hasplugin("html") and not session.is_worker
            and config.pluginmanager.get_plugin("anatomy-html-columns") is None):
        from pytest_anatomy.report.pytest_html import AnatomyHtmlColumns

        config.pluginmanager.register(AnatomyHtmlColumns(), "anatomy-html-columns")


def pytest_runtest_setup(item: pytest.Item) -> None:
    parse_finding_marks(item)  # validate marker kwargs before the test body runs
    if item.get_closest_marker("gpu") is not None and "measured" not in getattr(item, "fixturenames", ()):
        session = get_session(item.config)
        if session.live_gpu is None:
            source = session.settings.source
            pytest.skip(f"needs a live GPU (none detected, --anatomy-source={source}) and has no recording to replay")


def _verdicts(report: pytest.TestReport) -> list[str]:
    return [json.loads(v)["verdict"] for k, v in report.user_properties if k == USER_PROPERTY]


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    if report.when != "call" or not report.passed:
        return None
    verdicts = _verdicts(report)
    if "finding" in verdicts:
        return "finding", "f", "FINDING"
    if "resolved" in verdicts:
        return "resolved", "R", "RESOLVED"
    return None


class LedgerCollector:
    """Controller-side hooks: gathers reconciliations and outcomes, writes summary and report.

    Registered only on the controller (not on xdist workers), like pytest-html's Report."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = get_session(config)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Under xdist, worker reports are replayed here on the controller with user_properties intact.
        state = self.state
        if report.when == "call":
            state.add_from_report(report)
        outcome = _outcome(report)
        if outcome:
            state.outcomes[outcome] = state.outcomes.get(outcome, 0) + 1
        if report.skipped and report.when in ("setup", "call"):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            state.skips.append({"test_id": report.nodeid, "reason": reason.removeprefix("Skipped: ")})

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.state.settings.report is None:
            return
        from pytest_anatomy.report.html import write_report

        html_path, json_path = write_report(self.state.ledger(self.config), self.state.settings.report)
        self._report_paths = (html_path, json_path)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.state.entries:
            from pytest_anatomy.report.terminal import summary_lines

            terminalreporter.write_sep("=", "anatomy reconciliations")
            for line in summary_lines(self.state.ledger(config)):
                terminalreporter.write_line(line)
        paths = getattr(self, "_report_paths", None)
        if paths:
            terminalreporter.write_sep("-", f"Generated anatomy report: file://{paths[0].resolve()}")
            terminalreporter.write_line(f"ledger: {paths[1]}")


def _outcome(report: pytest.TestReport) -> str | None:
    if report.when == "call":
        if report.passed:
            verdicts = _verdicts(report)
            return "finding" if "finding" in verdicts else "resolved" if "resolved" in verdicts else "passed"
        return "failed" if report.failed else "skipped"
    if report.failed:
        return "error"
    if report.skipped:
        return "skipped"
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    for name in ("anatomy-html-columns", "anatomy-ledger"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Suite markers from the directory name, added before `-m` deselects: `-m capacity`
    # selects tests_capacity/.
    for item in items:
        top = item.nodeid.split("/", 1)[0]
        if top.startswith("tests_") and top[len("tests_"):] in SUITES:
            item.add_marker(top[len("tests_"):])
