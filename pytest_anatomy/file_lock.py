"""One process at a time on a file-backed build: the emulator's shared libraries and precompiled header, and
kernels.compile's confirmed NVRTC cubins. xdist workers and the background report build ask for the same build at
the same moment; the second waits for the first instead of compiling beside it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(lib: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lib` with the suffix .lock (none where fcntl is missing: no lock, each process
    builds for itself, which is slower but gives the same files)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lib.with_suffix(".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes
        yield
