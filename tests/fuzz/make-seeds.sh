#!/usr/bin/env bash
# Makes the seed corpora of the fuzz harnesses with the real tools, into DIR:
#   DIR/fuzz_tar/            tars: GNU tar in every format (v7, oldgnu, gnu, ustar, posix, with
#                            sparse files in each sparse version, xattrs, long names, links),
#                            bsdtar, appended and concatenated archives, damaged ones
#   DIR/fuzz_codec_NAME/     those tars (and a bigger stream, a non-tar file) compressed by the
#                            real compressor(s) of codec NAME, plus damaged ones
#   DIR/fuzz_index/          one options byte (see fuzz_index.c) + a tar or a compressed file
#   DIR/fuzz_7z/             7z archives of a small tree by 7zz in every method and filter,
#                            plain and compressed headers, encrypted ones, damaged ones
#   DIR/fuzz_zip/            zips by Info-ZIP (-0/-6/-9, bzip2, -P, to a pipe: data
#                            descriptors), 7zz's AES and ZipCrypto (-psecret), 7zz's Deflate64 and PPMd, Python's zipfile (LZMA, zip64 forced), bsdtar, xz and
#                            zstd entries written by hand, a prefixed one, a split one (zip -s
#                            64k: its parts one after the other), damaged ones
#   DIR/fuzz_deflate64/      raw Deflate64 streams: zip entries 7zz wrote with -mm=Deflate64
#                            (a tar, text, random bytes repeated 54 KB later), cut out of
#                            their zips, a truncated and a flipped one
#   DIR/fuzz_ppmd/           5 PPMd property bytes + a raw stream: the packed streams of 7z
#                            archives 7zz wrote with -m0=PPMd (orders 2..32, 64 KiB..16 MiB;
#                            text, a tar, random bytes), cut out, a truncated and a flipped one
#   DIR/fuzz_ppmd8/          zip's 2 PPMd parameter bytes + a raw stream: the entries of zips
#                            7zz wrote with -mm=PPMd (orders 2..16, 1-2 MiB, restart and cut-off;
#                            text, a tar, mixed bytes), cut out, a truncated and a flipped one
#   DIR/fuzz_http/           HTTP answers (nginx, S3, HTTP/2) and AWS credentials/config files
#   DIR/fuzz_vdisk/          qcow2, VHD, VHDX and VMDK images of a small disk made by qemu-img
#                            (the large ones in fuzz_vdisk.c's sparse form), cut and flipped
#   DIR/fuzz_libarchive/     cpio (newc, odc, bin, crc), ar, iso9660, xar and warc of a small
#                            tree, libarchive's rar/cab/lha samples, damaged copies
#   DIR/fuzz_parttable/      disks of 128 KiB partitioned by sfdisk: GPT (named partitions),
#                            MBR with logical partitions; damaged
#   DIR/fuzz_fat/            FAT12 volumes by mkfs.vfat + mcopy (long, unicode and 8.3 names,
#                            folders, a fragmented file, a read-only one, a label), FAT16 and
#                            FAT32 ones cut to 128 KiB, an empty FAT32 of few clusters; damaged
#   DIR/fuzz_oci/            container images (oci_seeds.py): OCI layouts (gzip, zstd, plain
#                            layers, several tags, a nested index), docker save tars, cut and
#                            flipped copies
#   DIR/fuzz_ext4/           128 KiB images by mkfs.ext2/ext3/ext4 -d (extents, indirect blocks,
#                            inline data, an htree folder by e2fsck -D, a file fragmented by
#                            debugfs -w), user.* xattrs, a cut one
#   DIR/fuzz_squashfs/       mksquashfs images of a small tree, every compressor, stored
#                            tables and data, fragments, a device and a fifo, damaged ones
#   DIR/fuzz_sqlar/          sqlite3 -Ac archives (compressed, stored, a link), a cut one, a
#                            database that is not an archive
# Nothing binary is kept in the repository: the seeds are made at run time.  Tools that are
# missing are skipped with a note (tools/install-deps.sh installs them all).
#   tests/fuzz/make-seeds.sh DIR
set -euo pipefail
out=${1:?usage: make-seeds.sh DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
have() { command -v "$1" >/dev/null 2>&1; }
note() { echo "make-seeds: $*" >&2; }

T=$out/fuzz_tar
I=$out/fuzz_index
mkdir -p "$T" "$I"
for c in gzip bzip2 xz zstd lzo lz4 lzip lzma compress; do mkdir -p "$out/fuzz_codec_$c"; done

# ---- the tree ------------------------------------------------------------------------------
src=$work/src
mkdir -p "$src/dir/sub" "$src/empty"
printf 'hello\n' >"$src/hello.txt"
: >"$src/zero"
head -c 511 /dev/zero | tr '\0' a >"$src/dir/a511"
head -c 513 /dev/zero | tr '\0' b >"$src/dir/b513"
seq 1 1500 >"$src/dir/sub/numbers"
long=$(printf 'n%.0s' $(seq 1 120))
printf 'long\n' >"$src/dir/$long"
ln -s "../hello.txt" "$src/dir/link"
ln -s "$(printf 't%.0s' $(seq 1 150))" "$src/dir/longlink"
ln "$src/hello.txt" "$src/dir/hard"
mkfifo "$src/fifo" 2>/dev/null || true
printf 'caf\351\n' >"$src/$(printf 'caf\351')" # a name that is not UTF-8
# a sparse file: data, a hole, data, a hole at the end
truncate -s 16384 "$src/sparse"
printf 'start' | dd of="$src/sparse" conv=notrunc status=none
printf 'middle' | dd of="$src/sparse" bs=1 seek=8000 conv=notrunc status=none
touch -d @1700000000.123456789 "$src/hello.txt"
if have setfattr; then
	setfattr -n user.comment -v "a comment" "$src/hello.txt" 2>/dev/null || true
	setfattr -n user.bin -v 0x00ff00 "$src/dir/a511" 2>/dev/null || true
fi
small=$work/small # a smaller tree for the codec seeds
mkdir -p "$small/d"
printf 'hello\n' >"$small/hello.txt"
seq 1 300 >"$small/d/n"
ln -s hello.txt "$small/l"

gtar() { tar --owner=0 --group=0 --numeric-owner --mtime=@1700000000 -C "$src" "$@"; }

# ---- tars ----------------------------------------------------------------------------------
gtar --format=v7 -cf "$T/v7.tar" hello.txt dir/a511 dir/sub
gtar --format=oldgnu -cf "$T/oldgnu.tar" .
gtar --format=gnu -cf "$T/gnu.tar" .
gtar --format=ustar -cf "$T/ustar.tar" hello.txt dir/a511 dir/b513 dir/link dir/hard empty 2>/dev/null || true
gtar --format=posix -cf "$T/pax.tar" .
gtar --format=posix --xattrs -cf "$T/pax-xattrs.tar" hello.txt dir/a511 2>/dev/null || true
gtar --format=gnu --sparse -cf "$T/gnu-sparse.tar" sparse hello.txt
gtar --format=oldgnu --sparse -cf "$T/oldgnu-sparse.tar" sparse
for v in 0.0 0.1 1.0; do
	gtar --format=posix --sparse --sparse-version=$v -cf "$T/pax-sparse-$v.tar" sparse hello.txt
done
gtar --format=gnu -cf "$T/gnu-longname.tar" "dir/$long" dir/longlink
gtar --format=posix -cf "$T/pax-longname.tar" "dir/$long" dir/longlink
gtar --format=gnu --label=VOLUME -cf "$T/gnu-label.tar" hello.txt
gtar --format=gnu -g "$work/snar" -cf "$T/gnu-incremental.tar" dir 2>/dev/null || true
cp "$T/gnu.tar" "$work/app.tar"
gtar --format=gnu -rf "$work/app.tar" hello.txt # a repeated path
cp "$work/app.tar" "$T/gnu-appended.tar"
cat "$T/v7.tar" "$T/ustar.tar" >"$T/concatenated.tar"
head -c 10240 /dev/zero >"$T/empty.tar"
gtar --format=gnu -b 1 -cf "$T/gnu-b1.tar" hello.txt
if have bsdtar; then
	(cd "$src" && bsdtar -cf "$T/bsdtar.tar" . 2>/dev/null) || true
	(cd "$src" && bsdtar --format=ustar -cf "$T/bsdtar-ustar.tar" hello.txt dir/sub 2>/dev/null) || true
	(cd "$src" && bsdtar --format=pax -cf "$T/bsdtar-pax.tar" . 2>/dev/null) || true
	(cd "$src" && bsdtar --format=gnutar -cf "$T/bsdtar-gnutar.tar" hello.txt "dir/$long" 2>/dev/null) || true
	(cd "$src" && bsdtar --format=v7 -cf "$T/bsdtar-v7.tar" hello.txt 2>/dev/null) || true
	(cd "$src" && bsdtar --read-sparse -cf "$T/bsdtar-sparse.tar" sparse 2>/dev/null) || true
else
	note "bsdtar missing: no bsdtar seeds"
fi
# damaged: truncated in a header and in data, a flipped header byte, garbage after the end
head -c 700 "$T/gnu.tar" >"$T/trunc-header.tar"
head -c 1500 "$T/pax.tar" >"$T/trunc-data.tar"
cp "$T/ustar.tar" "$T/flipped.tar"
printf '\x7f' | dd of="$T/flipped.tar" bs=1 seek=148 conv=notrunc status=none
{ cat "$T/v7.tar"; printf 'garbage after the end'; } >"$T/garbage.tar"
{ head -c 1024 "$T/gnu.tar"; seq 1 600 | gzip -9 -n | head -c 512; tail -c +1537 "$T/gnu.tar"; } >"$T/resync.tar"

# ---- nested: a tar holding a .tar.gz and a .tar ------------------------------------------------
nest=$work/nest
mkdir -p "$nest"
tar -C "$small" -czf "$nest/inner.tar.gz" .
tar -C "$small" -cf "$nest/plain.tar" hello.txt
printf 'x\n' >"$nest/note"
tar -C "$nest" --format=gnu -cf "$work/nested.tar" .

# ---- compressed ----------------------------------------------------------------------------
tar -C "$small" --format=gnu -cf "$work/small.tar" .
# a stream of ~1.6 MB that compresses well: two segments, several gzip checkpoints
{ seq 1 5000; head -c 1600000 < <(yes 'the quick brown fox jumps over the lazy dog'); } >"$work/big"
tar -C "$work" --format=gnu -cf "$work/big.tar" big
noise() { seq 1 "$1" | gzip -9 -n | head -c "$2"; } # deterministic bytes that look random
noise 3000 3000 >"$work/noise" # a single compressed file that is not a tar

# comp CODEC NAME CMD...: compresses small.tar, big.tar and noise with CMD (stdin to stdout)
comp() {
	local codec=$1 name=$2
	shift 2
	local d=$out/fuzz_codec_$codec
	have "$1" || { note "$1 missing: no $name seeds"; return 0; }
	"$@" <"$work/small.tar" >"$d/$name-small" 2>/dev/null || rm -f "$d/$name-small"
	"$@" <"$work/big.tar" >"$d/$name-big" 2>/dev/null || rm -f "$d/$name-big"
	"$@" <"$work/noise" >"$d/$name-noise" 2>/dev/null || rm -f "$d/$name-noise"
}
comp gzip gzip gzip -c
comp gzip gzip9n gzip -9 -n -c
comp gzip pigz pigz -c
comp gzip pigz-i pigz -i -b 32 -c
comp bzip2 bzip2 bzip2 -c
comp bzip2 bzip2-1 bzip2 -1 -c
comp xz xz xz -0 -c
comp xz xz-blocks xz -0 -T1 --block-size=16KiB -c
comp xz xz-crc32 xz -0 -C crc32 -c
comp xz xz-none xz -0 -C none -c
comp xz pixz pixz
comp zstd zstd zstd -1 -c
comp zstd zstd-nocheck zstd -1 --no-check --no-content-size -c
comp lzo lzop lzop -c
comp lzo lzop-9 lzop -9 -c
comp lzo lzop-F lzop -F -c
comp lz4 lz4 lz4 -c
comp lz4 lz4-BD lz4 -BD -c
comp lz4 lz4-BX-B4 lz4 -BX -B4 -c
comp lz4 lz4-l lz4 -l -c
comp lzip lzip lzip -0 -c
comp lzip plzip plzip -0 -B 16KiB -c
comp lzma lzma xz --format=lzma -0 -c
comp compress compress compress -c
comp compress compress-b12 compress -b 12 -c
# bzip2 blocks alone (fuzz_bzip2_block.c): a parameter byte (level 9 or 1, two bit shifts),
# then a bzip2 file from its byte 4, where its first block's magic starts
B=$out/fuzz_bzip2_block
mkdir -p "$B"
for f in "$out"/fuzz_codec_bzip2/bzip2-*; do
	[ -e "$f" ] || continue
	n=$(basename "$f")
	case $n in bzip2-1-*) p1=0 p2=36 ;; *) p1=8 p2=35 ;; esac # level 1 or 9; shift 0 or 4
	{ printf "\\x$(printf %02x $p1)"; tail -c +5 "$f"; } >"$B/$n-a"
	{ printf "\\x$(printf %02x $p2)"; tail -c +5 "$f"; } >"$B/$n-b"
