#!/usr/bin/env bash
# runpatch scan over system trees vs a loop of `patchelf --print-rpath` over the same files.
# Usage: bench/scan.sh [DIR...]   (default: /usr/lib /usr/bin /usr/local)
set -euo pipefail
source "$(dirname "$0")/common.sh"
dirs=("$@")
[[ ${#dirs[@]} -gt 0 ]] || dirs=(/usr/lib /usr/bin /usr/local)
command -v patchelf >/dev/null || { echo "patchelf missing (scripts/install-deps)" >&2; exit 2; }

list=$(mktemp)
trap 'rm -f "$list"' EXIT
{ "$runpatch" scan --json "${dirs[@]}" 2>/dev/null || true; } | python3 -c '
import json, sys
for r in json.load(sys.stdin): print(r["path"])' >"$list"
files=$(wc -l <"$list")

patchelf_loop() { while IFS= read -r f; do patchelf --print-rpath "$f" >/dev/null 2>&1 || true; done <"$list"; }

cat "$list" | xargs -d '\n' cat >/dev/null 2>&1 || true   # warm the page cache for both tools
ours=$(time_best 5 "$runpatch" scan "${dirs[@]}")
theirs=$(time_best 1 patchelf_loop)
echo "files: $files ELF files under ${dirs[*]}"
echo "runpatch scan:               ${ours} ms (best of 5)"
echo "patchelf --print-rpath loop: ${theirs} ms"
echo "ratio: $(ratio "$theirs" "$ours")x"

# Reading alone: the same files given as a list, as the patchelf loop gets them.
print_list() { xargs -d '\n' -n 2000 "$runpatch" print --json <"$list"; }
ours_list=$(time_best 5 print_list)
echo "runpatch print over the list: ${ours_list} ms (best of 5)"
echo "ratio (same file list): $(ratio "$theirs" "$ours_list")x"
walk=$(time_best 5 find "${dirs[@]}" -type f)
echo "for scale, find -type f over the trees: ${walk} ms"

# The floor on this machine: a minimal two-thread C walker (bench/scan_floor.c)
# that lists the trees, then one that also opens every regular file once for
# its magic, parsing and printing nothing. Best of 5 each.
floor=$(mktemp)
trap 'rm -f "$list" "$floor"' EXIT
if cc -O2 -pthread -o "$floor" "$root/bench/scan_floor.c" 2>/dev/null; then
  best_floor() { for _ in 1 2 3 4 5; do "$floor" "$1" "${dirs[@]}"; done | sort -n | head -1 | cut -d' ' -f1; }
  echo "floor, listing only (2 threads, getdents64): $(best_floor 0) ms"
  echo "floor, listing + open/pread/close of every regular file: $(best_floor 1) ms"
fi
