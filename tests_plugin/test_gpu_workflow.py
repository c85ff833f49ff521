"""The GPU workflow cannot run in CPU CI; it must at least parse, run on a `gpu` runner, and run
README's "On a GPU" commands, so the two cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
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


def _extras() -> dict[str, list[str]]:
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _expanded(names: set[str], extras: dict[str, list[str]]) -> list[str]:
    """Every requirement the extras `names` install, self-references (pytest-anatomy[a,b]) followed."""
    out: list[str] = []
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in extras[name]:
            own = re.fullmatch(r"pytest-anatomy\[([\w,-]+)\]", req)
            if own:
                todo += own.group(1).split(",")
            else:
                out.append(req)
    return out


def _pinned(requirement: str, package: str) -> bool:
    return re.match(rf"{package}\s*[=<>!~]", requirement) is not None


def test_readmes_gpu_install_leaves_torch_and_triton_to_vllm() -> None:
    """vLLM pins its torch (0.26.0: torch==2.11.0, and torch pins its triton); an extra of ours that pins another
    (interp's CPU torch 2.13.0 for the Triton interpreter) makes README's GPU install unresolvable, as `.[gpu,dev]`
    was until 2026-12-05. The CPU set (`dev`) keeps those pins and every test tool the GPU set has."""
    install = _readme_commands()[0]
    wanted = re.fullmatch(r'pip install -e "\.\[([\w,-]+)\]"', install)
    assert wanted, f"README's first GPU command is not an editable install with extras: {install}"
    extras = _extras()
    gpu_set = _expanded(set(wanted.group(1).split(",")), extras)
    assert "vllm" in gpu_set and "hypothesis>=6.100" in gpu_set
    pinned = [r for r in gpu_set for pkg in ("torch", "triton") if _pinned(r, pkg)]
    assert pinned == [], f"README's GPU install pins {pinned}: leave torch and triton to vLLM's own pins"
    cpu_set = _expanded({"dev"}, extras)
    assert set(gpu_set) - {r for r in extras["gpu"]} <= set(cpu_set), "dev lacks a test tool the GPU install has"
    assert any(_pinned(r, "torch") for r in cpu_set), "dev must pin the interpreter's CPU torch (CI pulls no CUDA build)"
