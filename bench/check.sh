#!/usr/bin/env bash
# `runpatch check` over the system's ELF files (target: under 1 s).
set -euo pipefail
source "$(dirname "$0")/common.sh"
dirs=("$@")
[[ ${#dirs[@]} -gt 0 ]] || dirs=(/usr/lib /usr/bin /usr/local)
files=$("$runpatch" scan --dynamic-paths "${dirs[@]}" 2>/dev/null | wc -l)
best=$(time_best 5 "$runpatch" check --ignore-environment "${dirs[@]}")
echo "runpatch check over ${dirs[*]} ($files dynamically linked ELF files): ${best} ms (best of 5)"
