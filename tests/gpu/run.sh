#!/usr/bin/env bash
# Real GPU proof (not part of CI: it needs an NVIDIA GPU). Builds a SAXPY
# against the shared libcudart, copies the driver's and the forward-
# compatibility libcuda into directories no loader search reaches, strips
# every runpath, then for each case patches with runpatch, runs the program
# (which reports the libcuda.so it mapped, from /proc/self/maps) and asks
# `runpatch doctor` for its prediction. Prints a Markdown table.
#
#   tests/gpu/run.sh [RESULT_FILE]
# Environment: RUNPATCH (default build/bin/runpatch), CUDA_HOME (/usr/local/cuda),
# DRIVER_LIBCUDA (/usr/local/nvidia/lib64/libcuda.so.1), COMPAT_DIR ($CUDA_HOME/compat).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runpatch=${RUNPATCH:-$root/build/bin/runpatch}
cuda=${CUDA_HOME:-/usr/local/cuda}
driver_src=${DRIVER_LIBCUDA:-/usr/local/nvidia/lib64/libcuda.so.1}
compat_src=${COMPAT_DIR:-$cuda/compat}
result=${1:-/dev/stdout}
host_llp=${LD_LIBRARY_PATH:-}
unset LD_LIBRARY_PATH  # the runs below set it only where a case says so

work=$(mktemp -d /tmp/runpatch-gpu.XXXXXX)
details=$work/details.md
nvcc=$cuda/bin/nvcc
[[ -x $nvcc ]] || nvcc=nvcc
"$nvcc" -O2 -arch="${NVCC_ARCH:-native}" -cudart shared -o "$work/saxpy.orig" "$here/saxpy.cu"
libdir=$cuda/lib64
[[ -d $libdir ]] || libdir=$cuda/lib
cudart=$(cd "$libdir" && ls libcudart.so.* | grep -E '^libcudart\.so\.[0-9]+$' | head -n1)  # the SONAME
mkdir -p "$work/lib" "$work/driver" "$work/cuda_compat/compat"
cp -L "$libdir/$cudart" "$work/lib.orig-cudart"
# The copies are named as their packages install them: libcuda.so.1 -> libcuda.so.<version>.
driver_real=$(readlink -f "$driver_src")
cp "$driver_real" "$work/driver/"
ln -s "$(basename "$driver_real")" "$work/driver/libcuda.so.1"
cp -a "$compat_src/." "$work/cuda_compat/compat/"
compat_real=$(readlink -f "$work/cuda_compat/compat/libcuda.so.1")

kernel=$(grep -m1 -o '[0-9]\{3,\}\.[0-9]\{1,3\}\(\.[0-9]\{1,3\}\)\?' /proc/driver/nvidia/version 2>/dev/null || echo none)
gpu=$(nvidia-smi -L 2>/dev/null | head -n1 || echo unknown)
cat <<EOF >"$result"
# runpatch GPU validation

- date: $(date -u +%Y-%m-%dT%H:%MZ); GPU: $gpu; kernel driver: $kernel
- driver libcuda copy: $work/driver/$(basename "$driver_real")
- compat libcuda copy: $work/cuda_compat/compat/$(basename "$compat_real")
- host LD_LIBRARY_PATH (unset except where a case sets it): ${host_llp:-<empty>}
- runpatch: $("$runpatch" --version)

| case | runpath of saxpy | runpath of libcudart | libcuda mapped | cudaFree(0) | SAXPY | doctor predicts | doctor verdict | prediction right |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
EOF

# Fresh copies, every runpath stripped; saxpy finds libcudart through $work/lib only.
reset() {
  cp "$work/saxpy.orig" "$work/saxpy"
  cp "$work/lib.orig-cudart" "$work/lib/$cudart"
  "$runpatch" set --remove-runpath "$work/lib/$cudart" >/dev/null
  "$runpatch" set --runpath "$work/lib" "$work/saxpy" >/dev/null
}

runpath_of() { "$runpatch" print --json "$1" | grep -o '"runpath": *"[^"]*"' | sed 's/.*: *"//; s/"$//' || true; }