done
# seekable zstd is what `zstd --seekable` (newer zstd) writes; the index harness builds its own.
# several members / frames / parts, one after the other
for c in gzip bzip2 xz zstd lzo lz4 lzip lzma compress; do
	d=$out/fuzz_codec_$c
	first=$(ls "$d" | grep -- '-small$' | head -1 || true)
	[ -n "$first" ] || continue
	cat "$d/$first" "$d/$first" >"$d/concat-small"
	# damaged: truncated, a flipped byte in the middle, garbage after the end
	f=$d/$(ls "$d" | grep -- '-big$' | head -1)
	n=$(stat -c %s "$f")
	head -c $((n / 2)) "$f" >"$d/trunc-big"
	cp "$f" "$d/flipped-big"
	printf '\x55' | dd of="$d/flipped-big" bs=1 seek=$((n * 2 / 3)) conv=notrunc status=none
	{ cat "$d/$first"; printf 'trailing garbage'; } >"$d/garbage-small"
done

# ---- the index harness: an options byte + an archive -------------------------------------------
# byte: bits 0-2 codec (0 as is, 1 gzip, 2 bzip2, 3 xz, 4 zstd, 5 lzop), 3-4 variant, 5 -r
seed() { { printf "\\x$(printf %02x "$1")"; cat "$2"; } >"$I/$3"; }
for f in gnu pax gnu-sparse pax-sparse-1.0 pax-xattrs gnu-appended bsdtar v7 trunc-data resync; do
	[ -f "$T/$f.tar" ] && seed 0 "$T/$f.tar" "plain-$f"
