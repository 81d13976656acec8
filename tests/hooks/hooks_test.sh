#!/usr/bin/env bash
# Sources the hooks/ files in a minimal stdenv-like harness (getAllOutputNames,
# postFixupHooks run as stdenv's fixup phase would) over the CUDA-like fixture
# package with split outputs, then checks runpaths and runs the program.
# Usage: hooks_test.sh RUNPATCH FIXTURES_DIR SCRATCH_DIR
set -euo pipefail
runpatch=$1 fixtures=$2 scratch=$3
hooks=$(cd "$(dirname "$0")/../../hooks" && pwd)
export RUNPATCH=$runpatch
passed=0 failed=0

expect_eq() {  # what actual expected
  if [[ "$2" == "$3" ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $1"; echo "  actual:   $2"; echo "  expected: $3"; fi
}
runpath_of() { "$runpatch" print --json "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin)[0]; print(d["runpath"] or d["rpath"] or "")'; }

# A package with outputs out (bin/cuda-prog) and lib (lib/libcudart.so.13, lib/stubs/libcuda.so).
make_package() {
  local root=$1
  [[ -e $root ]] && chmod -R u+w "$root"  # a read-only output left by an earlier run
  rm -rf "$root" && mkdir -p "$root/out" "$root/lib" "$root/driver-link/lib" "$root/store/aaa-cuda_compat-12.8"
  cp -r "$fixtures/x86_64/cuda-pkg/bin" "$root/out/bin"
  cp -r "$fixtures/x86_64/cuda-pkg/lib" "$root/lib/lib"
  cp "$fixtures/x86_64/cuda-pkg/driver/libcuda.so.1" "$root/driver-link/lib/"
  cp -r "$fixtures/x86_64/cuda-pkg/compat" "$root/store/aaa-cuda_compat-12.8/compat"
  "$runpatch" set --runpath "$root/lib/lib" "$root/out/bin/cuda-prog" >/dev/null  # as a split-output build links it
}

# run_fixup_logged ROOT HOOK_FILES...: sources the hooks in that order and runs
# postFixupHooks, their messages on stdout; run_fixup: the same, silent.
# With $unset_variable named, the hooks see that variable unset (as a caller who forgot it).
run_fixup_logged() {
  local root=$1; shift
  (
    out=$root/out lib=$root/lib
    driverLink=$root/driver-link
    cudaCompatLibcudaDir=$root/store/aaa-cuda_compat-12.8/compat
    [[ -z ${unset_variable:-} ]] || unset "$unset_variable"
    getAllOutputNames() { echo out lib; }
    postFixupHooks=()
    source "$hooks/auto-fix-elf-files.sh"
    source "$hooks/add-driver-runpath.sh"
    for hook in "$@"; do source "$hooks/$hook"; done
    for h in "${postFixupHooks[@]}"; do eval "$h" || exit 1; done
  ) 2>&1
}
run_fixup() { run_fixup_logged "$@" >/dev/null; }

for order in driver-first compat-first; do
  root=$scratch/$order
  make_package "$root"
  if [[ $order == driver-first ]]; then
    run_fixup "$root" auto-add-driver-runpath-hook.sh auto-add-cuda-compat-runpath.sh
  else
    run_fixup "$root" auto-add-cuda-compat-runpath.sh auto-add-driver-runpath-hook.sh
  fi
  compat=$root/store/aaa-cuda_compat-12.8/compat driver=$root/driver-link/lib
  expect_eq "$order: libcudart runpath (compat, driver; no stubs)" "$(runpath_of "$root/lib/lib/libcudart.so.13")" "$compat:$driver"
  expect_eq "$order: program runpath" "$(runpath_of "$root/out/bin/cuda-prog")" "$compat:$driver:$root/lib/lib"
  expect_eq "$order: program loads compat libcuda" "$("$root/out/bin/cuda-prog")" "libcuda: compat"
  before=$(cd "$root" && find out lib -type f -exec md5sum {} + | sort)
  run_fixup "$root" auto-add-driver-runpath-hook.sh auto-add-cuda-compat-runpath.sh
  expect_eq "$order: running the hooks again changes nothing" "$(cd "$root" && find out lib -type f -exec md5sum {} + | sort)" "$before"
done

# With both hooks in the fixup, the compat hook's edit already puts the
# driver directory behind compat (--with-driver), so the driver hook after it
# has nothing to change; alone, the compat hook adds only its own directory.
root=$scratch/compat-then-driver-edits
make_package "$root"
log=$(run_fixup_logged "$root" auto-add-cuda-compat-runpath.sh auto-add-driver-runpath-hook.sh)
expect_eq "compat first: the driver hook's pass edits nothing" \
  "$(grep -c 'driver: 0 edited' <<<"$log")" 1
root=$scratch/compat-alone
make_package "$root"
run_fixup "$root" auto-add-cuda-compat-runpath.sh
expect_eq "the compat hook alone adds no driver directory" \
  "$(runpath_of "$root/lib/lib/libcudart.so.13")" "$root/store/aaa-cuda_compat-12.8/compat"

root=$scratch/driver-only
make_package "$root"
run_fixup "$root" auto-add-driver-runpath-hook.sh
expect_eq "driver only: program loads the driver's libcuda" "$("$root/out/bin/cuda-prog")" "libcuda: driver"
expect_eq "driver only: stubs dropped" "$(runpath_of "$root/lib/lib/libcudart.so.13")" "$root/driver-link/lib"

root=$scratch/opt-out
make_package "$root"
(dontUseAutoAddDriverRunpath=1 run_fixup "$root" auto-add-driver-runpath-hook.sh)
expect_eq "dontUseAutoAddDriverRunpath: nothing changes" "$(runpath_of "$root/lib/lib/libcudart.so.13")" '$ORIGIN/stubs'

root=$scratch/generic
make_package "$root"
calls=$(
  out=$root/out lib=$root/lib
  getAllOutputNames() { echo out lib; }
  source "$hooks/auto-fix-elf-files.sh"
  countFile() { echo "$1"; }
  autoFixElfFiles countFile | wc -l
)
expect_eq "autoFixElfFiles with another action: once per dynamic ELF file" "$calls" "3"

root=$scratch/add-driver-runpath
make_package "$root"
(
  driverLink=$root/driver-link
  source "$hooks/add-driver-runpath.sh"
  addDriverRunpath --force-rpath "$root/lib/lib/libcudart.so.13" >/dev/null 2>&1
  addDriverRunpath --bogus 2>/dev/null && exit 1 || true
)
expect_eq "addDriverRunpath --force-rpath writes DT_RPATH" \
  "$("$runpatch" print --json "$root/lib/lib/libcudart.so.13" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["rpath"])')" \
  "$root/driver-link/lib"

# The names before Nixpkgs' 2024 rename: the same result, and a warning naming the new one.
root=$scratch/old-names
make_package "$root"
old_name_log=$(
  driverLink=$root/driver-link
  source "$hooks/add-driver-runpath.sh"
  addOpenGLRunpath "$root/lib/lib/libcudart.so.13" 2>&1 >/dev/null
)
expect_eq "addOpenGLRunpath (old name) adds the driver directory" "$(runpath_of "$root/lib/lib/libcudart.so.13")" "$root/driver-link/lib"
expect_eq "addOpenGLRunpath warns and names addDriverRunpath" "$([[ $old_name_log == *deprecated*addDriverRunpath* ]] && echo yes)" "yes"
root=$scratch/old-hook-name
make_package "$root"
run_fixup "$root" auto-add-opengl-runpath-hook.sh
expect_eq "autoAddOpenGLRunpathHook (old name): program loads the driver's libcuda" "$("$root/out/bin/cuda-prog")" "libcuda: driver"

root=$scratch/build-dir
make_package "$root"
"$runpatch" set --runpath "$root/build/source/lib:$root/lib/lib" "$root/out/bin/cuda-prog" >/dev/null
(NIX_BUILD_TOP=$root/build run_fixup "$root" auto-add-driver-runpath-hook.sh)
expect_eq "entries under \$NIX_BUILD_TOP are dropped" "$(runpath_of "$root/out/bin/cuda-prog")" "$root/driver-link/lib:$root/lib/lib"

# A library only the build directory holds (built, never installed): dropping
# the entry would leave a program that exits 127 from the store. The hook
# fails, naming the library and the entry, as Nixpkgs' audit-tmpdir would.
root=$scratch/build-dir-needed
make_package "$root"
mkdir -p "$root/build/source/lib"
mv "$root/lib/lib/libcudart.so.13" "$root/build/source/lib/"
"$runpatch" set --runpath "$root/build/source/lib" "$root/out/bin/cuda-prog" >/dev/null
status=0
log=$(NIX_BUILD_TOP=$root/build run_fixup_logged "$root" auto-add-driver-runpath-hook.sh) || status=$?
expect_eq "a needed library only under \$NIX_BUILD_TOP: the hook fails" "$status" 1
expect_eq "a needed library only under \$NIX_BUILD_TOP: the message names it and the entry" \
  "$([[ $log == *"needs libcudart.so.13, which only '$root/build/source/lib' supplies"* ]] && echo yes)" "yes"
expect_eq "a needed library only under \$NIX_BUILD_TOP: the program is left as it was" \
  "$(runpath_of "$root/out/bin/cuda-prog")" "$root/build/source/lib"

# Outputs routinely link into other store paths, read-only during a build:
# the hooks walk as find -type f does and leave them alone.
root=$scratch/links-out
make_package "$root"
dep=$root/store/bbb-dep-1.0
mkdir -p "$dep/lib"
cp "$fixtures/x86_64/cuda-pkg/lib/libcudart.so.13" "$dep/lib/libdep.so.1"
ln -s "$dep/lib" "$root/lib/lib/deplink"
ln -s "$dep/lib/libdep.so.1" "$root/lib/lib/libdep.so.1"
chmod -R a-w "$dep"
dep_before=$(find "$dep" -type f -exec md5sum {} + | sort)
status=0
run_fixup "$root" auto-add-driver-runpath-hook.sh auto-add-cuda-compat-runpath.sh || status=$?
expect_eq "links into a read-only output: the hooks succeed" "$status" 0
expect_eq "links into a read-only output: it is byte-identical" "$(find "$dep" -type f -exec md5sum {} + | sort)" "$dep_before"
expect_eq "links into a read-only output: the output's own files are edited" \
  "$(runpath_of "$root/lib/lib/libcudart.so.13")" "$root/store/aaa-cuda_compat-12.8/compat:$root/driver-link/lib"
calls=$(
  out=$root/out lib=$root/lib
  getAllOutputNames() { echo out lib; }
  source "$hooks/auto-fix-elf-files.sh"
  countFile() { echo "$1"; }
  autoFixElfFiles countFile | grep -c bbb-dep || true
)
expect_eq "links into a read-only output: other actions are not given its files" "$calls" 0

# A file name with a newline and a space is one file to every action.
root=$scratch/odd-names
make_package "$root"
odd=$'odd\nname with space.so'
cp "$fixtures/x86_64/cuda-pkg/lib/libcudart.so.13" "$root/lib/lib/$odd"
seen=$(
  out=$root/out lib=$root/lib
  getAllOutputNames() { echo out lib; }
  source "$hooks/auto-fix-elf-files.sh"
  countFile() { if [[ -f $1 ]]; then [[ $1 == "$root/lib/lib/$odd" ]] && echo odd; echo found; else echo missing; fi; }
  autoFixElfFiles countFile | sort | uniq -c | awk '{ printf "%s %s;", $1, $2 }'
)
expect_eq "a name with a newline and a space: one call, with the whole name" "$seen" "4 found;1 odd;"
run_fixup "$root" auto-add-driver-runpath-hook.sh
expect_eq "a name with a newline and a space: edited by the driver hook" "$(runpath_of "$root/lib/lib/$odd")" "$root/driver-link/lib"

# The compat hook sourced without cudaCompatLibcudaDir and unsubstituted:
# an error, never an @libcudaPath@ runpath entry.
root=$scratch/compat-unset
make_package "$root"
before=$(runpath_of "$root/lib/lib/libcudart.so.13")
status=0
unset_variable=cudaCompatLibcudaDir run_fixup "$root" auto-add-cuda-compat-runpath.sh || status=$?
expect_eq "compat hook without its variable: the fixup fails" "$status" 1
expect_eq "compat hook without its variable: no runpath changed" "$(runpath_of "$root/lib/lib/libcudart.so.13")" "$before"
for bad in @libcudaPath@ relative/compat "$root/store/aaa-cuda_compat-12.8/compat/libcuda.so.1"; do
  status=0
  "$runpatch" compat --libcuda "$bad" "$root/lib/lib/libcudart.so.13" >/dev/null 2>&1 || status=$?
  expect_eq "runpatch compat --libcuda $bad is refused (exit 2)" "$status" 2
done
expect_eq "refused --libcuda values change nothing" "$(runpath_of "$root/lib/lib/libcudart.so.13")" "$before"

# The driver hooks sourced without driverLink: its documented default, /run/opengl-driver.
root=$scratch/driver-unset
make_package "$root"
unset_variable=driverLink run_fixup "$root" auto-add-driver-runpath-hook.sh
expect_eq "driver hook without driverLink: /run/opengl-driver/lib" "$(runpath_of "$root/lib/lib/libcudart.so.13")" \
  "/run/opengl-driver/lib"

# Reproducible bytes: the driver and compat hooks in either order leave
# byte-identical files (the NAR hash must not depend on hook order), in a Nix
# build ($NIX_BUILD_TOP: edits into the outputs) and outside one, on the
# fixture package, on real CUDA libraries and on the aarch64 (L4T) package.
# Each run rebuilds the package at the same path, so the runpaths are equal.
make_arch_package() {  # ROOT ARCH
  local root=$1 arch=$2
  make_package "$root"
  rm -rf "$root/out/bin" "$root/lib/lib" "$root/store/aaa-cuda_compat-12.8/compat"
  cp -r "$fixtures/$arch/cuda-pkg/bin" "$root/out/bin"
  cp -r "$fixtures/$arch/cuda-pkg/lib" "$root/lib/lib"
  mkdir -p "$root/store/aaa-cuda_compat-12.8/compat"
  if [[ -e $fixtures/$arch/l4t/compat/libcuda.so.1 ]]; then
    cp "$fixtures/$arch/l4t/compat/libcuda.so.1" "$root/store/aaa-cuda_compat-12.8/compat/"
  else
    cp "$fixtures/$arch/cuda-pkg/compat/libcuda.so.1" "$root/store/aaa-cuda_compat-12.8/compat/"
  fi
  "$runpatch" set --runpath "$root/lib/lib" "$root/out/bin/cuda-prog" >/dev/null
}
cuda_lib=/usr/local/cuda-13.0/lib64
make_cuda_package() {  # ROOT: the fixture package plus real CUDA libraries in the lib output
  make_package "$1"
  for real in libcudart.so.13 libnvrtc-builtins.so.13.0; do
    [[ -e $cuda_lib/$real ]] && cp -L "$cuda_lib/$real" "$1/lib/lib/"
  done
  return 0
}
hashes_after() {  # ORDER MAKER [ARGS...]: the package's sha256 list after both hooks in ORDER
  local order=$1 root=$scratch/reproducible; shift
  "$@" "$root"
  if [[ $order == driver-first ]]; then
    run_fixup "$root" auto-add-driver-runpath-hook.sh auto-add-cuda-compat-runpath.sh
  else
    run_fixup "$root" auto-add-cuda-compat-runpath.sh auto-add-driver-runpath-hook.sh
  fi
  (cd "$root" && find out lib -type f -exec sha256sum {} + | sort)
}
with_arch() { make_arch_package "$1" "$arch"; }
# Runpaths as a build links them, with an entry under the build directory that
# the hooks drop (--forbid): the first hook shortens the runpath in place, the
# other appends a segment; the bytes still must not depend on which ran first.
with_build_dir_entry() {
  make_package "$1"
  "$runpatch" set --runpath "$scratch/build/source/lib:$1/lib/lib" "$1/out/bin/cuda-prog" >/dev/null
  "$runpatch" set --runpath "$scratch/build/source/lib:\$ORIGIN/stubs" "$1/lib/lib/libcudart.so.13" >/dev/null
}
packages=(make_package with_build_dir_entry)
[[ -e $cuda_lib/libcudart.so.13 ]] && packages+=(make_cuda_package)
for arch in aarch64; do [[ -d $fixtures/$arch/cuda-pkg ]] && packages+=(with_arch); done
for maker in "${packages[@]}"; do
  # As the hooks run (in a build) for every package; outside a build for the fixture package.
  build_tops=("$scratch")
  [[ $maker == make_package || $maker == with_build_dir_entry ]] && build_tops+=("")
  for build_top in "${build_tops[@]}"; do
    first=$(NIX_BUILD_TOP=$build_top hashes_after driver-first "$maker")
    second=$(NIX_BUILD_TOP=$build_top hashes_after compat-first "$maker")
    expect_eq "$maker (NIX_BUILD_TOP='$build_top'): either hook order, the same bytes" "$second" "$first"
  done
done

echo "hooks: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
