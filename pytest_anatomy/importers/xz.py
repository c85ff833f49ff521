"""Kept device files through every xz layer."""

from __future__ import annotations

import lzma
from pathlib import Path

XZ_MAGIC = b"\xfd7zXZ\x00"


def read_kept(path: Path) -> bytes:
    """A kept device file's bytes through every xz layer: keep_raw xz's large files, and before 2026-12-02 it xz'd
    an already-xz'd upload a second time (every ncu.csv.xz kept under results/h200/batches before then)."""
    raw = path.read_bytes()
    while raw.startswith(XZ_MAGIC):
        raw = lzma.decompress(raw)
    return raw
