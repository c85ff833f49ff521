"""Record/replay of measurements: `results/<hardware>/<suite>/<name>@<stamp>.json`.

Recordings are append-only. A file is never overwritten or deleted: a newer stamp for the
same (hardware, suite, name) supersedes the older one on replay, and the older one stays as
history. Writes are atomic (temp file + os.replace) and refuse an existing path.

Schema v1 (validated on every load, so a hand-broken file fails loudly with its path):

    {"schema": "pytest-anatomy/recording/v1",
     "suite": "capacity", "name": "seed-r2-vllm-kv-pool", "hardware": "rtx4090",
     "recorded_at": "2026-08-25T22:03:38Z",   (live recordings add microseconds: ...38.123456Z)
     "provenance": {"source": "live" | "seed", ...gpu, driver, engine, engine_version,
                    settings, command, origin...},
     "measurements": {"<quantity>": {"value": <number>, "unit": "<unit>", "samples": [...]}},
     "data": {...free-form raw payload...}}
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from pytest_anatomy import run_share, units
from pytest_anatomy.measure.measurement import Measurement, Source
from pytest_anatomy.option_names import RECORD_OPTION

SCHEMA = "pytest-anatomy/recording/v1"
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._+-]*$")
# A suite may have one sub-folder: third-party recordings live in results/<hw>/third-party/<source>/.
_SUITE_RE = re.compile(r"^[a-z0-9][a-z0-9._+-]*(/[a-z0-9][a-z0-9._+-]*)?$")
# A stamp is recorded_at without '-' and ':'. Live recordings carry microseconds so that two
# measurements of one name in one second (a fast session, xdist workers) cannot collide.
_STAMP_RE = re.compile(r"^\d{8}T\d{6}(\.\d{6})?Z$")
_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ")
# A stamp later than now by more than this is refused: it would supersede every recording made
# after it. The allowance covers the clock of the device machine that stamped a run running
# ahead of the machine that imports it (unsynchronised VMs drift by seconds to a few minutes).
CLOCK_SKEW = timedelta(minutes=10)
# A recording is a few KiB to a few MiB (raw logs embedded verbatim); 256 MiB is far above any
# real one and keeps a mistaken path (a model checkpoint, a core dump) from being read whole.
MAX_RECORDING_BYTES = 256 * units.MiB
_REQUIRED = ("schema", "suite", "name", "hardware", "recorded_at", "provenance", "measurements")


class RecordingError(ValueError):
    """A recording file that cannot be used; the message names the file and the fix."""


class MissingRecording(LookupError):
    """No recording for the requested (hardware, suite, name)."""


@dataclass(frozen=True)
class Recording:
    suite: str
    name: str
    hardware: str
    recorded_at: str
    provenance: Mapping[str, Any]
    measurements: Mapping[str, Mapping[str, Any]]
    data: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None
    source: Source = "recorded"

    def measurement(self, quantity: str) -> Measurement:
        """The named quantity as a Measurement carrying this recording's provenance."""
        if quantity not in self.measurements:
            known = ", ".join(sorted(self.measurements)) or "(none)"
            raise KeyError(f"recording {self.name!r} has no quantity {quantity!r}; it has: {known}")
        m = self.measurements[quantity]
        prov = dict(self.provenance)
        prov["recorded_at"] = self.recorded_at
        prov.setdefault("hardware", self.hardware)  # the ledger names the GPU of every reconciliation
        if self.path is not None:
            prov["recording"] = _display_path(self.path, os.getcwd())
        return Measurement(
            value=float(m["value"]),
            unit=str(m["unit"]),
            # map, not a generator: a latency replay converts ~8M samples here, and the generator's frame per item
            # was a tenth of its run time
            samples=tuple(map(float, m.get("samples", ()))),
            source=self.source,
            provenance=prov,
        )

    def __getitem__(self, quantity: str) -> Measurement:
        return self.measurement(quantity)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "suite": self.suite,
            "name": self.name,
            "hardware": self.hardware,
            "recorded_at": self.recorded_at,
            "provenance": dict(self.provenance),
            "measurements": {k: dict(v) for k, v in self.measurements.items()},
            "data": dict(self.data),
        }


@functools.lru_cache(maxsize=8192)
def _display_path(path: Path, cwd: str) -> str:
    """`path` relative to the working directory `cwd` where it lies below it. Cached per (path, cwd): every
    measurement read from a recording names it, and resolving costs a stat per path component."""
    try:
        return str(path.resolve().relative_to(Path(cwd).resolve()))
    except ValueError:
        return str(path)


