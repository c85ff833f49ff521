"""Published measurements have no live path: the suite's cases are paired with replay targets only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sweeps import replay_targets

from pytest_anatomy import session as anatomy_session
from pytest_anatomy import targets as tg


def test_a_live_target_gets_no_third_party_case(monkeypatch: pytest.MonkeyPatch) -> None:
    live, recorded = tg.Target("h100-sxm", True), tg.Target("h100-sxm", False)
    seen: list[str] = []

    def of_config(config: Any, suite: str) -> tuple[list[tg.Target], Path]:
        seen.append(suite)
        return [live, recorded], Path("results")
    monkeypatch.setattr(anatomy_session, "of_config", of_config)
    assert replay_targets(object(), "aiconfigurator") == ([recorded], Path("results"))
    assert seen == ["third-party/aiconfigurator"]  # targets are the card folders holding that source
