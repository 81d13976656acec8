#!/usr/bin/env bash
# The bash completions complete what each tool takes: every option its --help
# lists is offered, and option values where they are a fixed set.
# Usage: completions_test.sh COMPLETIONS_DIR BIN_DIR
set -uo pipefail
completions=$(realpath "$1") bin=$(realpath "$2")
passed=0 failed=0
check() {  # NAME EXPECTED ACTUAL
  if [[ $2 == "$3" ]]; then passed=$((passed + 1)); else echo "FAIL $1: expected '$2', got '$3'"; failed=$((failed + 1)); fi
}
# Completes the last word of "$@" with the function the file registers for $1.
complete_words() {
  local function
  function=$(complete -p "$1" | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
  COMP_WORDS=("$@") COMP_CWORD=$(($# - 1)) COMPREPLY=()
  "$function" 2>/dev/null
  ((${#COMPREPLY[@]})) && printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}
# The options a --help text lists (words starting with --).
help_options() { grep -o -- '--[a-z][a-z-]*' | sort -u; }
offered() { complete_words "$@" | tr ' ' '\n' | sed '/^$/d' | sort -u; }

source "$completions/runpatch-patchelf.bash"
source "$completions/auto-patchelf.bash"

missing=$(comm -23 <("$bin/runpatch-patchelf" --help 2>&1 | help_options) <(offered runpatch-patchelf --))
check "runpatch-patchelf offers every option of its --help" "" "$missing"
check "runpatch-patchelf --set-r" "--set-rpath " "$(complete_words runpatch-patchelf --set-r)"
check "runpatch-patchelf --set-os-abi fr" "freebsd " "$(complete_words runpatch-patchelf --set-os-abi fr)"
check "runpatch-patchelf --set-rpath takes a value" "" "$(complete_words runpatch-patchelf --set-rpath --)"

missing=$(comm -23 <("$bin/auto-patchelf" --help 2>&1 | help_options) <(offered auto-patchelf --))
check "auto-patchelf offers every option of its --help" "" "$missing"
check "auto-patchelf --search-path" "recursive shallow " "$(complete_words auto-patchelf --search-path '')"
check "auto-patchelf --no-r" "--no-recurse " "$(complete_words auto-patchelf --no-r)"
check "after --extra-args, no auto-patchelf options" "" "$(complete_words auto-patchelf --paths . --extra-args --no-r)"

echo "completions: $passed passed, $failed failed"
[[ $failed == 0 ]]
