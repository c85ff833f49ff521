"""Live GPU timings seen through pytest-benchmark: the samples the measure layer took (CUDA events)
become the owning test's benchmark, with no re-timing; replays and disabled runs report none."""

from __future__ import annotations

import json

import pytest

FAKE_GPU = """
    import pytest
    from pytest_anatomy.specs import hardware
    class FakeGPU:
        name = "NVIDIA H200"; catalog_name = "h200"
        def to_dict(self): return {"name": self.name}
    def pytest_configure(config):
        hardware.detect = lambda *a, **k: FakeGPU()
"""
TEST = """
    SAMPLES = [0.0010, 0.0012, 0.0011, 0.0013]
    def test_rung(target, measured, anatomy_benchmark):
        rec = measured("sgemm.s1.x", live=lambda: {"measurements": {"time": {
            "value": 0.00115, "unit": "s", "samples": SAMPLES}}})
        tool = anatomy_benchmark(rec, "time")
        assert ("pytest-benchmark" in tool) == (rec.source == "live")
"""


def test_private_api_the_bridge_relies_on_exists() -> None:
    from pytest_benchmark.fixture import BenchmarkFixture

    assert callable(getattr(BenchmarkFixture, "_make_stats", None))


def test_live_samples_become_the_benchmark(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # Under `pytest -n`, this variable reaches the inner session, where pytest-benchmark reads it as
    # "I am an xdist worker" and disables itself.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(FAKE_GPU)
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--anatomy-source=live",
                                           "--benchmark-json=bench.json", "-o", "anatomy_results_dir=results")
    result.assert_outcomes(passed=1)
    bench = json.loads((pytester.path / "bench.json").read_text())["benchmarks"]
    assert len(bench) == 1 and bench[0]["stats"]["data"] == [0.0010, 0.0012, 0.0011, 0.0013]
    assert bench[0]["stats"]["rounds"] == 4 and bench[0]["extra_info"]["anatomy_timing"] == "sgemm.s1.x.time"


def test_disabled_benchmark_keeps_the_timing_and_says_so(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_GPU)
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--anatomy-source=live", "--benchmark-disable",
                                           "--anatomy-report=r.html")
    result.assert_outcomes(passed=1)
    env = json.loads((pytester.path / "r.json").read_text())["environment"]
    assert "disabled" in env["timing_tools"]["sgemm.s1.x.time"]
