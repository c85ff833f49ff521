"""The held-out labels follow the commit history: a recording flagged held out is labelled in-sample
exactly when it was committed before the ledger theory (held_out_labels.py)."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path

import capacity_findings as cf
import pytest
from held_out_labels import COMMITTED_BEFORE_THE_THEORY, THEORY_FILE, THEORY_FIRST_COMMIT, THEORY_FIRST_COMMITTED_AT

REPO = Path(__file__).resolve().parents[1]
CAPACITY = REPO / "results" / cf.MEASURED_ON / "capacity"  # the card the relabelled ledgers were recorded on


def _first_commit(path: str) -> tuple[str, datetime] | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "log", "--diff-filter=A", "--format=%h %cI", "--", path],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split("\n") if out.returncode == 0 else []
    lines = [line for line in lines if line.strip()]
    if not lines:
        return None
    sha, when = lines[-1].split(" ", 1)
    return sha, datetime.fromisoformat(when)


def _flagged_held_out() -> dict[str, Path]:
    out = {}
    for path in sorted(CAPACITY.glob("vllm-ledger.*@*.json")):
        if json.loads(path.read_text(encoding="utf-8"))["provenance"].get("held_out"):
            out[path.name.rsplit("@", 1)[0]] = path
    return out


def test_in_sample_labels_are_exactly_the_held_out_recordings_committed_before_the_theory() -> None:
    theory = _first_commit(THEORY_FILE)
    if theory is None:
        pytest.skip("no git history here (an sdist or a shallow clone): the table cannot be checked")
    sha, when = theory
    assert sha.startswith(THEORY_FIRST_COMMIT[:7]) or THEORY_FIRST_COMMIT.startswith(sha[:7])
    assert when == datetime.fromisoformat(THEORY_FIRST_COMMITTED_AT.replace("Z", "+00:00"))
    before = set()
    for name, path in _flagged_held_out().items():
        added = _first_commit(str(path.relative_to(REPO)))
        if added is None:
            pytest.skip(f"{path.name} is not committed yet: commit recordings before labelling them")
        if added[1] < when:
            before.add(name)
    assert before == set(COMMITTED_BEFORE_THE_THEORY)


def test_every_in_sample_name_is_a_recording_flagged_held_out() -> None:
    assert set(COMMITTED_BEFORE_THE_THEORY) <= set(_flagged_held_out())
