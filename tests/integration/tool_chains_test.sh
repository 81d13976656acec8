#!/usr/bin/env bash
# Files that pass through patchelf and runpatch in any order load, strip and
# take a later patchelf (issue 48).
#
# Each file — the fixture programs prog-pie and prog-nopie (x86-64), a copy of
# libz.so.1 and of a large system library (libLLVM-15, 117 MB, else libstdc++;
# the chains in LARGE_CHAINS only) — goes through chains of two and three
# edits, each edit by one of
#   P   patchelf (each one in PATCHELFS, one chain per patchelf)
#   R   runpatch-patchelf
#   S   runpatch set
# in the orders listed in CHAINS, edit k of a chain being the same request
# whichever tool makes it:
#   1  set the runpath to /chain/one
#   2  add libm.so.6 to the needed libraries
#   3  set the runpath to /chain/three/<a long name>   (grows it again)
# The control chain is patchelf alone (PP, PPP). After the chain, a fresh copy
# of the result goes through each later tool of a build: strip; strip -g;
# separate debug info (objcopy --only-keep-debug, strip --strip-debug, objcopy
# --add-gnu-debuglink); eu-strip; llvm-strip; and each patchelf again
# (--add-rpath /again). After every edit and every tool: the command exited 0,
# and the file loads — the program runs with LD_BIND_NOW=1 and prints what it
# prints unedited (its libgreet.so through LD_LIBRARY_PATH: the runpaths set
# here name no real directory), a library is dlopened with RTLD_NOW by a
# checker program.
# Growth: each edit runpatch-patchelf makes is also made by the chain's
# patchelf on the same input; runpatch-patchelf must not grow the file more.
#
# Cells: ok; FAIL(what) (counted); ~FAIL(what) (the control chain fails there
# too with that patchelf: the tool's own, not counted); - (an earlier step failed);
# UNMAPPED(what): a patchelf edit left an interpreter, note or dynamic segment
# outside every PT_LOAD (patchelf 0.14.3's executable rewrite when it finds
# room before the code without a shift, see segments_mapped): a failure after
# one of our edits unless the control chain shows it too; the later tools'
# failures on that file are its consequence (KNOWN).
#
# Usage: tool_chains_test.sh RUNPATCH_CLI RUNPATCH_PATCHELF FIXTURES_DIR SCRATCH_DIR
# Environment:
#   PATCHELFS="/path/a /path/b"  the patchelfs to mix with (default: patchelf on PATH;
#                                e.g. Debian's 0.14.3 and a 0.19 built from its source)
#   TOOL_CHAINS_QUICK=1          the programs and libz only (the sanitizer build)
# Exit status: 0 every counted cell ok, 1 a cell failed, 2 usage error.
set -euo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 RUNPATCH_CLI RUNPATCH_PATCHELF FIXTURES_DIR SCRATCH_DIR" >&2
  exit 2
fi
cli=$(realpath "$1") rp_patchelf=$(realpath "$2") fixtures=$(realpath "$3") scratch=$4
read -r -a patchelfs <<<"${PATCHELFS:-$(command -v patchelf || true)}"
if [[ ${#patchelfs[@]} -eq 0 ]]; then
  echo "error: no patchelf (install Debian's patchelf or set PATCHELFS)" >&2
  exit 2
fi
for tool in readelf strip objcopy eu-strip llvm-strip cc; do
  command -v "$tool" >/dev/null || { echo "error: missing tool $tool" >&2; exit 2; }
done
unset LD_PRELOAD LD_LIBRARY_PATH LD_BIND_NOW

run=$(mkdir -p "$scratch" && realpath "$scratch")/chains
rm -rf "$run" && mkdir -p "$run/base"
base=$fixtures/x86_64
[[ -x $base/prog-pie ]] || { echo "error: $base/prog-pie not built" >&2; exit 2; }

# The dlopen checker.
cat >"$run/dlopen_check.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (!dlopen(argv[i], RTLD_NOW)) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  puts("loaded");
  return 0;
}
EOF
cc -O2 -o "$run/dlopen_check" "$run/dlopen_check.c" -ldl

long_name=$(printf 'long%.0s' {1..20})
FILES=("$base/prog-pie" "$base/prog-nopie" /usr/lib/x86_64-linux-gnu/libz.so.1)
large=''
if [[ ${TOOL_CHAINS_QUICK:-0} != 1 ]]; then
  for large in /usr/lib/x86_64-linux-gnu/libLLVM-15.so.1 /usr/lib/x86_64-linux-gnu/libstdc++.so.6; do
    [[ -f $large ]] && { FILES+=("$large"); break; }
  done
fi
CHAINS=(PR RP PS SP PPR PRP RPR PRS SPS RRP SSP)
LARGE_CHAINS=(PR RP PPR RPR SPS)  # each step copies the large library: the orders that found its faults
POST=(strip strip-g debuglink eu-strip llvm-strip)
for i in "${!patchelfs[@]}"; do POST+=("patchelf$i"); done

# edit TOOL K FILE: edit k of a chain by TOOL (P<i>, R or S).
edit() {
  local tool=$1 k=$2 file=$3 pe
  local -a request
  case $k in
    1) request=(--set-rpath /chain/one) ;;
    2) request=(--add-needed libm.so.6) ;;
    3) request=(--set-rpath "/chain/three/$long_name") ;;
  esac
  case $tool in
    P*) pe=${patchelfs[${tool#P}]}; "$pe" "${request[@]}" "$file" ;;
    R) "$rp_patchelf" "${request[@]}" "$file" ;;
    S) case $k in
         2) "$cli" set -q --add-needed libm.so.6 "$file" ;;
         *) "$cli" set -q --runpath "${request[1]}" "$file" ;;
       esac ;;
  esac
}

