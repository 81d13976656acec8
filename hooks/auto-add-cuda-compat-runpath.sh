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
  local libcudaDir="${cudaCompatLibcudaDir:-@libcudaPath@}"
  # Sourced without substitution and without cudaCompatLibcudaDir: a
  # placeholder is never a runpath entry (runpatch compat refuses it too).
  case "$libcudaDir" in
    "" | *@*@*)
      echo "addCudaCompatRunpath: cudaCompatLibcudaDir is unset and @libcudaPath@ was not substituted" >&2
      return 1
      ;;
  esac
  # With the driver hook in the same fixup, this edit puts the driver
  # directory behind compat too: the runpath is then final after whichever
  # hook runs first, the other's edit changes nothing, and the bytes are
  # those of one edit in either hook order.
  local withDriver=
  case " ${postFixupHooks[*]} " in
    *" addDriverRunpath "*) withDriver=--with-driver ;;
  esac
  # --in-place: as in add-driver-runpath.sh, a failed build discards its outputs.
  "${RUNPATCH:-runpatch}" compat --in-place --libcuda "$libcudaDir" \
    --driver-dir "${driverLink:-/run/opengl-driver}/lib" $withDriver \
    ${NIX_BUILD_TOP:+--forbid "$NIX_BUILD_TOP/"} -- "$@"
}

postFixupHooks+=("autoFixElfFiles addCudaCompatRunpath")
