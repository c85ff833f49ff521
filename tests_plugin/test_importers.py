"""Importers keep device and seed data byte-faithful and never write half a batch."""

from __future__ import annotations

import hashlib
import json
import lzma
from pathlib import Path

import pytest

from pytest_anatomy import recordings
from pytest_anatomy.importers import device, seed

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def _batch(tmp: Path, run_ids: list[str], name: str = "latency.json") -> Path:
    doc = {
        "schema": device.BATCH_SCHEMA,
        "provenance": {"date_utc": "2026-11-30T00:37:45+00:00", "command": "plan", "versions": {"vllm": "0.26.0"},
                       "nvidia_smi": {"summary": {"name": "NVIDIA H200", "driver": "580.159.04"}}},
        "runs": [{"id": rid, "settings": {"batch": 1}, "result": {"step_time_s": 0.0047, "aggregate": {"ttft_s": {
            "n": 3, "p50": 0.03}}}} for rid in run_ids],
    }
    path = tmp / name
    path.write_text(json.dumps(doc))
    return path


def test_device_batch_becomes_recordings_and_raw_is_kept_verbatim(tmp_path: Path) -> None:
    batch = _batch(tmp_path, ["qwen2.5-7b.decode.b1", "qwen2.5-7b.prefill.L128"])
    big = tmp_path / "raw.jsonl"
    big.write_bytes(b'{"x": 1}\n' * 200_000)  # > 1 MiB: kept xz-compressed
    results = tmp_path / "results"
    done = device.import_files([batch, big], results)
    assert sum(1 for s, _ in done if s == "wrote") == 4
    rec = recordings.load_latest(results, "h200", "latency", "qwen2.5-7b.prefill.l128")
    assert rec["step_time_s"].value == 0.0047 and rec["step_time_s"].unit == "s"
    assert rec["aggregate.ttft_s.n"].unit == "count"
    assert rec.provenance["driver"] == "580.159.04" and rec.provenance["engine_version"] == "0.26.0"
    assert rec.provenance["origin"]["sha256"] == hashlib.sha256(batch.read_bytes()).hexdigest()
    kept = results / "h200" / "batches" / "20261130T003745Z"
    assert (kept / "latency.json").read_bytes() == batch.read_bytes()
    assert lzma.decompress((kept / "raw.jsonl.xz").read_bytes()) == big.read_bytes()
    # idempotent: nothing rewritten
    again = device.import_files([batch, big], results)
    assert {s for s, _ in again} == {"exists"}


def test_a_bad_run_id_writes_nothing(tmp_path: Path) -> None:
    batch = _batch(tmp_path, ["ok.run", "Bad Run!"])
    results = tmp_path / "results"
    with pytest.raises(device.DeviceImportError, match="bad run!"):
        device.import_files([batch], results)
    assert not results.exists() or not any(results.rglob("*.json"))


def test_unknown_gpu_and_non_batches_are_refused(tmp_path: Path) -> None:
    batch = _batch(tmp_path, ["a"])
    doc = json.loads(batch.read_text())
    doc["provenance"]["nvidia_smi"]["summary"]["name"] = "NVIDIA B300"
    batch.write_text(json.dumps(doc))
    with pytest.raises(device.DeviceImportError, match="B300"):
        device.import_files([batch], tmp_path / "r")
    other = tmp_path / "notes.log"
    other.write_text("hello")
    with pytest.raises(device.DeviceImportError, match="none of the files is a device batch"):
        device.import_files([other], tmp_path / "r")


def test_committed_h200_capacity_recordings_satisfy_the_accounting_identity() -> None:
    """Every recorded ledger is internally consistent: available = requested - terms (to the byte)."""
    names = recordings.list_recordings(ROOT / "results", "h200", "capacity", "vllm-ledger.")
    assert len(names) >= 15
    for name in names:
        rec = recordings.load_latest(ROOT / "results", "h200", "capacity", name)
        m = {k: v["value"] for k, v in rec.measurements.items()}
        if "kv_cache_memory_bytes" in json.dumps(rec.provenance.get("settings")) and \
                rec.provenance["settings"].get("kv_cache_memory_bytes"):
            continue  # a pinned pool skips the subtraction by design
        terms = m["model_memory_bytes"] + m["peak_activation_bytes"] + m["non_torch_increase_bytes"] \
            + m["cudagraph_estimate_bytes"]
        assert m["requested_memory_bytes"] - terms == m["available_kv_bytes"], name


seed_results = SHARED / "seed-results"


@pytest.mark.skipif(not seed_results.is_dir(), reason=f"{seed_results} not present (seed data lives in shared/)")
def test_seed_recordings_are_verbatim_copies_of_the_published_files() -> None:
    base = seed_results / seed.STAGE01
    checked = 0
    for path in (ROOT / "results" / "rtx4090").rglob("seed-*@*.json"):
        doc = json.loads(path.read_text())
        origin = doc["provenance"]["origin"]
        if "sha256" in origin and origin.get("path", "").startswith(seed.STAGE01):
            src = base / origin["path"][len(seed.STAGE01) + 1:]
            assert hashlib.sha256(src.read_bytes()).hexdigest() == origin["sha256"], path
            if src.suffix == ".json":
                assert doc["data"]["payload"] == json.loads(src.read_text()), path
            checked += 1
        elif "excerpt" in origin:
            seed.verify_quote(next(q for q in seed.QUOTES if q.name == doc["name"]),
                              (SHARED / "seed" / "STUDY.md").read_text())
            checked += 1
    assert checked >= 50


@pytest.mark.skipif(not seed_results.is_dir(), reason=f"{seed_results} not present")
def test_seed_import_is_idempotent(tmp_path: Path) -> None:
    first = seed.run(seed_results, SHARED / "seed" / "STUDY.md", tmp_path)
    again = seed.run(seed_results, SHARED / "seed" / "STUDY.md", tmp_path)
    assert all(s == "wrote" for s, _ in first) and all(s == "exists" for s, _ in again)


def test_a_misquoted_excerpt_is_refused() -> None:
    q = seed.QUOTES[0]
    with pytest.raises(seed.SeedImportError, match="excerpt not found"):
        seed.verify_quote(q, q.excerpt.replace("6.41", "6.42"))
