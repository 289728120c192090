#!/usr/bin/env bash
# The first mount of .tar.gz archives with each inflater, next to the decompressors, in rounds:
# every round runs `gzip -dc`, `pigz -dc`, a tarseek first mount with ISA-L, one with zlib
# (TARSEEK_INFLATE=zlib: the same code as a -Disal=disabled build) and, when it is installed
# (shared/bench/build-peers.sh), a ratarmount first mount with its rapidgzip backend, the input
# in the page cache for all.  Prints every time and the medians, so ratios are within one run.
#   bench/gzip-engines.sh [CORPUS] [ARCHIVE...]      (ROUNDS=3; default archives: backup.tar.gz
#                                                      and telemetry.tar.gz of the corpus)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/var/tmp/tarseek-corpus}
build=${BUILD:-build}
tarseek=$PWD/$build/fs/tarseek
ratarmount=${RATARMOUNT:-/opt/peers/bin/ratarmount}
rounds=${ROUNDS:-3}
archives=(backup.tar.gz telemetry.tar.gz)
[ $# -ge 2 ] && archives=("${@:2}")
ninja -C "$build" >/dev/null

mnt=$(mktemp -d) idx=$(mktemp -d)
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; rm -rf "$mnt" "$idx"' EXIT
. bench/rounds.sh

names=("gzip -dc" "pigz -dc" "tarseek ISA-L" "tarseek zlib")
[ -x "$ratarmount" ] && names+=("ratarmount -P 0")

# one timed step: $1 is the name, the archive is $2
step() {
  local f=$2
  case $1 in
  "gzip -dc") gzip -dc < "$f" > /dev/null ;;
  "pigz -dc") pigz -dc < "$f" > /dev/null ;;
  "tarseek ISA-L")
    rm -f "$idx/i"; TARSEEK_INFLATE= "$tarseek" -q --index-file "$idx/i" "$f" "$mnt"
    fusermount3 -u "$mnt" ;;
  "tarseek zlib")
    rm -f "$idx/i"; TARSEEK_INFLATE=zlib "$tarseek" -q --index-file "$idx/i" "$f" "$mnt"
    fusermount3 -u "$mnt" ;;
  "ratarmount -P 0")
    rm -f "$idx/r"; "$ratarmount" -P 0 --index-file "$idx/r" "$f" "$mnt" > /dev/null
    fusermount3 -u "$mnt" ;;
  esac
}

for a in "${archives[@]}"; do
  rounds "$corpus/$a" "pigz -dc"
done