done
seed 32 "$work/nested.tar" nested-plain # -r
i=0
for codec in 1 2 3 4 5; do
	for var in 0 1 2 3; do
		seed $((codec | var << 3)) "$T/gnu.tar" "inproc-$codec-$var"
	done
	seed $((codec | 32)) "$work/nested.tar" "inproc-$codec-nested"
	seed $((codec | 64)) "$T/pax-sparse-1.0.tar" "inproc-$codec-sparse"
done
for c in gzip bzip2 xz zstd lzo; do
	for f in "$out/fuzz_codec_$c"/*-small "$out/fuzz_codec_$c"/*-noise; do
		[ -f "$f" ] && seed $((i++ % 2 * 64)) "$f" "asis-$c-$(basename "$f")"
	done
done
# an .tar.gz holding a .tar.xz: two codecs, nested
if have xz; then
	mkdir -p "$work/nest2"
	tar -C "$small" -cJf "$work/nest2/inner.tar.xz" .
	tar -C "$work/nest2" -czf "$work/nest2.tar.gz" inner.tar.xz
	seed 32 "$work/nest2.tar.gz" asis-nested-gz-xz
fi
# ---- 7z: archives made by 7zz ------------------------------------------------------------------
Z=$out/fuzz_7z
mkdir -p "$Z"
if have 7zz; then
	z7() { local name=$1 dir=$2; shift 2; (cd "$dir" && 7zz a -bd -bso0 -bsp0 -y "$@" "$Z/$name.7z" . >/dev/null 2>&1) || rm -f "$Z/$name.7z"; }
	z7 copy "$small" -snl -m0=Copy
	z7 lzma "$small" -snl -m0=LZMA -mx1
	z7 lzma2 "$small" -snl -mx1
	z7 plain "$small" -snl -mx1 -mhc=off
	z7 deflate "$small" -snl -m0=Deflate -mhc=off
	z7 deflate64 "$small" -snl -m0=Deflate64 -mhc=off
	z7 bzip2 "$small" -snl -m0=BZip2 -mhc=off
	z7 bcj "$small" -snl -mf=BCJ -mhc=off
	z7 bcj2 "$small" -snl -mf=BCJ2 -mhc=off
	z7 arm64 "$small" -snl -mf=ARM64 -mhc=off
	z7 riscv "$small" -snl -mf=RISCV -mhc=off
	z7 riscv-deflate "$small" -snl -m0=RISCV -m1=Deflate -mhc=off
	z7 delta "$small" -snl -mf=Delta:4 -mhc=off
	z7 ppmd "$small" -snl -m0=PPMd -mhc=off
	z7 aes "$small" -snl -psecret -mhe=off -mhc=off
	z7 aes-headers "$small" -snl -psecret -mhe=on
	z7 aes-copy "$small" -snl -psecret -m0=Copy -mhc=off
	z7 aes-lzma "$small" -snl -psecret -m0=LZMA -mx1 -mhc=off
	z7 nonsolid "$small" -snl -ms=off -mhc=off
	mkdir -p "$work/z7big"
	cp "$work/big" "$work/z7big/big"
	z7 lzma2-blocks "$work/z7big" -m0=LZMA2:c=64k -mmt2 -mhc=off
	z7 bcj-blocks "$work/z7big" -mf=BCJ -m0=LZMA2:c=64k -mmt2
	z7 deflate-big "$work/z7big" -m0=Deflate
	(cd "$small" && 7zz a -bd -bso0 -bsp0 -si "$Z/stdin.7z" <hello.txt >/dev/null 2>&1) || true
	if [ -f "$Z/plain.7z" ]; then
		n=$(stat -c %s "$Z/plain.7z")
		head -c $((n - 20)) "$Z/plain.7z" >"$Z/trunc-header.7z"
		head -c $((n / 2)) "$Z/plain.7z" >"$Z/trunc-half.7z"
		cp "$Z/plain.7z" "$Z/flipped-data.7z"
		printf '\x55' | dd of="$Z/flipped-data.7z" bs=1 seek=40 conv=notrunc status=none
		{ cat "$Z/plain.7z"; printf 'trailing garbage'; } >"$Z/garbage.7z"
	fi
else
	note "7zz missing: no 7z seeds"
fi

# ---- zip: archives made by Info-ZIP, Python's zipfile and bsdtar ----------------------------------
Zp=$out/fuzz_zip
mkdir -p "$Zp"
mkdir -p "$work/zbig"
cp "$work/big" "$work/zbig/big" # 1.6 MB that deflates to little: a stream with checkpoints
# zipin NAME DIR FILE OPTION...: zip -q OPTION... of FILE (in DIR) into NAME.zip
zipin() { local name=$1 dir=$2 what=$3; shift 3; (cd "$dir" && zip -q "$@" "$Zp/$name.zip" "$what" >/dev/null 2>&1) || rm -f "$Zp/$name.zip"; }
if have zip; then
	zipin store "$small" . -r -y -0
	zipin deflate "$small" . -r -y -6
	zipin deflate9 "$small" . -r -y -9
	zipin bzip2 "$small" . -r -y -Z bzip2
	zipin crypt "$small" . -r -y -P secret
	zipin no-extra "$small" . -r -X
	zipin big "$work/zbig" big -1
	# to a pipe: zip cannot seek back, so every entry keeps its sizes in a data descriptor (no
	# -y: a symlink is stored uncompressed, which zip refuses on a pipe)
	(cd "$small" && zip -q -r - . | cat >"$Zp/pipe.zip") 2>/dev/null || rm -f "$Zp/pipe.zip"
	(seq 1 3000 | zip -q - - | cat >"$Zp/stdin.zip") 2>/dev/null || rm -f "$Zp/stdin.zip"
	# a self-extracting stub before the archive: every offset shifted
	[ -f "$Zp/deflate.zip" ] && { head -c 700 /bin/sh; cat "$Zp/deflate.zip"; } >"$Zp/prefixed.zip"
	# split in parts of 64 KiB (stored, so that there are two): NAME.z01 then NAME.zip, which
	# fuzz_zip.c cuts again and joins (part 5)
	mkdir -p "$work/zsplit" && head -c 80000 "$work/big" >"$work/zsplit/part" &&
		(cd "$work/zsplit" && zip -q -0 -s 64k sp.zip part >/dev/null 2>&1) &&
		cat "$work/zsplit/sp.z01" "$work/zsplit/sp.zip" >"$Zp/split.zip" || rm -f "$Zp/split.zip"
else
	note "zip missing: no Info-ZIP seeds"
fi
# encrypted by 7-Zip with the harness's password: WinZip AES (AE-2, its extra field 0x9901)
# and ZipCrypto with the check byte from the CRC (Info-ZIP's -P takes it from the time)
if have 7zz; then
	for m in AES128 AES256 ZipCrypto; do
		(cd "$small" && 7zz a -bd -tzip -mem=$m -psecret "$Zp/7zz-$m.zip" . >/dev/null 2>&1) ||
			rm -f "$Zp/7zz-$m.zip"
	done
	# Deflate64 (method 9), and under AES
	(cd "$small" && 7zz a -bd -tzip -mm=Deflate64 "$Zp/7zz-deflate64.zip" . >/dev/null 2>&1) ||
		rm -f "$Zp/7zz-deflate64.zip"
	(cd "$small" && 7zz a -bd -tzip -mm=Deflate64 -mem=AES256 -psecret "$Zp/7zz-deflate64-aes.zip" . >/dev/null 2>&1) ||
		rm -f "$Zp/7zz-deflate64-aes.zip"
	# PPMd (method 98: restart at -mx=5, cut-off at -mx=9), and under ZipCrypto
	for x in 5 9; do
		(cd "$small" && 7zz a -bd -tzip -mm=PPMd -mx=$x "$Zp/7zz-ppmd-x$x.zip" . >/dev/null 2>&1) ||
			rm -f "$Zp/7zz-ppmd-x$x.zip"
	done
	(cd "$small" && 7zz a -bd -tzip -mm=PPMd -mem=ZipCrypto -psecret "$Zp/7zz-ppmd-zc.zip" . >/dev/null 2>&1) ||
		rm -f "$Zp/7zz-ppmd-zc.zip"
else
	note "7zz missing: no AES zip seeds"
fi
if have bsdtar; then
	(cd "$small" && bsdtar --format zip -cf "$Zp/bsdtar.zip" . 2>/dev/null) || rm -f "$Zp/bsdtar.zip"
	(cd "$small" && bsdtar --format zip --options zip:compression=store -cf "$Zp/bsdtar-store.zip" . 2>/dev/null) ||
		rm -f "$Zp/bsdtar-store.zip"
else
	note "bsdtar missing: no bsdtar zip seeds"
fi
py=$(command -v /usr/bin/python3 || command -v python3 || true)
if [ -n "$py" ]; then
	# zipfile: LZMA (method 14), zip64 extra fields forced on small entries, bzip2, a
	# comment; then by hand the methods only other tools write: xz (95) and zstd (93)
	"$py" - "$Zp" "$small" "$(command -v zstd || true)" <<'PY' || note "python zip seeds failed"
import os, struct, subprocess, sys, zipfile, zlib, lzma
out, small, zstd = sys.argv[1], sys.argv[2], sys.argv[3]
files = []
for d, _, names in os.walk(small):
    for n in sorted(names):
        p = os.path.join(d, n)
        if not os.path.islink(p):
            files.append((os.path.relpath(p, small), open(p, "rb").read()))
def zf(name, method, **kw):
    with zipfile.ZipFile(os.path.join(out, name), "w", method) as z:
        z.comment = b"a comment"
        for n, data in files:
            zi = zipfile.ZipInfo(n, (2020, 1, 2, 3, 4, 6))
            zi.compress_type = method
            with z.open(zi, "w", **kw) as f:
                f.write(data)
zf("py-lzma.zip", zipfile.ZIP_LZMA)
zf("py-zip64.zip", zipfile.ZIP_DEFLATED, force_zip64=True)
zf("py-zip64-stored.zip", zipfile.ZIP_STORED, force_zip64=True)
zf("py-bzip2.zip", zipfile.ZIP_BZIP2)
def by_hand(name, method, pack):
    body, central = b"", b""
    for n, data in files:
        c = pack(data)
        n = n.encode()
        crc = zlib.crc32(data)
        local = struct.pack("<IHHHHHIIIHH", 0x04034b50, 63, 0, method, 0, 0x5021, crc, len(c),
                            len(data), len(n), 0) + n
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 0x033f, 63, 0, method, 0, 0x5021,
                               crc, len(c), len(data), len(n), 0, 0, 0, 0, 0o100644 << 16,
                               len(body)) + n
        body += local + c
    end = struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, len(files), len(files), len(central),
                      len(body), 0)
    open(os.path.join(out, name), "wb").write(body + central + end)
by_hand("xz.zip", 95, lambda d: lzma.compress(d, lzma.FORMAT_XZ))
if zstd:
    by_hand("zstd.zip", 93, lambda d: subprocess.run([zstd, "-q", "-c"], input=d,
                                                    capture_output=True, check=True).stdout)
PY
else
	note "python3 missing: no zipfile seeds"
fi
# damaged: truncated (in the directory, and before it: the local headers are walked), a flipped
# data byte, a flipped directory byte, garbage after the end, a truncated pipe zip
for f in deflate bzip2 py-lzma pipe; do
	[ -f "$Zp/$f.zip" ] || continue
	n=$(stat -c %s "$Zp/$f.zip")
	head -c $((n - 30)) "$Zp/$f.zip" >"$Zp/trunc-dir-$f.zip"
	head -c $((n / 2)) "$Zp/$f.zip" >"$Zp/trunc-half-$f.zip"
	cp "$Zp/$f.zip" "$Zp/flipped-$f.zip"
	printf '\x55' | dd of="$Zp/flipped-$f.zip" bs=1 seek=$((n / 3)) conv=notrunc status=none
	cp "$Zp/$f.zip" "$Zp/flipped-dir-$f.zip"
	printf '\x55' | dd of="$Zp/flipped-dir-$f.zip" bs=1 seek=$((n - 40)) conv=notrunc status=none
	{ cat "$Zp/$f.zip"; printf 'trailing garbage'; } >"$Zp/garbage-$f.zip"
done

# ---- the libarchive harness: cpio, ar, iso9660, xar, warc of the small tree; libarchive's
# own rar, cab and lha samples (tests/data/libarchive); truncated and flipped copies
L=$out/fuzz_libarchive
mkdir -p "$L"
if have cpio; then
	for f in newc odc bin crc; do
		(cd "$small" && find . -mindepth 1 | LC_ALL=C sort | cpio -o --quiet -H $f) >"$L/$f.cpio"
	done
fi
have ar && (cd "$small" && find . -type f | head -3 | xargs ar rc "$L/files.a")
have genisoimage && genisoimage -quiet -R -J -o "$L/small.iso" "$small"
have bsdtar && bsdtar --format xar -cf "$L/small.xar" -C "$small" .
have bsdtar && (cd "$small" && find . -type f | head -4 | xargs bsdtar --format warc -cf "$L/small.warc")
python3 "$here/../data/libarchive/uudata.py" "$L" 131072
for f in "$L"/*; do
	[ -f "$f" ] || continue
	n=$(stat -c %s "$f")
	[ "$n" -gt 64 ] || continue
	head -c $((n / 2)) "$f" >"$f.trunc"
	cp "$f" "$f.flipped"
	printf '\x55' | dd of="$f.flipped" bs=1 seek=$((n * 2 / 3)) conv=notrunc status=none
done

# ---- Deflate64: raw streams, the entries of zips by 7zz -mm=Deflate64 -------------------------
D=$out/fuzz_deflate64
mkdir -p "$D"
py=$(command -v /usr/bin/python3 || command -v python3 || true)
if have 7zz && [ -n "$py" ]; then
	mkdir -p "$work/d64"
	"$py" -c 'import random, sys; sys.stdout.buffer.write(random.Random(1).randbytes(40000))' >"$work/d64/p"
	{ cat "$work/d64/p"; seq 1 3000; cat "$work/d64/p"; } >"$work/d64/far" # 54 KB back
	head -c 300000 "$work/big" >"$work/d64/text"
	cp "$T/gnu.tar" "$work/d64/tar" 2>/dev/null || true
	for f in far text tar; do
		[ -f "$work/d64/$f" ] || continue
		for fb in 32 257; do
			rm -f "$work/d64/z.zip"
			(cd "$work/d64" && 7zz a -bd -tzip -mm=Deflate64 -mfb=$fb z.zip "$f" >/dev/null 2>&1) || continue
			"$py" - "$work/d64/z.zip" "$f" "$D/$f-fb$fb" <<'PY' || rm -f "$D/$f-fb$fb"
import struct, sys, zipfile
i = zipfile.ZipFile(sys.argv[1]).getinfo(sys.argv[2])
d = open(sys.argv[1], "rb").read()
n, e = struct.unpack_from("<HH", d, i.header_offset + 26)
start = i.header_offset + 30 + n + e
open(sys.argv[3], "wb").write(d[start:start + i.compress_size])
PY
		done
	done
	# damaged: truncated, a flipped byte
	if [ -f "$D/far-fb257" ]; then
		n=$(stat -c %s "$D/far-fb257")
		head -c $((n / 2)) "$D/far-fb257" >"$D/trunc-far"
		cp "$D/far-fb257" "$D/flipped-far"
		printf '\x55' | dd of="$D/flipped-far" bs=1 seek=$((n * 2 / 3)) conv=notrunc status=none
	fi
else
	note "7zz or python3 missing: no Deflate64 seeds"
fi

# ---- PPMd: the 5 property bytes, then a raw stream, out of 7zz -m0=PPMd archives -------------
P=$out/fuzz_ppmd
mkdir -p "$P"
if have 7zz && [ -n "$py" ]; then
	mkdir -p "$work/ppmd"
	head -c 60000 "$work/big" >"$work/ppmd/text"
	"$py" -c 'import random, sys; sys.stdout.buffer.write(random.Random(2).randbytes(8000))' >"$work/ppmd/noise"
	cp "$T/gnu.tar" "$work/ppmd/tar" 2>/dev/null || true
	for f in text noise tar; do
		[ -f "$work/ppmd/$f" ] || continue
		for pr in o=2:mem=64k o=6:mem=1m o=16:mem=64k o=32:mem=16m; do
			rm -f "$work/ppmd/p.7z"
			(cd "$work/ppmd" && 7zz a -bd -mhc=off -m0=PPMd:$pr p.7z "$f" >/dev/null 2>&1) || continue
			"$py" - "$work/ppmd/p.7z" "$P/$f-${pr//[=:]/}" <<'PY' || rm -f "$P/$f-${pr//[=:]/}"
import struct, sys
d = open(sys.argv[1], "rb").read()
nxt = struct.unpack_from("<Q", d, 12)[0]
k = d.index(b"\x03\x04\x01\x05", 32 + nxt)  # the coder: id 03 04 01, 5 property bytes
open(sys.argv[2], "wb").write(d[k + 4:k + 9] + d[32:32 + nxt])
PY
		done
	done
	if [ -f "$P/text-o6mem1m" ]; then
		n=$(stat -c %s "$P/text-o6mem1m")
		head -c $((n / 2)) "$P/text-o6mem1m" >"$P/trunc-text"
		cp "$P/text-o6mem1m" "$P/flipped-text"
		printf '\x55' | dd of="$P/flipped-text" bs=1 seek=$((n * 2 / 3)) conv=notrunc status=none
	fi
else
	note "7zz or python3 missing: no PPMd seeds"
fi

# ---- PPMd var.I: zip's 2 parameter bytes and the stream, 7zz -tzip -mm=PPMd entries cut out ----
P8=$out/fuzz_ppmd8
mkdir -p "$P8"
if have 7zz && [ -n "$py" ]; then
	mkdir -p "$work/ppmd8"
	head -c 200000 "$work/big" >"$work/ppmd8/text"
	"$py" -c 'import random, sys; r = random.Random(3); sys.stdout.buffer.write(bytes(r.choice(b"abcd \n") if i % 5 else r.randrange(256) for i in range(30000)))' >"$work/ppmd8/mixed"
	cp "$T/gnu.tar" "$work/ppmd8/tar" 2>/dev/null || true
	# order, memory, level (-mx=7 and up: the cut-off method); 1 MiB: restarts on the text
	for pr in o2-m1-x5 o6-m1-x5 o16-m1-x5 o4-m2-x9 o12-m1-x9; do
		IFS=- read -r o m x <<<"$pr"
		for f in text mixed tar; do
			[ -f "$work/ppmd8/$f" ] || continue
			rm -f "$work/ppmd8/z.zip"
			(cd "$work/ppmd8" && 7zz a -bd -tzip -mm=PPMd -mx=${x#x} -mo=${o#o} -mmem=${m#m}m z.zip "$f" >/dev/null 2>&1) || continue
			"$py" - "$work/ppmd8/z.zip" "$f" "$P8/$f-$pr" <<'PY' || rm -f "$P8/$f-$pr"
import struct, sys, zipfile
i = zipfile.ZipFile(sys.argv[1]).getinfo(sys.argv[2])
assert i.compress_type == 98
d = open(sys.argv[1], "rb").read()
n, e = struct.unpack_from("<HH", d, i.header_offset + 26)
start = i.header_offset + 30 + n + e
open(sys.argv[3], "wb").write(d[start:start + i.compress_size])
PY
		done
	done
	if [ -f "$P8/mixed-o6-m1-x5" ]; then
		n=$(stat -c %s "$P8/mixed-o6-m1-x5")
		head -c $((n / 2)) "$P8/mixed-o6-m1-x5" >"$P8/trunc-mixed"
		cp "$P8/mixed-o6-m1-x5" "$P8/flipped-mixed"
		printf '\x55' | dd of="$P8/flipped-mixed" bs=1 seek=$((n * 2 / 3)) conv=notrunc status=none
		# the same stream in a tiny model (a restore method zip does not allow: see the harness)
		{ printf '\x25\x31'; tail -c +3 "$P8/mixed-o6-m1-x5"; } >"$P8/tiny-mixed"
	fi
else
	note "7zz or python3 missing: no PPMd var.I seeds"
fi

# fuzz_ar: GNU ar (short and long names, an odd size), deterministic, BSD and darwin
# (llvm-ar), a COFF import library's layout (two "/" linker members, a "//" of NUL-ended names),
# a .deb, and damaged ones (cut in a header, in the data; a long name past the table)
A=$out/fuzz_ar
mkdir -p "$A" "$work/ar"
if have ar; then
	printf 'odd\n!' >"$work/ar/o.txt"
	printf 'x%.0s' $(seq 300) >"$work/ar/a_member_name_longer_than_sixteen.txt"
	cp "$small"/* "$work/ar/" 2>/dev/null || true
	(cd "$work/ar" && ar rcU "$A/gnu.a" o.txt a_member_name_longer_than_sixteen.txt &&
		ar rcD "$A/gnu-det.a" o.txt) || note "ar failed"
	for fmt in bsd darwin gnu; do
		have llvm-ar && (cd "$work/ar" && llvm-ar --format=$fmt rc "$A/llvm-$fmt.a" o.txt \
			a_member_name_longer_than_sixteen.txt) 2>/dev/null
	done
	if [ -f "$A/gnu.a" ]; then
		n=$(stat -c %s "$A/gnu.a")
		head -c 100 "$A/gnu.a" >"$A/cut-in-header.a"
		head -c $((n - 5)) "$A/gnu.a" >"$A/cut-in-data.a"
	fi
	"$py" - "$A/coff.lib" <<'PY' || note "python ar seeds failed"
import struct, sys
def mem(name, data):
    h = name.ljust(16) + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6) + b"644".ljust(8)
    h += str(len(data)).encode().ljust(10) + b"`\n"
    return h + data + (b"\n" if len(data) % 2 else b"")
objs = [(b"f1.obj/", b"one"), (b"/0", b"two!")]
first = struct.pack(">I", 1) + struct.pack(">I", 0) + b"f1\0"
second = struct.pack("<II", 1, 0) + struct.pack("<IH", 1, 1) + b"f1\0"
out = b"!<arch>\n" + mem(b"/", first) + mem(b"/", second) + mem(b"//", b"a_long_object_name.obj\0")
out += b"".join(mem(n, d) for n, d in objs)
open(sys.argv[1], "wb").write(out)
open(sys.argv[1] + "-bad-long-name", "wb").write(out.replace(b"/0  ", b"/99 "))
PY
	have dpkg-deb && [ -f "$T/gnu.tar" ] && {
		mkdir -p "$work/deb/DEBIAN" && printf 'Package: x\nVersion: 1\nArchitecture: all\nMaintainer: x <x@x>\nDescription: x\n' >"$work/deb/DEBIAN/control" &&
			cp "$work/ar/o.txt" "$work/deb/" && dpkg-deb -Zgzip --root-owner-group -b "$work/deb" "$A/x.deb" >/dev/null 2>&1
	}
else
	note "ar missing: no ar seeds"
fi

# fuzz_parttable: sfdisk's GPT (named partitions; its 4096-byte sectors need a device: the
# unit test builds those) and MBR (a
# primary, an extended one with two logical ones) on 128 KiB disks; the primary GPT header
# zeroed, an entry array's byte flipped, an EBR linking back to the first
PT=$out/fuzz_parttable
mkdir -p "$PT"
if have sfdisk; then
	d=$work/pt
	mkdir -p "$d"
	truncate -s 128K "$d/gpt.img" "$d/mbr.img"
	printf 'label: gpt\nfirst-lba: 34\nstart=40, size=64, name="EFI system"\nstart=104, size=60, name="data/x"\nstart=170, size=16\n' |
		sfdisk -q "$d/gpt.img" >/dev/null 2>&1 && cp "$d/gpt.img" "$PT/gpt.img"
	printf 'label: dos\nstart=2, size=40, type=c\nstart=44, size=200, type=5\nstart=46, size=60, type=83\nstart=110, size=100, type=7\n' |
		sfdisk -q "$d/mbr.img" >/dev/null 2>&1 && cp "$d/mbr.img" "$PT/mbr.img"
	if [ -f "$PT/gpt.img" ]; then
		cp "$PT/gpt.img" "$PT/gpt-primary-zeroed.img"
		dd if=/dev/zero of="$PT/gpt-primary-zeroed.img" bs=512 seek=1 count=1 conv=notrunc status=none
		cp "$PT/gpt.img" "$PT/gpt-array-flipped.img"
		printf '\x42' | dd of="$PT/gpt-array-flipped.img" bs=1 seek=1100 conv=notrunc status=none
	fi
	if [ -f "$PT/mbr.img" ]; then # the second EBR's link back to the first (a loop)
		cp "$PT/mbr.img" "$PT/mbr-ebr-loop.img"
		ebr2=$(sfdisk -d "$PT/mbr.img" | sed -n 's/.*mbr.img6 : start= *\([0-9]*\).*/\1/p')
		[ -n "$ebr2" ] && printf '\0\0\0\0\5\0\0\0\0\0\0\0\310\0\0\0' |
			dd of="$PT/mbr-ebr-loop.img" bs=1 seek=$(((ebr2 - 1) * 512 + 446 + 16)) conv=notrunc status=none
	fi
