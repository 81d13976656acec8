#!/usr/bin/env bash
# runpatch tree vs libtree: one CUDA library (ROUNDS rounds, each a hyperfine
# run of both, reported in microseconds), libz (one dependency), then 300
# system libraries in one call.
set -euo pipefail
source "$(dirname "$0")/common.sh"
command -v libtree >/dev/null || { echo "libtree missing (scripts/install-deps)" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "hyperfine missing (scripts/install-deps)" >&2; exit 2; }
cusolver=/usr/local/cuda-13.0/lib/libcusolver.so.12
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A one-file run is mostly start-up, which depends on the tools being linked in
# start-up order (tools/startup-order.txt): say how much of that order still
# names functions of this binary.
listed=$(wc -l <"$root/tools/startup-order.txt")
present=$(nm --defined-only "$runpatch" | awk '{ print $3 }' | sort -u |
  comm -12 - <(sort -u "$root/tools/startup-order.txt") | wc -l)
echo "start-up order: $present of $listed listed functions are in $runpatch (few: rerun scripts/gen-startup-order)"

# hyperfine prints times this short in tenths of a millisecond: report its
# exported means and medians in microseconds instead.
report() {
  python3 - "$1" <<'EOF'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
for r in results:
    print(f"  {r['command'].split()[0]:>10}: mean {r['mean'] * 1e6:7.1f} us, median {r['median'] * 1e6:7.1f} us")
libtree, runpatch = (r["mean"] for r in results)
print(f"  runpatch tree is {libtree / runpatch:.2f}x as fast as libtree")
EOF
}

one_file() {  # one_file LIBRARY ROUNDS
  for round in $(seq "$2"); do
    echo "$(basename "$1"), round $round:"
    hyperfine -N --style none --warmup 20 --runs 1000 --export-json "$work/one.json" \
      -n libtree "libtree $1" -n runpatch "$runpatch tree --ignore-environment $1" >/dev/null
    report "$work/one.json"
  done
}
if [[ -f $cusolver ]]; then
  one_file "$cusolver" "${ROUNDS:-3}"
else
  echo "skipping the CUDA library: $cusolver is absent"
fi
one_file /usr/lib/x86_64-linux-gnu/libz.so.1 1
find /usr/lib/x86_64-linux-gnu -maxdepth 1 -name '*.so.*' -type f | sort | head -n 300 >"$work/list"
files=$(tr '\n' ' ' <"$work/list")
hyperfine -N --warmup 2 --runs 20 -n "libtree (300 files)" "libtree $files" \
  -n "runpatch tree (300 files)" "$runpatch tree --ignore-environment $files"
