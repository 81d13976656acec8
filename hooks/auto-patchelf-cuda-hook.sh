# shellcheck shell=bash
# autoPatchelfCudaHook: one pass for a CUDA package that uses autoPatchelfHook,
# autoAddDriverRunpath and autoAddCudaCompatRunpath together. It replaces the
# last two: at fixup it gives auto-patchelf (runpatch's, under the unchanged
# autoPatchelfHook) the driver and cuda_compat directories as its own options
# (--driver-dir, --libcuda, --forbid "$NIX_BUILD_TOP/"), so each file is
# resolved and given its final runpath in one write, and takes the two hooks'
# own passes off postFixupHooks. The runpaths are the chain's; so are the
# bytes (docs/policies.md, "One pass").
# Variables: driverLink (default /run/opengl-driver), cudaCompatLibcudaDir
# (Nixpkgs' @libcudaPath@; unset: no compat layer).
echo "Sourcing auto-patchelf-cuda-hook"

autoPatchelfCudaLayers() {
  local libcudaDir="${cudaCompatLibcudaDir:-}" kept=() hook
  case "$libcudaDir" in
    *@*@*)
      echo "autoPatchelfCudaLayers: cudaCompatLibcudaDir holds an unsubstituted placeholder: $libcudaDir" >&2
      return 1
      ;;
  esac
  for hook in "${postFixupHooks[@]}"; do
    case "$hook" in
      "autoFixElfFiles addDriverRunpath" | "autoFixElfFiles addCudaCompatRunpath") ;;
      *) kept+=("$hook") ;;
    esac
  done
  postFixupHooks=("${kept[@]}")
  autoPatchelfFlags+=(--driver-dir "${driverLink:-/run/opengl-driver}/lib")
  [ -z "$libcudaDir" ] || autoPatchelfFlags+=(--libcuda "$libcudaDir")
  [ -z "${NIX_BUILD_TOP:-}" ] || autoPatchelfFlags+=(--forbid "$NIX_BUILD_TOP/")
}

preFixupHooks+=(autoPatchelfCudaLayers)
