"""Findings of the FlashAttention suite, per card measured (the numbers in a reason are that card's).

First H200 run: 2026-12-01 (results/h200/flashattn/*@20261201T0459*, live, NVML-derived spec).
Every rung landed inside its pre-registered band; the misses are the targets against torch's
backends, which the pre-registration itself expected (kernels/flashattn/registry.py: r6 falls short
"unless it lands at the top of its range"; it landed at 0.90-1.18 of its mid prediction), and
flash-decoding at 64k, which beat its pre-registered band. Bands: the first run's ratio +-10%.

Second H200 visit: 2026-12-01 06:38-06:56 (the N sweep, the Nsight Compute counters of every rung, a
second timing of the targets and of flash-decoding). Its findings, below the first run's, take their
bands from the pre-registration's own limits or from the mechanism's arithmetic, never from the
observed ratio; each reason gives the numbers.
"""

from __future__ import annotations

import flashattn_io as io
import pytest

from pytest_anatomy.theory import attention as at

MEASURED_ON = "h200"


def band(ratio: float, spread: float = 0.10) -> tuple[float, float]:
    return (round(ratio * (1 - spread), 3), round(ratio * (1 + spread), 3))


NO_WARP_SPECIALIZATION = (
    "r6 (TMA descriptors, 2-3 stage pipeline) runs at its pre-registered speed: 2.43 ms full / 1.27 ms causal at "
    "B=4 H=32 N=4096 D=128 bf16 on the first visit ({ratio_text}), 2.49 / 1.36 and 2.36 / 1.21 ms (467 / 454 "
    "TF/s) in the second visit's two sessions. torch's FLASH_ATTENTION backend (FA-2, no Hopper features) took 3.29 / 1.83 ms and "
    "3.41 / 1.69 ms, the default backend (cuDNN's Hopper kernel) 1.62 / 0.95 and 1.65 / 0.92 ms: r6 is 1.32-1.46x "
    "FLASH (target 1.5x) and 0.66-0.76x cuDNN (target 0.85x). Nsight Compute says r6 is not waiting on memory: DRAM "
    "reads are Q + K + V once (0.403 GB, DRAM at 4.6% / 8.7% of peak), L2 at 19% / 34%; one 8-warp program fills an "
    "SM (161 / 129 KiB of shared memory, 195 / 151 registers), so two warpgroups both load, multiply and do the "
    "softmax, and each warp waits 7.4 / 5.3 cycles per issued instruction (SM throughput 47% / 46%). What r6 lacks "
    "is what cuDNN's kernel has: warp-group specialisation (producer warps issuing TMA, consumer warpgroups issuing "
    "wgmma back to back, the softmax of one tile overlapped with the MMAs of the next). Triton 3.6's "
    "tl.range(warp_specialize=True) is Blackwell-only; on Hopper it is offered only through the experimental Gluon "
    "dialect, for which no rung is written yet.")
TARGETS = {
    ("test_best_rung_at_least_1_5x_flash_attention_backend", "full"): 1.107,
    ("test_best_rung_at_least_1_5x_flash_attention_backend", "causal"): 1.046,
    ("test_best_rung_at_least_0_85x_default_sdpa", "full"): 1.278,
    ("test_best_rung_at_least_0_85x_default_sdpa", "causal"): 1.139,
}
DECODE_AT_THE_CEILING = (
    "At 64k tokens of context flash-decoding streams its 2.15 GB of K/V in 0.492 ms: 4.37 TB/s, 101% of the "
    "session's read ceiling (4.32 TB/s, one fp32 torch.sum over 2 GiB), above the 75-95% the pre-registration "
    "allowed. The ceiling is one kernel's, not the card's: 1,024 split-K blocks each streaming contiguous K/V "
    "keep more bytes in flight than torch's single reduction. At 8k (268 MB, 71 us) it reaches 88%: the split-K "
    "reduction and launch (~5 us) weigh 7% there.")
DECODE = {("test_flash_decoding_time_against_its_prediction", "fd.b8h32kv8l65536d128"): 0.835}


def target_marks(test: str, case: str) -> tuple[pytest.MarkDecorator, ...]:
    if (test, case) in TARGETS:
        ratio = TARGETS[(test, case)]
        text = "0.94 / 0.95 of its mid prediction"
        return (pytest.mark.finding("h200-fa2-without-warp-specialization", hardware=MEASURED_ON, expected=band(ratio),
                                    reason=NO_WARP_SPECIALIZATION.format(ratio_text=text)),)
    if (test, case) in DECODE:
        return (pytest.mark.finding("h200-flash-decoding-beats-the-read-ceiling", hardware=MEASURED_ON,
                                    expected=band(DECODE[(test, case)]), reason=DECODE_AT_THE_CEILING),)
    return ()


