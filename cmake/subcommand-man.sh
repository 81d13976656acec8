#!/bin/sh
# Writes the man page of one runpatch subcommand (runpatch-SUB.1) from its
# --help, like git's per-command pages.  Usage: subcommand-man.sh HELP2MAN RUNPATCH VERSION SUB SUMMARY OUT
set -eu
help2man=$1 runpatch=$2 version=$3 sub=$4 summary=$5 out=$6
upper=$(printf '%s' "runpatch-$sub" | tr '[:lower:]' '[:upper:]')
"$help2man" --no-info --no-discard-stderr --version-string="$version" --help-option="$sub --help" \
  -n "$summary" "$runpatch" |
  sed -e "s/^\.TH RUNPATCH /.TH $upper /" -e "s/^runpatch \\\\- /runpatch-$sub \\\\- /" >"$out"
