"""Findings of s16's and x9's first run (2026-12-04 20:21 and 20:22, batches results/h200/batches/20261204T202122Z
and 20261204T202216Z), explained by Nsight Compute over every kernel launch 17 minutes later on the same card
(results/h200/kernels/ncu.*@20261204T203849Z; its raw csv in batch 20261204T203849Z).

Both rungs were pre-registered before any run (their .cu headers; docs/RECORDING.md "Kernel rung s16" and "Softmax
rung x9"), both were correct at every checked shape, and both missed. s16's time lies above every outcome its header
wrote down (above 3.21 ms at 4096^3: "outside all three and a finding"), so its band cannot be pre-registered: it is
read from other runs (s9's sessions recorded before the judged run, times s16 / s9 in elapsed cycles as the 20:38
profile counted them, a second run of both kernels), widened by the timing-block noise term. x9's time lies between
two outcomes its header priced before the run (the second alternative, 46.42 us, and the co-residency alternative,
41.64 + 23.1 us), and the profile confirms the co-residency mechanism (62 clusters of 4 co-resident, not 66): that
band is pre-registered. No band reads a time of the run it judges. Every number a reason quotes is read from the
recordings at import (test_kernel_s16_x9_findings recomputes them).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import kernel_s15_x8_findings as s15x8

from pytest_anatomy.kernels import compile as kc
from pytest_anatomy.kernels import fused, sgemm
from pytest_anatomy.kernels.registry import PREREGISTERED_ON

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / PREREGISTERED_ON / "kernels"
BATCHES = ROOT / "results" / PREREGISTERED_ON / "batches"
RUN_S16 = "2026-12-04T20:21:22Z"  # s16 beside s9 and cuBLAS fp32
RUN_X9 = "2026-12-04T20:22:16Z"  # x9 beside x6 and torch
PROFILE = "20261204T203849Z"  # Nsight Compute over every launch, the same card, 17 minutes later
PROFILE_S9 = "20261202T001813Z"  # the profile s16's pre-registration read
BATCH_S16, BATCH_X9 = BATCHES / "20261204T202122Z", BATCHES / "20261204T202216Z"
S16, S9, X9, X6 = "s16-fp32-ktile32", "s9-cp-async-pipeline", "x9-cluster4-smem", "x6-cluster-row"
S16_SOURCE, S16_KERNEL = sgemm.S16_SOURCE, "sgemm_fp32_ktile32"
SHAPES = tuple(sgemm.S16_PREREGISTERED)
SQUARE, BIG, SMALL = SHAPES
VOCAB, SHORT = "128x152064", "8192x2048"
VOCAB_BYTES = s15x8.VOCAB_BYTES

S16_FID = "h200-s16-device-spill-pace-below-s9"
X9_FID = "h200-cluster4-smem-62-clusters-three-waves"
# s16's header, written before the run: (a) the instructions only; (b) no gain, within 2% of s9.
S16_ALT_A_MS = {SQUARE: 3.023, BIG: 5.908}
S16_ALT_B_MS = (3.08, 3.21)  # at 4096^3; "a time above 3.21 ms is outside all three and a finding"
# s16's main K loop (whole k-tiles, N % 4 == 0; test_kernels_s16 picks it: the shortest loop with 20 LDGSTS) in the
# device's cubin (the batch's cubins.tar.xz) and from this checkout's nvcc 13.0 when the finding was written (the checks
# compile with the device's NVRTC since 2026-12-04 21:50, which gives the device's loop: test_kernel_s16_x9_findings
# recounts the device's cubin and that compile): instructions, of them LDL and STL.
S16_DEVICE_LOOP, S16_DEVICE_LDL, S16_DEVICE_STL, S16_LOCAL_LOOP = 2407, 19, 3, 2311
S16_LOOP_FFMA = 2048
# s9's compiled share as s16's pre-registration took it (its own tile in the tuner's space)
S9_SHARE = next(c.theory.ffma_share for c in sgemm.S9_CANDIDATES if c.id == sgemm.S16_TILE_COST_PAIR[1])
# x9's header, written before the run (its Predicted effect, in us): the byte ledger at the median copy bandwidth, x6's
# exposure per wave, the headline at 2 waves, the second alternative's fixed and SM-work parts per wave, and the
# co-residency alternative's lone third wave (a row on 2 SMs at x6's per-SM pace).
X9_FLOOR_US, X9_WAVE_US, X9_HEADLINE_US = 36.51, 2.57, 41.64
X9_FIXED_US, X9_WORK_US, X9_SECOND_US = 1.37, 3.59, 46.42
X9_LONE_WAVE_US = 23.1
X9_CORES_US = round(X9_HEADLINE_US + X9_LONE_WAVE_US, 2)  # ~0.065 ms
X9_HEADER_CLUSTERS = 66  # "66 on 132 SMs on any split into whole TPCs"
NEED_CLUSTERS = 64  # 2 waves of 128 rows


def _rec(name: str, stamp: str) -> dict:
    path = RESULTS / f"{name}@{stamp}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def ncu(name: str, stamp: str = PROFILE) -> dict:
    """The profiled kernel's Nsight Compute metrics ({} where this checkout lacks the recording)."""
    kernels = _rec(f"ncu.{name}", stamp).get("data", {}).get("kernels", [])
    return dict(kernels[-1]["metrics"]) if kernels else {}


