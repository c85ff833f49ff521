import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated_subprocess_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytester runs must not append their tables to a real CI job's step summary, and a
    subprocess run must import this checkout's plugin (not another one the venv installed)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])))
