#!/usr/bin/env bash
# First mount (index built from scratch, mount ready) next to the plain decompression of the
# same file by its reference tool, in pairs: for every archive, ROUNDS rounds of
# "reference tool to /dev/null, then a tarseek first mount", the input in the page cache
# for both.  Prints each pair and the medians, so the ratio is taken within one run.
#   bench/first-mount-vs-decompressor.sh [CORPUS]        (ROUNDS=3 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/var/tmp/tarseek-corpus}
build=${BUILD:-build}
tarseek=$PWD/$build/fs/tarseek
rounds=${ROUNDS:-3}
ninja -C "$build" >/dev/null

pairs=(backup.tar.gz:"gzip -dc" backup.tar.bz2:"bzip2 -dc" backup.tar.xz:"xz -T2 -dc"
       backup.tar.pxz:"xz -T2 -dc" backup.tar.zst:"zstd -dc" backup.tar.lzo:"lzop -dc"
       telemetry.tar.gz:"gzip -dc" telemetry.tar.bz2:"bzip2 -dc" telemetry.tar.xz:"xz -T2 -dc"
       telemetry.tar.zst:"zstd -dc" telemetry.tar.lzo:"lzop -dc")
[ $# -ge 2 ] && pairs=("${@:2}")

mnt=$(mktemp -d) idx=$(mktemp -d)
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; rm -rf "$mnt" "$idx"' EXIT
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

printf '%-20s %-12s %10s %10s %7s\n' archive reference "ref (s)" "mount (s)" ratio
for p in "${pairs[@]}"; do
  file=${p%%:*} cmd=${p#*:}
  cat "$corpus/$file" > /dev/null
  refs=() mounts=()
  for ((r = 0; r < rounds; r++)); do
    t0=$(now); $cmd < "$corpus/$file" > /dev/null; t1=$(now)
    rm -f "$idx/i"
    t2=$(now); "$tarseek" -q --index-file "$idx/i" "$corpus/$file" "$mnt"; t3=$(now)
    fusermount3 -u "$mnt"
    refs+=("$(echo "$t1 - $t0" | bc)") mounts+=("$(echo "$t3 - $t2" | bc)")
    printf '%-20s %-12s %10.2f %10.2f\n' "$file" "${cmd%% *}" "${refs[-1]}" "${mounts[-1]}"
  done
  rm_=$(printf '%s\n' "${refs[@]}" | median) mm=$(printf '%s\n' "${mounts[@]}" | median)
  printf '%-20s %-12s %10.2f %10.2f %7.2f  (medians of %d)\n' "$file" "$cmd" "$rm_" "$mm" \
    "$(echo "$mm / $rm_" | bc -l)" "$rounds"
done
