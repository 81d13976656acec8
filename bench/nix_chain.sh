#!/usr/bin/env bash
# The hook chain's time inside a real nix-build, on a package that carries
# the real CUDA libraries (a copy of CUDA_ROOT/lib in its $lib output): ours
# (runpatch's auto-patchelf, then the driver and compat hooks of hooks/), the
# one-pass hook, and Nixpkgs' way (the pyelftools script with a patchelf per
# edit, then a patchelf loop per hook) — bench/nix/chain.nix. Each build is a
# fresh derivation (fresh outputs, NIX_BUILD_TOP=/build in Nix's sandbox);
# the fixup steps are timed inside the builder, the whole nix-build (copy,
# fixup, Nix's hashing and registration) outside. The runpaths of the sides
# are compared; the outputs are deleted afterwards.
# Needs Debian's nix-bin (scripts/install-deps) and root (single-user Nix).
# Usage: bench/nix_chain.sh [CUDA_ROOT]
set -euo pipefail
source "$(dirname "$0")/common.sh"
cuda=$(realpath "${1:-/usr/local/cuda-13.0}" 2>/dev/null || true)
[[ -n $cuda && -d $cuda/lib ]] || { echo "skipped: ${1:-/usr/local/cuda-13.0} is absent" >&2; exit 0; }
command -v nix-build >/dev/null || { echo "skipped: nix-build is not installed (scripts/install-deps)" >&2; exit 0; }
[[ $(id -u) == 0 ]] || { echo "skipped: single-user Nix writes /nix/store: run as root" >&2; exit 0; }
here=$(cd "$(dirname "$0")" && pwd)
runpatch=$(realpath "$runpatch")
logs=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-nix-bench.XXXXXX")
trap 'rm -rf "$logs"' EXIT
unset NIX_REMOTE NIX_PATH
export NIX_CONFIG="build-users-group =
substituters =
sandbox = true
extra-sandbox-paths = /bin /usr /lib /lib64 $(dirname "$runpatch") $root/hooks $here $cuda"

build_side() {  # SIDE: builds it; prints "WALL_MS LIB_PATH OUT_PATH"
  local t0 t1 paths
  t0=$(now_ns)
  paths=$(nix-build --no-out-link "$here/nix/chain.nix" --argstr runpatch "$runpatch" --argstr hooks "$root/hooks" \
    --argstr benchDir "$here" --argstr cudaLib "$cuda/lib" --argstr side "$1" --argstr runId "$(now_ns)" \
    -A out -A lib 2>"$logs/$1.log") || { tail -20 "$logs/$1.log" >&2; echo "nix-build of side $1 failed" >&2; exit 1; }
  t1=$(now_ns)
  echo "$(((t1 - t0) / 1000000)) $(echo "$paths" | grep -e '-lib$') $(echo "$paths" | grep -v -e '-lib$')"
}
step_ms() { awk -v s="$2" '$1 == "bench-step" && $2 == s { print $3 }' "$logs/$1.log"; }
runpaths() {  # LIB_PATH: "file runpath" per ELF file, the output's own path as LIB
  local f
  "$runpatch" scan --dynamic-paths "$1" | sort | while IFS= read -r f; do
    echo "${f#"$1"/} $("$runpatch" print --json "$f" |
      python3 -c 'import json,sys; d=json.load(sys.stdin)[0]; print(d["runpath"] or d["rpath"] or "")' | sed "s|$1|LIB|g")"
  done
}

echo "machine: $(nproc) cores, $(uname -m); CUDA libraries: $cuda/lib ($(du -sh "$cuda/lib" | cut -f1));" \
  "$(nix-build --version); patchelf $(patchelf --version | cut -d' ' -f2)"
declare -A wall lib out
for side in ours one-pass theirs; do
  read -r wall[$side] lib[$side] out[$side] < <(build_side "$side")
  runpaths "${lib[$side]}" >"$logs/$side.runpaths"
  nix-store --delete "${out[$side]}" "${lib[$side]}" >/dev/null 2>&1 || true
done
o1=$(step_ms ours auto-patchelf) o2=$(step_ms ours driver) o3=$(step_ms ours compat)
t1=$(step_ms theirs auto-patchelf) t2=$(step_ms theirs driver) t3=$(step_ms theirs compat)
p1=$(step_ms one-pass auto-patchelf)
ours=$((o1 + o2 + o3)) theirs=$((t1 + t2 + t3))
echo "fixup inside nix-build: runpatch auto-patchelf ${o1} ms, driver hook ${o2} ms, compat hook ${o3} ms = ${ours} ms;" \
  "script + patchelf loops ${t1} + ${t2} + ${t3} = ${theirs} ms; ratio $(ratio "$theirs" "$((ours > 0 ? ours : 1))")x"
echo "one-pass hook inside nix-build: ${p1} ms; $(ratio "$theirs" "$((p1 > 0 ? p1 : 1))")x the script + loops"
echo "whole nix-build (copy, fixup, hashing, registration): ours ${wall[ours]} ms, one-pass ${wall[one-pass]} ms," \
  "theirs ${wall[theirs]} ms"
differ=$(comm -3 "$logs/ours.runpaths" "$logs/theirs.runpaths" | wc -l)
echo "runpaths: $(wc -l <"$logs/ours.runpaths") files; ours vs theirs: $((differ / 2)) differ;" \
  "ours vs one-pass: $(($(comm -3 "$logs/ours.runpaths" "$logs/one-pass.runpaths" | wc -l) / 2)) differ"
comm -3 "$logs/ours.runpaths" "$logs/theirs.runpaths" | head -4
