"""compile.py's disk cache, without NVRTC: a cubin is cached only when a second compile gives the same bytes, and an
entry is written whole. NVRTC 13.0.88 under load now and then allocates a kernel differently in one process (a full
parallel run, 2026-12-05, cached s16's loop bodies with other spills); its key, the inputs, cannot tell that compile
from the quiet one, so a single compile was cached and read by every later session. The compiler is faked here: each
test says which cubins its compiles return."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_anatomy.kernels import compile as kc

SOURCE = "sgemm/s16_fp32_ktile32.cu"  # any kernel file: its text is part of the key, the fake ignores it
QUIET, STRAY = b"quiet", b"stray"


@pytest.fixture
def compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The cubins the fake NVRTC returns, in order (the test fills it); the SASS of a cubin is one loop whose only
    instruction is named after it, so the cached loop bodies say which compile they came from."""
    queue: list[bytes] = []
    monkeypatch.setenv("PYTEST_ANATOMY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(kc, "nvrtc_version", lambda: "fake")
    monkeypatch.setattr(kc, "find_tool", lambda name: name)
    monkeypatch.setattr(kc, "_version", lambda tool: "fake")
    monkeypatch.setattr(kc, "_compile", lambda source, text, arch, defines=(): (queue.pop(0), ""))
    sass = "Function : k\n  /*0000*/  {op} ;\n  /*0010*/  BRA 0x0 ;\n"
    monkeypatch.setattr(kc, "_dump_sass", lambda source, cubin: sass.format(op=cubin.decode().upper()))
    yield queue


def _entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "loops").glob("*"))  # cache_dir() is <PYTEST_ANATOMY_CACHE>/emu


def test_a_cubin_two_compiles_agree_on_is_cached(compiles: list[bytes], tmp_path: Path) -> None:
    compiles.extend([QUIET, QUIET])
    assert kc.loop_bodies(SOURCE) == {"k": [{"QUIET": 1, "BRA": 1}]}
    (entry,) = _entries(tmp_path)  # one entry, no temp file beside it (written whole, then renamed)
    assert entry.suffix == ".json" and json.loads(entry.read_text()) == {"k": [{"QUIET": 1, "BRA": 1}]}
    assert kc.loop_bodies(SOURCE) == {"k": [{"QUIET": 1, "BRA": 1}]} and not compiles  # read back, no compile


def test_a_stray_compile_is_outvoted_before_it_is_cached(compiles: list[bytes], tmp_path: Path) -> None:
    # The poisoned run's case: the compile that writes the entry is the stray one. A second disagrees, a third decides.
    compiles.extend([STRAY, QUIET, QUIET])
    assert kc.loop_bodies(SOURCE) == {"k": [{"QUIET": 1, "BRA": 1}]} and not compiles
    (entry,) = _entries(tmp_path)
    assert "STRAY" not in entry.read_text()


def test_compiles_that_never_agree_are_returned_but_not_cached(compiles: list[bytes], tmp_path: Path) -> None:
    compiles.extend([STRAY, QUIET, b"other"])
    assert kc.loop_bodies(SOURCE) == {"k": [{"OTHER": 1, "BRA": 1}]}
    assert _entries(tmp_path) == []  # the next session compiles again instead of reading a guess
    compiles.extend([QUIET, QUIET])
    assert kc.loop_bodies(SOURCE) == {"k": [{"QUIET": 1, "BRA": 1}]} and len(_entries(tmp_path)) == 1


def test_a_starved_compile_is_not_counted(compiles: list[bytes], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Two starved compiles agreeing on a stray cubin cached it (s16's 80-byte stack, 2026-12-06): a compile whose wall
    # time exceeds STARVED x its CPU time is passed over; here the stray ones sleep (wall time, no CPU time).
    import time

    def fake(source: str, text: str, arch: str, defines: kc.Defines = ()) -> tuple[bytes, str]:
        cubin = compiles.pop(0)
        if cubin == STRAY:
            time.sleep(kc.SLACK_S * 2)
        return cubin, ""

    monkeypatch.setattr(kc, "_compile", fake)
    compiles.extend([STRAY, STRAY, QUIET, QUIET])
    assert kc.loop_bodies(SOURCE) == {"k": [{"QUIET": 1, "BRA": 1}]} and not compiles
    compiles.extend([STRAY] * kc.MAX_TRIES)  # never the CPU: returned, not cached
    assert kc.loop_bodies("sgemm/s9_cp_async_pipeline.cu") == {"k": [{"STRAY": 1, "BRA": 1}]} and not compiles
    assert len(_entries(tmp_path)) == 1


def test_the_key_spells_the_options_compile_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    # An option added to the table changes the code NVRTC gives, so it must give another entry too (the key once
    # read a copy of the table taken at import)
    monkeypatch.setattr(kc, "nvrtc_version", lambda: "fake")
    before = kc._key("text", "sm_90", ())
    monkeypatch.setitem(kc.NVRTC_OPTIONS, "max_register_count", 96)
    assert kc._key("text", "sm_90", ()) != before


def test_a_failed_write_leaves_no_entry_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(kc.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        kc._write(tmp_path / "entry.json", "{}")
    assert list(tmp_path.iterdir()) == []


def test_the_reports_of_one_source_share_its_confirmed_compile(compiles: list[bytes], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The ptxas report, the SASS counts, the listing and the loop bodies read one cached cubin: two compiles in all,
    # where each used to confirm its own (eight compiles of one source in a cold run)
    compiles.extend([QUIET, QUIET])
    monkeypatch.setattr(kc, "parse_ptxas", lambda log: {})
    assert kc.loop_bodies(SOURCE) == {"k": [{"QUIET": 1, "BRA": 1}]}
    assert kc.sass_counts(SOURCE) == {"k": {"QUIET": 1, "BRA": 1}}
    assert "QUIET" in kc.sass_text(SOURCE) and kc.resource_report(SOURCE) == {} and not compiles
    (cubin,) = sorted((tmp_path / "cache" / "cubin").glob("*"))
    assert json.loads(cubin.read_text())["cubin"] == "cXVpZXQ="  # base64 of the agreed bytes, b"quiet"
