#!/usr/bin/env bash
# One device call: Nsight Compute over every FlashAttention rung (scripts/device/flashattn_profile.py),
# 20 launches, ~60-120 s on the H200 (limit: PROFILE_TIMEOUT_S, 420 s). Clocks are left alone
# (--clock-control none, as for the kernel ladders); caches are flushed before each replayed kernel,
# so DRAM counts start from an empty L2.
# Only the windows the script opens (cudaProfilerStart/Stop around each rung's one launch) are
# profiled: the inputs' generation and Triton's compiles and autotuning are not.
# Writes into $OUT: flashattn-ncu.csv.xz, flashattn-profile-manifest.json, flashattn-profile.log.
# Arguments go to the script (--only 11,15: a smoke test of two launches; --rungs r8: one rung's launches alone,
# here the Gluon rung r8's two at the target shape, ~45-80 s with its compiles and autotuning).
# Import: python -m pytest_anatomy import-ncu OUT/flashattn-ncu.csv.xz OUT/flashattn-profile-manifest.json
set -o pipefail
OUT=${OUT:-flashattn-profile-out}
mkdir -p "$OUT"
which ncu || { echo "ncu not found" >&2; exit 2; }
ncu --version | tail -1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
timeout "${PROFILE_TIMEOUT_S:-420}" ncu --profile-from-start off --clock-control none --cache-control all \
  --csv --page details --print-units base \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second \
  python3 scripts/device/flashattn_profile.py --manifest "$OUT/flashattn-profile-manifest.json" "$@" \
  >"$OUT/flashattn-ncu.csv" 2>"$OUT/flashattn-profile.log"
rc=$?
echo "ncu exit $rc"
tail -n 20 "$OUT/flashattn-profile.log"
wc -l "$OUT/flashattn-ncu.csv"
xz -T0 -f "$OUT/flashattn-ncu.csv"
ls -la "$OUT"
exit $rc
