"""pytest hooks of pytest-anatomy (entry point `pytest11: anatomy`).

Hooks only: fixtures live in fixtures.py, state in session.py, rendering in report/. This
module imports nothing heavy, so `pytest` on a CPU machine stays fast and never touches CUDA.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy import hookspecs, run_share
from pytest_anatomy.benchmarks import anatomy_benchmark  # noqa: F401 (fixture)
from pytest_anatomy.findings import parse_finding_marks
from pytest_anatomy.fixtures import hardware, measured, model_spec, reconcile, suite_of, target  # noqa: F401 (fixtures)
from pytest_anatomy.option_names import REPORT_OPTION, RESULTS_DIR_INI, SOURCE_OPTION, SUMMARY_OPTION
from pytest_anatomy.options import add_options, parse_settings
from pytest_anatomy.outcome import RECONCILED, failure_entry, junit_properties, rename_summary_counts, settle, verdicts_of
from pytest_anatomy.session import SESSION_KEY, USER_PROPERTY, AnatomySession, get_session

SUITES = ("capacity", "latency", "kernels", "quant", "flashattn", "deployment", "validation", "plugin")
_MARKERS = (
    *(f"{suite}: tests in tests_{suite}/ (added automatically)" for suite in SUITES),
    "gpu: needs a live GPU or a recording of one; skipped with the reason when it has neither",
    "targets(recorded=PREFIX, live=False, hardware=None): parametrize `target` only over replay targets holding a "
    "recording named PREFIX* (and the live target if live=True; by default data such as the seed study's exists "
    "only as recordings); hardware= (a name or a tuple) keeps only those targets: a table of one card's findings "
    "is recomputed from that card's recordings, not from every card's",
    "slow: a long live measurement (engine starts, load runs); `-m 'gpu and not slow'` is the fast live subset",
    "finding(id, *, reason, band_from, quantity=None, expected=None, hardware=None, strict=True): an expected, "
    "explained divergence on one card (reported as a finding: an xfail; once resolved it fails unless strict=False); "
    "every finding needs a band (expected=, or reconcile(finding_band=) at run time) and band_from (preregistered, "
    "explanation, other-runs, checked-run)",
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in _MARKERS:
        config.addinivalue_line("markers", line)
    # Every --anatomy-* option and anatomy_* ini key is checked here, before collection (one line each).
    session = AnatomySession(parse_settings(config), is_worker=hasattr(config, "workerinput"))
    config.stash[SESSION_KEY] = session
    if session.settings.show_plan and getattr(config.option, "numprocesses", None):
        # --anatomy-plan runs nothing: no xdist workers (before xdist's trylast configure starts them). Workers
        # collect and run on their own, so with `-n` the plan was never printed and every live test measured.
        config.option.numprocesses, config.option.dist, config.option.tx = 0, "no", []
    if not session.is_worker and config.pluginmanager.get_plugin("anatomy-ledger") is None:
        config.pluginmanager.register(LedgerCollector(config), "anatomy-ledger")
    if (config.pluginmanager.hasplugin("html") and not session.is_worker
            and config.pluginmanager.get_plugin("anatomy-html-columns") is None):
        from pytest_anatomy.report.pytest_html import AnatomyHtmlColumns

        config.pluginmanager.register(AnatomyHtmlColumns(), "anatomy-html-columns")
    _register_option_use(config)
    run_share.bind(config)


def _register_option_use(config: pytest.Config) -> None:
    """Options that changed nothing are reported (option_use.py); workers count, the controller reports."""
    if config.pluginmanager.get_plugin("anatomy-option-use") is None:
        from pytest_anatomy.option_use import OptionUse

        config.pluginmanager.register(OptionUse(config), "anatomy-option-use")


LIVE_GROUP = "anatomy-live-gpu"
NO_CASE_KEY = "anatomy_no_case_on_targets"  # workeroutput: (tests deselected, the targets they had no case on)


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `target` over the session's targets, unless the module paired it with its own
    cases already (its pytest_generate_tests or a parametrize mark ran before this one)."""
    if "target" not in metafunc.fixturenames:
        return
    if any("target" in call.params for call in getattr(metafunc, "_calls", ())):
        return
    session = get_session(metafunc.config)
    suite = suite_of(metafunc.definition)
    targets = session.targets(suite)
    only = metafunc.definition.get_closest_marker("targets")
    if only is not None:
        prefix, live = only.kwargs.get("recorded", ""), bool(only.kwargs.get("live", False))
        folder = session.settings.results_dir
        targets = [t for t in targets if (live if t.live else any((folder / t.name / suite).glob(f"{prefix}*@*.json")))]
        only_on = only.kwargs.get("hardware")
        if only_on is not None:
            names = (only_on,) if isinstance(only_on, str) else tuple(only_on)
            targets = [t for t in targets if t.name in names]
    metafunc.parametrize("target", targets, ids=[t.name for t in targets])