def validate(doc: Any, where: str = "<recording>") -> None:
    """Raise RecordingError naming the first problem in a recording document."""

    def fail(msg: str) -> None:
        raise RecordingError(f"{where}: {msg}. Recordings are written by pytest-anatomy; "
                             "supersede a bad one with a newer file rather than editing it.")

    if not isinstance(doc, dict):
        fail(f"top level must be a JSON object, got {type(doc).__name__}")
    missing = [k for k in _REQUIRED if k not in doc]
    if missing:
        fail(f"missing required key(s) {missing}")
    if doc["schema"] != SCHEMA:
        fail(f"schema is {doc['schema']!r}, expected {SCHEMA!r}")
    for key in ("suite", "name", "hardware"):
        pattern = _SUITE_RE if key == "suite" else _NAME_RE
        if not isinstance(doc[key], str) or not pattern.match(doc[key]):
            fail(f"{key}={doc[key]!r} must be lower-case letters, digits and . _ + -"
                 + (" (a suite may add one /sub-folder)" if key == "suite" else ""))
    _refuse_future(_parse_time(doc["recorded_at"], fail), where)
    if not isinstance(doc["provenance"], dict) or "source" not in doc["provenance"]:
        fail("provenance must be an object with at least 'source'")
    if not isinstance(doc["measurements"], dict):
        fail("measurements must be an object of {quantity: {value, unit}}")
    for q, m in doc["measurements"].items():
        if not isinstance(m, dict) or "value" not in m or "unit" not in m:
            fail(f"measurement {q!r} must be an object with 'value' and 'unit'")
        v = m["value"]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            fail(f"measurement {q!r} value {v!r} is not a number")
        if not math.isfinite(v):
            fail(f"measurement {q!r} value is {v!r}; a measurement is a finite number")
        if not isinstance(m["unit"], str):
            fail(f"measurement {q!r} unit must be a string")
        # exact int and float types first, a pass at C speed (2.5M samples in the committed recordings, ~1 s of
        # generator per process that reads them all); isinstance, which admits float subclasses, only past that
        if not isinstance(samples := m.get("samples", []), list) or (not set(map(type, samples)) <= {int, float} and any(
                isinstance(s, bool) or not isinstance(s, (int, float)) for s in samples)):
            fail(f"measurement {q!r} samples must be a list of numbers")
    if "data" in doc and not isinstance(doc["data"], dict):
        fail("data must be an object")


def _parse_time(text: Any, fail: Any) -> datetime:
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(str(text), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    fail(f"recorded_at={text!r} must be UTC 'YYYY-MM-DDTHH:MM:SSZ' or 'YYYY-MM-DDTHH:MM:SS.ffffffZ'")
    raise AssertionError("unreachable")  # fail() raises; keeps type checkers calm


@functools.lru_cache(maxsize=65536)
def _stamp_time(stamp: str) -> datetime:
    """The UTC time of a stamp; cached (a pure function of the string), since every lookup of a name parses the stamps of
    all its files."""
    fmt = "%Y%m%dT%H%M%S.%fZ" if "." in stamp else "%Y%m%dT%H%M%SZ"
    return datetime.strptime(stamp, fmt).replace(tzinfo=timezone.utc)


def _file_stamp_time(path: Path, stamp: str) -> datetime:
    """The time of a file's stamp; RecordingError for a malformed, impossible or future one."""
    fix = ("the stamp is recorded_at without '-' and ':' (20260825T220338Z or 20260825T220338.123456Z); "
           "recordings are written by pytest-anatomy, never named by hand")
    if not _STAMP_RE.match(stamp):
        raise RecordingError(f"{path}: file stamp {stamp!r} is not a UTC stamp; {fix}")
    try:
        when = _stamp_time(stamp)
    except ValueError:
        raise RecordingError(f"{path}: file stamp {stamp!r} is not a real time; {fix}") from None
    _refuse_future(when, str(path))
    return when


def _refuse_future(when: datetime, where: str) -> None:
    now = datetime.now(timezone.utc)
    if when > now + CLOCK_SKEW:
        raise RecordingError(
            f"{where}: stamped {when:%Y-%m-%dT%H:%M:%SZ}, later than now ({now:%Y-%m-%dT%H:%M:%SZ}) by more than "
            f"the {int(CLOCK_SKEW.total_seconds() // 60)} min clock-skew allowance; a future stamp would "
            "supersede every later recording. Check the clock of the machine that recorded it.")


def _read_document(path: Path) -> Any:
    """The JSON of a recording file; RecordingError naming the file for size, encoding or syntax."""
    try:
        size = path.stat().st_size
        if size > MAX_RECORDING_BYTES:
            raise RecordingError(
                f"{path}: {size:,} bytes, above the {MAX_RECORDING_BYTES // units.MiB} MiB bound for a recording "
                "(real ones are KiB to a few MiB); is this the right file?")
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordingError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); recordings are UTF-8 JSON written by "
            "pytest-anatomy. Supersede it with a newer recording.") from None
    except OSError as exc:
        raise RecordingError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return run_share.json_document(path, text)  # a large one parsed once per test run (run_share)
    except json.JSONDecodeError as exc:
        raise RecordingError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}). "
            f"Supersede it with a newer recording (re-run with {RECORD_OPTION} on a GPU)."
        ) from None
    except RecursionError:
        raise RecordingError(f"{path}: JSON nested too deeply to be a recording") from None


