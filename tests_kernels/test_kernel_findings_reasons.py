"""Every timing a kernel finding's reason quotes is the first H200 run's, read from its recordings
(kernel_findings.py formats them in at import): recomputed here through pytest_anatomy.recordings, so a
reason cannot drift from the run its band is centred on."""

from __future__ import annotations

from pathlib import Path

import kernel_findings as kf
import kernel_findings_shared as kfs
import kernel_first_run_findings as first_run
import kernel_x6_s11_s12_findings as x6s12
import pytest
import rung_checks

from pytest_anatomy import recordings
from pytest_anatomy.kernels import sgemm
from pytest_anatomy.kernels.ladders import LADDERS
from pytest_anatomy.specs.hardware import get_hardware

RESULTS = Path(__file__).resolve().parents[1] / "results"


def first_s(name: str) -> float:
    try:
        rec = recordings.load_not_after(RESULTS, kfs.MEASURED_ON, "kernels", name, kfs.FIRST_RUN)
    except recordings.MissingRecording:
        pytest.skip(f"results/{kfs.MEASURED_ON}/kernels/{name}@* of the first run is not in this checkout")
    assert rec.recorded_at == kfs.FIRST_RUN, name
    return rec["time"].value


def sgemm_s(rung: str) -> float:
    return first_s(f"sgemm.{rung}.4096x4096x4096")


def tflops(rung: str) -> str:
    return f"{2 * 4096**3 / sgemm_s(rung) / 1e12:.1f}"


def test_gemm_reasons_quote_the_first_runs_rates_and_times() -> None:
    assert " / ".join(tflops(r) for r in ("s5-2d-regtile", "s6-vectorized", "s7-warptiling")) \
        in first_run.LATENCY_BOUND_GEMM
    assert f"against cuBLAS's {tflops('s0-cublas')}" in first_run.LATENCY_BOUND_GEMM
    cublas, best = sgemm_s("s0-cublas"), min(sgemm_s("s5-2d-regtile"), sgemm_s("s6-vectorized"))
    assert f"{best * 1e3:.2f} ms" in first_run.FP32_BELOW_TARGET and f"{cublas / best:.1%} of cuBLAS fp32" \
        in first_run.FP32_BELOW_TARGET
    bf16, mma = sgemm_s("s0-cublas-bf16"), sgemm_s("s8-bf16-mma")
    assert f"{bf16 / mma:.1%} of cuBLAS bf16 ({bf16 * 1e3:.3f} ms" in first_run.MMA_SYNC
    (_, reason, ratio), = [first_run.SINGLE["test_tensor_core_rung_vs_cublas_bf16"]]
    assert ratio == first_run.TENSOR_CORE_TARGET_RATIO and f"measured/target time {ratio:.2f}" in reason
    reason = first_run.byte_ledger_exceeded(1.5, 10.0, first_run.BYTE_LEDGER["s2-coalesced"])[0].kwargs["reason"]
    assert f"({sgemm_s('s2-coalesced') * 1e3:.1f} ms, first H200 run)" in reason


def test_target_band_centres_are_the_first_runs_ratios() -> None:
    """The target tests predict cuBLAS's time recorded beside the rung / the target (test_kernels_ladders); their
    findings' band centres are the first run's best rung over that prediction."""
    def first(rung: str) -> recordings.Recording:
        first_s(f"sgemm.{rung}.4096x4096x4096")  # skips where the first run is missing
        return recordings.load_not_after(RESULTS, kfs.MEASURED_ON, "kernels", f"sgemm.{rung}.4096x4096x4096",
                                         kfs.FIRST_RUN)

    s8 = first("s8-bf16-mma")
    assert first_run.TENSOR_CORE_TARGET_RATIO == pytest.approx(
        s8["time"].value / (s8["baseline_time"].value / 0.80), abs=5e-4)
    fp32 = [v.id for v in LADDERS["sgemm"][1:] if not v.theory.tensor_core
            and (RESULTS / kfs.MEASURED_ON / "kernels" / f"sgemm.{v.id}.4096x4096x4096@{recordings.stamp_of(kfs.FIRST_RUN)}.json").exists()]
    best = min((first(r) for r in fp32), key=lambda r: r["time"].value)
    assert first_run.SINGLE["test_best_fp32_rung_vs_cublas"][2] == pytest.approx(
        best["time"].value / (best["baseline_time"].value / 0.90), abs=5e-4)