# --- second H200 visit (2026-12-01 06:38-06:56): the N sweep, the counters, the decode target ----------------
# Bands below come from the pre-registration's own limits or from the mechanism's arithmetic (theory/attention.py
# terms at the tiling the autotuner recorded), never from the observed ratio.

SHORT_SEQUENCES_AT_D64 = (
    "N=512 D=64 (B=32 H=32): 225 us full / 154 us causal against 158 / 99 us predicted (1.42x / 1.56x). The "
    "autotuner chose BLOCK_M=64 BLOCK_N=64, 4 warps, 3 stages: a program runs 8 KV tiles (full) or 1-8 (causal), so "
    "its Q load, the 2-tile pipeline fill and the O/LSE store are a quarter or more of its life, and at D=64 each "
    "tile's MMAs are half as long against the same softmax work. The two effects the pre-registration named "
    "separately compound: N=512 D=128 ran at 1.20x / 1.32x (305 vs 363 TF/s full at D=64 vs D=128, 0.84x), "
    "D=64 at 32k at 1.07x / 1.13x. Band: the pre-registered N=512 expectation (1.1-1.5 full, 1.3-1.8 causal). At the "
    "chosen 64x64 tiles causal executes 10% fewer FLOPs than the 128x64 count the prediction prices, so its true "
    "shortfall is larger still.")
SWEEP = {
    "fa2.r6-tma-pipelined.b32h32n512d64.full": (1.1, 1.5),
    "fa2.r6-tma-pipelined.b32h32n512d64.causal": (1.3, 1.8),
}


def sweep_marks(case: str) -> tuple[pytest.MarkDecorator, ...]:
    if case in SWEEP:
        return (pytest.mark.finding("h200-fa2-short-sequences-at-d64", hardware=MEASURED_ON, expected=SWEEP[case],
                                    reason=SHORT_SEQUENCES_AT_D64),)
    return ()


DECODE_8K_AT_THE_TARGET = (
    "Flash-decoding at 8k (B=8 H=32 H_kv=8, 268 MB of K/V) sits on the 85% line: 72.0 us in the full live session "
    "(84.96% of its 4.388 TB/s read ceiling) and 71.6 us in the NVML-spec session (85.5%). The two sessions differ "
    "by 0.6% and one session's two timings (72.0 / 71.0 us) by 1.4%, so the target is met or missed within noise: "
    "the split-K reduction and the second kernel's launch (~5 us) are 7% of a 72 us call at this length. Band: "
    "the target (1.0) up to the within-session spread (1.4%); strict=False because the next session may meet it.")
DECODE_TARGET = {"fd.b8h32kv8l8192d128": (1.0, 1.014)}


def decode_target_marks(case: str) -> tuple[pytest.MarkDecorator, ...]:
    if case in DECODE_TARGET:
        return (pytest.mark.finding("h200-flash-decoding-8k-at-the-85pct-line", hardware=MEASURED_ON,
                                    expected=DECODE_TARGET[case], strict=False, reason=DECODE_8K_AT_THE_TARGET),)
    return ()


# Counter findings (tests_flashattn/test_flashattn_counters.py; its header holds the pre-registration).
R2_TILING = at.Tiling(128, 64)  # r2's only config: BLOCK_M=128, BLOCK_N=64, Q_GROUP=4 (recorded in the manifest)
L2_BYTES = 60 * 2**20  # the H200's L2 as the device reports it (specs/hardware.py)


def t_shape(causal: bool) -> at.AttentionShape:
    return at.AttentionShape.prefill(4, 32, 4096, 128, causal=causal)


def r2_step_bytes(shape: at.AttentionShape) -> tuple[int, int, int]:
    """(KV-step pairs, workspace bytes per pair, Q bytes per pair) of r2: every (KV tile, query block) step loads
    and stores its block's O32 (BM x D fp32) and m, l (BM fp32 each), and reloads its Q block (BM x D)."""
    pairs = shape.batch * shape.heads * at.kv_tiles_per_head(shape, R2_TILING)
    bm = R2_TILING.block_m
    return pairs, bm * shape.head_dim * 4 + 2 * bm * 4, bm * shape.head_dim * shape.dtype_bytes


