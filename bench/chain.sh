#!/usr/bin/env bash
# The chain a CUDA package runs in fixup: autoPatchelfHook, then
# autoAddDriverRunpath, then autoAddCudaCompatRunpath — ours (the
# auto-patchelf entry point, `runpatch driver`, `runpatch compat`, each as its
# hook calls it) against Nixpkgs' way (the pyelftools script with a patchelf
# per edit, then a `patchelf --print-rpath`/`--set-rpath` loop per hook), each
# on its own fresh copy of the CUDA toolkit's lib/ with every runpath removed,
# timed right after the copy (no sync: the page cache a build's install phase
# leaves). Twice: inside a build (NIX_BUILD_TOP set) and outside one.
# Each later step should cost what the first did; the bytes of both chains'
# results are compared too (runpaths equal).
# Usage: bench/chain.sh [CUDA_ROOT]
set -euo pipefail
source "$(dirname "$0")/common.sh"
cuda=${1:-/usr/local/cuda-13.0}
[[ -d $cuda/lib ]] || { echo "skipped: $cuda is absent" >&2; exit 0; }
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import elftools' 2>/dev/null || { echo "python3-pyelftools missing (scripts/install-deps)" >&2; exit 2; }
command -v patchelf >/dev/null || { echo "patchelf missing (scripts/install-deps)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
interp=/lib64/ld-linux-x86-64.so.2
driver=/run/opengl-driver/lib compat=/nix/store/00000000000000000000000000000000-cuda_compat-13.0/compat
auto_patchelf=$(dirname "$runpatch")/auto-patchelf

fresh() {  # SIDE: lib/ copied just now, without runpaths
  rm -rf "${work:?}/$1" && mkdir -p "$work/$1"
  cp -a "$cuda/lib/." "$work/$1/lib"
  "$runpatch" scan --dynamic-paths "$work/$1" | xargs -d '\n' "$runpatch" set --remove-runpath >/dev/null
}
ours_auto() {
  "$auto_patchelf" --ignore-missing '*' --paths "$work/ours/lib" --libs --runtime-dependencies --append-rpaths \
    --extra-args >/dev/null
}
ours_driver() { "$runpatch" driver -q --in-place --driver-dir "$driver" ${NIX_BUILD_TOP:+--forbid "$NIX_BUILD_TOP/"} "$work/ours"; }
ours_compat() {
  "$runpatch" compat -q --in-place --libcuda "$compat" --driver-dir "$driver" ${NIX_BUILD_TOP:+--forbid "$NIX_BUILD_TOP/"} \
    "$work/ours" 2>/dev/null
}
theirs_auto() { "$py" "$(dirname "$0")/auto_patchelf_reference.py" "$interp" "$work/theirs/lib" >/dev/null; }
theirs_driver() { patchelf_prepend "$work/theirs" "$driver"; }
theirs_compat() { patchelf_prepend "$work/theirs" "$compat"; }

run_chain() {  # LABEL
  fresh ours; fresh theirs
  local a1 a2 a3 b1 b2 b3
  a1=$(ms_of ours_auto) a2=$(ms_of ours_driver) a3=$(ms_of ours_compat)
  b1=$(ms_of theirs_auto) b2=$(ms_of theirs_driver) b3=$(ms_of theirs_compat)
  local a=$((a1 + a2 + a3)) b=$((b1 + b2 + b3))
  echo "$1: runpatch auto-patchelf ${a1} ms, driver ${a2} ms, compat ${a3} ms = ${a} ms;" \
    "script + patchelf loops ${b1} + ${b2} + ${b3} = ${b} ms; ratio $(ratio "$b" "$(( a > 0 ? a : 1 ))")x;" \
    "later steps / first: $(ratio "$a2" "$(( a1 > 0 ? a1 : 1 ))")x, $(ratio "$a3" "$(( a1 > 0 ? a1 : 1 ))")x"
  local differ=0 mine theirs_rp
  while IFS= read -r f; do
    rel=${f#"$work/ours/"}
    mine=$("$runpatch" print --json "$f" | "$py" -c 'import json,sys; d=json.load(sys.stdin)[0]; print(d["runpath"] or d["rpath"] or "")')
    theirs_rp=$(patchelf --print-rpath "$work/theirs/$rel")
    mine=${mine//$work\/ours/W} theirs_rp=${theirs_rp//$work\/theirs/W}  # each side's own tree
    if [[ $mine != "$theirs_rp" ]]; then
      differ=$((differ + 1))
      [[ $differ -le 3 ]] && echo "$1: $rel: ours '$mine', theirs '$theirs_rp'"
    fi
  done < <("$runpatch" scan --dynamic-paths "$work/ours")
  echo "$1: files whose runpath differs between the two chains: $differ"
  echo "$1: growth: ours $(du -sb "$work/ours" | cut -f1) bytes, theirs $(du -sb "$work/theirs" | cut -f1) bytes"
  # One pass (hooks/auto-patchelf-cuda-hook.sh): auto-patchelf with the two layers, one write per file.
  local chained_sums chained_runpaths one_pass_ms same_bytes
  chained_sums=$(cd "$work/ours" && find . -type f -exec sha256sum {} + | sort)
  chained_runpaths=$("$runpatch" scan "$work/ours")
  fresh ours
  one_pass_ms=$(ms_of ours_one_pass)
  same_bytes=$(comm -3 <(echo "$chained_sums") <(cd "$work/ours" && find . -type f -exec sha256sum {} + | sort) | wc -l)
  echo "$1: one pass ${one_pass_ms} ms against the chain's ${a} ms; runpaths" \
    "$([[ "$("$runpatch" scan "$work/ours")" == "$chained_runpaths" ]] && echo "equal" || echo DIFFERENT);" \
    "$((same_bytes / 2)) files' bytes differ from the chain's"
}
ours_one_pass() {
  "$auto_patchelf" --ignore-missing '*' --paths "$work/ours/lib" --libs --runtime-dependencies --append-rpaths \
    --driver-dir "$driver" --libcuda "$compat" ${NIX_BUILD_TOP:+--forbid "$NIX_BUILD_TOP/"} --extra-args >/dev/null
}

fresh ours
echo "files: $("$runpatch" scan --dynamic-paths "$work/ours" | wc -l) dynamically linked ELF files in $cuda/lib"
hook_environment "$work"
# The outputs are store paths, not under the build directory the hooks forbid.
export NIX_BUILD_TOP=$work/build && mkdir -p "$NIX_BUILD_TOP"
run_chain "in a build"
unset NIX_BUILD_TOP
[[ -n ${CHAIN_IN_BUILD_ONLY:-} ]] || run_chain "outside a build"
