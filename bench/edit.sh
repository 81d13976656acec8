#!/usr/bin/env bash
# Growing the runpath of a library: `runpatch set` (default mode, --in-place,
# --atomic-copy, and --in-place inside a Nix build as the hooks run it) vs
# `patchelf --set-rpath`, each on its own fresh copy (page cache warm, copies
# synced before timing), and for the hooks' way and patchelf also on copies
# left dirty, as a build's install phase leaves its outputs (no sync between
# copying and timing). Prints the path each mode takes.
# Usage: bench/edit.sh [LIBRARY...]
#   (default: /usr/local/cuda-13.0/lib/libcufft.so.12 and libcudart.so.13)
set -euo pipefail
source "$(dirname "$0")/common.sh"
libs=("$@")
[[ ${#libs[@]} -gt 0 ]] || libs=(/usr/local/cuda-13.0/lib/libcufft.so.12 /usr/local/cuda-13.0/lib/libcudart.so.13)
command -v patchelf >/dev/null || { echo "patchelf missing (scripts/install-deps)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
runpath="/run/opengl-driver/lib:/nix/store/00000000000000000000000000000000-cuda_cudart-13.0.96-lib/lib:/nix/store/11111111111111111111111111111111-libcublas-13.0.2-lib/lib"

# measure TOOL_ARGS...: best wall ms and peak RSS KB over 3 fresh copies;
# with outputs=dirty the copies (and a second one beside, as a build writes
# several outputs) are not synced before timing.
measure() {
  local best= rss=
  for i in 1 2 3; do
    cp "$lib" "$work/copy.so"
    if [[ ${outputs:-synced} == dirty ]]; then cp "$lib" "$work/beside.so"; else sync; fi
    local t0 t1 out
    t0=$(now_ns)
    out=$( { /usr/bin/time -f '%M' "$@" "$work/copy.so" >/dev/null; } 2>&1 | tail -n 1)
    t1=$(now_ns)
    local us=$(( (t1 - t0) / 1000 ))
    [[ -z $best || $us -lt $best ]] && best=$us rss=$out
  done
  printf '%d.%03d %s\n' $((best / 1000)) $((best % 1000)) "$rss"
}

for lib in "${libs[@]}"; do
  [[ -f $lib ]] || { echo "skipped: $lib is absent" >&2; continue; }
  read -r default default_rss < <(measure "$runpatch" set --runpath "$runpath")
  read -r inplace inplace_rss < <(measure "$runpatch" set --in-place --runpath "$runpath")
  read -r atomic atomic_rss < <(measure "$runpatch" set --atomic-copy --runpath "$runpath")
  # As the Nixpkgs hooks run it: inside a build, written into the file (the staged commit).
  read -r build build_rss < <(measure env NIX_BUILD_TOP="$work" "$runpatch" set --in-place --runpath "$runpath")
  read -r theirs theirs_rss < <(measure patchelf --set-rpath "$runpath")
  read -r build_dirty _ < <(outputs=dirty measure env NIX_BUILD_TOP="$work" "$runpatch" set --in-place --runpath "$runpath")
  read -r theirs_dirty _ < <(outputs=dirty measure patchelf --set-rpath "$runpath")
  rm -f "$work/beside.so"; sync
  echo "file: $lib ($(stat -c %s "$lib") bytes)"
  # The path each mode takes, as runpatch says it: one write into the file,
  # a staged commit into it, or an edited copy renamed over it.
  for mode in "" --in-place --atomic-copy; do
    cp "$lib" "$work/copy.so"
    how=$("$runpatch" set $mode --runpath "$runpath" "$work/copy.so" 2>&1 | head -n 1 | sed 's/^[^:]*: //')
    echo "  path ${mode:-(default)}: $how"
  done
  cp "$lib" "$work/copy.so"
  how=$(NIX_BUILD_TOP=$work "$runpatch" set --in-place --runpath "$runpath" "$work/copy.so" 2>&1 | head -n 1 |
    sed 's/^[^:]*: //')
  echo "  path --in-place in a Nix build (NIX_BUILD_TOP): $how"
  echo "  runpatch set --runpath (default):   ${default} ms, peak RSS ${default_rss} KB"
  echo "  runpatch set --in-place --runpath:  ${inplace} ms, peak RSS ${inplace_rss} KB"
  echo "  runpatch set --atomic-copy:         ${atomic} ms, peak RSS ${atomic_rss} KB"
  echo "  the same in a Nix build (hooks):     ${build} ms, peak RSS ${build_rss} KB"
  echo "  patchelf --set-rpath:               ${theirs} ms, peak RSS ${theirs_rss} KB"
  echo "  ratio default:     $(ratio "$theirs" "$default")x faster, $(ratio "$theirs_rss" "$default_rss")x less memory"
  echo "  ratio --in-place:  $(ratio "$theirs" "$inplace")x faster, $(ratio "$theirs_rss" "$inplace_rss")x less memory"
  echo "  ratio atomic-copy: $(ratio "$theirs" "$atomic")x faster, $(ratio "$theirs_rss" "$atomic_rss")x less memory"
  echo "  ratio Nix build:   $(ratio "$theirs" "$build")x faster, $(ratio "$theirs_rss" "$build_rss")x less memory"
  echo "  dirty outputs (as a build leaves them): hooks' way ${build_dirty} ms, patchelf ${theirs_dirty} ms," \
    "ratio $(ratio "$theirs_dirty" "$build_dirty")x"
done
