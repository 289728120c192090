#!/usr/bin/env bash
# The figures of the long tail of formats, in one run: the backup tree of the corpus as
# .tar.lz4 (lz4's default: independent blocks), .tar.lz (plzip: many members), .tar.Z, a cpio
# (newc) and an iso9660 image (genisoimage -R), made into DIR when missing.
#   1. the first mount of the three compressed tars next to their own tool's decompression,
#      in pairs, the input in the page cache (bench/first-mount-vs-decompressor.sh);
#   2. one tarseek-bench run, cold (page cache dropped, fresh mount before every run): the
#      extracted tree (baseline), backup.tar and the five forms; md5 of backup.list in-process.
#   bench/long-tail.sh [CORPUS] [DIR]     (defaults /var/tmp/tarseek-corpus, /var/tmp/c19;
#                                          RUNS=3; needs lz4, plzip, ncompress, cpio, genisoimage)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/var/tmp/tarseek-corpus}
dir=${2:-/var/tmp/c19}
build=${BUILD:-build}
runs=${RUNS:-3}
ninja -C "$build" >/dev/null
mkdir -p "$dir"

[ -s "$dir/backup.tar.lz4" ] || lz4 -q -c "$corpus/backup.tar" >"$dir/backup.tar.lz4"
[ -s "$dir/backup.tar.lz" ] || plzip -n "$(nproc)" -c "$corpus/backup.tar" >"$dir/backup.tar.lz"
[ -s "$dir/backup.tar.Z" ] || compress -c "$corpus/backup.tar" >"$dir/backup.tar.Z"
[ -s "$dir/backup.cpio" ] || (cd "$corpus/extracted/backup" && find . -mindepth 1 |
	LC_ALL=C sort | cpio -o --quiet -H newc >"$dir/backup.cpio")
[ -s "$dir/backup.iso" ] || genisoimage -quiet -R -l -o "$dir/backup.iso" "$corpus/extracted/backup"
ls -l "$corpus/backup.tar" "$dir"/backup.*[!e]

echo "== first mount next to the format's own tool (page cache warm, pairs)"
bash bench/first-mount-vs-decompressor.sh "$dir" \
	backup.tar.lz4:"lz4 -dc" backup.tar.lz:"plzip -n $(nproc) -dc" backup.tar.Z:"uncompress -c"

echo "== md5 of backup.list, cold, one tarseek-bench run"
"$build/tools/tarseek-bench" --cold --runs "$runs" --list "$corpus/backup.list" \
	-d "$corpus/extracted/backup" "$corpus/backup.tar" "$dir/backup.tar.lz4" \
	"$dir/backup.tar.lz" "$dir/backup.tar.Z" "$dir/backup.cpio" "$dir/backup.iso"