def pytest_runtest_setup(item: pytest.Item) -> None:
    parse_finding_marks(item)  # validate marker kwargs before the test body runs
    # A gpu test that reads no measurement (no `measured`) needs a live GPU, unless it is replay-only by its
    # `targets` marker (live=False, the default): those read the recordings of their target directly.
    only = item.get_closest_marker("targets")
    replay_only = only is not None and not only.kwargs.get("live", False)
    if (item.get_closest_marker("gpu") is not None and not replay_only
            and "measured" not in getattr(item, "fixturenames", ())):
        session = get_session(item.config)
        if session.live_gpu is None:
            source = session.settings.source
            pytest.skip(f"needs a live GPU (none detected, {SOURCE_OPTION}={source}) and has no recording to replay")


def _verdicts(report: Any) -> list[str]:
    return verdicts_of(report, USER_PROPERTY)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    # Outermost wrapper: sees the report after pytest's skipping plugin, and leaves its xfails alone.
    recons = item.stash.get(RECONCILED, [])
    if call.when == "call" and recons:
        item.user_properties.extend(junit_properties(recons))  # before the report copies them
    report = yield
    if call.when == "call" and recons and report.passed and not hasattr(report, "wasxfail"):
        settings = get_session(item.config).settings
        outcome = settle(recons, allow_resolved=settings.allow_resolved, runxfail=item.config.option.runxfail)
        if outcome is not None:
            outcome.apply(report)
    if call.when == "teardown":
        # JUnit XML writes the teardown report's properties: the short anatomy.* ones are for it;
        # the whole JSON entry travels on the call report (to the ledger) and need not bloat the XML.
        report.user_properties = [p for p in report.user_properties if p[0] != USER_PROPERTY]
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    # pytest's categories, so -rx / -rX list them; our words. The final counts are renamed below.
    if getattr(report, "when", None) != "call" or not hasattr(report, "wasxfail"):
        return None
    verdicts = _verdicts(report)
    if report.skipped and "finding" in verdicts:
        return "xfailed", "f", "FINDING"
    if report.passed and "resolved" in verdicts:
        return "xpassed", "R", "RESOLVED"
    return None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: Any) -> Any:
    try:
        return (yield)
    finally:
        # After the short test summary (-rx listed the findings with the xfails), before the counts line:
        # "2 passed, 2 findings" rather than "2 xfailed".
        if rename_summary_counts(terminalreporter.stats, USER_PROPERTY):
            recount = getattr(terminalreporter, "_set_main_color", None)  # private: re-reads the stats keys
            if callable(recount):
                recount()


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
        if report.failed:
            state.failures.append(failure_entry(report))
        if report.skipped and report.when in ("setup", "call") and not hasattr(report, "wasxfail"):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            state.skips.append({"test_id": report.nodeid, "reason": reason.removeprefix("Skipped: ")})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.state.failures.append(failure_entry(report))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        settings = self.state.settings
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY", "").strip()
        if settings.report is None and settings.summary is None and not (step_summary and self.state.entries):
            return
        if self.config.option.collectonly:  # --collect-only or --anatomy-plan: an empty report would replace a real one
            asked = [o for o, path in ((REPORT_OPTION, settings.report), (SUMMARY_OPTION, settings.summary)) if path]
            self._summary_lines = [f"anatomy: nothing ran, so {' and '.join(asked)} wrote nothing "
                                   "(a file already there is kept)"] if asked else []
            return
        ledger = self.state.ledger(self.config)
        if settings.report is not None:
            from pytest_anatomy.report.html import write_report

            try:
                self._report_paths = write_report(ledger, settings.report)
            except OSError as exc:  # checked writable at start; a disk that filled up since must not lose the summary
                self._report_error = f"anatomy report not written: {exc}"
                if session.exitstatus == 0:  # asked for and lost: not a green run
                    session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        self._summary_lines = []
        from pytest_anatomy.report.ci_summary import write_summary

        # The step summary only when reconciliations ran: other pytest steps of a workflow stay quiet.
        targets = [(settings.summary, False)] if settings.summary is not None else []
        targets += [(Path(step_summary), True)] if step_summary and self.state.entries else []
        for path, append in targets:
            try:
                self._summary_lines.append(f"anatomy summary: {write_summary(ledger, path, append=append)}")
            except OSError as exc:
                self._summary_lines.append(f"anatomy summary not written to {path}: {exc.strerror or exc}")
                if not append and session.exitstatus == 0:
                    session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # Under xdist the workers collect and deselect: without this the deselected tests vanished unsaid ("2 passed"
        # where a lone process says "2 passed, 7 deselected" and why). Every worker collects every test: take the max.
        count, targets = (getattr(node, "workeroutput", None) or {}).get(NO_CASE_KEY) or (0, [])
        if int(count) > self.state.no_case_on_targets:
            self.state.no_case_on_targets, self.state.no_case_targets = int(count), tuple(targets)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.state.no_case_on_targets:
            targets = list(self.state.no_case_targets) or ["none"]
            folder = self.state.settings.results_dir
            why = "" if folder.is_dir() else f"; {RESULTS_DIR_INI}: {folder} does not exist"  # a typo'd folder
            terminalreporter.write_line(
                f"anatomy: {self.state.no_case_on_targets} tests have no case on this session's targets "
                f"({', '.join(targets)}) and were deselected{why}")
        if self.state.entries:
            from pytest_anatomy.report.terminal import summary_lines

            terminalreporter.write_sep("=", "anatomy reconciliations")
            for line in summary_lines(self.state.ledger(config)):
                terminalreporter.write_line(line)
        if getattr(self, "_report_error", None):
            terminalreporter.write_line(self._report_error, red=True)
        paths = getattr(self, "_report_paths", None)
        if paths:
            terminalreporter.write_sep("-", f"Generated anatomy report: file://{paths[0].resolve()}")
            terminalreporter.write_line(f"ledger: {paths[1]}")
        for line in getattr(self, "_summary_lines", ()):
            terminalreporter.write_line(line)


