# Shared helpers for the bench scripts: timing and the runpatch binary.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runpatch=${RUNPATCH:-$root/build/bin/runpatch}
[[ -x $runpatch ]] || { echo "build runpatch first (./scripts/build)" >&2; exit 2; }

# now_ns: monotonic-enough wall clock in nanoseconds.
now_ns() { date +%s%N; }

# time_best N CMD...: best wall time of N runs, in milliseconds (3 decimals).
time_best() {
  local n=$1; shift
  local best=
  for ((i = 0; i < n; i++)); do
    local t0 t1
    t0=$(now_ns); "$@" >/dev/null 2>&1 || true; t1=$(now_ns)
    local ms=$(( (t1 - t0) / 1000 ))
    [[ -z $best || $ms -lt $best ]] && best=$ms
  done
  printf '%d.%03d' $((best / 1000)) $((best % 1000))
}

# ms_of CMD...: wall time of one run of CMD, in whole milliseconds.
ms_of() { local t0 t1; t0=$(now_ns); "$@"; t1=$(now_ns); echo $(( (t1 - t0) / 1000000 )); }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

# hook_environment WORK: NIX_BINTOOLS as in a Nix build (the host's x86-64
# loader, an orig-libc holding only libc.so.6) and NIX_BUILD_TOP=WORK, as the
# fixup hooks run.
hook_environment() {
  local bintools=$1/bintools
  mkdir -p "$bintools/nix-support" "$1/libc/lib"
  echo /lib64/ld-linux-x86-64.so.2 >"$bintools/nix-support/dynamic-linker"
  echo "$1/libc" >"$bintools/nix-support/orig-libc"
  cp "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)" "$1/libc/lib/"
  export NIX_BINTOOLS=$bintools NIX_BUILD_TOP=$1
}

# patchelf_prepend DIR ENTRY: Nixpkgs' way of adding a runpath entry to every
# ELF file of a tree (autoFixElfFiles + a `patchelf --print-rpath` and
# `--set-rpath` per file), as the driver and compat hooks run it.
patchelf_prepend() {
  find "$1" -type f -print0 | while IFS= read -r -d '' f; do
    [[ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" == '177ELF' ]] || continue
    old=$(patchelf --print-rpath "$f" 2>/dev/null) || continue
    patchelf --set-rpath "$2${old:+:$old}" "$f"
  done
}
