#!/usr/bin/env bash
# runpatch check and trace as a CI pipeline uses them, on small packages
# built here, the loader as the oracle: a program that cannot start through
# a transitive dependency fails check (naming the file and the chain); one
# that starts only through its own DT_RPATH passes; a program that probes
# fallback names passes `trace --fail-on failed`; a failing command under
# `trace --fail-on` fails. Every JSON report parses with no duplicate key,
# every JUnit report passes xmllint, every SARIF log the official schema
# (where python3-jsonschema is installed).
# Usage: ci_gate_test.sh RUNPATCH SCHEMA_DIR SCRATCH_DIR
set -uo pipefail
runpatch=$(realpath "$1") schema=$(realpath "$2")/sarif-schema-2.1.0.json scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
cd "$scratch" || exit 1
passed=0 failed=0
expect_eq() {  # what actual expected
  if [[ "$2" == "$3" ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $1"; echo "  actual:   $2"; echo "  expected: $3"; fi
}
yes_if() { "$@" >/dev/null 2>&1 && echo yes || echo no; }
status_of() { "$@" >/dev/null 2>&1; echo $?; }
json_ok() {  # FILE: parses, and no object repeats a key
  /usr/bin/python3 -c '
import json, sys
def pairs(p):
    keys = [k for k, _ in p]
    assert len(keys) == len(set(keys)), keys
    return dict(p)
json.load(open(sys.argv[1]), object_pairs_hook=pairs)' "$1"
}
sarif_ok() {  # FILE: valid against the SARIF 2.1.0 schema (skipped without the validator)
  /usr/bin/python3 -c 'import jsonschema' 2>/dev/null || return 0
  /usr/bin/python3 -c '
import json, sys, jsonschema
jsonschema.Draft4Validator(json.load(open(sys.argv[1]))).validate(json.load(open(sys.argv[2])))' "$schema" "$1"
}
reports_ok() {  # NAME: the JSON, JUnit and SARIF reports of one check run are well-formed
  expect_eq "$1: JSON report parses, no duplicate key" "$(yes_if json_ok "$1.json")" yes
  command -v xmllint >/dev/null && expect_eq "$1: JUnit report passes xmllint" "$(yes_if xmllint --noout "$1.xml")" yes
  expect_eq "$1: SARIF log valid against the 2.1.0 schema" "$(yes_if sarif_ok "$1.sarif")" yes
}
check_with_reports() {  # NAME PATH...: check, writing the three reports; prints its exit status
  local name=$1; shift
  "$runpatch" check --ignore-environment --json --junit "$name.xml" --sarif "$name.sarif" "$@" >"$name.json" 2>/dev/null
  echo $?
}
lib() {  # OUT SONAME [cc args...]: a shared library
  local out=$1 soname=$2; shift 2
  echo "int ${soname//[^a-zA-Z0-9]/_}(void) { return 0; }" >"$out.c"
  cc -shared -fPIC -Wl,-soname,"$soname" -o "$out" "$out.c" "$@"
}

# 1. A program whose library needs a library that no longer exists.
mkdir -p gone/bin gone/ext
lib gone/ext/libgone2.so libgone2.so
lib gone/ext/libA.so libA.so -Lgone/ext -Wl,--no-as-needed -lgone2
echo 'int libA_so(void); int main(void) { return libA_so(); }' >prog.c
cc -o gone/bin/prog prog.c -Lgone/ext -lA -Wl,--enable-new-dtags,-rpath,'$ORIGIN/../ext'
rm gone/ext/libgone2.so
expect_eq "transitive: the loader refuses the program (127)" "$(status_of gone/bin/prog)" 127
expect_eq "transitive: check fails" "$(check_with_reports gone gone/bin)" 1
expect_eq "transitive: it names the library, the file whose runpath must change and the chain" \
  "$(yes_if grep -q 'libgone2.so is not found for .*ext/libA.so.*loaded as prog -> libA.so -> libgone2.so' gone.json)" yes
reports_ok gone

# 2. A program whose library finds its dependency only through the program's DT_RPATH.
mkdir -p inherit/bin inherit/lib inherit/deps
lib inherit/deps/libB.so libB.so
lib inherit/lib/libA.so libA.so -Linherit/deps -Wl,--no-as-needed -lB
cc -o inherit/bin/prog prog.c -Linherit/lib -lA -Wl,--disable-new-dtags,-rpath,'$ORIGIN/../lib:$ORIGIN/../deps'
expect_eq "DT_RPATH: the loader runs the program" "$(status_of inherit/bin/prog)" 0
expect_eq "DT_RPATH: check over the package passes (libA judged in the program's context)" \
  "$(check_with_reports inherit inherit)" 0
expect_eq "DT_RPATH: libA's finding is a note naming that context" \
  "$(yes_if grep -q 'inherited' inherit.json)" yes
reports_ok inherit

# 3. A program that probes fallback names (cuDNN's libcudnn_graph.so.9.19.0, then .9.19, then .9).
mkdir -p probe/lib
lib probe/lib/libprobe.so.9 libprobe.so.9
cat >probe.c <<'EOF'
#include <dlfcn.h>
int main(void) {
  const char* names[] = {"libprobe.so.9.19.0", "libprobe.so.9.19", "libprobe.so.9"};
  for (int i = 0; i < 3; ++i)
    if (dlopen(names[i], RTLD_NOW)) return 0;
  return 1;
}
EOF
cc -o probe/prog probe.c -ldl -Wl,--enable-new-dtags,-rpath,'$ORIGIN/lib'
expect_eq "probes: the program works" "$(status_of probe/prog)" 0
expect_eq "probes: trace --fail-on failed passes" "$(status_of "$runpatch" trace --fail-on failed -- probe/prog)" 0
"$runpatch" trace --json -o probe.json -- probe/prog >/dev/null 2>&1
expect_eq "probes: the trace's JSON parses, no duplicate key" "$(yes_if json_ok probe.json)" yes
expect_eq "probes: the failed names are reported as probes" "$(yes_if grep -q '"probe"' probe.json)" yes

# A report that cannot be written is a usage error (exit 2) in check and in trace alike.
expect_eq "check: an unwritable --junit exits 2" \
  "$(status_of "$runpatch" check --ignore-environment --junit /nonexistent/dir/j.xml probe)" 2
expect_eq "trace: an unwritable -o exits 2" "$(status_of "$runpatch" trace -o /nonexistent/dir/t.txt -- true)" 2

# 4. A self-test that fails, under trace --fail-on: the pipeline must fail too.
expect_eq "a failing command under trace --fail-on fails" \
  "$(yes_if test "$(status_of "$runpatch" trace --fail-on failed -- sh -c 'exit 3')" -ne 0)" yes

echo "ci gate: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
