"""Command-line options and ini keys, and the session settings parsed from them.

Few flags (the rest are ini keys), each validated with a message that quotes the bad value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCES = ("auto", "live", "recorded")


@dataclass(frozen=True)
class AnatomySettings:
    source: str  # auto | live | recorded
    hardware: str  # auto | catalog name
    model: str  # catalog name, HF id or path to config.json
    record: bool
    strict_findings: bool
    report: Path | None
    results_dir: Path
    replay_hardware: str


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("anatomy", "pytest-anatomy: predict, measure, reconcile")
    group.addoption(
        "--anatomy-source", choices=SOURCES, default=None,
        help="where measurements come from: live (this machine's GPU), recorded (results/ files), "
             "auto (live when a GPU is present, else recorded). Default: ini anatomy_source or auto.",
    )
    group.addoption(
        "--anatomy-hardware", default=None, metavar="NAME",
        help="hardware spec for predictions: auto (detect the live GPU) or a catalog name "
             "(rtx4090, h100-sxm, h100-pcie, h200, a100-80gb, a100-40gb, l40s, b200, b300, gb200). Default: ini anatomy_hardware or auto.",
    )
    group.addoption(
        "--anatomy-model", default=None, metavar="NAME_OR_CONFIG",
        help="model for the model_spec fixture: catalog name (qwen2.5-7b), Hugging Face id or path to a "
             "config.json. Default: ini anatomy_model or qwen2.5-7b.",
    )
    group.addoption(
        "--anatomy-record", action="store_true", default=False,
        help="write live measurements into results/<hardware>/<suite>/ (never overwrites; newer supersedes).",
    )
    group.addoption(
        "--anatomy-strict-findings", action="store_true", default=False,
        help="fail tests whose finding mark no longer applies (the divergence is resolved).",
    )
    group.addoption(
        "--anatomy-report", default=None, metavar="PATH",
        help="write the self-contained HTML reconciliation report to PATH and its JSON ledger beside it "
             "(PATH with .json suffix).",
    )
    parser.addini("anatomy_source", "default for --anatomy-source", default="auto")
    parser.addini("anatomy_hardware", "default for --anatomy-hardware", default="auto")
    parser.addini("anatomy_model", "default for --anatomy-model", default="qwen2.5-7b")
    parser.addini("anatomy_results_dir", "folder of recordings, relative to rootdir", default="results")
    parser.addini(
        "anatomy_replay_hardware",
        "hardware whose recordings are replayed when no GPU is present and --anatomy-hardware is auto",
        default="h200",
    )


def parse_settings(config: pytest.Config) -> AnatomySettings:
    source = config.getoption("--anatomy-source") or config.getini("anatomy_source")
    if source not in SOURCES:
        raise pytest.UsageError(f"anatomy_source={source!r} is not one of {', '.join(SOURCES)}")
    hardware = (config.getoption("--anatomy-hardware") or config.getini("anatomy_hardware")).strip().lower()
    if hardware != "auto":
        from pytest_anatomy.specs.hardware import UnknownHardwareError, get_hardware

        try:
            hardware = get_hardware(hardware).name
        except UnknownHardwareError as exc:
            raise pytest.UsageError(f"--anatomy-hardware: {exc.args[0] if exc.args else exc}") from None
    report = config.getoption("--anatomy-report")
    results = Path(config.getini("anatomy_results_dir"))
    if not results.is_absolute():
        results = Path(config.rootpath) / results
    return AnatomySettings(
        source=source,
        hardware=hardware,
        model=config.getoption("--anatomy-model") or config.getini("anatomy_model"),
        record=bool(config.getoption("--anatomy-record")),
        strict_findings=bool(config.getoption("--anatomy-strict-findings")),
        report=Path(report) if report else None,
        results_dir=results,
        replay_hardware=config.getini("anatomy_replay_hardware"),
    )
