#!/usr/bin/env bash
# Runs every libFuzzer harness for a given time and reports what it did.
#   tests/fuzz/run.sh [SECONDS_PER_HARNESS] [BUILD_DIR]        (defaults: 60, build-fuzz)
#
# Builds BUILD_DIR first if it is missing (CC=clang meson setup BUILD_DIR -Dfuzz=true
# -Db_lundef=false; needs clang and libclang-rt-14-dev), makes the seed corpora with the real
# tools (make-seeds.sh), then runs each harness for SECONDS with -timeout=10 per input and an
# RSS limit, two at a time (FUZZ_JOBS=1 for one at a time).  Besides those seeds each harness
# reads, never writes, the committed seed corpus tests/fuzz/corpus/NAME (what campaign.sh's
# long runs found, minimized) and the inputs that once broke it, tests/fuzz/regress/NAME.
# The corpus each harness grows is
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
# shellcheck source=tests/fuzz/lib.sh
. "$here/lib.sh"

# only the harnesses (and the core they link): the rest of the tree is not needed here
built=$(fz_build "$build") || { echo "run.sh: cannot build the harnesses in $build" >&2; exit 1; }

run=$root/$build/fuzz-run
rm -rf "$run/seeds" "$run/logs"
mkdir -p "$run/logs"
bash "$here/make-seeds.sh" "$run/seeds" 2>"$run/logs/seeds.log" || { cat "$run/logs/seeds.log" >&2; exit 1; }
touch "$run/logs/start" # artifacts newer than this are this run's

names=${FUZZ_HARNESSES:-$built}

# one harness: its log says everything; the exit status only says "ran to the end or not"
one() {
	local h=$1 art=$run/artifacts/$1/ flags seeds
	mkdir -p "$run/corpus/$h" "$run/seeds/$h" "$art" # make-seeds.sh may have none for h
	mapfile -t flags < <(fz_flags "$h")
	mapfile -t seeds < <(fz_seed_dirs "$h")
	# the seeds are read but never written; new inputs go to the corpus folder
	timeout -k 10 $((secs + 120)) "$root/$build/tests/fuzz/$h" \
		-max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$art" "${flags[@]}" \
		"$run/corpus/$h" "$run/seeds/$h" "${seeds[@]}" >"$run/logs/$h.log" 2>&1
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
	execs=$(fz_execs "$log")
	read -r cov ft < <(fz_cov "$log")
	found=$(fz_findings "$run/artifacts/$h" "$run/logs/start" | wc -l)
	note=none
	if [ "${status[$i]}" != 0 ] || [ "$found" != 0 ]; then
		fail=1
		note="exit ${status[$i]}, $found new artifact(s): $(fz_what "$log")"
	fi
	total=$((total + execs))
	printf '%-20s %12s %8s %8s %8s  %s\n' "$h" "$execs" "$(fz_rate "$log")" "$cov" "$ft" "$note"
done
printf '%-20s %12s\n' total "$total"
if [ "$fail" != 0 ]; then
	echo "run.sh: findings: see $run/logs and $run/artifacts" >&2
	exit 1
fi
echo "run.sh: ${#hs[@]} harnesses, ${secs} s each, no finding"
