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


# --- Nsight Compute reports -------------------------------------------------------------------
_NCU_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
               '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name",'
               '"Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"')


def _ncu_rows(kid: int, name: str, grid: str, metrics: dict[str, str], stall: str = "") -> list[str]:
    def row(section: str, metric: str, value: str, rule: str = "") -> str:
        return (f'"{kid}","1","python3","h","{name}","1","7","(256, 1, 1)","{grid}","0","9.0","{section}",'
                f'"{metric}","","{value}","","","{rule}","",""')
    out = [row("GPU Speed Of Light Throughput", m, v) for m, v in metrics.items()]
    if stall:
        out.append(row("WarpStateStats", "", "", stall))
    return out


def _ncu_files(tmp_path: Path, *, drop_second_marker: bool = False) -> tuple[Path, Path]:
    m = {"Duration": "1,000", "dram__bytes_read.sum": "4,096", "dram__bytes_write.sum": "0",
         "lts__t_bytes.sum": "8,192", "DRAM Throughput": "50", "Achieved Occupancy": "90", "Registers Per Thread": "32"}
    lines = ["==PROF== Connected", _NCU_HEADER]
    lines += _ncu_rows(0, "void at::distribution_elementwise_grid_stride_kernel<float>", "(4, 1, 1)", m)
    lines += _ncu_rows(1, "anatomy_marker", "(1, 1, 1)", {"Duration": "10"})
    lines += _ncu_rows(2, "reduce_grid_stride", "(1056, 1, 1)", m, "On average, each warp of this workload spends "
                       "92.3 cycles being stalled waiting for a scoreboard dependency on a L1TEX operation.")
    lines += _ncu_rows(3, "reduce_finish", "(1, 1, 1)", {**m, "Duration": "3,000", "DRAM Throughput": "10"})
    if not drop_second_marker:
        lines += _ncu_rows(4, "anatomy_marker", "(2, 1, 1)", {"Duration": "10"})
        lines += _ncu_rows(5, "reduce_vectorized", "(1056, 1, 1)", m)
    report = tmp_path / "ncu.csv"
    report.write_text("\n".join(lines) + "\n")
    manifest = tmp_path / "profile-manifest.json"
    manifest.write_text(json.dumps({"provenance": {"date_utc": "2026-11-30T02:17:00+00:00"}, "launches": [
        {"marker_grid": 1, "ladder": "reduction", "rung": "r5-grid-stride", "shape": "n268435456", "dtype": "fp32"},
        {"marker_grid": 2, "ladder": "reduction", "rung": "r7-vectorized", "shape": "n268435456", "dtype": "fp32"}]}))
    return report, manifest


def test_ncu_report_becomes_one_recording_per_rung(tmp_path: Path) -> None:
    from pytest_anatomy.importers.ncu import import_ncu

    report, manifest = _ncu_files(tmp_path)
    results = tmp_path / "results"
    done = import_ncu(report, manifest, results, hardware="h200", recorded_at="2026-11-30T02:17:00Z")
    assert sum(s == "wrote" for s, _ in done) == 4  # two raw files kept, two recordings
    rec = recordings.load_latest(results, "h200", "kernels", "ncu.reduction.r5-grid-stride.n268435456")
    assert [k["name"] for k in rec.data["kernels"]] == ["reduce_grid_stride", "reduce_finish"]  # inputs dropped
    assert rec["gpu_time_s"].value == pytest.approx(4e-6)  # 1,000 + 3,000 ns, summed
    assert rec["dram_read_bytes"].value == 8192
    assert rec["dram_throughput_pct"].value == pytest.approx((1000 * 50 + 3000 * 10) / 4000)  # duration-weighted
    assert rec["registers_per_thread"].value == 32
    assert "92.3 cycles" in rec.data["kernels"][0]["stalls"][0]
    assert (results / "h200" / "batches" / "20261130T021700Z" / "ncu.csv").read_bytes() == report.read_bytes()


def test_ncu_report_missing_a_rung_writes_nothing(tmp_path: Path) -> None:
    from pytest_anatomy.importers.ncu import NcuImportError, import_ncu

    report, manifest = _ncu_files(tmp_path, drop_second_marker=True)
    with pytest.raises(NcuImportError, match=r"no kernels profiled for manifest entries \[2\]"):
        import_ncu(report, manifest, tmp_path / "results", hardware="h200", recorded_at="2026-11-30T02:17:00Z")
    assert not (tmp_path / "results").exists()


