"""Softmax rung x8 (softmax/x8_tma_ring.cu) on the CPU: its header's diagnosis of x6 and x7 (Little's law) and its two
pre-registered times recomputed from the recordings they were derived from, its launch per row length and ring depth,
ptxas's resources (one block per SM with the ring in the opt-in window), the SASS its header counts on (the slices
loaded by bulk copies only), and the emulator where the ring wraps (more rows per cluster than stages), over grids of
several clusters and on the scalar path; the shared emulator test runs one cluster at the ladder's shapes."""

from __future__ import annotations

import statistics

import kernel_findings_shared as kfs
import rung_checks as rc
import pytest

from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import fused
from pytest_anatomy.kernels.ladders import variant
from pytest_anatomy.kernels.registry import PREREGISTERED_ON, DeviceFacts
from pytest_anatomy.measure.tma_launch import needs_raw_launch
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory.kernel_occupancy import occupancy

X8 = variant("softmax", "x8-tma-ring")
# The newest session recorded when x8's header was written: its numbers read the sessions up to this one only.
WRITTEN_AFTER = "20261204T163802"
LOADED_LATENCY_US = 1.5  # x7's header: the loaded DRAM latency Little's law is taken at
EXPOSED_US = 0.8  # one exposed round trip: the DRAM latency x5's and x6's headers used
# One row's SM work on a block, in cycles (the header's tail): slice out of shared memory at 128 B/clk, 19,008 EX2
# at 16/clk, 76 KB of stores at 64 B/clk, two block reductions, one cluster exchange.
ROW_WORK_CLK = {"lds": 594, "ex2": 1188, "stores": 1188, "reductions": 600, "exchange": 1000}


def _sessions(name: str, key: str) -> list[float]:
    return rc.recorded_values(kfs.RESULTS, name, key, WRITTEN_AFTER)


_bytes = rc.softmax_bytes  # one read, one write


def test_header_diagnosis_is_littles_law_on_the_recordings():
    """Bytes in flight = bandwidth x latency: what the copy bandwidth needs (6.4 MB, 48 KB per SM on 132 SMs, 57 KB on
    x7's 112), and what x6's and x7's medians imply they held on average (36 and 39 KB per SM)."""
    copy = statistics.median(_sessions("kernels-ceilings", "copy_bandwidth"))
    need = copy * LOADED_LATENCY_US * 1e-6
    g = fused.stream_clusters(fused.VOCAB_SHAPE["M"], get_hardware(PREREGISTERED_ON).sm_count)
    sms = get_hardware(PREREGISTERED_ON).sm_count
    assert (round(need / 1e6, 1), round(need / sms / 1e3), round(need / (g * fused.CLUSTER_BLOCKS) / 1e3)) == \
        (6.4, 48, 57)
    vocab = _bytes(fused.VOCAB_SHAPE)
    x6 = statistics.median(_sessions(f"softmax.x6-cluster-row.{kfs.VOCAB}", "time"))
    (x7,) = _sessions(f"softmax.x7-pipelined.{kfs.VOCAB}", "time")
    x6_bw, x7_bw = vocab / x6, vocab / x7
    assert (round(x6_bw / 1e12, 2), round(x7_bw / 1e12, 2)) == (3.16, 2.89)
    assert round(x6_bw * LOADED_LATENCY_US * 1e-6 / 1e6, 1) == 4.7
    assert round(x6_bw * LOADED_LATENCY_US * 1e-6 / sms / 1e3) == 36
    assert round(x7_bw * LOADED_LATENCY_US * 1e-6 / (g * fused.CLUSTER_BLOCKS) / 1e3) == 39
    # x6 issues 2 blocks x 480 threads x 10 float4 per SM at the start of each round; one slice is 77 KB
    assert round(2 * fused.cluster_threads(fused.VOCAB_SHAPE["N"]) * 10 * 16 / 1e3) == 154


