#!/usr/bin/env bash
# runpatch tree vs libtree: one CUDA library, then 300 system libraries in one call.
set -euo pipefail
source "$(dirname "$0")/common.sh"
command -v libtree >/dev/null || { echo "libtree missing (scripts/install-deps)" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "hyperfine missing (scripts/install-deps)" >&2; exit 2; }
cusolver=/usr/local/cuda-13.0/lib/libcusolver.so.12
list=$(mktemp)
trap 'rm -f "$list"' EXIT
find /usr/lib/x86_64-linux-gnu -maxdepth 1 -name '*.so.*' -type f | sort | head -n 300 >"$list"
files=$(tr '\n' ' ' <"$list")
if [[ -f $cusolver ]]; then
  hyperfine -N --warmup 3 -n libtree "libtree $cusolver" -n "runpatch tree" "$runpatch tree --ignore-environment $cusolver"
fi
hyperfine -N --warmup 2 --runs 20 -n "libtree (300 files)" "libtree $files" \
  -n "runpatch tree (300 files)" "$runpatch tree --ignore-environment $files"
