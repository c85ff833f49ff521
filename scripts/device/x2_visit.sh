#!/usr/bin/env bash
# One nvidia-h200-x2 visit in three device calls (docs/RECORDING.md, "The second H200 visit"):
#
#   call 1  carry .devcarry/c1:  bash scripts/device/x2_visit.sh stage
#           stages vLLM's extension and starts the kernel ladders on GPU 1 in their own process
#           session, so they run on after the call returns (the device kills the rest)
#   call 2  carry .devcarry/c2:  bash scripts/device/x2_visit.sh measure
#           installs vLLM; GPU 0: the latency plan (--latency-args); GPU 1: once the kernels are
#           done, the single-GPU capacity configurations that fit before the call's deadline
#   call 3  no carry:            bash scripts/device/x2_visit.sh tp
#           both GPUs: the tensor-parallel-2 ledgers, then single-GPU configurations left over
#
# Environment: TP_IDS / SINGLE_IDS (plan ids; SINGLE_IDS= empty skips them), KERNELS=0 (stage only),
# LATENCY_ARGS, DEADLINE_S. A visit for tensor parallel alone: `KERNELS=0 ... stage`, then in one call
# `bash .devcarry/c2/install.sh && TP_IDS=... SINGLE_IDS= bash scripts/device/x2_visit.sh tp`.
#
# Calls 2 and 3 copy what is finished into $OUT (at most 8 files come back: logs and raw streams
# are packed). Nothing here changes GPU settings; NVLink multicast stays off (vllm_engine's
# WORKER_ENV and the machine's own environment).
set -o pipefail
STAGE=/root/stage
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
mode=${1:?usage: x2_visit.sh stage|measure|tp}

LATENCY_ARGS=${LATENCY_ARGS:---config pytest_anatomy/specs/configs/llama-3.1-8b.json --second-model none --kv-cache-gib 27.43 --budget-s 400}
SINGLE_IDS=${SINGLE_IDS-qwen2.5-0.5b.u0.90.len8192.graphs,qwen2.5-14b.u0.90.len32768.graphs.fp8,qwen2.5-7b.u0.90.len8192.eager.seqs64}
TP_IDS=${TP_IDS:-qwen2.5-7b.u0.90.len8192.eager.tp2,qwen2.5-72b.u0.90.len8192.eager.tp2,llama-3.1-70b.u0.90.len8192.eager.tp2}
DEADLINE_S=${DEADLINE_S:-540}   # a call may run 600 s; leave time to pack the results

case "$mode" in
stage)
  nvidia-smi -L
  mkdir -p "$STAGE/kout" && cp .devcarry/c1/* "$STAGE/" && (cd "$STAGE" && sha256sum -c c1.sha256) || exit 1
  if [ "${KERNELS:-1}" = 1 ]; then
    CUDA_VISIBLE_DEVICES=1 PYTHONUNBUFFERED=1 setsid nohup python3 scripts/device/kernels_plan.py \
      --out-dir "$STAGE/kout" --budget-s "${KERNELS_BUDGET_S:-330}" >"$STAGE/kout/kernels.log" 2>&1 </dev/null &
    echo "kernels_plan started on GPU 1 (pid $!)"
    sleep 15
    tail -n 5 "$STAGE/kout/kernels.log"
  fi
  ;;
measure)
  bash .devcarry/c2/install.sh >"$STAGE/install.log" 2>&1 || { tail -n 30 "$STAGE/install.log"; exit 1; }
  source "$STAGE/env.sh" || exit 1
  mkdir -p "$STAGE/lat" "$STAGE/cap"
  (
    while pgrep -f kernels_plan.py >/dev/null && [ "$(elapsed)" -lt $(( DEADLINE_S - 230 )) ]; do sleep 2; done
    echo "[x2] kernels done at $(elapsed) s" >>"$STAGE/cap/capacity.log"
    budget=$(( DEADLINE_S - $(elapsed) - 120 ))  # stop starting when the slowest start would overrun
    if [ "$budget" -gt 0 ]; then
      CUDA_VISIBLE_DEVICES=1 python3 scripts/device/capacity_plan.py --only "$SINGLE_IDS" --budget-s "$budget" \
        --state "$STAGE/capacity-state.json" --out "$STAGE/cap" >>"$STAGE/cap/capacity.log" 2>&1
    else
      echo "[x2] no time left for capacity on GPU 1" >>"$STAGE/cap/capacity.log"
    fi
  ) &
  cap_pid=$!
  # a watchdog: at the deadline stop both plans (each has rewritten its JSON after every part)
  ( sleep $(( DEADLINE_S - $(elapsed) )); pkill -f capacity_plan.py; pkill -f latency_plan.py ) &
  dog_pid=$!
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 python3 scripts/device/latency_plan.py $LATENCY_ARGS \
    --out-dir "$STAGE/lat" >"$STAGE/lat/latency.log" 2>&1
  echo "latency plan exit $? at $(elapsed) s"
  wait "$cap_pid"
  kill "$dog_pid" 2>/dev/null
  echo "capacity on GPU 1 finished at $(elapsed) s"
  cp "$STAGE"/lat/*.json "$STAGE"/cap/*.json "$STAGE/kout/kernels.json" "$OUT/" 2>/dev/null
  (cd "$STAGE" && xz -T0 -k -f lat/*-raw.jsonl 2>/dev/null; tar -cJf "$OUT/logs-measure.tar.xz" lat/*.log lat/*.xz \
     cap/*.log kout/kernels.log install.log 2>/dev/null)
  tail -n 3 "$STAGE/lat/latency.log" "$STAGE/cap/capacity.log" "$STAGE/kout/kernels.log"
  ls -la "$OUT"
  ;;
tp)
  source "$STAGE/env.sh" || exit 1
  mkdir -p "$STAGE/tp"
  ( sleep "$DEADLINE_S"; pkill -f capacity_plan.py ) &
  dog_pid=$!
  python3 scripts/device/capacity_plan.py --only "$TP_IDS" --budget-s $(( DEADLINE_S - 150 )) \
    --state "$STAGE/capacity-state.json" --out "$STAGE/tp" >"$STAGE/tp/capacity-tp.log" 2>&1
  echo "tensor-parallel capacity exit $? at $(elapsed) s"
  budget=$(( DEADLINE_S - $(elapsed) - 120 ))
  if [ -n "$SINGLE_IDS" ] && [ "$budget" -gt 0 ]; then  # single-GPU ids call 2 left (the state file skips the done ones)
    python3 scripts/device/capacity_plan.py --only "$SINGLE_IDS" --budget-s "$budget" \
      --state "$STAGE/capacity-state.json" --out "$STAGE/tp" >>"$STAGE/tp/capacity-tp.log" 2>&1
  fi
  echo "capacity exit $? at $(elapsed) s"
  kill "$dog_pid" 2>/dev/null
  cp "$STAGE"/tp/*.json "$STAGE"/tp/*.log "$OUT/"
  tail -n 12 "$STAGE/tp/capacity-tp.log"
  ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