else
	note "sfdisk missing: no partition-table seeds"
fi

# fuzz_fat: mkfs.vfat + mcopy volumes (FAT12 whole; FAT16/FAT32 cut to 128 KiB: their data
# lies beyond what the fuzzer is given, their boot sector, FAT and root are there), a FAT32 of
# few clusters (what mkfs.vfat -F 32 makes of a small volume), and damaged copies
F=$out/fuzz_fat
mkdir -p "$F"
if have mkfs.vfat && have mcopy && have mdel && have mattrib; then
	d=$work/fat
	mkdir -p "$d/src/Sub Folder/deeper"
	printf 'long name\n' >"$d/src/A Long File Name.txt"
	printf 'unicode\n' >"$d/src/caf"$'\303\251 \342\234\223'".txt"
	printf 'lower\n' >"$d/src/lower.txt"
	: >"$d/src/empty"
	seq 1 900 >"$d/src/Sub Folder/deeper/numbers.txt"
	head -c 3000 /dev/zero | tr '\0' g >"$d/gap"
	head -c 600 /dev/zero | tr '\0' k >"$d/keep"
	seq 1 2000 >"$d/frag.txt"
	export MTOOLS_SKIP_CHECK=1
	mkfat() { # NAME KiB MKFS-OPTIONS...
		local name=$1 img=$d/$1 kib=$2
		shift 2
		mkfs.vfat "$@" -n LABEL -C "$img" "$kib" >/dev/null 2>&1 &&
			mcopy -s -i "$img" "$d/src/"* :: && mcopy -i "$img" "$d/gap" "$d/keep" :: &&
			mdel -i "$img" ::gap && mcopy -i "$img" "$d/frag.txt" :: &&
			mattrib -i "$img" +r ::keep && head -c 131072 "$img" >"$F/$name"
	}
	mkfat fat12.img 120 -F 12 -s 1 -r 32 || note "FAT12 seed failed"
	mkfat fat12-2k.img 128 -F 12 -s 4 -S 512 -r 16 || true
	mkfat fat16.img 2200 -F 16 -s 1 -r 64 || note "FAT16 seed failed"
	mkfat fat32.img 34000 -F 32 -s 1 -f 1 || note "FAT32 seed failed"
	mkfs.vfat -F 32 -s 1 -C "$d/fat32-small.img" 600 >/dev/null 2>&1 &&
		head -c 131072 "$d/fat32-small.img" >"$F/fat32-small.img"
	unset MTOOLS_SKIP_CHECK
	if [ -f "$F/fat12.img" ]; then
		head -c 20000 "$F/fat12.img" >"$F/fat12-cut.img"
		cp "$F/fat12.img" "$F/fat12-fat-flipped.img" # the FAT's entries of clusters 4..9
		printf '\x05\x50\x00\xff\x0f' | dd of="$F/fat12-fat-flipped.img" bs=1 seek=518 conv=notrunc status=none
	fi