def test_import_ncu_cli_takes_the_manifest_date_and_refuses_a_missing_one(tmp_path: Path, capsys) -> None:
    from pytest_anatomy.cli import main
    from pytest_anatomy.specs.hardware import HARDWARE

    card = sorted(HARDWARE)[0]  # any: the synthetic manifest names no GPU, so --hardware says which
    report, manifest = _ncu_files(tmp_path)
    assert main(["import-ncu", str(report), str(manifest), "--results", str(tmp_path / "r"), "--hardware", card]) == 0
    assert "4 written" in capsys.readouterr().out
    assert recordings.list_recordings(tmp_path / "r", card, "kernels", "ncu.")
    old = tmp_path / "old-manifest.json"
    old.write_text(json.dumps(json.loads(manifest.read_text())["launches"]))  # an older script: no date
    assert main(["import-ncu", str(report), str(old), "--results", str(tmp_path / "r2"), "--hardware", card]) == 2
    assert "pass --recorded-at" in capsys.readouterr().err
    assert main(["import-ncu", str(report), str(old), "--results", str(tmp_path / "r2"), "--hardware", card,
                 "--recorded-at", "2026-11-30T02:17:00Z", "--provenance", "ncu=2025.3.1.0"]) == 0
    rec = recordings.load_latest(tmp_path / "r2", card, "kernels", "ncu.reduction.r7-vectorized.n268435456")
    assert rec.provenance["ncu"] == "2025.3.1.0"


def test_ncu_rung_without_durations_is_refused(tmp_path: Path) -> None:
    from pytest_anatomy.importers.ncu import NcuImportError, rung_measurements

    with pytest.raises(NcuImportError, match="lack a positive Duration"):
        rung_measurements([{"name": "k", "metrics": {"DRAM Throughput": 50.0}}])


def test_latency_samples_travel_with_their_summary() -> None:
    """A plan run's raw values (result["samples"]) become the samples of the quantity they summarise,
    so a live decode step or prefill reaches pytest-benchmark as its real rounds."""
    from pytest_anatomy.importers.device import latency_live_results

    batch = {"schema": "pytest-anatomy/device-batch/v1", "provenance": {"date_utc": "2026-12-01T00:00:00+00:00"},
             "runs": [{"id": "m.decode.b8", "kind": "decode", "settings": {},
                       "result": {"step_time_s": 0.005, "samples": {"step_time_s": [0.004, 0.005, 0.006]}}},
                      {"id": "m.prefill.L128", "kind": "prefill", "settings": {},
                       "result": {"engine_prefill_s": {"median": 0.01, "n": 2}, "samples": {"engine_prefill_s": [0.01, 0.012]}}}]}
    out = latency_live_results(batch)
    assert out[("latency", "m.decode.b8")]["measurements"]["step_time_s"]["samples"] == [0.004, 0.005, 0.006]
    prefill = out[("latency", "m.prefill.l128")]["measurements"]
    assert prefill["engine_prefill_s.median"]["samples"] == [0.01, 0.012]
    assert not any(k.startswith("samples") for k in prefill)  # raw lists are not quantities


def test_keep_raw_stores_an_xz_upload_byte_for_byte(tmp_path) -> None:
    """An uploaded file that is xz already (ncu.csv.xz) is kept as it came, not compressed a second time; a large
    plain file is kept xz'd, and decompresses to its bytes."""
    import lzma

    from pytest_anatomy.importers.device import keep_raw

    # the hardware key is only the batch folder's name to keep_raw: no card is involved
    upload = tmp_path / "ncu.csv.xz"
    upload.write_bytes(lzma.compress(b"a,b\n" * 1000))
    _, kept = keep_raw(upload, tmp_path / "results", "any-card", "2026-12-02T00:18:13Z")
    assert kept.name == "ncu.csv.xz" and kept.read_bytes() == upload.read_bytes()
    big = tmp_path / "log.txt"
    big.write_bytes(b"0123456789abcdef" * (1 << 17))  # 2 MiB, over the compression threshold
    _, kept = keep_raw(big, tmp_path / "results", "any-card", "2026-12-02T00:18:13Z")
    assert kept.name == "log.txt.xz" and lzma.decompress(kept.read_bytes()) == big.read_bytes()


