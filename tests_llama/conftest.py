"""The llama.cpp suite: what its tests replay (see llama_runs.py for the run names).

Recordings: results/<hw>/llama/<model>.<weights>.<kind>[.<settings>]@<stamp>.json, written by
`pytest-anatomy import-device` from scripts/device/llama_plan.py's batch (kinds: quantize, header,
bench, server-load, server-sweep; the session's ceilings go to results/<hw>/ceilings/). A test is
parametrized over (target, run) for the runs its target holds, so a card without llama.cpp
recordings contributes no test (there is none in a fresh clone until the first H200 visit, and the
suite then collects only its CPU tests). The live path is the device plan itself: llama.cpp is
built on the device machine, not by pytest.
"""

from __future__ import annotations

import pytest
from llama_runs import SUITE, runs_of

from pytest_anatomy import recordings
from pytest_anatomy import session as anatomy_session


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("llama_runs")
    if marker is None or "target" not in metafunc.fixturenames:
        return
    kinds = tuple(marker.args)
    select = marker.kwargs.get("select", lambda run: True)
    findings = marker.kwargs.get("findings")
    targets, results = anatomy_session.of_config(metafunc.config, SUITE)

    def marks(t, r) -> tuple:
        # a finding belongs to the build that measured the run (llama_findings.py): read at collection
        if findings is None:
            return ()
        return tuple(findings(r, recordings.load_latest(results, t.name, SUITE, r.name).provenance))

    params = [pytest.param(t, r, id=f"{t.name}-{r.test_id}", marks=marks(t, r))
              for t in targets if not t.live for r in runs_of(results, t, kinds) if select(r)]
    metafunc.parametrize(["target", "run"], params)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "llama_runs(*kinds, select=None, findings=None): parametrize (target, run) "
                                       "over the recorded llama.cpp runs of these kinds; findings(run, provenance) "
                                       "gives each run's finding marks")


@pytest.fixture
def measured(measured):
    """The plugin's `measured`, then llama_runs.completed: every llama.cpp test (and every recording one reads
    beside its own, e.g. a fit run) skips with the plan's own reason when the device plan skipped that run."""
    from llama_runs import completed

    def get(name: str, **kwargs):
        return completed(measured(name, **kwargs))

    return get


@pytest.fixture(scope="session")
def header_for():
    """header_for(run) -> the predicted GgufHeader of the run's file (llama_runs.header_for)."""
    from llama_runs import header_for as make

    return make
