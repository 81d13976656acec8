# A Nixpkgs-style derivation for runpatch itself.
# Use: pkgs.callPackage ./nix/package.nix { }
{
  lib,
  stdenv,
  cmake,
  lld,
  pkg-config,
  help2man,
  cli11,
  fmt,
  nlohmann_json,
  gtest,
}:

stdenv.mkDerivation (finalAttrs: {
  pname = "runpatch";
  version = "0.1.0";

  src = lib.cleanSource ../.;

  nativeBuildInputs = [
    cmake
    lld # links the tools' start-up code in order (cmake/startup_order.cmake)
    pkg-config
    help2man
  ];
  buildInputs = [
    cli11
    fmt
    nlohmann_json
  ];
  # The test suite builds cross fixtures and runs qemu-user; Nix builds use the
  # library tests only.
  cmakeFlags = [ (lib.cmakeBool "RUNPATCH_BUILD_TESTS" false) ];

  # The hooks call runpatch by this variable; point it at this output.
  postInstall = ''
    for hook in $out/share/runpatch/hooks/*.sh; do
      substituteInPlace "$hook" --replace-quiet '${"$"}{RUNPATCH:-runpatch}' "$out/bin/runpatch"
    done
  '';

  meta = {
    description = "Read and rewrite the runpaths of ELF files: driver/cuda_compat policies, auto-patchelf, checks";
    license = lib.licenses.mit;
    platforms = lib.platforms.linux;
    mainProgram = "runpatch";
  };
})
