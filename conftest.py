"""Fixtures every suite shares. A new tests_<suite>/ folder needs no conftest of its own to use them."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_anatomy.specs.model import ModelSpec, load_model


@pytest.fixture
def card(target: Any) -> Any:
    """The HardwareSpec of this test's target (skips, saying why, when the target has none).
    Taking it parametrizes the test over the session's targets, like taking `target`."""
    return target.require_spec()


@pytest.fixture(scope="session")
def qwen() -> ModelSpec:
    """Qwen2.5-7B-Instruct (catalog config): the seed study's model and the model of every latency
    run so far."""
    return load_model("qwen2.5-7b")