def r2_read_band(causal: bool) -> tuple[float, float]:
    """From the pre-registration's 1.3 (above it, the O32 group misses L2 between KV steps) to every step's
    workspace and Q loads reaching DRAM, over the pre-registered Q + K + V + one workspace read."""
    shape = t_shape(causal)
    pred, _, _ = io.expected_reads("r2-fa1", shape, True)
    base = pred.value - io.workspace_bytes(shape)
    pairs, ws, q = r2_step_bytes(shape)
    return (1.3, round((base + pairs * (ws + q)) / pred.value, 2))


def r2_write_band(causal: bool) -> tuple[float, float]:
    """From the pre-registration's 1.02 to the fills plus every step's workspace store reaching DRAM, over the
    pre-registered O + LSE + the workspace twice."""
    shape = t_shape(causal)
    pred, _ = io.expected_writes("r2-fa1", shape)
    w = io.workspace_bytes(shape)
    pairs, ws, _ = r2_step_bytes(shape)
    return (1.02, round((pred.value - w + pairs * ws) / pred.value, 2))


def coalesced_l2_band(tiling: at.Tiling) -> tuple[float, float]:
    """From every K/V request of a head's co-running programs merged into one (the compulsory bytes) to the
    pre-registration's 0.8, over the tiled count at the recorded tiling."""
    shape = t_shape(False)
    return (round(at.compulsory_bytes(shape).value / at.tiled_bytes(shape, tiling).value, 3), 0.8)


def causal_stream_band() -> tuple[float, float]:
    """r6 at B=1 H=4 N=128k causal (recorded tiling 128x128): from the pre-registration's 1.25 to one pass of each
    head's K/V plus, for every program whose K/V prefix exceeds the L2, a pass of its own over that prefix; over
    the pre-registered wave count (132 programs resident, as the test computes it)."""
    shape = at.AttentionShape.prefill(1, 4, 131072, 128, causal=True)
    tiling = at.Tiling(128, 128)
    pred = at.streamed_kv_reads(shape, tiling, 132).value
    tile = tiling.block_n * shape.head_dim * 2 * shape.dtype_bytes
    own = sum((i + 1) * tile for i in range(at.cdiv(shape.seq_q, tiling.block_m)) if (i + 1) * tile > L2_BYTES)
    q = shape.batch * shape.heads * shape.seq_q * shape.head_dim * shape.dtype_bytes
    per_head = 2 * shape.seq_kv * shape.head_dim * shape.dtype_bytes
    return (1.25, round((q + shape.batch * shape.kv * (per_head + own)) / pred, 2))


def dirty_at_start_band() -> tuple[float, float]:
    """r6 at 128k full: from the pre-registered 1.02 to one L2 of lines dirty at the kernel's start, over O + LSE."""
    shape = at.AttentionShape.prefill(1, 4, 131072, 128)
    pred, _ = io.expected_writes("r6-tma-pipelined", shape)
    return (1.02, round(1 + L2_BYTES / pred.value, 3))


R2_ROUND_TRIPS = (
    "r2 (FA-1 order, BLOCK_M=128 BLOCK_N=64 Q_GROUP=4, one 8-warp program per SM: ncu's theoretical occupancy "
    "12.9%) moved 20.70 / 9.81 GB from DRAM (full / causal) and wrote 16.15 / 7.47 GB, against the 0.68 GB of "
    "reads and writes pre-registered: the O32/m/l round trip of every (KV tile, query block) step reached DRAM "
    "(full: 262,144 steps x 65 KiB = 17.45 GB each way; causal: 135,168 steps = 9.00 GB), plus part of the Q block "
    "each step reloads (32 KiB; 2.85 GB of 8.59 GB full). The pre-registration counted the 33 MiB of O32 groups "
    "in flight against the whole 60 MiB L2; a step's working set is 132 programs x 4 blocks x (64 KiB O32 + 1 KiB "
    "m/l + 32 KiB Q) = 50 MiB, above the half of L2 theory.l2_absorbs allows for what must survive between two "
    "touches (the 'above 1.3' case its header named). The L2 hit rate was 51%. Band: the pre-registered limit "
    "to every step's workspace and Q from DRAM.")
