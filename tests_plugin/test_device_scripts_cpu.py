"""The device-side scripts that have no other CPU test: they must at least parse and plan here,
since the lent GPU's minutes are too scarce to find a syntax error there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import device_scripts
import pytest

from pytest_anatomy.kernels.registry import shape_label
from pytest_anatomy.specs.hardware import HARDWARE

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", ["x2_visit.sh", "kernels_profile.sh", "live_session.sh", "slim_tree.sh", "stage_split.sh"])
def test_shell_scripts_parse(script: str) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    done = subprocess.run([bash, "-n", str(REPO / "scripts" / "device" / script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_profile_plan_maps_every_rung_to_a_marker(capsys: pytest.CaptureFixture[str]) -> None:
    profile = device_scripts.load("kernels_profile")
    launches = profile.plan()
    assert profile.main(["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(launches) and [int(line.split()[0]) for line in lines] == list(range(1, len(lines) + 1))
    assert any("softmax" in line and "128x152064" in line for line in lines)
    assert not any("x3-registers" in line and "128x152064" in line for line in lines)  # refused rungs are skipped


def test_stage_split_round_trip(tmp_path: Path) -> None:
    """A folder split into parts, staged part by part and joined comes back byte for byte; a missing part is an
    error that names it, not a damaged unpack (the device runs this between calls it cannot repeat cheaply)."""
    bash = shutil.which("bash")
    if bash is None or shutil.which("sha256sum") is None:
        pytest.skip("no bash/coreutils here")
    repo = tmp_path / "repo"
    (repo / "scripts" / "device").mkdir(parents=True)
    (repo / ".git" / "info").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "device" / "stage_split.sh", repo / "scripts" / "device")
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    payload = bytes(range(256)) * 12_000  # 3 MB: three parts of 1 MiB
    (src / "a.bin").write_bytes(payload)
    (src / "sub" / "b.txt").write_text("b\n")
    script = ["bash", "scripts/device/stage_split.sh"]

    def run(*args: str, stage: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*script, *args], cwd=repo, capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "STAGE": str(stage)})

    done = run("split", "t", str(src), "1", stage=tmp_path / "stage")
    assert done.returncode == 0, done.stderr
    parts = sorted((repo / ".devstage" / "t").iterdir())
    assert [p.name for p in parts] == ["p00", "p01", "p02"]
    for p in parts:
        assert run("put", "t", str(p), stage=tmp_path / "stage").returncode == 0
    done = run("join", "t", str(tmp_path / "dest"), stage=tmp_path / "stage")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "dest" / "a.bin").read_bytes() == payload and (tmp_path / "dest" / "sub" / "b.txt").read_text() == "b\n"
    # a part never staged: the checksum names the problem
    for p in parts[1:]:
        assert run("put", "t", str(p), stage=tmp_path / "stage2").returncode == 0
    done = run("join", "t", str(tmp_path / "dest2"), stage=tmp_path / "stage2")
    assert done.returncode == 4 and "missing or damaged" in done.stderr


def test_slim_tree_refuses_a_commit_while_recordings_are_hidden(tmp_path: Path) -> None:
    """`hide` stages the hidden folders' deletion; a commit then would delete every hidden recording (2026-12-02 08:31,
    amended before it left the checkout). The hook slim_tree.sh installs refuses it; after `unhide` commits go on."""
    bash, git = shutil.which("bash"), shutil.which("git")
    if bash is None or git is None:
        pytest.skip("no bash/git here")
    repo = tmp_path / "repo"
    (repo / "scripts" / "device").mkdir(parents=True)
    (repo / "results" / "h200" / "batches").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "device" / "slim_tree.sh", repo / "scripts" / "device" / "slim_tree.sh")
    (repo / "results" / "h200" / "batches" / "run.json").write_text("{}\n")

    def sh(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=repo, capture_output=True, text=True,
                              env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})

    assert sh(git, "init", "-q").returncode == 0
    sh(git, "add", "-A")
    assert sh(git, "commit", "-qm", "data").returncode == 0
    assert sh(bash, "scripts/device/slim_tree.sh", "hide", "live").returncode == 0
    (repo / "notes.txt").write_text("x\n")
    sh(git, "add", "notes.txt")
    refused = sh(git, "commit", "-qm", "while hidden")
    assert refused.returncode != 0 and "slim_tree.sh unhide" in refused.stderr
    assert sh(bash, "scripts/device/slim_tree.sh", "unhide").returncode == 0
    assert sh(git, "commit", "-qm", "after unhide").returncode == 0
    assert sh(git, "ls-files", "results/h200/batches/run.json").stdout.strip() == "results/h200/batches/run.json"


def _wait(tmp_path: Path, name: str, seconds: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "OUT": str(out), "ANATOMY_LIVE_DIR": str(tmp_path / "live")}
    done = subprocess.run(["bash", str(REPO / "scripts" / "device" / "live_session.sh"), "wait", name, seconds],
                          capture_output=True, text=True, env=env, timeout=60)
    return done, out


def test_waiting_on_a_machine_without_the_session_stops_at_once(tmp_path: Path) -> None:
    """A fresh machine (the one that ran `start` was given back) has no session: wait says so and exits 3 instead of
    spending its whole limit of device time."""
    if shutil.which("bash") is None:
        pytest.skip("no bash here")
    done, out = _wait(tmp_path, "full", "560")
    assert done.returncode == 3 and "no session 'full' on this machine" in done.stderr, done.stderr
    assert not any(out.iterdir())


def test_a_wait_that_runs_out_packs_the_recordings_written_so_far(tmp_path: Path) -> None:
    """Still running when the wait's time is up: the recordings already written come back with this call (partial),
    so a machine lost before the next wait loses none of them."""
    if shutil.which("bash") is None or shutil.which("xz") is None or shutil.which("tar") is None:
        pytest.skip("no bash/xz/tar here")
    session = tmp_path / "live" / "full"
    (session / "results" / "any-card" / "kernels").mkdir(parents=True)  # a folder name only
    (session / "results" / "any-card" / "kernels" / "x@20261203T000000Z.json").write_text("{}\n")
    (session / "log").write_text("[anatomy +   1.0s] measuring kernels/x on any-card ...\n")
    done, out = _wait(tmp_path, "full", "0")
    assert done.returncode == 0 and "still running after 0s" in done.stdout, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["full.partial.log.xz", "results-full.partial.tar.xz"]
    listed = subprocess.run(["tar", "-tJf", str(out / "results-full.partial.tar.xz")], capture_output=True, text=True)
    assert listed.stdout.split() == ["results/any-card/kernels/x@20261203T000000Z.json"]


# The next visit's profile (docs/RECORDING.md, "Planned for the next visit"): s18 beside cuBLAS fp32 and s9 at the
# 32-row FFN shape, where the whole plan profiles the sgemm rungs at 4096^3 only.
SMALL_M = "32x18944x3584"
SMALL_M_ONLY = [f"sgemm.{r}.{SMALL_M}" for r in ("s18-fp32-small-m-splitk", "s0-cublas", "s9-cp-async-pipeline")]


def test_profile_only_picks_the_named_rungs_at_the_named_shape(capsys: pytest.CaptureFixture[str]) -> None:
    profile = device_scripts.load("kernels_profile")
    launches = profile.plan(SMALL_M_ONLY)
    assert sorted((lad, v.id, shape_label(s)) for lad, v, s in launches) == sorted(
        tuple(i.split(".")) for i in SMALL_M_ONLY)
    # a rung named without a shape gets the plan's shapes for it: the timing shape
    assert [(v.id, shape_label(s)) for _, v, s in profile.plan(["sgemm.s18-fp32-small-m-splitk"])] == [
        ("s18-fp32-small-m-splitk", "4096x4096x4096")]
    # a whole ladder: every rung the default plan profiles there, nothing else
    assert profile.plan(["reduction"]) == [x for x in profile.plan() if x[0] == "reduction"]
    assert profile.main(["--dry-run", "--only", ",".join(SMALL_M_ONLY)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


@pytest.mark.parametrize(("only", "says"), [
    ("sgemm.s18.32x18944x3584", "no rung 's18' in sgemm"),
    ("sgemm.s18-fp32-small-m-splitk.32x1", "sgemm is not timed at 32x1 (shapes: 4096x4096x4096, "),
    ("gemm", "no ladder 'gemm'"),
], ids=["rung", "shape", "ladder"])
def test_profile_only_refuses_an_unknown_id_in_one_line(only: str, says: str) -> None:
    profile = device_scripts.load("kernels_profile")
    with pytest.raises(SystemExit) as exc:
        profile.main(["--dry-run", "--only", only])
    message = str(exc.value.code)
    assert message.startswith(f"--only {only}: {says}") and "\n" not in message


def test_a_profile_at_the_small_m_shape_imports_as_recordings_of_that_shape(tmp_path: Path) -> None:
    """The manifest `--only` writes and a report of its launches import as ncu.sgemm.<rung>.32x18944x3584, beside
    (never over) the 4096^3 profiles: the importer names a recording by its manifest's shape."""
    from pytest_anatomy import recordings
    from pytest_anatomy.importers.ncu import import_ncu

    profile = device_scripts.load("kernels_profile")
    manifest = profile.manifest_of(profile.plan(SMALL_M_ONLY))
    header = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
              '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
              '"Rule Description","Estimated Speedup Type","Estimated Speedup"')
    rows, kid = ["==PROF== Connected", header], 0

    def row(name: str, grid: str, metric: str, value: str) -> str:
        return (f'"{kid}","1","python3","h","{name}","1","7","(256, 1, 1)","{grid}","0","9.0",'
                f'"GPU Speed Of Light Throughput","{metric}","","{value}","","","","",""')
    for m in manifest:
        rows.append(row("anatomy_marker", f"({m['marker_grid']}, 1, 1)", "Duration", "10"))
        kid += 1
        for name in m["kernels"]:
            rows += [row(name.removeprefix("torch: "), "(148, 1, 1)", "Duration", "100,000"),
                     row(name.removeprefix("torch: "), "(148, 1, 1)", "dram__bytes_read.sum", "271,581,184")]
            kid += 1
    (tmp_path / "ncu.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "profile-manifest.json").write_text(json.dumps({"provenance": {"date_utc": "2026-12-01T10:00:00+00:00"},
                                                                "launches": manifest}))
    results = tmp_path / "results"
    card = sorted(HARDWARE)[0]  # the importer files under any card's name; which one is not the point here
    import_ncu(tmp_path / "ncu.csv", tmp_path / "profile-manifest.json", results, hardware=card,
               recorded_at="2026-12-01T10:00:00Z")
    rec = recordings.load_latest(results, card, "kernels", f"ncu.sgemm.s18-fp32-small-m-splitk.{SMALL_M}")
    assert rec.data["shape"] == SMALL_M
    assert [k["name"] for k in rec.data["kernels"]] == ["sgemm_fp32_small_m_splitk", "sgemm_splitk_reduce"]
    assert rec["gpu_time_s"].value == pytest.approx(2e-4)  # the split's two kernels, summed
