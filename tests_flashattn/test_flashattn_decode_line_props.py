"""The flash-decoding line's arithmetic, by property (hypothesis: a dev dependency, so this module skips without it)."""

from __future__ import annotations

import flashattn_decode_line as dl
import pytest

pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(fixed=st.floats(1e-6, 1e-4), rate=st.floats(1e12, 1e13), kv=st.floats(1e6, 1e10))
def test_the_line_through_two_points_of_a_line_is_that_line(fixed: float, rate: float, kv: float) -> None:
    lo, hi = dl.kv_bytes(8192), dl.kv_bytes(65536)
    line = dl.Line.through((lo, fixed + lo / rate), (hi, fixed + hi / rate))
    assert line.fixed_s == pytest.approx(fixed, rel=1e-6, abs=1e-12)
    assert line.bytes_per_s == pytest.approx(rate, rel=1e-9)
    w_lo, w_hi = dl.weights(kv, lo, hi)
    assert w_lo + w_hi == pytest.approx(1.0)
    assert w_lo * (fixed + lo / rate) + w_hi * (fixed + hi / rate) == pytest.approx(line.time(kv), rel=1e-9)
