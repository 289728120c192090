#!/usr/bin/env bash
# compare-builds.sh - the quick figures of the read and index paths for two builds, in one run,
# interleaved, with their ratios: so that a regression is caught before it lands.
#
#   bench/compare-builds.sh [-n RUNS] [-a] BASE [NEW]   (root; the corpus in $CORPUS)
#
# BASE and NEW are commits (NEW defaults to the checkout's HEAD; "WORK" builds the working
# tree as it is).  Each is built (meson, debugoptimized) into /var/tmp/tarseek-compare/ once
# per commit.  Then, alternating BASE and NEW run by run (RUNS each, default 5):
#   second    a cold second mount of telemetry.tar and telemetry.tar.xz (index present): the
#             time the tarseek command takes to return with the mount ready;
#   job       the sosreport job of telemetry.tar.xz (-a: of telemetry in every codec the corpus
#             has): tarseek-bench --cold, its cold second mount + in-process md5 of
#             telemetry.list (both builds in one tarseek-bench run, the runs interleaved by it);
#   folders   the cold first mount (index built) of a GNU tar of 100k one-block members, one
#             folder per member (d%03d/e%03d/f%07d.txt, as ../shared/checks/many-folders).
# Prints one line per figure: the medians, NEW/BASE; a ratio above 1.10 is flagged "slower".
# Needs: the corpus (shared/bench/make-corpus.sh: telemetry.tar, .tar.xz, telemetry.list).
set -euo pipefail
runs=5
jobs=(telemetry.tar.xz)
while getopts n:a o; do
	case $o in
	n) runs=$OPTARG ;;
	a) jobs=(telemetry.tar telemetry.tar.gz telemetry.tar.bz2 telemetry.tar.xz telemetry.tar.pxz
		 telemetry.1block.tar.xz telemetry.tar.zst telemetry.tar.lzo) ;;
	*) echo "usage: $0 [-n RUNS] [-a] BASE [NEW]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-n RUNS] [-a] BASE [NEW]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$0: root is needed (drop_caches, mounts)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
CORPUS=${CORPUS:-/var/tmp/tarseek-corpus}
W=/var/tmp/tarseek-compare
mkdir -p "$W"
for f in telemetry.tar telemetry.tar.xz telemetry.list; do
	[ -s "$CORPUS/$f" ] || { echo "$0: $CORPUS/$f missing (shared/bench/make-corpus.sh)" >&2; exit 1; }
done

# build COMMIT -> prints the build folder (built once per commit; WORK: the working tree)
build() {
	local c=$1 sha src out
	if [ "$c" = WORK ]; then
		sha=work-$(date +%s)
		src=$root
	else
		sha=$(git rev-parse --verify "$c^{commit}") || { echo "$0: no commit $c" >&2; exit 1; }
		src=$W/src-$sha
		if [ ! -d "$src" ]; then
			git worktree prune
			git worktree add -f --detach "$src" "$sha" >/dev/null 2>&1
		fi
	fi
	out=$W/build-$sha
	if [ ! -f "$out/.ok" ]; then
		rm -rf "$out"
		(cd "$src" && meson setup "$out" >"$W/build-$sha.log" 2>&1 &&
			ninja -C "$out" >>"$W/build-$sha.log" 2>&1) ||
			{ echo "$0: build of $c failed (see $W/build-$sha.log)" >&2; exit 1; }
		touch "$out/.ok"
	fi
	echo "$out"
}
base_b=$(build "$1")
new_b=$(build "${2:-HEAD}")
declare -A BIN=([base]="$base_b/fs/tarseek" [new]="$new_b/fs/tarseek")
BENCH=$new_b/tools/tarseek-bench
mnt=$W/mnt
mkdir -p "$mnt"
cleanup() { mountpoint -q "$mnt" && fusermount3 -uz "$mnt"; true; }
trap cleanup EXIT
now() { date +%s.%N; }
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
# mount_time WHO ARGS... -> seconds until the command returns with the mount up
mount_time() {
	local who=$1 t0 t1
	shift
	cold
	t0=$(now)
	"${BIN[$who]}" "$@" "$mnt" >/dev/null 2>&1 || { echo fail; return; }
	t1=$(now)
	mountpoint -q "$mnt" || { echo fail; return; }
	fusermount3 -u "$mnt"
	echo "$t1 - $t0" | bc
}
report() { # name base-values new-values
	local b n r
	b=$(tr ' ' '\n' <<<"$2" | grep -v '^$' | median)
	n=$(tr ' ' '\n' <<<"$3" | grep -v '^$' | median)
	r=$(echo "scale=2; $n / $b" | bc)
	printf '%-34s base %8.3fs  new %8.3fs  new/base %5.2f%s\n' "$1" "$b" "$n" "$r" \
		"$([ "$(echo "$r > 1.10" | bc)" = 1 ] && echo '  slower')"
}

