import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated_subprocess_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytester runs must not append their tables to a real CI job's step summary, and a
    subprocess run must import this checkout's plugin (not another one the venv installed)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the report of every suite in the background as soon as this run is known to check it
    (test_report_browser.start_full_report): it then overlaps the rest of the suite."""
    if session.config.getoption("--report-page"):
        return  # the page is given: nothing to build
    if session.config.option.collectonly:
        return  # nothing will run: a --collect-only listing must not start (and wait ~4 minutes on) the build
    if any(item.nodeid.startswith("tests_plugin/test_report_browser.py::") for item in session.items):
        from test_report_browser import start_full_report

        start_full_report(session.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if "test_report_browser" in sys.modules:  # this process collected (and maybe started) the background build
        from test_report_browser import wait_for_background

        wait_for_background()
