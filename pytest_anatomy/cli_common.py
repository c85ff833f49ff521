"""What every pytest-anatomy subcommand shares: argument checks and how a refusal is printed.

Its own module so that cli.py and cli_latency.py (which cli.py loads for `predict latency`) both
use it without importing each other."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def non_empty(text: str) -> str:
    """argparse type for a name: an empty one would resolve to the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text.strip()


def non_empty_path(text: str) -> Path:
    """argparse type for a file or folder: an empty one is Path(""), the current folder, where a download or an
    import would land in the checkout unasked."""
    return Path(non_empty(text))


def error(exc: BaseException) -> int:
    """One line on stderr, exit 2: every refused input and impossible plan ends here. A file the system refused is
    named with the system's reason ("PATH: No such file or directory"), not as errno's tuple."""
    if isinstance(exc, OSError) and exc.strerror:
        message = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    else:
        message = str(exc.args[0]) if exc.args else str(exc)
    print(f"pytest-anatomy: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def recordings_folder(text: str) -> Path:
    """argparse type for a --results the calibration reads: a given path that is not a folder (a typo, a file) was
    read as "no recordings", and the answer silently became the datasheet roofline's. Only a given path is checked:
    the default `results` may be absent outside the checkout, which the answer's notes say."""
    path = Path(non_empty(text))
    if not path.is_dir():
        problem = " is a file, not a folder of recordings" if path.exists() else ": no such folder"
        raise argparse.ArgumentTypeError(f"{text}{problem}; pass the checkout's results folder (or one shaped like it)")
    return path


def warn(message: str) -> None:
    print(f"pytest-anatomy: warning: {message}", file=sys.stderr)


def quantization_method(text: str) -> str:
    """argparse type for --quantization: a method theory/quant_bytes.py lays out, else one line naming them."""
    from pytest_anatomy.theory.quant_bytes import VLLM_METHODS

    if text not in VLLM_METHODS:
        raise argparse.ArgumentTypeError(f"unknown method {text!r}; known: {', '.join(VLLM_METHODS)}")
    return text
