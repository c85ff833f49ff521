"""Softmax rung x7 (softmax/x7_pipelined.cu) on the CPU: its header's two pre-registered times recomputed from the
recordings they were derived from, its launch per row length, ptxas's resources and occupancy for the persistent
cluster kernel, the SASS its header counts on, and the emulator at grids of more than one cluster (the timing
launch's row stride: clusters taking rows c, c + G, ...), where the shared emulator test runs one cluster."""

from __future__ import annotations

import statistics

import kernel_findings_shared as kfs
import rung_checks as rc
import pytest

from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import fused
from pytest_anatomy.kernels.ladders import variant
from pytest_anatomy.kernels.registry import PREREGISTERED_ON, DeviceFacts
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory.kernel_occupancy import occupancy

X7 = variant("softmax", "x7-pipelined")
# The newest session recorded when x7's header was written: its numbers read the sessions up to this one only.
WRITTEN_AFTER = "20261204T101400"
EXPOSED_US = 0.8  # one exposed round trip: the DRAM latency x5's and x6's headers used
TAIL_STORE_US = 1.2  # the tenth round's 76 KB of stores per SM at about twice an SM's fair share


def _sessions(name: str, key: str) -> list[float]:
    return rc.recorded_values(kfs.RESULTS, name, key, WRITTEN_AFTER)


_bytes = rc.softmax_bytes  # one read, one write


def test_header_times_are_the_ledgers():
    """8192 x 2048: x5's byte ledger at the sessions' median copy bandwidth plus x5's median time above it;
    128 x 152,064: nine full rounds of G clusters at that bandwidth, a tenth round for the rows left over, one
    exposed latency at each end. Each number the header quotes is recomputed here."""
    copy = statistics.median(_sessions("kernels-ceilings", "copy_bandwidth"))
    read = statistics.median(_sessions("kernels-ceilings", "read_bandwidth"))
    x5 = _sessions(f"softmax.x5-warp-row.{kfs.SHORT_ROW}", "time")
    x6 = _sessions(f"softmax.x6-cluster-row.{kfs.VOCAB}", "time")
    assert (len(_sessions("kernels-ceilings", "copy_bandwidth")), len(x5), len(x6)) == (37, 32, 29)
    assert (round(copy / 1e12, 3), round(read / 1e12, 3)) == (4.264, 4.387)
    short = fused.SOFTMAX_TIMING_SHAPE
    floor_us = _bytes(short) / copy * 1e6
    x5_us = statistics.median(x5) * 1e6
    assert (round(floor_us, 2), round(x5_us, 2), round(x5_us - floor_us, 2)) == (31.48, 33.65, 2.17)
    assert round(x5_us / 1e3, 3) == X7.preregistered_ms(short) == 0.034
    assert (round(floor_us / x5_us, 3), round(_bytes(short) / read * 1e6 / x5_us, 2)) == (0.935, 0.91)

    vocab = fused.VOCAB_SHAPE
    g = fused.stream_clusters(vocab["M"], get_hardware(PREREGISTERED_ON).sm_count)
    full, left = divmod(vocab["M"], g)
    assert (g, full, left) == (14, 9, 2)
    rounds_us = full * g * _bytes({"M": 1, "N": vocab["N"]}) / copy * 1e6
    total_us = rounds_us + (EXPOSED_US + TAIL_STORE_US) + 2 * EXPOSED_US
    assert (round(rounds_us, 2), round(total_us, 2)) == (35.95, 39.55)
    assert round(total_us / 1e3, 3) == X7.preregistered_ms(vocab) == 0.040
    assert round(_bytes(vocab) / (total_us * 1e-6) / read, 2) == 0.90
    assert round(statistics.median(x6) * 1e6, 1) == 49.3
    # in flight per SM (the next row's slice) against bandwidth x loaded latency at g x 8 SMs
    slice_kb = 4 * 4 * fused.CLUSTER_PER_THREAD // 4 * fused.cluster_threads(vocab["N"]) / 1e3
    assert (round(slice_kb), round(copy / (g * fused.CLUSTER_BLOCKS) * 1.5e-6 / 1e3)) == (77, 57)


