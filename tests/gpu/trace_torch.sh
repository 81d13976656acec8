#!/usr/bin/env bash
# GPU validation of `runpatch trace` (docs/gpu-validation.md, issue 37): trace
# PyTorch's CUDA start-up in a real venv with and without LD_LIBRARY_PATH; then
# strip the runpaths of a copy of the venv, let the trace (run with an
# LD_LIBRARY_PATH that finds the copy's libraries) name the fixes, apply them
# (only to files of the copy), and show that the same command runs with
# LD_LIBRARY_PATH unset and /etc/ld.so.cache hidden.
#
# Usage: RUNPATCH=/path/to/runpatch tests/gpu/trace_torch.sh [VENV] [OUT]
set -uo pipefail
rp=${RUNPATCH:?set RUNPATCH to the runpatch binary}
venv=${1:-/opt/torch/.venv}
out=${2:-${OUT:-/tmp/trace-torch}}
copy=${COPY_DIR:-/tmp/venv-copy}
mkdir -p "$out"
code="import torch; x = torch.randn(8, device='cuda'); print('cuda ok', torch.cuda.get_device_name(), float(x.abs().sum()) > 0)"
py=$venv/bin/python
echo "host LD_LIBRARY_PATH=${LD_LIBRARY_PATH-<unset>}" | tee "$out/summary.txt"

summarize() {  # report -> counts of its sections
  awk '/^host-dependent/{s="host"} /^undeclared dlopen/{s="undeclared"} /^failed:/{s="failed"} /^all loads:/{s="all"} /^fixes:/{s="fixes"}
       /^  [^ ]/{n[s]++} END{printf "host-dependent %d, undeclared dlopen %d, failed %d, loads %d, fixes %d\n", n["host"], n["undeclared"], n["failed"], n["all"], n["fixes"]}' "$1"
}

# 1. The venv as installed: as the host runs it, and with LD_LIBRARY_PATH unset.
"$rp" trace -o "$out/venv-host-env.txt" -- "$py" -c "$code" | tee -a "$out/summary.txt"
echo "venv, host environment: $(summarize "$out/venv-host-env.txt")" | tee -a "$out/summary.txt"
env -u LD_LIBRARY_PATH "$rp" trace --json -o "$out/venv-no-llp.json" -- "$py" -c "$code" >/dev/null
env -u LD_LIBRARY_PATH "$rp" trace -o "$out/venv-no-llp.txt" -- "$py" -c "$code" | tee -a "$out/summary.txt"
echo "venv, LD_LIBRARY_PATH unset: $(summarize "$out/venv-no-llp.txt")" | tee -a "$out/summary.txt"
grep -E 'dlopened by' "$out/venv-no-llp.txt" | sort | uniq -c | sort -rn | head -40 > "$out/venv-dlopens.txt"

# 2. A copy without runpaths: it fails; the trace under an LD_LIBRARY_PATH that
# finds its libraries names the runpath entries each requester lacks.
rm -rf "$copy" && cp -a "$venv" "$copy"
site=$(ls -d "$copy"/lib/python3*/site-packages)
find "$site/torch" "$site/nvidia" -type f -name '*.so*' -print0 |
  xargs -0 "$rp" set --remove-runpath --no-sync -q 2>"$out/strip.err"
echo "stripped: $(find "$site/torch" "$site/nvidia" -type f -name '*.so*' | wc -l) files" | tee -a "$out/summary.txt"
env -u LD_LIBRARY_PATH "$copy/bin/python" -c "$code" >"$out/stripped-run.txt" 2>&1
echo "stripped copy, LD_LIBRARY_PATH unset: exit $? ($(tail -1 "$out/stripped-run.txt"))" | tee -a "$out/summary.txt"
llp=$(find "$site/torch/lib" "$site/nvidia" -type d -name lib | paste -sd:)
for round in 1 2 3 4 5 6; do
  LD_LIBRARY_PATH=$llp "$rp" trace -o "$out/copy-round$round.txt" -- "$copy/bin/python" -c "$code" >/dev/null
  # Only the copy's files are edited: fixes for the host's python are not ours to make.
  grep -E "^  runpatch set --add-runpath .* '?$copy/" "$out/copy-round$round.txt" > "$out/fixes-round$round.txt"
  echo "round $round: $(summarize "$out/copy-round$round.txt"); applying $(wc -l < "$out/fixes-round$round.txt") fixes to the copy" | tee -a "$out/summary.txt"
  [[ -s $out/fixes-round$round.txt ]] || break
  while read -r line; do eval "\"$rp\" ${line#runpatch } --no-sync -q"; done < "$out/fixes-round$round.txt"
done

# 3. The fixed copy with LD_LIBRARY_PATH unset and the cache hidden.
hide_cache() {
  if [[ $(id -u) == 0 ]] && command -v unshare >/dev/null; then
    unshare -m sh -c 'mount --bind /dev/null /etc/ld.so.cache && exec "$@"' sh "$@"
  else
    echo "(not root: the cache stays visible)" >&2
    "$@"
  fi
}
hide_cache env -u LD_LIBRARY_PATH "$copy/bin/python" -c "$code" >"$out/fixed-run.txt" 2>&1
echo "fixed copy, LD_LIBRARY_PATH unset, /etc/ld.so.cache hidden: exit $? ($(tail -1 "$out/fixed-run.txt"))" | tee -a "$out/summary.txt"
hide_cache env -u LD_LIBRARY_PATH "$rp" trace -o "$out/fixed-trace.txt" -- "$copy/bin/python" -c "$code" >/dev/null
echo "fixed copy traced: $(summarize "$out/fixed-trace.txt")" | tee -a "$out/summary.txt"
rm -rf "$copy"
