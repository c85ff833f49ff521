"""Workload definitions shared by measurement and theory.

The load driver (measure) sends requests at these offsets and the serving simulator (theory)
replays them: one implementation, so a seeded open-loop run and its simulation see the very
same arrival times."""

from __future__ import annotations

import math
import random


def poisson_arrivals(rate: float, n: int, seed: int, *, normalize: bool = False) -> list[float]:
    """Send offsets (seconds from the start) of n requests of a Poisson process of `rate`/s.

    Exponential gaps with mean 1/rate; the first request also waits one gap, as in
    `vllm bench serve`. normalize=True rescales so the last offset is exactly n/rate, which
    is what `vllm bench serve` does (get_request, ramp_up_strategy=None) to make runs with
    different seeds send over the same span."""
    if not rate > 0 or math.isinf(rate):
        raise ValueError(f"Poisson rate must be a positive finite number of requests/s, got {rate!r}")
    if n < 1:
        raise ValueError(f"Poisson arrivals need n >= 1 requests, got {n!r}")
    rng = random.Random(seed)
    offsets: list[float] = []
    t = 0.0
    for _ in range(n):
        t += rng.expovariate(rate)
        offsets.append(t)
    if normalize:
        scale = (n / rate) / offsets[-1]
        offsets = [o * scale for o in offsets]
    return offsets
