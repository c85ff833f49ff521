"""The attention rungs' DRAM and L2 bytes, counted by Nsight Compute, against the IO theory.

Recordings: results/<card>/flashattn/ncu.fa2.<rung>.b{B}h{H}n{N}d{D}.{full|causal}@<stamp>.json,
from one `bash scripts/device/flashattn_profile.sh` call (every rung launched once, inside a
profiler window that excludes inputs, compiles and autotuning; caches flushed before each
replayed kernel) imported with `pytest-anatomy import-ncu`. They are never measured live here.

PRE-REGISTRATION. The models, bands and numbers below were written on 2026-12-01 before any of
these counters existed (the timings of the same rungs did; no counter of an attention kernel
did). Shapes: T = B=4 H=32 N=4096 D=128 bf16 (every rung), L = B=1 H=16 N=32k (r6), X = B=1 H=4
N=128k (r6); full and causal each. All three move the same Q, K, V, O: 128 + 256 + 128 MiB.

DRAM reads (test_dram_reads_*):
- r3-r6 at T and L: Q + K + V once = 402.7 MB ("compulsory", theory.compulsory_bytes' terms).
  At T the K/V of the heads in flight (3-4 heads, 2 MiB each) sit far inside the L2; at L two
  heads' K/V (32 MiB) exceed the half of L2 that theory.l2_absorbs allows, so the *time* model
  prices the tiled count there (68.7 GB); the author expects the L2 to absorb it anyway (one
  head's K/V, 16 MiB, fits; the programs of a head walk K/V in step). Band [0.98, 1.5] at L,
  [0.98, 1.15] at T. 0.98: ncu counts every sector, and every input byte must cross once.
- r1 (naive): + the fp32 S read twice (the row max, then exp/sum/PV): 2 x 8.59 GB + 402.7 MB =
  17.58 GB, band [0.85, 1.05]: a program's second pass over its 2 MiB row of S can hit L2 only
  while the 132 rows in flight (264 MiB) leave it there, at most L2/264 MiB = 23% of the pass.
- r2 (FA-1 order): + its fp32 workspace (O32, m, l: 272.6 MB), read from DRAM on the first KV
  step after the three fills that precede it (inside the window) wrote it: 675.3 MB, band
  [0.98, 1.3]; above 1.3 would mean the 256 KiB O32 group of each program (33 MiB for 132
  programs) misses L2 between two KV steps.
- r6 at X (test_dram_reads_when_one_heads_kv_exceeds_l2): theory.streamed_kv_reads, each KV
  head's K/V once per wave of co-resident programs. With BLOCK_M=128 at one program per SM
  (132 resident; BLOCK_M=64 at two gives the same) 8.75 passes per head: 128 MiB + 35 x 64 MiB
  = 2.48 GB; compulsory would be 0.40 GB, the tiled count 275 GB. Band [0.5, 1.25] full: LRU
  over a 64 MiB cyclic walk with 60 MiB of L2 keeps nothing between waves (1.0); a replacement
  policy that keeps part of the previous walk saves up to half. Causal [0.25, 1.25]: programs
  of different lengths break the waves' step (short ones restart at tile 0 while long ones are
  far along), so fewer passes are likely.

DRAM writes (test_dram_writes_*): O + LSE = 136.3 MB (r3-r6), + S = 8.73 GB (r1), + the
workspace twice (the fills, then its eviction) = 681.6 MB (r2). Upper 1.02; lower: a kernel's
writes exclude lines still dirty in L2 when it ends, at most one L2 (62.9 MB) per kernel of the
launch: 0.538 (r3-r6), 0.986 (r1, 2 kernels), 0.631 (r2, 4 kernels).

L2 bytes (test_l2_bytes_*), r3-r6 only (r1/r2's loads follow other patterns; r7, r8 below): theory.tiled_bytes
at the tiling the autotuner chose for that launch (recorded in the manifest): what the loads
ask for. At T full: 8.86 GB for BLOCK_M=128, 17.45 GB for 64; causal 4.70 GB (128x64, 128x128)
or 8.99 GB (64x64). At L full 68.99 GB (128), X full 275.2 GB (128). Band [0.8, 2.0]: lts__t_bytes
counts every L2 request, and on the H200 more: the reduction ladder's pure streams counted 1.52x
the bytes they read (results/h200/kernels/ncu.reduction.*: 1,630 MB for 1,074 MB), which the
author reads as the split L2's cross-partition traffic counted twice; 2.0 = every request
counted in both partitions. 0.8: a pointer rung's loads pass through L1, where two programs of
one head on one SM can share a K/V tile. Expected 1.0-1.6.

PRE-REGISTRATION, r7 (the Gluon warp-specialised rung), written 2026-12-04 before any counter of
r7 existed; its timings at T did (2.164 / 1.229 ms full / causal, 2026-12-04), and so did the
counters above, which shaped its L2 band. Launches: r7 at T, full and causal
(`flashattn_profile.sh --rungs r7`). Every r7 config has BLOCK_M=128 (BLOCK_N 64 or 128, 2-3 ring
stages) and one 12-warp program per SM (8 consumer warps and the producer's warpgroup at 168
registers fill the register file; ncu's theoretical occupancy 18.75% expected): 132 programs in
flight, 6 heads' K/V = 12 MiB (theory.l2_working_set), far inside L2/2.
- DRAM reads: compulsory Q + K + V = 402.7 MB, band [0.98, 1.15], as r3-r6.
- DRAM writes: O + LSE = 136.3 MB, band [0.538, 1.02] (one kernel).
- L2 bytes: the tiled count at the tiling the autotuner chose. Full 8.86 GB for either BLOCK_N
  (32 query blocks per head each read all 4096 keys: 8.59 GB of K/V, + Q + O + LSE). Causal
  4.70 GB: for query block i r7's loop visits KV tiles 0..ceil(128(i+1)/BN)-1, the tiles left of
  row 128i unmasked and the diagonal's masked, which is theory.causal_blocks exactly: 992 + 64
  tiles of 64 keys (496 + 32 of 128) per head, 4.43 GB of K/V. Expected measured/tiled: full
  ~0.6 (as r6), causal ~1.0. Band (flashattn_io.GLUON_L2_BAND): full [0.45, 0.9], causal
  [0.85, 1.2], not r3-r6's [0.8, 2.0]: r5 and r6 at T full counted 0.67 and 0.58 of the tiled
  count (finding h200-l2-request-coalescer-merges-kv-reads: Hopper's L2 request coalescer merges
  the in-step requests of a head's programs), and r7's K/V loads are TMA copies (no L1) from a
  producer warp, the programs of a head starting together and walking K/V in step as r6's do.
  Full 0.45: more merging than r6 (the producer issues a tile as soon as a ring slot frees,
  which may keep a head's programs in closer step); 0.9: as little as r3/r4 (0.81) and 10% more.
  Causal: r3-r6 counted 0.92-1.05 (a head's causal programs end at different times, so those
  started after them run out of step and little merges), +-15%.
- Not profiled at L and X: those stay the best rung's (registry.BEST, r6).

PRE-REGISTRATION, r8 (FA-3's ping-pong in Gluon), written 2026-12-04 (~19:50) before any counter
of r8 existed; its timings at T did (1.679 / 0.976 ms full / causal, 2026-12-04 18:48), and so did
r7's counters above (16:38), which shape its L2 band. Launches: r8 at T, full and causal, numbers
15 and 16 of the 20 (`flashattn_profile.sh --rungs r8`). Both r8 configs are BLOCK_M=128
BLOCK_N=128 (2 or 3 ring stages; its first session's autotuner chose 2 in bf16, full and causal),
one program of 12 warps (two 4-warp consumer warpgroups, the producer warp padded to a warpgroup;
168 registers) per SM: ncu's theoretical occupancy 18.75%, 132 programs in flight, 6 heads' K/V
(12 MiB) far inside L2/2.
- DRAM reads: compulsory Q + K + V = 402.7 MB, band [0.98, 1.15], as r3-r7 (r7 counted 1.00x).
- DRAM writes: O + LSE = 136.3 MB, band [0.538, 1.02] (one kernel; r7 counted 0.94 / 0.95x).
- L2 bytes: the tiled count at 128 x 128, as r7's: the producer loads a program's 128-row Q tile
  once (each consumer warpgroup reads its 64-row half from shared memory) and each K/V tile its
  loop visits once (both warpgroups read it from the ring): full 8.86 GB (32 query blocks per
  head each read all 32 KV tiles), causal 4.70 GB (query block i visits tiles 0..i: 528 per
  head, theory.causal_blocks at 128 x 128). Expected measured/tiled as r7's counts: ~0.85 full,
  ~1.09 causal. Band (flashattn_io.R8_L2_BAND): r7's counted ratio +-15%, full [0.72, 0.97],
  causal [0.92, 1.25]: the same requests from the same producer-warp TMA pattern; what could move
  the ratio is how closely a head's programs walk K/V in step (the coalescer's merging), and r8's
  ring releases a slot only when both warpgroups are done with it. Below the band would mean more
  merging (r8's programs in closer step), above it less.
- Not profiled at L and X, nor at D=64 (the sweep times those).
"""

