"""What the new CUDA rungs' tests share: the CPU emulator against float64 at edge shapes (and with added -D modes),
kernels_plan.py's dry run of the device call that times a rung, a device batch's compiled loops, s9's tile-cost split
that s16's and s17's headers are priced from, and the recorded values and byte counts the softmax rungs' headers are
priced from
(test_kernels_s15.py, test_kernels_s16.py, test_kernels_pipelined.py, test_kernels_tma_ring.py,
test_kernels_cluster4_smem.py, test_kernels_x10.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import json
import lzma
import os
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_anatomy import recordings
from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import emulator, sgemm
from pytest_anatomy.kernels.reference import TOLERANCE, make_inputs, reference, rel_error
from pytest_anatomy.kernels.registry import PREREGISTERED_ON, DeviceFacts

ROOT = Path(__file__).resolve().parents[1]
# The per-SM rates the softmax rungs' SM work is priced at (x8's, x9's and x10's headers): the SM clock of the
# pre-registered card's Nsight Compute profile of x6 (1,980 MHz), sm_90's EX2 per clock per SM, and shared-memory bytes
# per clock per SM.
SM_CLOCK_HZ = 1.98e9
MUFU_PER_CLK = 16
SMEM_B_PER_CLK = 128


def assert_matches_float64(rung: Any, ladder: str, shapes: tuple[dict[str, int], ...], seed: int,
                           device: Any = None) -> None:
    """The rung run by the CPU emulator at each shape (on `device`'s SM count where given), against the float64
    reference within the fp32 tolerance; a skip saying why where the emulator cannot build here."""
    try:
        emulator.compiler()
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(seed)
    for shape in shapes:
        inputs = make_inputs(ladder, shape, "fp32", rng)
        out = emulator.run(rung, shape, inputs) if device is None else emulator.run(rung, shape, inputs, device=device)
        err = rel_error(out, reference(ladder, inputs, "fp32"))
        where = "" if device is None else f" on {device.sm_count} SMs"
        assert err <= TOLERANCE["fp32"], f"{rung.id} at {shape}{where}: relative error {err:.3g}"


def with_defines(rung: Any, *defines: tuple[str, int]) -> Any:
    """`rung` with `defines` added to every launch's -D list (an emulator mode: a rung's <RUNG>_EMU_LATE_COPY)."""
    def launch(shape: Any, device: Any) -> tuple[Any, ...]:
        return tuple(dataclasses.replace(c, defines=(*c.defines, *defines)) for c in rung.launch(shape, device))
    return dataclasses.replace(rung, launch=launch)


def device_cubin_loops(archive: Path, cubin: str, tmp_path: Path) -> dict[str, Any]:
    """The loops (kc.parse_loops) of `cubin` as a device batch recorded it (its cubins.tar.xz), by cuobjdump; a skip
    where the CUDA tools or the archive are not here."""
    try:
        cuobjdump, nvdisasm = kc.find_tool("cuobjdump"), kc.find_tool("nvdisasm")
        kc.find_tool("nvrtc")
    except kc.ToolMissing as exc:
        pytest.skip(str(exc))
    if not archive.exists():
        pytest.skip(f"{archive} is not in this checkout")
    with lzma.open(archive) as xz, tarfile.open(fileobj=xz) as tar:
        member = next(m for m in tar.getmembers() if Path(m.name).name == cubin)
        data = tar.extractfile(member)
        assert data is not None
        (tmp_path / cubin).write_bytes(data.read())
    env = {**os.environ, "PATH": f"{Path(nvdisasm).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    dump = subprocess.run([cuobjdump, "--dump-sass", str(tmp_path / cubin)], capture_output=True, text=True,
                          timeout=120, check=True, env=env)
    return kc.parse_loops(dump.stdout)


def assert_ktile32_window_launch(rung: Any) -> None:
    """s16's launch, which s17 keeps: s9's grid of 128 x 128 tiles and 256 threads, the 32-deep k-tile's two stages in
    a 66,560-byte dynamic window."""
    (call,) = rung.calls(sgemm.TIMING_SHAPE, DeviceFacts(132))
    bm, bn, bk = sgemm.BLOCK_TILES[rung.id]
    assert (bm, bn, bk) == (128, 128, 32)
    assert call.launch.grid == (4096 // bn, 4096 // bm, 1) and call.launch.block == (256, 1, 1)
    assert call.launch.shmem == sgemm.S16_SMEM_BYTES == 2 * bk * ((bm + 4) + bn) * 4 == 66_560


def tile_cost_ms(candidate: str, label: str) -> float:
    """s9's kernel at a tuner candidate's tile, timed in the run s16's and s17's predictions name (never a newer
    one)."""
    name = f"sgemm.{candidate}.{label}"
    paths = [p for p in recordings.candidates(ROOT / "results", PREREGISTERED_ON, "kernels", name)
             if f"@{sgemm.S16_TILE_COST_RUN}." in p.name]
    assert paths, f"{name}@{sgemm.S16_TILE_COST_RUN} is gone: recordings are never deleted"
    return float(recordings.load_file(paths[0]).data["ms_median"])


def tile_cost_split(label: str, share: Callable[[str], float]) -> tuple[float, float]:
    """s9's time at `label` as X / share + S x 16 / bk, solved from its kernel at 8- and 16-deep k-tiles in one run
    (sgemm.S16_TILE_COST_PAIR) at the FFMA shares `share` gives each: (X, S) in ms."""
    shallow, deep = sgemm.S16_TILE_COST_PAIR
    t8, t16 = tile_cost_ms(shallow, label), tile_cost_ms(deep, label)
    f8, f16 = share(shallow), share(deep)
    x = (t8 - 2 * t16) / (1 / f8 - 2 / f16)
    return x, t16 - x / f16


def load_plan() -> Any:
    """scripts/device/kernels_plan.py as a module (a fresh one: its --rungs selection starts empty)."""
    path = ROOT / "scripts" / "device" / "kernels_plan.py"
    spec = importlib.util.spec_from_file_location("kernels_plan_dry_run", path)
    assert spec and spec.loader
    plan = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plan)
    return plan


def plan_dry_run(*argv: str) -> str:
    """scripts/device/kernels_plan.py --dry-run ARGV: what it prints (asserting it exits 0)."""
    plan = load_plan()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = plan.main(["--dry-run", *argv])
    assert rc == 0, out.getvalue()
    return out.getvalue()


RESULTS = Path(__file__).resolve().parents[1] / "results"


def recorded_values(folder: Path, name: str, key: str, not_after: str) -> list[float]:
    """`key`'s value in each recording of `name` in `folder` stamped at or before `not_after` (YYYYMMDDTHHMMSS): the
    sessions a header's prediction could read when it was written."""
    out = []
    for p in sorted(folder.glob(f"{name}@*.json")):
        if p.name.split("@")[1][:15] <= not_after:
            out.append(float(json.loads(p.read_text())["measurements"][key]["value"]))
    return out


def need_tools(*tools: str) -> None:
    """Skip, naming the tool and how to install it, where a compile or disassembly tool is absent."""
    from pytest_anatomy.kernels import compile as kc

    try:
        for t in tools:
            kc.find_tool(t)
    except kc.ToolMissing as exc:
        pytest.skip(str(exc))


def run_value(name: str, when: str, key: str = "time") -> float:
    """`key`'s value (in its recorded unit) in `name`'s kernels recording of the run stamped `when`, on the card the
    kernel findings were measured on; skips, saying which, where this checkout lacks that run."""
    import kernel_findings_shared as kfs

    from pytest_anatomy import recordings

    try:
        rec = recordings.load_not_after(RESULTS, kfs.MEASURED_ON, "kernels", name, when)
    except recordings.MissingRecording:
        pytest.skip(f"results/{kfs.MEASURED_ON}/kernels/{name}@* of {when} is not in this checkout")
    if rec.recorded_at != when:
        pytest.skip(f"{name} of {when} is not in this checkout")
    return float(rec[key].value)


def softmax_bytes(shape: dict[str, int]) -> float:
    """A softmax's DRAM bytes at one pass: fp32 read once, written once."""
    return 2 * 4.0 * shape["M"] * shape["N"]