else
	note "mkfs.vfat or mtools missing: no FAT seeds"
fi

# fuzz_oci: container images written by Python's tarfile (oci_seeds.py)
O=$out/fuzz_oci
mkdir -p "$O"
if [ -n "$py" ]; then
	"$py" "$here/oci_seeds.py" "$O" || note "python OCI seeds failed"
else
	note "python3 missing: no OCI seeds"
fi

# fuzz_squashfs: mksquashfs images of the small tree with every compressor it offers, in
# blocks of 4 KiB and with tables and data stored (-noI -noD -noF), with a device and a fifo
# (pseudo definitions), cut and flipped ones
Q=$out/fuzz_squashfs
mkdir -p "$Q"
if have mksquashfs; then
	for comp in gzip lzo lz4 xz zstd lzma; do
		mksquashfs "$small" "$Q/$comp.sqsh" -noappend -quiet -no-progress -comp "$comp" -b 4K \
			-p 'null c 666 0 0 1 3' -p 'fifo i 644 0 0 f' >/dev/null 2>&1 || rm -f "$Q/$comp.sqsh"
	done
	mksquashfs "$small" "$Q/stored.sqsh" -noappend -quiet -no-progress -noI -noD -noF \
		-no-fragments >/dev/null 2>&1 || true
	mksquashfs "$small" "$Q/frags.sqsh" -noappend -quiet -no-progress -always-use-fragments \
		-comp gzip -b 4K >/dev/null 2>&1 || true
	if [ -f "$Q/gzip.sqsh" ]; then
		n=$(stat -c %s "$Q/gzip.sqsh")
		head -c $((n / 2)) "$Q/gzip.sqsh" >"$Q/cut.sqsh"
		cp "$Q/gzip.sqsh" "$Q/flipped.sqsh"
		printf '\377' | dd of="$Q/flipped.sqsh" bs=1 seek=200 conv=notrunc status=none
	fi
