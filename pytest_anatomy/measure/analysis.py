"""Reductions of recorded data to measured quantities (fits, slopes). numpy only.

These turn raw samples into *measured* numbers; they never see a prediction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class LinearFit:
    slope: float
    intercept: float
    r_squared: float
    n: int


def linear_fit(x: Sequence[float], y: Sequence[float]) -> LinearFit:
    """Ordinary least squares y = slope * x + intercept, with R^2."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if xs.shape != ys.shape or xs.size < 2:
        raise ValueError(f"need >= 2 paired points, got x{xs.shape} y{ys.shape}")
    if np.ptp(xs) == 0:
        raise ValueError("all x values are equal; a slope is undefined")
    slope, intercept = np.polyfit(xs, ys, 1)
    resid = ys - (slope * xs + intercept)
    ss_tot = float(np.sum((ys - ys.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    return LinearFit(float(slope), float(intercept), r2, int(xs.size))
