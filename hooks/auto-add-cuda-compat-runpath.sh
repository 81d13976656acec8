# shellcheck shell=bash
# Drop-in for Nixpkgs' autoAddCudaCompatRunpath: puts cuda_compat's libcuda
# directory first in every runpath. Unlike the original, the result does not
# depend on hook order: runpatch keeps compat ahead of the driver directory
# whichever hook runs first.
#
# Entries under the build directory ($NIX_BUILD_TOP) are dropped, as audit-tmpdir demands.
# Variables: cudaCompatLibcudaDir (Nixpkgs substitutes @libcudaPath@, i.e.
# ${cuda_compat}/compat), RUNPATCH (the runpatch binary).
echo "Sourcing auto-add-cuda-compat-runpath-hook"

addCudaCompatRunpath() {
  [ $# -gt 0 ] || return 0
  # --in-place: as in add-driver-runpath.sh, a failed build discards its outputs.
  "${RUNPATCH:-runpatch}" compat --in-place --libcuda "${cudaCompatLibcudaDir:-@libcudaPath@}" \
    --driver-dir "${driverLink:-/run/opengl-driver}/lib" \
    ${NIX_BUILD_TOP:+--forbid "$NIX_BUILD_TOP/"} -- "$@"
}

postFixupHooks+=("autoFixElfFiles addCudaCompatRunpath")
