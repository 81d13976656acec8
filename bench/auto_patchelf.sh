#!/usr/bin/env bash
# runpatch auto-patchelf vs the Python hook's way (pyelftools scan + one
# patchelf process per edit, bench/auto_patchelf_reference.py), each on its
# own copy of the CUDA toolkit's lib/ and bin/ with every runpath removed.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cuda=${1:-/usr/local/cuda-13.0}
[[ -d $cuda/lib ]] || { echo "skipped: $cuda is absent" >&2; exit 0; }
py=${PYTHON:-/usr/bin/python3}  # Debian's, where python3-pyelftools installs
"$py" -c 'import elftools' 2>/dev/null || { echo "python3-pyelftools missing (scripts/install-deps)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
interp=/lib64/ld-linux-x86-64.so.2
for side in ours theirs; do
  mkdir -p "$work/$side"
  cp -a "$cuda/lib/." "$work/$side/lib" && cp -a "$cuda/bin/." "$work/$side/bin"
  "$runpatch" set --remove-runpath $("$runpatch" scan --dynamic-paths "$work/$side") >/dev/null
done
sync
# The hook's exact command line (every option, empty arrays included, no --in-place: the
# auto-patchelf entry point writes in place by default), with NIX_BINTOOLS as in a Nix build.
bintools=$work/bintools
mkdir -p "$bintools/nix-support" "$work/libc/lib"
echo "$interp" >"$bintools/nix-support/dynamic-linker"
echo "$work/libc" >"$bintools/nix-support/orig-libc"
cp "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)" "$work/libc/lib/"
t0=$(now_ns); NIX_BINTOOLS=$bintools "$(dirname "$runpatch")/auto-patchelf" --ignore-missing '*' \
  --paths "$work/ours/lib" "$work/ours/bin" --libs --runtime-dependencies --append-rpaths --extra-args >/dev/null
t1=$(now_ns)
t2=$(now_ns); "$py" "$(dirname "$0")/auto_patchelf_reference.py" "$interp" "$work/theirs/lib" "$work/theirs/bin"; sync; t3=$(now_ns)
ours=$(( (t1 - t0) / 1000000 )) theirs=$(( (t3 - t2) / 1000000 ))
echo "files: $("$runpatch" scan --dynamic-paths "$work/ours" | wc -l) dynamically linked ELF files"
echo "runpatch auto-patchelf:            ${ours} ms"
echo "pyelftools + patchelf per edit:    ${theirs} ms"
echo "ratio: $(ratio "$theirs" "$([[ $ours -gt 0 ]] && echo "$ours" || echo 1)")x"