def ncu_stalls(name: str, stamp: str = PROFILE) -> list[str]:
    kernels = _rec(f"ncu.{name}", stamp).get("data", {}).get("kernels", [])
    return [s for k in kernels for s in k.get("stalls", [])]


def metric(m: dict, key: str) -> float:
    return float(m.get(key, float("nan")))


def not_selected_cycles(name: str) -> float:
    """The cycles per issue a warp waits while eligible and not picked (the profile's one stall paragraph)."""
    for text in ncu_stalls(name):
        hit = re.search(r"spends ([0-9.]+) cycles being stalled waiting for the micro scheduler", text)
        if hit:
            return float(hit.group(1))
    return float("nan")


def device_compile(batch: Path, source: str) -> dict:
    """The device's NVRTC compile of `source` in `batch` (ptxas log, SASS counts, cubin name); {} if absent."""
    path = batch / "kernels.json"
    if not path.exists():
        return {}
    run = next((r for r in json.loads(path.read_text())["runs"] if r.get("id") == "kernels-compile"), None)
    return ((run or {}).get("result") or {}).get("sources", {}).get(source, {})


def device_resources(source: str, kernel: str) -> kc.ResourceUse:
    """ptxas's report from the first of the two batches that logged it (the second plan of the call reused the first's
    compile, same commit, and logged none)."""
    for batch in (BATCH_S16, BATCH_X9):
        log = device_compile(batch, source).get("nvrtc_log")
        use = kc.parse_ptxas(log).get(kernel) if log else None
        if use is not None:
            return use
    return kc.ResourceUse(kernel, -1, -1, -1, -1, -1, -1)


def instructions_per_sm(m: dict) -> float:
    """Warp instructions issued per SM: issued IPC over active cycles x those cycles."""
    return metric(m, "Issued Ipc Active") * metric(m, "SM Active Cycles")


def s9_sessions_before(label: str) -> list[float]:
    """s9's time at `label` (ms) in every session recorded before s16's run: other runs than the one judged."""
    before = s15x8._stamp(RUN_S16)
    values = [float(json.loads(p.read_text())["measurements"]["time"]["value"]) * 1e3
              for p in sorted(RESULTS.glob(f"sgemm.{S9}.{label}@*.json")) if p.name.split("@")[1][:16] < before]
    return values or [float("nan")]


