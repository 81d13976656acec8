# A CUDA-like package built by Nix itself (no Nixpkgs: raw derivations), its
# fixup running the project's hooks/ as Nixpkgs' fixupPhase runs
# postFixupHooks. Built by tests/nix/nix_build_test.sh; the C sources are the
# fixtures' (fixtures/src), compiled by the host's gcc (bind-mounted into the
# sandbox with runpatch and the hooks, which are passed as plain strings: the
# test deletes its outputs before each run, and runpatchId rebuilds on change).
{ runpatch, hooks, fixtureSources, stateDir, runpatchId
, variant ? "split"   # split | auto-patchelf | dev-runpath | build-only | compat-unset | old-names
}:
let
  mk = attrs: derivation ({ system = builtins.currentSystem; builder = "/bin/bash"; } // attrs);
  libcuda = which: dir: mk {
    name = "runpatch-test-libcuda-${which}";
    args = [ ./libcuda-builder.sh ];
    inherit which dir fixtureSources;
  };
  cuda_compat = libcuda "compat" "compat";
  driver = libcuda "driver" "lib";
in {
  inherit cuda_compat driver;
  package = mk {
    name = "runpatch-test-cuda-pkg-${variant}";
    outputs = [ "out" "lib" "dev" ];
    args = [ ./package-builder.sh ];
    # The hook order is read at build time from a file outside the store, so
    # that it is not part of the derivation: `nix-build --check` rebuilds with
    # the other order and compares the outputs.
    hookOrderFile = "${stateDir}/hook-order";
    inherit variant runpatch hooks fixtureSources runpatchId;
    cudaCompat = cuda_compat;
    driverStub = driver;
  };
}
