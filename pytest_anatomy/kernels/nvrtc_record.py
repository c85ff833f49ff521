"""A committed record of compile.py's results for the kernel checks, read back while their inputs are unchanged.

    python -m pytest_anatomy.kernels.nvrtc_record [--record FILE]

A cold run (CI's clean clone) compiled every kernel source NVRTC reports on at least twice (compile.py confirms a
cubin before it trusts it) and disassembled it: ~120 s of NVRTC and cuobjdump across the 2 xdist workers
(2026-12-06, a cold run of tests_kernels and the replays that read it: 164 confirming compiles 59 s, 64 compiles of
check_compiles 32 s, 44 SASS dumps 25 s). This record holds what those compiles gave: compile.py's ptxas reports,
SASS counts, loop bodies and check_compiles answers, each under its disk cache name (a hash of its source text,
target, options, defines and tool versions), with `sources_key()`: a hash of every kernel source, compile.py (which
parses the tools' output) and the NVRTC and cuobjdump versions. While the key is this checkout's, `use` gives
compile.py the entries (compile.RECORDED), which it reads before its disk cache; otherwise compile.py compiles as it
did, and test_kernels_nvrtc_record fails naming the command above, which writes the record from a quiet run of
tests_kernels with the record off and a fresh cache (a few minutes, single process: a compile starved of the CPU
confirms nothing). The SASS listing (compile.sass_text, ~1.6 MB for x10) is not recorded: its one source compiles.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels.registry import CUDA_DIR

KINDS = ("ptxas", "sass", "loops", "compiles")  # compile.py's cache folders the record holds
ENV = "PYTEST_ANATOMY_NVRTC_RECORD"  # "off": compile as though no record were committed (the refresh's own run)
ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "tests_kernels" / "nvrtc-record.json"


def refresh_command(path: Path = DEFAULT) -> str:
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return f"python -m pytest_anatomy.kernels.nvrtc_record --record {shown}"


def sources_key() -> str:
    """What the recorded results depend on beyond each entry's own name: the kernel sources (a header one includes is
    in no entry's name), compile.py's parsing and options, and the NVRTC and cuobjdump versions. ToolMissing where
    NVRTC or cuobjdump is absent (the checks that read the record skip there)."""
    digest = hashlib.sha256(f"{kc.nvrtc_version()}\0{kc._version(kc.find_tool('cuobjdump'))}".encode())
    for path in sorted(p for p in CUDA_DIR.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(CUDA_DIR)).encode() + b"\0" + path.read_bytes())
    digest.update(Path(kc.__file__).read_bytes())
    return digest.hexdigest()


def load(path: Path = DEFAULT) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def recorded_entries(path: Path = DEFAULT) -> dict[str, dict[str, Any]] | None:
    """The record's entries where it is this checkout's; None where it is absent, stale, switched off or a tool is
    missing (then compile.py compiles, or the check skips)."""
    if os.environ.get(ENV) == "off":
        return None
    doc = load(path)
    try:
        current = sources_key()
    except kc.ToolMissing:
        return None
    if doc is None or doc.get("key") != current:
        return None
    return doc["entries"]


def use(path: Path = DEFAULT) -> bool:
    """Give compile.py the record's entries where it is this checkout's; whether it was."""
    entries = recorded_entries(path)
    if entries is None:
        return False
    for kind, named in entries.items():
        kc.RECORDED.setdefault(kind, {}).update(named)
    return True


def collect(cache_root: Path) -> dict[str, dict[str, Any]]:
    """The entries a run left in compile.py's disk cache under `cache_root` (its PYTEST_ANATOMY_CACHE), by kind."""
    return {kind: {p.stem: json.loads(p.read_text()) for p in sorted((cache_root / kind).glob("*.json"))}
            for kind in KINDS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the record of compile.py's results for tests_kernels from a "
                                                 "quiet single-process run with a fresh cache.")
    parser.add_argument("--record", type=Path, default=DEFAULT, metavar="FILE")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTEST_ANATOMY_CACHE": tmp, ENV: "off"}
        cmd = [sys.executable, "-m", "pytest", "tests_kernels", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if proc.returncode not in (0, 1):  # 1: a check failed, which a changed kernel may mean; the record still holds
            sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
            return proc.returncode
        if proc.returncode == 1:
            sys.stderr.write("some kernel checks failed (the record is written all the same):\n"
                             + proc.stdout[-3000:])
        entries = collect(Path(tmp))
    doc = {"key": sources_key(), "nvrtc": kc.nvrtc_version(), "cuobjdump": kc._version(kc.find_tool("cuobjdump")),
           "command": refresh_command(args.record), "entries": entries}
    args.record.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{args.record}: " + ", ".join(f"{len(v)} {k}" for k, v in entries.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
