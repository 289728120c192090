#!/usr/bin/env bash
# bzip2 first mounts next to the decompressors, in rounds (issue 21): every round runs
# `bzip2 -dc`, `lbzip2 -dc` (when installed), a tarseek first mount with its own block decoder,
# one with libbz2 (TARSEEK_BZIP2=libbz2: the decoder before bzip2_block.c) and, when it is
# installed (shared/bench/build-peers.sh), a ratarmount first mount (-P 0: its parallel bzip2
# decoder on every core), the input in the page cache for all.  Prints every time and the
# medians with their ratio to ratarmount's (or to bzip2 -dc's without it).
#   bench/bzip2-decoders.sh [CORPUS] [ARCHIVE...]     (ROUNDS=3; default archives: backup.tar.bz2
#                                                     and telemetry.tar.bz2 of the corpus)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/var/tmp/tarseek-corpus}
build=${BUILD:-build}
tarseek=$PWD/$build/fs/tarseek
ratarmount=${RATARMOUNT:-/opt/peers/bin/ratarmount}
archives=(backup.tar.bz2 telemetry.tar.bz2)
[ $# -ge 2 ] && archives=("${@:2}")
ninja -C "$build" >/dev/null

mnt=$(mktemp -d) idx=$(mktemp -d)
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; rm -rf "$mnt" "$idx"' EXIT
. bench/rounds.sh

names=("bzip2 -dc")
command -v lbzip2 > /dev/null && names+=("lbzip2 -dc")
names+=("tarseek" "tarseek libbz2")
base="bzip2 -dc"
[ -x "$ratarmount" ] && names+=("ratarmount -P 0") && base="ratarmount -P 0"

step() {
  local f=$2
  case $1 in
  "bzip2 -dc") bzip2 -dc < "$f" > /dev/null ;;
  "lbzip2 -dc") lbzip2 -dc < "$f" > /dev/null ;;
  "tarseek")
    rm -f "$idx/i"; TARSEEK_BZIP2= "$tarseek" -q --index-file "$idx/i" "$f" "$mnt"
    fusermount3 -u "$mnt" ;;
  "tarseek libbz2")
    rm -f "$idx/i"; TARSEEK_BZIP2=libbz2 "$tarseek" -q --index-file "$idx/i" "$f" "$mnt"
    fusermount3 -u "$mnt" ;;
  "ratarmount -P 0")
    rm -f "$idx/r"; "$ratarmount" -P 0 --index-file "$idx/r" "$f" "$mnt" > /dev/null
    fusermount3 -u "$mnt" ;;
  esac
}

for a in "${archives[@]}"; do
  rounds "$corpus/$a" "$base"
done
