"""sequence_cost.StepsWithSequenceCost as a property (hypothesis: in dev, not in the core README's main command
installs, so this module skips there)."""

from __future__ import annotations

from dataclasses import fields

import pytest

pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sequence_cost import StepsWithSequenceCost

from pytest_anatomy.theory import latency as lat


@settings(max_examples=60, deadline=None)
@given(decodes=st.integers(0, 256), context=st.floats(1, 40_000), chunks=st.lists(st.tuples(st.integers(1, 8192),
       st.integers(0, 32_000)), max_size=3), extra_s=st.floats(0, 1e-4))
def test_the_cost_is_added_once_per_sequence_beyond_the_first(qwen, decodes, context, chunks, extra_s):
    """StepsWithSequenceCost is the step model plus extra_s x (sequences - 1): the first is in t_overhead (fitted at
    b = 1), a step of one sequence is unchanged, and nothing else moves."""
    assume(decodes + len(chunks) > 0)
    base = lat.StepModel.build(qwen, lat.Ceilings("h", 4.4e12, 9.0e14, "test", "test"), lat.EngineCalibration("t", step_overhead_s=1e-3))
    with_cost = StepsWithSequenceCost(**{f.name: getattr(base, f.name) for f in fields(base)}, extra_s=extra_s)
    prefill = tuple(chunks)
    plain = base.seconds(decodes, decodes * context, prefill)
    assert with_cost.seconds(decodes, decodes * context, prefill) == pytest.approx(
        plain + extra_s * (decodes + len(prefill) - 1), rel=1e-12, abs=1e-15)
