"""llama_visit.sh's last step on the CPU: scripts/device/pack_logs.sh packs everything a visit leaves in $OUT but the
batch documents (and the prebuilt build's pieces) into one logs.tar.xz, since a device call returns at most 8 files;
`pytest-anatomy import-device` keeps that archive verbatim beside the batch."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from pytest_anatomy.importers.device import import_files

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "scripts" / "device" / "pack_logs.sh"
VISIT = ROOT / "scripts" / "device" / "llama_visit.sh"
BATCH = Path(__file__).parent / "data" / "synthetic-llama-batch.json"


def _out(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    for name in ("llama.json", "ceilings.json", "run.log", "visit.log", "build.log", "models.log",
                 "qwen2.5-7b.q4_k_m.server-sweep.c_81920_np_64_fa_on.log", "sub/extra.txt",
                 "SHA256SUMS", "llama-bin.tar.xz.part-0"):
        (out / name).write_text(f"{name}\n")
    return out


@pytest.mark.skipif(shutil.which("xz") is None or shutil.which("tar") is None, reason="needs tar and xz")
def test_everything_but_the_batch_documents_goes_into_one_archive(tmp_path):
    out = _out(tmp_path)
    subprocess.run(["bash", str(PACK), str(out)], check=True, capture_output=True, text=True)
    left = sorted(p.name for p in out.iterdir())
    assert left == ["SHA256SUMS", "ceilings.json", "llama-bin.tar.xz.part-0", "llama.json", "logs.tar.xz"]
    with tarfile.open(out / "logs.tar.xz", "r:xz") as tar:
        names = sorted(tar.getnames())
        assert names == ["build.log", "models.log", "qwen2.5-7b.q4_k_m.server-sweep.c_81920_np_64_fa_on.log",
                         "run.log", "sub/extra.txt", "visit.log"]
        member = tar.extractfile("run.log")
        assert member is not None and member.read() == b"run.log\n"
    assert len(left) <= 8  # what a call returns


@pytest.mark.skipif(shutil.which("xz") is None or shutil.which("tar") is None, reason="needs tar and xz")
def test_import_device_keeps_the_archive_verbatim(tmp_path):
    out = _out(tmp_path)
    subprocess.run(["bash", str(PACK), str(out)], check=True, capture_output=True, text=True)
    (out / "llama.json").write_bytes(BATCH.read_bytes())
    done = import_files([out / "llama.json", out / "logs.tar.xz"], tmp_path / "results")
    kept = [Path(p) for status, p in done if p.endswith("logs.tar.xz")]
    assert len(kept) == 1 and kept[0].parent.parent.name == "batches"
    assert kept[0].read_bytes() == (out / "logs.tar.xz").read_bytes()


def test_the_visit_packs_its_logs_last():
    text = VISIT.read_text()
    assert 'bash "$REPO/scripts/device/pack_logs.sh" "$OUT"' in text
    assert text.rindex("pack_logs.sh") > text.rindex("llama_plan.py --phase measure")
    assert text.rindex("pack_logs.sh") > text.rindex("split -b 15M")