S16_MS = {lab: s15x8.ms(f"sgemm.{S16}.{lab}", RUN_S16) for lab in SHAPES}
S16_REPEAT_MS = {lab: s15x8.ms(f"sgemm.{S16}.{lab}", RUN_S16, "time_repeat") for lab in SHAPES}
S9_MS = {lab: s15x8.ms(f"sgemm.{S9}.{lab}", RUN_S16) for lab in SHAPES}
CUBLAS_MS = {lab: s15x8.ms(f"sgemm.s0-cublas.{lab}", RUN_S16) for lab in SHAPES}
S16_NCU, S9_NCU = ncu(f"sgemm.{S16}.{SQUARE}"), ncu(f"sgemm.{S9}.{SQUARE}")
S9_NCU_0018 = ncu(f"sgemm.{S9}.{SQUARE}", PROFILE_S9)
# s16 / s9 at 4096^3 in the 20:38 profile: elapsed cycles (the clock divided out)
PROFILE_RATIO = metric(S16_NCU, "Elapsed Cycles") / metric(S9_NCU, "Elapsed Cycles")


def _fmt(times: dict[str, float], digits: int = 4) -> str:
    return " / ".join(f"{times[lab]:.{digits}f}" for lab in SHAPES)


def s16_band(label: str, blocks: float) -> tuple[float, float]:
    """s9's fastest to slowest session before s16's run x s16 / s9's elapsed cycles in the 20:38 profile, +- the
    timing-block term, over the pre-registration (other runs: neither reads a time of the judged run)."""
    s9 = s9_sessions_before(label)
    pre = sgemm.S16_PREREGISTERED[label]
    return (round(min(s9) * PROFILE_RATIO * (1 - blocks) / pre, 4),
            round(max(s9) * PROFILE_RATIO * (1 + blocks) / pre, 4))


def s16_counters() -> dict[str, float]:
    """The profile's numbers the reason quotes: s16 against s9 at 4096^3, both from the 20:38 profile."""
    blocks = 4096 * 4096 // (sgemm.BLOCK_TILES[S16][0] * sgemm.BLOCK_TILES[S16][1])
    warps = blocks * 256 // 32
    return {"instr_ratio": instructions_per_sm(S16_NCU) / instructions_per_sm(S9_NCU),
            "priced_ratio": S9_SHARE / sgemm.S16_FFMA_SHARE,
            "spill_per_ktile": metric(S16_NCU, "Local Memory Spilling Requests") / (warps * 4096 / 32),
            "active_ratio": metric(S16_NCU, "SM Active Cycles") / metric(S9_NCU, "SM Active Cycles"),
            "l2_extra_gb": (metric(S16_NCU, "lts__t_bytes.sum") - metric(S9_NCU, "lts__t_bytes.sum")) / 1e9,
            "write_extra_mb": (metric(S16_NCU, "dram__bytes_write.sum")
                               - metric(S9_NCU, "dram__bytes_write.sum")) / 1e6}