else
	note "mksquashfs missing: no squashfs seeds"
fi

# fuzz_sqlar: sqlite3 -Ac archives of the small tree (compressed and stored rows, folders, a
# link), a cut one, a database without the table
S=$out/fuzz_sqlar
mkdir -p "$S"
if have sqlite3; then
	(cd "$small" && sqlite3 "$S/small.sqlar" -Ac . >/dev/null 2>&1) || note "sqlite3 -Ac failed"
	ln -sf hello "$work/sqlar-link" 2>/dev/null && (cd "$work" && sqlite3 "$S/link.sqlar" -Ac sqlar-link >/dev/null 2>&1) || true
	sqlite3 "$S/other.db" "CREATE TABLE t(x); INSERT INTO t VALUES (1);" >/dev/null 2>&1 || true
	if [ -f "$S/small.sqlar" ]; then
		n=$(stat -c %s "$S/small.sqlar")
		head -c $((n * 3 / 4)) "$S/small.sqlar" >"$S/cut.sqlar"
	fi
else
	note "sqlite3 missing: no sqlar seeds"
fi

# fuzz_bcj_riscv: 4 bytes of start position, then a RISC-V-like instruction stream (JALs,
# AUIPC pairs, 16-bit instructions) as 7zz's RISCV filter converts it (the packed stream of a
# -m0=RISCV -m1=Copy archive, which starts at offset 32), and the stream as it is
R=$out/fuzz_bcj_riscv
mkdir -p "$R"
if [ -n "$py" ]; then
	"$py" - "$work/rv.bin" <<'PY' || note "python riscv seeds failed"
