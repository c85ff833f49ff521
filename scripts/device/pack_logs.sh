#!/usr/bin/env bash
# Pack a device call's $OUT for the trip back: a call returns at most 8 files from $OUT (16 MiB each) and $OUT is
# gone after it, so every file but the batch documents goes into one logs.tar.xz there (the server logs, run.log,
# build.log, models.log, ceilings.log, visit.log ...), and the packed files are removed. Kept as plain files: the
# batch documents (KEEP, default "llama.json ceilings.json") for `pytest-anatomy import-device`, and the prebuilt
# build's llama-bin.tar.xz.part-* and SHA256SUMS for make_carry.sh (already xz, ~15 MiB each: one tar would pass
# the per-file limit). `pytest-anatomy import-device llama.json ceilings.json logs.tar.xz` keeps logs.tar.xz
# verbatim under results/<hw>/batches/<stamp>/ (an xz file is not compressed again); `tar -xJf` opens it.
#
#   bash scripts/device/pack_logs.sh "$OUT"
set -uo pipefail
OUT=${1:?usage: pack_logs.sh OUT}
KEEP=${KEEP:-llama.json ceilings.json}
cd "$OUT" || exit 2
FILES=()
while IFS= read -r -d '' f; do
  f=${f#./}
  case " $KEEP " in *" $f "*) continue ;; esac
  case "$f" in logs.tar.xz|llama-bin.tar.xz.part-*|SHA256SUMS) continue ;; esac
  FILES+=("$f")
done < <(find . -mindepth 1 \( -type f -o -type l \) -print0 | sort -z)
[ ${#FILES[@]} -gt 0 ] || { echo "[pack_logs] nothing to pack in $OUT"; exit 0; }
# tar first, remove only what it packed: a failed tar leaves the files as they were
if tar -cf - -- "${FILES[@]}" | xz -T0 -6 > logs.tar.xz.tmp; then  # pipefail: a failed tar fails it
  mv logs.tar.xz.tmp logs.tar.xz
  rm -f -- "${FILES[@]}"
  find . -mindepth 1 -type d -empty -delete
  echo "[pack_logs] ${#FILES[@]} files -> logs.tar.xz ($(stat -c %s logs.tar.xz) bytes)"
else
  rm -f logs.tar.xz.tmp
  echo "[pack_logs] tar failed: the files stay in $OUT"; exit 1
fi
