#!/bin/sh
# Writes one man page with help2man: the program's --help, plus the EXIT
# STATUS, FILES and EXAMPLES sections of INCLUDE (docs/man/PAGE.h2m). The
# program runs by its bare name, found on PATH, because help2man prints how
# it was invoked (runpatch-patchelf's "syntax: ARGV0", as patchelf's) and a
# page must not name the build directory; a page that still does fails.
# With SUB, the page is runpatch-SUB.1 from `runpatch SUB --help`, like git's
# per-command pages.
# Usage: man-page.sh HELP2MAN PROGRAM VERSION SUMMARY INCLUDE OUT [SUB]
set -eu
help2man=$1 program=$2 version=$3 summary=$4 include=$5 out=$6 sub=${7:-}
dir=$(dirname "$program") name=$(basename "$program")
help_option=--help
[ -z "$sub" ] || help_option="$sub --help"
PATH="$dir:$PATH" "$help2man" --no-info --no-discard-stderr --version-string="$version" \
  --help-option="$help_option" --include="$include" -n "$summary" -o "$out.tmp" "$name"
if [ -n "$sub" ]; then
  upper=$(printf '%s' "runpatch-$sub" | tr '[:lower:]' '[:upper:]')
  sed -e "s/^\.TH RUNPATCH /.TH $upper /" -e "s/^runpatch \\\\- /runpatch-$sub \\\\- /" "$out.tmp" >"$out.sub"
  mv "$out.sub" "$out.tmp"
fi
# help2man writes '-' as '\-': look for the directory both ways.
escaped=$(printf '%s' "$dir" | sed 's/-/\\-/g')
if grep -qF -e "$dir" -e "$escaped" "$out.tmp"; then
  echo "man-page.sh: $out would name the build directory $dir" >&2
  rm -f "$out.tmp"
  exit 1
fi
mv "$out.tmp" "$out"
