"""Fixtures for the kernel ladders: the seed's card, recordings by name, the H200 facts."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_anatomy.specs.hardware import HardwareSpec, get_hardware


@pytest.fixture(scope="session")
def rtx4090() -> HardwareSpec:
    """The seed study's card (stage 02 ran on it)."""
    return get_hardware("rtx4090")


@pytest.fixture(scope="session")
def h200() -> HardwareSpec:
    return get_hardware("h200")


@pytest.fixture
def seed_row(measured: Any):
    """seed_row(kernel, size=4096, shape='square') -> the seed's SGEMM recording for that row."""
    def get(kernel: str, size: int = 4096, shape: str = "square") -> Any:
        return measured(f"seed-sgemm.{shape}.{size}x{size}x{size}.{kernel}", hardware="rtx4090")
    return get
