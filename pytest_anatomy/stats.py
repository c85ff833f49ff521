"""Percentiles and medians, once, for measurements, theory and the report alike.

numpy's default ('linear') percentile in pure Python: `vllm bench serve` reports its p50/p90/p99
with numpy, so a recorded percentile and a simulated one are comparable only if both are computed
this way; and the plugin must not import numpy to render a report."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """numpy.percentile(values, p) with its default 'linear' method.

    rank = p/100 * (n - 1); the result interpolates between the two neighbouring order
    statistics. Raises on an empty sequence instead of returning nan, so a silent 0.0 can
    never enter a report."""
    if not values:
        raise ValueError("percentile() of an empty sequence: no samples were recorded")
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile p={p!r} is outside [0, 100]")
    ordered = sorted(values)
    rank = p / 100.0 * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    """The middle value, the mean of the two middle ones for an even count (statistics.median):
    the timings in results/ were summarised this way, so a replay must compute it identically.
    (percentile(values, 50) is the same number up to the last bit of rounding.)"""
    if not values:
        raise ValueError("median() of an empty sequence: no samples were recorded")
    return statistics.median(values)


# A median's noise, for error budgets (issue 10: a tolerance is measured noise plus named terms). Each is a relative
# 2-sigma half-width (about 95%): the median of n repeats has a standard error of ~1.2533 sigma / sqrt(n), and a
# normal's p90 lies 1.2816 sigma above its median (read from the tail, single slow steps do not inflate sigma).
MEDIAN_SE = 1.2533
P90_Z = 1.2816


def sigma_median_scatter(sigma: float, n: float, median_value: float) -> float:
    """2 x the standard error of the median of n values of spread sigma, relative to the median (a negative sigma,
    as a p90 below the median gives, counts as none)."""
    return 2 * MEDIAN_SE * max(sigma, 0.0) / math.sqrt(n) / median_value


def median_scatter(values: Sequence[float]) -> float:
    """2 x the standard error of the median of repeats, relative to it (0 with fewer than 2)."""
    if len(values) < 2:
        return 0.0
    return sigma_median_scatter(statistics.stdev(values), len(values), statistics.median(values))


def tail_median_scatter(p90: float, median_value: float, n: float) -> float:
    """median_scatter from a recorded p90 and median of n independent values (sigma = (p90 - median) / P90_Z)."""
    return sigma_median_scatter((p90 - median_value) / P90_Z, n, median_value)
