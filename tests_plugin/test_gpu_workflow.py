"""The GPU workflow cannot run in CPU CI; it must at least parse, run on a `gpu` runner, and run
README's "On a GPU" commands, so the two cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("<!-- gpu-commands -->", 1)[1].split("<!-- /gpu-commands -->", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("```")]


def _workflow_commands(workflow: dict) -> list[str]:
    out = []
    for step in workflow["jobs"]["live"]["steps"]:
        run = step.get("run")
        if run:
            for part in re.split(r"\s*&&\s*", " ".join(run.split())):
                if part.startswith(("pip ", "pytest ")):
                    out.append(part)
    return out


def test_workflow_parses_and_targets_a_gpu_runner() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "gpu.yml").read_text())
    job = workflow["jobs"]["live"]
    assert "gpu" in job["runs-on"] and "self-hosted" in job["runs-on"]
    uploaded = job["steps"][-1]["with"]["path"]
    for artifact in ("anatomy-report.html", "anatomy-report.json", "results/", "benchmark.json"):
        assert artifact in uploaded


def test_workflow_runs_readmes_gpu_commands() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "gpu.yml").read_text())
    assert _workflow_commands(workflow) == _readme_commands()
