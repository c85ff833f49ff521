"""The GPU tests' glue on the CPU: a fake H200 and fake measurements drive test_flashattn_gpu.py (and the N sweep)
live with --anatomy-record into a scratch results folder, then replay what it wrote.

What this proves before a GPU visit: the temporary target fixture takes the live GPU, the
session's ceilings are measured once and recorded beside the cases, each case is measured once
even when three tests use it, every recording passes the schema, and a replay finds each case's
own session ceilings by their stamp. The fake times are the predictions themselves (rung at its
mid efficiency, sdpa slower), so every reconciliation agrees: verdicts are not what is tested.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# The catalog card the fake GPU is detected as: it runs the H200's findings, and its recordings land in
# results/<FAKE_CARD>/ (the plugin text takes it in place of __CARD__).
FAKE_CARD = "h200"
FAKE_PLUGIN = '''
from pytest_anatomy.measure import flashattn_runner as fr
from pytest_anatomy.specs import hardware

FAKE_GPU = hardware.DetectedGPU(index=0, name="NVIDIA H200", backend="fake", memory_total_bytes=143771 * 2**20,
                                catalog_name="__CARD__")

CEIL = {"read_bandwidth.value": {"value": 4.4e12, "unit": "B/s"},
        "matmul_bf16.value": {"value": 7.9e14, "unit": "FLOP/s"}}

def _result(t, extra):
    m = lambda v: {"value": v, "unit": "s", "samples": [v, v]}
    # the second timing block 0.2% apart: the held-out decode line's tolerance is the blocks' difference
    return {"measurements": {"time": m(t), "time_repeat": m(t * 1.002), "sdpa_default_time": m(t * 1.1),
                             "sdpa_flash_time": m(t * 2.0)},
            "provenance": {"engine": "fake", **extra}, "data": {"fake": True}}

def fake_case(rung_id, *, batch, heads, n, head_dim, causal, kv_heads=None, **kw):
    import os
    import test_flashattn_gpu as g
    if rung_id == os.environ.get("FAKE_FAILING_RUNG"):
        raise fr.PreflightFailed(f"{rung_id} failed its child-process preflight (fake)")
    from pytest_anatomy.theory import attention as at
    case = g.Case(rung_id, batch, heads, n, head_dim, causal, kv_heads)
    ceil = at.Ceilings(CEIL["matmul_bf16.value"]["value"], CEIL["read_bandwidth.value"]["value"], "fake")
    pred, _, _ = g.predict(case, ceil, hardware.get_hardware("__CARD__"))
    return _result(pred.value, {"rung": rung_id, "config": {"BLOCK_M": 128}})

def fake_decode(*, batch, heads, kv_heads, context, head_dim, variant="fd-split-reduce", **kw):
    from pytest_anatomy.kernels.flashattn import registry
    from pytest_anatomy.theory import attention as at
    d = at.DecodeShape(batch, heads, kv_heads, context, head_dim)
    ceil = at.Ceilings(CEIL["matmul_bf16.value"]["value"], CEIL["read_bandwidth.value"]["value"], "fake")
    t = at.decode_time(d, at.decode_splits(d, 132, 64), ceil, launch_s=4e-6, bandwidth_fraction=0.93).value
    fused = registry.decode_variant(variant).fused_reduce  # fd2: the stated saving's mid off the two-kernel time
    return _result(t - registry.DECODE_FUSED_SAVING.mid * fused, {"kernel": "flash-decoding", "variant": variant})

def pytest_configure(config):
    hardware.detect = lambda *a, **k: FAKE_GPU
    fr.live_ceilings = lambda: {"measurements": CEIL, "provenance": {"kind": "ceilings", "engine": "fake"},
                                "data": {}}
    fr.live_case = fake_case
    fr.live_decode = fake_decode
'''


GPU_FILES = ("tests_flashattn/test_flashattn_gpu.py", "tests_flashattn/test_flashattn_sweep.py")


def _run(root: Path, plugin_dir: Path, results: Path, *args: str,
         files: tuple[str, ...] = GPU_FILES) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), os.environ.get("PYTHONPATH", "")])}
    # The fake times are the predictions, so the H200's findings (marks for hardware h200: 64k decoding and the
    # decode line's at 1k, 2k, 16k, 32k and 128k, N=512 D=64 full and causal, the 8k decode target, and r7's 9 sweep
    # cases of flashattn_r7_findings) all resolve: allowed here, since the verdicts are not what this test checks.
    # The 4 targets carry no finding since r8 met both on the H200 and the H100 (flashattn_r8_findings): on the fake
    # H200 they pass.
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "fake_h200", "-m", "gpu",
           "--anatomy-allow-resolved", "-o", f"anatomy_results_dir={results}", *files, *args]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300)


def _fake_plugin(tmp_path: Path) -> None:
    plugin = textwrap.dedent(FAKE_PLUGIN).replace("__CARD__", FAKE_CARD)
    (tmp_path / "fake_h200.py").write_text(plugin, encoding="utf-8")


def test_gpu_suite_runs_live_records_then_replays(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    _fake_plugin(tmp_path)
    results = tmp_path / "results"
    live = _run(root, tmp_path, results, "--anatomy-source=live", "--anatomy-record")
    assert live.returncode == 0, live.stdout[-3000:] + live.stderr[-2000:]
    assert "98 passed, 29 resolved" in live.stdout, live.stdout[-2000:]
    cases = sorted(p.name.split("@")[0] for p in (results / FAKE_CARD / "flashattn").glob("*.json"))
    # 28 forward cases (6 in fp16; r8's 4 joined 2026-12-04) + 8 decode contexts + fd2's 5 (8k-128k; 2026-12-04) + the
    # sweep's 18 (r6), 20 (r7) and 20 (r8) beyond them, each measured once (the sweep's N=4096 D=128 MHA cases are the
    # timing tests' recordings; fd2's saving test reads the two-kernel 8k and 64k the other tests measure) + 8k and 64k
    # forced to the short contexts' 8 splits (2026-12-07: one pair serves 1k, 2k and 4k, all launching 8)
    assert len(cases) == 101 and len(set(cases)) == 101
    assert {c for c in cases if c.endswith(".s8")} == {"fd.b8h32kv8l8192d128.s8", "fd.b8h32kv8l65536d128.s8"}
    assert sum(c.startswith("fd2.") for c in cases) == 5
    ceilings = list((results / FAKE_CARD / "ceilings").glob("ceilings@*.json"))
    assert len(ceilings) == 1  # measured once for the whole session
    stamp = json.loads(ceilings[0].read_text())["recorded_at"]
    for p in (results / FAKE_CARD / "flashattn").glob("*.json"):
        assert json.loads(p.read_text())["provenance"]["ceilings_recorded_at"] == stamp
    replay = _run(root, tmp_path, results, "--anatomy-source=recorded")
    assert replay.returncode == 0, replay.stdout[-3000:] + replay.stderr[-2000:]
    assert "98 passed, 29 resolved" in replay.stdout, replay.stdout[-2000:]


def test_a_failing_gluon_rung_fails_its_own_cases_and_the_targets_go_on_without_it(tmp_path: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch
                                                                                    ) -> None:
    """r7 failing live (its preflight, faked) fails its 26 cases (4 at the target shape, 22 in the sweep) and nothing
    else: every other case is measured and recorded (r8's too), and the targets judge the faster of r6 and r8."""
    root = Path(__file__).resolve().parents[1]
    _fake_plugin(tmp_path)
    results = tmp_path / "results"
    monkeypatch.setenv("FAKE_FAILING_RUNG", "r7-warp-specialized")
    live = _run(root, tmp_path, results, "--anatomy-source=live", "--anatomy-record")
    failed = [line for line in live.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 26 and all("r7-warp-specialized" in line for line in failed), live.stdout[-3000:]
    assert "26 failed, 81 passed, 20 resolved" in live.stdout, live.stdout[-2000:]
    cases = {p.name.split("@")[0] for p in (results / FAKE_CARD / "flashattn").glob("*.json")}
    assert len(cases) == 77 and not any("r7" in c for c in cases)


# per Gluon rung's sweep alone: its cases, and what its fake run reports (r7's 9 sweep findings and r8's 11 resolve:
# the fake times are their predictions)
SWEEP_ALONE = {"r7-warp-specialized": ("SWEEP_R7", "13 passed", ", 9 resolved"),
               "r8-pingpong": ("SWEEP_R8", "11 passed", ", 11 resolved")}


@pytest.mark.parametrize("rung", sorted(SWEEP_ALONE))
def test_a_gluon_rungs_sweep_alone_records_its_cases_then_replays(tmp_path: Path, rung: str) -> None:
    """The device call for r7's (r8's) N sweep alone (`live_session.sh start NAME
    tests_flashattn/test_flashattn_sweep.py -k r7-warp-specialized --anatomy-record`, `-k r8-pingpong`): its 22 cases measured live and recorded as
    fa2.<rung>.b{B}h{H}[kv{K}]n{N}d{D}.{full|causal}, each with time and both sdpa baselines, beside the session's
    ceilings; replayed, the sweep's tests read every one of them (the other rungs' 44 cases, not recorded in this
    scratch folder, skip; in results/ they are)."""
    import test_flashattn_sweep as sweep

    attr, passed, resolved = SWEEP_ALONE[rung]
    root = Path(__file__).resolve().parents[1]
    _fake_plugin(tmp_path)
    results = tmp_path / "results"
    only = ("tests_flashattn/test_flashattn_sweep.py",)
    live = _run(root, tmp_path, results, "--anatomy-source=live", "--anatomy-record", "-k", rung, files=only)
    assert live.returncode == 0, live.stdout[-3000:] + live.stderr[-2000:]
    assert f"{passed}, 44 deselected{resolved}" in live.stdout, live.stdout[-2000:]
    written = {p.name.split("@")[0]: json.loads(p.read_text()) for p in (results / FAKE_CARD / "flashattn").glob("*")}
    assert sorted(written) == sorted(c.name for c in getattr(sweep, attr))
    assert all({"time", "sdpa_default_time", "sdpa_flash_time"} <= set(r["measurements"]) for r in written.values())
    assert len(list((results / FAKE_CARD / "ceilings").glob("ceilings@*.json"))) == 1
    replay = _run(root, tmp_path, results, "--anatomy-source=recorded", "-rs", files=only)  # the whole sweep
    assert replay.returncode == 0, replay.stdout[-3000:] + replay.stderr[-2000:]
    assert f"{passed}, 44 skipped{resolved}" in replay.stdout, replay.stdout[-2000:]
    skipped = [line for line in replay.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 44 and not any(f"fa2.{rung}." in line for line in skipped), skipped


def test_the_fd2_call_records_its_cases_then_replays(tmp_path: Path) -> None:
    """fd2's device call (docs/RECORDING.md, its last section: `live_session.sh start fd2
    tests_flashattn/test_flashattn_gpu.py -k fd2 --anatomy-record`): its 7 tests pass on the fake H200 (a fake fd2 call
    takes the two-kernel time less the stated saving's mid), 7 calls are recorded beside one ceilings recording (fd2
    at 8k-128k and the two-kernel 8k and 64k it is timed beside), and replayed the same 7 tests read them."""
    root = Path(__file__).resolve().parents[1]
    _fake_plugin(tmp_path)
    results = tmp_path / "results"
    only = ("tests_flashattn/test_flashattn_gpu.py",)
    live = _run(root, tmp_path, results, "--anatomy-source=live", "--anatomy-record", "-k", "fd2", files=only)
    assert live.returncode == 0 and "7 passed" in live.stdout, live.stdout[-3000:] + live.stderr[-2000:]
    written = sorted(p.name.split("@")[0] for p in (results / FAKE_CARD / "flashattn").glob("*.json"))
    assert written == sorted([f"fd2.b8h32kv8l{c}d128" for c in (8192, 16384, 32768, 65536, 131072)]
                             + [f"fd.b8h32kv8l{c}d128" for c in (8192, 65536)]), written
    assert len(list((results / FAKE_CARD / "ceilings").glob("ceilings@*.json"))) == 1
    replay = _run(root, tmp_path, results, "--anatomy-source=recorded", "-k", "fd2", files=only)
    assert replay.returncode == 0 and "7 passed" in replay.stdout, replay.stdout[-3000:] + replay.stderr[-2000:]
