"""The numbers flashattn_findings' and flashattn_counter_findings' reasons quote are the recordings of the visits
they describe, and the constants their bands are centred on are recomputed here from those recordings (nothing
retyped)."""

from __future__ import annotations

import flashattn_counter_findings as cf
import flashattn_findings as ff
import pytest
from flashattn_cases import Case

from pytest_anatomy import recordings
from pytest_anatomy.kernels.flashattn import registry

TARGET_RATIO = {"test_best_rung_at_least_1_5x_flash_attention_backend": ("sdpa_flash_time", 1 / 1.5),
                "test_best_rung_at_least_0_85x_default_sdpa": ("sdpa_default_time", 1 / 0.85)}


def first_visit(name: str) -> recordings.Recording:
    first, _ = ff.visits(name)
    if not first:
        pytest.skip(f"results/{ff.MEASURED_ON}/flashattn/{name}@* of the first visit is not in this checkout")
    return first[0]


def test_target_band_centres_are_the_first_visits_ratios() -> None:
    """Measured / predicted of a target row, where predicted = the backend's time in the same call / target."""
    for (test, mode), centre in ff.TARGETS.items():
        rec = first_visit(ff.R6_TARGET[mode].name)
        backend, per_target = TARGET_RATIO[test]
        assert centre == pytest.approx(rec["time"].value / (rec[backend].value * per_target), abs=5e-4), (test, mode)


def test_the_8k_decode_band_is_the_widest_within_session_spread() -> None:
    _, second = ff.visits("fd.b8h32kv8l8192d128")
    if not second:
        pytest.skip("the second visit's flash-decoding recordings are not in this checkout")
    widest = max(abs(r["time"].value / r["time_repeat"].value - 1) for r in second)
    assert ff.DECODE_8K_SPREAD == round(widest, 3)
    assert ff.DECODE_TARGET["fd.b8h32kv8l8192d128"] == (1.0, 1.0 + ff.DECODE_8K_SPREAD)
    assert f"by {widest:.1%}, so the target" in ff.DECODE_8K_AT_THE_TARGET


def test_reasons_quote_the_recorded_times() -> None:
    pairs = [(first_visit(ff.R6_TARGET["full"].name), first_visit(ff.R6_TARGET["causal"].name))]
    full, causal = pairs[0]
    assert f"{full['time'].value * 1e3:.2f} / {causal['time'].value * 1e3:.2f} ms full / causal" \
        in ff.NO_WARP_SPECIALIZATION
    long = first_visit("fd.b8h32kv8l65536d128")
    kv = 8 * 8 * 65536 * 128 * 2 * 2  # K and V, bf16, B=8 H_kv=8 L=64k D=128
    assert f"{kv / 1e9:.2f} GB of K/V in {long['time'].value * 1e3:.3f} ms" in ff.DECODE_AT_THE_CEILING
    assert f"{kv / long['time'].value / ff.read_ceiling(long):.0%} of the session's" in ff.DECODE_AT_THE_CEILING


def test_the_warp_specialisation_reason_says_where_r7_stands() -> None:
    """The reason says r7 is pending its first GPU measurement exactly while no r7 recording of the target shape is
    on the card the finding was written on; the first one makes this fail until the reason says what r7 did."""
    r7 = [Case(registry.TARGET_RUNGS[1], 4, 32, 4096, 128, causal=c).name for c in (False, True)]
    recorded = any(recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn", name) for name in r7)
    assert (ff.R7_PENDING in ff.NO_WARP_SPECIALIZATION) == (not recorded)


def test_every_reason_found_its_recordings() -> None:
    for reason in (ff.NO_WARP_SPECIALIZATION, ff.DECODE_AT_THE_CEILING, ff.SHORT_SEQUENCES_AT_D64,
                   ff.DECODE_8K_AT_THE_TARGET, cf.R2_ROUND_TRIPS, cf.L2_COALESCED, cf.DIRTY_AT_START,
                   cf.CAUSAL_STREAM):
        assert "not in this checkout" not in reason


def test_counter_reasons_quote_the_profile_pass() -> None:
    """The bytes the counter findings quote are the Nsight Compute pass's, read back through the recordings."""
    def counter(case: str, quantity: str) -> float:
        try:
            return recordings.load_latest(ff.RESULTS, ff.MEASURED_ON, "flashattn", f"ncu.fa2.{case}",
                                          stamp=cf.NCU_PASS)[quantity].value
        except recordings.MissingRecording:
            pytest.skip(f"ncu.fa2.{case} of the profile pass is not in this checkout")

    reads = [counter(f"r2-fa1.b4h32n4096d128.{m}", "dram_read_bytes") / 1e9 for m in ("full", "causal")]
    assert f"moved {reads[0]:.2f} / {reads[1]:.2f} GB from DRAM" in cf.R2_ROUND_TRIPS
    assert f"r6 {counter('r6-tma-pipelined.b4h32n4096d128.full', 'l2_bytes') / 1e9:.2f} GB" in cf.L2_COALESCED
    causal_reads = counter("r6-tma-pipelined.b1h4n131072d128.causal", "dram_read_bytes")
    q, head_kv = 4 * 131072 * 128 * 2, 2 * 131072 * 128 * 2  # Q once; K and V of one head (bf16)
    assert f"read {causal_reads / 1e9:.2f} GB: {(causal_reads - q) / (4 * head_kv):.1f} passes" in cf.CAUSAL_STREAM
    wrote = counter("r6-tma-pipelined.b1h4n131072d128.full", "dram_write_bytes")
    outputs = 4 * 131072 * 128 * 2 + 4 * 131072 * 4  # O (bf16) + LSE (fp32), B=1 H=4 N=128k D=128
    assert f"wrote {wrote / 1e6:.1f} MB against {outputs / 1e6:.1f} MB of O + LSE ({wrote / outputs:.3f}" \
        in cf.DIRTY_AT_START
