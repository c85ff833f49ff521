"""The device-side scripts that have no other CPU test: they must at least parse and plan here,
since the lent GPU's minutes are too scarce to find a syntax error there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import device_scripts
import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", ["x2_visit.sh", "kernels_profile.sh", "live_session.sh", "slim_tree.sh", "stage_split.sh"])
def test_shell_scripts_parse(script: str) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    done = subprocess.run([bash, "-n", str(REPO / "scripts" / "device" / script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_profile_plan_maps_every_rung_to_a_marker(capsys: pytest.CaptureFixture[str]) -> None:
    profile = device_scripts.load("kernels_profile")
    launches = profile.plan()
    assert profile.main(["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(launches) and [int(line.split()[0]) for line in lines] == list(range(1, len(lines) + 1))
    assert any("softmax" in line and "128x152064" in line for line in lines)
    assert not any("x3-registers" in line and "128x152064" in line for line in lines)  # refused rungs are skipped


def test_stage_split_round_trip(tmp_path: Path) -> None:
    """A folder split into parts, staged part by part and joined comes back byte for byte; a missing part is an
    error that names it, not a damaged unpack (the device runs this between calls it cannot repeat cheaply)."""
    bash = shutil.which("bash")
    if bash is None or shutil.which("sha256sum") is None:
        pytest.skip("no bash/coreutils here")
    repo = tmp_path / "repo"
    (repo / "scripts" / "device").mkdir(parents=True)
    (repo / ".git" / "info").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "device" / "stage_split.sh", repo / "scripts" / "device")
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    payload = bytes(range(256)) * 12_000  # 3 MB: three parts of 1 MiB
    (src / "a.bin").write_bytes(payload)
    (src / "sub" / "b.txt").write_text("b\n")
    script = ["bash", "scripts/device/stage_split.sh"]

    def run(*args: str, stage: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*script, *args], cwd=repo, capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "STAGE": str(stage)})

    done = run("split", "t", str(src), "1", stage=tmp_path / "stage")
    assert done.returncode == 0, done.stderr
    parts = sorted((repo / ".devstage" / "t").iterdir())
    assert [p.name for p in parts] == ["p00", "p01", "p02"]
    for p in parts:
        assert run("put", "t", str(p), stage=tmp_path / "stage").returncode == 0
    done = run("join", "t", str(tmp_path / "dest"), stage=tmp_path / "stage")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "dest" / "a.bin").read_bytes() == payload and (tmp_path / "dest" / "sub" / "b.txt").read_text() == "b\n"
    # a part never staged: the checksum names the problem
    for p in parts[1:]:
        assert run("put", "t", str(p), stage=tmp_path / "stage2").returncode == 0
    done = run("join", "t", str(tmp_path / "dest2"), stage=tmp_path / "stage2")
    assert done.returncode == 4 and "missing or damaged" in done.stderr