# run_case NAME [LD_LIBRARY_PATH]: run the program and doctor in the same environment.
run_case() {
  local name=$1 llp=${2:-} out doctor loaded status saxpy predicted verdict right worked said_ok
  # LD_DEBUG=libs also tells which libcuda the loader initialized, should
  # the runtime have unloaded it again after a failed cuInit.
  rm -f "$work"/lddebug.*
  local env=(env -u LD_LIBRARY_PATH)
  [[ -n $llp ]] && env=(env LD_LIBRARY_PATH="$llp")
  out=$("${env[@]}" LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/lddebug" "$work/saxpy" 2>&1 || true)
  doctor=$("${env[@]}" "$runpatch" doctor "$work/saxpy" 2>&1 || true)
  loaded=$(sed -n 's/^libcuda=//p' <<<"$out" | head -n1)
  if [[ -z $loaded || $loaded == none ]]; then
    loaded=$(grep -ho 'calling init: [^ ]*/libcuda[.]so[^ ]*' "$work"/lddebug.* 2>/dev/null | head -n1 | sed 's/calling init: //' || true)
    [[ -n $loaded ]] && loaded="$loaded (LD_DEBUG)"
  fi
  status=$(sed -n 's/^cuda_status=//p' <<<"$out" | head -n1)
  saxpy=$(sed -n 's/^saxpy=\(not run\|[a-z]*\).*/\1/p' <<<"$out" | head -n1)
  predicted=$(awk '$1 == "loads" { print $2; exit }' <<<"$doctor")
  verdict=$(awk '$1 == "verdict" { sub(":", "", $2); print $2; exit }' <<<"$doctor")
  # Right when doctor names the file the process mapped, and says ok exactly when CUDA worked.
  right=no
  if [[ -n $predicted && $(readlink -f "$predicted") == "$(readlink -f "${loaded%% (LD_DEBUG)}")" ]]; then
    worked=no said_ok=no
    [[ $status == 0* ]] && worked=yes
    [[ $verdict == ok ]] && said_ok=yes
    [[ $worked == "$said_ok" ]] && right=yes
  fi
  printf '| %s | `%s` | `%s` | `%s` | %s | %s | `%s` | %s | %s |\n' "$name" "$(runpath_of "$work/saxpy")" \
    "$(runpath_of "$work/lib/$cudart")" "${loaded:-?}" "${status:-?}" "${saxpy:-?}" "${predicted:-none}" \
    "${verdict:-?}" "$right" >>"$result"
  printf '\n<details><summary>%s: program and doctor output</summary>\n\n```\n%s\n%s\n```\n</details>\n\n' \
    "$name" "$out" "$doctor" >>"$details"
}

driver=(--driver-dir "$work/driver")
compat=(--libcuda "$work/cuda_compat/compat" --driver-dir "$work/driver")

reset
"$runpatch" driver "${driver[@]}" "$work/saxpy" "$work/lib" >/dev/null
run_case "1. driver policy only"

reset
"$runpatch" driver "${driver[@]}" "$work/saxpy" "$work/lib" >/dev/null
"$runpatch" compat "${compat[@]}" "$work/saxpy" "$work/lib" >/dev/null
driver_then_compat=$(runpath_of "$work/lib/$cudart")
run_case "2a. driver hook, then compat hook"

reset
"$runpatch" compat "${compat[@]}" "$work/saxpy" "$work/lib" >/dev/null
"$runpatch" driver "${driver[@]}" "$work/saxpy" "$work/lib" >/dev/null
compat_then_driver=$(runpath_of "$work/lib/$cudart")
run_case "2b. compat hook, then driver hook"
same=$([[ $driver_then_compat == "$compat_then_driver" ]] && echo identical || echo DIFFERENT)

run_case "2c. as 2b, with the host's LD_LIBRARY_PATH" "$host_llp"

reset
run_case "3. no runpatch (runpaths stripped)"

reset
"$runpatch" driver "${driver[@]}" "$work/saxpy" >/dev/null
run_case "4a. only the program patched"

reset
"$runpatch" driver "${driver[@]}" "$work/lib" >/dev/null
run_case "4b. only libcudart patched"

{
  echo
  echo "Runpath of libcudart after the hooks in both orders: $same (\`$driver_then_compat\`)."
  echo
  cat "$details"
} >>"$result"
echo "work dir: $work" >&2