def s16_reason(blocks: float) -> str:
    pre = sgemm.S16_PREREGISTERED
    c = s16_counters()
    use = device_resources(S16_SOURCE, S16_KERNEL)
    s9_before = {lab: s9_sessions_before(lab) for lab in SHAPES}
    return (
        f"s16 (s9 with 32-deep k-tiles: half the k-tile boundaries, the same 128 x 128 block, 8 x 8 thread tile and 16 "
        f"warps per SM) was pre-registered at {_fmt(pre, 3)} ms (4096^3 / 2,048 / 32 rows: s9's time split into an "
        f"issue part at the compiled share {sgemm.S16_FFMA_SHARE} and a per-k-tile part, halved) and ran "
        f"{_fmt(S16_MS)} ms ({RUN_S16[:16]} run; second blocks {_fmt(S16_REPEAT_MS)}), "
        + " / ".join(f"{S16_MS[lab] / pre[lab]:.3f}x" for lab in SHAPES)
        + f", slower than s9 beside it ({_fmt(S9_MS)} ms; s16 "
        + " / ".join(f"{S16_MS[lab] / S9_MS[lab]:.3f}x" for lab in SHAPES)
        + f" of s9): {CUBLAS_MS[SQUARE] / S16_MS[SQUARE]:.1%} of cuBLAS fp32 at 4096^3 ({CUBLAS_MS[SQUARE]:.4f} ms "
        f"beside it; target 90%), {CUBLAS_MS[BIG] / S16_MS[BIG]:.1%} at 2,048 rows (target 80%, met as s9 meets it); "
        f"above the header's outcome (b), no gain ({S16_ALT_B_MS[0]}-{S16_ALT_B_MS[1]} ms at 4096^3), so outside "
        f"all three outcomes written before the run (prediction, (a) {S16_ALT_A_MS[SQUARE]} ms, (b)). Established "
        f"from the device's compile (batch {BATCH_S16.name}) and Nsight Compute of s16 and s9 at 4096^3 "
        f"({PROFILE}, same card): the device's NVRTC 13.0.88 gave {use.registers} registers with a "
        f"{use.stack_bytes}-byte stack frame, {use.spill_store_bytes} bytes of spill stores and "
        f"{use.spill_load_bytes} of spill loads (nvcc 13.0.88 here: 128 registers, no spill, as the header "
        f"wrote, and the NVRTC 13.5 wheel then installed here; the NVRTC 13.0.88 pinned here since 2026-12-04 "
        f"21:50 gives the device's numbers); the device's main K loop is {S16_DEVICE_LOOP:,} instructions per "
        f"{S16_LOOP_FFMA:,} FFMA (share {S16_LOOP_FFMA / S16_DEVICE_LOOP:.4f}; nvcc here {S16_LOCAL_LOOP:,}, "
        f"{sgemm.S16_FFMA_SHARE}) with {S16_DEVICE_LDL} LDL and {S16_DEVICE_STL} STL in it, and Nsight Compute "
        f"counts {metric(S16_NCU, 'Local Memory Spilling Requests'):,.0f} local-memory spill requests, "
        f"{c['spill_per_ktile']:.2f} per warp per k-tile: the spill is in the main loop. Issued instructions per SM "
        f"came to {c['instr_ratio']:.3f}x s9's (priced {c['priced_ratio']:.3f}x from the compiled loops: the spill's "
        "instructions take about a point of it), so the instruction half of the prediction held. The pace did not: "
        f"{metric(S16_NCU, 'Warp Cycles Per Issued Instruction'):.2f} warp cycles per issue against s9's "
        f"{metric(S9_NCU, 'Warp Cycles Per Issued Instruction'):.2f} (s9's 00:18 profile: "
        f"{metric(S9_NCU_0018, 'Warp Cycles Per Issued Instruction'):.2f}), issue slots "
        f"{metric(S16_NCU, 'Issue Slots Busy'):.1f}% busy against {metric(S9_NCU, 'Issue Slots Busy'):.1f}%, at the "
        f"same warps ({metric(S16_NCU, 'Achieved Active Warps Per SM'):.2f} against "
        f"{metric(S9_NCU, 'Achieved Active Warps Per SM'):.2f} achieved of 16, two blocks per SM for both), so SM "
        f"active cycles came to {c['active_ratio']:.3f}x s9's and elapsed cycles {PROFILE_RATIO:.3f}x. The "
        "pre-registration's named risks, against these numbers: (1) the 128-register cap, a spill on the device's "
        "compiler: it happened. (4) the L1 carve-out: not supported; both kernels ran with the same "
        f"{metric(S16_NCU, 'Shared Memory Configuration Size'):,.0f}-byte shared-memory configuration (s9 "
        f"{metric(S9_NCU, 'Shared Memory Configuration Size'):,.0f}), so L1 kept its capacity; its hit rate rose "
        f"from {metric(S9_NCU, 'L1/TEX Hit Rate'):.2f}% to {metric(S16_NCU, 'L1/TEX Hit Rate'):.2f}% with the "
        f"local-memory traffic (which adds {c['l2_extra_gb']:.2f} GB of L2 traffic and {c['write_extra_mb']:.1f} "
        "MB of DRAM writes against s9; the 96-byte frames of 262,144 threads are 25 MB), the A copies' cp.async.ca "
        "hits not separable from it. (3) the dynamic window: launched and correct, and nothing in the counters "
        "marks it. The profile itemises one stall only: "
        f"{not_selected_cycles(f'sgemm.{S16}.{SQUARE}'):.1f} of s16's "
        f"{metric(S16_NCU, 'Warp Cycles Per Issued Instruction'):.1f} cycles are 'not selected' (eligible, waiting "
        "for the scheduler) while a quarter of the issue slots are idle: the warps stall together and then "
        "compete. Which stall takes the extra cycles per issue is not counted (no stall breakdown of s9 in either "
        "profile), so that the spill's reloads cost the pace is the candidate these numbers support, not a measured "
        "attribution. s13, also compiled to 128 registers, spills on the device too (32 bytes, 8 LDL in its K loop) "
        f"and paces at {metric(ncu(f'sgemm.s13-fp32-multistage.{SQUARE}'), 'Warp Cycles Per Issued Instruction'):.2f}"
        ". The 32-row shape was not attacked (the grid). Band, from other runs: s9's fastest to slowest time in "
        f"the {len(s9_before[SQUARE])} sessions recorded before the judged run ("
        + "; ".join(f"{min(t):.4f}-{max(t):.4f} ms" for t in s9_before.values())
        + f") x s16 / s9 in elapsed cycles in the {PROFILE} profile ({PROFILE_RATIO:.4f}, a second run of both "
        f"kernels), +-{blocks:.1%} timing-block noise, over the pre-registration; its lower edge reaches into the "
        "noise budget (~7%), so strict=False.")


