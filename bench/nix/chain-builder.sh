# Builder of bench/nix/chain.nix: install the CUDA libraries, then time the
# fixup (postFixupHooks as Nixpkgs' fixupPhase runs them). Each step's time
# goes to the build log as "bench-step NAME MS", which bench/nix_chain.sh reads.
set -euo pipefail
export PATH=/usr/bin:/bin
now_ms() { echo $(($(date +%s%N) / 1000000)); }
step() {  # NAME CMD...: run CMD, log its wall time
  local name=$1 t0; shift
  t0=$(now_ms)
  "$@"
  echo "bench-step $name $(($(now_ms) - t0))"
}
install_phase() {
  mkdir -p "$out/nix-support" "$lib"
  cp -a "$cudaLib/." "$lib/lib"
  echo "$lib" >"$out/nix-support/propagated-libs"
}
step install install_phase

getAllOutputNames() { echo out lib; }
postFixupHooks=()
export RUNPATCH=$runpatch
driverLink=/run/opengl-driver
cudaCompatLibcudaDir=/nix/store/00000000000000000000000000000000-cuda_compat-13.0/compat
compat=$cudaCompatLibcudaDir
run_hooks() { local hook; for hook in "${postFixupHooks[@]}"; do eval "$hook"; done; }
ours_auto_patchelf() {  # autoPatchelfHook's command line, as its setup hook passes it
  "$(dirname "$runpatch")/auto-patchelf" --ignore-missing '*' --paths "$out" "$lib" --libs "$lib/lib" \
    --runtime-dependencies --append-rpaths "${autoPatchelfFlags[@]}" --extra-args >/dev/null
}
prepend_each() {  # ENTRY: Nixpkgs' hooks: autoFixElfFiles + patchelf per file
  find "$out" "$lib" -type f -print0 | while IFS= read -r -d '' f; do
    [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == '177ELF' ]] || continue
    old=$(patchelf --print-rpath "$f" 2>/dev/null) || continue
    patchelf --set-rpath "$1${old:+:$old}" "$f"
  done
}
autoPatchelfFlags=()
case "$side" in
  ours)
    source "$hooks/auto-fix-elf-files.sh"
    source "$hooks/add-driver-runpath.sh"
    source "$hooks/auto-add-driver-runpath-hook.sh"
    source "$hooks/auto-add-cuda-compat-runpath.sh"
    step auto-patchelf ours_auto_patchelf
    hooks_left=("${postFixupHooks[@]}")
    postFixupHooks=("${hooks_left[0]}"); step driver run_hooks
    postFixupHooks=("${hooks_left[1]}"); step compat run_hooks
    ;;
  one-pass)
    source "$hooks/auto-fix-elf-files.sh"
    source "$hooks/add-driver-runpath.sh"
    source "$hooks/auto-add-driver-runpath-hook.sh"
    source "$hooks/auto-add-cuda-compat-runpath.sh"
    source "$hooks/auto-patchelf-cuda-hook.sh"
    autoPatchelfCudaLayers
    step auto-patchelf ours_auto_patchelf
    step other-hooks run_hooks  # none left: the two layers went into auto-patchelf
    ;;
  theirs)
    step auto-patchelf python3 "$benchDir/auto_patchelf_reference.py" /lib64/ld-linux-x86-64.so.2 "$out" "$lib"
    step driver prepend_each "$driverLink/lib"
    step compat prepend_each "$compat"
    ;;
  *) echo "unknown side '$side'" >&2; exit 2 ;;
esac