def test_launch_picks_the_kernel_by_row_length():
    facts = DeviceFacts(132)
    (short,) = X7.calls(fused.SOFTMAX_TIMING_SHAPE, facts)
    assert (short.kernel, short.launch.grid, short.launch.block) == ("softmax_warp_rows", (2048, 1, 1), (128, 1, 1))
    (long_,) = X7.calls(fused.VOCAB_SHAPE, facts)
    assert (long_.kernel, long_.launch.grid, long_.launch.block, long_.launch.cluster) == \
        ("softmax_cluster_stream", (112, 1, 1), (480, 1, 1), 8)
    (few,) = X7.calls({"M": 3, "N": 4097}, facts)
    assert few.launch.grid == (24, 1, 1), "never more clusters than rows"


_need = rc.need_tools  # skips, naming the tool, where it is absent


def test_cluster_kernel_holds_two_rows_at_one_block_per_sm():
    """The header prices one block per SM holding this row and the next in registers (2 x 40 values): ptxas
    must fit it in 128 registers with no spill (a spill is a second DRAM pass), and exactly one block of the
    vocabulary row's 480 threads must be resident per SM (the grid is sized to one block per SM)."""
    _need("nvrtc")
    (call,) = X7.calls(fused.VOCAB_SHAPE, DeviceFacts(132))
    use = kc.resource_report(call.source, "sm_90")[call.kernel]
    assert (use.stack_bytes, use.spill_store_bytes, use.spill_load_bytes) == (0, 0, 0), use
    assert use.registers <= 128 and use.shared_bytes < 1024, use
    occ = occupancy(use.registers, use.shared_bytes, call.launch.threads_per_block, "sm_90")
    assert occ.value == 1, f"{occ.value:g} blocks/SM ({occ.inputs['limiter']}); the header counts on 1"
    (short,) = X7.calls(fused.SOFTMAX_TIMING_SHAPE, DeviceFacts(132))
    warp = kc.resource_report(short.source, "sm_90")[short.kernel]
    assert (warp.stack_bytes, warp.spill_store_bytes, warp.spill_load_bytes, warp.shared_bytes) == (0, 0, 0, 0), warp
    wocc = occupancy(warp.registers, warp.shared_bytes, short.launch.threads_per_block, "sm_90")
    assert wocc.value * short.launch.threads_per_block // 32 >= 24, "no fewer warps per SM than x5's 24"


def test_cluster_kernel_sass_loads_two_slices_and_syncs_once_per_row():
    """Static SASS: 20 LDG.128 (the first row's slice and, inside the row loop, the next row's), 10 STG.128, one
    barrier.cluster in the loop and one at exit (x6 has two per row), one MUFU.EX2 per value held, no local
    memory. The warp-row kernel keeps x5's 16 + 16 float4 accesses."""
    _need("nvrtc")
    _need("cuobjdump")
    _need("nvdisasm")
    counts = kc.sass_counts("softmax/x7_pipelined.cu", "sm_90")
    c = counts["softmax_cluster_stream"]
    assert c.get("LDG.128", 0) == 20 and c.get("STG.128", 0) == 10, c
    assert c.get("UCGABAR_ARV", 0) == 2 and c.get("UCGABAR_WAIT", 0) == 2, c
    assert 2 * 40 <= c.get("MUFU", 0) <= 2 * 40 + 10, f"MUFU {c.get('MUFU', 0)}"
    assert not any(k.startswith(("LDL", "STL")) for k in c), c
    w = counts["softmax_warp_rows"]
    assert w.get("LDG.128", 0) == 16 and w.get("STG.128", 0) == 16 and not w.get("BAR"), w


@pytest.mark.parametrize("shape,sm_count", [({"M": 7, "N": 4097}, 40), ({"M": 5, "N": 20_000}, 40),
                                            ({"M": 4, "N": 40_003}, 24), ({"M": 3, "N": 2049}, 132)],
                         ids=("4097-3-clusters", "20000-3-clusters", "40003-1-cluster", "2049-one-row-each"))
def test_cluster_kernel_strides_rows_over_clusters(shape, sm_count):
    """Grids of 3 clusters over 7 and 5 rows (uneven: some clusters take a row more, the pipelined load of a row
    past M is skipped), one cluster over 4 rows, and one cluster per row, against float64."""
    rc.assert_matches_float64(X7, "softmax", (shape,), 17, device=DeviceFacts(sm_count))
