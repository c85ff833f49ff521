"""Each attention rung's architecture requirement (registry.Rung.requires) is where Triton itself stops.

A live session skips a rung whose requirement the card does not meet (gpu_arch), before compiling it: a Gluon rung
compiled for another architecture does not fail politely, Triton's LLVM aborts the process. So the requirement must
be the compiler's boundary: the triton.language rungs and flash-decoding compile for the oldest architecture of the
hardware catalog (sm_80: the first config of each, both masks; ~10 s cold, sm_75 takes 60 s), and each Gluon rung (sm_90a) fails just below (sm_89) and just
above (sm_100) its architecture; its sm_90 compile is test_flashattn_sm90.py's. Each compile runs in a fresh process
(this one may have TRITON_INTERPRET set, and an abort must not take pytest with it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import aot_records
import pytest

from pytest_anatomy.kernels.flashattn import aot
from pytest_anatomy.kernels.flashattn.registry import LADDER
from pytest_anatomy.specs.hardware import HARDWARE

OLDEST = min(spec.compute_capability for spec in HARDWARE.values() if spec.compute_capability)
ARCH = f"{OLDEST[0]}{OLDEST[1]}"


def _aot(*args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("triton") is None:  # not imported here: it would stop the interpreter tests of this
        pytest.skip("compiling for a GPU target needs triton: pip install -e '.[dev]'")  # process (they need TRITON_INTERPRET=1 set before triton's import)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-m", "pytest_anatomy.kernels.flashattn.aot", *args], capture_output=True,
                          text=True, env=env, timeout=600)


RECORD, RECORD_ARGS = f"sm{ARCH}-compile-record.json", ("--arch", ARCH)


def test_rungs_without_a_requirement_compile_for_the_oldest_catalog_architecture() -> None:
    """Every rung and flash-decoding at the oldest architecture: those without a requirement compiled (read from the
    committed record while the sources and Triton are its, aot_records), the others left out by name."""
    rows = aot_records.recorded_rows(RECORD, RECORD_ARGS)
    if rows is None:  # _aot skips where triton is not installed
        proc = _aot(*RECORD_ARGS, "--json")
        assert proc.returncode == 0, f"a rung without a requirement failed at sm_{ARCH}:\n{proc.stderr[-4000:]}"
        rows, left_out = json.loads(proc.stdout), proc.stderr
    else:
        left_out = "; ".join(aot.unmet_requirements(None, int(ARCH)))  # what the command prints of them
    assert {row["rung"] for row in rows} == {r.id for r in LADDER if not r.requires} | {"flash-decoding"}
    for r in (r for r in LADDER if r.requires):
        assert f"{r.id} needs {r.requires[0].arch}" in left_out


@pytest.mark.parametrize("name", sorted(p.name for p in aot_records.FOLDER.glob("*-compile-record.json")))
def test_every_record_is_this_checkouts(name: str) -> None:
    """Each committed aot record was written by this checkout's sources and Triton (else: the command that refreshes
    it), with the arguments its check asks for."""
    if importlib.util.find_spec("triton") is None:
        pytest.skip("the records are Triton's compiles: pip install -e '.[dev]'")
    doc = aot_records.load(name)
    assert doc is not None and doc.get("args") is not None, name
    assert aot_records.recorded_rows(name, tuple(doc["args"])) is not None, (
        f"{name} is another checkout's or Triton's compile: {aot_records.refresh_command(name, tuple(doc['args']))}")


@pytest.mark.parametrize("rung", [r for r in LADDER if r.requires], ids=lambda r: r.id)
def test_a_gluon_rung_fails_to_compile_on_both_sides_of_its_architecture(rung) -> None:
    (req,) = rung.requires
    major, minor = req.compute_capability
    below, above = (f"{major - 1}9" if minor == 0 else f"{major}{minor - 1}"), f"{major + 1}0"
    for arch in (below, above):
        proc = _aot("--arch", arch, "--rung", rung.id, "--ignore-requirements")
        assert proc.returncode != 0, f"{rung.id} compiled at sm_{arch}: its requirement {req.arch} is too strict"


def test_aot_refuses_a_rung_the_target_cannot_run_with_one_line() -> None:
    gluon = next(r for r in LADDER if r.requires)
    proc = _aot("--arch", ARCH, "--rung", gluon.id)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"aot: {gluon.id} needs {gluon.requires[0].arch}"), proc.stderr
