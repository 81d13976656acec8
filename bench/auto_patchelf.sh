#!/usr/bin/env bash
# runpatch auto-patchelf vs the Python hook's way (pyelftools scan + one
# patchelf process per edit, bench/auto_patchelf_reference.py), each on its
# own copy of the CUDA toolkit's lib/ and bin/ with every runpath removed.
# Two columns: "dirty" times right after the copy (the page cache a build's
# install phase leaves), "synced" after `sync`. Run as the hooks run: inside
# NIX_BUILD_TOP, NIX_BINTOOLS set. Usage: auto_patchelf.sh [CUDA_ROOT]
set -euo pipefail
source "$(dirname "$0")/common.sh"
cuda=${1:-/usr/local/cuda-13.0}
[[ -d $cuda/lib ]] || { echo "skipped: $cuda is absent" >&2; exit 0; }
py=${PYTHON:-/usr/bin/python3}  # Debian's, where python3-pyelftools installs
"$py" -c 'import elftools' 2>/dev/null || { echo "python3-pyelftools missing (scripts/install-deps)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
interp=/lib64/ld-linux-x86-64.so.2
hook_environment "$work"

# fresh SIDE: lib/ and bin/ copied just now, without runpaths.
fresh() {
  rm -rf "${work:?}/$1" && mkdir -p "$work/$1"
  cp -a "$cuda/lib/." "$work/$1/lib" && cp -a "$cuda/bin/." "$work/$1/bin"
  "$runpatch" scan --dynamic-paths "$work/$1" | xargs -d '\n' "$runpatch" set --remove-runpath >/dev/null
}
# The hook's exact command line (every option, empty arrays included; the
# auto-patchelf entry point writes in place by default).
ours() {
  "$(dirname "$runpatch")/auto-patchelf" --ignore-missing '*' --paths "$work/ours/lib" "$work/ours/bin" \
    --libs --runtime-dependencies --append-rpaths --extra-args >/dev/null
}
theirs() { "$py" "$(dirname "$0")/auto_patchelf_reference.py" "$interp" "$work/theirs/lib" "$work/theirs/bin"; }
# column NAME: both sides on fresh copies (synced first when NAME is synced).
column() {
  fresh ours; fresh theirs
  [[ $1 == synced ]] && sync
  local a b
  a=$(ms_of ours) b=$(ms_of theirs)
  echo "$1: runpatch auto-patchelf ${a} ms, pyelftools + patchelf per edit ${b} ms, ratio $(ratio "$b" "$(( a > 0 ? a : 1 ))")x"
}

fresh ours
echo "files: $("$runpatch" scan --dynamic-paths "$work/ours" | wc -l) dynamically linked ELF files"
column dirty
column synced
