#!/usr/bin/env bash
# Stage a folder onto the device machine over several `run` calls, when it and the working tree do not
# fit one call's 64 MiB.
#
# Here:    bash scripts/device/stage_split.sh split NAME SRC_DIR PART_MIB
#            packs SRC_DIR (tar, no compression: the bundles are compressed already) into parts of at most
#            PART_MIB MiB under .devstage/NAME/p00, p01, ... (one part per folder, so one folder per call;
#            the last also holds NAME.sha256) and prints the calls. Pick PART_MIB as 63 minus the tree a call
#            carries (`bash scripts/device/slim_tree.sh size`).
# Device:  bash scripts/device/stage_split.sh put NAME .devstage/NAME/pNN     (one call per part, carry that folder)
#          bash scripts/device/stage_split.sh join NAME DEST                  (after the last put: checks the
#                                                                              sha256, unpacks into DEST)
# Make the calls back to back: the machine is given back after 30 s idle, and /root/stage with it.
set -euo pipefail
cd "$(dirname "$0")/../.."
STAGE=${STAGE:-/root/stage/parts}

case "${1:-}" in
split)
  name=${2:?NAME}; src=${3:?SRC_DIR}; mib=${4:?PART_MIB}
  [ -d "$src" ] || { echo "no folder $src" >&2; exit 2; }
  out=.devstage/$name
  rm -rf "$out"; mkdir -p "$out/tmp"
  tar -C "$src" -cf "$out/tmp/$name.tar" .
  (cd "$out/tmp" && sha256sum "$name.tar" > "$name.sha256" && split -b "${mib}M" -d -a 2 "$name.tar" "$name.tar.part-")
  n=0
  for p in "$out"/tmp/"$name".tar.part-*; do
    d=$out/p$(printf %02d $n); mkdir -p "$d"; mv "$p" "$d/"; n=$((n + 1))
  done
  last=$out/p$(printf %02d $((n - 1)))
  mv "$out/tmp/$name.sha256" "$last/"
  rm -rf "$out/tmp"
  echo "$n parts of <= $mib MiB under $out; the calls:"
  for d in "$out"/p*; do
    echo "  run carry=[\"$d\"] command: bash scripts/device/stage_split.sh put $name $d"
  done
  echo "  then, in the last call or the next: bash scripts/device/stage_split.sh join $name <dest>"
  ;;
put)
  name=${2:?NAME}; dir=${3:?PART_DIR}
  mkdir -p "$STAGE/$name"
  cp "$dir"/* "$STAGE/$name/"
  echo "$name: $(ls "$STAGE/$name" | grep -c part-) parts staged"
  ;;
join)
  name=${2:?NAME}; dest=${3:?DEST}
  cd "$STAGE/$name"
  [ -f "$name.sha256" ] || { echo "$name: the last part (with $name.sha256) was not staged" >&2; exit 3; }
  cat "$name".tar.part-* > "$name.tar"
  sha256sum -c --quiet "$name.sha256" || { echo "$name: checksum mismatch: a part is missing or damaged" >&2; exit 4; }
  mkdir -p "$dest"; tar -xf "$name.tar" -C "$dest"
  rm -f "$name".tar.part-* "$name.tar"
  echo "$name: unpacked into $dest"
  ;;
*)
  echo "usage: stage_split.sh split NAME SRC_DIR PART_MIB | put NAME PART_DIR | join NAME DEST" >&2; exit 2 ;;
esac
