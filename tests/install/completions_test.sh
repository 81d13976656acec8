#!/usr/bin/env bash
# The bash and zsh completions of runpatch-patchelf and auto-patchelf, which the
# build writes from their option tables, complete what each tool takes: every
# option its --help lists is offered; after an option that takes a value, no
# option but its value (a file, a directory, one of its choices, or nothing for
# free text); after one that takes none, options again.
# Usage: completions_test.sh COMPLETIONS_DIR BIN_DIR
set -uo pipefail
for file in runpatch-patchelf.bash _runpatch-patchelf auto-patchelf.bash _auto-patchelf; do
  [[ -f $1/$file ]] || { echo "FAIL: no $1/$file (the build's completions target writes it)"; exit 1; }
done
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
check "runpatch-patchelf: complete -o filenames" "1" "$(complete -p runpatch-patchelf | grep -c -- '-o filenames')"

missing=$(comm -23 <("$bin/auto-patchelf" --help 2>&1 | help_options) <(offered auto-patchelf --))
check "auto-patchelf offers every option of its --help" "" "$missing"
check "auto-patchelf --search-path" "recursive shallow " "$(complete_words auto-patchelf --search-path '')"
check "auto-patchelf --no-r" "--no-recurse " "$(complete_words auto-patchelf --no-r)"
check "after --extra-args, no auto-patchelf options" "" "$(complete_words auto-patchelf --paths . --extra-args --no-r)"
check "after --extra-args, patchelf's options" "--set-rpath " "$(complete_words auto-patchelf --extra-args --set-r)"
check "after --extra-args, patchelf's values" "freebsd " \
  "$(complete_words auto-patchelf --paths . --extra-args --set-os-abi fr)"
check "auto-patchelf: complete -o filenames" "1" "$(complete -p auto-patchelf | grep -c -- '-o filenames')"

# What a value completes as, by the name --help gives it: a file, a directory,
# or free text (nothing offered); a fixed set is checked against the parser below.
# Completed in a directory holding one file and one directory.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/adir" && touch "$scratch/afile" && cd "$scratch" || exit 1
expected_values() {  # METAVAR
  case $1 in
    FILENAME | FILE | NAME_MAP_FILE | INTERPRETER | PATHS | LIBS) echo "adir afile " ;;
    DIR | PREFIX | PATH | RUNTIME_DEPENDENCIES | APPEND_RPATHS) echo "adir " ;;
    ABI | MODE) echo "choices" ;;
    *) echo "" ;;
  esac
}
# TOOL OPTION BEFORE METAVAR: BEFORE are the words between OPTION and the value (an earlier value).
check_value() {
  local tool=$1 option=$2 before=$3 metavar=$4 expected
  expected=$(expected_values "$metavar")
  check "$tool $option $before<TAB> offers no option" "" "$(complete_words "$tool" "$option" $before --)"
  if [[ $expected == choices ]]; then
    [[ -n $(complete_words "$tool" "$option" $before '') ]] || check "$tool $option $before offers its choices" x ""
  else
    check "$tool $option $before<TAB> completes $metavar" "$expected" "$(complete_words "$tool" "$option" $before '')"
  fi
}

# runpatch-patchelf's help lines: "  [--option METAVAR...]".
patchelf_options() { "$bin/runpatch-patchelf" --help 2>&1 | sed -n 's/^  \[\(--[a-z-]*\)\([^]]*\)\].*/\1\2/p'; }
while read -r option metavars; do
  if [[ -z $metavars ]]; then
    check "$option is followed by options" "--help" "$(offered runpatch-patchelf "$option" --help)"
    continue
  fi
  read -r -a words <<<"$metavars"
  check_value runpatch-patchelf "$option" "" "${words[0]}"
  ((${#words[@]} > 1)) && check_value runpatch-patchelf "$option" x "${words[1]}"
done < <(patchelf_options)
for abi in $(complete_words runpatch-patchelf --set-os-abi ''); do
  check "--set-os-abi $abi is accepted" "" "$("$bin/runpatch-patchelf" --set-os-abi "$abi" 2>&1 | grep 'OS ABI')"
done

# auto-patchelf's option lines, less the help text and -h/-v: "--option METAVAR",
# "--option [METAVAR ...]" (nargs='*'), "--option ..." (the rest of the line).
auto_patchelf_options() {
  "$bin/auto-patchelf" --help 2>&1 | sed -n '/^options:/,$p' | grep -- '^  -' | sed 's/^  //; s/  .*//; s/^-[a-z], //'
}
while read -r option metavars; do
  case $metavars in
    "") check "$option is followed by options" "--help" "$(offered auto-patchelf "$option" --help)" ;;
    ...) check "$option is followed by patchelf's options" "--set-rpath " \
      "$(complete_words auto-patchelf "$option" --set-r)" ;;
    \[*) # nargs='*': values, up to the next option
      check "$option's values end at an option" "--help" "$(offered auto-patchelf "$option" --help)"
      metavars=${metavars#[}
      check "$option <TAB> completes ${metavars%% *}" "$(expected_values "${metavars%% *}")" \
        "$(complete_words auto-patchelf "$option" '')" ;;
    *)
      read -r -a words <<<"$metavars"
      check_value auto-patchelf "$option" "" "${words[0]}"
      ((${#words[@]} > 1)) && check_value auto-patchelf "$option" x "${words[1]}" ;;
  esac
done < <(auto_patchelf_options)
for mode in $(complete_words auto-patchelf --search-path ''); do
  check "--search-path $mode is accepted" "" \
    "$("$bin/auto-patchelf" --paths adir --search-path "$mode" adir --dry-run 2>&1 | grep 'invalid mode')"
done

# zsh: each file parses, and its _arguments spec gives each option as many
# values as --help says (a ":message:action" per value; nargs='*' its first,
# --extra-args ":*::message:action").
zsh_colons() {  # FILE OPTION: the colons after the option's names and explanation in its spec
  sed -n '/^_arguments/,$p' "$1" | grep -E -- "(['{,*])$2(['},:[]|\$)" | head -1 |
    sed "s/\[[^]]*\]//; s/.*$2//; s/'\\\\''//g" | tr -cd ':' | wc -c
}
if command -v zsh >/dev/null; then
  for file in _runpatch-patchelf _auto-patchelf; do
    check "zsh -n $file" "" "$(zsh -n "$completions/$file" 2>&1)"
  done
  while read -r option metavars; do
    read -r -a words <<<"$metavars"
    check "zsh: $option takes ${#words[@]} values" "$((2 * ${#words[@]}))" \
      "$(zsh_colons "$completions/_runpatch-patchelf" "$option")"
  done < <(patchelf_options)
  while read -r option metavars; do
    read -r -a words <<<"$metavars"
    expected=$((2 * ${#words[@]}))
    [[ $metavars == \[* ]] && expected=2
    [[ $metavars == ... ]] && expected=4
    check "zsh: $option takes ${metavars:-no values}" "$expected" "$(zsh_colons "$completions/_auto-patchelf" "$option")"
  done < <(auto_patchelf_options)
else
  echo "SKIP zsh checks: zsh is not installed"
fi

echo "completions: $passed passed, $failed failed"
[[ $failed == 0 ]]
