"""Work done once per test run and shared by the run's processes through files in its temp folder.

A `pytest -n auto` run is several interpreters: the xdist workers, the report of every suite building in the
background (tests_plugin/test_report_browser.py) and the mutation catalogue's replays (tests_plugin/test_mutations.py).
Each used to decompress and parse the same kept raw files and compile the same sources again. `once(key, compute)`
computes a value in the first process that needs it, under an exclusive lock per key, and pickles it into the run's
folder; the others wait for that lock and read the value back.

Only for values that do not depend on pytest_anatomy.theory (parsed recordings, compiler output): a mutation replay
reads this folder too, and a prediction computed by an unmutated process must never reach a mutated one.

The folder: $ANATOMY_RUN_SHARED where a parent process set it for its children, else beside an xdist worker's own
basetemp (shared by the workers), else inside a lone process's basetemp. Never across runs: each run has its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ENV = "ANATOMY_RUN_SHARED"
T = TypeVar("T")

# The configs of the sessions running in this process, innermost last: an in-process pytester run configures a
# session of its own inside the outer one and unconfigures it when done.
_CONFIGS: list[Any] = []


def bind(config: Any) -> None:
    """Called by the plugin's pytest_configure: this session's temp folder holds the shared values."""
    _CONFIGS.append(config)


def unbind(config: Any) -> None:
    """Called by the plugin's pytest_unconfigure."""
    if config in _CONFIGS:
        _CONFIGS.remove(config)


def folder_of(config: Any) -> Path | None:
    """The shared folder of the run `config` belongs to (see the module docstring); None without a temp folder
    (-p no:tmpdir)."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return None
    base = Path(factory.getbasetemp())
    return (base.parent if getattr(config, "workerinput", None) is not None else base) / "run-shared"


def folder() -> Path | None:
    """The shared folder of the session running now; None outside a session (a plain script: compute in place)."""
    return folder_of(_CONFIGS[-1]) if _CONFIGS else (Path(os.environ[ENV]) if os.environ.get(ENV) else None)


def key_of(name: str, *parts: object) -> str:
    """A file-name-safe key: `name` (what is shared, readable in the folder) and a hash of the parts it depends on."""
    return f"{name}-" + hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:24]


def once(key: str, compute: Callable[[], T]) -> T:
    """compute(), or what another process of this run computed for `key`."""
    return once_in(folder(), key, compute)


def once_in(where: Path | None, key: str, compute: Callable[[], T]) -> T:
    """compute(), or what another process computed for `key` in `where`: an exclusive lock per key, so a second
    process waits for the first instead of computing it too. `where` None: compute here, share nothing."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock to share with, compute here
        where = None
    if where is None:
        return compute()
    where.mkdir(parents=True, exist_ok=True)
    done = where / f"{key}.pickle"
    with open(where / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done.exists():
            with open(done, "rb") as fh:
                return pickle.load(fh)  # written by a process of this run, below
        value = compute()
        tmp = done.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, done)
        return value


# A JSON file this large or larger is parsed once per run and read back by the run's other processes: unpickling a
# recording's floats is ~9x faster than parsing their text, and below this size the lock and the file cost about what
# sharing saves. A full run parsed its recordings ~31,000 times across 88 processes, the 610 files over it 2,635 times
# (8.4 s of JSON; 2026-12-06).
SHARED_JSON_BYTES = 64 * 1024


def json_document(path: Path, text: str) -> Any:
    """json.loads(text), `text` being the file at `path` as read: for a large file, the value parsed once in this run
    (keyed by the file's identity: path, size, modification time, inode) and unpickled by every other process."""
    if len(text) < SHARED_JSON_BYTES or folder() is None:
        return json.loads(text)
    st = path.stat()
    return once(key_of("json", path.resolve(), st.st_size, st.st_mtime_ns, st.st_ino), lambda: json.loads(text))