# post TOOL FILE: a later tool of a build on FILE.
post() {
  local tool=$1 file=$2
  case $tool in
    strip) strip "$file" ;;
    strip-g) strip -g "$file" ;;
    debuglink) objcopy --only-keep-debug "$file" "$file.debug" && strip --strip-debug "$file" &&
                 objcopy --add-gnu-debuglink="$file.debug" "$file" ;;
    eu-strip) eu-strip "$file" ;;
    llvm-strip) llvm-strip "$file" ;;
    patchelf*) "${patchelfs[${tool#patchelf}]}" --add-rpath /again "$file" ;;
  esac
}

# loads FILE: it runs (a program) or dlopens (a library); the reason on stdout otherwise.
loads() {
  local file=$1 out rc=0
  if [[ $file == *prog-* ]]; then
    out=$( (ulimit -t 30; LD_BIND_NOW=1 LD_LIBRARY_PATH=$base/lib exec "$file") 2>&1) || rc=$?
    [[ $rc -eq 0 && $out == "$expected_output" ]] && return 0
  else
    out=$( (ulimit -t 30; exec "$run/dlopen_check" "$file") 2>&1) || rc=$?
    [[ $rc -eq 0 ]] && return 0
  fi
  printf 'exit %s: %s' "$rc" "$(head -c 120 <<<"$out" | tr '\n' ' ')"
  return 1
}
expected_output=$(LD_LIBRARY_PATH=$base/lib "$base/prog-pie")

# segments_mapped FILE: each PT_INTERP, PT_NOTE and PT_DYNAMIC lies inside a PT_LOAD in the file.
# patchelf 0.14.3 rewrites a non-PIE program (rewriteSectionsExecutable) over
# the bytes between its program headers and the first code section without a
# shift when they suffice — and then neither extends the first PT_LOAD over
# what it wrote there nor makes it writable (fixed in later patchelf: "keep
# relocated .dynamic writable"). Linkers' files never take that path (its
# loop stops after .dynstr, which sits in the first segment); a file whose
# .dynstr moved out of it does (runpatch's, after a first edit). The program
# may still run (the kernel reads PT_INTERP from the file), but strip then
# breaks it, and a moved .dynamic in a read-only page crashes it.
segments_mapped() {
  local type off _va _pa size rest lo=() hi=() kinds=() offs=() ends=() i j inside
  while read -r type off _va _pa size rest; do
    case $type in
      LOAD) lo+=($((off))) hi+=($((off + size))) ;;
      INTERP | NOTE | DYNAMIC) kinds+=("$type") offs+=($((off))) ends+=($((off + size))) ;;
    esac
  done < <(readelf -lW "$1" | grep -E '^ +(LOAD|INTERP|NOTE|DYNAMIC) ')
  for i in "${!kinds[@]}"; do
    inside=0
    for j in "${!lo[@]}"; do
      ((offs[i] >= lo[j] && ends[i] <= hi[j])) && inside=1
    done
    if [[ $inside == 0 ]]; then
      printf '%s at %#x outside every PT_LOAD' "${kinds[i]}" "${offs[i]}"
      return 1
    fi
  done
}