def test_streaming_reasons_quote_the_first_runs_times() -> None:
    r1, r2, r7 = (first_s(f"reduction.{r}.n268435456") * 1e3 for r in ("r1-interleaved", "r2-sequential",
                                                                        "r7-vectorized"))
    assert f"({r2:.2f} vs {r1:.2f} ms in the first H200 run" in first_run.TREE_BOUND
    assert f"{r7:.3f} ms in the first H200 run" in first_run.BYTES_IN_FLIGHT
    fused = [first_s(f"softmax.{r}.8192x2048") * 1e6 for r in ("x2-online", "x3-registers", "x4-vectorized")]
    assert f"({min(fused):.1f}-{max(fused):.1f} us in the first H200 timing run)" in first_run.SHORT_ROWS
    assert f"{first_s('softmax.x1-three-pass.128x152064') * 1e3:.3f} ms in all" in first_run.VOCAB_FASTER
    assert f"({first_s('softmax.x2-online.128x152064') * 1e3:.3f} ms, first H200 run)" in first_run.VOCAB_FASTER


def test_no_reason_lost_its_recording() -> None:
    """A first-run recording missing from the checkout prints nan: with the results present, none does."""
    import re

    first_s("sgemm.s0-cublas.4096x4096x4096")
    for table in kf.TABLES.values():
        for _, reason, _ in table.values():
            assert not re.search(r"\bnan\b", reason), reason


def test_the_streaming_target_quotes_its_own_ratio() -> None:
    """'reached N%' of the target is floor / measured, the reciprocal of the band's centre, not a second number."""
    _, reason, ratio = first_run.STREAMING_TARGET["x4-vectorized"]
    assert ratio == first_run.STREAMING_FLOOR["x4-vectorized"][2] and f"reached {1 / ratio:.0%}." in reason


def _at(name: str, when: str) -> float:
    """One recording's time (s) of the run stamped `when`, through pytest_anatomy.recordings; skips where absent."""
    return rung_checks.run_value(name, when)


def test_new_rung_reasons_quote_the_2151_run() -> None:
    """x6, s11, s12 and the tile candidates' reasons quote the 21:51 run, the run they describe."""
    for lab in kfs.SGEMM_SHAPES:
        assert f"{lab} {_at(f'sgemm.s11-bf16-warp64.{lab}', kfs.KERNEL_RUN_2151) * 1e3:.4f} ms" \
            in x6s12.WARP64_KEPT_S10S_TIME
        assert f"{lab} {_at(f'sgemm.s10-bf16-ldmatrix.{lab}', kfs.NEW_RUNGS_RUN) * 1e3:.4f} ms" \
            in x6s12.WARP64_KEPT_S10S_TIME
        assert f"{lab} {_at(f'sgemm.s12-bf16-wgmma.{lab}', kfs.KERNEL_RUN_2151) * 1e3:.4f} ms" in x6s12.WGMMA_FFN
        assert f"{_at(f'sgemm.{x6s12.S9_B1_TILE}.{lab}', kfs.KERNEL_RUN_2151) * 1e3:.4f} ms" in x6s12.TILE_OCCUPANCY_OVERCHARGES
    short = _at("softmax.x6-cluster-row.8192x2048", kfs.KERNEL_RUN_2151)
    assert f"ran {short * 1e3:.4f} ms (21:51 run)" in x6s12.CLUSTER_ROW_SHORT_ROWS
    vocab = _at("softmax.x6-cluster-row.128x152064", kfs.KERNEL_RUN_2151)
    assert f"ran {vocab * 1e3:.4f} ms (21:51 run)" in x6s12.CLUSTER_ROW_VOCAB


def _lowest_tensor_core_clock_hz() -> float:
    """The lowest 'SM Frequency' of the hand bf16 rungs in the 00:18 Nsight Compute export the findings cite,
    through the ncu importer's parser."""
    from pytest_anatomy.importers.ncu import parse_report, read_report_text

    kernels = parse_report(read_report_text(x6s12.ncu_profile_path()))
    return min(k["metrics"]["SM Frequency"] for k in kernels if k["name"] in x6s12.HAND_TENSOR_CORE_KERNELS)


