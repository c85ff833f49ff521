"""The partial-last-wave model's arithmetic (theory.decode_waves), by property (hypothesis: a dev dependency, so this
module skips without it)."""

from __future__ import annotations

from dataclasses import replace

import flashattn_waves as fw
import pytest

from pytest_anatomy.theory import decode_waves as dw

pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(tail=st.integers(1, 263), rate=st.floats(20e9, 200e9), stream=st.floats(1e12, 5e12),
       chunk=st.integers(1, 1024))
def test_the_fitted_rate_reproduces_the_excess_it_was_fitted_on(tail: int, rate: float, stream: float,
                                                                chunk: int) -> None:
    d = replace(fw.shape(), batch=1, kv_heads=1, heads=1, context=chunk * 64 * tail)
    g = dw.DecodeGrid(d, tail, chunk * 64, 10_000)  # `tail` programs, all in one partial wave
    excess = dw.excess_s(g, stream, rate)
    if tail >= dw.saturating_tail(stream, rate):
        assert excess == 0
    else:
        assert dw.program_rate(g, excess, stream) == pytest.approx(rate, rel=1e-9)


@given(t1=st.integers(1, 263), t2=st.integers(1, 263))
def test_a_smaller_tail_of_the_same_chunks_never_costs_less(t1: int, t2: int) -> None:
    d = fw.shape()
    lo, hi = sorted((t1, t2))
    g_lo, g_hi = (replace(dw.grid(d, 16, 64, 1024 - t), slots=1024 - t) for t in (lo, hi))  # 16 splits, 1024 programs
    assert dw.excess_s(g_lo, 3.2e12, 55e9) >= dw.excess_s(g_hi, 3.2e12, 55e9)
