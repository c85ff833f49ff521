"""Fixtures for the kernel ladders: the seed's SGEMM recordings by name."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def seed_row(measured: Any, target: Any):
    """seed_row(kernel, size=4096, shape='square') -> the seed's SGEMM recording for that row."""
    def get(kernel: str, size: int = 4096, shape: str = "square") -> Any:
        return measured(f"seed-sgemm.{shape}.{size}x{size}x{size}.{kernel}", target=target)
    return get


def pytest_anatomy_live_plan(config: pytest.Config, items: list[pytest.Item]) -> list[dict]:
    """Every rung the selected kernel tests read, timed once (compile + correctness + 4 timing
    blocks: ~0.5-8 s a rung on the H200, 22 s for the 28 rungs of the 2026-12-01 live session), and the
    session's ceilings."""
    rungs = set()
    for item in items:
        params = getattr(item, "callspec", None) and item.callspec.params
        if params and "tests_kernels" in item.nodeid and params.get("v") is not None:
            rungs.add((params["v"].ladder, params["v"].id))
    if not rungs:
        return []
    return [{"suite": "kernels", "what": f"{len(rungs)} rungs timed once each, and the read/copy ceilings",
             # 22 s for 28 rungs in the 2026-12-01 06:38 live session (the ceilings, then each rung's
             # correctness check and two timing blocks)
             "estimate_s": 2.0 + 0.75 * len(rungs)}]
