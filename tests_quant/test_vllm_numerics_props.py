"""The e4m3 rounding of measure/vllm_quant_numerics.py as a property (tests_quant/test_vllm_quality.py has the named
values and the rest of vLLM's arithmetic)."""

from __future__ import annotations

import math

import numpy as np
import pytest

# hypothesis is a dev dependency; the reconciliation report (README's main command) installs only the core
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pytest_anatomy.measure import vllm_quant_numerics as vqn  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=-600, max_value=600, allow_nan=False, width=32))
def test_e4m3_rounding_lands_on_the_grid_within_half_a_step(v):
    r = float(vqn.e4m3_round(np.array([v], np.float32))[0])
    a = min(abs(v), vqn.E4M3_MAX)
    step = 2.0 ** max(math.frexp(a)[1] - 4, -9) if a > 0 else 2.0 ** -9
    assert abs(r) <= vqn.E4M3_MAX
    assert (abs(r) / step).is_integer() or abs(r) == vqn.E4M3_MAX  # a grid value (448 = 14 x 32)
    assert abs(r - math.copysign(a, v)) <= step / 2 + 1e-12