def test_new_rung_bands_come_from_other_runs() -> None:
    """Every band of the 21:51 findings is computed from the 11:09 run's times (other rungs, or s9 as candidate 0),
    a pre-registration or an acceptance edge: recomputed here, none reads a time of the run it judges."""
    spread = kfs.spread()
    banded = kf.BANDED
    for lab in kfs.SGEMM_SHAPES:
        s10 = _at(f"sgemm.s10-bf16-ldmatrix.{lab}", kfs.NEW_RUNGS_RUN) * 1e3
        s9 = _at(f"sgemm.s9-cp-async-pipeline.{lab}", kfs.NEW_RUNGS_RUN) * 1e3
        lo, hi = kfs.band(s10 / sgemm.MMA_ISSUE_PREREGISTERED[("s11-bf16-warp64", lab)])
        # the 2026-12-02 runs: both edges carry the tensor-core clock range, from the raw Nsight Compute export
        drop = get_hardware(kfs.MEASURED_ON).boost_clock_hz / _lowest_tensor_core_clock_hz()
        lo, hi = round(lo / drop, 4), round(hi * drop, 4)
        assert banded["mma_issue_preregistered"][f"s11-bf16-warp64-{lab}"][2] == (lo, hi)
        lo, hi = banded["tile_preregistered"][f"{x6s12.S9_B1_TILE}-{lab}"][2]
        assert (lo, hi) == (round(s9 / sgemm.S9_TILE_PREREGISTERED[(x6s12.S9_B1_TILE, lab)] * (1 - spread), 4), 0.85)
        if lab != kfs.SGEMM_SHAPE:
            assert banded["mma_issue_preregistered"][f"s12-bf16-wgmma-{lab}"][2] == \
                (1.0, round(s10 / sgemm.MMA_ISSUE_PREREGISTERED[("s12-bf16-wgmma", lab)] * (1 + spread), 4))
    torch = _at("softmax.x0-torch.128x152064", kfs.NEW_RUNGS_RUN)
    assert banded["preregistered"]["x6-cluster-row-128x152064"][2] == (1.15, round(torch * 1e3 / kfs.x6_prereg_ms("128x152064"), 4))
    for key, (fid, _, (lo, hi)) in banded["tile_preregistered"].items():
        assert lo < hi, (key, fid)


def test_wgmma_boost_clock_band_from_the_profiled_clock() -> None:
    """s12's 4096^3 band is the boost clock over the clock Nsight Compute measured s12 at (the raw export, read here
    apart from the finding's own reader of the imported recordings) +- the noise terms: a profile, never a timing of
    the run it judges. Every session's time quoted by the reason is the recording's."""
    from pytest_anatomy.importers.ncu import parse_report, read_report_text

    kernels = parse_report(read_report_text(x6s12.ncu_profile_path()))
    hz = min(k["metrics"]["SM Frequency"] for k in kernels if k["name"] == "sgemm_bf16_wgmma")
    ratio = get_hardware(kfs.MEASURED_ON).boost_clock_hz / hz
    fid, reason, expected = kf.BANDED["mma_issue_preregistered"][f"s12-bf16-wgmma-{kfs.SGEMM_SHAPE}"]
    assert expected == kfs.band(ratio) and expected[0] < 1 + kfs.PREREG_ACCEPT < expected[1]
    assert fid in kf.NOT_STRICT  # it straddles the acceptance edge
    for run in x6s12.LIVE_RUNS_0202 + x6s12.LIVE_RUNS_0240 + x6s12.LIVE_RUNS_0457:
        assert f"{x6s12.live_ms(f'sgemm.s12-bf16-wgmma.{kfs.SGEMM_SHAPE}', run):.4f}" in reason
    probe = [x for run in x6s12.LIVE_RUNS_0457 for x in x6s12.live_probe_mhz(f"sgemm.s12-bf16-wgmma.{kfs.SGEMM_SHAPE}", run)]
    assert len(probe) == 4 and f"read {min(probe):.0f}-{max(probe):.0f} MHz instead" in reason
