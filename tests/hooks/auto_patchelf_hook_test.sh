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

# The newer setup hook's registration (its autoPatchelfSearchPaths array): each
# addAutoPatchelfSearchPath [--no-recurse] [--] PATH... appends MODE PATH pairs
# (recursive, or shallow with --no-recurse; no PATH means "."; an empty PATH is
# skipped with a warning), in registration order.
autoPatchelfSearchPaths=()
addAutoPatchelfSearchPath() {
  local mode=recursive path
  while [ $# -gt 0 ]; do
    case "$1" in
      --) shift; break ;;
      --no-recurse) shift; mode=shallow ;;
      *) break ;;
    esac
  done
  [ $# -gt 0 ] || set -- .
  for path in "$@"; do
    if [ -z "$path" ]; then echo "addAutoPatchelfSearchPath: WARNING: ignoring empty search path" >&2; continue; fi
    autoPatchelfSearchPaths+=("$mode" "$path")
  done
}

# The hook's autoPatchelf: the same words, in the same order, as Nixpkgs' setup hook passes them
# (the newer hook adds one --search-path MODE PATH per registration right after --libs' values;
# with none registered the line is the older hook's).
autoPatchelf() {
  local norecurse=
  while [ $# -gt 0 ]; do
    case "$1" in
      --) shift; break ;;
      --no-recurse) shift; norecurse=1 ;;
      *) break ;;
    esac
  done
  local -a searchPathArgs=()
  local i
  for ((i = 0; i < ${#autoPatchelfSearchPaths[@]}; i += 2)); do
    searchPathArgs+=(--search-path "${autoPatchelfSearchPaths[i]}" "${autoPatchelfSearchPaths[i + 1]}")
  done
  "$auto_patchelf" ${norecurse:+--no-recurse} \
    --ignore-missing "${autoPatchelfIgnoreMissingDeps[@]}" \
    --paths "$@" \
    --libs "${autoPatchelfLibs[@]}" \
    "${searchPathArgs[@]}" \
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

osabi_of() { readelf -h "$1" | sed -n 's/^ *OS\/ABI: *//p'; }
none() { autoPatchelfIgnoreMissingDeps=() autoPatchelfLibs=() runtimeDependencies=() appendRunpaths=() autoPatchelfFlags=() patchelfFlags=(); }

# One pass (hooks/auto-patchelf-cuda-hook.sh) against the chain it replaces:
# autoPatchelf, then addDriverRunpath, then addCudaCompatRunpath over the
# same outputs, in a build. Every file byte for byte the same, and the hook
# takes the two later passes off postFixupHooks.
hooks=$(cd "$(dirname "$0")/../../hooks" && pwd)
runpatch=$(dirname "$auto_patchelf")/runpatch
one_pass_or_chain() {  # ROOT MODE: MODE chain or one-pass; prints the sha256 of every output file
  local root=$1 mode=$2
  make_package "$root"
  mkdir -p "$root/compat" "$root/build"
  cp "$fixtures/cuda-pkg/compat/libcuda.so.1" "$root/compat/"
  # As a build links it: an entry under the build directory first.
  "$runpatch" set --runpath "$root/build/lib:/opt/old" "$root/lib/lib/libgreet.so" >/dev/null
  (
    export NIX_BINTOOLS=$root/bintools NIX_BUILD_TOP=$root/build RUNPATCH=$runpatch
    out=$root/out lib=$root/lib driverLink=$root/driver cudaCompatLibcudaDir=$root/compat
    getAllOutputNames() { echo out lib; }
    none
    preFixupHooks=() postFixupHooks=("autoPatchelf -- $out $lib")
    source "$hooks/auto-fix-elf-files.sh"
    source "$hooks/add-driver-runpath.sh"
    source "$hooks/auto-add-driver-runpath-hook.sh"
    source "$hooks/auto-add-cuda-compat-runpath.sh"
    [[ $mode == one-pass ]] && source "$hooks/auto-patchelf-cuda-hook.sh"
    for h in "${preFixupHooks[@]}"; do eval "$h" || exit 1; done
    [[ $mode == chain || ${#postFixupHooks[@]} == 1 ]] || { echo "the two passes are still registered"; exit 1; }
    for h in "${postFixupHooks[@]}"; do eval "$h" || exit 1; done
  ) >"$root/log" 2>&1 || { echo "failed: $(tail -3 "$root/log")"; return; }
  (cd "$root" && find out lib -type f -exec sha256sum {} + | sort)
  echo "prog: $(runpath_of "$root/out/bin/prog")"
  echo "lib: $(runpath_of "$root/lib/lib/libgreet.so")"
}
chain=$(one_pass_or_chain "$scratch/one-pass-equal" chain)
one_pass=$(one_pass_or_chain "$scratch/one-pass-equal" one-pass)
expect_eq "one pass: the chain's runpaths and bytes" "$one_pass" "$chain"
expect_eq "one pass: compat, driver, then what auto-patchelf resolved" "$(grep '^prog:' <<<"$one_pass")" \
  "prog: $scratch/one-pass-equal/compat:$scratch/one-pass-equal/driver/lib:$scratch/one-pass-equal/lib/lib"
expect_eq "one pass: a library auto-patchelf resolves nothing for keeps its own entries, the build's dropped" \
  "$(grep '^lib:' <<<"$one_pass")" "lib: $scratch/one-pass-equal/compat:$scratch/one-pass-equal/driver/lib:/opt/old"
expect_eq "one pass: the program runs" "$("$scratch/one-pass-equal/out/bin/prog")" "hello from lib"


# patchelfFlags' header edits reach the files the script runs patchelf on, and only those.
root=$scratch/patchelf-flags
make_package "$root"
rc=$(none; patchelfFlags=(--set-os-abi Linux --set-execstack); run_hook "$root")
expect_eq "patchelfFlags header edits: exit status" "$rc" 0
expect_eq "patchelfFlags --set-os-abi: the edited program" "$(osabi_of "$root/out/bin/prog")" "UNIX - GNU"
expect_eq "patchelfFlags --set-execstack: the edited program" \
  "$(readelf -lW "$root/out/bin/prog" | awk '/GNU_STACK/ { print $7 }')" "RWE"
expect_eq "patchelfFlags: the library the script leaves alone" "$(osabi_of "$root/lib/lib/libgreet.so")" "UNIX - System V"

# addAutoPatchelfSearchPath: recursive by default, shallow with --no-recurse, first registration wins.
search_package() {  # ROOT: libgreet only in ROOT/vendor/sub and ROOT/flat
  make_package "$1"
  mkdir -p "$1/vendor/sub" "$1/flat"
  cp "$1/lib/lib/libgreet.so" "$1/vendor/sub/"
  mv "$1/lib/lib/libgreet.so" "$1/flat/"
}
root=$scratch/search-recursive
search_package "$root"
rc=$(none; autoPatchelfSearchPaths=(); addAutoPatchelfSearchPath "$root/vendor"; run_hook "$root")
expect_eq "search path, recursive: exit status" "$rc" 0
expect_eq "search path, recursive: found below the root" "$(runpath_of "$root/out/bin/prog")" "$root/vendor/sub"

root=$scratch/search-shallow
search_package "$root"
rc=$(none; autoPatchelfSearchPaths=(); addAutoPatchelfSearchPath --no-recurse "$root/vendor"; run_hook "$root")
expect_eq "search path, --no-recurse: not found below the root, the build fails" "$rc" 1
expect_eq "search path, --no-recurse: error line" "$(grep '^error:' "$root/log")" \
  "error: auto-patchelf could not satisfy dependency libgreet.so wanted by $root/out/bin/prog"

root=$scratch/search-order
search_package "$root"
rc=$(none; autoPatchelfSearchPaths=(); addAutoPatchelfSearchPath --no-recurse "$root/flat"
  addAutoPatchelfSearchPath -- "$root/vendor"; run_hook "$root")
expect_eq "search paths: exit status" "$rc" 0
expect_eq "search paths: the first registration wins" "$(runpath_of "$root/out/bin/prog")" "$root/flat"

root=$scratch/search-empty
search_package "$root"
rc=$(none; autoPatchelfSearchPaths=(); addAutoPatchelfSearchPath "" "$root/flat" 2>"$root/warn"; run_hook "$root")
expect_eq "search paths: an empty path is skipped" "$rc" 0
expect_eq "search paths: the warning" "$(cat "$root/warn")" "addAutoPatchelfSearchPath: WARNING: ignoring empty search path"

echo "auto-patchelf hook: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
