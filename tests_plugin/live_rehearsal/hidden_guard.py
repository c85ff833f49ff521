"""pytest plugin for a CPU check: while a live session collects, no file under the folders `slim_tree.sh hide live`
leaves behind on a device may be opened (an import-time read of a kept batch stopped the 2026-12-02 08:30 session's
collection). An audit hook watches opens and directory listings during collection; collection_finish reports them."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_hits: list[str] = []
_watching = False


def hidden_folders() -> list[str]:
    text = (REPO / "scripts" / "device" / "slim_tree.sh").read_text()
    found = re.search(r"^LIVE=\(([^)]*)\)", text, re.M)
    assert found, "slim_tree.sh has no LIVE=(...) line"
    return [str(REPO / d) + os.sep for d in found.group(1).split()]


def _hook(event: str, args: tuple) -> None:
    if not _watching or event not in ("open", "os.listdir", "os.scandir") or not args or args[0] is None:
        return
    try:
        path = os.path.abspath(os.fsdecode(args[0])) + os.sep
    except TypeError:
        return  # a file descriptor
    if any(path.startswith(d) for d in _FOLDERS):
        _hits.append(path.rstrip(os.sep))


_FOLDERS = hidden_folders()


def pytest_collection(session) -> None:  # noqa: ANN001
    global _watching
    _watching = True


def pytest_collection_finish(session) -> None:  # noqa: ANN001
    global _watching
    _watching = False
    print(f"hidden-guard: {len(_hits)} opens under the hidden folders during collection")
    for hit in sorted(set(_hits))[:20]:
        print(f"hidden-guard: opened {hit}")


sys.addaudithook(_hook)
