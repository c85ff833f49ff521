"""Fixtures for the kernel ladders: the seed's SGEMM recordings by name."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_anatomy.kernels import nvrtc_record


@pytest.fixture(scope="session", autouse=True)
def _nvrtc_record() -> None:
    """compile.py reads the committed record of its results while the record is this checkout's (nvrtc_record: a
    cold run's ~120 s of NVRTC and cuobjdump across the workers); test_kernels_nvrtc_record fails where it is not."""
    nvrtc_record.use()


@pytest.fixture
def seed_row(measured: Any, target: Any):
    """seed_row(kernel, size=4096, shape='square') -> the seed's SGEMM recording for that row."""
    def get(kernel: str, size: int = 4096, shape: str = "square") -> Any:
        return measured(f"seed-sgemm.{shape}.{size}x{size}x{size}.{kernel}", target=target)
    return get


def pytest_anatomy_live_plan(config: pytest.Config, items: list[pytest.Item]) -> list[dict]:
    """Every rung the selected kernel tests read, timed once (compile + correctness + 4 timing
    blocks: ~0.5-8 s a rung on the H200, 22 s for the 28 rungs of the 2026-12-01 live session), and the
    session's ceilings."""
    rungs = set()
    ffn_pairs = set()  # (rung, FFN shape): test_best_fp32_rung_vs_cublas_at_ffn_shapes times every fp32 rung there
    for item in items:
        params = getattr(item, "callspec", None) and item.callspec.params
        if params and "tests_kernels" in item.nodeid and params.get("v") is not None:
            rungs.add((params["v"].ladder, params["v"].id))
        if params and "tests_kernels" in item.nodeid and params.get("shape") and params.get("fp32_rungs"):
            ffn_pairs |= {(rung, str(params["shape"])) for rung in params["fp32_rungs"]}
    if not rungs and not ffn_pairs:
        return []
    # The FFN shapes' timings are priced, not fitted: the per-rung 0.67 s below, plus the kernels themselves, which
    # at these shapes dominate: 2 x 33 timed calls of every fp32 rung and cuBLAS at both FFN shapes take 49 s on the
    # H200 at the recorded medians (s1 at 2,048 rows alone 37 s); the high estimate allows twice that.
    ffn_s, ffn_high_s = (0.67 * len(ffn_pairs) + 49.0, 0.8 * len(ffn_pairs) + 98.0) if ffn_pairs else (0.0, 0.0)
    # FITTED on the two full live sessions results/h200/live-runs/20261201T235925Z.full.log.xz and
    # 20261202T022605Z.full.log.xz: 34 rungs, from the first kernel measurement to the first attention case,
    # 26.8 s and 32.3 s (the ceilings 3.7 / 5.0 s, then each rung's check and timing blocks and the tests
    # between them); the fast subsets' same rungs took 21-23 s
    what = f"{len(rungs)} rungs timed once each, and the read/copy ceilings" + (
        f"; {len(ffn_pairs)} fp32 rung timings at the FFN shapes" if ffn_pairs else "")
    return [{"suite": "kernels", "what": what, "estimate_s": round(4.0 + 0.67 * len(rungs) + ffn_s, 1),
             "estimate_high_s": round(5.0 + 0.8 * len(rungs) + ffn_high_s, 1)}]
