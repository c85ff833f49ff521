"""Softmax rung x10 (softmax/x10_grid_tiles.cu) on the CPU: the model its header prices with (x9's per-wave model, its
fixed cost refitted on x6 and x9, x9 held in) and every pre-registered number, alternatives included, recomputed from
the recordings up to the header's writing; the launch (a cooperative grid of one 16-warp block per SM, 1,152-column
tiles, T = SMs at the vocabulary row) and its co-residency from the device compiler's registers; the SASS the header
counts on (no block barrier, no shared memory, the publish before the next tile's loads, the three pair loads issued
together); and the emulator against float64, a whole grid in one fiber pool, at the shortest row the tile path takes,
odd lengths, odd tile counts, the scalar kernel, full tiles, the longest row held, and twice on one workspace."""

from __future__ import annotations

import math
import re
import statistics

import kernel_findings_shared as kfs
import kernel_s16_x9_findings as s16x9
import numpy as np
import pytest
import rung_checks as rc

from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import emulator, fused
from pytest_anatomy.kernels.ladders import variant
from pytest_anatomy.kernels.reference import TOLERANCE, make_inputs, reference, rel_error
from pytest_anatomy.kernels.registry import PREREGISTERED_ON, DeviceFacts, RungRefused
from pytest_anatomy.measure.tma_launch import needs_raw_launch
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory.kernel_occupancy import occupancy

X10 = variant("softmax", "x10-grid-tiles")
SOURCE = "softmax/x10_grid_tiles.cu"
VEC, SCALAR = "softmax_grid_tiles", "softmax_grid_tiles_scalar"
# The newest recording when x10's header was written (x9's Nsight Compute profile): its numbers read these only.
WRITTEN_AFTER = "20261204T203849"
X6_BLOCKS_PER_SM = 2  # x6's and x9's blocks per SM (2 x 480 threads at 64 registers)
L2_ROUND_TRIP_US = 0.8  # the DRAM round trip x5's to x7's headers used, taken for an L2 one (an L2 hit is no slower)
EXCHANGE_ROUND_TRIPS = 3  # the counting atomic, the poll that sees the row complete, the pairs' read
SLOW_ROUND_TRIP_US = 2.0  # alternative (b)'s example
WRAP = 65_536  # a row counter cycles through T x WRAP values (the kernel's X10_WRAP)


def _sessions(name: str, key: str = "time") -> list[float]:
    return rc.recorded_values(kfs.RESULTS, name, key, WRITTEN_AFTER)


def _us(clk: float) -> float:
    return clk / rc.SM_CLOCK_HZ * 1e6