X9_SOURCE, X9_KERNEL = "softmax/x9_cluster4_smem.cu", "softmax_cluster4_smem"
X9_PREREG_MS = dict(next(v for v in fused.SOFTMAX if v.id == X9).h200_ms)[VOCAB]
X9_MS = s15x8.ms(f"softmax.{X9}.{VOCAB}", RUN_X9)
X9_REPEAT_MS = s15x8.ms(f"softmax.{X9}.{VOCAB}", RUN_X9, "time_repeat")
X9_SHORT_MS = s15x8.ms(f"softmax.{X9}.{SHORT}", RUN_X9)
X6_MS = s15x8.ms(f"softmax.{X6}.{VOCAB}", RUN_X9)
TORCH_MS = s15x8.ms(f"softmax.x0-torch.{VOCAB}", RUN_X9)
X9_NCU, X6_NCU = ncu(f"softmax.{X9}.{VOCAB}"), ncu(f"softmax.{X6}.{VOCAB}")
X7_NCU, X8_NCU = ncu(f"softmax.x7-pipelined.{VOCAB}"), ncu(f"softmax.x8-tma-ring.{VOCAB}")
ROWS = fused.VOCAB_SHAPE["M"]


def active_clusters(m: dict) -> int:
    value = metric(m, "Max Active Clusters")
    return int(value) if value == value else -1


def x9_waves() -> int:
    clusters = active_clusters(X9_NCU)
    return math.ceil(ROWS / clusters) if clusters > 0 else -1


def x9_model_us(per_wave_us: float, waves: int) -> float:
    """The header's ledger, the byte floor plus a per-wave cost, at `waves` waves."""
    return round(X9_FLOOR_US + waves * per_wave_us, 2)


def _pct_active(m: dict) -> float:
    return metric(m, "SM Active Cycles") / metric(m, "Elapsed Cycles")


