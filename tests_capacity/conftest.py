"""Prediction fixtures for the capacity suite: the seed's model and card, and its settings."""

from __future__ import annotations

import pytest

from pytest_anatomy.specs.hardware import HardwareSpec, get_hardware
from pytest_anatomy.specs.model import ModelSpec, load_model


@pytest.fixture(scope="session")
def seed_model() -> ModelSpec:
    """Qwen2.5-7B-Instruct, the seed study's model (catalog config)."""
    return load_model("Qwen/Qwen2.5-7B-Instruct")


@pytest.fixture(scope="session")
def rtx4090() -> HardwareSpec:
    """The seed study's card."""
    return get_hardware("rtx4090")
