# shellcheck shell=bash
# Drop-in for Nixpkgs' addDriverRunpath (build-support/add-driver-runpath).
# Prepends the driver directory to the runpath of the given ELF files or
# trees — once (running it twice changes nothing), behind any cuda_compat
# directory, in one runpatch process. Non-ELF and static files are skipped.
#
# Entries under the build directory ($NIX_BUILD_TOP) are dropped, as audit-tmpdir demands.
# Variables: driverLink (default /run/opengl-driver), RUNPATCH (the runpatch binary).

addDriverRunpath() {
  local forceRpath=
  while [ $# -gt 0 ]; do
    case "$1" in
      --) shift; break ;;
      --force-rpath) shift; forceRpath=1 ;;
      --*) echo "addDriverRunpath: ERROR: Invalid command line argument: $1" >&2; return 1 ;;
      *) break ;;
    esac
  done
  [ $# -gt 0 ] || return 0
  # --in-place: a failed build discards its outputs, so the atomic copy would
  # buy nothing here and cost a copy of every (300 MB) library.
  "${RUNPATCH:-runpatch}" driver --in-place ${forceRpath:+--force-rpath} --driver-dir "${driverLink:-/run/opengl-driver}/lib" \
    ${NIX_BUILD_TOP:+--forbid "$NIX_BUILD_TOP/"} -- "$@"
}

# The name before Nixpkgs' 2024 rename (addOpenGLRunpath, with its variable
# addOpenGLRunpath.driverLink spelled driverLink here too): packages that still
# call it get the hook, with a deprecation warning naming the new one.
addOpenGLRunpath() {
  echo "addOpenGLRunpath: warning: addOpenGLRunpath is deprecated (renamed in Nixpkgs in 2024); use addDriverRunpath" >&2
  addDriverRunpath "$@"
}