def test_keep_raw_xz_is_one_stream_that_round_trips_byte_for_byte(tmp_path) -> None:
    """keep_raw's fast filters still write one plain .xz layer (readers and `xz -d` unchanged): a large file
    decompresses, in one pass, to exactly its bytes, and is no second xz inside."""
    import json
    import lzma
    import random

    from pytest_anatomy.importers.device import keep_raw
    from pytest_anatomy.importers.xz import XZ_MAGIC

    rng = random.Random(0)  # raw-jsonl-like lines: repetitive keys, noisy numbers
    lines = [json.dumps({"part": f"qwen2.5-7b.decode.b{rng.choice((1, 16, 64))}", "i": i,
                         "t_s": rng.random(), "chunk_ms": [round(rng.gauss(4.7, 0.1), 4) for _ in range(8)]})
             for i in range(20000)]
    big = tmp_path / "latency-raw.jsonl"
    big.write_text("\n".join(lines) + "\n")
    assert big.stat().st_size > 2 * 2**20
    status, kept = keep_raw(big, tmp_path / "results", "any-card", "2026-12-02T02:33:51Z")
    payload = kept.read_bytes()
    assert status == "wrote" and kept.name == "latency-raw.jsonl.xz" and payload.startswith(XZ_MAGIC)
    once = lzma.decompress(payload, format=lzma.FORMAT_XZ)
    assert once == big.read_bytes() and not once.startswith(XZ_MAGIC)
    assert len(payload) < big.stat().st_size / 2


def test_import_ncu_files_under_the_card_the_manifest_names(tmp_path: Path, capsys) -> None:
    """The manifest's nvidia-smi line names the profiled card: without --hardware the recordings go under it (an
    H100 profile was once filed under h200, the flag's old default); a --hardware naming another card is refused,
    and a manifest naming none needs --hardware."""
    from pytest_anatomy.cli import main
    from pytest_anatomy.specs.hardware import HARDWARE

    card, other = [spec for _, spec in sorted(HARDWARE.items()) if spec.nvml_names][:2]
    report, manifest = _ncu_files(tmp_path)
    doc = json.loads(manifest.read_text())
    doc["provenance"]["nvidia_smi"] = f"{card.nvml_names[0]}, 580.159.04, 1980 MHz, 700.00 W"
    named = tmp_path / "named.json"
    named.write_text(json.dumps(doc))
    results = tmp_path / "r"
    assert main(["import-ncu", str(report), str(named), "--results", str(results)]) == 0
    assert recordings.list_recordings(results, card.name, "kernels", "ncu.")
    capsys.readouterr()
    assert main(["import-ncu", str(report), str(named), "--results", str(tmp_path / "r2"), "--hardware", other.name]) == 2
    err = capsys.readouterr().err
    assert f"--hardware {other.name} ({other.name}) but the manifest's nvidia-smi line names" in err
    assert not (tmp_path / "r2").exists()
    assert main(["import-ncu", str(report), str(manifest), "--results", str(tmp_path / "r3")]) == 2
    assert "the manifest names no GPU" in capsys.readouterr().err


def test_import_ncu_names_the_card_as_the_catalog_does_and_refuses_a_typo(tmp_path: Path, capsys) -> None:
    """--hardware in upper case or as NVML names the card files under the catalog name, as predict reads it; a typo
    is refused in one line instead of opening a card folder no test reads; a card recorded live keeps its own folder.
    Any catalog card with an NVML name shows it."""
    from pytest_anatomy.cli import main
    from pytest_anatomy.specs.hardware import HARDWARE

    card = next(spec for _, spec in sorted(HARDWARE.items()) if spec.nvml_names)
    report, manifest = _ncu_files(tmp_path)
    results = tmp_path / "r"
    for spelling in (card.nvml_names[0], card.name.upper()):
        assert main(["import-ncu", str(report), str(manifest), "--results", str(results), "--hardware", spelling]) == 0
    assert recordings.list_recordings(results, card.name, "kernels", "ncu.")
    capsys.readouterr()
    typo = f"{card.name}x"
    assert main(["import-ncu", str(report), str(manifest), "--results", str(results), "--hardware", typo]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"pytest-anatomy: error: --hardware {typo}: not in the catalog") and f"'{card.name}'" in err
    assert "\n" not in err and not (results / typo).exists()
    (results / "nvidia-l4").mkdir()  # a card named from the driver by a live session, not in the catalog
    assert main(["import-ncu", str(report), str(manifest), "--results", str(results), "--hardware", "nvidia-l4"]) == 0
    assert recordings.list_recordings(results, "nvidia-l4", "kernels", "ncu.")
