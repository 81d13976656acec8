#!/usr/bin/env bash
# Open attempts the loader makes for the direct DT_NEEDED of CUDA libraries
# given a 10-entry runpath (the driver directory, eight package directories,
# the CUDA library directory), without and with the resolution-cache note.
# Usage: bench/ldcache-stats.sh [BUILD_DIR]   (prints a Markdown table)
set -euo pipefail
build=${1:-build}
runpatch=$(realpath "$build/bin/runpatch")
cuda=/usr/local/cuda-13.0/lib
[ -d "$cuda" ] || { echo "skipped: $cuda is absent" >&2; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-ldcache.XXXXXX")
trap 'rm -rf "$work"' EXIT
runpath=/run/opengl-driver/lib
for i in 1 2 3 4 5 6 7 8; do mkdir -p "$work/pkg$i/lib"; runpath+=":$work/pkg$i/lib"; done
runpath+=":$cuda"
echo "| library | DT_NEEDED | opens without note | opens with note | note bytes | write time |"
echo "|---|---|---|---|---|---|"
for lib in libcusolver.so.12 libcublas.so.13 libcufft.so.12 libcudnn.so.9 libnccl.so.2; do
  [ -f "$cuda/$lib" ] || continue
  cp "$cuda/$lib" "$work/$lib"
  "$runpatch" set --in-place --runpath "$runpath" "$work/$lib" >/dev/null
  start=$(date +%s%N)
  "$runpatch" set --in-place --ldcache "$work/$lib" >/dev/null
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  stats=$("$runpatch" tree --stats --json --ignore-environment "$work/$lib" | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["open_attempts"]
print(len(s["needed"]), s["without_note"], s["with_note"])')
  read -r needed without with <<<"$stats"
  size=$(( $(readelf --notes --wide "$work/$lib" | awk '/NixOS/ {print $2}') ))
  echo "| $lib | $needed | $without | $with | $size | $ms ms |"
  rm -f "$work/$lib"
done
