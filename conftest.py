"""Fixtures every suite shares. A new tests_<suite>/ folder needs no conftest of its own to use them."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

import pytest

from pytest_anatomy.specs.model import ModelSpec, load_model


def share_bytecode() -> None:
    """With PYTHONDONTWRITEBYTECODE set (as on our CI machines), every Python process this suite starts (the xdist
    workers, the report build, the mutation replays, the plugin's subprocess runs: ~40) compiled the package and
    rewrote the test modules' asserts anew, ~1.5 s each (a small replay: 3.0 s -> 1.5 s, 2026-12-03). Its processes
    share one bytecode cache instead, outside the source tree (PYTHONPYCACHEPREFIX under the temp folder), so the
    tree stays as free of .pyc files as the setting asks. A prefix the user set is kept."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    prefix = os.path.join(tempfile.gettempdir(), f"pytest-anatomy-pycache-{getattr(os, 'getuid', lambda: 0)()}")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = prefix  # inherited by every process started from here on
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False


share_bytecode()

# glibc malloc, for the processes this suite starts (xdist workers, replays, sub-sessions; read at their start, so not
# this one's): numpy's temporaries of a few MiB (a forward's activations, a requantized tensor) were mmapped and unmapped
# afresh each time under the default's adaptive threshold, and the heap trimmed back to the OS after each large free,
# so every reuse page-faulted the memory in again. A fixed 32 MiB threshold (glibc's largest on 64-bit) keeps them in
# the heap, and a high trim threshold and top pad keep that heap. Setting any one alone turns the adaptive threshold
# off and is slower. The quality slice's five forwards alone, 2026-12-06 on 2 cores: 23.4 s user + 5.9 s sys (29.2 s)
# -> 22.0 s user + 1.5 s sys (23.5 s), the same bits; peak RSS 1.46 -> 1.60 GB. Values the user set are kept.
MALLOC_TUNING = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(512 << 20),
                 "MALLOC_TOP_PAD_": str(64 << 20)}
if not any(name in os.environ for name in MALLOC_TUNING):
    os.environ.update(MALLOC_TUNING)


def blas_as_preregistered() -> None:
    """The quant suite's fp8 pre-registration holds bit for bit under OpenBLAS's Haswell sgemm only
    (tests_quant/vllm_quality_slice.py: its roundings make the slice's KLD a function of the summation order). Where
    OpenBLAS picks another kernel (SkylakeX on an AVX-512 CPU, as on our CI hosts), test_the_fp8_preregistration_
    still_follows_from_the_theory recomputed the reference and the fp8 forward in a child forced to Haswell, ~12 s of
    CPU, beside the same two forwards under the host's kernel for the other checks. The processes this suite starts
    (read when OpenBLAS loads, so not this one's) run the Haswell kernel from the start instead, where the CPU can
    (AVX2 and FMA3; it is OpenBLAS's own choice on Haswell-class and Zen CPUs): the check then runs in the worker on
    the forward the other checks share, the same assertion. tests_quant at -n 2, cold, 2026-12-06: 61.4 u + 11.3 s
    sys -> 51.2 u + 8.8 s sys, the same outcomes. A kernel the user forces is kept."""
    from pytest_anatomy.host_facts import runs_openblas_haswell

    if "OPENBLAS_CORETYPE" not in os.environ and runs_openblas_haswell():
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"


blas_as_preregistered()


def pytest_configure(config: pytest.Config) -> None:
    """Every suite needs the anatomy plugin (its fixtures, and the hook the suites' conftests answer): without it
    (`-p no:anatomy`, or PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 with no `-p pytest_anatomy.plugin`) collection ended in
    an INTERNALERROR traceback about an unknown hook. One line instead."""
    import pytest_anatomy.plugin

    if not config.pluginmanager.is_registered(pytest_anatomy.plugin):
        raise pytest.UsageError("these suites need the pytest-anatomy plugin, which is not loaded: drop "
                                "`-p no:anatomy` (with PYTEST_DISABLE_PLUGIN_AUTOLOAD set, add `-p anatomy`)")


def pytest_addoption(parser: pytest.Parser) -> None:
    # Here, not in tests_plugin/conftest.py: a run naming only other paths must still accept it
    parser.addoption("--report-page", default=None, metavar="PAGE.html",
                     help="the report page (its .json ledger beside it) that tests_plugin/test_report_browser.py "
                          "checks, instead of building the report of every suite in the background: README's test "
                          "command passes the page its first run wrote with --anatomy-report")


@pytest.fixture
def card(target: Any) -> Any:
    """The HardwareSpec of this test's target (skips, saying why, when the target has none).
    Taking it parametrizes the test over the session's targets, like taking `target`."""
    return target.require_spec()


@pytest.fixture(scope="session")
def qwen() -> ModelSpec:
    """Qwen2.5-7B-Instruct (catalog config): the seed study's model and the model of every latency
    run so far."""
    return load_model("qwen2.5-7b")


# The CPU suite's long chains start first, so that `pytest -n auto` overlaps them with everything else instead of
# running them as a tail on one worker (measured 2026-12-01 on 2 cores: 310-330 s in collection order, the last
# ~90 s on these alone). The report-browser tests go last: they read the report of every suite, which starts building
# in the background when collection ends (tests_plugin/conftest.py) and is done by then. The quality slice goes first
# of all: its forwards are computed once per run by whichever process needs them first (tests_quant/quality_slice.once),
# and that should be a worker at the start, not the background build, whose ~2 minutes the report tests wait for.
LONG_FIRST = ("tests_quant/test_quality_slice.py", "tests_plugin/test_mutations.py")
LAST = ("tests_plugin/test_report_browser.py",)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        if path in LAST:
            return len(LONG_FIRST) + 1
        return LONG_FIRST.index(path) if path in LONG_FIRST else len(LONG_FIRST)

    items.sort(key=rank)  # stable: the order within each rank is collection's


# What hypothesis's plugin writes into a report (its statistics, a failing example's patch): a run with one of them
# needs the plugin's summary even where this process never imported hypothesis (an xdist controller, whose workers ran
# the property tests)
_HYPOTHESIS_REPORT_KEYS = ("_hypothesis_stats", "_hypothesis_failing_examples")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Hypothesis's pytest plugin imports hypothesis.internal.observability in its terminal summary, which imports all
    of hypothesis (~0.2 s) in every process, also one that ran no property test: each pytest this suite starts on a
    selection without one (the nine fake-GPU runs of tests_flashattn/test_flashattn_gpu_paths.py, the mutation
    catalogue's replays). Where hypothesis was never imported, no report carries what its tests add and no statistics
    were asked for, that summary has nothing to write, so the plugin is unregistered before it would run: the terminal
    reporter calls pytest_terminal_summary after every pytest_sessionfinish implementation."""
    config = session.config
    plugin = config.pluginmanager.get_plugin("hypothesispytest")
    if plugin is None or "hypothesis" in sys.modules or config.getoption("hypothesis_show_statistics", False):
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    reports = [r for rs in (getattr(reporter, "stats", None) or {}).values() for r in rs]
    if not any(k in getattr(r, "__dict__", {}) for r in reports for k in _HYPOTHESIS_REPORT_KEYS):
        config.pluginmanager.unregister(plugin)