def x9_reason() -> str:
    ceiling = s15x8.read_ceiling(RUN_X9)
    use = device_resources(X9_SOURCE, X9_KERNEL)
    waves, clusters = x9_waves(), active_clusters(X9_NCU)
    headline3, second3 = x9_model_us(X9_WAVE_US, waves), x9_model_us(X9_FIXED_US + X9_WORK_US, waves)
    gpu_us = metric(X9_NCU, "Duration") / 1e3
    return (
        f"x9 at 128 x 152,064 (a row per cluster of 4 blocks on 2 SMs, half of each block's slice in shared memory) "
        f"was pre-registered at {X9_PREREG_MS:.3f} ms (2 waves of the {X9_HEADER_CLUSTERS} clusters the header "
        f"counted: 85.3% of the read ceiling, target 85%) and ran {X9_MS:.4f} ms ({RUN_X9[:16]} run; second block "
        f"{X9_REPEAT_MS:.4f} ms), {X9_MS / X9_PREREG_MS:.2f}x: {VOCAB_BYTES / (X9_MS * 1e-3) / ceiling:.1%} of that "
        f"run's {ceiling / 1e12:.3f} TB/s read ceiling, slower than x6 beside it ({X6_MS:.4f} ms, "
        f"{VOCAB_BYTES / (X6_MS * 1e-3) / ceiling:.1%}), {TORCH_MS / X9_MS:.2f}x faster than torch ({TORCH_MS:.4f} "
        f"ms). Its 8,192 x 2,048 path (x7's warp-row kernel) ran {X9_SHORT_MS:.4f} ms, as pre-registered. "
        f"Established: correct at every checked shape; the device's ptxas gave {use.registers} registers, "
        f"{use.spill_store_bytes + use.spill_load_bytes} bytes of spill (2 blocks per SM, as priced). Nsight Compute ({PROFILE}, same card) "
        f"counts Max Active Clusters {clusters} for x9's launch (x6 {active_clusters(X6_NCU)}, x7 and x8 "
        f"{active_clusters(X7_NCU)} / {active_clusters(X8_NCU)}): fewer than the {NEED_CLUSTERS} two waves need, and "
        f"not the {X9_HEADER_CLUSTERS} the header's argument gave (GPCs of whole TPCs give half their SM count on any "
        f"split; {clusters} needs GPCs with odd SM counts or a placement rule the argument missed, which of them is "
        f"not established). So the {ROWS} rows take {waves} waves ({clusters}, {clusters}, "
        f"{ROWS - 2 * clusters}): the co-residency alternative the header named before the run happened. Its size "
        f"did not: priced as a lone third wave at x6's per-SM share of the bandwidth (+{X9_LONE_WAVE_US} us, "
        f"{X9_CORES_US / 1e3:.3f} ms), the measured time is {X9_MS * 1e3 - X9_HEADLINE_US:.1f} us over the headline. "
        f"The header's two per-wave costs at the counted {waves} waves: the headline's fixed exposure "
        f"({X9_WAVE_US} us per wave) gives {headline3} us, {1 - headline3 / (X9_MS * 1e3):.0%} under the measured; "
        f"the second alternative's ({X9_FIXED_US} us fixed + {X9_WORK_US} us of SM work per wave, the work "
        f"scaling with the bytes an SM holds) gives {second3} us, {1 - second3 / (X9_MS * 1e3):.1%} under the "
        f"timed {X9_MS * 1e3:.2f} us and {1 - second3 / gpu_us:.1%} under the profile's {gpu_us:.2f} us. So the "
        "counters support the co-residency alternative's mechanism at the second alternative's per-wave cost and "
        "refute the headline's fixed exposure per wave; the split of that cost into fixed and SM work is the "
        "header's arithmetic, not a count (the profile records no MUFU utilisation). Beside it in the profile: "
        f"DRAM throughput {metric(X9_NCU, 'DRAM Throughput'):.1f}% of peak over the launch against x6's "
        f"{metric(X6_NCU, 'DRAM Throughput'):.1f}%, SM active cycles {_pct_active(X9_NCU):.1%} of elapsed against "
        f"x6's {_pct_active(X6_NCU):.1%} (SMs idle while a few run the small third wave), "
        f"{metric(X9_NCU, 'Achieved Active Warps Per SM'):.1f} of 30 warps achieved (x6 "
        f"{metric(X6_NCU, 'Achieved Active Warps Per SM'):.1f}). Even at 2 waves the second alternative's cost gives "
        f"{X9_SECOND_US} us (76.5%): the vocabulary target needs the per-wave SM work overlapped with DRAM, not "
        "only fewer waves. Issue 17's vocabulary target stays missed; x6 stays the best rung there. Band, "
        f"pre-registered: from the header's second alternative ({X9_SECOND_US} us: SM work per wave, no "
        f"co-residency loss) to its co-residency alternative ({X9_HEADLINE_US} + {X9_LONE_WAVE_US} us), over the "
        f"{X9_PREREG_MS} ms pre-registration; in the vocabulary target's units at the 11:09 run's read ceiling.")


