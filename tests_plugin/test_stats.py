"""Percentiles and medians are computed in one place (pytest_anatomy/stats.py), the way the
recordings were summarised: numpy's linear percentile, statistics.median."""

from __future__ import annotations

import ast
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from pytest_anatomy import stats

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_anatomy"


@pytest.mark.parametrize("values", [[3.0], [1.0, 4.0], [5.0, 1.0, 2.5, 9.0, 7.25], list(range(101))])
def test_percentile_is_numpys_linear_and_median_is_the_standard_librarys(values: list[float]) -> None:
    for p in (0, 10, 50, 90, 99, 100):
        assert stats.percentile(values, p) == pytest.approx(float(np.percentile(values, p)), rel=1e-12)
    assert stats.median(values) == statistics.median(values)


def test_no_samples_is_an_error_not_a_number() -> None:
    with pytest.raises(ValueError, match="no samples"):
        stats.percentile([], 50)
    with pytest.raises(ValueError, match="no samples"):
        stats.median([])


def test_no_other_module_defines_its_own_percentile_or_median() -> None:
    """A second copy is how two percentiles of the same samples come to differ."""
    own = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "stats.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and ("percentile" in node.name or "median" in node.name):
                own.append(f"{path.relative_to(PACKAGE)}: {node.name}")
            if isinstance(node, ast.Import) and any(a.name == "statistics" for a in node.names):
                own.append(f"{path.relative_to(PACKAGE)}: imports statistics")
    assert not own, own


def test_median_scatter_is_twice_the_medians_standard_error_relative() -> None:
    """2 x 1.2533 sigma / sqrt(n) over the median (4 repeats around 10); a lone value has no scatter."""
    from pytest_anatomy.stats import median_scatter, tail_median_scatter

    values = [9.0, 10.0 - 1 / 3, 10.0 + 1 / 3, 11.0]  # stdev = sqrt((1 + 1/9 + 1/9 + 1) / 3)
    expected = 2 * 1.2533 * math.sqrt((2 + 2 / 9) / 3) / 2 / 10.0
    assert median_scatter(values) == pytest.approx(expected) and median_scatter([5.0]) == 0.0
    # from the tail: p90 one P90_Z sigma above the median, sigma 1, 100 values around 10 -> 2 x 1.2533 / 10 / 10
    assert tail_median_scatter(10.0 + 1.2816, 10.0, 100) == pytest.approx(0.025066)
    assert tail_median_scatter(9.0, 10.0, 100) == 0.0  # a p90 below the median is no negative noise