L2_COALESCED = (
    "lts__t_bytes of the 128x128-tile rungs at N=4096 full counted fewer bytes than their loads ask for: r5 5.93 GB "
    "and r6 5.18 GB against 8.86 GB tiled (0.67, 0.58), with 0% L1 hits, so the pre-registered L1 reason for going "
    "below 1.0 does not apply. Hopper's L2 Request Coalescer (ncu's lrc unit: 'tries to coalesce read requests "
    "before forwarding them to the L2 cache') merges requests for one line that are in flight together; the 32 "
    "programs of a head walk its K/V in step, most in step for the pipelined TMA rung. r3/r4 (0.81) and r6 at 32k "
    "(0.82) sit at the pre-registered 0.8. Band: from every co-running request merged (the compulsory bytes) to "
    "the pre-registered 0.8.")
CAUSAL_STREAM = (
    "r6 at B=1 H=4 N=128k causal (BLOCK_M=BLOCK_N=128, 2 stages; one program per SM) read 4.42 GB: 16.0 passes of "
    "each head's 64 MiB of K/V, where the full mask (BLOCK_N=64) read 2.49 GB, 8.76 passes, the wave model's "
    "8.75 exactly. Causal programs of one head run 1 to 1,024 tiles and restart at tile 0 as soon as a short one "
    "ends, so the K/V the in-flight programs need spans the head's whole prefix; near a head's end that is 64 MiB, "
    "above the 60 MiB L2, and the count is on a cliff: a fully associative LRU over this launch order keeps every "
    "tile at 56 MiB of usable L2 (1 pass) and loses 9.6 / 23.6 passes at 54 / 52 MiB. Band: the pre-registered "
    "1.25 to one pass per head plus a pass of its own for each program whose prefix exceeds the L2 (the last 64 "
    "of each head's 1,024).")
DIRTY_AT_START = (
    "r6 at B=1 H=4 N=128k full wrote 140.6 MB against 136.3 MB of O + LSE (1.032; causal 138.8 MB, 1.019): 4.3 MB "
    "that no store of the kernel explains (O rows are whole 256-byte lines, each written once). The excess grows "
    "with the kernel's duration (4.3 MB in 71 ms, 2.5 MB in 38 ms; at N=4096, 1-4 ms, writes stay below the "
    "outputs). Not identified; the bound assumed is the mirror of the pre-registered lower one: at most one L2 of "
    "lines dirty when the kernel starts (e.g. the profiler's restore of the output buffers between replay passes) "
    "written back during it.")
COUNTERS = {
    ("test_dram_reads_against_the_compulsory_bytes", "r2-fa1.b4h32n4096d128.full"):
        ("h200-fa1-workspace-round-trips-reach-dram", R2_ROUND_TRIPS, r2_read_band(False)),
    ("test_dram_reads_against_the_compulsory_bytes", "r2-fa1.b4h32n4096d128.causal"):
        ("h200-fa1-workspace-round-trips-reach-dram", R2_ROUND_TRIPS, r2_read_band(True)),
    ("test_dram_writes_never_exceed_the_outputs", "r2-fa1.b4h32n4096d128.full"):
        ("h200-fa1-workspace-round-trips-reach-dram", R2_ROUND_TRIPS, r2_write_band(False)),
    ("test_dram_writes_never_exceed_the_outputs", "r2-fa1.b4h32n4096d128.causal"):
        ("h200-fa1-workspace-round-trips-reach-dram", R2_ROUND_TRIPS, r2_write_band(True)),
    ("test_l2_bytes_against_the_tiled_count", "r5-exp2.b4h32n4096d128.full"):
        ("h200-l2-request-coalescer-merges-kv-reads", L2_COALESCED, coalesced_l2_band(at.Tiling(128, 128))),
    ("test_l2_bytes_against_the_tiled_count", "r6-tma-pipelined.b4h32n4096d128.full"):
        ("h200-l2-request-coalescer-merges-kv-reads", L2_COALESCED, coalesced_l2_band(at.Tiling(128, 128))),
    ("test_dram_reads_when_one_heads_kv_exceeds_l2", "r6-tma-pipelined.b1h4n131072d128.causal"):
        ("h200-causal-kv-stream-restarts", CAUSAL_STREAM, causal_stream_band()),
    ("test_dram_writes_never_exceed_the_outputs", "r6-tma-pipelined.b1h4n131072d128.full"):
        ("h200-dram-writes-above-the-outputs-at-128k", DIRTY_AT_START, dirty_at_start_band()),
}


def counter_marks(test: str, case: str) -> tuple[pytest.MarkDecorator, ...]:
    """case: the recording's name without 'ncu.fa2.'."""
    if (test, case) in COUNTERS:
        fid, reason, expected = COUNTERS[(test, case)]
        return (pytest.mark.finding(fid, hardware=MEASURED_ON, expected=expected, reason=reason),)
    return ()
