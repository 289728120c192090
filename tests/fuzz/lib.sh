# shellcheck shell=bash
# Shell helpers shared by run.sh (CI's short runs) and campaign.sh (long runs outside CI):
# building the harnesses, the options every harness runs with, its seed folders, and reading
# a libFuzzer log.  Sourced, never run; it sets nothing but functions and fz_here.
#
# Both scripts run a harness the same way: fz_flags gives the flags (per-input timeout, RSS
# limit, max_len, dictionary), fz_seed_dirs the read-only folders after the corpus (the
# committed seed corpus tests/fuzz/corpus/NAME, then the inputs that once broke it,
# tests/fuzz/regress/NAME); what differs is how long, where the corpus lives and what is
# done with it afterwards.

fz_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# fz_build BUILD_DIR: configures BUILD_DIR if it is missing (CC=clang, -Dfuzz=true
# -Db_lundef=false; needs clang and libclang-rt-14-dev) and builds only the harnesses (and the
# core they link).  Prints the harness names, one a line; returns 1 when there is none.
fz_build() {
	local build=$1 targets
	if [ ! -f "$build/build.ninja" ]; then
		CC=clang meson setup "$build" -Dfuzz=true -Db_lundef=false >/dev/null || return 1
	fi
	targets=$(ninja -C "$build" -t targets all |
		sed -n 's|^\(tests/fuzz/fuzz_[a-z0-9_]*\): .*|\1|p' | sort -u)
	if [ -z "$targets" ]; then
		echo "no harness in $build (configured with -Dfuzz=true?)" >&2
		return 1
	fi
	# shellcheck disable=SC2086
	ninja -C "$build" $targets >/dev/null || return 1
	for t in $targets; do basename "$t"; done
}

# fz_maxlen HARNESS: the longest input it is given.
fz_maxlen() {
	case $1 in
	fuzz_index | fuzz_ntfs) echo 262144 ;;
	*) echo 131072 ;;
	esac
}

# fz_flags HARNESS: prints the libFuzzer flags it runs with, one a line (read with mapfile).
# A single malloc larger than -malloc_limit_mb (by default the RSS limit) is reported as
# out-of-memory.  fuzz_libarchive allows up to 4200 MB: Debian 12's libarchive (3.6.2) sizes
# its read-ahead buffer from 32-bit header fields, a cpio's c_namesize for one, and so mallocs
# up to 4 GiB it never touches before finding the archive truncated
# (regress/fuzz_libarchive/cpio-namesize-read-ahead-3g-malloc; libarchive caps cpio names at
# 1 MiB since its pull request 3043).  fuzz_squashfs too: libsquashfs 1.2's inode reader
# callocs what an inode says (a symlink target's size, a file's block list) before it reads a
# byte of it; containers/squashfs/sqfs_inodes.c refuses an image whose inodes, read in order,
# do not fit in their table (regress/fuzz_squashfs/inode-4g-calloc), and one whose directory
# entries or root name anything but an inode's start (regress/fuzz_squashfs/calloc-265t-mid-
# inode); the limit stays for what the walk cannot see.  Memory really used is still held to
# the RSS limit.
fz_flags() {
	printf '%s\n' -timeout=10 -rss_limit_mb=2560 "-max_len=$(fz_maxlen "$1")"
	case $1 in
	fuzz_tar | fuzz_index) echo "-dict=$fz_here/tar.dict" ;;
	fuzz_libarchive | fuzz_squashfs) echo -malloc_limit_mb=4200 ;;
	esac
}

# fz_seed_dirs HARNESS: the committed folders it reads but never writes, one a line: its seed
# corpus (tests/fuzz/corpus/NAME, minimized by campaign.sh) and the inputs that once broke it
# (tests/fuzz/regress/NAME, which therefore run every time).
fz_seed_dirs() {
	local d
	for d in "$fz_here/corpus/$1" "$fz_here/regress/$1"; do
		[ -d "$d" ] && echo "$d"
	done
	return 0
}

# fz_execs LOG: executions of the last run in a libFuzzer log (its final stats, else the last
# status line); 0 when there is none.
fz_execs() {
	local n
	n=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$1" | tail -1)
	[ -n "$n" ] || n=$(sed -n 's/^#\([0-9]*\)[[:space:]].*/\1/p' "$1" | tail -1)
	echo "${n:-0}"
}

# fz_rate LOG: executions per second of the last run ('-' when not known).
fz_rate() {
	local n
	n=$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$1" | tail -1)
	echo "${n:--}"
}

# fz_cov LOG: "COV FT" of the last status line ("- -" when there is none).
fz_cov() {
	local last cov ft
	last=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$1" | tail -1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	echo "${cov:--} ${ft:--}"
}

# fz_findings DIR MARKER: the crash, timeout, leak and out-of-memory inputs libFuzzer left in
# DIR since MARKER was touched, one path a line.
fz_findings() {
	[ -d "$1" ] || return 0
	find "$1" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'leak-*' \
		-o -name 'oom-*' \) -newer "$2" | sort
}

# fz_what LOG: one line saying what broke, from a libFuzzer log: the sanitizer's summary, a
# broken contract, a timeout or out-of-memory, else the first ERROR line.
fz_what() {
	grep -m1 -E 'contract broken|^SUMMARY: |ERROR: libFuzzer: (timeout|out-of-memory)' "$1" ||
		grep -m1 -E 'ERROR' "$1" || echo "see $1"
}

# fz_files_bytes DIR: "FILES BYTES" of a folder (0 0 when missing).
fz_files_bytes() {
	if [ -d "$1" ]; then
		find "$1" -maxdepth 1 -type f -printf '%s\n' | awk '{n++; b+=$1} END {print n+0, b+0}'
	else
		echo "0 0"
	fi
}
