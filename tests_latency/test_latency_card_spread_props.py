"""latency_card_spread.card_spread as a property: two sample standard deviations of every card but the checked one."""

from __future__ import annotations

import statistics

import latency_card_spread as cs
import pytest

# hypothesis is a dev dependency; the reconciliation report (README's main command) installs only the core
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from hypothesis import given, strategies as st  # noqa: E402


@given(st.lists(st.floats(0.5, 1.5), min_size=0, max_size=12), st.integers(0, 11))
def test_card_spread_is_two_sample_deviations_of_the_others(values, checked):
    ratios = {f"card{i}": {1: v} for i, v in enumerate(values)}
    others = [v for i, v in enumerate(values) if i != checked]
    got = cs.card_spread(ratios, 1, f"card{checked}")
    if len(others) < cs.MIN_CARDS:
        assert got == 0.0
    else:
        assert got == pytest.approx(2 * statistics.stdev(others), abs=1e-12)
