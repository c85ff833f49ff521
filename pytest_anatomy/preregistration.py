"""Pre-registration: the predictions for a planned run, written and committed before the run.

"Held out" is a claim about time order: the prediction existed before the measurement. A label
set by hand cannot show that; a committed file can. `pytest-anatomy preregister capacity ID...`
writes `results/<hw>/preregistered/capacity-<stamp>.json` with every ledger quantity the theory
predicts for each planned engine start, and the git commit of the theory it used (refused while
the theory has uncommitted changes, so the commit is the theory). Once that file is committed:

- importing a held-out recording (importers/device.py) checks that a pre-registration of that run
  was committed before the recording's stamp (git log of the file), and names it in the
  recording's provenance;
- the capacity suite reconciles each pre-registered run against the pre-registered values as well
  as the current theory, so a pre-registered miss stays visible after the theory is fixed.

`pytest-anatomy preregister latency MODEL...` does the same for a model's planned decode steps and lone prefills
(latency_prereg.py: predicted from the recorded Qwen2.5-7B calibration, with each named term error's sensitivity).
`pytest-anatomy preregister kernels LADDER.RUNG[.SHAPE]...` does the same for planned kernel timings
(`results/<hw>/preregistered/kernels-<stamp>.json`): each rung's time pre-registered in its header
(Variant.h200_ms, the H200's only), with the commit of the theory and the kernels. A kernel timing
is held out when it is the first recording of a rung and shape whose header pre-registers a time
(a later one repeats it); since KERNELS_REQUIRED_FROM the importer refuses such a first timing on
that card unless a pre-registration of it was committed before it ran.

Pure file and git logic; the predictions come from theory/vllm_memory.py and the kernel registries
(never from a run).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

SCHEMA = "pytest-anatomy/preregistration/v1"
FOLDER = "preregistered"
# The code whose state a pre-registration pins: a change here changes predictions.
THEORY_PATHS = ("pytest_anatomy/theory", "pytest_anatomy/specs")
CAPACITY_PREFIX = "vllm-ledger."
# Device batches stamped before this carry no pre-registration (the mechanism did not exist);
# their held-out label is judged by commit order instead (tests_capacity/held_out.py).
REQUIRED_FROM = "2026-12-01T06:00:00Z"
# Kernel timings stamped before this were imported without the check (the mechanism covered capacity only); a rung's
# first timing since needs a kernels pre-registration committed before it (kernels_held_out).
KERNELS_REQUIRED_FROM = "2026-12-05T06:00:00Z"
# Latency recordings stamped before this were imported without the check (the mechanism covered capacity and kernels).
LATENCY_REQUIRED_FROM = "2026-12-05T06:00:00Z"
SUITES = ("capacity", "kernels", "latency")
# What each suite's pre-registration pins: a kernel's pre-registered time is in its registry entry and .cu header.
PINNED_PATHS = {"capacity": THEORY_PATHS, "kernels": (*THEORY_PATHS, "pytest_anatomy/kernels"),
                "latency": (*THEORY_PATHS, "pytest_anatomy/cli_calibration.py", "pytest_anatomy/latency_prereg.py")}


class PreregistrationError(ValueError):
    """A pre-registration that cannot be written or does not cover a held-out run; one line."""


@dataclass(frozen=True)
class PlannedRun:
    run_id: str
    model: str
    settings: Mapping[str, Any]

    @property
    def recording_name(self) -> str:
        return CAPACITY_PREFIX + self.run_id


@dataclass(frozen=True)
class Preregistration:
    path: Path
    doc: Mapping[str, Any]
    committed_at: datetime | None  # None: not committed (or no git history to ask)
    commit: str | None

    def run(self, recording_name: str) -> Mapping[str, Any] | None:
        return (self.doc.get("runs") or {}).get(recording_name)


def _git(repo: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def repo_root(path: Path) -> Path | None:
    top = _git(path if path.is_dir() else path.parent, "rev-parse", "--show-toplevel")
    return Path(top) if top else None


def theory_commit(repo: Path, paths: tuple[str, ...] = THEORY_PATHS) -> str:
    """HEAD, when the theory (and any other of `paths`) has no uncommitted change; else PreregistrationError."""
    head = _git(repo, "rev-parse", "HEAD")
    if not head:
        raise PreregistrationError(f"{repo} is not a git checkout: a pre-registration names the commit of the theory")
    dirty = _git(repo, "status", "--porcelain", "--", *paths)
    if dirty is None or dirty:
        first = (dirty or "?").splitlines()[0].strip()
        raise PreregistrationError(f"the theory has uncommitted changes ({first}): commit them first, so the "
                                   "pre-registration names the theory that made its predictions")
    return head


def predict_capacity(run: PlannedRun, hardware: str) -> dict[str, dict[str, Any]]:
    """Every ledger quantity the theory predicts for one planned engine start on `hardware`."""
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory.vllm_memory import predict_ledger
    from pytest_anatomy.theory.vllm_settings import LedgerSettings

    ledger = predict_ledger(load_model(run.model), get_hardware(hardware), LedgerSettings.from_mapping(run.settings))
    return {name: {"value": p.value, "unit": p.unit, "formula": p.formula} for name, p in ledger.items()}


def build(runs: list[PlannedRun], hardware: str, commit: str, created: str, command: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA, "suite": "capacity", "hardware": hardware, "created": created,
        "theory_commit": commit, "command": command,
        "runs": {r.recording_name: {"model": r.model, "settings": dict(r.settings),
                                    "predictions": predict_capacity(r, hardware)} for r in runs},
    }


def kernel_timings(ids: list[str]) -> dict[str, dict[str, Any]]:
    """{recording name (the kernels plan's run id, LADDER.RUNG.SHAPE): {ladder, rung, shape, source, predictions}}
    for each id, LADDER.RUNG meaning every shape its header pre-registers a time at; PreregistrationError (one line)
    for an unknown ladder or rung, or a shape the header gives no time for."""
    from pytest_anatomy.kernels.ladders import LADDERS
    from pytest_anatomy.kernels.registry import PREREGISTERED_ON
    from pytest_anatomy.suggest import did_you_mean

    out: dict[str, dict[str, Any]] = {}
    for run_id in ids:
        ladder, _, rest = run_id.partition(".")
        rung, _, shape = rest.partition(".")
        variants = {v.id: v for v in LADDERS.get(ladder, ())}
        if rung not in variants:
            hint = did_you_mean(rung if variants else ladder, variants or LADDERS)
            raise PreregistrationError(f"{run_id!r}: no rung {rung!r} in ladder {ladder!r}; give LADDER.RUNG[.SHAPE]"
                                       + (f"; {hint}" if hint else ""))
        v, times = variants[rung], dict(variants[rung].h200_ms)
        if not times or (shape and shape not in times):
            raise PreregistrationError(
                f"{run_id!r}: {v.source or 'the rung'} pre-registers no {PREREGISTERED_ON} time"
                + (f" at {shape}" if shape else "") + (f" (it does at {', '.join(times)})" if times else
                                                       "; write one in its header first (Predicted effect:)"))
        for label in [shape] if shape else list(times):
            out[f"{ladder}.{rung}.{label}"] = {
                "ladder": ladder, "rung": rung, "shape": label, "source": v.source,
                "predictions": {"time": {"value": times[label] * 1e-3, "unit": "s", "formula": (
                    f"pre-registered in the rung header ({v.source}): {times[label]:g} ms on the {PREREGISTERED_ON}")}}}
    return out


def build_kernels(timings: Mapping[str, Any], hardware: str, commit: str, created: str, command: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "suite": "kernels", "hardware": hardware, "created": created, "theory_commit": commit,
            "command": command, "runs": dict(timings)}


def write_document(repo: Path, path: Path, what: str, body: Mapping[str, Any], written_utc: str | None = None) -> Path:
    """{what, written_utc, theory_commit, **body} written to `path` (a suite's pre-registration JSON beside its tests,
    e.g. tests_quant/*_preregistered.json); PreregistrationError where the theory has uncommitted changes. Give
    `written_utc` when the body's predictions were computed as of that time."""
    commit = theory_commit(repo)
    when = written_utc or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps({"what": what, "written_utc": when, "theory_commit": commit, **body}, indent=1) + "\n")
    return path


def write(results: Path, doc: Mapping[str, Any]) -> Path:
    """results/<hw>/preregistered/capacity-<stamp>.json; never overwrites."""
    stamp = str(doc["created"]).replace("-", "").replace(":", "")
    path = Path(results) / str(doc["hardware"]) / FOLDER / f"{doc['suite']}-{stamp}.json"
    if path.exists():
        raise PreregistrationError(f"{path} exists: a pre-registration is never overwritten (wait a second)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _first_commit(path: Path) -> tuple[str | None, datetime | None]:
    root = repo_root(path)
    if root is None:
        return None, None
    out = _git(root, "log", "--diff-filter=A", "--format=%H %cI", "--", str(path.resolve().relative_to(root)))
    if not out:
        return None, None
    sha, when = out.splitlines()[-1].split(" ", 1)
    return sha, datetime.fromisoformat(when).astimezone(timezone.utc)


def load_all(results: Path, hardware: str) -> list[Preregistration]:
    """Every pre-registration of a card, oldest first, each with the time its file was first committed."""
    folder = Path(results) / hardware / FOLDER
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise PreregistrationError(f"{path}: not a readable pre-registration ({exc})") from None
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise PreregistrationError(f"{path}: schema is not {SCHEMA}")
        commit, when = _first_commit(path)
        out.append(Preregistration(path, doc, when, commit))
    return out


def covering(results: Path, hardware: str, recording_name: str) -> list[Preregistration]:
    return [p for p in load_all(results, hardware) if p.run(recording_name) is not None]


def parse_utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def check_held_out(results: Path, hardware: str, recording_name: str, recorded_at: str,
                   suite: str = "capacity") -> Preregistration:
    """The earliest pre-registration of this run committed before `recorded_at`; else one line saying
    what is missing and what to do."""
    when = parse_utc(recorded_at)
    found = covering(results, hardware, recording_name)
    before = [p for p in found if p.committed_at is not None and p.committed_at < when]
    if before:
        return min(before, key=lambda p: p.committed_at or when)
    seen = "; ".join(f"{p.path.name} " + (f"committed {p.committed_at:%Y-%m-%dT%H:%M:%SZ}" if p.committed_at
                                          else "not committed") for p in found) or "none"
    raise PreregistrationError(
        f"{recording_name} is marked held out but no pre-registration of it was committed before it was measured "
        f"({recorded_at}; pre-registrations found: {seen}): run `pytest-anatomy preregister {suite} "
        f"{recording_name.removeprefix(CAPACITY_PREFIX)} --hardware {hardware}` and commit it before measuring, "
        "or import with --in-sample to file it as not held out")


def required_for(recorded_at: str) -> bool:
    return parse_utc(recorded_at) >= parse_utc(REQUIRED_FROM)


def stamp_utc(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y%m%dT%H%M%S.%fZ" if "." in stamp else "%Y%m%dT%H%M%SZ").replace(
        tzinfo=timezone.utc)


def kernels_held_out(rec: Any, results: Path) -> bool:
    """A kernel timing that is held out: on the card the headers pre-register for, since KERNELS_REQUIRED_FROM, of a
    rung and shape whose header pre-registers a time, and the first recording of that name (a later one repeats a
    measurement already seen). An autotuner candidate (no registry rung) has no header time."""
    from pytest_anatomy.kernels.ladders import LADDERS
    from pytest_anatomy.kernels.registry import PREREGISTERED_ON

    data = rec.data or {}
    rung = next((v for v in LADDERS.get(str(data.get("ladder")), ()) if v.id == data.get("rung")), None)
    shape = data.get("shape")
    if (rec.suite != "kernels" or rec.hardware != PREREGISTERED_ON or "time" not in rec.measurements
            or rung is None or not isinstance(shape, Mapping) or rung.preregistered_ms(shape) is None
            or parse_utc(rec.recorded_at) < parse_utc(KERNELS_REQUIRED_FROM)):
        return False
    return _first_of_its_name(rec, results)


def latency_held_out(rec: Any, results: Path) -> bool:
    """A latency recording that is held out (latency_prereg.py): a decode or prefill part of a model other than the
    calibration model (and not a tiny overhead model, which measures the engine, not a prediction), stamped since
    LATENCY_REQUIRED_FROM, the first recording of that name on its card, on a card with latency pre-registrations
    (results/<hw>/preregistered/latency-*.json: the H200's; a card never planned ahead imports as before)."""
    from pytest_anatomy.cli_calibration import CALIBRATION_MODEL  # its runs are the fit, never held out

    model, part, _ = (rec.name.rsplit(".", 2) + ["", ""])[:3]  # "qwen2.5-32b.decode.b1": the model name has dots
    if (rec.suite != "latency" or part not in ("decode", "prefill") or model == CALIBRATION_MODEL
            or "-tiny-" in model or parse_utc(rec.recorded_at) < parse_utc(LATENCY_REQUIRED_FROM)):
        return False
    if not any(p.name.startswith("latency-") for p in (Path(results) / rec.hardware / FOLDER).glob("*.json")):
        return False  # a card none of whose latency runs was ever planned ahead (a user's own): nothing to check
    return _first_of_its_name(rec, results)


def _first_of_its_name(rec: Any, results: Path) -> bool:
    """Whether no recording of rec's suite and name on its card is stamped before it (its first run)."""
    from pytest_anatomy import recordings

    when = parse_utc(rec.recorded_at)
    return not any(stamp_utc(p.name.rsplit("@", 1)[1].removesuffix(".json")) < when
                   for p in recordings.candidates(results, rec.hardware, rec.suite, rec.name))


def checked_held_out(rec: Any, results: Path, *, in_sample: bool, error: type[Exception]) -> Any:
    """The importer's check of one recording (importers/device.py): a deployment batch's committed plan files
    (with_plan_files); a held-out capacity run or kernel timing needs a pre-registration committed before it ran,
    named in its provenance; without one, `error` (one line), or with `in_sample` it is filed as not held out, saying
    why."""
    import dataclasses

    if rec.suite == "deployment":  # its predictions: the committed files the device plan read (sha256 in provenance)
        return with_plan_files(rec, in_sample=in_sample, error=error)
    prov = dict(rec.provenance)
    if rec.suite == "capacity":
        held = prov.get("held_out") and required_for(rec.recorded_at)
    elif rec.suite == "latency":
        held = latency_held_out(rec, results)
    else:
        held = kernels_held_out(rec, results)
    if not held:
        return rec
    try:
        found = check_held_out(results, rec.hardware, rec.name, rec.recorded_at, rec.suite)
    except PreregistrationError as exc:
        if not in_sample:
            raise error(str(exc)) from None
        prov["held_out"] = False
        prov["held_out_refused"] = "no pre-registration committed before the run (imported with --in-sample)"
        return dataclasses.replace(rec, provenance=prov)
    prov["held_out"] = True
    prov["preregistration"] = {"file": found.path.relative_to(results).as_posix(), "commit": found.commit,
                               "committed_at": f"{found.committed_at:%Y-%m-%dT%H:%M:%SZ}"}
    return dataclasses.replace(rec, provenance=prov)


# --- plans whose predictions live in a committed file of the suite (deployment: preregistered.json, cause_tests.json)
PLAN_FILES = ("preregistered", "causes", "replan")  # the batch provenance's keys naming {"file", "sha256"}
PACKAGE_REPO = Path(__file__).resolve().parents[1]  # the checkout whose tests_deployment/ the device plan read


def _blob_sha256(repo: Path, commit: str, file: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", f"{commit}:{file}"], capture_output=True,
                             timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return hashlib.sha256(out.stdout).hexdigest() if out.returncode == 0 else None


# (repo, file, sha256) -> the first commit of `file` holding that content, and its time. A commit found stays the
# first one while the history only grows, so it is searched once per process; a miss is searched again each time.
# An import checks every recording of a batch against the batch's few plan files: re-importing the committed batches
# searched 5 file versions 152 times, ~780 git processes and ~5.7 s (2026-12-06).
_FIRST_HOLDING: dict[tuple[str, str, str], tuple[str, datetime]] = {}


def committed_before(repo: Path, file: str, sha256: str, before: datetime) -> tuple[str, datetime]:
    """The first commit of `file` holding exactly the content a run read (its sha256), if committed at or before the
    run; PreregistrationError otherwise, naming what is missing and the way out."""
    key = (str(repo), file, sha256)
    if key not in _FIRST_HOLDING:
        _FIRST_HOLDING[key] = _first_holding(repo, file, sha256)
    commit, at = _FIRST_HOLDING[key]
    if at <= before:
        return commit, at
    raise PreregistrationError(
        f"{file} as the run read it (sha256 {sha256[:12]}) was first committed {at:%Y-%m-%dT%H:%M:%SZ}, after "
        f"the run ({before:%Y-%m-%dT%H:%M:%SZ}): its predictions are not held out; import with --in-sample")


def _first_holding(repo: Path, file: str, sha256: str) -> tuple[str, datetime]:
    log = _git(repo, "log", "--reverse", "--format=%H %cI", "--", file)
    if not log:
        raise PreregistrationError(f"{file}: no git history in {repo} to show the run's predictions were committed "
                                   "before it; import in a git checkout, or with --in-sample to file it as not held out")
    for line in log.splitlines():
        commit, when = line.split(" ", 1)
        if _blob_sha256(repo, commit, file) == sha256:
            return commit, datetime.fromisoformat(when).astimezone(timezone.utc)
    raise PreregistrationError(
        f"{file} as the run read it (sha256 {sha256[:12]}) is in no commit: the run was planned from uncommitted "
        "predictions; commit them before measuring, or import with --in-sample to file the run as not held out")


def plan_files_committed(provenance: Mapping[str, Any], recorded_at: str,
                         repo: Path = PACKAGE_REPO) -> dict[str, dict[str, str]]:
    """For each prediction file a device batch names (PLAN_FILES), the commit that held it before the run."""
    when = parse_utc(recorded_at)
    out = {}
    for key in PLAN_FILES:
        named = provenance.get(key)
        if isinstance(named, Mapping) and named.get("file") and named.get("sha256"):
            commit, at = committed_before(repo, str(named["file"]), str(named["sha256"]), when)
            out[key] = {"file": str(named["file"]), "commit": commit, "committed_at": f"{at:%Y-%m-%dT%H:%M:%SZ}"}
    return out


def with_plan_files(rec: Any, *, in_sample: bool, error: type[Exception]) -> Any:
    """A recording of a batch planned from committed prediction files, with those commits in its provenance
    ("preregistration"); a batch whose files were not committed before it ran raises `error` (one line), or with
    `in_sample` is filed with held_out False and the reason. A batch naming no such file (a synthetic one) passes."""
    import dataclasses

    prov = dict(rec.provenance)
    named = {k: prov.get(k) for k in PLAN_FILES if isinstance(prov.get(k), Mapping)}
    if not named:
        return rec
    try:
        prov["preregistration"] = plan_files_committed(named, rec.recorded_at)
    except PreregistrationError as exc:
        if not in_sample:
            raise error(f"{rec.name}: {exc}") from None
        prov["held_out"] = False
        prov["held_out_refused"] = f"{exc} (imported with --in-sample)"
    return dataclasses.replace(rec, provenance=prov)
