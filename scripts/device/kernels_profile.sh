#!/usr/bin/env bash
# One device call: Nsight Compute over every kernel rung (scripts/device/kernels_profile.py), or the rungs and
# shapes its --only names (the arguments are passed on: `bash scripts/device/kernels_profile.sh --only ...`).
# Clocks are left alone (--clock-control none, docs/FACTS.md M1); caches are flushed before each replay.
set -o pipefail
OUT=${OUT:-profile-out}
mkdir -p "$OUT"
which ncu || { echo "ncu not found" >&2; exit 2; }
ncu --version | tail -1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
timeout 540 ncu --clock-control none --cache-control all --csv --page details --print-units base \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second \
  python3 scripts/device/kernels_profile.py --manifest "$OUT/profile-manifest.json" "$@" >"$OUT/ncu.csv" 2>"$OUT/profile.log"
rc=$?
echo "ncu exit $rc"
tail -n 5 "$OUT/profile.log"
wc -l "$OUT/ncu.csv"
xz -T0 -f "$OUT/ncu.csv"
ls -la "$OUT"
exit $rc
