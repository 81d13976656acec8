# shellcheck shell=bash
# Drop-in for Nixpkgs' autoAddCudaCompatRunpath: puts cuda_compat's libcuda
# directory first in every runpath. Unlike the original, the result does not
# depend on hook order: runpatch keeps compat ahead of the driver directory
# whichever hook runs first.
#
# Variables: cudaCompatLibcudaDir (Nixpkgs substitutes @libcudaPath@, i.e.
# ${cuda_compat}/compat), RUNPATCH (the runpatch binary).
echo "Sourcing auto-add-cuda-compat-runpath-hook"

addCudaCompatRunpath() {
  [ $# -gt 0 ] || return 0
  "${RUNPATCH:-runpatch}" compat --libcuda "${cudaCompatLibcudaDir:-@libcudaPath@}" \
    --driver-dir "${driverLink:-/run/opengl-driver}/lib" -- "$@"
}

postFixupHooks+=("autoFixElfFiles addCudaCompatRunpath")