def x78_profile_note() -> str:
    """What the 20:38 profile adds to x7's and x8's findings (their reasons said no profile existed)."""
    return (
        f" Since then (Nsight Compute, {PROFILE}, same card): Max Active Clusters {active_clusters(X7_NCU)} for "
        f"x7's and {active_clusters(X8_NCU)} for x8's launch, whose grid is {s15x8.CLUSTERS} clusters: every cluster "
        "co-resident, so the co-residency candidate is refuted for both; under the profile x7 ran "
        f"{metric(X7_NCU, 'Duration') / 1e3:.2f} us and x8 {metric(X8_NCU, 'Duration') / 1e3:.2f} us, issue slots "
        f"{metric(X7_NCU, 'Issue Slots Busy'):.1f}% / {metric(X8_NCU, 'Issue Slots Busy'):.1f}% busy, "
        f"{metric(X7_NCU, 'Warp Cycles Per Issued Instruction'):.1f} / "
        f"{metric(X8_NCU, 'Warp Cycles Per Issued Instruction'):.1f} warp cycles per issue. The per-row SM work "
        "(reductions, cluster exchange, stores) is the candidate left; the profile does not itemise it.")


def x9_band() -> tuple[float, float]:
    """The header's second alternative to its co-residency alternative, over the pre-registration."""
    pre_us = X9_PREREG_MS * 1e3
    return round(X9_SECOND_US / pre_us, 4), round(X9_CORES_US / pre_us, 4)


def banded(blocks: float, read_ceiling_1109: float) -> dict[str, dict[str, tuple[str, str, tuple[float, float]]]]:
    """kernel_findings.BANDED's entries for this run, by table: s16's three shapes and x9's vocabulary row."""
    s16 = s16_reason(blocks)
    x9 = x9_reason()
    lo, hi = x9_band()
    units = read_ceiling_1109 / VOCAB_BYTES * X9_PREREG_MS * 1e-3
    return {
        "preregistered": {**{f"{S16}-{lab}": (S16_FID, s16, s16_band(lab, blocks)) for lab in SHAPES},
                          f"{X9}-{VOCAB}": (X9_FID, x9, (lo, hi))},
        "vocab_target": {X9: (X9_FID, x9, (round(units * lo, 4), round(units * hi, 4)))}}


# s16's band reads other runs (s9's earlier sessions, the 20:38 profile); x9's both edges are its header's outcomes.
BANDED_FROM_KEYS = {("preregistered", f"{S16}-{lab}"): "other-runs" for lab in SHAPES} | {
    ("preregistered", f"{X9}-{VOCAB}"): "preregistered", ("vocab_target", X9): "preregistered"}
# s16's band reaches into the noise budget at its lower edge: a session may land either side.
NOT_STRICT = frozenset({S16_FID})
