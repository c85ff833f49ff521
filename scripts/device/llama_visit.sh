#!/usr/bin/env bash
# One device call for llama.cpp on the H200 (the `run` tool), from the repo root:
#
#   run carry=[".devcarry-llama"] timeout_s=600 command: bash scripts/device/llama_visit.sh
#
# .devcarry-llama is the carry folder shared/device/llama/make_carry.sh writes (llama-src.tar.gz,
# the scripts; with prebuilt/ the build is skipped). What happens, with the overlaps that keep the
# GPU part inside its budget:
#   1. gguf-py out of the carried sdist; in the background (CPU and disk, during the build): the
#      F16 GGUFs (llama_plan.py --phase models) and the session's ceilings (GPU, torch, idle otherwise);
#   2. llama.cpp built or unpacked by the carry's device_run.sh (STEPS= MAKE_MODELS=0), then
#      llama-server (phase 2 of the build) if it is missing;
#   3. llama_plan.py --phase measure --budget-s $BUDGET_S -> $OUT/llama.json (incrementally);
#   4. a build made here is packed into $OUT (llama-bin.tar.xz.part-*, SHA256SUMS) for the next carry;
#   5. everything else but llama.json and ceilings.json (server logs, run.log, build.log, models.log, ceilings.log,
#      visit.log) goes into one $OUT/logs.tar.xz (scripts/device/pack_logs.sh): a call returns at most 8 files and
#      $OUT is gone after it (the 2026-12-02 07:28 visit lost four logs that way).
# Back: llama.json, ceilings.json, logs.tar.xz (+ the build's parts and SHA256SUMS after a build here).
# Times (device README: build phase 1 ~250 s at -j16, llama-server ~30 s): build ~280 + plan (what is left)
# + pack ~15 s = ~535 s of command time, inside the call's 600 s; the plan's budget shrinks to fit
# what the build left (its skipped runs say so in the batch).
# env: EXTRA_TARGETS (more tools to build, space-separated; a build made here only), BUDGET_S (default: what the deadline leaves), DEADLINE_S=585 (whole command), WORK=/root/llama, CARRY=.devcarry-llama,
#      MODELS= (comma-separated model ids to write; default all: qwen2.5-0.5b, qwen2.5-7b, tiny-24l, tiny-28l)
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd); cd "$REPO"
T0=$(date +%s); DEADLINE_S=${DEADLINE_S:-585}
WORK=${WORK:-/root/llama}; CARRY=${CARRY:-.devcarry-llama}; OUT=${OUT:-$WORK/out}
mkdir -p "$OUT" "$WORK/models" "$WORK/gguf-py"
exec > >(tee -a "$OUT/visit.log") 2>&1
el() { echo "[visit +$(( $(date +%s) - T0 ))s] $*"; }
[ -f "$CARRY/llama-src.tar.gz" ] || { el "no $CARRY/llama-src.tar.gz: make the carry first (shared/device/llama/make_carry.sh)"; exit 2; }
[ -d /opt/torch/.venv/bin ] && export PATH=/opt/torch/.venv/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done

# 1. gguf-py, then the background work
tar -xzf "$CARRY/llama-src.tar.gz" -C "$WORK/gguf-py" --wildcards '*/gguf-py/*' || { el "no gguf-py in the sdist"; exit 2; }
export PYTHONPATH=$(dirname "$(find "$WORK/gguf-py" -type d -name gguf -path '*gguf-py/gguf' | head -1)"):$REPO
python3 scripts/device/llama_plan.py --phase models --models-dir "$WORK/models" --writer-dir "$CARRY" --models "${MODELS:-}" \
  > "$OUT/models.log" 2>&1 &
MODELS_PID=$!
python3 -m pytest_anatomy.measure.ceilings --json "$OUT/ceilings.json" > "$OUT/ceilings.log" 2>&1 &
CEIL_PID=$!
el "background: models (pid $MODELS_PID), ceilings (pid $CEIL_PID)"

# 2. llama.cpp
# device_run.sh gives its build (DEADLINE_S - 110) s: 420 -> ~308 s for phase 1 (measured 251 s alone; the
# background writer and ceilings share the CPUs with it)
STEPS= MAKE_MODELS=0 WORK=$WORK OUT=$OUT DEADLINE_S=420 bash "$CARRY/device_run.sh"
B=$WORK/build/bin; BUILT_HERE=0; ls "$CARRY"/prebuilt/llama-bin.tar.xz.part-* >/dev/null 2>&1 || BUILT_HERE=1
if [ ! -x "$B/llama-server" ]; then
  el "building llama-server"
  SRC=$(find "$WORK/src" -maxdepth 3 -type d -name llama.cpp | head -1)
  BUILD_TIMEOUT_S=90 bash "$CARRY/build.sh" "$SRC" "$WORK/build" llama-server >> "$OUT/build.log" 2>&1
  el "llama-server build rc=$?"
