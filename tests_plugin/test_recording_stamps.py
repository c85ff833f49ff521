"""Recording files: the stamp in the file name is recorded_at, never in the future, never shared;
unreadable files are refused with the file named."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pytest_anatomy import recordings


def _rec(stamp: str = "2026-08-25T00:00:00Z", name: str = "pool") -> recordings.Recording:
    return recordings.Recording(
        suite="capacity", name=name, hardware="rtx4090", recorded_at=stamp,
        provenance={"source": "seed"}, measurements={"kv_tokens": {"value": 120064, "unit": "tokens"}})


def _folder(root: Path) -> Path:
    return root / "rtx4090" / "capacity"


def test_a_file_stamp_that_disagrees_with_recorded_at_is_refused(tmp_path: Path) -> None:
    written = recordings.save(tmp_path, _rec())
    renamed = written.with_name("pool@20260901T000000Z.json")
    written.rename(renamed)
    with pytest.raises(recordings.RecordingError, match=r"pool@20260901T000000Z.json: file stamp '20260901T000000Z' "
                                                        r"does not match recorded_at='2026-08-25T00:00:00Z'"):
        recordings.load_latest(tmp_path, "rtx4090", "capacity", "pool")


@pytest.mark.parametrize("stamp, problem", [
    ("99999999T999999Z", "is not a real time"),
    ("20260825T0000Z", "is not a UTC stamp"),
    ("latest", "is not a UTC stamp"),
])
def test_an_impossible_file_stamp_is_refused_not_taken_as_newest(tmp_path: Path, stamp: str, problem: str) -> None:
    recordings.save(tmp_path, _rec())
    (_folder(tmp_path) / f"pool@{stamp}.json").write_text(json.dumps(_rec().to_json()))
    with pytest.raises(recordings.RecordingError, match=rf"pool@{stamp}.json: file stamp '{stamp}' {problem}"):
        recordings.load_latest(tmp_path, "rtx4090", "capacity", "pool")


def test_a_future_stamp_is_refused_on_load_and_on_save(tmp_path: Path) -> None:
    future = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with pytest.raises(recordings.RecordingError, match="clock-skew allowance"):
        recordings.save(tmp_path, _rec(future))
    assert not _folder(tmp_path).exists() or not list(_folder(tmp_path).iterdir())
    recordings.save(tmp_path, _rec())
    doc = _rec(future).to_json()
    (_folder(tmp_path) / f"pool@{recordings.stamp_of(future)}.json").write_text(json.dumps(doc))
    with pytest.raises(recordings.RecordingError, match="later than now"):
        recordings.load_latest(tmp_path, "rtx4090", "capacity", "pool")


def test_a_stamp_within_the_clock_skew_allowance_is_accepted(tmp_path: Path) -> None:
    """A device machine's clock a minute ahead of this one must not break an import."""
    ahead = (datetime.now(timezone.utc) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    recordings.save(tmp_path, _rec(ahead))
    assert recordings.load_latest(tmp_path, "rtx4090", "capacity", "pool").recorded_at == ahead


def test_two_recordings_of_one_name_at_the_same_time_are_an_error(tmp_path: Path) -> None:
    recordings.save(tmp_path, _rec("2026-08-25T00:00:00Z"))
    recordings.save(tmp_path, _rec("2026-08-25T00:00:00.000000Z"))  # a different file name, the same time
    with pytest.raises(recordings.RecordingError, match=r"pool@20260825T000000.000000Z.json and "
                                                        r"pool@20260825T000000Z.json are two recordings of 'pool' "
                                                        r"at the same time"):
        recordings.load_latest(tmp_path, "rtx4090", "capacity", "pool")


def test_different_names_with_the_same_stamp_are_fine(tmp_path: Path) -> None:
    recordings.save(tmp_path, _rec(name="pool"))
    recordings.save(tmp_path, _rec(name="pool.b"))
    assert recordings.load_latest(tmp_path, "rtx4090", "capacity", "pool").name == "pool"


def test_a_recording_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = recordings.save(tmp_path, _rec())
    path.chmod(0o644)
    path.write_bytes(b'{"schema": "\xff\xfe"}')
    with pytest.raises(recordings.RecordingError, match=r"pool@20260825T000000Z.json: not UTF-8 text \(byte 12"):
        recordings.load_file(path)


def test_a_non_finite_measurement_is_refused(tmp_path: Path) -> None:
    doc = _rec().to_json()
    doc["measurements"]["kv_tokens"]["value"] = float("nan")
    with pytest.raises(recordings.RecordingError, match="'kv_tokens' value is nan; a measurement is a finite number"):
        recordings.validate(doc, "x.json")


def test_a_replayed_measurement_names_its_hardware(tmp_path: Path) -> None:
    """Provenance without a `hardware` key (the seed's) still tells the ledger which GPU it was."""
    recordings.save(tmp_path, _rec())
    m = recordings.load_latest(tmp_path, "rtx4090", "capacity", "pool")["kv_tokens"]
    assert m.provenance["hardware"] == "rtx4090"