def _outcome(report: pytest.TestReport) -> str | None:
    if report.when == "call":
        if hasattr(report, "wasxfail"):  # ours (finding, relaxed resolved) or a plain xfail mark's
            verdicts = _verdicts(report)
            if report.skipped:
                return "finding" if "finding" in verdicts else "xfailed"
            return "resolved" if "resolved" in verdicts else "xpassed"
        return "passed" if report.passed else "failed" if report.failed else "skipped"
    if report.failed:
        return "error"
    if report.skipped:
        return "skipped"
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    run_share.unbind(config)
    for name in ("anatomy-html-columns", "anatomy-ledger", "anatomy-option-use"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Suite markers from the directory name, added before `-m` deselects: `-m capacity`
    # selects tests_capacity/.
    for item in items:
        top = item.nodeid.split("/", 1)[0]
        if top.startswith("tests_") and top[len("tests_"):] in SUITES:
            item.add_marker(top[len("tests_"):])
        # Under xdist (--dist loadgroup) every test of the live target runs in one worker: one
        # process measures the GPU, so timings never overlap and each measurement is made once.
        tgt = getattr(getattr(item, "callspec", None), "params", {}).get("target")
        if getattr(tgt, "live", False) and config.pluginmanager.hasplugin("xdist"):
            # (only with xdist installed: its marker is unknown to --strict-markers otherwise)
            item.add_marker(pytest.mark.xdist_group(LIVE_GROUP))
    # A test with no case on this session's targets (the seed's recorded data on a live-only
    # session, say) is not a skipped check: it has nothing to check here. Deselect it and say how
    # many in the summary, instead of one "got empty parameter set" skip line per test.
    empty = [i for i in items if any(str(m.kwargs.get("reason", "")).startswith("got empty parameter set for (target")
                                     for m in i.iter_markers("skip"))]
    if empty:
        config.hook.pytest_deselected(items=empty)
        items[:] = [i for i in items if i not in empty]
        state = get_session(config)
        state.no_case_on_targets = len(empty)
        state.no_case_targets = tuple(sorted({t.name for ts in state._targets.values() for t in ts}))
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller says it (LedgerCollector.pytest_testnodedown)
            workeroutput[NO_CASE_KEY] = [state.no_case_on_targets, list(state.no_case_targets)]


@pytest.hookimpl(trylast=True)  # after the terminal's own collection report: nothing else prints
def pytest_collection_finish(session: pytest.Session) -> None:
    state = get_session(session.config)
    if state.settings.show_plan and not state.is_worker:
        from pytest_anatomy.live_plan import print_plan

        print_plan(session.config, session.items)
        # like --collect-only: the plan is the answer, nothing runs
        session.config.option.collectonly = True


def pytest_sessionstart(session: pytest.Session) -> None:
    state = get_session(session.config)
    source = state.settings.source
    if state.is_worker or source == "recorded":
        return
    if source == "live" and state.live_gpu is None:
        raise pytest.UsageError(f"{SOURCE_OPTION}=live: no GPU detected (NVML found none); run on a GPU machine, "
                                f"or replay the recordings with {SOURCE_OPTION}=recorded")
    if state.live_gpu is None:  # auto without a GPU: every test replays
        return
    numprocesses = session.config.getoption("numprocesses", None)
    if numprocesses and session.config.getoption("dist", "no") != "loadgroup":
        # auto with a GPU measures it live as well: under plain xdist two workers would time the GPU at once
        why = "" if source == "live" else (f" ({SOURCE_OPTION}=auto and a GPU was detected, so the live tests "
                                           f"measure it; {SOURCE_OPTION}=recorded replays only)")
        raise pytest.UsageError(f"live GPU measurements under xdist need --dist loadgroup (every live test is "
                                f"grouped on one worker so one process measures the GPU at a time){why}")