import random, struct, sys
r = random.Random(5)
out = bytearray()
for _ in range(3000):
    c = r.random()
    if c < 0.25:
        out += struct.pack("<I", r.getrandbits(20) << 12 | r.choice([1, 5, 0]) << 7 | 0x6F)
    elif c < 0.5:
        rd = r.choice([1, 5, 6, 10, 2, 0])
        out += struct.pack("<I", r.getrandbits(20) << 12 | rd << 7 | 0x17)
        out += struct.pack("<I", r.getrandbits(12) << 20 | rd << 15 | r.choice([0x67, 0x13, 0x03]))
    else:
        out += struct.pack("<H", r.getrandbits(16))
open(sys.argv[1], "wb").write(out)
PY
	[ -f "$work/rv.bin" ] && { printf '\0\0\0\0'; cat "$work/rv.bin"; } >"$R/plain"
	if have 7zz && [ -f "$work/rv.bin" ]; then
		(cd "$work" && 7zz a -bd -bso0 -bsp0 -y rv.7z rv.bin -m0=RISCV -m1=Copy >/dev/null 2>&1) &&
			{ printf '\0\0\0\0'; tail -c +33 "$work/rv.7z" | head -c "$(stat -c %s "$work/rv.bin")"; } >"$R/converted"
	fi
fi

# fuzz_http: answers of nginx and S3 as curl receives them, and AWS credentials and config
H=$out/fuzz_http
mkdir -p "$H"
printf 'HTTP/1.1 206 Partial Content\r\nServer: nginx\r\nContent-Type: application/octet-stream\r\nContent-Length: 65536\r\nLast-Modified: Tue, 01 Dec 2026 09:37:00 GMT\r\nConnection: keep-alive\r\nETag: "692d6e4c-2357a1b7"\r\nContent-Range: bytes 0-65535/592959415\r\n\r\n' >"$H/nginx-206"
printf 'HTTP/1.1 416 Requested Range Not Satisfiable\r\nContent-Range: bytes */0\r\n\r\n' >"$H/empty-416"
printf 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Slow Down\r\nRetry-After: 3\r\nx-amz-request-id: 4442587FB7D0A2F9\r\n\r\n' >"$H/s3-503"
printf 'HTTP/2 206\r\ncontent-range: bytes 100-199/*\r\netag: W/"abc"\r\n\r\n' >"$H/h2-unknown-total"
printf 'https://user:p@ss@host:8443/a/b.tar.gz?X-Amz-Signature=abc\n[default]\naws_access_key_id = AKID\naws_secret_access_key = SECRET\nregion = eu-west-1\n[profile x]\nregion=us-west-2\n[x]\naws_access_key_id=X\n' >"$H/aws-files"

# fuzz_vdisk: qemu-img's images of a small disk (data, a hole, data): qcow2 v2 and v3 (512-byte
# and 64 KiB clusters, compressed clusters, over a backing file), VMDK monolithicSparse and
# streamOptimized as they are; VHD fixed and dynamic and VHDX (MiBs of zeros) in the
# harness's sparse form ("VDFZ", the size, then {offset, length, bytes} of the non-zero 4 KiB
# blocks, see fuzz_vdisk.c); a truncated and a flipped qcow2
V=$out/fuzz_vdisk
mkdir -p "$V" "$work/vd"
if have qemu-img && [ -n "$py" ]; then
	vd=$work/vd
	truncate -s 2M "$vd/d.raw"
	printf 'disk data at zero' | dd of="$vd/d.raw" conv=notrunc status=none
	seq 1 3000 | dd of="$vd/d.raw" bs=1 seek=1100000 conv=notrunc status=none
	vdi() { qemu-img convert -f raw "$@" >/dev/null 2>&1 || note "qemu-img $* failed"; }
	vdi -O qcow2 -o cluster_size=512 "$vd/d.raw" "$V/v3-512.qcow2"
	vdi -O qcow2 -o compat=0.10,cluster_size=512 "$vd/d.raw" "$V/v2-512.qcow2"
	vdi -O qcow2 "$vd/d.raw" "$vd/v3-64k.qcow2"
	vdi -c -O qcow2 -o cluster_size=4096 "$vd/d.raw" "$V/compressed.qcow2"
	qemu-img create -f qcow2 -b "$vd/d.raw" -F raw -o cluster_size=512 "$V/backing.qcow2" \
		>/dev/null 2>&1 || note "qemu-img create -b failed"
	vdi -O vmdk "$vd/d.raw" "$vd/sparse.vmdk"
	vdi -O vmdk -o subformat=streamOptimized "$vd/d.raw" "$vd/stream.vmdk"
	vdi -O vpc -o subformat=dynamic "$vd/d.raw" "$vd/dyn.vhd"
	vdi -O vpc -o subformat=fixed "$vd/d.raw" "$vd/fixed.vhd"
	vdi -O vhdx -o block_size=1M,log_size=1M "$vd/d.raw" "$vd/d.vhdx"
	"$py" - "$vd" "$V" <<'PY' || note "python vdisk seeds failed"
