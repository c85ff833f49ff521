"""Command-line options and ini keys, and the session settings parsed from them.

Few flags (the rest are ini keys), each validated with a message that quotes the bad value."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_anatomy.option_names import (  # noqa: F401 - re-exported: callers import the names from here too
    ALLOW_RESOLVED_OPTION,
    HARDWARE_INI,
    HARDWARE_OPTION,
    INI_KEYS,
    MODEL_INI,
    MODEL_OPTION,
    PLAN_OPTION,
    RECORD_OPTION,
    REPLAY_HARDWARE_INI,
    REPORT_OPTION,
    RESULTS_DIR_INI,
    SOURCE_INI,
    SOURCE_OPTION,
    SPEC_SOURCE_OPTION,
    STRICT_FINDINGS_OPTION,
    SUMMARY_OPTION,
)
from pytest_anatomy.targets import SPEC_SOURCE_ENV, SPEC_SOURCES, spec_source_setting

SOURCES = ("auto", "live", "recorded")
RESULTS_DIR_DEFAULT = "results"

# --anatomy-report=PATH: the suffix says which file PATH is; the other one is written beside it.
HTML_SUFFIXES = (".html", ".htm")
JSON_SUFFIX = ".json"


@dataclass(frozen=True)
class AnatomySettings:
    source: str  # auto | live | recorded
    hardware: str  # auto | catalog name
    model: str  # catalog name, HF id or path to config.json
    record: bool
    allow_resolved: bool
    report: Path | None
    summary: Path | None  # --anatomy-summary
    results_dir: Path
    replay_hardware: str
    spec_source: str = "catalog"  # catalog | nvml: where the live target's HardwareSpec comes from
    show_plan: bool = False  # --anatomy-plan: print the live plan with time estimates, run nothing


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("anatomy", "pytest-anatomy: predict, measure, reconcile")
    group.addoption(
        SOURCE_OPTION, choices=SOURCES, default=None,
        help="where measurements come from: live (this machine's GPU), recorded (results/ files), "
             "auto (this machine's GPU when present, plus every recorded card of another name). "
             f"Default: ini {SOURCE_INI} or auto.",
    )
    group.addoption(
        HARDWARE_OPTION, default=None, metavar="NAME",
        help="hardware spec for predictions: auto (detect the live GPU) or a catalog name "
             "(rtx4090, h100-sxm, h100-pcie, h200, a100-80gb, a100-40gb, l40s, b200, b300, gb200). "
             f"Default: ini {HARDWARE_INI} or auto.",
    )
    group.addoption(
        MODEL_OPTION, default=None, metavar="NAME_OR_CONFIG",
        help="model for the model_spec fixture: catalog name (qwen2.5-7b), Hugging Face id or path to a "
             f"config.json. Default: ini {MODEL_INI} or qwen2.5-7b.",
    )
    group.addoption(
        RECORD_OPTION, action="store_true", default=False,
        help=f"write live measurements into <{RESULTS_DIR_INI}>/<hardware>/<suite>/ (results/ unless the ini key "
             "says otherwise; never overwrites; newer supersedes).",
    )
    group.addoption(
        ALLOW_RESOLVED_OPTION, action="store_true", default=False,
        help="let a resolved finding (its gap closed) pass as an XPASS instead of failing like a strict "
             "XPASS, for a transition; one mark can do the same with @pytest.mark.finding(..., strict=False).",
    )
    group.addoption(
        STRICT_FINDINGS_OPTION, action="store_true", default=False,
        help=f"deprecated, does nothing: resolved findings fail by default (see {ALLOW_RESOLVED_OPTION}).",
    )
    group.addoption(
        SUMMARY_OPTION, default=None, metavar="PATH",
        help="write a short markdown summary (verdicts per suite and hardware, drifted or resolved findings, "
             "diverges with their numbers, failed tests) to PATH, checked writable before any test runs. Whether "
             "or not it is given, a run that reconciled something appends the same summary to "
             "$GITHUB_STEP_SUMMARY when that is set.",
    )
    group.addoption(
        REPORT_OPTION, default=None, metavar="PATH",
        help="write the self-contained HTML reconciliation report and its JSON ledger: PATH.html (or .htm) is the "
             "report and the ledger goes beside it as .json; PATH.json is the ledger and the report goes beside it "
             "as .html. Checked writable before any test runs; a run that runs nothing (--collect-only, "
             f"{PLAN_OPTION}) writes neither, keeping the files already there.",
    )
    group.addoption(
        SPEC_SOURCE_OPTION, choices=SPEC_SOURCES, default=None,
        help="where the live GPU's spec comes from: catalog (datasheet numbers when the card is in the catalog) "
             "or nvml (derived from the driver alone, as for a card the catalog does not know). "
             f"Default: ${SPEC_SOURCE_ENV} or catalog.",
    )
    group.addoption(
        PLAN_OPTION, action="store_true", default=False,
        help="print the live measurement plan of the collected tests (what each target will measure, with "
             "time estimates) and exit without running anything. On a machine without a GPU, with "
             f"{HARDWARE_OPTION}=NAME: the plan for that catalog card.",
    )
    parser.addini(SOURCE_INI, f"default for {SOURCE_OPTION}", default="auto")
    parser.addini(HARDWARE_INI, f"default for {HARDWARE_OPTION}", default="auto")
    parser.addini(MODEL_INI, f"default for {MODEL_OPTION}", default="qwen2.5-7b")
    parser.addini(RESULTS_DIR_INI, "folder of recordings, relative to rootdir", default=RESULTS_DIR_DEFAULT)
    parser.addini(
        REPLAY_HARDWARE_INI,
        f"hardware whose recordings are replayed when no GPU is present and {HARDWARE_OPTION} is auto",
        default="h200",
    )


def parse_settings(config: pytest.Config) -> AnatomySettings:
    """Every option and ini key, validated before any test runs (pytest.UsageError: one line each)."""
    check_ini_keys(config)
    source = config.getoption(SOURCE_OPTION) or config.getini(SOURCE_INI)
    if source not in SOURCES:
        raise pytest.UsageError(f"{SOURCE_INI}={source!r} is not one of {', '.join(SOURCES)}")
    # An ini value is named by its ini key, not by the flag it is the default of: the fix is in the ini file.
    hardware_option, model_option = given(config, HARDWARE_OPTION), given(config, MODEL_OPTION)
    hardware = validate_hardware(hardware_option or config.getini(HARDWARE_INI),
                                 HARDWARE_OPTION if hardware_option else HARDWARE_INI)
    report = given(config, REPORT_OPTION)
    try:
        spec_source = config.getoption(SPEC_SOURCE_OPTION) or spec_source_setting()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    report_path = validate_report_path(report) if report else None
    summary = validate_summary_path(given(config, SUMMARY_OPTION))
    if report_path is not None and summary is not None and summary.resolve() in (
            report_path.resolve(), report_path.with_suffix(JSON_SUFFIX).resolve()):
        # the summary, written last, replaced the ledger (or the report) it was meant to sit beside, exit 0
        raise pytest.UsageError(f"{SUMMARY_OPTION}={summary} is a file {REPORT_OPTION} writes (the report or its "
                                "ledger); give the summary its own name, such as anatomy-summary.md")
    return AnatomySettings(
        spec_source=spec_source,
        show_plan=bool(config.getoption(PLAN_OPTION)),
        source=source,
        hardware=hardware,
        model=validate_model(model_option or config.getini(MODEL_INI), MODEL_OPTION if model_option else MODEL_INI),
        record=bool(config.getoption(RECORD_OPTION)),
        allow_resolved=bool(config.getoption(ALLOW_RESOLVED_OPTION)),
        report=report_path,
        results_dir=results_dir(config, source),
        replay_hardware=validate_hardware(config.getini(REPLAY_HARDWARE_INI), REPLAY_HARDWARE_INI, auto=False),
        summary=summary,
    )


def check_ini_keys(config: pytest.Config) -> None:
    """An anatomy_* key the plugin does not know (anatomy_sorce = recorded) is refused. pytest only warns of it and
    the run went on with the default (auto, not recorded); under filterwarnings = error the warning was an
    INTERNALERROR traceback."""
    from pytest_anatomy.suggest import close_matches, phrase

    inicfg = getattr(config, "_inicfg", None)  # pytest 9; its config.inicfg warns (deprecated)
    if inicfg is None:
        inicfg = getattr(config, "inicfg", None) or {}  # pytest 8
    keys = set(inicfg) | {str(o).split("=", 1)[0].strip() for o in config.getoption("override_ini", None) or ()}
    prefix = "anatomy_"
    for key in sorted(k for k in keys if k.startswith(prefix) and k not in INI_KEYS):
        # compared without the prefix every key shares: anatomy_zzz is like none of them
        near = close_matches(key.removeprefix(prefix), [k.removeprefix(prefix) for k in INI_KEYS])
        hint = phrase([prefix + n for n in near], sentence=True)
        raise pytest.UsageError(f"unknown ini key {key!r}.{f' {hint}' if hint else ''} "
                                f"The anatomy keys: {', '.join(INI_KEYS)}")


def given(config: pytest.Config, option: str) -> str | None:
    """A string option's value, None when it was not given. Given empty (`--anatomy-report=$REPORT` with REPORT
    unset) is refused: taken as absent, the run went on without the report, or on the ini's hardware, exit 0."""
    value = config.getoption(option)
    if value is not None and not str(value).strip():
        raise pytest.UsageError(f"{option}= is empty (an unset shell variable?); give a value or leave {option} out")
    return None if value is None else str(value)


