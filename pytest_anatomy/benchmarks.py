"""Live GPU timings seen through pytest-benchmark: one measurement, two views.

The GPU is timed by the measure layer (CUDA events, warm-up, an L2 flush before each run, rounds
chosen per measurement: see measure/kernel_runner.py), because pytest-benchmark's own timer is a
CPU clock and its calibration picks rounds for CPU code. The `anatomy_benchmark` fixture then
hands those very samples to pytest-benchmark as this test's benchmark, so `--benchmark-autosave`,
`--benchmark-json`, `--benchmark-compare` and `pytest-benchmark compare` work on GPU runs as
they do on CPU code, while the recording keeps the same numbers with their provenance.

Only the test that owns a timing reports it (each rung's `test_rung_is_correct_and_timed_twice`,
for instance), so a saved run names each timing once and the same way every time. Replayed
timings are not benchmarks of this machine and are never reported. When pytest-benchmark is not
installed, or is disabled (`--benchmark-disable`, or by itself under xdist), the timing is still
taken and reconciled; the report's environment (`timing_tools`) says which tool saw each one.

pytest-benchmark has no public call for adding externally measured rounds; this uses its
`BenchmarkFixture._make_stats` (present from 4.0 through 5.x), and tests_plugin checks it still
exists, so an upgrade that removes it fails CI instead of silently dropping timings.
"""

from __future__ import annotations

from typing import Any, Sequence

import pytest

from pytest_anatomy.session import get_session

CUDA_EVENTS = "CUDA events (measure layer)"


class AnatomyBenchmark:
    """Callable behind `anatomy_benchmark`: report a live recording's timing samples."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self.reported: list[str] = []

    def __call__(self, recording: Any, quantity: str = "time") -> str:
        """Report `recording[quantity]`'s samples (seconds) as this test's benchmark; returns the
        tool that saw the timing (also written to the report's environment)."""
        m = recording[quantity]
        if m.unit != "s":
            raise ValueError(f"{recording.name}.{quantity} is in {m.unit!r}; a benchmark reports seconds")
        return self.seconds(f"{recording.name}.{quantity}", m.samples or (m.value,), live=m.source == "live",
                            extra={"recording": str(m.provenance.get("recording", "")),
                                   "timing": str(m.provenance.get("timing", CUDA_EVENTS))})

    def seconds(self, name: str, samples: Sequence[float], *, live: bool = True,
                extra: dict[str, Any] | None = None) -> str:
        session = get_session(self._request.config)
        if not live:
            return "replayed (not a benchmark of this machine)"
        tool = CUDA_EVENTS
        plugin = self._request.config.pluginmanager.getplugin("pytest-benchmark")
        if plugin is None:
            tool += "; pytest-benchmark not installed"
        else:
            fixture = self._request.getfixturevalue("benchmark")
            if self.reported:
                raise RuntimeError(f"{self._request.node.nodeid} already reported {self.reported[0]}: pytest-benchmark "
                                   "keeps one result per test, so one timing per test")
            if fixture.disabled:
                # Mark the fixture used, or pytest-benchmark warns "not used at all" at teardown.
                fixture._mode = "anatomy_benchmark (disabled)"
                tool += "; pytest-benchmark disabled (--benchmark-disable, or xdist)"
            else:
                stats = fixture._make_stats(1)
                for s in samples:
                    stats.update(float(s))
                fixture._mode = "anatomy_benchmark (CUDA-event samples)"
                fixture.extra_info.update({"anatomy_timing": name, **(extra or {})})
                tool += " -> pytest-benchmark"
        session.timing_tools[name] = tool
        self.reported.append(name)
        return tool


@pytest.fixture
def anatomy_benchmark(request: pytest.FixtureRequest) -> AnatomyBenchmark:
    """Report a live GPU timing (its CUDA-event samples) to pytest-benchmark as this test's benchmark.

    Example::

        def test_rung_timed(target, measured, anatomy_benchmark):
            rec = measured("sgemm.s5.4096x4096x4096", live=time_rung)
            anatomy_benchmark(rec, "time")
    """
    return AnatomyBenchmark(request)