import os, struct, sys
src, out = sys.argv[1], sys.argv[2]
for name in ("v3-64k.qcow2", "dyn.vhd", "fixed.vhd", "d.vhdx", "sparse.vmdk", "stream.vmdk"):
    try:
        data = open(os.path.join(src, name), "rb").read()
    except OSError:
        continue
    rec = [b"VDFZ", struct.pack("<I", len(data))]
    for off in range(0, len(data), 4096):
        blk = data[off:off + 4096].rstrip(b"\0")
        if blk:
            rec.append(struct.pack("<IH", off, len(blk)) + blk)
    open(os.path.join(out, name + ".vdfz"), "wb").write(b"".join(rec))
PY
	if [ -f "$V/v3-512.qcow2" ]; then
		n=$(stat -c %s "$V/v3-512.qcow2")
		head -c $((n / 2)) "$V/v3-512.qcow2" >"$V/cut.qcow2"
		cp "$V/v3-512.qcow2" "$V/flipped.qcow2"
		printf '\377\377' | dd of="$V/flipped.qcow2" bs=1 seek=$((n - 600)) conv=notrunc status=none
	fi
else
	note "qemu-img or python3 missing: no virtual-disk seeds"
fi

# fuzz_ntfs: 2 MiB images by mkntfs (512-byte clusters), files copied in by ntfscp -- resident,
# resident across a stride of the MFT record, non-resident, a Unicode name, enough names for
# the root folder's index to leave its MFT record -- packed by ntfs_pack.py (the blocks that
# hold something, without $LogFile and $UpCase); damaged ones: the MFT's fixups, a data run
N=$out/fuzz_ntfs
mkdir -p "$N" "$work/ntfs"
if have mkntfs && have ntfscp && have ntfsinfo && [ -n "$py" ]; then
	ntfs_img() { # ntfs_img NAME NFILES: an image with the test files and NFILES more
		local img=$work/ntfs/$1.img i
		rm -f "$img" && truncate -s 2M "$img" &&
			mkntfs -F -f -q -c 512 -s 512 "$img" >/dev/null 2>&1 || return 1
		ntfscp -f "$img" "$work/ntfs/s" /small.txt >/dev/null 2>&1
		ntfscp -f "$img" "$work/ntfs/r" /stride.txt >/dev/null 2>&1
		ntfscp -f "$img" "$work/ntfs/b" /big.bin >/dev/null 2>&1
		ntfscp -f "$img" "$work/ntfs/s" "/h$(printf '\303\251')llo" >/dev/null 2>&1
		for i in $(seq 1 "$2"); do ntfscp -f "$img" "$work/ntfs/s" "/name-$i.txt" >/dev/null 2>&1; done
		"$py" "$here/ntfs_pack.py" "$img" "$N/$1"
	}
	printf 'hello\n' >"$work/ntfs/s"
	seq 1 200 | tr '\n' ' ' | head -c 600 >"$work/ntfs/r"
	noise 3000 6000 >"$work/ntfs/b"
	ntfs_img few 0 || note "mkntfs failed"
	ntfs_img many 40 || true
	if [ -f "$N/few" ]; then
		head -c 20000 "$N/few" >"$N/few-cut"
		"$py" - "$N/few" <<'PY' || note "python ntfs seeds failed"
import sys
d = bytearray(open(sys.argv[1], "rb").read())
i = d.find(b"FILE0", 512 + 8 * 1024)  # a record of the MFT: its update sequence number
if i > 0:
    e = bytearray(d); e[i + 510] ^= 0xff; open(sys.argv[1] + "-torn", "wb").write(e)
i = d.find(b"\x80\x00\x00\x00\x48\x00\x00\x00\x01")  # a non-resident $DATA: its runs
if i > 0:
    e = bytearray(d); e[i + 0x40 + 2] ^= 0x7f; open(sys.argv[1] + "-run", "wb").write(e)
PY
	fi
else
	note "mkntfs, ntfscp, ntfsinfo or python3 missing: no NTFS seeds"
fi

# fuzz_ext4: small file systems by mkfs -d (1 KiB blocks, 128 inodes): files of several sizes, a
# sparse one, short and long symlinks, a hard link, a fifo, a folder of 60 names (an htree once
# e2fsck -D has indexed it), a fragmented file (debugfs -w), a cut image
E=$out/fuzz_ext4
mkdir -p "$E" "$work/e4/d/many"
if have mkfs.ext4 && have debugfs; then
	(cd "$work/e4" && printf 'hi\n' >a && head -c 3000 /dev/urandom >d/b &&
		printf 'x%.0s' $(seq 200) >mid && truncate -s 100000 sp &&
		printf z | dd of=sp bs=1 seek=50000 conv=notrunc 2>/dev/null && ln -s a l &&
		ln -s "$(printf 'y%.0s' $(seq 120))" long && ln d/b h && mkfifo f &&
		for i in $(seq 60); do : >"d/many/name-number-$i"; done) || note "ext4 tree failed"
	(setfattr -n user.a -v 1 "$work/e4/a" && setfattr -n user.big -v "$(printf 'v%.0s' $(seq 300))" \
		"$work/e4/d/b") 2>/dev/null || note "no user xattrs in $work: none in the ext4 seeds"
	e4() { mkfs."$1" -q -F -N 128 -b 1024 "${@:3}" -d "$work/e4" "$E/$2" 128K >/dev/null 2>&1 ||
		note "mkfs.$1 $2 failed"; }
	e4 ext2 ext2.img
	e4 ext2 ext2-128.img -I 128
	e4 ext3 ext3.img
	e4 ext4 ext4.img
	e4 ext4 ext4-nojournal.img -O ^has_journal
	e4 ext4 ext4-inline.img -O ^has_journal,inline_data -I 256
	e4 ext4 ext4-indirect.img -O ^has_journal,^extent,^64bit
	e4 ext4 ext4-htree.img -O ^has_journal,dir_index
	[ -f "$E/ext4-htree.img" ] && e2fsck -fyD "$E/ext4-htree.img" >/dev/null 2>&1 || true
	if [ -f "$E/ext4-nojournal.img" ]; then
		cp "$E/ext4-nojournal.img" "$E/ext4-frag.img"
		head -c 4000 /dev/urandom >"$work/e4-x"
		head -c 9000 /dev/urandom >"$work/e4-y"
		printf 'write %s x1\nwrite %s x2\nwrite %s x3\nrm x2\nwrite %s y\n' "$work/e4-x" \
			"$work/e4-x" "$work/e4-x" "$work/e4-y" >"$work/e4-cmds"
		debugfs -w -f "$work/e4-cmds" "$E/ext4-frag.img" >/dev/null 2>&1 || note "debugfs failed"
		head -c 70000 "$E/ext4-nojournal.img" >"$E/cut.img"
	fi
else
	note "mkfs.ext4 or debugfs missing: no ext4 seeds"
fi

# the codec harnesses also start from the plain tars (the magic is the first thing to find)
for f in gnu pax; do
	for c in gzip bzip2 xz zstd lzo; do cp "$T/$f.tar" "$out/fuzz_codec_$c/plain-$f"; done
done
echo "make-seeds: $(find "$out" -type f | wc -l) seeds in $out" >&2