from __future__ import annotations

from typing import Any

import flashattn_io as io
import pytest
from flashattn_counter_findings import counter_marks

from pytest_anatomy import session as anatomy_session
from pytest_anatomy import targets as tg
from pytest_anatomy.theory import attention as at

MAX_WARPS_PER_SM = 64  # Hopper: 2,048 threads per SM; converts ncu's theoretical occupancy to programs per SM
POINTER_OR_TMA = ("r3-fa2", "r4-causal-split", "r5-exp2", "r6-tma-pipelined", "r7-warp-specialized",
                  "r8-pingpong")  # FA-2 order


SELECT = {
    "test_dram_reads_against_the_compulsory_bytes": lambda l, l2: io.fits_one_head(l, l2),
    "test_dram_writes_never_exceed_the_outputs": lambda l, l2: True,
    "test_l2_bytes_against_the_tiled_count": lambda l, l2: l["rung"] in POINTER_OR_TMA,
    "test_dram_reads_when_one_heads_kv_exceeds_l2": lambda l, l2: not io.fits_one_head(l, l2),
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "launch" not in metafunc.fixturenames:
        return
    targets, results = anatomy_session.of_config(metafunc.config, "flashattn")
    keep = SELECT[metafunc.function.__name__]
    params = []
    for t in targets:
        if t.live or t.spec is None:
            continue  # counters come from Nsight Compute runs (scripts/device/flashattn_profile.sh), never live
        l2 = t.spec.l2_bytes or 0
        for launch in io.launches():
            if keep(launch, l2) and tg.has_recording(results, t, "flashattn", io.name(launch)):
                case = io.name(launch).removeprefix("ncu.fa2.")
                params.append(pytest.param(t, launch, id=f"{t.name}-{case}",
                                           marks=counter_marks(metafunc.function.__name__, case)))
    metafunc.parametrize("target,launch", params)


def _record(measured: Any, launch: dict[str, Any]) -> Any:
    rec = measured(io.name(launch))
    written = (rec.data.get("launch") or {}).get("all_written")
    assert written is True, (f"{rec.name}: the profiled launch left outputs unwritten (all_written={written!r}): "
                             "its counters describe a broken kernel")
    return rec


@pytest.mark.gpu
def test_dram_reads_against_the_compulsory_bytes(target: Any, launch: dict[str, Any], measured: Any,
                                                 reconcile: Any) -> None:
    rec = _record(measured, launch)
    spec = target.require_spec()
    absorbed = at.l2_absorbs(io.shape_of(launch), io.tiling_of(rec), spec.require("l2_bytes"), spec.require("sm_count"))
    pred, band, why = io.expected_reads(launch["rung"], io.shape_of(launch), absorbed)
    reconcile("dram_read_bytes", pred, rec["dram_read_bytes"], ratio=band, why=why, hardware=target.name)


@pytest.mark.gpu
def test_dram_writes_never_exceed_the_outputs(target: Any, launch: dict[str, Any], measured: Any,
                                              reconcile: Any) -> None:
    rec = _record(measured, launch)
    pred, kernels = io.expected_writes(launch["rung"], io.shape_of(launch))
    l2 = target.require_spec().require("l2_bytes")
    lo = round(max(0.0, 1.0 - kernels * l2 / pred.value), 3)
    reconcile("dram_write_bytes", pred, rec["dram_write_bytes"], ratio=(lo, 1.02), hardware=target.name,
              why=f"a kernel's DRAM writes exclude lines still dirty in L2 when it ends: at most one L2 "
                  f"({l2 / 1e6:.1f} MB) short per kernel ({kernels}), never more than the outputs (+2% sectors)")


@pytest.mark.gpu
def test_l2_bytes_against_the_tiled_count(target: Any, launch: dict[str, Any], measured: Any,
                                          reconcile: Any) -> None:
    rec = _record(measured, launch)
    pred = at.tiled_bytes(io.shape_of(launch), io.tiling_of(rec))
    band, why = io.l2_band(launch)
    reconcile("l2_bytes", pred, rec["l2_bytes"], ratio=band, hardware=target.name, why=why)


@pytest.mark.gpu
def test_dram_reads_when_one_heads_kv_exceeds_l2(target: Any, launch: dict[str, Any], measured: Any,
                                                 reconcile: Any) -> None:
    rec = _record(measured, launch)
    config = rec.data["launch"]["config"]
    occupancy = rec["theoretical_occupancy_pct"].value
    per_sm = max(1, round(occupancy / 100 * MAX_WARPS_PER_SM / int(config["num_warps"])))
    resident = target.require_spec().require("sm_count") * per_sm
    pred = at.streamed_kv_reads(io.shape_of(launch), io.tiling_of(rec), resident)
    band = (0.25, 1.25) if launch["causal"] else (0.5, 1.25)
    reconcile("dram_read_bytes", pred, rec["dram_read_bytes"], ratio=band, hardware=target.name,
              why=f"{resident} programs in flight ({per_sm} per SM, ncu's theoretical occupancy {occupancy:.1f}%) "
                  "walk K/V in step; LRU keeps nothing of a 64 MiB walk in 60 MiB between waves (1.0), another "
                  "policy up to half" + ("; causal programs of unequal length break the step (down to 0.25)"
                                          if launch["causal"] else ""))
