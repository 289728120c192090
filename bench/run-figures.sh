#!/usr/bin/env bash
# Produces the figures of the closing notes on the benchmark corpus (bench/make-corpus.sh):
# mount times, index sizes, RSS and the md5 workload of every archive next
# to the extracted tree and the reference decompressors, each comparison in one run.
#   bench/run-figures.sh [CORPUS] [OUT]        (root: drops the page cache for cold runs)
# Defaults: /var/tmp/tarseek-corpus and /var/tmp/tarseek-figures.  Takes ~30-40 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/var/tmp/tarseek-corpus}
out=${2:-/var/tmp/tarseek-figures}
build=${BUILD:-build}
tarseek=$PWD/$build/fs/tarseek
bench=$PWD/$build/tools/tarseek-bench
runs=${RUNS:-3}
mkdir -p "$out"
ninja -C "$build" >/dev/null

# extracted copies of both trees: the physical baseline
for t in telemetry backup; do
  if [ ! -d "$corpus/extracted/$t" ]; then
    mkdir -p "$corpus/extracted/$t.part"
    tar -xf "$corpus/$t.tar" -C "$corpus/extracted/$t.part"
    mv "$corpus/extracted/$t.part" "$corpus/extracted/$t"
  fi
done

log() { echo "== $*" | tee -a "$out/summary.txt"; }

# 1. reference decompression, input in the page cache (seconds)
log "reference decompressors (input cached), $(date)"
for f in backup.tar.gz:"gzip -dc" backup.tar.bz2:"bzip2 -dc" backup.tar.xz:"xz -dc" \
         backup.tar.xz:"xz -T2 -dc" backup.tar.pxz:"xz -T2 -dc" backup.tar.zst:"zstd -dc" \
         backup.tar.lzo:"lzop -dc" telemetry.tar.gz:"gzip -dc" telemetry.tar.bz2:"bzip2 -dc" \
         telemetry.tar.xz:"xz -dc" telemetry.tar.zst:"zstd -dc" telemetry.tar.lzo:"lzop -dc"; do
  file=${f%%:*} cmd=${f#*:}
  cat "$corpus/$file" > /dev/null
  s=$( { /usr/bin/time -f %e $cmd < "$corpus/$file" > /dev/null; } 2>&1 )
  log "$cmd $file: $s s"
done

# 2. the md5 workload + mount costs, one tarseek-bench run per comparison
bench_run() { # name, list, extra args...
  local name=$1 list=$2; shift 2
  log "tarseek-bench $name"
  "$bench" --list "$list" --exec md5sum --seed 7 --runs "$runs" -q \
    --csv "$out/$name.csv" --json "$out/$name.json" --svg "$out/$name.svg" "$@" \
    | tee "$out/$name.txt"
}
tl=$corpus/telemetry.list bl=$corpus/backup.list
bench_run telemetry-cold "$tl" --cold --dir "$corpus/extracted/telemetry" \
  "$corpus"/telemetry.tar "$corpus"/telemetry.tar.{gz,bz2,xz,pxz,zst,lzo} "$corpus/telemetry.1block.tar.xz"
bench_run backup-cold "$bl" --cold --dir "$corpus/extracted/backup" \
  "$corpus"/backup.tar "$corpus"/backup.tar.{gz,bz2,xz,pxz}
bench_run backup-fast-cold "$bl" --cold --dir "$corpus/extracted/backup" \
  "$corpus"/backup.tar.{zst,lzo}
bench_run backup-warm "$bl" --warm --dir "$corpus/extracted/backup" \
  "$corpus"/backup.tar "$corpus"/backup.tar.{gz,zst,lzo}
bench_run telemetry-fast-warm "$tl" --warm --dir "$corpus/extracted/telemetry" \
  "$corpus"/telemetry.tar.{zst,lzo}

# gzip checkpoint spacing: index size and first mount against the md5 workload (README)
sp=()
for m in 256K 1M 4M; do
  sp+=(--mount-cmd "$tarseek -f --gzip-spacing $m --index-file {index} {archive} {mnt}"
       --name "gzip-spacing-$m" "$corpus/backup.tar.gz")
done
bench_run gzip-spacing "$bl" --cold --dir "$corpus/extracted/backup" "${sp[@]}"

# 3. a union of the telemetry bundle in all its codecs (7 sources)
log "union of 7 telemetry sources"
mnt=$(mktemp -d) idx=$(mktemp -d)
srcs=("$corpus"/telemetry.tar.{gz,bz2,xz,pxz,zst,lzo} "$corpus/telemetry.1block.tar.xz")
for pass in first second; do
  [ $pass = first ] && rm -f "$idx"/*
  sync; echo 3 > /proc/sys/vm/drop_caches
  t0=$(date +%s.%N)
  "$tarseek" -q --index-folder "$idx" "${srcs[@]}" "$mnt"
  t1=$(date +%s.%N)
  n=$(find "$mnt" | wc -l)
  t2=$(date +%s.%N)
  log "union $pass mount: $(echo "$t1 - $t0" | bc) s; find: $n entries in $(echo "$t2 - $t1" | bc) s"
  fusermount3 -u "$mnt"
done
"$bench" --list "$tl" --exec md5sum --seed 7 --runs "$runs" -q --cold \
  --mount-cmd "$tarseek -f --index-folder $idx ${srcs[*]} {mnt}" --name union-of-7 "${srcs[0]}" \
  --mount-cmd '' --index-dir "$idx" "$corpus/telemetry.tar.xz" | tee "$out/union.txt"
rm -rf "$mnt" "$idx"
log "done $(date)"
