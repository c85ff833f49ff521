"""Replay semantics: recordings found, missing, corrupt, superseded; `--anatomy-source`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_anatomy import recordings

REPLAY_TEST = """
import pytest
@pytest.mark.gpu
def test_replay(measured, reconcile):
    rec = measured("pool", hardware="rtx4090", suite="capacity")
    reconcile("kv_tokens", 120064.0, rec["kv_tokens"])
"""


def _write(root: Path, name: str = "pool", stamp: str = "2026-08-25T00:00:00Z", tokens: float = 120064) -> Path:
    rec = recordings.Recording(
        suite="capacity", name=name, hardware="rtx4090", recorded_at=stamp,
        provenance={"source": "seed", "engine": "vllm", "engine_version": "0.27.1"},
        measurements={"kv_tokens": {"value": tokens, "unit": "tokens"}},
    )
    return recordings.save(root, rec)


def test_replays_a_recording_with_its_provenance(pytester: pytest.Pytester) -> None:
    _write(pytester.path / "results")
    pytester.makepyfile(REPLAY_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=r.html")
    result.assert_outcomes(passed=1)
    entry = json.loads(pytester.path.joinpath("r.json").read_text())["reconciliations"][0]
    assert entry["source"] == "recorded"
    assert entry["provenance"]["engine_version"] == "0.27.1"
    assert entry["provenance"]["recording"].endswith("pool@20260825T000000Z.json")


def test_newest_recording_supersedes(pytester: pytest.Pytester) -> None:
    root = pytester.path / "results"
    _write(root, stamp="2026-08-25T00:00:00Z", tokens=1.0)
    _write(root, stamp="2026-09-01T00:00:00Z", tokens=120064)
    pytester.makepyfile(REPLAY_TEST)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_recorded_at_replays_that_session_not_the_newest(pytester: pytest.Pytester) -> None:
    """measured(..., recorded_at=) picks the recording measured beside another one (a session's
    ceilings for that session's runs), in either stamp form; a missing stamp skips naming it."""
    root = pytester.path / "results"
    _write(root, stamp="2026-08-25T00:00:00Z", tokens=120064)
    _write(root, stamp="2026-09-01T00:00:00Z", tokens=1.0)
    pytester.makepyfile("""
import pytest
@pytest.mark.gpu
@pytest.mark.parametrize("stamp", ["2026-08-25T00:00:00Z", "20260825T000000Z"])
def test_pinned(stamp, measured, reconcile):
    rec = measured("pool", hardware="rtx4090", suite="capacity", recorded_at=stamp)
    reconcile("kv_tokens", 120064.0, rec["kv_tokens"])
@pytest.mark.gpu
def test_absent(measured):
    measured("pool", hardware="rtx4090", suite="capacity", recorded_at="2027-01-01T00:00:00Z")
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*no recording *pool@20270101T000000Z.json*"])


def test_missing_recording_skips_naming_the_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(REPLAY_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no recording *results/rtx4090/capacity/pool@*.json and no live GPU*"])


def test_corrupt_recording_errors_naming_the_file(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "results" / "rtx4090" / "capacity"
    folder.mkdir(parents=True)
    (folder / "pool@20260825T000000Z.json").write_text('{"schema": "pytest-anatomy/recording/v1", ')
    pytester.makepyfile(REPLAY_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*pool@20260825T000000Z.json: not valid JSON*"])


def test_schema_violation_names_the_key(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "results" / "rtx4090" / "capacity"
    folder.mkdir(parents=True)
    doc = {"schema": "pytest-anatomy/recording/v1", "suite": "capacity", "name": "pool", "hardware": "rtx4090",
           "recorded_at": "2026-08-25T00:00:00Z", "provenance": {"source": "seed"},
           "measurements": {"kv_tokens": {"value": "120064", "unit": "tokens"}}}
    (folder / "pool@20260825T000000Z.json").write_text(json.dumps(doc))
    pytester.makepyfile(REPLAY_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*measurement 'kv_tokens' value '120064' is not a number*"])


def test_source_live_without_gpu_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """Not 800 skips and exit 0: one line saying there is no GPU, and a non-zero exit."""
    _write(pytester.path / "results")
    pytester.makepyfile(REPLAY_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--anatomy-source=live")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--anatomy-source=live: no GPU detected*--anatomy-source=recorded*"])
    assert "Traceback" not in result.stderr.str()


def test_live_measurement_is_recorded_when_asked(pytester: pytest.Pytester) -> None:
    """A fake live GPU (via monkeypatched detection) measures and writes a new recording."""
    pytester.makeconftest("""
        import pytest
        from pytest_anatomy.specs import hardware
        class FakeGPU:
            name = "NVIDIA H200"; catalog_name = "h200"
            def to_dict(self): return {"name": self.name}
        @pytest.fixture(autouse=True, scope="session")
        def _fake_gpu():
            pass
        def pytest_configure(config):
            hardware.detect = lambda: FakeGPU()
    """)
    pytester.makepyfile("""
        def test_live(measured, reconcile):
            rec = measured("blocks", live=lambda: {"measurements": {"num_gpu_blocks": {"value": 7, "unit": "blocks"}},
                                                    "provenance": {"engine": "fake"}})
            assert rec.source == "live"
            reconcile("num_gpu_blocks", 7, rec["num_gpu_blocks"])
    """)
    # A subprocess: the fake detect() must not leak into this (outer) session's GPU detection.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--anatomy-record")
    result.assert_outcomes(passed=1)
    files = list((pytester.path / "results" / "h200").rglob("blocks@*.json"))
    assert len(files) == 1
    doc = json.loads(files[0].read_text())
    assert doc["provenance"]["source"] == "live" and doc["provenance"]["gpu"] == {"name": "NVIDIA H200"}


def test_save_never_overwrites(tmp_path: Path) -> None:
    _write(tmp_path)
    with pytest.raises(FileExistsError, match="never overwritten"):
        _write(tmp_path)
    assert len(list(tmp_path.rglob("*.json"))) == 1
    assert not list(tmp_path.rglob(".tmp-*"))


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("provenance"), "missing required key"),
    (lambda d: d.update(schema="v0"), "schema is 'v0'"),
    (lambda d: d.update(recorded_at="yesterday"), "recorded_at='yesterday'"),
    (lambda d: d.update(name="Bad Name"), "name='Bad Name'"),
    (lambda d: d["measurements"].update(x={"value": 1}), "'value' and 'unit'"),
])
def test_validate_names_the_problem(mutate, message) -> None:
    doc = {"schema": "pytest-anatomy/recording/v1", "suite": "capacity", "name": "pool", "hardware": "rtx4090",
           "recorded_at": "2026-08-25T00:00:00Z", "provenance": {"source": "seed"},
           "measurements": {"kv_tokens": {"value": 1, "unit": "tokens"}}}
    mutate(doc)
    with pytest.raises(recordings.RecordingError, match=message.replace("(", r"\(")):
        recordings.validate(doc, "x.json")


def test_a_recording_file_is_parsed_once_and_again_when_it_changes(tmp_path: Path) -> None:
    """load_file caches by (path, size, mtime, inode): the same Recording for an unchanged file (the suites read
    each thousands of times), a fresh read when the file is replaced, and a malformed file still fails every time."""
    import os

    path = _write(tmp_path)
    first = recordings.load_file(path)
    assert recordings.load_file(path) is first
    doc = json.loads(path.read_text())
    doc["measurements"]["kv_tokens"]["value"] = 99
    path.write_text(json.dumps(doc))
    os.utime(path, ns=(1, 1))  # even with an old mtime, size and inode move the key, or mtime does
    again = recordings.load_file(path)
    assert again is not first and again.measurements["kv_tokens"]["value"] == 99
    path.write_text("{not json")
    for _ in range(2):
        with pytest.raises(recordings.RecordingError, match="not valid JSON"):
            recordings.load_file(path)


# A conftest whose detection answers with the catalog's first card (no architecture given)
FAKE_CATALOG_GPU = """
from pytest_anatomy.specs import hardware
class FakeGPU:
    name = "fake"; catalog_name = next(iter(hardware.HARDWARE)); compute_capability = None
    def to_dict(self): return {"name": self.name}
def pytest_configure(config):
    hardware.detect = lambda: FakeGPU()
"""


def test_a_measurement_another_suite_makes_live_is_shared_or_a_skip_naming_it(pytester: pytest.Pytester) -> None:
    """`measured(..., measured_by=SUITE)`: live, the session's measurement that suite made (never a second one),
    or, when that suite did not run, a skip naming it."""
    pytester.makeconftest(FAKE_CATALOG_GPU)
    pytester.makepyfile("""
        calls = []
        def test_a_makes_it(measured, target):
            calls.append(1)
            measured("engine", target=target, suite="capacity",
                     live=lambda: {"measurements": {"blocks": {"value": len(calls), "unit": "blocks"}}})
        def test_b_reads_it(measured, target):
            rec = measured("engine", target=target, suite="capacity", measured_by="tests_capacity")
            assert rec["blocks"].value == 1 and rec.source == "live"
    """)
    both = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--anatomy-source=live")
    both.assert_outcomes(passed=2)
    alone = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--anatomy-source=live", "-k", "reads_it", "-rs")
    alone.assert_outcomes(skipped=1)
    alone.stdout.fnmatch_lines(["*capacity/engine is measured live by tests_capacity, which did not measure it*"])


@pytest.mark.parametrize("source", ["live", "auto"])
def test_live_measurement_under_plain_xdist_is_a_usage_error(pytester: pytest.Pytester, source: str) -> None:
    """A GPU measured by two workers at once times neither: with a GPU detected, `-n` needs `--dist loadgroup`,
    under the default source (auto) as under live."""
    pytest.importorskip("xdist")
    pytester.makeconftest(FAKE_CATALOG_GPU)
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--anatomy-source={source}", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*live GPU measurements under xdist need --dist loadgroup*"])
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--anatomy-source=recorded").ret == 0


def test_same_instant_reads_both_spellings_of_a_stamp() -> None:
    assert recordings.same_instant("2026-12-04T10:12:03Z", "2026-12-04T10:12:03.000000Z")
    assert not recordings.same_instant("2026-12-04T10:12:03Z", "2026-12-04T10:12:03.500000Z")
    assert not recordings.same_instant("2026-12-04T10:12:03Z", None)
    assert recordings.same_instant("2026-11-30", "2026-11-30") and not recordings.same_instant("2026-11-30", "2026-11")