def load_file(path: Path) -> Recording:
    """The recording in `path`, validated. Recordings are immutable files that the suites read thousands of
    times per session (a latency replay read 6,297 and spent 29 s parsing and validating them), so a file is
    parsed once per (path, size, mtime) and the same Recording is returned after; a rewritten file is read anew.
    Callers must treat a Recording's mappings as read-only."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        return _load_file_uncached(path)  # names the problem, as before
    return _load_file_cached(path, st.st_size, st.st_mtime_ns, st.st_ino)


@functools.lru_cache(maxsize=8192)
def _load_file_cached(path: Path, size: int, mtime_ns: int, inode: int) -> Recording:
    return _load_file_uncached(path)


def _load_file_uncached(path: Path) -> Recording:
    doc = _read_document(path)
    validate(doc, str(path))
    name, at, stamp = path.name.removesuffix(".json").rpartition("@")
    if at and name == doc["name"] and stamp != stamp_of(doc["recorded_at"]):
        raise RecordingError(
            f"{path}: file stamp {stamp!r} does not match recorded_at={doc['recorded_at']!r} (expected "
            f"{doc['name']}@{stamp_of(doc['recorded_at'])}.json); the file was renamed or edited by hand. "
            "Recordings are never edited: supersede it with a newer one.")
    return Recording(
        suite=doc["suite"],
        name=doc["name"],
        hardware=doc["hardware"],
        recorded_at=doc["recorded_at"],
        provenance=doc["provenance"],
        measurements=doc["measurements"],
        data=doc.get("data", {}),
        path=path,
    )


def stamp_of(recorded_at: str) -> str:
    return recorded_at.replace("-", "").replace(":", "")


def same_instant(a: str, b: str | None) -> bool:
    """Whether two recorded_at values name one instant ("...:03Z" = "...:03.000000Z"); a non-time compared as text."""
    if b is None or a == b:
        return a == b
    try:
        return _stamp_time(stamp_of(a)) == _stamp_time(stamp_of(b))
    except ValueError:
        return False


def candidates(root: Path, hardware: str, suite: str, name: str) -> list[Path]:
    """All files of one recording, oldest first (by the time in the stamp: with and without
    microseconds do not sort lexically). Found once per listing of the folder: a replay asks for the
    same names thousands of times, and the answer changes only when the folder does (_listing)."""
    folder = Path(root) / hardware / suite
    if not folder.is_dir():
        return []
    listing, key = _listing(folder), (str(folder), name)  # as spelled: the paths come back spelled so
    hit = _CANDIDATES.get(key)
    if hit is not None and hit[0] is listing:
        return list(hit[1])
    found = _stamped_files(folder, name)
    _CANDIDATES[key] = (listing, found)
    return list(found)


# (folder, name) -> (the listing it was found in, its files oldest first); reused while _listing returns that listing
_CANDIDATES: dict[tuple[str, str], tuple[tuple[str, ...], list[Path]]] = {}


def _stamped_files(folder: Path, name: str) -> list[Path]:
    found: dict[datetime, Path] = {}
    for p in _named_files(folder, name):
        stamp = p.name[len(name) + 1 : -len(".json")]
        when = _file_stamp_time(p, stamp)
        if when in found:
            # e.g. x@20260825T000000Z.json and x@20260825T000000.000000Z.json: neither supersedes
            first, second = sorted((found[when].name, p.name))
            raise RecordingError(
                f"{folder}: {first} and {second} are two recordings of {name!r} at the same time; which one is "
                "newest is undefined. One of them was copied or renamed by hand: move it out of results/.")
        found[when] = p
    return [found[when] for when in sorted(found)]


def _named_files(folder: Path, name: str) -> list[Path]:
    """The files `<name>@*.json` in `folder`. One listing filtered by prefix and suffix, not Path.glob: the suites look
    names up thousands of times per session in folders of hundreds of files, and glob's per-entry pattern match was a
    tenth of a latency replay. A name with glob metacharacters (none is valid, _NAME_RE) keeps glob's meaning."""
    pattern = f"{name}@*.json"
    if any(c in name for c in "*?["):
        return list(folder.glob(pattern))
    head = f"{name}@"
    if "@" in name:  # never valid (_NAME_RE), but keep startswith's meaning for it
        return [folder / n for n in _listing(folder)
                if n.startswith(head) and n.endswith(".json") and len(n) >= len(head) + len(".json")]
    # the names whose part before their first "@" is `name`: exactly those starting with `name@`
    return [folder / n for n in _by_head(folder).get(name, ())
            if n.endswith(".json") and len(n) >= len(head) + len(".json")]