def results_dir(config: pytest.Config, source: str) -> Path:
    """The recordings folder (ini key, relative to rootdir); a file, an empty value, or a missing folder to replay
    from (source recorded) is refused."""
    value = str(config.getini(RESULTS_DIR_INI))
    if not value.strip():  # Path("") is rootdir itself: every test would look for recordings in the checkout's root
        raise pytest.UsageError(f"{RESULTS_DIR_INI} is empty; give the folder that holds the recordings "
                                "(results/<hardware>/<suite>/), or remove the key for the default, results")
    results = Path(value).expanduser()
    if not results.is_absolute():
        results = Path(config.rootpath) / results
    if results.exists() and not results.is_dir():
        raise pytest.UsageError(f"{RESULTS_DIR_INI}={value}: {results} is a file; "
                                "give the folder that holds the recordings (results/<hardware>/<suite>/)")
    # A folder named on purpose (not the default) that is missing, replayed from only: a typo. Every replayed test
    # was deselected and the rest passed, exit 0. (A project without recordings may still run recorded: its plain
    # reconciliations replay nothing, and recorded keeps the session from probing for a GPU.)
    if source == "recorded" and value != RESULTS_DIR_DEFAULT and not results.exists():
        raise pytest.UsageError(f"{RESULTS_DIR_INI}={value}: {results} does not exist, so {SOURCE_OPTION}=recorded "
                                "has nothing to replay; give the folder that holds the recordings")
    return results


