#!/usr/bin/env bash
# The generated man pages: one per docs/man/PAGE.h2m, each with its EXIT
# STATUS, FILES and EXAMPLES sections, valid roff, and naming neither the
# build nor the source directory (help2man prints how it ran the program).
# Usage: man_pages_test.sh MAN_DIR SOURCE_DIR BUILD_DIR
set -euo pipefail
man_dir=$(realpath "$1") source=$(realpath "$2") build=$(realpath "$3")
passed=0 failed=0
fail() { echo "FAIL $page: $*"; failed=$((failed + 1)); }
escape() { printf '%s' "$1" | sed 's/-/\\-/g'; }  # help2man writes '-' as '\-'

for include in "$source"/docs/man/*.h2m; do
  page=$(basename "$include" .h2m)
  file=$man_dir/$page.1
  if [[ ! -s $file ]]; then fail "no $file"; continue; fi
  before=$failed
  for section in '.SH "EXIT STATUS"' '.SH FILES' '.SH EXAMPLES'; do
    grep -qxF "$section" "$file" || fail "no section ${section#.SH }"
  done
  title=$(printf '%s' "$page" | tr '[:lower:]' '[:upper:]')
  grep -q "^\.TH $title " "$file" || fail "title is not $title: $(grep '^\.TH' "$file")"
  for dir in "$build" "$source"; do
    if grep -nF -e "$dir" -e "$(escape "$dir")" "$file"; then fail "names the directory $dir"; fi
  done
  warnings=$(groff -man -ww -z "$file" 2>&1) || true
  [[ -z $warnings ]] || fail "groff: $warnings"
  [[ $failed != "$before" ]] || passed=$((passed + 1))
done
# ... and no page without its sections.
for file in "$man_dir"/*.1; do
  page=$(basename "$file" .1)
  [[ -f $source/docs/man/$page.h2m ]] || fail "has no docs/man/$page.h2m"
done
echo "man pages: $passed passed, $failed failed"
[[ $failed == 0 && $passed -gt 0 ]]