def _model() -> dict[str, float]:
    """x9's per-wave model on the recordings: the byte floor, x6's and x9's waves and SM work per wave, and the fixed
    cost per wave fitted on each and on both (least squares in time over x6's 5 waves and x9's 3)."""
    vocab = fused.VOCAB_SHAPE
    floor = rc.softmax_bytes(vocab) / statistics.median(_sessions("kernels-ceilings", "copy_bandwidth")) * 1e6
    x6 = statistics.median(_sessions(f"softmax.x6-cluster-row.{kfs.VOCAB}")) * 1e6
    (x9,) = [t * 1e6 for t in _sessions(f"softmax.x9-cluster4-smem.{kfs.VOCAB}")]
    w6 = math.ceil(vocab["M"] / s16x9.active_clusters(s16x9.X6_NCU))
    w9 = math.ceil(vocab["M"] / s16x9.active_clusters(s16x9.X9_NCU))
    x6_slice, x9_slice = 4 * -(-vocab["N"] // 32), 4 * -(-vocab["N"] // 16)
    shared_b = X6_BLOCKS_PER_SM * 16 * (x9_slice // 4 - 10 * fused.smem_cluster_threads(vocab["N"]))
    work6 = _us(X6_BLOCKS_PER_SM * x6_slice / rc.MUFU_PER_CLK)
    work9 = _us(X6_BLOCKS_PER_SM * x9_slice / rc.MUFU_PER_CLK + 2 * shared_b / rc.SMEM_B_PER_CLK)
    e6, e9 = x6 - floor - w6 * work6, x9 - floor - w9 * work9  # what the fixed costs must explain
    return {"floor": floor, "x6": x6, "x9": x9, "waves6": w6, "waves9": w9, "work6": work6, "work9": work9,
            "f6": e6 / w6, "f9": e9 / w9, "fixed": (w6 * e6 + w9 * e9) / (w6 * w6 + w9 * w9)}


def _last_step_us() -> float:
    """The last tile generation's SM work: 16 warps' 1,152 EX2 each through one SM's MUFU."""
    return _us(fused.GRID_WARPS * fused.GRID_TILE_COLS / rc.MUFU_PER_CLK)


def test_wave_model_fit():
    """x6: 30 clusters of 8 (5 waves), 1.20 us of SM work per wave; x9: 62 clusters of 4 (3 waves), 3.59 us; the
    fixed cost per wave is 1.37 us on x6 alone, 1.97 us on x9 alone, 1.52 us on both (x9's outcome held in)."""
    m = _model()
    sessions = (_sessions("kernels-ceilings", "copy_bandwidth"), _sessions(f"softmax.x6-cluster-row.{kfs.VOCAB}"))
    assert tuple(len(s) for s in sessions) == (42, 30)
    assert (round(m["floor"], 2), round(m["x6"], 2), round(m["x9"], 2)) == (36.51, 49.34, 53.17)
    assert (m["waves6"], m["waves9"], round(m["work6"], 2), round(m["work9"], 2)) == (5, 3, 1.20, 3.59)
    assert (round(m["f6"], 2), round(m["f9"], 2), round(m["fixed"], 2)) == (1.37, 1.97, 1.52)
    # the joint fit leaves x6 and x9 on either side: the model under-prices x9 (its counted 3 waves) and over-prices x6
    r6 = m["floor"] + m["waves6"] * (m["fixed"] + m["work6"]) - m["x6"]
    r9 = m["floor"] + m["waves9"] * (m["fixed"] + m["work9"]) - m["x9"]
    assert (round(r6, 2), round(r9, 2)) == (0.79, -1.32)


def test_header_times():
    """128 x 152,064: floor + one wave's fixed cost + the last tile generation's SM work + 3 L2 round trips = 41.01 us,
    0.041 ms, 86.6% of the read ceiling, under the target's 41.77 us; each tile's chain (2.98 us) fits in the 4.56 us of
    DRAM time a warp has per tile. 8192 x 2048: x5's median (x7's warp-row kernel)."""
    m = _model()
    vocab = fused.VOCAB_SHAPE
    read = statistics.median(_sessions("kernels-ceilings", "read_bandwidth"))
    exchange = EXCHANGE_ROUND_TRIPS * L2_ROUND_TRIP_US
    total = m["floor"] + m["fixed"] + _last_step_us() + exchange
    assert (round(_last_step_us(), 2), round(exchange, 2), round(total, 2)) == (0.58, 2.4, 41.01)
    assert round(total / 1e3, 3) == X10.preregistered_ms(vocab) == 0.041
    target = rc.softmax_bytes(vocab) / (0.85 * read) * 1e6
    assert (round(read / 1e12, 3), round(rc.softmax_bytes(vocab) / (total * 1e-6) / read, 3), round(target, 2)) == \
        (4.386, 0.866, 41.77)
    tiles_per_warp = vocab["M"] * fused.grid_tiles(vocab["N"]) // (get_hardware(PREREGISTERED_ON).sm_count
                                                                    * fused.GRID_WARPS)
    per_tile = m["floor"] / tiles_per_warp
    chain = _last_step_us() + exchange
    assert (tiles_per_warp, round(per_tile, 2), round(chain, 2)) == (8, 4.56, 2.98) and chain < per_tile
    short = fused.SOFTMAX_TIMING_SHAPE
    x5 = statistics.median(_sessions(f"softmax.x5-warp-row.{kfs.SHORT_ROW}")) * 1e6
    assert round(x5, 2) == 33.65 and round(x5 / 1e3, 3) == X10.preregistered_ms(short) == 0.034


def test_alternatives():
    """(a) x7's pace per SM (its busiest SMs' 10 rows of 152,064 B in its one run) on x10's 1/132 of the bytes: 41.79
    us, just over the target (x8's pace: 42.54 us); (b) the exchange sets the pace past 1.33 us per L2 round trip:
    8 chains + the fixed cost, 54.2 us at 2 us per round trip."""
    m = _model()
    vocab = fused.VOCAB_SHAPE
    read = statistics.median(_sessions("kernels-ceilings", "read_bandwidth"))
    per_sm = rc.softmax_bytes(vocab) / get_hardware(PREREGISTERED_ON).sm_count
    row_per_sm = 2 * 4 * 4 * -(-vocab["N"] // 32)  # x7's slice of a row, read and written, per SM
    rounds = math.ceil(vocab["M"] / fused.stream_clusters(vocab["M"], get_hardware(PREREGISTERED_ON).sm_count))
    paces = {r: rounds * row_per_sm / _sessions(f"softmax.{r}.{kfs.VOCAB}")[0] for r in ("x7-pipelined", "x8-tma-ring")}
    times = {r: per_sm / p * 1e6 for r, p in paces.items()}
    assert (per_sm, row_per_sm, rounds) == (1_179_648, 152_064, 10)
    assert [round(p / 1e9, 1) for p in paces.values()] == [28.2, 27.7]
    assert [round(t, 2) for t in times.values()] == [41.79, 42.54]
    target = rc.softmax_bytes(vocab) / (0.85 * read) * 1e6
    assert round(rc.softmax_bytes(vocab) / (times["x7-pipelined"] * 1e-6) / read, 4) == 0.8495
    assert times["x7-pipelined"] - target > 0 and round(times["x7-pipelined"] - target, 2) == 0.02
    per_tile = m["floor"] / 8
    threshold = (per_tile - _last_step_us()) / EXCHANGE_ROUND_TRIPS
    slow = 8 * (_last_step_us() + EXCHANGE_ROUND_TRIPS * SLOW_ROUND_TRIP_US) + m["fixed"]
    assert (round(threshold, 2), round(slow, 1)) == (1.33, 54.2) and slow > m["x6"]


def test_launch_geometry():
    """The vocabulary row: 132 blocks of 512 threads, cooperative, no shared memory, T = 132 tiles per row (one per
    SM), 16,896 tiles, 8 per warp, every SM 1/132 of the bytes, at most 32 rows' tiles on chip; the workspace's pairs
    (rows at an even stride) and counters; odd rows take the scalar kernel; short rows x7's warp-row kernel; a grid
    with too few warps for a row's tiles grows (the emulator's few SMs); past 163,840 columns, refused."""
    sms = get_hardware(PREREGISTERED_ON).sm_count
    vocab, facts = fused.VOCAB_SHAPE, DeviceFacts(sms)
    (call,) = X10.calls(vocab, facts)
    assert (call.kernel, call.launch.grid, call.launch.block, call.launch.shmem, call.launch.cooperative) == \
        (VEC, (sms, 1, 1), (512, 1, 1), 0, True)
    t = fused.grid_tiles(vocab["N"])
    assert (t, t * fused.GRID_TILE_COLS, vocab["M"] * t, vocab["M"] * t // (sms * fused.GRID_WARPS)) == \
        (sms, vocab["N"], 16_896, 8)
    assert 2 * fused.GRID_WARPS * fused.GRID_TILE_COLS * 4 == 147_456  # registers' worth of tiles per SM
    assert X10.workspace is not None and X10.workspace_zeroed
    assert X10.workspace(vocab, facts) == {"part": 2 * 128 * 132, "count": 128}
    assert X10.workspace({"M": 3, "N": 4 * fused.GRID_TILE_COLS + 1}, facts) == {"part": 2 * 3 * 6, "count": 3}
    assert needs_raw_launch(call), "a cooperative grid goes through cuLaunchCooperativeKernel"
    (odd,) = X10.calls({"M": 3, "N": 4097}, facts)
    (short,) = X10.calls(fused.SOFTMAX_TIMING_SHAPE, facts)
    assert (odd.kernel, short.kernel, short.launch.cooperative) == (SCALAR, "softmax_warp_rows", False)
    assert X10.workspace(fused.SOFTMAX_TIMING_SHAPE, facts) == {}
    (widest,) = X10.calls({"M": 2, "N": fused.CLUSTER_MAX_COLS}, DeviceFacts(4))
    assert widest.launch.grid == (9, 1, 1) and 9 * fused.GRID_WARPS >= fused.grid_tiles(fused.CLUSTER_MAX_COLS) == 143
    with pytest.raises(RungRefused):
        X10.calls({"M": 1, "N": fused.CLUSTER_MAX_COLS + 1}, facts)


@pytest.mark.parametrize("kernel", [VEC, SCALAR])
def test_one_block_per_sm(kernel):
    """The device compiler (NVRTC 13.0.88): 122 and 110 registers (at most 128), no stack or spill, no shared memory;
    one block of 512 threads per SM, so the 132 blocks of the vocabulary launch are all resident (the cooperative
    launch's test)."""
    rc.need_tools("nvrtc")
    use = kc.resource_report(SOURCE, "sm_90")[kernel]
    assert (use.stack_bytes, use.spill_store_bytes, use.spill_load_bytes, use.shared_bytes) == (0, 0, 0, 0), use
    assert use.registers == {VEC: 122, SCALAR: 110}[kernel] <= 128, use  # NVRTC 13.0.88, as on the device
    occ = occupancy(use.registers, 0, fused.GRID_WARPS * 32, "sm_90")
    sms = get_hardware(PREREGISTERED_ON).sm_count
    assert occ.value * sms >= X10.calls(fused.VOCAB_SHAPE, DeviceFacts(sms))[0].launch.blocks == sms


def test_sass_counts():
    """float4 kernel: 27 LDG.128 of tiles (three load sites, 9 each) + 6 of pairs, 2 polls (LDG.32), 36 STG.128 (four
    store sites), one pair store, one MEMBAR and one ATOMG per half of the loop; no block barrier, no shared or local
    memory; at least the 72 EX2 of two tiles. The scalar kernel: the same with 32-bit tile loads and stores."""
    rc.need_tools("nvrtc", "cuobjdump", "nvdisasm")
    counts = kc.sass_counts(SOURCE, "sm_90")
    vec, scalar = counts[VEC], counts[SCALAR]
    assert (vec.get("LDG.128"), vec.get("LDG.32"), vec.get("STG.128"), vec.get("STG.32", 0)) == (33, 2, 36, 0), vec
    assert (scalar.get("LDG.128"), scalar.get("LDG.32"), scalar.get("STG.32")) == (6, 110, 144), scalar
    for c in (vec, scalar):
        assert (c.get("STG.64"), c.get("MEMBAR"), c.get("ATOMG")) == (2, 2, 2), c
        assert not any(k.startswith(("BAR", "LDS", "STS", "LDL", "STL")) for k in c), c
        assert c.get("MUFU", 0) >= 2 * 4 * 9, c


def _ops(kernel: str) -> list[str]:
    listing = kc.sass_text(SOURCE, "sm_90").split("Function : ")
    body = next(f for f in listing if f.startswith(kernel + "\n") or f.split()[0] == kernel)
    return re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", body)


# The SASS opcodes of one tile's steps (NVRTC 13.0.88, cuobjdump): the pair's store, the release's fence, the counting
# atomic, the previous tile's evict-first stores, the next tile's evict-first loads, the poll, the pair loads.
PHASES = {"STG.E.64.STRONG.GPU": "P", "MEMBAR.ALL.GPU": "F", "ATOMG.E.INC.STRONG.GPU": "A", "STG.E.EF.128": "s",
          "LDG.E.EF.128": "l", "LDG.E.STRONG.GPU": "W", "LDG.E.128.STRONG.GPU": "p"}


def test_publish_then_loads_then_poll():
    """The float4 kernel: the first tile's 9 loads; in each half of the loop the pair's store, the release (MEMBAR,
    ATOMG), the previous tile's 9 stores, the next tile's 9 loads, the poll and the three pair loads, within 8
    instructions (ptxas serialised them, a round trip each, when the scalar path shared the kernel); the last stores."""
    rc.need_tools("nvrtc", "cuobjdump", "nvdisasm")
    ops = _ops(VEC)
    seq = "".join(PHASES.get(o, "") for o in ops)
    half = "PFA" + "s" * 9 + "l" * 9 + "Wppp"
    assert seq == "l" * 9 + 2 * half + "s" * 18, seq  # the first tile's loads, the loop, the last stores (2 exits)
    pairs = [i for i, o in enumerate(ops) if PHASES.get(o) == "p"]
    assert len(pairs) == 6 and pairs[2] - pairs[0] <= 8 and pairs[5] - pairs[3] <= 8, pairs


# Odd shapes on few SMs: the shortest row the tile path takes (T = 2, the second tile one column), 50 rows (4 tiles
# per warp: both register sets reloaded), full tiles (every lane's 9 float4), an odd tile count on the scalar kernel
# (the row's padding pair slot), a short last tile, and the longest row held (143 tiles on 9 blocks of 4 SMs' grid).
SHAPES = [({"M": 3, "N": 2049}, 2), ({"M": 50, "N": 2049}, 2), ({"M": 5, "N": 4 * 1152}, 3),
          ({"M": 2, "N": 40_003}, 3), ({"M": 3, "N": 20_000}, 4), ({"M": 2, "N": 163_840}, 4)]
IDS = ("2049", "50-rows", "full-tiles", "40003-scalar", "20000", "163840")


@pytest.mark.parametrize("shape,sms", SHAPES, ids=IDS)
def test_matches_float64(shape, sms):
    """Against float64, output poisoned with NaN, the whole grid one fiber pool (a cooperative launch)."""
    (call,) = X10.calls(shape, DeviceFacts(sms))
    assert call.kernel in (VEC, SCALAR) and call.launch.cooperative
    rc.assert_matches_float64(X10, "softmax", (shape,), 10, device=DeviceFacts(sms))


def _run(shape: dict[str, int], x: np.ndarray, sms: int, ws: dict[str, np.ndarray]) -> float:
    inputs = {"x": x}
    return rel_error(emulator.run(X10, shape, inputs, device=DeviceFacts(sms), workspace=ws),
                     reference("softmax", inputs, "fp32"))


def test_one_workspace_serves_every_launch():
    """Two launches with different inputs on one workspace (the device's timing runs): each waits for its own T pairs
    per row (a wait satisfied by the first launch's count would read its stale pairs); the counters end at T, then
    2T; from one launch short of the wrap (T x 65,536 - T) the counters wrap to 0 and the launch is still right."""
    try:
        emulator.compiler()
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(11)
    shape = {"M": 3, "N": 5001}
    t = fused.grid_tiles(shape["N"])
    ws: dict[str, np.ndarray] = {}
    for launch in (1, 2):
        err = _run(shape, make_inputs("softmax", shape, "fp32", rng)["x"], 2, ws)
        assert err <= TOLERANCE["fp32"] and list(ws["count"].view(np.uint32)) == [launch * t] * 3, (launch, err)
    ws["count"].view(np.uint32)[:] = t * WRAP - t
    err = _run(shape, make_inputs("softmax", shape, "fp32", rng)["x"], 2, ws)
    assert err <= TOLERANCE["fp32"] and list(ws["count"].view(np.uint32)) == [0] * 3, err


def test_a_wait_that_can_never_end_fails_the_launch_not_the_process():
    """A row counter that does not start at a multiple of T (a workspace another shape left, or a wrong wait target)
    leaves x10's warps spinning for a count that never comes: the emulator finds the launch stuck, fails it, and the
    test process goes on (it used to abort, taking the whole pytest run down)."""
    try:
        emulator.compiler()
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(str(exc))
    shape = {"M": 2, "N": 5001}
    x = make_inputs("softmax", shape, "fp32", np.random.default_rng(12))["x"]
    ws: dict[str, np.ndarray] = {"count": np.zeros(2, dtype=np.float32)}
    ws["count"].view(np.uint32)[0] = 1
    with pytest.raises(RuntimeError, match="deadlocked in the emulator"):
        _run(shape, x, 2, ws)


def test_negative_rows_odd_tiles():
    """Rows near -300 with an odd tile count (5): the row's padding pair slot (zero m, zero d) must count for nothing,
    its m included (merged, a max of 0 would scale every d by 2^-433: an underflow to 0 and a division by it)."""
    try:
        emulator.compiler()
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(str(exc))
    shape = {"M": 2, "N": 5001}
    assert fused.grid_tiles(shape["N"]) % 2 == 1
    x = (np.random.default_rng(12).standard_normal((2, 5001)) - 300.0).astype(np.float32)
    assert _run(shape, x, 2, {}) <= TOLERANCE["fp32"]


def test_plan_preflights_x10():
    """The device command's dry run: x10 beside x6 and torch, its tile launches cooperative (the scalar kernel at
    4,097 columns), x7's kernel at 2,048 columns and fewer; x10's checks run first in a child process."""
    text = rc.plan_dry_run("--ladders", "softmax", "--rungs", f"{X10.id},x6-cluster-row", "--no-autotune")
    rungs = {line.split()[1] for line in text.splitlines() if line.startswith("softmax")}
    assert rungs == {X10.id, "x6-cluster-row", "x0-torch"}, text
    lines = {line.split()[2]: line for line in text.splitlines() if line.startswith(f"softmax   {X10.id}")}
    assert lines["128x152064"].endswith(f"{VEC}<<<(132, 1, 1),(512, 1, 1)>>> cooperative"), lines
    assert lines["33x4097"].endswith(f"{SCALAR}<<<(132, 1, 1),(512, 1, 1)>>> cooperative"), lines
    assert "softmax_warp_rows" in lines["8192x2048"] and X10.id in fused.CHILD_PREFLIGHT
    plan = rc.load_plan()
    assert X10.id in plan.PREFLIGHT and plan.PREFLIGHT >= plan.sgemm.CHILD_PREFLIGHT
