#!/usr/bin/env bash
# A file inside an ext4 image inside a .gz (issue 39's aim): a 2 GiB ext4 file system holding
# ~400 MB of files (mkfs.ext4 -d, no root), gzip'ed (default level), mounted with -r at the
# default checkpoint spacing.  Prints the first mount, the median of 5 cold second mounts
# (page cache dropped, a fresh daemon each: ready = the mount point answers), and for 20 cold
# random 4 KiB reads (O_DIRECT) of files inside the file system, each on a fresh mount, what the read
# decoded (the root's user.tarseek.decoded_bytes and decoders_started, outer stream included)
# against the gzip checkpoint spacing.
#   bench/image-read.sh [DIR]     (default /var/tmp/tarseek-image; kept for the next run)
#   PREFETCH=1: leave prefetch on (default: --no-prefetch, so only the read itself decodes)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/var/tmp/tarseek-image}
build=${BUILD:-build}
tarseek=${TARSEEK:-$PWD/$build/fs/tarseek}
ninja -C "$build" >/dev/null
mkdir -p "$dir"
mnt=$(mktemp -d)
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; rmdir "$mnt"' EXIT
now() { date +%s.%N; }
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
opts=(-r); [ "${PREFETCH:-0}" = 1 ] || opts+=(--no-prefetch)

img=$dir/fs.img
if [ ! -s "$img.gz" ]; then
	rm -rf "$dir/src"; mkdir -p "$dir/src"
	/usr/bin/python3 - "$dir/src" <<'EOF'
import os, random, sys
# 400 files of 1 MiB: words drawn from a small vocabulary (compresses ~3:1, like text)
random.seed(39)
words = [bytes(random.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(2, 9)))
         for _ in range(5000)]
for d in range(20):
    os.makedirs(f"{sys.argv[1]}/d{d:02d}", exist_ok=True)
    for f in range(20):
        out = bytearray()
        while len(out) < 1 << 20:
            out += b" ".join(random.choices(words, k=4096)) + b"\n"
        open(f"{sys.argv[1]}/d{d:02d}/f{f:02d}.txt", "wb").write(out[:1 << 20])
EOF
	rm -f "$img"; mkfs.ext4 -q -F -d "$dir/src" "$img" 2G
	gzip -c "$img" > "$img.gz.part" && mv "$img.gz.part" "$img.gz"
	rm -f "$img"
fi
idx=$dir/index; rm -rf "$idx"; mkdir -p "$idx"
mount_once() { "$tarseek" "${opts[@]}" --index-folder "$idx" "$img.gz" "$mnt"; }

cold; t0=$(now); mount_once; t1=$(now)
first=$(echo "$t1 - $t0" | bc); fusermount3 -u "$mnt"
secs=()
for i in 1 2 3 4 5; do
	cold; t0=$(now); mount_once; t1=$(now)
	secs+=("$(echo "$t1 - $t0" | bc)"); fusermount3 -u "$mnt"
done
second=$(printf '%s\n' "${secs[@]}" | median)

mount_once; mapfile -t files < <(find "$mnt" -name 'f*.txt' -type f | sort); fusermount3 -u "$mnt"
[ ${#files[@]} -gt 0 ] || { echo "no file found inside the image" >&2; exit 1; }
RANDOM=39; spans=(); maxb=0
for i in $(seq 1 20); do
	f=${files[RANDOM % ${#files[@]}]}; off=$(( (RANDOM % 255) * 4096 ))
	cold; mount_once
	# O_DIRECT: the kernel asks the daemon for these 4 KiB only (a buffered read becomes a
	# 128 KiB readahead request, which may cross into the next span)
	dd if="$f" of=/dev/null bs=4096 skip=$((off / 4096)) count=1 iflag=direct status=none
	info=$(getfattr --only-values -n user.tarseek.info "$mnt" 2>/dev/null || true)
	b=$(sed -n 's/^decoded_bytes=//p' <<<"$info"); d=$(sed -n 's/^decoders_started=//p' <<<"$info")
	fusermount3 -u "$mnt"
	spans+=("$b"); [ "$b" -gt "$maxb" ] && maxb=$b
	echo "read $i: ${f#"$mnt"/} @ $off: decoded $b bytes, $d decoder(s)"
done
med=$(printf '%s\n' "${spans[@]}" | median)
echo "ext4 in .gz ($(du -h "$img.gz" | cut -f1)): first mount ${first}s; second mount, median of 5 cold: ${second}s; cold 4 KiB read decodes median $med, max $maxb bytes (checkpoint spacing 262144)"
