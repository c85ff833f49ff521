"""The device-side scripts that have no other CPU test: they must at least parse and plan here,
since the lent GPU's minutes are too scarce to find a syntax error there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import device_scripts
import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", ["x2_visit.sh", "kernels_profile.sh", "live_session.sh"])
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
