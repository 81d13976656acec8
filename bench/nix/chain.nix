# A package that carries the real CUDA libraries (a copy of CUDA_ROOT/lib in
# its $lib output), built by nix-build and fixed up the way each side's hooks
# would fix it up: bench/nix_chain.sh times the fixup inside the build.
#   side = "ours":     runpatch's auto-patchelf, then the driver and compat hooks (hooks/)
#   side = "one-pass": hooks/auto-patchelf-cuda-hook.sh (the three in one write per file)
#   side = "theirs":   the pyelftools script with a patchelf per edit, then a
#                      patchelf --print-rpath/--set-rpath loop per hook
# runId makes every run a new derivation, so every output is fresh.
{ runpatch, hooks, benchDir, cudaLib, side, runId }:
derivation {
  name = "runpatch-bench-cuda-${side}";
  system = builtins.currentSystem;
  builder = "/bin/bash";
  outputs = [ "out" "lib" ];
  args = [ ./chain-builder.sh ];
  inherit runpatch hooks benchDir cudaLib side runId;
}