echo "base: $1 ($base_b)"
echo "new:  ${2:-HEAD} ($new_b)"

# second mounts
for f in telemetry.tar telemetry.tar.xz; do
	declare -A S=([base]="" [new]="")
	for who in base new; do
		rm -f "$W/$who-$f.idx"
		"${BIN[$who]}" --index-file "$W/$who-$f.idx" "$CORPUS/$f" "$mnt" >/dev/null 2>&1
		fusermount3 -u "$mnt"
	done
	for ((i = 0; i < runs; i++)); do
		for who in base new; do
			S[$who]+=" $(mount_time $who --index-file "$W/$who-$f.idx" "$CORPUS/$f")"
		done
	done
	case "${S[base]}${S[new]}" in *fail*) echo "$f: a second mount failed" >&2; exit 1 ;; esac
	report "second mount $f" "${S[base]}" "${S[new]}"
done

# the sosreport job of each codec asked for, both builds in one tarseek-bench run
ex=$CORPUS/extracted/telemetry
[ -d "$ex" ] || { mkdir -p "$ex.part" && tar -xf "$CORPUS/telemetry.tar" -C "$ex.part" && mv "$ex.part" "$ex"; }
# both builds through --mount-cmd, the same way.  Caveat: tarseek-bench gives a command 200 ms
# to return before it reads the mounter's /proc/PID/io (bench_mount_pids), so the md5 pass of
# a command's mount starts that much later and the daemon's prefetch has a head start: these
# jobs compare the two builds with each other, not with shared/checks/shadow-telemetry (which
# mounts with tarseek-bench's own daemon and starts reading at once)
cfg=(--mount-cmd "${BIN[new]} -f --index-file {index} {archive} {mnt}")
for f in "${jobs[@]}"; do
	[ -s "$CORPUS/$f" ] && cfg+=(--name "new $f" "$CORPUS/$f")
done
cfg+=(--mount-cmd "${BIN[base]} -f --index-file {index} {archive} {mnt}")
for f in "${jobs[@]}"; do
	[ -s "$CORPUS/$f" ] && cfg+=(--name "base $f" "$CORPUS/$f")
done
"$BENCH" -q --tarseek "${BIN[new]}" --list "$CORPUS/telemetry.list" --cold --runs "$runs" \
	--seed 11 --dir "$ex" "${cfg[@]}" --json "$W/job.json" >"$W/job.txt" 2>"$W/job.err" ||
	{ echo "tarseek-bench failed:"; tail -3 "$W/job.err"; exit 1; }
/usr/bin/python3 - "$W/job.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
M = {m['id']: {r['name']: r['median'] for r in m['results']} for m in d['metrics']}
md5, sm = M['md5'], M['second_mount']
for name in md5:
    if not name.startswith('new '):
        continue
    f = name[4:]
    b = md5['base ' + f] + sm['base ' + f]; n = md5[name] + sm[name]; r = n / b
    print(f"{'job ' + f + ' (2nd+md5)':<34} base {b:8.3f}s  new {n:8.3f}s  new/base {r:5.2f}"
          + ('  slower' if r > 1.10 else '') + f"   (extracted {md5['extracted']:.3f}s)")
PY

# the 100k many-folder first mount
tarf=$W/m100000.tar
[ -s "$tarf" ] || /usr/bin/python3 - "$tarf" <<'PY'
import io, os, sys, tarfile
with tarfile.open(sys.argv[1] + '.part', 'w', format=tarfile.GNU_FORMAT) as t:
    for i in range(100000):
        b = b'%d\n' % i
        ti = tarfile.TarInfo('d%03d/e%03d/f%07d.txt' % (i % 1000, (i // 1000) % 1000, i))
        ti.size = len(b); ti.mtime = 1600000000
        t.addfile(ti, io.BytesIO(b))
os.rename(sys.argv[1] + '.part', sys.argv[1])
PY
declare -A F=([base]="" [new]="")
for ((i = 0; i < runs; i++)); do
	for who in base new; do
		rm -f "$W/$who-folders.idx"
		F[$who]+=" $(mount_time $who --index-file "$W/$who-folders.idx" "$tarf")"
	done
done
case "${F[base]}${F[new]}" in *fail*) echo "the many-folder mount failed" >&2; exit 1 ;; esac
report "first mount 100k folders" "${F[base]}" "${F[new]}"