def test_header_times_are_the_ledgers():
    """8192 x 2048: x7's warp-row kernel, x5's median; 128 x 152,064: the byte ledger at the median copy bandwidth, one
    exposed round trip at the head and one row's SM work at the tail. Each number the header quotes is recomputed."""
    copy = statistics.median(_sessions("kernels-ceilings", "copy_bandwidth"))
    read = statistics.median(_sessions("kernels-ceilings", "read_bandwidth"))
    assert len(_sessions("kernels-ceilings", "copy_bandwidth")) == 39
    assert (round(copy / 1e12, 3), round(read / 1e12, 3)) == (4.265, 4.386)
    short = fused.SOFTMAX_TIMING_SHAPE
    x5 = _sessions(f"softmax.x5-warp-row.{kfs.SHORT_ROW}", "time")
    x5_us = statistics.median(x5) * 1e6
    assert (len(x5), round(x5_us, 2)) == (32, 33.65)
    assert round(x5_us / 1e3, 3) == X8.preregistered_ms(short) == 0.034
    assert (round(_bytes(short) / copy * 1e6 / x5_us, 3), round(_bytes(short) / read * 1e6 / x5_us, 2)) == (0.935, 0.91)

    vocab = fused.VOCAB_SHAPE
    g = fused.stream_clusters(vocab["M"], get_hardware(PREREGISTERED_ON).sm_count)
    assert (g, *divmod(vocab["M"], g)) == (14, 9, 2)
    floor_us = _bytes(vocab) / copy * 1e6
    tail_us = sum(ROW_WORK_CLK.values()) / rc.SM_CLOCK_HZ * 1e6
    total_us = floor_us + EXPOSED_US + tail_us
    assert (round(floor_us, 2), sum(ROW_WORK_CLK.values()), round(tail_us, 2), round(total_us, 2)) == \
        (36.51, 4570, 2.31, 39.62)
    assert round(total_us / 1e3, 3) == X8.preregistered_ms(vocab) == 0.040
    assert round(_bytes(vocab) / (total_us * 1e-6) / read, 3) == 0.896
    round_us = g * _bytes({"M": 1, "N": vocab["N"]}) / copy * 1e6
    assert (round(g * _bytes({"M": 1, "N": vocab["N"]}) / 1e6, 1), round(round_us, 1)) == (17.0, 4.0)
    assert tail_us < round_us, "a row's SM work must fit under a round's DRAM time, or the SMs bound the ring"
    # the cycle counts: 76,032 B out of shared memory, 19,008 EX2, 76 KB of stores per block
    slice_b = 16 * -(-vocab["N"] // 32)
    assert (slice_b, slice_b // 128, slice_b // 4 // 16, slice_b // 64) == (76032, 594, 1188, 1188)


def test_launch_picks_the_kernel_and_the_ring_depth():
    facts = DeviceFacts(132)
    (short,) = X8.calls(fused.SOFTMAX_TIMING_SHAPE, facts)
    assert (short.source, short.kernel, short.launch.grid, short.launch.block) == \
        ("softmax/x7_pipelined.cu", "softmax_warp_rows", (2048, 1, 1), (128, 1, 1))
    (long_,) = X8.calls(fused.VOCAB_SHAPE, facts)
    assert (long_.kernel, long_.launch.grid, long_.launch.block, long_.launch.cluster) == \
        ("softmax_cluster_ring", (112, 1, 1), (480, 1, 1), 8)
    assert (long_.launch.shmem, long_.args[-1]) == (3 * 76_032, "i32:3")
    (widest,) = X8.calls({"M": 4, "N": fused.CLUSTER_MAX_COLS}, facts)
    assert (widest.launch.shmem, widest.args[-1]) == (2 * 81_920, "i32:2"), "the longest row held: 2 stages"
    (few,) = X8.calls({"M": 3, "N": 4097}, facts)
    assert few.launch.grid == (24, 1, 1), "never more clusters than rows"
    # the GPU runner: a window past 48 KB goes through tma_launch.RawLaunch (cuLaunchKernel, the opt-in set); the
    # cluster comes from the kernel's __cluster_dims__, so neither launch path passes one
    assert needs_raw_launch(long_) and needs_raw_launch(widest) and not needs_raw_launch(few)
    for n in (2049, 4097, 40_003, fused.VOCAB_SHAPE["N"], fused.CLUSTER_MAX_COLS):
        stages = fused.ring_stages(n)
        assert 2 <= stages <= 3 and stages * 16 * -(-n // 32) + fused.RING_STATIC_RESERVE <= fused.RING_SMEM_OPTIN


_need = rc.need_tools  # skips, naming the tool, where it is absent


def test_ring_kernel_holds_one_block_per_sm_in_the_opt_in_window():
    """The header prices one block of 480 threads per SM, its ring of 3 slices in dynamic shared memory: the static
    arrays must fit the launch's reserve, ptxas must not spill (a spill is a second DRAM pass), and one block per SM
    must be resident with the window opted in."""
    _need("nvrtc")
    (call,) = X8.calls(fused.VOCAB_SHAPE, DeviceFacts(132))
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    assert (use.stack_bytes, use.spill_store_bytes, use.spill_load_bytes) == (0, 0, 0), use
    assert use.registers <= 128 and use.shared_bytes <= fused.RING_STATIC_RESERVE, use
    occ = occupancy(use.registers, use.shared_bytes + call.launch.shmem, call.launch.threads_per_block, "sm_90")
    assert occ.value == 1, f"{occ.value:g} blocks/SM ({occ.inputs['limiter']}); the header counts on 1"


def test_ring_kernel_sass_loads_slices_by_bulk_copy_only():
    """Static SASS: the float4 path's slices arrive by two bulk copies (the prologue's and the refill's UBLKCP), never
    by a 128-bit global load; the scalar path's loads are 32-bit; 10 STG.128 per row from registers; one cluster
    barrier per row and one at exit; about one MUFU.EX2 per value held (the compiler may unswitch the row loop on the
    path), no local memory."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    c = kc.sass_counts("softmax/x8_tma_ring.cu", "sm_90")["softmax_cluster_ring"]
    assert c.get("UBLKCP", 0) == 2 and c.get("LDG.128", 0) == 0 and c.get("LDG.64", 0) == 0, c
    assert c.get("STG.128", 0) == 10, c
    assert c.get("UCGABAR_ARV", 0) == 2 and c.get("UCGABAR_WAIT", 0) == 2, c
    assert 40 <= c.get("MUFU", 0) <= 2 * 40 + 12, f"MUFU {c.get('MUFU', 0)}"
    assert not any(k.startswith(("LDL", "STL")) for k in c), c


@pytest.mark.parametrize("shape,sm_count", [({"M": 9, "N": 4097}, 24), ({"M": 10, "N": 20_000}, 40),
                                            ({"M": 7, "N": 40_000}, 24), ({"M": 5, "N": 40_003}, 40),
                                            ({"M": 5, "N": fused.CLUSTER_MAX_COLS}, 24),
                                            ({"M": 3, "N": 2049}, 132)],
                         ids=("4097-1-cluster-3-laps", "20000-3-clusters", "40000-1-cluster", "40003-3-clusters",
                              "163840-2-stages-wrap", "2049-one-row-each"))
def test_ring_kernel_wraps_and_strides_rows_over_clusters(shape, sm_count):
    """Against float64: one cluster over 9 rows (the 3-stage ring's mbarrier phases 0, 1, 0), 3 clusters over 10 and
    5 rows (uneven), the float4 and scalar paths, the longest row held (a 2-stage ring over 5 rows), one row each."""
    rc.assert_matches_float64(X8, "softmax", (shape,), 17, device=DeviceFacts(sm_count))
