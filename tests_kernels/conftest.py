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