_HEADS: dict[str, tuple[tuple[str, ...], dict[str, list[str]]]] = {}


def _by_head(folder: Path) -> dict[str, list[str]]:
    """The folder's names grouped by their part before the first "@" (in listing order), built once per listing:
    a lookup then reads the few files of one name instead of filtering hundreds."""
    names = _listing(folder)
    where = os.path.abspath(folder)
    hit = _HEADS.get(where)
    if hit is not None and hit[0] is names:
        return hit[1]
    index: dict[str, list[str]] = {}
    for n in names:
        index.setdefault(n.split("@", 1)[0], []).append(n)
    _HEADS[where] = (names, index)
    return index


def has_named_files(folder: Path, name: str) -> bool:
    """Whether `folder` holds a file `<name>@*.json` (False where there is no such folder)."""
    return folder.is_dir() and bool(_named_files(folder, name))


_LISTINGS: dict[str, tuple[tuple[int, int, int], tuple[str, ...]]] = {}
# A listing is reused while the folder's (device, inode, mtime) is unchanged, and only once that mtime is this old:
# a file added within the same timestamp tick as the listing would leave the mtime as it was (git's "racy clean" rule).
_SETTLED_NS = 2_000_000_000


def _listing(folder: Path) -> tuple[str, ...]:
    """The names in `folder`; re-read whenever the folder changed. A lookup of a name reads its folder (results/h200/
    latency holds hundreds of files), and a replay looks up thousands of names."""
    where = os.path.abspath(folder)
    st = os.stat(where)
    key = (st.st_dev, st.st_ino, st.st_mtime_ns)
    hit = _LISTINGS.get(where)
    if hit is not None and hit[0] == key:
        return hit[1]
    names = tuple(os.listdir(where))
    if time.time_ns() - st.st_mtime_ns > _SETTLED_NS:
        _LISTINGS[where] = (key, names)
    return names


def load_latest(root: Path, hardware: str, suite: str, name: str, stamp: str | None = None) -> Recording:
    """The newest recording, or the one of `stamp` (a recorded_at, either form: several runs of
    one device batch share it, e.g. a session's ceilings and the runs measured beside them);
    raises MissingRecording naming the glob or file that found nothing."""
    files = candidates(root, hardware, suite, name)
    if stamp is not None:
        want = stamp_of(stamp)
        files = [p for p in files if p.name == f"{name}@{want}.json"]
        if not files:
            raise MissingRecording(f"{Path(root) / hardware / suite / name}@{want}.json")
    if not files:
        raise MissingRecording(f"{Path(root) / hardware / suite / name}@*.json")
    rec = load_file(files[-1])
    if (rec.hardware, rec.suite, rec.name) != (hardware, suite, name):
        raise RecordingError(
            f"{files[-1]}: its content says hardware={rec.hardware!r} suite={rec.suite!r} name={rec.name!r}, "
            f"which does not match its path; the file was moved or renamed by hand"
        )
    return rec


