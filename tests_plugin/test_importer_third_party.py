"""The third-party importer keeps raw files byte for byte, retypes nothing, and writes only once."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import lzma
from pathlib import Path

import pytest

from pytest_anatomy import cli, recordings
from pytest_anatomy.importers import third_party as tp
from pytest_anatomy.specs.model import load_model

ROOT = Path(__file__).resolve().parents[1]
THIRD_PARTY = ROOT.parent / "shared" / "third-party"
RESULTS = ROOT / "results"
needs_data = pytest.mark.skipif(not THIRD_PARTY.is_dir(), reason=f"{THIRD_PARTY} not present (lives in shared/)")
RAW = {"aiconfigurator": ("aiconfigurator", "silicon_sample.csv"),
       "argonne": ("argonne-llm-inference-bench", "All_results.csv"),
       "inference-sim": ("inference-sim-blis", "trained_physics_iter29.json")}


def _committed(source: str) -> list[recordings.Recording]:
    return list(tp.iter_recordings(RESULTS, source))


@pytest.mark.parametrize("source", sorted(RAW))
def test_raw_file_is_committed_once_and_restores_exactly(source: str) -> None:
    recs = _committed(source)
    assert recs, f"no committed recordings of {source}: run `pytest-anatomy import-third-party ../shared/third-party`"
    kept = {r.provenance["origin"]["kept_at"] for r in recs}
    assert len(kept) == 1, kept  # one raw file per source, whatever the hardware folders
    path = RESULTS / kept.pop()
    data = lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()
    assert {r.provenance["origin"]["sha256"] for r in recs} == {hashlib.sha256(data).hexdigest()}
    assert (path.parent / "LICENSE").is_file() and (path.parent / "SOURCE.txt").is_file()
    if THIRD_PARTY.is_dir():
        folder, name = RAW[source]
        assert data == (THIRD_PARTY / folder / name).read_bytes()


@pytest.mark.parametrize("source", ["aiconfigurator", "argonne"])
def test_every_measurement_is_the_raw_cell_of_its_line(source: str) -> None:
    """Nothing retyped: each number is parsed again here from the committed raw file's own line."""
    rec0 = _committed(source)[0]
    path = RESULTS / rec0.provenance["origin"]["kept_at"]
    lines = lzma.decompress(path.read_bytes()).decode().splitlines() if path.suffix == ".xz" else path.read_text().splitlines()
    metric_column = {"ttft_mean": ("silicon_ttft_ms", 1e3), "tpot_mean": ("silicon_tpot_ms", 1e3),  # ms -> s
                     "latency": ("Latency", 1.0), "throughput": ("Throughput", 1.0)}
    checked = 0
    for rec in _committed(source):
        header = rec.data["header"]
        for key, exp in rec.data["experiments"].items():
            cells = next(csv.reader(io.StringIO(lines[exp["csv_line"] - 1])))
            assert cells == exp["row"], (rec.name, key)
            row = dict(zip(header, cells, strict=True))
            for metric, (column, divisor) in metric_column.items():
                if f"{key}.{metric}" in rec.measurements:
                    assert rec[f"{key}.{metric}"].value == float(row[column]) / divisor
                    checked += 1
    assert checked >= 2 * sum(len(r.data["experiments"]) for r in _committed(source))


@needs_data
def test_import_is_complete_and_idempotent(tmp_path: Path) -> None:
    done, skipped = tp.run(THIRD_PARTY, tmp_path)
    assert {s for s, _ in done} == {"wrote"}
    again, _ = tp.run(THIRD_PARTY, tmp_path)
    assert {s for s, _ in again} == {"exists"}
    # every data row is either imported (as an experiment or an exact duplicate) or counted with a reason
    plans = tp.plan(THIRD_PARTY, tmp_path)
    with (THIRD_PARTY / "aiconfigurator" / "silicon_sample.csv").open() as fh:
        rows = sum(1 for _ in csv.DictReader(fh))
    imported = sum(len(r.data["experiments"]) for r in plans["aiconfigurator"].recordings)
    assert imported + sum(plans["aiconfigurator"].skipped.values()) == rows
    sim = json.loads((THIRD_PARTY / "inference-sim-blis" / "trained_physics_iter29.json").read_text())
    assert len(plans["inference-sim"].recordings) + sum(skipped["inference-sim"].values()) == len(sim["experiments"])
    # what is committed is what the importer writes today
    committed = {(r.hardware, r.suite, r.name) for s in RAW for r in _committed(s)}
    planned = {(r.hardware, r.suite, r.name) for p in plans.values() for r in p.recordings}
    assert committed == planned


def test_simulator_outputs_are_not_imported_as_measurements() -> None:
    for rec in _committed("inference-sim"):
        assert set(rec.measurements) == {"num_gpu_blocks", "cpu_kv_blocks"}
        assert "expected" not in rec.data["experiment"]


def test_unknown_settings_are_named() -> None:
    for source in RAW:
        for rec in _committed(source):
            assert rec.provenance["unknown"], rec.name
    argonne = _committed("argonne")[0]
    assert "card variant (memory size / form factor)" in argonne.provenance["unknown"]


@pytest.mark.parametrize("hf_id", sorted(tp.ALIASES))
def test_declared_aliases_have_the_catalog_shapes(hf_id: str) -> None:
    name, _why, shapes = tp.ALIASES[hf_id]
    spec = load_model(name)
    assert (spec.hidden_size, spec.intermediate_size, spec.num_layers, spec.num_attention_heads,
            spec.num_kv_heads, spec.vocab_size) == (
        shapes["hidden_size"], shapes["intermediate_size"], shapes["num_hidden_layers"],
        shapes["num_attention_heads"], shapes["num_key_value_heads"], shapes["vocab_size"])


def test_cli_refuses_a_wrong_folder_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["import-third-party", str(tmp_path), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "shared/third-party" in err
    assert not (tmp_path / "r").exists()
