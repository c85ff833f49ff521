"""Every kernel the GPU sweep launches compiles for sm_90 on this CPU machine, and fits.

The GPU visit runs unattended: a rung that fails to lower (a TMA descriptor the compiler
refuses, a tile that overflows shared memory) would cost its tests there. Triton compiles ahead
of time for a named target with its bundled ptxas, so each rung's every autotune config is
compiled here, in a fresh process (this one may have TRITON_INTERPRET set), in the sweep's
dtype and head dim (bf16, D=128), both masks. The Gluon rung (r7) compiles through Gluon's own source class
(aot.compile_one): this is the only check of it a CPU machine can make (registry.NOT_INTERPRETED).

The every-config compile is read from a committed record (sm90-compile-record.json, written by `aot --record`) while
its key, a hash of the package's sources and the Triton version, is this checkout's: ~58 s of a cold CPU run (each
launch compiled plain and aligned since 2026-12-07), for a compile whose inputs did not change. Otherwise the module compiles (and test_the_committed_compile_record_is_this_
checkouts fails, naming the command that refreshes it); two of the record's launches, one per dialect, are compiled
again every run and must match it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

import aot_records
from pytest_anatomy import run_share
from pytest_anatomy.kernels.flashattn.registry import LADDER, TARGET_RUNGS

SM90_MAX_SHARED = 227 * 1024
RECORD, RECORD_ARGS = "sm90-compile-record.json", ("--all-configs",)
SPOT_CHECKED = ("r6-tma-pipelined", "r8-pingpong")  # one triton.language launch, one Gluon launch
# The fp16 compiles of the target rungs' first configs, at each head dim: (record, aot arguments)
FP16_RECORDS = {d: (f"sm90-fp16-d{d}-compile-record.json",
                    ("--dtype", "fp16", "--head-dim", str(d), *(a for r in TARGET_RUNGS for a in ("--rung", r))))
                for d in (128, 64)}


def _launch(row: dict) -> tuple:
    return row["rung"], row["kernel"], json.dumps(row["constexprs"], sort_keys=True), row["num_warps"], row["num_stages"]


@pytest.fixture(scope="module")
def compiled() -> list[dict]:
    if importlib.util.find_spec("triton") is None:  # not imported here: it would stop the interpreter tests of this
        pytest.skip("compiling for sm_90 needs triton: pip install -e '.[dev]'")  # process (they need TRITON_INTERPRET=1 set before triton's import)
    rows = aot_records.recorded_rows(RECORD, RECORD_ARGS)
    if rows is not None:
        return rows
    # once per run, whichever xdist worker asks first (~58 s cold): the fp16 test compares against it too
    return run_share.once(run_share.key_of("flashattn-sm90-all-configs"), _compile_every_config)


def _compile_every_config() -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-m", "pytest_anatomy.kernels.flashattn.aot", "--all-configs", "--json"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, f"sm_90 compilation failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout)


SPOT = """
import json, sys
from pytest_anatomy.kernels.flashattn import aot, registry
rows = []
for rid in sys.argv[1:]:
    fn, cx, w, s, nreg = aot.rung_jobs(registry.rung(rid), False)[0]
    rows.append({"rung": rid, **aot.compile_one(fn, cx, dtype="bf16", d=128, num_warps=w, num_stages=s, maxnreg=nreg)})
print(json.dumps(rows))
"""


def test_the_committed_compile_record_is_this_checkouts() -> None:
    """The record stands for this checkout's compile: its key is this checkout's sources' and Triton's, and the first
    launch of one triton.language rung and one Gluon rung compiles now to exactly its row (~5 s cold, both compiles)."""
    if importlib.util.find_spec("triton") is None:
        pytest.skip("compiling for sm_90 needs triton: pip install -e '.[dev]'")
    record = aot_records.load(RECORD)
    assert aot_records.recorded_rows(RECORD, RECORD_ARGS) is not None, (
        f"{RECORD} is missing or another checkout's or Triton's compile: "
        f"{aot_records.refresh_command(RECORD, RECORD_ARGS)}")
    assert record is not None
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", SPOT, *SPOT_CHECKED], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    recorded = {_launch(r): r for r in record["rows"]}
    for row in json.loads(proc.stdout):
        now = {k: v for k, v in row.items() if k != "compile_s"}
        assert recorded.get(_launch(now)) == now, (now, recorded.get(_launch(now)))


def test_every_rung_and_config_compiles_for_sm90_within_shared_memory(compiled: list[dict]) -> None:
    """Both compiles of each launch fit: the plain one and the one with the launch's alignment marks (aot.aligned_args),
    which is what launches and may take more (decode_split: 22,528 B plain, 38,912 B aligned, its K/V loads then
    pipelined through shared memory)."""
    rungs = {row["rung"] for row in compiled}
    assert rungs == {r.id for r in LADDER} | {"flash-decoding"}
    for row in compiled:
        assert row["shared_bytes"] <= SM90_MAX_SHARED and row["aligned"]["shared_bytes"] <= SM90_MAX_SHARED, row


TMA_RUNGS = {"r6-tma-pipelined", "r7-warp-specialized", "r8-pingpong"}


def test_forward_rungs_use_hopper_tensor_cores_and_the_tma_rungs_use_tma(compiled: list[dict]) -> None:
    for row in compiled:
        for facts in (row, row["aligned"]):
            if row["rung"] != "flash-decoding":
                assert facts["wgmma"] > 0, f"{row['rung']} {row['kernel']} lowered without wgmma: {row}"
            assert (facts["tma_loads"] > 0) == (row["rung"] in TMA_RUNGS), row


def test_only_the_gluon_rungs_are_warp_specialised(compiled: list[dict]) -> None:
    """gl.warp_specialize lowered for sm_90a: the producer warp gives registers up and the consumer warpgroups take
    them (setmaxnreg), under the kernel's register cap over all its warps (r7: 8 consumers + the producer's warpgroup;
    r8: 4 + 4 + the producer's, 12 each); no triton.language rung is warp-specialised on Hopper."""
    gluon = {r.id for r in LADDER if r.dialect == "gluon"}
    assert gluon == {"r7-warp-specialized", "r8-pingpong"}
    for row in compiled:
        assert (row["setmaxnreg"] > 0) == (row["rung"] in gluon), row
        if row["rung"] in gluon:
            assert row["total_warps"] == 12, row
            assert row["maxnreg"] is not None and row["maxnreg"] * 32 * row["total_warps"] <= 65536, row


