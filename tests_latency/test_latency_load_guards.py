"""Guards of test_latency_load's bands: the carried bands recomputed from the recordings (moved here to keep
test_latency_load.py within its size limit). The runs once left on the 10% goal are on their budget since 2026-12-05,
their misses findings (latency_budget_findings)."""

from __future__ import annotations

import latency_findings as lf
import pytest
from latency_findings_common import MEASURED_ON
from test_latency_load import load_ratio


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.closed.", live=False, hardware=MEASURED_ON)
def test_carried_bands_are_the_recorded_ones(request, qwen, session_rec, target, setup_builders):
    """latency_findings.CARRIED (the earlier sessions' ratios and scatters, eta fitted on the 8,192 prefill)
    recomputed from the recordings: every recorded run before the first with GEMM timings (FIRST_WITH_GEMM_TIMINGS)."""
    from pytest_anatomy import recordings
    from pytest_anatomy.session import get_session

    build_engine_setup, _ = setup_builders
    results = get_session(request.config).settings.results_dir
    for key, carried in lf.CARRIED.items():
        run, quantity = key.split(":")
        earlier = []
        for path in recordings.candidates(results, target.name, "latency", f"qwen2.5-7b.{run}"):
            rec = recordings.load_file(path)
            if rec.recorded_at < lf.FIRST_WITH_GEMM_TIMINGS:
                fitted = build_engine_setup(qwen, session_rec, target, beside=rec, eta_from_gemms=False)
                earlier.append(load_ratio(fitted, rec, quantity))
        got = tuple(x for pair in earlier for x in pair)
        want = tuple(x for pair in carried.earlier for x in pair)
        assert got == pytest.approx(want, abs=5e-5), key
