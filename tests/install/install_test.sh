#!/usr/bin/env bash
# cmake --install into a temporary prefix, then build a consumer with
# find_package(runpatch) and another with pkg-config, and run both.
# Usage: install_test.sh BUILD_DIR FIXTURES_DIR SCRATCH_DIR
set -euo pipefail
build=$(realpath "$1") fixtures=$(realpath "$2") scratch=$(realpath -m "$3")
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch" && mkdir -p "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
program=$fixtures/x86_64/prog-pie
expected='$ORIGIN/lib'
fail=0

for f in bin/runpatch bin/runpatch-patchelf bin/auto-patchelf lib/librunpatch.a lib/pkgconfig/runpatch.pc \
         lib/cmake/runpatch/runpatchConfig.cmake include/runpatch/reading/elf_info.hpp share/runpatch/hooks/add-driver-runpath.sh \
         lib/runpatch/runpatch-audit.so include/runpatch/tracing.hpp; do
  [[ -e $prefix/$f ]] || { echo "missing after install: $f"; fail=1; }
done
for tool in runpatch runpatch-patchelf auto-patchelf; do
  [[ -s $prefix/share/bash-completion/completions/$tool ]] || { echo "missing bash completion for $tool"; fail=1; }
  [[ -s $prefix/share/zsh/site-functions/_$tool ]] || { echo "missing zsh completion for $tool"; fail=1; }
done
if [[ -d $build/man ]]; then  # built unless -DRUNPATCH_MAN_PAGES=OFF; their content: man_pages_test.sh
  for page in runpatch runpatch-patchelf runpatch-print runpatch-scan runpatch-set runpatch-tree runpatch-why \
              runpatch-driver runpatch-compat runpatch-apply runpatch-auto-patchelf runpatch-check runpatch-doctor \
              runpatch-trace; do
    [[ -s $prefix/share/man/man1/$page.1 ]] || { echo "missing man page $page.1"; fail=1; }
  done
  grep -q '^\.TH RUNPATCH-DOCTOR ' "$prefix/share/man/man1/runpatch-doctor.1" || { echo "runpatch-doctor.1 has the wrong title"; fail=1; }
  if grep -lF "$build" "$prefix"/share/man/man1/*.1; then echo "installed man pages name the build directory"; fail=1; fi
fi
[[ "$("$prefix/bin/runpatch" print --json "$program" | grep -c '"runpath"')" == 1 ]] || { echo "installed runpatch does not run"; fail=1; }
# runpatch trace finds its audit library from the installed bin/.
"$prefix/bin/runpatch" trace -o "$scratch/trace.txt" -- "$fixtures/trace/bin/trace-prog" host:libtrace-own.so >/dev/null &&
  grep -q 'via runpath of .*libtrace-host.so' "$scratch/trace.txt" || { echo "installed runpatch trace does not trace"; fail=1; }

cmake -S "$here/consumer" -B "$scratch/cmake-consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$scratch/cmake-consumer" >/dev/null
out=$("$scratch/cmake-consumer/consumer" "$program")
[[ $out == "$expected" ]] || { echo "find_package consumer printed '$out'"; fail=1; }

PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export PKG_CONFIG_PATH
c++ -o "$scratch/pc-consumer" "$here/consumer/main.cpp" $(pkg-config --cflags --libs runpatch)
out=$("$scratch/pc-consumer" "$program")
[[ $out == "$expected" ]] || { echo "pkg-config consumer printed '$out'"; fail=1; }

if [[ $fail == 0 ]]; then echo "install: 1 passed, 0 failed"; else echo "install: 0 passed, 1 failed"; fi
exit $fail