# row FILE PATCHELF_INDEX CHAIN: one line "label cells..." into $run/rows/...
row() {
  local src=$1 pi=$2 chain=$3 name dir cells=() why k tool step=0 size_before size_after
  name=$(basename "$src")
  dir=$run/cells/$name.$pi.$chain && mkdir -p "$dir"
  cp "$src" "$dir/f" && chmod u+w "$dir/f"
  local ok=1 unmapped=0
  for ((k = 1; k <= ${#chain}; ++k)); do
    tool=${chain:k-1:1}
    [[ $tool == P ]] && tool=P$pi
    cp "$dir/f" "$dir/before"
    size_before=$(stat -c %s "$dir/f")
    if ! why=$(edit "$tool" "$k" "$dir/f" 2>&1); then
      cells+=("edit$k:FAIL(${why:0:120})"); ok=0; break
    fi
    if ! why=$(loads "$dir/f"); then cells+=("edit$k:FAIL($why)"); ok=0; break; fi
    if [[ $tool == P* ]] && ! why=$(segments_mapped "$dir/f"); then
      cells+=("edit$k:UNMAPPED($why)"); unmapped=1; continue
    fi
    cells+=("edit$k:ok")
    if [[ $tool == R ]]; then  # growth against the first patchelf on the same input
      size_after=$(stat -c %s "$dir/f")
      cp "$dir/before" "$dir/pe" && edit "P$pi" "$k" "$dir/pe" >/dev/null 2>&1 &&
        (( size_after - size_before > $(stat -c %s "$dir/pe") - size_before )) &&
        cells+=("growth$k:FAIL(+$((size_after - size_before)) vs patchelf +$(( $(stat -c %s "$dir/pe") - size_before )))")
    fi
  done
  for t in "${POST[@]}"; do
    if [[ $ok == 0 ]]; then cells+=("$t:-"); continue; fi
    rm -rf "$dir/post" && mkdir "$dir/post" && cp "$dir/f" "$dir/post/f"
    local failed_as=FAIL
    [[ $unmapped == 1 ]] && failed_as=KNOWN  # after patchelf left a segment unmapped: its own doing
    if ! why=$(post "$t" "$dir/post/f" 2>&1); then cells+=("$t:$failed_as(${why:0:120})"); continue; fi
    if ! why=$(loads "$dir/post/f"); then cells+=("$t:$failed_as($why)"); continue; fi
    cells+=("$t:ok")
  done
  printf '%s\n' "${cells[@]}" >"$run/rows/$name.$pi.$chain"
  rm -rf "$dir"
}

mkdir -p "$run/rows" "$run/cells"
jobs_max=$(nproc)
for src in "${FILES[@]}"; do
  for pi in "${!patchelfs[@]}"; do
    chains=("${CHAINS[@]}")
    [[ $src == "$large" ]] && chains=("${LARGE_CHAINS[@]}")
    for chain in "${chains[@]}" PP PPP; do
      while [[ $(jobs -rp | wc -l) -ge $jobs_max ]]; do wait -n || true; done
      row "$src" "$pi" "$chain" &
    done
  done
done
wait

# The table, and failures not seen in the control chain of the same length.
failed=0
for src in "${FILES[@]}"; do
  name=$(basename "$src")
  for pi in "${!patchelfs[@]}"; do
    echo "== $name, P = ${patchelfs[$pi]} ($("${patchelfs[$pi]}" --version 2>&1 | head -n 1))"
    chains=("${CHAINS[@]}")
    [[ $src == "$large" ]] && chains=("${LARGE_CHAINS[@]}")
    for chain in PP PPP "${chains[@]}"; do
      control=$run/rows/$name.$pi.$(printf 'P%.0s' $(seq ${#chain}))
      line="  $(printf '%-4s' "$chain")"
      while IFS= read -r cell; do
        col=${cell%%:*} state=${cell#*:}
        if [[ ($state == FAIL* || $state == UNMAPPED*) && $chain == *[RS]* ]]; then
          if grep -q "^$col:${state%%(*}" "$control" && [[ $col != growth* ]]; then
            state="~$state"
          else
            failed=$((failed + 1))
          fi
        fi
        line+=" $col:$state"
      done <"$run/rows/$name.$pi.$chain"
      echo "$line"
    done
  done
done
known=$(cat "$run"/rows/* | grep -c '^edit[0-9]:UNMAPPED' || true)
[[ $known -eq 0 ]] || echo "tool_chains: $known chains where patchelf left a segment unmapped (patchelf 0.14.3's executable rewrite, see segments_mapped)"
if [[ $failed -gt 0 ]]; then
  echo "tool_chains: $failed cells failed" >&2
  exit 1
fi
echo "tool_chains: every cell ok (${#FILES[@]} files, ${#patchelfs[@]} patchelf(s), ${#CHAINS[@]} mixed chains)"
