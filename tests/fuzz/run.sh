#!/usr/bin/env bash
# Runs every libFuzzer harness for a given time and reports what it did.
#   tests/fuzz/run.sh [SECONDS_PER_HARNESS] [BUILD_DIR]        (defaults: 60, build-fuzz)
#
# Builds BUILD_DIR first if it is missing (CC=clang meson setup BUILD_DIR -Dfuzz=true
# -Db_lundef=false; needs clang and libclang-rt-14-dev), makes the seed corpora with the real
# tools (make-seeds.sh), then runs each harness for SECONDS with -timeout=10 per input and an
# RSS limit, two at a time (FUZZ_JOBS=1 for one at a time).  The corpus each harness grows is
# kept in BUILD_DIR/fuzz-run/corpus/NAME, so later runs go on from it; crashes, timeouts,
# leaks and out-of-memory inputs go to BUILD_DIR/fuzz-run/artifacts/NAME/, logs to
# BUILD_DIR/fuzz-run/logs/NAME.log.  Prints per harness: executions, coverage (cov/ft) and
# findings, then the total; exits 1 if any harness found anything (or failed to run).
# Installs nothing.  Wall time: about SECONDS x harnesses / FUZZ_JOBS, plus the build.
# FUZZ_HARNESSES="fuzz_tar fuzz_index" runs only those.
set -euo pipefail
secs=${1:-60}
build=${2:-build-fuzz}
jobs=${FUZZ_JOBS:-2}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=true -Db_lundef=false >/dev/null
fi
# only the harnesses (and the core they link): the rest of the tree is not needed here
targets=$(ninja -C "$build" -t targets all | sed -n 's|^\(tests/fuzz/fuzz_[a-z0-9_]*\): .*|\1|p' | sort -u)
[ -n "$targets" ] || { echo "run.sh: no harness in $build (configured with -Dfuzz=true?)" >&2; exit 1; }
# shellcheck disable=SC2086
ninja -C "$build" $targets >/dev/null

run=$root/$build/fuzz-run
rm -rf "$run/seeds" "$run/logs"
mkdir -p "$run/logs"
bash "$here/make-seeds.sh" "$run/seeds" 2>"$run/logs/seeds.log" || { cat "$run/logs/seeds.log" >&2; exit 1; }
touch "$run/logs/start" # artifacts newer than this are this run's

names=${FUZZ_HARNESSES:-$(for t in $targets; do basename "$t"; done)}

maxlen() {
	case $1 in
	fuzz_index) echo 262144 ;;
	*) echo 131072 ;;
	esac
}

# one harness: its log says everything; the exit status only says "ran to the end or not"
one() {
	local h=$1 art=$run/artifacts/$1/ dict=() regress=()
	mkdir -p "$run/corpus/$h" "$art"
	case $h in fuzz_tar | fuzz_index) dict=(-dict="$here/tar.dict") ;; esac
	# inputs that once broke a harness (tests/fuzz/regress/NAME) run first, every time
	[ -d "$here/regress/$h" ] && regress=("$here/regress/$h")
	# the seeds are read but never written; new inputs go to the corpus folder
	timeout -k 10 $((secs + 120)) "$root/$build/tests/fuzz/$h" \
		-max_total_time="$secs" -timeout=10 -rss_limit_mb=2560 -max_len="$(maxlen "$h")" \
		-print_final_stats=1 -artifact_prefix="$art" "${dict[@]}" \
		"$run/corpus/$h" "$run/seeds/$h" "${regress[@]}" >"$run/logs/$h.log" 2>&1
}

# each harness in a background job that leaves its exit status in a file (bash forgets the
# status of a job that `jobs` has already reported, so `wait PID` cannot be relied on)
hs=()
for h in $names; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
	(if one "$h"; then echo 0; else echo $?; fi >"$run/logs/$h.rc") &
	hs+=("$h")
done
wait
status=()
for i in "${!hs[@]}"; do
	status[$i]=$(cat "$run/logs/${hs[$i]}.rc" 2>/dev/null || echo "no status")
done

total=0
fail=0
printf '%-20s %12s %8s %8s %8s  %s\n' harness executions exec/s cov ft findings
for i in "${!hs[@]}"; do
	h=${hs[$i]}
	log=$run/logs/$h.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
	[ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\)[[:space:]].*/\1/p' "$log" | tail -1)
	execs=${execs:-0}
	rate=$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$log" | tail -1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	found=$(find "$run/artifacts/$h" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'leak-*' \
		-o -name 'oom-*' \) -newer "$run/logs/start" | wc -l)
	note=none
	if [ "${status[$i]}" != 0 ] || [ "$found" != 0 ]; then
		fail=1
		note="exit ${status[$i]}, $found new artifact(s): $(grep -m1 -E 'ERROR|contract broken' "$log" || echo see log)"
	fi
	total=$((total + execs))
	printf '%-20s %12s %8s %8s %8s  %s\n' "$h" "$execs" "${rate:--}" "${cov:--}" "${ft:--}" "$note"
done
printf '%-20s %12s\n' total "$total"
if [ "$fail" != 0 ]; then
	echo "run.sh: findings: see $run/logs and $run/artifacts" >&2
	exit 1
fi
echo "run.sh: ${#hs[@]} harnesses, ${secs} s each, no finding"
