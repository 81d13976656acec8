#!/usr/bin/env bash
# The hooks in real Nix builds (Debian's nix-bin, single-user, no network): a
# split CUDA-like package (tests/nix/default.nix) built by nix-build, its
# fixup running hooks/ in postFixup order. Nix is the oracle: outputs run from
# the store; `nix-store -q --references` agrees with check's closure findings;
# `nix-build --check` rebuilds with the other hook order and must find the same
# bytes (and must fail when one byte differs); a hook that fails, or an entry
# the hooks would have to drop although a library needs it, fails the build.
# auto-patchelf (autoPatchelfHook's replacement) runs from RUNPATCH's directory.
# Usage: nix_build_test.sh RUNPATCH SCRATCH_DIR   (exit 77: skipped, with the reason)
set -uo pipefail
runpatch=$(realpath "$1") scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
command -v nix-build >/dev/null || skip "nix-build is not installed (scripts/install-deps installs Debian's nix-bin)"
[[ $(id -u) == 0 ]] || skip "single-user Nix without a daemon writes /nix/store: run as root"
mkdir -p "$scratch/state" "$scratch/logs"
state=$(realpath "$scratch/state") logs=$(realpath "$scratch/logs")
unset NIX_REMOTE NIX_PATH
passed=0 failed=0
expect_eq() {  # what actual expected
  if [[ "$2" == "$3" ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $1"; echo "  actual:   $2"; echo "  expected: $3"; fi
}
yes_if() { "$@" && echo yes || echo no; }

# Nix's own sandbox (user namespaces), with the host's compiler, runpatch, the
# hooks and the sources bind-mounted: NIX_BUILD_TOP=/build and outputs built
# at their final paths, as in Nixpkgs' builds (without it, `--check` builds at
# a temporary path the linker's build-id then hashes).
export NIX_CONFIG="build-users-group =
substituters =
sandbox = true
extra-sandbox-paths = /bin /usr /lib /lib64 $(dirname "$runpatch") $repo/hooks $repo/fixtures/src $state"
args=(--argstr runpatch "$runpatch" --argstr hooks "$repo/hooks" --argstr fixtureSources "$repo/fixtures/src"
      --argstr stateDir "$state" --argstr runpatchId "$(sha256sum "$runpatch" | cut -c1-16)")
nix_build() {  # LOG VARIANT ORDER [nix-build args...]: prints the out path; the log in $logs/LOG
  local log=$1 variant=$2 order=$3; shift 3
  echo "$order" >"$state/hook-order"
  nix-build --no-out-link "$here/default.nix" "${args[@]}" --argstr variant "$variant" -A package "$@" \
    >"$logs/$log.out" 2>"$logs/$log.log"
  local status=$?
  cat "$logs/$log.out"
  return $status
}
output_of() {  # VARIANT OUTPUT: the store path (built or not)
  nix-instantiate "$here/default.nix" "${args[@]}" --argstr variant "$1" -A package 2>/dev/null |
    xargs -r nix-store -q --outputs | case $2 in
      out) grep -v -e '-lib$' -e '-dev$' ;;
      *) grep -e "-$2\$" ;;
    esac
}
runpath_of() { "$runpatch" print --json "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin)[0]; print(d["runpath"] or d["rpath"] or "")'; }

# Fresh outputs: earlier runs of this test built the same derivations (nothing
# else refers to them: --no-out-link leaves no root).
for variant in split auto-patchelf dev-runpath build-only compat-unset old-names; do
  for output in out lib dev; do
    path=$(output_of "$variant" "$output")
    [[ -n $path && -e $path ]] && nix-store --delete "$path" >/dev/null 2>&1
  done
done
if ! nix-build --no-out-link "$here/default.nix" "${args[@]}" -A driver >"$logs/sandbox.log" 2>&1; then
  tail -5 "$logs/sandbox.log"
  skip "nix-build cannot build in its sandbox here (no user namespaces?): $logs/sandbox.log"
fi

# 1. The hooks in a real build: outputs that run from the store.
status=0
nix_build split split driver-first >/dev/null || status=$?
expect_eq "split package, driver hook first: the build succeeds" "$status" 0
out=$(output_of split out) lib=$(output_of split lib) dev=$(output_of split dev)
compat=$(nix-build --no-out-link "$here/default.nix" "${args[@]}" -A cuda_compat 2>/dev/null)/compat
expect_eq "the program runs from the store and loads cuda_compat's libcuda" \
  "$(env -i "$out/bin/cuda-prog" 2>&1)" "libcuda: compat"
expect_eq "the program's runpath: compat, driver, \$lib (the build directory dropped)" \
  "$(runpath_of "$out/bin/cuda-prog")" "$compat:/run/opengl-driver/lib:$lib/lib"
expect_eq "libcudart's runpath: compat, driver (the build's stubs directory dropped)" \
  "$(runpath_of "$lib/lib/libcudart.so.13")" "$compat:/run/opengl-driver/lib"
expect_eq "no output holds the build directory, not even a dead copy" \
  "$(grep -rlaF -e /build/build/lib -e /tmp/nix-build- "$out" "$lib" "$dev" | wc -l)" 0
check_status=0
"$runpatch" check "$out" "$lib" >"$logs/check-split.txt" 2>&1 || check_status=$?
expect_eq "runpatch check on the outputs: no error" "$check_status" 0

# autoPatchelfHook's replacement, then the driver and compat hooks, in one build.
status=0
nix_build auto-patchelf auto-patchelf driver-first >/dev/null || status=$?
expect_eq "auto-patchelf, then the driver and compat hooks: the build succeeds" "$status" 0
ap_out=$(output_of auto-patchelf out) ap_lib=$(output_of auto-patchelf lib)
expect_eq "... the program's runpath: compat, driver, then what auto-patchelf resolved" \
  "$(runpath_of "$ap_out/bin/cuda-prog")" "$compat:/run/opengl-driver/lib:$ap_lib/lib"
expect_eq "... and it runs from the store with compat's libcuda" "$(env -i "$ap_out/bin/cuda-prog" 2>&1)" "libcuda: compat"

# 2. Closure truth: Nix's references against check's closure findings.
references() { nix-store -q --references "$1" | sort | tr '\n' ' '; }
expect_eq "\$out refers to \$lib and cuda_compat, not to \$dev" \
  "$(yes_if grep -q "$lib" <<<"$(references "$out")")$(yes_if grep -q "${compat%/compat}" <<<"$(references "$out")")$(yes_if grep -q "$dev" <<<"$(references "$out")")" \
  "yesyesno"
expect_eq "check reports no closure bloat where Nix sees no \$dev reference" \
  "$(yes_if grep -q closure-bloat "$logs/check-split.txt")" no
nix_build dev-runpath dev-runpath driver-first >/dev/null
dev_out=$(output_of dev-runpath out) dev_dev=$(output_of dev-runpath dev)
"$runpatch" check "$dev_out" >"$logs/check-dev-runpath.txt" 2>&1
expect_eq "a runpath into \$dev: Nix records the reference" \
  "$(yes_if grep -q "$dev_dev" <<<"$(references "$dev_out")")" yes
expect_eq "a runpath into \$dev: check reports closure-bloat for it" \
  "$(yes_if grep -q "closure-bloat.*$dev_dev" "$logs/check-dev-runpath.txt")" yes

# 3. Reproducible bytes: --check rebuilds with the other hook order.
status=0
nix_build check-compat-first split compat-first --check >/dev/null || status=$?
expect_eq "nix-build --check with the compat hook first: the same output bytes" "$status" 0
status=0
nix_build check-one-byte split "driver-first+one-byte" --check >/dev/null || status=$?
expect_eq "nix-build --check with one byte changed fails (the check can fail)" "$(yes_if test "$status" -ne 0)" yes
expect_eq "... and Nix says the output differs" \
  "$(yes_if grep -q "may not be deterministic" "$logs/check-one-byte.log")" yes

# 6. The names before Nixpkgs' 2024 rename, in a build.
status=0
nix_build old-names old-names driver-first >/dev/null || status=$?
expect_eq "autoAddOpenGLRunpathHook and addOpenGLRunpath: the build succeeds" "$status" 0
expect_eq "... with a deprecation warning naming the new hook in the build log" \
  "$(yes_if grep -q "deprecated.*use autoAddDriverRunpath" "$logs/old-names.log")" yes
expect_eq "... and the program runs from the store with compat's libcuda" \
  "$(env -i "$(output_of old-names out)/bin/cuda-prog" 2>&1)" "libcuda: compat"

# 7 and bad input: builds that must fail, with the hook's message in the log and no output.
for case in "build-only|needs libgreet.so, which only '/build/build/lib' supplies" \
            "compat-unset|cudaCompatLibcudaDir is unset"; do
  variant=${case%%|*} message=${case#*|}
  status=0
  nix_build "$variant" "$variant" driver-first >/dev/null || status=$?
  expect_eq "$variant: the build fails" "$(yes_if test "$status" -ne 0)" yes
  expect_eq "$variant: the build log has the hook's message" "$(yes_if grep -qF "$message" "$logs/$variant.log")" yes
  expect_eq "$variant: no output is left in the store (none valid)" \
    "$(yes_if nix-store --check-validity "$(output_of "$variant" out)" 2>/dev/null)" no
done

echo "nix builds: $passed passed, $failed failed (logs: $logs)"
[[ $failed -eq 0 ]]