fi
# 2b. a build made here: the build's commit, and EXTRA_TARGETS (e.g. llama-batched-bench for quant_plan.py's batched7b).
# The carry's source has no .git, so cmake/build-info.cmake leaves BUILD_COMMIT "unknown" and llama-bench's JSON says
# so; llama.cpp's CMakeLists.txt takes LLAMA_BUILD_COMMIT when it is defined, so build.sh reconfigures with it set to the
# vendored commit (ENGINE_BUILD["source_commit"], the sdist's .git/modules/vendor/llama.cpp/HEAD): configure_file
# rewrites common/build-info.cpp and the tools are relinked (~5 s). (The 2026-12-04 18:35 visit set it by editing
# build-info.cmake's default instead, with the same result: the binaries carry the commit.)
if [ "$BUILT_HERE" = 1 ]; then
  SRC=$(find "$WORK/src" -maxdepth 3 -type d -name llama.cpp | head -1)
  COMMIT=$(python3 -c "from pytest_anatomy.measure.llama_cpp import ENGINE_BUILD; print(ENGINE_BUILD['source_commit'])")
  el "build commit $COMMIT; relinking with ${EXTRA_TARGETS:-no extra targets}"
  # shellcheck disable=SC2086
  EXTRA_CMAKE_ARGS="-DLLAMA_BUILD_COMMIT=$COMMIT" BUILD_TIMEOUT_S=150 bash "$CARRY/build.sh" "$SRC" "$WORK/build" \
    llama llama-bench llama-quantize llama-server ${EXTRA_TARGETS:-} >> "$OUT/build.log" 2>&1
  el "relink rc=$?"
fi
ls "$B"/llama-bench "$B"/llama-quantize "$B"/llama-server ${EXTRA_TARGETS:+"$B"/$EXTRA_TARGETS} 2>&1 | sed 's/^/  /'
wait "$MODELS_PID"; el "models rc=$?: $(tail -4 "$OUT/models.log" | tr '\n' ' ')"
wait "$CEIL_PID"; el "ceilings rc=$?"

# 3. the measurements: the budget, or what the build left of the deadline (keeping 30 s to pack)
# BUDGET_S unset: all the deadline leaves (the 2026-12-02 visit, prebuilt, kept BUDGET_S=240 and ended at +245 s of
# 585, its 7B benches skipped on budget)
LEFT=$(( DEADLINE_S - ($(date +%s) - T0) - 30 )); BUDGET_S=${BUDGET_S:-$LEFT}; PLAN_S=$(( LEFT < BUDGET_S ? LEFT : BUDGET_S ))
el "plan budget $PLAN_S s"
ANATOMY_LLAMA_BIN=$B PYTHONUNBUFFERED=1 timeout $(( PLAN_S + 20 )) \
  python3 scripts/device/llama_plan.py --phase measure --out "$OUT" --models-dir "$WORK/models" --budget-s "$PLAN_S"
el "plan rc=$?"

# 4. pack a build made here (the device_run.sh recipe), so the next call skips the build
if [ "$BUILT_HERE" = 1 ] && [ -f "$B/libllama.so" ]; then
  FILES=$(cd "$B" && ls lib*.so* llama-bench llama-quantize llama-server llama-batched-bench llama-perplexity \
    2>/dev/null | tr '\n' ' ')
  (cd "$B" && tar -cf - $FILES) | xz -T0 -6 > "$WORK/llama-bin.tar.xz"
  (cd "$B" && sha256sum $(for f in $FILES; do [ -L "$f" ] || echo "$f"; done)) > "$OUT/SHA256SUMS"
  split -b 15M -d -a 1 "$WORK/llama-bin.tar.xz" "$OUT/llama-bin.tar.xz.part-"
  el "packed $(stat -c %s "$WORK/llama-bin.tar.xz") bytes"
fi
ls -la "$OUT"; el "done; packing the logs (visit.log ends here)"

# 5. one logs.tar.xz beside llama.json and ceilings.json
bash "$REPO/scripts/device/pack_logs.sh" "$OUT"
ls -la "$OUT"
