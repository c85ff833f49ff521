#!/usr/bin/env bash
# The live `pytest -m gpu` session on a lent GPU machine, in calls of at most 10 minutes each.
#
# A full live session takes longer than one device call may run, so it runs detached (setsid) and
# later calls wait for it and pack what it wrote. Every file comes back through $OUT (at most 8
# files, 16 MiB each): the JSON ledger, the HTML report, the log, pytest-benchmark's JSON, and one
# tar.xz of every file the session added under results/ (recordings, kept batches, benchmarks).
#
#   bash scripts/device/live_session.sh start NAME [pytest args...]   # after vLLM's install.sh
#   bash scripts/device/live_session.sh wait NAME [max seconds]       # waits, then packs to $OUT
#
# Recordings go to /root/live/NAME/results, outside the repository copy: the device tool lays the
# working tree anew at every call, and on 2026-12-01 that removed recordings written under the
# copy's results/ between two calls (the five capacity ledgers of that run survive only in its
# ledger JSON). `wait` packs them as results/... paths, ready to extract in the checkout.
#
# NAME labels the run (full, nvml, ...). `start` installs the project (pip -e, no deps: the GPU
# image and the vLLM bundle have them), then runs
#   python -m pytest -m gpu --anatomy-source=live --anatomy-report=... <args>
# in the background, writing /root/live/NAME/{log,rc}. `wait` returns when rc exists or the time
# is up (exit 0 either way, printing the log's tail), and packs the files when rc exists; when the time is up first it
# packs the recordings written so far (results-NAME.partial.tar.xz), so a machine lost before the next wait loses none
# of them. `wait` on a machine without the session (a fresh one) exits 3 at once instead of waiting.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
cmd=${1:?start|wait}
name=${2:?run name}
shift 2
dir=${ANATOMY_LIVE_DIR:-/root/live}/$name  # ANATOMY_LIVE_DIR: the CPU tests of wait
[ -f /root/stage/env.sh ] && source /root/stage/env.sh

case "$cmd" in
start)
  mkdir -p "$dir"
  python3 -m pip install -q --no-deps --no-build-isolation -e . >"$dir/pip.log" 2>&1 ||
    { echo "pip install -e . failed:"; tail -20 "$dir/pip.log"; exit 1; }
  date -u +%Y-%m-%dT%H:%M:%SZ >"$dir/started"
  args=$(printf '%q ' "$@")  # quoted again for the inner shell ("-m 'gpu and not slow'" stays one word)
  # setsid: the session survives this call's end; the machine stays ours until it is given back.
  mkdir -p "$dir/results"
  setsid bash -c "cd '$REPO' && PYTHONUNBUFFERED=1 python3 -m pytest -m gpu --anatomy-source=live -p no:cacheprovider \
      -o anatomy_results_dir='$dir/results' --anatomy-report='$dir/anatomy-$name.html' $args >'$dir/log' 2>&1; \
      echo \$? >'$dir/rc'" </dev/null >/dev/null 2>&1 &
  sleep 20
  echo "started $name: $args"
  tail -5 "$dir/log"
  ;;
wait)
  limit=${1:-560}
  if [ ! -d "$dir" ]; then
    # A fresh machine (the tool's `warm: false`): the one that ran `start` was given back, with the session and
    # everything it wrote. Waiting would only spend device time (2026-12-03: 570 s waited on nothing).
    echo "no session '$name' on this machine: it was started on a machine that has since been given back, and its" \
      "recordings went with it (except those an earlier wait packed); run 'start $name' again" >&2
    exit 3
  fi
  t0=$SECONDS
  while [ ! -f "$dir/rc" ] && [ $((SECONDS - t0)) -lt "$limit" ]; do sleep 5; done
  grep -a "anatomy +" "$dir/log" | tail -25
  tail -15 "$dir/log"
  out=${OUT:?}
  (cd "$dir" && find results -type f | sort >new.txt)
  if [ ! -f "$dir/rc" ]; then
    # Pack what the session has written so far: should the machine be given back before the next wait, the
    # recordings already made still come back with this call (the final wait packs them all again).
    if [ -s "$dir/new.txt" ]; then
      tar -C "$dir" -cJf "$out/results-$name.partial.tar.xz" -T "$dir/new.txt"
      xz -9 -c "$dir/log" >"$out/$name.partial.log.xz"
      echo "packed $(wc -l <"$dir/new.txt") files written so far under results/ (partial)"
    fi
    echo "still running after ${limit}s"
    exit 0
  fi
  echo "exit code: $(cat "$dir/rc")"
  cp "$dir/anatomy-$name.json" "$out/" 2>/dev/null
  xz -9 -c "$dir/anatomy-$name.html" >"$out/anatomy-$name.html.xz" 2>/dev/null
  xz -9 -c "$dir/log" >"$out/$name.log.xz"
  [ -f "$dir/benchmark.json" ] && xz -9 -c "$dir/benchmark.json" >"$out/benchmark-$name.json.xz"
  if [ -s "$dir/new.txt" ]; then
    tar -C "$dir" -cJf "$out/results-$name.tar.xz" -T "$dir/new.txt"
    echo "packed $(wc -l <"$dir/new.txt") new files under results/"
  fi
  ls -la "$out"
  ;;
*)
  echo "usage: $0 start|wait NAME ..." >&2
  exit 2
  ;;
esac
