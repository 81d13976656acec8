# A split CUDA-like package: bin/cuda-prog in $out, libcudart.so.13 in $lib,
# headers-free $dev with the link-time stub and the development symlink. Built
# in $NIX_BUILD_TOP/build as a real build is (its directory in the runpaths the
# linker writes), then fixed up by the project's hooks in the order the file
# $hookOrderFile names.
set -euo pipefail
export PATH=/usr/bin:/bin
src=$fixtureSources
mkdir -p "$NIX_BUILD_TOP/build/lib/stubs" && cd "$NIX_BUILD_TOP/build"
gcc -O2 -fPIC -shared -Wl,-soname,libcuda.so.1 -DLIBCUDA_ORIGIN='"stub"' -o lib/stubs/libcuda.so "$src/fake_libcuda.c"
gcc -O2 -fPIC -shared -Wl,-soname,libcudart.so.13 -Wl,--enable-new-dtags,-rpath,"$NIX_BUILD_TOP/build/lib/stubs" \
  -o lib/libcudart.so.13 "$src/fake_cudart.c" -ldl
runpath="$NIX_BUILD_TOP/build/lib:$lib/lib"
extra=()
case "$variant" in
  auto-patchelf) runpath= ;;  # no runpath: autoPatchelfHook's replacement finds libcudart in $lib
  dev-runpath) runpath="$runpath:$dev/lib" ;;  # a build-time output in the runtime runpath
  build-only)  # a library built here and never installed
    gcc -O2 -fPIC -shared -Wl,-soname,libgreet.so -o lib/libgreet.so "$src/greet.c"
    extra=(-Wl,--no-as-needed lib/libgreet.so) ;;
esac
gcc -O2 -Wl,--enable-new-dtags${runpath:+,-rpath,"$runpath"} -o cuda-prog "$src/cuda_prog.c" lib/libcudart.so.13 "${extra[@]}"
install -D -m755 cuda-prog "$out/bin/cuda-prog"
install -D -m755 lib/libcudart.so.13 "$lib/lib/libcudart.so.13"
install -D -m644 lib/stubs/libcuda.so "$dev/lib/stubs/libcuda.so"
ln -s "$lib/lib/libcudart.so.13" "$dev/lib/libcudart.so"

# ---- fixupPhase: postFixupHooks, as Nixpkgs runs them --------------------
hookOrder=$(cat "$hookOrderFile")
echo "hook order: $hookOrder"
getAllOutputNames() { echo out lib dev; }
postFixupHooks=()
export RUNPATCH=$runpatch
driverLink=/run/opengl-driver
[ "$variant" = compat-unset ] || cudaCompatLibcudaDir=$cudaCompat/compat
source "$hooks/auto-fix-elf-files.sh"
source "$hooks/add-driver-runpath.sh"
driver_hook=auto-add-driver-runpath-hook.sh
[ "$variant" = old-names ] && driver_hook=auto-add-opengl-runpath-hook.sh
case "$hookOrder" in
  driver-first*) source "$hooks/$driver_hook"; source "$hooks/auto-add-cuda-compat-runpath.sh" ;;
  compat-first*) source "$hooks/auto-add-cuda-compat-runpath.sh"; source "$hooks/$driver_hook" ;;
  *) echo "unknown hook order '$hookOrder'" >&2; exit 2 ;;
esac
if [ "$variant" = auto-patchelf ]; then
  # autoPatchelfHook runs in postFixup too, registered before these hooks:
  # its command line as the setup hook passes it (libc is the bintools').
  "$(dirname "$runpatch")/auto-patchelf" --ignore-missing libc.so.6 --paths "$out" "$lib" "$dev" \
    --libs "$lib/lib" --runtime-dependencies --append-rpaths --extra-args
fi
for hook in "${postFixupHooks[@]}"; do eval "$hook"; done
if [ "$variant" = old-names ]; then addOpenGLRunpath "$lib/lib/libcudart.so.13"; fi
# The control for `nix-build --check`: one byte of a hook's output changed
# (in the ELF header's padding, harmless) must make the check fail.
case "$hookOrder" in
  *+one-byte) printf '\x01' | dd of="$out/bin/cuda-prog" bs=1 seek=9 conv=notrunc status=none ;;
esac
