#!/usr/bin/env bash
# The benchmark corpus the README's figures come from.
#
#   bench/make-corpus.sh [OUTDIR]          (default /var/tmp/tarseek-corpus; ~15 minutes)
#
# Two trees taken from this machine, so nothing is downloaded:
#   backup     /usr/share and /usr/lib/x86_64-linux-gnu: ~2 GB of real files, large and
#              small, what a system backup holds;
#   telemetry  a sosreport-like bundle: /etc, /var/lib/dpkg, /var/log and /usr/share/doc
#              (without what is already compressed) plus the output of a few commands,
#              ~8k small text files.
# Each tree is written as a tar (members in name order) and then compressed once per codec
# the benchmarks compare: gzip -6, bzip2 -9, xz -6 multi-threaded (several blocks), pixz
# (small blocks plus its own tar index), zstd -3 multi-threaded, lzop; telemetry also as
# single-block xz (xz -T1), the case where every random read decodes from the start.
# NAME.list holds 1000 regular files of each tree drawn with a fixed seed: the workload is
# md5sum of each listed file through the mount (tarseek-bench --list NAME.list).
#
# Re-running is cheap: a file that exists is kept; everything is written to NAME.part first
# and renamed, so an interrupted run leaves nothing half-made under the final name.
# Needs: tar, gzip, bzip2, xz-utils, pixz, zstd, lzop, python3 (tools/install-deps.sh
# installs them).
set -euo pipefail

out=${1:-/var/tmp/tarseek-corpus}
jobs=$(nproc)

for tool in tar gzip bzip2 xz pixz zstd lzop python3; do
	command -v "$tool" >/dev/null || {
		echo "make-corpus: $tool is missing (tools/install-deps.sh installs it)" >&2
		exit 1
	}
done
mkdir -p "$out"
cd "$out"

# publish NAME: NAME.part becomes NAME
publish() { mv -- "$1.part" "$1"; }

# the tree of a live system changes as it is read: tar's complaints about that are expected
tar_of() { # OUT, DIR, PATHS... (an archive of PATHS relative to DIR, in name order)
	local dst=$1 dir=$2
	shift 2
	(cd "$dir" && tar --sort=name --warning=no-file-changed --ignore-failed-read \
		-cf "$out/$dst.part" "$@" 2>/dev/null) || true
	publish "$dst"
}

make_backup() {
	[ -s backup.tar ] && return
	echo "make-corpus: backup.tar" >&2
	tar_of backup.tar / usr/share usr/lib/x86_64-linux-gnu
}

make_telemetry() {
	[ -s telemetry.tar ] && return
	echo "make-corpus: telemetry.tar" >&2
	local stage
	stage=$(mktemp -d)
	# the host's text files, as a bundle would copy them
	mkdir -p "$stage/sosreport/sos_commands"
	(cd / && tar --sort=name --ignore-failed-read --exclude='*.gz' --exclude='*.html' \
		--exclude='google-cloud-*' -cf - etc var/lib/dpkg var/log usr/share/doc 2>/dev/null) |
		tar -xf - -C "$stage/sosreport" 2>/dev/null || true
	# and what a few commands said
	local cmd
	for cmd in "uname -a" "df -h" "free -m" "ps auxww" "ip addr" "mount" "lsmod" "env" \
		"dpkg -l" "ls -laR /usr/lib/x86_64-linux-gnu"; do
		sh -c "$cmd" >"$stage/sosreport/sos_commands/$(echo "$cmd" | tr ' /' '__')" 2>&1 || true
	done
	tar_of telemetry.tar "$stage" sosreport
	rm -rf "$stage"
}

compressed() { # SRC DST COMMAND... (COMMAND reads SRC on stdin and writes DST on stdout)
	local src=$1 dst=$2
	shift 2
	[ -s "$dst" ] && return
	echo "make-corpus: $dst" >&2
	"$@" <"$src" >"$dst.part"
	publish "$dst"
}

file_list() { # NAME: 1000 regular files of NAME.tar, seed 42, never under sys/proc/dev/run
	[ -s "$1.list" ] && return
	python3 - "$1.tar" >"$1.list.part" <<'PY'
import random, re, sys, tarfile
skip = re.compile(r'(^|/)(sys|proc|dev|run)/')
with tarfile.open(sys.argv[1]) as archive:
    regular = [m.name for m in archive if m.isreg() and not skip.search(m.name)]
for name in random.Random(42).sample(regular, 1000):
    print(name)
PY
	publish "$1.list"
}

make_telemetry
make_backup
for name in telemetry backup; do
	compressed $name.tar $name.tar.gz gzip -6 -c
	compressed $name.tar $name.tar.bz2 bzip2 -9 -c
	compressed $name.tar $name.tar.xz xz -6 -T"$jobs" -c
	compressed $name.tar $name.tar.pxz pixz -6
	compressed $name.tar $name.tar.zst zstd -3 -T"$jobs" -q -c
	compressed $name.tar $name.tar.lzo lzop -c
	file_list $name
done
compressed telemetry.tar telemetry.1block.tar.xz xz -6 -T1 -c
ls -l "$out"
