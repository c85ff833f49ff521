#!/usr/bin/env bash
# Keep recorded data out of a device call's copy of the working tree.
#
# A `run` call carries the tracked and the untracked-not-ignored files plus its carry folders, 64 MiB
# in all. The checkout's results/ is ~41 MB (2026-12-02) and grows with every visit, so a call that
# also carries vLLM's bundles or llama.cpp's prebuilt archive (55 MiB) does not fit. What a call
# does not read can stay here: this script takes folders out of git's index and ignores them
# (.git/info/exclude) until `unhide` puts them back. Nothing on disk is touched.
#
#   bash scripts/device/slim_tree.sh hide live     # live pytest sessions: they read recordings (the kernel,
#                                                  # flashattn and capacity findings' priors, the ceilings) but
#                                                  # not the kept batches, the live-run ledgers, pytest-benchmark's
#                                                  # store or results/*/latency (47 MiB on 2026-12-02: a live
#                                                  # latency test reads its session's own results dir; an audit
#                                                  # hook on a CPU rehearsal of `-m gpu` saw no open under it)
#   bash scripts/device/slim_tree.sh hide flashattn # live `-m gpu -k fd` (flash-decoding) sessions: live's folders and
#                                                  # the kernels' and capacity's recordings, which they do not read
#                                                  # (2026-12-07 20:05: `hide live` left 62.3 MiB by this count and the
#                                                  # device tool refused the call as over 64 MiB)
#   bash scripts/device/slim_tree.sh hide engine   # llama.cpp and quant visits (llama_visit.sh, quant_plan.py):
#                                                  # they read no recording on the device
#   bash scripts/device/slim_tree.sh hide stage    # the staging calls that carry vLLM's c1 bundle (53 MiB): they
#                                                  # read nothing of the tree, so every results/ folder stays here
#   bash scripts/device/slim_tree.sh unhide        # before any commit: everything back in the index
#   bash scripts/device/slim_tree.sh size          # what a call would carry of the tree, in MiB
#
# Always `unhide` before committing: a commit made while hidden records the folders as deleted.
set -euo pipefail
cd "$(dirname "$0")/../.."
LIST=$(git rev-parse --git-path anatomy-hidden)
EXCLUDE=$(git rev-parse --git-path info/exclude)

# Every recorded card's folders (results/h200, results/h100-sxm, ...): globs, so a new card's data is hidden too.
LIVE=(results/*/batches results/*/live-runs results/*/benchmarks results/*/latency)
FLASHATTN=("${LIVE[@]}" results/*/kernels results/*/capacity)
ENGINE=("${LIVE[@]}" results/*/kernels results/*/flashattn results/*/capacity)
STAGE=(results)

carried_mib() {
  git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 |
    awk '{printf "%.1f\n", $1 / 1048576}'
}

case "${1:-}" in
hide)
  [ -s "$LIST" ] && { echo "already hidden: $(tr '\n' ' ' < "$LIST")(run unhide first)" >&2; exit 1; }
  case "${2:-}" in
    live) dirs=("${LIVE[@]}") ;;
    flashattn) dirs=("${FLASHATTN[@]}") ;;
    engine) dirs=("${ENGINE[@]}") ;;
    stage) dirs=("${STAGE[@]}") ;;
    *) echo "usage: slim_tree.sh hide live|flashattn|engine|stage" >&2; exit 2 ;;
  esac
  # Hidden folders are staged deletions: a commit made now would delete every hidden recording from the
  # history's tip (it happened once, 2026-12-02 08:31, amended before it left this checkout). A pre-commit hook
  # refuses any commit while something is hidden; it is installed once and names the way out.
  hooks=$(git rev-parse --git-path hooks)
  if [ ! -e "$hooks/pre-commit" ]; then
    mkdir -p "$hooks"
    printf '%s\n' '#!/bin/sh' \
      '# installed by scripts/device/slim_tree.sh: no commit while recorded data is hidden from the index' \
      'if [ -s "$(git rev-parse --git-path anatomy-hidden)" ]; then' \
      '  echo "refused: results folders are hidden (slim_tree.sh hide); run bash scripts/device/slim_tree.sh unhide, then commit" >&2' \
      '  exit 1' \
      'fi' > "$hooks/pre-commit"
    chmod +x "$hooks/pre-commit"
  fi
  [ -s "$EXCLUDE" ] && [ -n "$(tail -c1 "$EXCLUDE")" ] && echo >> "$EXCLUDE"  # our lines start on a line of their own
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    git rm -r -q --cached "$d"
    echo "$d/" >> "$EXCLUDE"
    echo "$d" >> "$LIST"
  done
  echo "hidden: ${dirs[*]}; the tree a call carries is now $(carried_mib) MiB"
  ;;
unhide)
  [ -s "$LIST" ] || { echo "nothing hidden"; exit 0; }
  while read -r d; do
    grep -vxF "$d/" "$EXCLUDE" > "$EXCLUDE.tmp" || true
    mv "$EXCLUDE.tmp" "$EXCLUDE"
    git add "$d"
  done < "$LIST"
  rm -f "$LIST"
  echo "restored; the tree a call carries is $(carried_mib) MiB"
  ;;
size)
  echo "$(carried_mib) MiB"
  ;;
*)
  echo "usage: slim_tree.sh hide live|flashattn|engine|stage | unhide | size" >&2; exit 2 ;;
esac
