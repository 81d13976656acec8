#!/usr/bin/env bash
# File growth of runpatch's edits next to patchelf's, on the same files.
# A Nix store keeps every byte up to st_size (a NAR has no holes), so growth
# is closure size. For every dynamic ELF file of the CUDA toolkit and up to
# 300 system libraries, three edits, each on a fresh copy:
#   prepend  /run/opengl-driver/lib in front of the runpath (addDriverRunpath)
#   set300   a 300-byte runpath
#   ldcache  prepend, plus the resolution-cache note (runpatch --ldcache;
#            patchelf's column is its plain prepend: it has no such note)
# Both tools run in their default mode (no --in-place). Prints per edit the
# totals, how many files runpatch grows no more than patchelf, the worst file,
# whether runpatch ever grows a file by more than the bytes it writes + 4096,
# and which path each of runpatch's edits took, by default and with
# --in-place: one write into the file (the edit fit the existing tables), a
# staged commit into the file, or an edited copy renamed over it (what
# `runpatch set` says of each file).
# PATHS_ONLY=1: only the path columns (no patchelf run; the growth columns then
# say nothing). "Nix build" is --in-place with $NIX_BUILD_TOP set, as the hooks run.
# Usage: bench/growth.sh [CUDA_DIR] [SYSTEM_LIBS_LIMIT]
set -euo pipefail
source "$(dirname "$0")/common.sh"
cuda=${1:-/usr/local/cuda-13.0}
limit=${2:-300}
command -v patchelf >/dev/null || { echo "patchelf is not installed (scripts/install-deps)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-growth.XXXXXX")
trap 'rm -rf "$work"' EXIT

files=()
if [[ -d $cuda ]]; then
  while IFS= read -r -d '' f; do files+=("$f"); done < <("$runpatch" scan --dynamic-paths -0 "$cuda" 2>/dev/null ||
    find "$cuda" -type f -name '*.so*' -print0)
fi
count=0
while IFS= read -r -d '' f; do
  file -b "$f" | grep -q 'dynamically linked' || continue
  files+=("$f"); count=$((count + 1))
  [[ $count -ge $limit ]] && break
done < <(find /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -name 'lib*.so*' -print0 | sort -z)

runpath_300=/nix/store/$(printf 'x%.0s' $(seq 1 250))/lib:/run/opengl-driver/lib
# path_of LINE: which way `runpatch set` says it wrote the file.
path_of() {
  case $1 in
    *"an edited copy replaced the file"*) echo copy ;;
    *"(staged commit)"*) echo staged ;;
    *"written into the file"*) echo one-write ;;
    *) echo other ;;
  esac
}

printf '%-8s %6s %14s %14s %10s %8s  %-18s %-26s %-26s %s\n' edit files runpatch patchelf '<=patchelf' over+4k \
  'default: 1w/copy' '--in-place: 1w/staged/copy' 'Nix build: 1w/staged/copy' worst
for edit in prepend set300 ldcache; do
  total_ours=0 total_theirs=0 no_worse=0 over=0 n=0 worst=0 worst_file=-
  declare -A paths=()
  for f in "${files[@]}"; do
    old_size=$(stat -c %s "$f")
    old_rpath=$(patchelf --print-rpath "$f" 2>/dev/null) || continue
    case $edit in
      prepend|ldcache) new_rpath=/run/opengl-driver/lib${old_rpath:+:$old_rpath} ;;
      set300) new_rpath=$runpath_300 ;;
    esac
    cp "$f" "$work/ours"; cp "$f" "$work/theirs"
    flags=(--runpath "$new_rpath")
    [[ $edit == ldcache ]] && flags+=(--ldcache)
    line=$("$runpatch" set "${flags[@]}" "$work/ours" 2>/dev/null) || continue
    if [[ -z ${PATHS_ONLY:-} ]]; then patchelf --set-rpath "$new_rpath" "$work/theirs" 2>/dev/null || continue; fi
    cp "$f" "$work/in-place"
    in_place_line=$("$runpatch" set --in-place "${flags[@]}" "$work/in-place" 2>/dev/null) || in_place_line=failed
    cp "$f" "$work/in-build"
    in_build_line=$(NIX_BUILD_TOP=$work "$runpatch" set --in-place "${flags[@]}" "$work/in-build" 2>/dev/null) ||
      in_build_line=failed
    paths[default-$(path_of "$line")]=$(( ${paths[default-$(path_of "$line")]:-0} + 1 ))
    paths[in-place-$(path_of "$in_place_line")]=$(( ${paths[in-place-$(path_of "$in_place_line")]:-0} + 1 ))
    paths[in-build-$(path_of "$in_build_line")]=$(( ${paths[in-build-$(path_of "$in_build_line")]:-0} + 1 ))
    ours=$(( $(stat -c %s "$work/ours") - old_size ))
    theirs=$(( $(stat -c %s "$work/theirs") - old_size ))
    n=$((n + 1)); total_ours=$((total_ours + ours)); total_theirs=$((total_theirs + theirs))
    [[ $ours -le $theirs ]] && no_worse=$((no_worse + 1))
    written=$(sed -n 's/.*bytes, [-+][0-9]* (\([0-9]*\) bytes written)$/\1/p' <<<"$line")
    [[ -n $written && $ours -gt $((written + 4096)) ]] && over=$((over + 1))
    if [[ $((ours - theirs)) -gt $worst ]]; then worst=$((ours - theirs)); worst_file="$f (+$ours vs +$theirs)"; fi
  done
  printf '%-8s %6d %14d %14d %9d%% %8d  %-18s %-26s %-26s %s\n' "$edit" "$n" "$total_ours" "$total_theirs" \
    $((n ? no_worse * 100 / n : 0)) "$over" \
    "${paths[default-one-write]:-0}/${paths[default-copy]:-0}" \
    "${paths[in-place-one-write]:-0}/${paths[in-place-staged]:-0}/${paths[in-place-copy]:-0}" \
    "${paths[in-build-one-write]:-0}/${paths[in-build-staged]:-0}/${paths[in-build-copy]:-0}" "$worst_file"
  unset paths
done
