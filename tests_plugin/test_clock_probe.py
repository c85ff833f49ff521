"""The on-GPU SM clock probe's host side: cycles and nanoseconds per SM to MHz, and every way it can fail
without stopping a timing (the kernel itself runs only on a GPU: `pytest -m gpu` records its readings)."""

from __future__ import annotations

import pytest

from pytest_anatomy.measure import clock_probe as cp


def test_reading_is_the_median_over_sms_in_mhz() -> None:
    # three SMs: 200,000 cycles in 113.77 us (1,758 MHz), 112.0 us (1,786 MHz), 101.0 us (1,980 MHz)
    r = cp.reading_from_counts([200_000, 113_766, 200_000, 111_982, 200_000, 101_010])
    assert r.sm_mhz == pytest.approx(1786.0, abs=0.1) and r.blocks == 3 and r.error is None
    assert (r.sm_mhz_min, r.sm_mhz_max) == pytest.approx((1758.0, 1980.0), abs=0.1)


def test_a_block_whose_timer_did_not_advance_is_left_out() -> None:
    assert cp.reading_from_counts([200_000, 0, 200_000, 101_010]).blocks == 1
    r = cp.reading_from_counts([200_000, 0])
    assert r.sm_mhz is None and r.error is not None


def test_no_gpu_gives_an_error_reading_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> cp.SmClockProbe:
        raise RuntimeError("no CUDA device\nsecond line")

    monkeypatch.setattr(cp, "SmClockProbe", broken)
    cp.shared_probe.cache_clear()
    try:
        enqueued = cp.enqueue_probe()
        assert enqueued == "RuntimeError: no CUDA device"
        assert cp.read_probe(enqueued) == {"sm_mhz": None, "sm_mhz_min": None, "sm_mhz_max": None, "blocks": 0,
                                           "error": "RuntimeError: no CUDA device"}
    finally:
        cp.shared_probe.cache_clear()


def test_a_failing_read_is_reported() -> None:
    class Failing:
        def read(self) -> cp.ProbeReading:
            raise ValueError("illegal address")

    assert cp.read_probe(Failing())["error"] == "ValueError: illegal address"  # type: ignore[arg-type]


def test_the_spin_is_long_against_the_timer_and_short_against_a_clock_change() -> None:
    """~0.1 ms at 2 GHz: a 1 us timer granularity is <= 1% of it, and NVIDIA's clock changes take milliseconds."""
    assert 1e-4 <= cp.SPIN_CYCLES / 1.98e9 * 1.0 <= 2.5e-4
    assert "%globaltimer" in cp.SOURCE and "clock64()" in cp.SOURCE