@pytest.mark.parametrize("d", [128, 64])
def test_the_target_rungs_compile_in_fp16_too(d: int, compiled: list[dict]) -> None:
    """The fp16 cases the GPU session times (the target rungs at the target shape, test_flashattn_gpu.CASES): each
    target rung's first autotune config lowers for sm_90 in fp16, within shared memory, on wgmma and TMA, as in bf16,
    at D=128 and at D=64 (the sweep's and the Gluon rung's preflight head dim). Not every config: fp16 and bf16 are
    both 2 bytes, so a config's tiles, pipeline stages and shared memory do not depend on which; at D=128 this checks
    that (the same shared bytes as the bf16 compile of the same launch), and the bf16 fixture compiles every config.
    Every config in fp16 too cost ~13 s of the CPU suite's time (2026-12-06) for no launch the bf16 one does not
    already lower."""
    if importlib.util.find_spec("triton") is None:  # not imported here: it would stop the interpreter tests of this
        pytest.skip("compiling for sm_90 needs triton: pip install -e '.[dev]'")  # process (they need TRITON_INTERPRET=1 set before triton's import)
    name, args = FP16_RECORDS[d]
    rows = aot_records.recorded_rows(name, args)
    if rows is None:
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        proc = subprocess.run([sys.executable, "-m", "pytest_anatomy.kernels.flashattn.aot", *args, "--json"],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, f"fp16 sm_90 compilation failed:\n{proc.stderr[-4000:]}"
        rows = json.loads(proc.stdout)
    assert {r["rung"] for r in rows} == set(TARGET_RUNGS)
    assert all(f["shared_bytes"] <= SM90_MAX_SHARED and f["wgmma"] > 0 and f["tma_loads"] > 0
               for r in rows for f in (r, r["aligned"])), rows
    if d == 128:
        bf16 = {_launch(r): r["shared_bytes"] for r in compiled}
        assert all(bf16[_launch(r)] == r["shared_bytes"] for r in rows), (rows, bf16)


def test_fused_decodings_release_follows_a_barrier_at_the_split_kernels_occupancy(compiled: list[dict]) -> None:
    """fd2 (decode_fused.py) lowered for sm_90 at the H200 shape: one acq_rel atomic at GPU scope, issued by one thread
    after a CTA barrier that follows every partial store (so the release covers all of the program's stores), in the
    plain compile and in the aligned one that launches; no other attention kernel has an atomic. Its programs fit an
    SM as often as the two-kernel variant's split-K programs, whose body it shares: in the plain compile by the same
    registers (255: 2 programs of 4 warps per SM, as flashattn_fd2's prediction states, written from this compile) and
    shared memory; as launched (aligned: 72 and 96 registers, the same 38,912 B) by shared memory, 5 an SM."""
    import flashattn_fd2 as fd2

    from pytest_anatomy.theory.kernel_occupancy import occupancy

    by_kernel = {row["kernel"]: row for row in compiled if row["rung"] == "flash-decoding"}
    fused, split = by_kernel["decode_split_fused"], by_kernel["decode_split"]
    for f in (fused, fused["aligned"]):
        assert f["acq_rel_atomics"] == 1 and f["barrier_before_atomic"] is True, fused
    assert all(f["acq_rel_atomics"] == 0 for row in compiled if row is not fused for f in (row, row["aligned"]))
    assert fused["registers"] == split["registers"] == fd2.REGISTERS and fused["shared_bytes"] == split["shared_bytes"]
    per_sm = 65536 // (-(-fused["registers"] // 8) * 8 * 32 * fused["num_warps"])  # the register file, 8-reg units
    assert per_sm == fd2.PROGRAMS_PER_SM, per_sm
    launched = {occupancy(r["aligned"]["registers"], r["aligned"]["shared_bytes"], 32 * r["num_warps"], "sm_90").value
                for r in (fused, split)}
    assert len(launched) == 1 and fused["aligned"]["shared_bytes"] == split["aligned"]["shared_bytes"], (fused, split)
