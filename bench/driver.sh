#!/usr/bin/env bash
# `runpatch driver` over a copy of the CUDA toolkit vs the Nixpkgs way
# (find + `patchelf --print-rpath` + `patchelf --set-rpath` per ELF file) on another copy,
# on synced copies and then on dirty ones (as a build leaves its outputs).
# Usage: bench/driver.sh [TREE]   (default: /usr/local/cuda-13.0)
set -euo pipefail
source "$(dirname "$0")/common.sh"
tree=${1:-/usr/local/cuda-13.0}
[[ -d $tree ]] || { echo "skipped: $tree is absent" >&2; exit 0; }
command -v patchelf >/dev/null || { echo "patchelf missing (scripts/install-deps)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
driver=/run/opengl-driver/lib

# What autoFixElfFiles + addDriverRunpath do today, file by file (bench/common.sh).
nixpkgs_way() { patchelf_prepend "$1" "$driver"; }

cp -a "$tree/." "$work/ours" && cp -a "$tree/." "$work/inplace" && cp -a "$tree/." "$work/theirs" && sync
# Default mode (an edit that appends a segment goes through a copy), then as
# the hook runs it: --in-place inside a Nix build (written into the files, staged commits).
t0=$(now_ns); "$runpatch" driver "$work/ours" 2>/dev/null; sync; t1=$(now_ns)
t4=$(now_ns); NIX_BUILD_TOP=$work "$runpatch" driver --in-place "$work/inplace" 2>/dev/null; sync; t5=$(now_ns)
rm -rf "$work/inplace"
t2=$(now_ns); nixpkgs_way "$work/theirs"; sync; t3=$(now_ns)
ours=$(( (t1 - t0) / 1000000 )) inplace=$(( (t5 - t4) / 1000000 )) theirs=$(( (t3 - t2) / 1000000 ))
files=$("$runpatch" scan --dynamic-paths "$work/ours" | wc -l)
echo "tree: $tree ($files dynamically linked ELF files)"
echo "runpatch driver (default mode):           ${ours} ms"
echo "runpatch driver --in-place, NIX_BUILD_TOP: ${inplace} ms"
echo "find + patchelf --print-rpath/--set-rpath: ${theirs} ms"
echo "ratio default:    $(ratio "$theirs" "$([[ $ours -gt 0 ]] && echo "$ours" || echo 1)")x"
echo "ratio as the hook runs: $(ratio "$theirs" "$([[ $inplace -gt 0 ]] && echo "$inplace" || echo 1)")x"
# Both must agree on every runpath.
diffs=0
while IFS= read -r f; do
  rel=${f#"$work/ours/"}
  [[ "$(patchelf --print-rpath "$f")" == "$(patchelf --print-rpath "$work/theirs/$rel")" ]] || diffs=$((diffs + 1))
done < <("$runpatch" scan --dynamic-paths "$work/ours")
echo "files whose runpath differs between the two: $diffs"
rm -rf "$work/ours" "$work/theirs"

# Dirty outputs, as a build's install phase leaves them: copy, then time at
# once (no sync before, and none after: the build goes on).
cp -a "$tree/." "$work/dirty-ours" && cp -a "$tree/." "$work/dirty-theirs"
t6=$(now_ns); NIX_BUILD_TOP=$work "$runpatch" driver --in-place "$work/dirty-ours" 2>/dev/null; t7=$(now_ns)
t8=$(now_ns); nixpkgs_way "$work/dirty-theirs"; t9=$(now_ns)
dirty_ours=$(( (t7 - t6) / 1000000 )) dirty_theirs=$(( (t9 - t8) / 1000000 ))
echo "dirty outputs: runpatch driver as the hook runs ${dirty_ours} ms, find + patchelf ${dirty_theirs} ms," \
  "ratio $(ratio "$dirty_theirs" "$([[ $dirty_ours -gt 0 ]] && echo "$dirty_ours" || echo 1)")x"
