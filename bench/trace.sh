#!/usr/bin/env bash
# Cost of `runpatch trace` per load: the fixture trace-many dlopens N
# libraries through its runpath (fixtures/src/trace_many.c), timed plain, with
# the audit library alone (LD_AUDIT and a record file, as runpatch sets them),
# and under `runpatch trace -o /dev/null`; medians of RUNS wall-clock runs.
# Usage: trace.sh BUILD_DIR [RUNS]   (docs/trace.md has the numbers)
set -euo pipefail
build=$(realpath "$1") runs=${2:-31}
fx=$build/fixtures/out/trace runpatch=$build/bin/runpatch audit=$build/lib/runpatch/runpatch-audit.so
median_ms() {  # COMMAND...: the median wall time of RUNS runs, in ms
  local times=() s e
  for _ in $(seq "$runs"); do
    s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N)
    times+=($(((e - s) / 1000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}
work=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-trace-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# trace-many finds libmany-1.so ... libmany-300.so through its runpath, $ORIGIN/../many.
mkdir -p "$work/bin" "$work/many"
cp "$fx/bin/trace-many" "$work/bin/"
for i in $(seq 1 300); do cp "$fx/many/libmany.so" "$work/many/libmany-$i.so"; done
fx=$work
records=$work/records
: >"$records"
exec 9>>"$records"
audited=(env "RUNPATCH_TRACE_FD=9:$(stat -c %d "$records"):$(stat -c %i "$records")" "LD_AUDIT=$audit")
echo "loads  plain_ms  audit_ms  trace_ms"
for n in 1 300; do
  printf '%5s  %8s  %8s  %8s\n' "$n" "$(median_ms "$fx/bin/trace-many" "$n")" \
    "$(median_ms "${audited[@]}" "$fx/bin/trace-many" "$n")" \
    "$(median_ms "$runpatch" trace -o /dev/null -- "$fx/bin/trace-many" "$n")"
done
