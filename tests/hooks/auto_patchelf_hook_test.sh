#!/usr/bin/env bash
# autoPatchelfHook's call, with the hook's argument layout (every option passed,
# arrays possibly empty, autoPatchelfFlags after --append-rpaths, patchelfFlags
# after --extra-args), against the `auto-patchelf` entry point, in a stdenv-like
# harness (outputs out and lib, NIX_BINTOOLS giving the loader and libc).
# Usage: auto_patchelf_hook_test.sh AUTO_PATCHELF FIXTURES_DIR SCRATCH_DIR
set -euo pipefail
auto_patchelf=$1 fixtures=$2/x86_64 scratch=$3
passed=0 failed=0
expect_eq() {  # what actual expected
  if [[ "$2" == "$3" ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $1"; echo "  actual:   $2"; echo "  expected: $3"; fi
}
runpath_of() { readelf -d "$1" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p'; }

# The hook's autoPatchelf: the same words, in the same order, as Nixpkgs' setup hook passes them.
autoPatchelf() {
  local norecurse=
  while [ $# -gt 0 ]; do
    case "$1" in
      --) shift; break ;;
      --no-recurse) shift; norecurse=1 ;;
      *) break ;;
    esac
  done
  "$auto_patchelf" ${norecurse:+--no-recurse} \
    --ignore-missing "${autoPatchelfIgnoreMissingDeps[@]}" \
    --paths "$@" \
    --libs "${autoPatchelfLibs[@]}" \
    --runtime-dependencies "${runtimeDependencies[@]/%//lib}" \
    --append-rpaths "${appendRunpaths[@]}" \
    "${autoPatchelfFlags[@]}" \
    --extra-args "${patchelfFlags[@]}"
}

make_package() {  # ROOT: outputs out (bin/prog) and lib (lib/libgreet.so), a libc, bintools
  local root=$1
  rm -rf "$root" && mkdir -p "$root/out/bin" "$root/lib/lib" "$root/libc/lib" "$root/bintools/nix-support" "$root/deps"
  cp "$fixtures/prog-norunpath" "$root/out/bin/prog"
  cp "$fixtures/lib/libgreet.so" "$root/lib/lib/"
  cp "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)" "$root/libc/lib/libc.so.6"
  echo /lib64/ld-linux-x86-64.so.2 >"$root/bintools/nix-support/dynamic-linker"
  echo "$root/libc" >"$root/bintools/nix-support/orig-libc"
}

# run_hook ROOT: postFixup's call over every output; prints the exit status.
run_hook() {
  local root=$1
  (
    export NIX_BINTOOLS=$root/bintools
    out=$root/out lib=$root/lib
    autoPatchelf -- "$out" "$lib" >"$root/log" 2>&1
  ) && echo 0 || echo $?
}

root=$scratch/empty-arrays
make_package "$root"
rc=$(autoPatchelfIgnoreMissingDeps=(); autoPatchelfLibs=(); runtimeDependencies=(); appendRunpaths=(); autoPatchelfFlags=(); patchelfFlags=(); run_hook "$root")
expect_eq "empty arrays: exit status" "$rc" 0
expect_eq "empty arrays: program runpath" "$(runpath_of "$root/out/bin/prog")" "$root/lib/lib"
expect_eq "empty arrays: no option name in any runpath" "$(grep -c -- '--' <(runpath_of "$root/out/bin/prog"; runpath_of "$root/lib/lib/libgreet.so") || true)" 0
expect_eq "empty arrays: the program runs" "$("$root/out/bin/prog")" "hello from lib"
expect_eq "empty arrays: log lines" "$(grep -v "^[{ ]'" "$root/log" | grep -v '^ ')" "automatically fixing dependencies for ELF files
setting interpreter of $root/out/bin/prog
searching for dependencies of $root/out/bin/prog
setting RPATH to: $root/lib/lib
searching for dependencies of $root/lib/lib/libgreet.so
auto-patchelf: 0 dependencies could not be satisfied"

root=$scratch/filled-arrays
make_package "$root"
mv "$root/lib/lib/libgreet.so" "$root/deps/"
mkdir -p "$root/rt/lib"
rc=$(autoPatchelfIgnoreMissingDeps=(libz.so.1); autoPatchelfLibs=("$root/deps"); runtimeDependencies=("$root/rt"); appendRunpaths=(/opt/extra); autoPatchelfFlags=(); patchelfFlags=(--force-rpath); run_hook "$root")
expect_eq "filled arrays: exit status" "$rc" 0
expect_eq "filled arrays: --force-rpath from patchelfFlags writes DT_RPATH" \
  "$(readelf -d "$root/out/bin/prog" | sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p')" "$root/rt/lib:$root/deps:/opt/extra"

root=$scratch/missing
make_package "$root"
rm "$root/lib/lib/libgreet.so"
rc=$(autoPatchelfIgnoreMissingDeps=(); autoPatchelfLibs=(); runtimeDependencies=(); appendRunpaths=(); autoPatchelfFlags=(); patchelfFlags=(); run_hook "$root")
expect_eq "missing library, nothing ignored: the build fails" "$rc" 1
expect_eq "missing library: error line" "$(grep '^error:' "$root/log")" \
  "error: auto-patchelf could not satisfy dependency libgreet.so wanted by $root/out/bin/prog"

root=$scratch/flags-ignore
make_package "$root"
rm "$root/lib/lib/libgreet.so"
rc=$(autoPatchelfIgnoreMissingDeps=(libz.so.1); autoPatchelfLibs=(); runtimeDependencies=(); appendRunpaths=(); autoPatchelfFlags=(--ignore-missing=libgreet.so); patchelfFlags=(); run_hook "$root")
expect_eq "autoPatchelfFlags' --ignore-missing= replaces the hook's list" "$rc" 0
expect_eq "autoPatchelfFlags: warn line" "$(grep '^warn:' "$root/log")" \
  "warn: auto-patchelf ignoring missing libgreet.so wanted by $root/out/bin/prog"

root=$scratch/no-outputs
make_package "$root"
rc=$( (export NIX_BINTOOLS=$root/bintools; autoPatchelfIgnoreMissingDeps=(); autoPatchelfLibs=(); runtimeDependencies=()
  appendRunpaths=(); autoPatchelfFlags=(); patchelfFlags=(); autoPatchelf -- >"$root/log" 2>&1) && echo 0 || echo $?)
expect_eq "no outputs: the script's exit status" "$rc" 1
expect_eq "no outputs: its message" "$(tail -1 "$root/log")" "No paths to patch, stopping."

echo "auto-patchelf hook: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