def validate_summary_path(value: str | None) -> Path | None:
    """The markdown summary's path; a folder or an unwritable place is refused now, not when the run ends."""
    if not value:
        return None
    summary = Path(value).expanduser()  # as write_summary expands it: check the file that will be written
    if summary.is_dir():
        raise pytest.UsageError(f"{SUMMARY_OPTION}={str(summary)!r} is a directory; give a file name such as "
                                f"{str(summary / 'anatomy-summary.md')!r}")
    problem = _unwritable(summary)
    if problem:
        raise pytest.UsageError(f"{SUMMARY_OPTION}={value}: {summary} {problem}")
    return summary


def validate_hardware(value: str, where: str, auto: bool = True) -> str:
    """'auto' (where allowed) or a catalog name, as the catalog spells it."""
    name = str(value).strip().lower()
    if auto and name == "auto":
        return name
    from pytest_anatomy.specs.hardware import UnknownHardwareError, get_hardware

    try:
        return get_hardware(name).name
    except UnknownHardwareError as exc:
        raise pytest.UsageError(f"{where}: {exc.args[0] if exc.args else exc}") from None


def validate_model(value: str, where: str = MODEL_OPTION) -> str:
    """The model must resolve now, not in the first test that asks for model_spec. `where` names the option or
    ini key the value came from."""
    from pytest_anatomy.specs.model import ModelConfigError, load_model

    if not str(value).strip():  # load_model("") reads the current folder's config.json
        raise pytest.UsageError(f"{where} is empty; give a catalog name, a Hugging Face id or a config.json path")
    try:
        load_model(value)
    except ModelConfigError as exc:
        raise pytest.UsageError(f"{where}={value}: {exc.args[0] if exc.args else exc}") from None
    return value


def validate_report_path(value: str, option: str | None = None) -> Path:
    """The HTML path the report is written to (its ledger beside it, same stem, .json), after checking
    that both files can be written: a bad path fails now, not after the whole run. `option` names the
    option in the message (`pytest-anatomy report -o`; default the pytest option)."""
    said = f"{option} {value}" if option else f"{REPORT_OPTION}={value}"
    path = Path(value).expanduser()
    suffix = path.suffix.lower()
    if suffix == JSON_SUFFIX:
        path = path.with_suffix(HTML_SUFFIXES[0])
    elif suffix not in HTML_SUFFIXES:
        raise pytest.UsageError(
            f"{said}: the suffix must say which file it is: .html (the report, ledger beside it "
            f"as .json) or .json (the ledger, report beside it as .html)")
    for target in (path, path.with_suffix(JSON_SUFFIX)):
        problem = _unwritable(target)
        if problem:
            raise pytest.UsageError(f"{said}: {target} {problem}")
    return path


def _unwritable(target: Path) -> str | None:
    if target.is_dir():
        return "is a directory; give a file name such as anatomy-report.html"
    folder = target.absolute().parent
    while not folder.exists():  # missing folders are created when the report is written
        folder = folder.parent
    if not folder.is_dir():
        return f"cannot be written: {folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot be written: no write permission in {folder}"
    if target.exists() and not os.access(target, os.W_OK):
        return "exists and is not writable"
    try:  # os.access says yes to root everywhere (/proc, a read-only mount): create a file there to know
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return f"cannot be written: {exc.strerror or exc} in {folder}"
    return None
