#!/usr/bin/env bash
# The README's first command on a fresh machine: ./scripts/demo in a minimal
# Debian 12 (debootstrap --variant=minbase, nothing of the build installed),
# timed from the start to the demo's first result, with the install and the
# build apart. Needs root, debootstrap and Debian's archive (the machine's
# own mirror); the chroot and its bind mounts are removed afterwards.
# Usage: bench/fresh_demo.sh [MIRROR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mirror=${1:-http://deb.debian.org/debian}
[[ $(id -u) == 0 ]] || { echo "fresh_demo: needs root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "fresh_demo: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
fresh=$(mktemp -d "${TMPDIR:-/tmp}/runpatch-fresh.XXXXXX")
cleanup() {
  umount "$fresh/proc" "$fresh/dev" 2>/dev/null || true
  rm -rf "$fresh"
}
trap cleanup EXIT
debootstrap --variant=minbase bookworm "$fresh" "$mirror" >"$fresh.debootstrap.log" 2>&1 ||
  { cat "$fresh.debootstrap.log" >&2; exit 1; }
rm -f "$fresh.debootstrap.log"
cp /etc/resolv.conf "$fresh/etc/"
mount -t proc proc "$fresh/proc"
mount --bind /dev "$fresh/dev"
# The tree a clone gives (tracked files only), without its history.
mkdir -p "$fresh/root/runpatch"
git -C "$root" ls-files -z | (cd "$root" && xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$fresh/root/runpatch"
# The demo's own install step first, timed apart; then the demo (its install
# step finds everything and returns), each output line with the seconds since
# the start.
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
start=$(now)
chroot "$fresh" /bin/bash -c 'cd /root/runpatch && RUNPATCH_DEPS=core scripts/install-deps' >/dev/null 2>&1
installed=$(since "$start")
chroot "$fresh" /bin/bash -c 'cd /root/runpatch && ./scripts/demo 2>&1' |
  while IFS= read -r line; do printf '%6s  %s\n' "$(since "$start")" "$line"; done | tee "$fresh/demo.log"
first=$(grep -m1 '  == ' "$fresh/demo.log" | awk '{print $1}')
total=$(since "$start")
echo "fresh_demo: packages installed after $installed s, first result after $first s, done after $total s" \
  "($(nproc) cores, mirror $mirror)"
