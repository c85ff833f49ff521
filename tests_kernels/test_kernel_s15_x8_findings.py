"""kernel_s15_x8_findings against the recordings and the compilers: every time its reasons quote is the 18:46 run's
(read here through pytest_anatomy.recordings), every band is the pre-registration's stated outcome or risk (recomputed
here from the header's numbers, never from a time of that run), and the compiled facts the reasons cite are the
device's (its batch) and this checkout's compiler's."""

from __future__ import annotations

from pathlib import Path

import kernel_findings as kf
import kernel_findings_shared as kfs
import kernel_s15_x8_findings as kx
import pytest
import rung_checks

from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import sgemm

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _at(name: str, when: str, key: str = "time") -> float:
    return rung_checks.run_value(name, when, key) * 1e3  # ms


def _entry(table: str, key: str) -> tuple[str, str, tuple[float, float]]:
    return kf.BANDED[table][key]


@pytest.mark.parametrize("label", kx.SHAPES)
def test_s15_reason_quotes_the_run_and_its_band_is_the_headers_alternative(label: str) -> None:
    fid, reason, band = _entry("preregistered", f"{kx.S15}-{label}")
    assert fid == kx.S15_FID and f"{_at(f'sgemm.{kx.S15}.{label}', kx.RUN_1846):.4f}" in reason
    assert f"{_at(f'sgemm.{kx.S15}.{label}', kx.RUN_1846, 'time_repeat'):.4f}" in reason
    assert f"{_at(f'sgemm.s9-cp-async-pipeline.{label}', kx.RUN_1846):.4f}" in reason
    for cid, run in kx.ONE_BLOCK_128X256:
        assert f"{_at(f'sgemm.{cid}.{label}', run):.4f}" in reason
    # The header's second outcome: the ledger at 2.78 cycles per issue (3.34 ms at 4096^3, as the header wrote)
    alt = kx.s15_ledger_ms(label, 2.78)
    if label == kx.SQUARE:
        assert round(alt, 2) == 3.34
    bias, noise = kfs.s9_ledger_bias(label), kfs.spread()
    pre = sgemm.S15_PREREGISTERED[label]
    assert band == (round(alt / pre * (1 - noise), 4), round(alt / pre * bias * (1 + noise), 4))
    assert kf.BANDED_FROM_KEYS[("preregistered", f"{kx.S15}-{label}")] == "preregistered"
    assert band[0] > 1 + 0.07  # above any noise budget: the cuBLAS-pace prediction agreeing would resolve it


def test_x8_reason_quotes_the_run_and_its_bands_are_the_headers_risk() -> None:
    fid, reason, band = _entry("preregistered", f"{kx.X8}-{kx.VOCAB}")
    assert fid == kx.X8_FID and band == (1 + kfs.PREREG_ACCEPT, 2.0)
    for name, when in ((f"softmax.{kx.X8}.{kx.VOCAB}", kx.RUN_1846), (f"softmax.{kx.X8}.8192x2048", kx.RUN_1846),
                       (f"softmax.x7-pipelined.{kx.VOCAB}", kx.RUN_1456),
                       (f"softmax.x6-cluster-row.{kx.VOCAB}", kx.RUN_2151)):
        assert f"{_at(name, when):.4f} ms" in reason, name
    assert kx.X8_PREREG_MS == 0.040 and kx.ROWS_BUSIEST == 10
    vfid, vreason, vband = _entry("vocab_target", kx.X8)
    units = kfs.READ_1109 / kx.VOCAB_BYTES * kx.X8_PREREG_MS * 1e-3
    assert (vfid, vreason) == (fid, reason) and vband == (round(units * 1.15, 4), round(units * 2.0, 4))
    assert kf.BANDED_FROM_KEYS[("vocab_target", kx.X8)] == "preregistered"


def test_device_compile_facts_are_the_batch_s() -> None:
    s15 = kx.device_resources(kx.S15_SOURCE, kx.S15_KERNEL)
    x8 = kx.device_resources(kx.X8_SOURCE, kx.X8_KERNEL)
    if s15 is None or x8 is None:
        pytest.skip(f"{kx.BATCH} is not in this checkout")
    assert (s15.registers, s15.spill_store_bytes, s15.spill_load_bytes, s15.shared_bytes) == (255, 0, 0, 24832)
    assert (x8.registers, x8.spill_store_bytes, x8.spill_load_bytes) == (120, 0, 0)
    sass = kx.device_sass(kx.X8_SOURCE, kx.X8_KERNEL)
    assert (sass["UBLKCP"], sass["STG.128"], sass.get("LDG.128", 0)) == (2, 10, 0)


def _loop_total(loops: list[dict[str, int]]) -> int:
    (loop,) = [lp for lp in loops if lp.get("FFMA")]
    return sum(loop.values())


def test_s15_k_loop_on_the_device_and_here(tmp_path: Path) -> None:
    """The loop total the reason quotes, in the device's cubin (the run's cubins.tar.xz), and this checkout's compile
    of the same source with the device's NVRTC gives the same loop (the reason's nvcc count, 1,284, is history: the
    checks here compiled with nvcc until 2026-12-04 21:50)."""
    cubin = kx.device_compile(kx.S15_SOURCE).get("cubin", "")  # "": no batch here, skipped below
    loops = rung_checks.device_cubin_loops(kx.BATCH / "cubins.tar.xz", cubin, tmp_path)
    assert _loop_total(loops[kx.S15_KERNEL]) == kx.S15_DEVICE_LOOP
    assert _loop_total(kc.loop_bodies(kx.S15_SOURCE, "sm_90")[kx.S15_KERNEL]) == kx.S15_DEVICE_LOOP