def session_key(rec: Recording) -> str | None:
    """What ties recordings of one measuring session together: the batch's start time
    (provenance "date", shared by every run of a device batch or of a live plan run), else the
    session's ceilings that a live kernel or attention recording was predicted with (one
    measurement per live session, so its stamp names the session)."""
    key = rec.provenance.get("date") or rec.provenance.get("ceilings_recorded_at")
    return str(key) if key else None


def load_not_after(root: Path, hardware: str, suite: str, name: str, when: str) -> Recording:
    """The newest recording of `name` stamped at or before `when` (a recorded_at): what was known
    when another measurement was made, e.g. the calibration a held-out run is predicted with."""
    limit = _stamp_time(stamp_of(when))
    files = [p for p in candidates(root, hardware, suite, name)
             if _stamp_time(p.name[len(name) + 1: -len(".json")]) <= limit]
    if not files:
        raise MissingRecording(f"{Path(root) / hardware / suite / name}@* not after {when}")
    return load_file(files[-1])


def load_beside(root: Path, hardware: str, suite: str, name: str, other: Recording) -> Recording:
    """The recording of `name` measured in the same session as `other`: the one with the same
    stamp (a device batch), else the newest with the same session key (a live plan run, whose
    recordings are stamped one by one). MissingRecording when that session measured no `name`."""
    try:
        return load_latest(root, hardware, suite, name, other.recorded_at)
    except MissingRecording:
        pass
    key = session_key(other)
    if key is not None:
        for path in reversed(candidates(root, hardware, suite, name)):
            rec = load_file(path)
            if session_key(rec) == key:
                return rec
    raise MissingRecording(f"{Path(root) / hardware / suite / name}@* of the session of {other.name}@{other.recorded_at}")


def load_runs(roots: Iterable[Path], hardware: str, suite: str, name: str) -> list[Recording]:
    """Every recorded run of `name` under any of `roots`, once per recorded_at (the first root's copy: a live
    session's folder and the checkout's may hold the same run), oldest first."""
    seen: dict[str, Recording] = {}
    for root in roots:
        for path in candidates(root, hardware, suite, name):
            rec = load_file(path)
            seen.setdefault(rec.recorded_at, rec)
    return sorted(seen.values(), key=lambda r: _stamp_time(stamp_of(r.recorded_at)))


def list_recordings(root: Path, hardware: str, suite: str, prefix: str = "") -> list[str]:
    """Names of recordings (newest file per name) whose name starts with prefix."""
    folder = Path(root) / hardware / suite
    names = set()
    if folder.is_dir():
        for p in folder.glob(f"{prefix}*@*.json"):
            names.add(p.name.rsplit("@", 1)[0])
    return sorted(names)


def utc_now() -> str:
    """A live recording's recorded_at, to the microsecond (see _STAMP_RE)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def save(root: Path, recording: Recording) -> Path:
    """Write atomically to `<root>/<hw>/<suite>/<name>@<stamp>.json`; never overwrite."""
    doc = recording.to_json()
    validate(doc, f"recording {recording.name!r} (not written)")
    folder = Path(root) / recording.hardware / recording.suite
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{recording.name}@{stamp_of(recording.recorded_at)}.json"
    if target.exists():
        raise FileExistsError(
            f"{target} already exists; recordings are never overwritten. Record again later "
            "(a new timestamp) to supersede it."
        )
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, sort_keys=False)
            fh.write("\n")
        # os.link fails if target exists, unlike os.replace: the never-overwrite rule holds
        # even against a concurrent writer.
        os.link(tmp, target)
    finally:
        os.unlink(tmp)
    return target


def save_if_new(root: Path, recording: Recording, *, dry_run: bool = False) -> tuple[str, Path]:
    """Importers' write: ('exists' | 'would write' | 'wrote', path), never overwriting."""
    target = Path(root) / recording.hardware / recording.suite / f"{recording.name}@{stamp_of(recording.recorded_at)}.json"
    if target.exists():
        return "exists", target
    if dry_run:
        return "would write", target
    return "wrote", save(root, recording)


def save_all_if_new(root: Path, planned: list[Recording], *, dry_run: bool = False) -> list[tuple[str, str]]:
    """save_if_new for each recording of an import, in order: (status, path) per recording."""
    return [(status, str(target)) for status, target in (save_if_new(root, rec, dry_run=dry_run) for rec in planned)]
