"""Incomplete or damaged importer input gets one line naming the file and the field, never a
traceback, and nothing is written."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from pytest_anatomy import cli
from pytest_anatomy.importers import device

GOOD: dict[str, Any] = {
    "schema": device.BATCH_SCHEMA,
    "provenance": {"date_utc": "2026-11-30T00:37:45+00:00", "command": "plan", "versions": {"vllm": "0.26.0"},
                   "nvidia_smi": {"summary": {"name": "NVIDIA H200", "driver": "580.159.04"}}},
    "runs": [{"id": "qwen2.5-7b.decode.b1", "settings": {"batch": 1}, "result": {"step_time_s": 0.0047}}],
}


def _drop(*keys: str) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        target = doc
        for k in keys[:-1]:
            target = target[k] if not k.isdigit() else target[int(k)]
        del target[keys[-1]]
    return mutate


def _set(value: Any, *keys: str) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        target = doc
        for k in keys[:-1]:
            target = target[k] if not k.isdigit() else target[int(k)]
        target[keys[-1] if not keys[-1].isdigit() else int(keys[-1])] = value
    return mutate


def _both(*mutations: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        for m in mutations:
            m(doc)
    return mutate


@pytest.mark.parametrize("mutate, field", [
    (_drop("provenance"), "provenance"),
    (_drop("provenance", "date_utc"), "provenance.date_utc"),
    (_set("yesterday", "provenance", "date_utc"), "provenance.date_utc"),
    (_set(["x"], "provenance", "nvidia_smi"), "provenance.nvidia_smi"),
    (_drop("runs"), "runs"),
    (_set("run", "runs", "0"), "runs[0]"),
    (_drop("runs", "0", "id"), "runs[0].id"),
    (_set([1, 2], "runs", "0", "result"), "runs[0] (qwen2.5-7b.decode.b1).result"),
    (_both(_set("kernels", "provenance", "kind"), _set({"timings": [{"samples_ms": [1]}]}, "runs", "0", "result")),
     "result.timings"),
    (_set({"engine": "ok"}, "runs", "0", "result"), "result.engine"),
])
def test_an_incomplete_batch_names_the_file_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      mutate: Callable[[dict[str, Any]], None], field: str) -> None:
    doc = copy.deepcopy(GOOD)
    mutate(doc)
    batch = tmp_path / "latency.json"
    batch.write_text(json.dumps(doc))
    code = cli.main(["import-device", str(batch), "--results", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(batch) in err and field in err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("content, problem", [
    (json.dumps(GOOD)[:-40].encode(), "not valid JSON"),
    (b'{"schema": "\xff"}', "not UTF-8 text"),
])
def test_a_cut_short_or_binary_batch_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    content: bytes, problem: str) -> None:
    batch = tmp_path / "latency.json"
    batch.write_bytes(content)
    assert cli.main(["import-device", str(batch), "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pytest-anatomy: error: {batch}: {problem}") and err.count("\n") == 1


def test_a_batch_stamped_in_the_future_is_refused_with_one_line(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    doc = copy.deepcopy(GOOD)
    doc["provenance"]["date_utc"] = "2099-01-01T00:00:00+00:00"
    batch = tmp_path / "latency.json"
    batch.write_text(json.dumps(doc))
    assert cli.main(["import-device", str(batch), "--results", str(tmp_path / "results"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "clock-skew allowance" in err and err.count("\n") == 1


def test_seed_bench_file_that_is_not_utf8_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "seed-results" / "01-decode-latency-anatomy" / "Results" / "Round2" / "03-perf-test"
    bench.mkdir(parents=True)
    (bench / "len_1024.json").write_bytes(b"\x89PNG\r\n")
    (tmp_path / "STUDY.md").write_text("study")
    code = cli.main(["import-seed", str(tmp_path / "seed-results"), "--study", str(tmp_path / "STUDY.md"),
                     "--results", str(tmp_path / "results"), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and "len_1024.json: not UTF-8 text" in err and err.count("\n") == 1


def test_every_committed_device_batch_still_passes_the_shape_check(tmp_path: Path) -> None:
    """The checks refuse damaged files, not real ones: each kept batch re-imports (dry run) to
    exactly the recordings already under results/. A batch kept by a live pytest session (its
    folder stamped to the microsecond) was recorded by the session itself, one recording per
    quantity: its files only have to pass the shape check."""
    results = Path(__file__).resolve().parents[1] / "results"
    imported = 0
    for folder in sorted(p for p in results.glob("*/batches/*") if p.is_dir()):
        live_kept = "." in folder.name
        batches = []
        for kept in folder.glob("*.json"):
            doc = json.loads(kept.read_text())
            if isinstance(doc, dict) and doc.get("schema") == device.BATCH_SCHEMA:
                batches.append(kept)
        if not batches:
            continue
        done = device.import_files(batches, results, dry_run=True)
        if live_kept:
            continue
        assert {status for status, _ in done} <= {"exists"}, folder  # a batch of no runs yields nothing
        imported += 1
    assert imported >= 10
