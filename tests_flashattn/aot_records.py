"""Committed records of `aot` compiles (aot.py --record), read back while the compile's inputs are unchanged.

A record holds the rows `python -m pytest_anatomy.kernels.flashattn.aot ARGS --json` printed and aot.sources_key()
(the package's sources and the Triton version) when it was written. While the key is this checkout's and the record
was written with the same ARGS, a check reads the rows instead of compiling (each compile ~1 s of CPU; these records
hold ~60 of a cold CPU run's compiles); otherwise it compiles, and test_every_record_is_this_checkouts fails naming
the command that refreshes the record.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from pytest_anatomy.kernels.flashattn import aot

FOLDER = Path(__file__).resolve().parent


def refresh_command(name: str, args: tuple[str, ...]) -> str:
    return (f"python -m pytest_anatomy.kernels.flashattn.aot {' '.join(args)} --json "
            f"--record tests_flashattn/{name}").replace("  ", " ")


def load(name: str) -> dict | None:
    path = FOLDER / name
    return json.loads(path.read_text()) if path.exists() else None


def recorded_rows(name: str, args: tuple[str, ...]) -> list[dict] | None:
    """The record's rows where it is this checkout's compile of `aot *args`; None where it must compile."""
    if importlib.util.find_spec("triton") is None:  # no compiler here: the check skips where it would compile
        return None
    doc = load(name)
    if doc is None or doc["key"] != aot.sources_key() or doc.get("args") != list(args):
        return None
    return doc["rows"]
