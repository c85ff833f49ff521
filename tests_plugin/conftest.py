import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _no_github_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytester runs must not append their tables to a real CI job's step summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
