#!/usr/bin/env bash
# runpatch auto-patchelf on a Python venv's site-packages (the GPU host's
# /opt/torch/.venv: PyTorch and the nvidia wheels) with the hook's command
# line, against the Python hook's way (bench/auto_patchelf_reference.py:
# pyelftools + one patchelf process per edit). Each side gets its own copy
# with every runpath removed. Two columns: "dirty" times right after the copy
# (the page cache a build's install phase leaves), "synced" after `sync`.
# Run inside NIX_BUILD_TOP as the hooks do. Usage: auto_patchelf_venv.sh [VENV]
set -euo pipefail
source "$(dirname "$0")/common.sh"
venv=${1:-/opt/torch/.venv}
sp=$(ls -d "$venv"/lib/python3*/site-packages 2>/dev/null | head -1)
[[ -n $sp ]] || { echo "skipped: no site-packages under $venv" >&2; exit 0; }
py=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-venv.XXXXXX")
trap 'rm -rf "$work"' EXIT
interp=/lib64/ld-linux-x86-64.so.2
hook_environment "$work"
peak() { if [[ -x /usr/bin/time ]]; then /usr/bin/time -f '%e s wall, %M KB peak' "$@"; else "$@"; fi; }

# fresh SIDE: a copy of site-packages without runpaths, written just now.
fresh() {
  rm -rf "$work/$1" && cp -a "$sp" "$work/$1"
  "$runpatch" scan --dynamic-paths "$work/$1" | xargs -d '\n' "$runpatch" set --remove-runpath >/dev/null
  local left
  left=$("$runpatch" scan "$work/$1" | grep -c 'rpath=\|runpath=' || true)
  echo "fresh $1: lines naming a runpath left: $left" >&2
}
# ours SIDE: the hook's command line (wheels: every nvidia/*/lib as --libs).
extra_libs=()  # the chain below adds the system library directory
ours() {
  local libs=("$work/$1"/nvidia/*/lib "${extra_libs[@]}")
  "$(dirname "$runpatch")/auto-patchelf" "${@:2}" --ignore-missing 'libcuda.so*' --paths "$work/$1" \
    --libs "${libs[@]}" --runtime-dependencies --append-rpaths --extra-args >"$work/$1.out" 2>"$work/$1.err"
}

echo "site-packages: $sp ($(du -sh "$sp" | cut -f1), $(find "$sp" -type f | wc -l) files)"
if [[ -z ${CHAIN_ONLY:-} ]]; then  # CHAIN_ONLY=1: only the chain below
fresh ours; fresh theirs
echo "dynamic ELF files: $("$runpatch" scan --dynamic-paths "$work/ours" | wc -l)"
dirty_ours=$(ms_of ours ours)
dirty_theirs=$(ms_of "$py" "$(dirname "$0")/auto_patchelf_reference.py" "$interp" "$work/theirs")
echo "dirty outputs: runpatch ${dirty_ours} ms, pyelftools+patchelf ${dirty_theirs} ms," \
  "ratio $(ratio "$dirty_theirs" "$(( dirty_ours > 0 ? dirty_ours : 1 ))")x"
fresh ours; fresh theirs; sync
synced_ours=$(ms_of ours ours)
synced_theirs=$(ms_of "$py" "$(dirname "$0")/auto_patchelf_reference.py" "$interp" "$work/theirs")
echo "synced: runpatch ${synced_ours} ms, pyelftools+patchelf ${synced_theirs} ms," \
  "ratio $(ratio "$synced_theirs" "$(( synced_ours > 0 ? synced_ours : 1 ))")x"
fresh ours; sync
echo -n "runpatch --dry-run: "; peak bash -c "$(declare -f ours); work=$work runpatch=$runpatch; ours ours --dry-run" 2>&1 | tail -1
fi

# The chain a wheel's Nix build runs (dirty outputs, in a build): autoPatchelfHook
# (the hook's line, the system library directory in --libs as a build of a
# wheel passes it), then autoAddDriverRunpath, then autoAddCudaCompatRunpath,
# against the script and a patchelf loop per hook (bench/common.sh).
command -v patchelf >/dev/null || { echo "chain: skipped, no patchelf" >&2; exit 0; }
compat=/nix/store/00000000000000000000000000000000-cuda_compat-13.0/compat forbid=$work/build/
fresh ours; fresh theirs
extra_libs=(/usr/lib/x86_64-linux-gnu)
a1=$(ms_of ours ours)
a2=$(ms_of "$runpatch" driver -q --in-place --forbid "$forbid" "$work/ours")
a3=$(ms_of "$runpatch" compat -q --in-place --libcuda "$compat" --forbid "$forbid" "$work/ours" 2>/dev/null)
b1=$(ms_of "$py" "$(dirname "$0")/auto_patchelf_reference.py" "$interp" "$work/theirs")
b2=$(ms_of patchelf_prepend "$work/theirs" /run/opengl-driver/lib)
b3=$(ms_of patchelf_prepend "$work/theirs" "$compat")
echo "chain: runpatch ${a1} + ${a2} + ${a3} = $((a1 + a2 + a3)) ms, script + patchelf loops ${b1} + ${b2} + ${b3} =" \
  "$((b1 + b2 + b3)) ms, ratio $(ratio "$((b1 + b2 + b3))" "$(( a1 + a2 + a3 > 0 ? a1 + a2 + a3 : 1 ))")x"
