#!/usr/bin/env bash
# A long fuzzing campaign, outside CI: every harness for MINUTES, one after the other.
#   tests/fuzz/campaign.sh MINUTES [BUILD_DIR]                 (BUILD_DIR: build-fuzz)
#   nohup nice -n 19 bash tests/fuzz/campaign.sh 30 > /var/tmp/tarseek-fuzz/campaign.log 2>&1 &
#
# run.sh is CI's short run (seconds per harness, its corpus in the build folder); this one runs
# for hours and keeps what it learns between runs, under CAMPAIGN_DIR (/var/tmp/tarseek-fuzz):
#   corpus/NAME/     the kept corpus of harness NAME: each run goes on from it, and it is
#                    merged and minimized at the end of each harness (-merge=1 of the corpus,
#                    the seeds and the committed seed corpus into a fresh folder, swapped in)
#   seeds/NAME/      make-seeds.sh's seeds, made again each run; read, never written
#   artifacts/NAME/  what libFuzzer kept: crash-*, timeout-*, leak-*, oom-*
#   logs/STAMP/      this run's logs: NAME.N.log per fuzzer process, NAME.merge.log,
#                    summary (the table below, tab-separated)
# Besides the seeds each harness reads the committed seed corpus tests/fuzz/corpus/NAME and the
# inputs that once broke it, tests/fuzz/regress/NAME (lib.sh's fz_seed_dirs, as run.sh does).
#
# A finding does not end a harness's time: libFuzzer stops at the first crash, so the harness is
# started again for the minutes left (at most CAMPAIGN_RESTARTS times, 20), and the binary and
# lib.sh's flags are read again each time, so a fix built into BUILD_DIR meanwhile is what the
# rest runs.  Each new
# finding is copied, ready to commit, to tests/fuzz/regress/NAME/new-KIND-WHAT-SHA (KIND: crash,
# timeout, leak or oom; WHAT: the sanitizer's error and function, or the broken contract's
# line); one copy per different WHAT and harness, the others are listed in the log.  Rename it
# for what it broke once it is fixed: run.sh replays regress/ every time.
#
# Prints per harness: minutes fuzzed, fuzzer processes, executions, final cov and ft, corpus
# files/bytes before and after the merge, findings; then the new files; exits 1 if anything was
# found (or a harness failed to run).  Wall time: MINUTES x harnesses / CAMPAIGN_JOBS, plus the
# merges (seconds to minutes each).
#
#   CAMPAIGN_JOBS=N          N harnesses at a time (1: the machine is shared)
#   CAMPAIGN_HARNESSES="fuzz_tar fuzz_zip"   only those, in that order
#   CAMPAIGN_DIR=DIR         somewhere other than /var/tmp/tarseek-fuzz
#   CAMPAIGN_EXPORT=1        afterwards, write the committed seed corpus tests/fuzz/corpus/NAME
#                            from the kept one: inputs of at most 64 KiB, the smallest set that
#                            covers the same edges (-set_cover_merge=1 -use_counters=0), then
#                            the smallest inputs first up to 200 files and 2 MB.
#                            MINUTES 0 does only this (and the merge), no fuzzing.
#
# The whole script is one function, read before it runs: editing this file while a campaign
# runs does not disturb it.

campaign_main() {
	set -euo pipefail
	local mins=${1:?usage: campaign.sh MINUTES [BUILD_DIR]}
	local build=${2:-build-fuzz}
	local jobs=${CAMPAIGN_JOBS:-1}
	local here root state stamp logs names built h
	here=$(cd "$(dirname "$0")" && pwd)
	root=$(cd "$here/../.." && pwd)
	cd "$root"
	# shellcheck source=tests/fuzz/lib.sh
	. "$here/lib.sh"
	case $mins in '' | *[!0-9]*) echo "campaign.sh: MINUTES must be a whole number" >&2; return 2 ;; esac
	case $build in /*) ;; *) build=$root/$build ;; esac

	state=${CAMPAIGN_DIR:-/var/tmp/tarseek-fuzz}
	stamp=$(date +%Y%m%d-%H%M%S)
	logs=$state/logs/$stamp
	mkdir -p "$logs" "$state/corpus" "$state/artifacts"
	echo "campaign: $(date '+%F %T'), $mins min per harness, $jobs at a time, logs in $logs"

	built=$(fz_build "$build") || { echo "campaign.sh: cannot build the harnesses in $build" >&2; return 1; }
	rm -rf "$state/seeds"
	bash "$here/make-seeds.sh" "$state/seeds" 2>"$logs/seeds.log" || { cat "$logs/seeds.log" >&2; return 1; }
	touch "$logs/start" # artifacts newer than this are this run's
	names=${CAMPAIGN_HARNESSES:-$built}

	local hs=()
	for h in $names; do
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 5; done
		echo "campaign: $(date '+%T') $h"
		(campaign_one "$h" >"$logs/$h.out" 2>&1 || echo "campaign_one failed: $?" >>"$logs/$h.out") &
		hs+=("$h")
	done
	wait

	local fail=0 line
	echo
	printf '%-20s %5s %4s %12s %7s %7s %17s %17s  %s\n' harness min runs executions cov ft \
		'corpus before' 'corpus after' findings
	for h in "${hs[@]}"; do
		line=$(grep -s "^$h	" "$logs/summary" | tail -1 || true)
		if [ -z "$line" ]; then
			printf '%-20s did not finish: %s\n' "$h" "$(tail -1 "$logs/$h.out" 2>/dev/null)"
			fail=1
			continue
		fi
		IFS=$'\t' read -r _ m runs ex cov ft bf bb af ab nf note <<<"$line"
		printf '%-20s %5s %4s %12s %7s %7s %17s %17s  %s\n' "$h" "$m" "$runs" "$ex" "$cov" "$ft" \
			"$bf/$(numfmt --to=iec "$bb")" "$af/$(numfmt --to=iec "$ab")" "$nf $note"
		[ "$nf" = 0 ] && [ -z "$note" ] || fail=1
	done
	if [ -s "$logs/new" ]; then
		echo
		echo "new findings, ready to commit once fixed (rename them for what they broke):"
		sed 's/^/  /' "$logs/new"
	fi
	echo "campaign: $(date '+%F %T') done; logs in $logs"
	return $fail
}

# campaign_one NAME: fuzzes, merges, reports findings, maybe exports; appends one line to
# the summary.  Uses the caller's here, root, build, state, logs, mins.
campaign_one() {
	local h=$1 bin=$build/tests/fuzz/$1 corpus=$state/corpus/$1 art=$state/artifacts/$1/
	local flags seeds before after t0 deadline left n=0 execs=0 rc log note='' cov=- ft=-
	mapfile -t flags < <(fz_flags "$h")
	mapfile -t seeds < <(fz_seed_dirs "$h")
	[ -d "$state/seeds/$h" ] && seeds=("$state/seeds/$h" "${seeds[@]}")
	mkdir -p "$corpus" "$art"
	before=$(fz_files_bytes "$corpus")

	# fuzz until the minutes are used, starting again after each finding
	t0=$(date +%s)
	deadline=$((t0 + mins * 60))
	while left=$((deadline - $(date +%s))) && [ "$left" -ge 10 ]; do
		n=$((n + 1))
		# lib.sh read again: flags changed since (a limit found too tight) apply too
		# shellcheck source=tests/fuzz/lib.sh
		mapfile -t flags < <(. "$here/lib.sh" && fz_flags "$h")
		log=$logs/$h.$n.log
		rc=0
		timeout -k 10 $((left + 300)) "$bin" -max_total_time="$left" -print_final_stats=1 \
			-artifact_prefix="$art" "${flags[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1 || rc=$?
		execs=$((execs + $(fz_execs "$log")))
		read -r cov ft < <(fz_cov "$log")
		[ "$rc" = 0 ] && break
		if ! grep -q 'Test unit written to' "$log"; then
			note="(exit $rc without a finding: $(fz_what "$log"))"
			break
		fi
		echo "$(date '+%T') run $n: $(fz_what "$log")"
		if [ "$n" -ge "${CAMPAIGN_RESTARTS:-20}" ]; then
			note="(stopped after $n findings)"
			break
		fi
	done
	local fuzzed=$((($(date +%s) - t0 + 30) / 60))

	# merge: the corpus, the seeds and the committed corpus into a fresh folder, swapped in
	local fresh=$corpus.merge
	rm -rf "$fresh" "$corpus.old"
	mkdir -p "$fresh"
	if "$bin" -merge=1 "${flags[@]}" -artifact_prefix="$logs/$h.merge-" "$fresh" "$corpus" \
		"${seeds[@]}" >"$logs/$h.merge.log" 2>&1 && [ -n "$(ls -A "$fresh")" ]; then
		mv "$corpus" "$corpus.old" && mv "$fresh" "$corpus" && rm -rf "$corpus.old"
	else
		note="$note (merge failed: $logs/$h.merge.log)"
		rm -rf "$fresh"
	fi
	after=$(fz_files_bytes "$corpus")

	# findings of this run: one copy per different error, named for it
	local f nf=0 what sig dest src
	local -A seen=()
	while read -r f; do
		[ -n "$f" ] || continue
		nf=$((nf + 1))
		src=$(grep -l -F "Test unit written to $f" "$logs/$h".[0-9]*.log 2>/dev/null | head -1 || true)
		what=$( [ -n "$src" ] && fz_what "$src" || echo "?")
		sig=$(campaign_sig "$(basename "$f")" "$what" "$src")
		if [ -n "${seen[$sig]:-}" ]; then
			echo "finding $f: $what (same as ${seen[$sig]})"
			continue
		fi
		dest=$here/regress/$h/new-$sig-$(sha1sum <"$f" | cut -c1-8)
		mkdir -p "$here/regress/$h"
		cp "$f" "$dest"
		seen[$sig]=$(basename "$dest")
		echo "finding $f: $what -> $dest"
		echo "${dest#"$root"/}  ($what; log ${src:-?})" >>"$logs/new"
	done < <(fz_findings "$art" "$logs/start")

	[ "${CAMPAIGN_EXPORT:-0}" = 1 ] && campaign_export "$h"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$h" "$fuzzed" "$n" "$execs" "$cov" "$ft" \
		"${before// /	}" "${after// /	}" "$nf	$note" >>"$logs/summary"
}

# campaign_sig ARTIFACT WHAT [LOG]: KIND-WHAT for a file name, e.g.
# crash-heap-buffer-overflow-tar_parse, crash-contract-fuzz_zip.c-212, oom-lac_pass1: a
# timeout, leak or out-of-memory is named for the first frame of its stack in tarseek's own
# code (built from ../SOURCE, not tests/fuzz), as a sanitizer names no function for them.
campaign_sig() {
	local kind=${1%%-*} what=$2 log=${3:-} s=''
	case $what in
	*'contract broken'*) s=contract-$(sed -n 's|^\(.*/\)\{0,1\}\([^/ :]*\):\([0-9]*\): contract broken.*|\2-\3|p' <<<"$what") ;;
	*'SUMMARY: '*'leaked in'*) s='' ;;
	*'SUMMARY: '*) s=$(sed -n 's|^SUMMARY: [A-Za-z]*: \([^ ]*\) \([^ ]*\)\( in \([^ ]*\)\)\{0,1\}.*|\1-\4|p' <<<"$what")
		# UBSan names no function: its file and line then
		[ "${s%-}" != "$s" ] && s=$(sed -n 's|^SUMMARY: [A-Za-z]*: \([^ ]*\) .*/\([^/:]*\):\([0-9]*\).*|\1-\2-\3|p' <<<"$what") ;;
	esac
	if [ -z "$s" ] && [ -n "$log" ] && [ -f "$log" ]; then
		s=$(grep -E '^ *#[0-9]+ 0x[0-9a-f]+ in [A-Za-z_][A-Za-z0-9_]* [^ ]*/\.\./' "$log" |
			grep -v '/tests/fuzz/' | head -1 | sed 's/^.* in \([A-Za-z0-9_]*\) .*/\1/' || true)
	fi
	s=$(tr -c 'A-Za-z0-9._\n-' '_' <<<"$kind${s:+-$s}" | cut -c1-80)
	echo "${s%-}"
}

# campaign_export NAME: the committed seed corpus tests/fuzz/corpus/NAME from the kept one.
campaign_export() {
	local h=$1 bin=$build/tests/fuzz/$1 small=$state/export/$1/small out=$state/export/$1/out
	local dest=$here/corpus/$1 flags f size n=0 bytes=0
	mapfile -t flags < <(fz_flags "$h")
	rm -rf "$state/export/$h"
	mkdir -p "$small" "$out"
	# inputs of at most 64 KiB (the merged corpus, the seeds): copies, by content
	find "$state/corpus/$h" "$state/seeds/$h" -maxdepth 1 -type f -size -65537c \
		-exec cp -t "$small" {} + 2>/dev/null || true
	if ! "$bin" -set_cover_merge=1 -use_counters=0 "${flags[@]}" \
		-artifact_prefix="$logs/$h.export-" "$out" "$small" >"$logs/$h.export.log" 2>&1; then
		echo "export of $h failed: $logs/$h.export.log"
		return 0
	fi
	# the smallest first, up to 200 files and 2 MB
	rm -rf "$dest"
	mkdir -p "$dest"
	while read -r size f; do
		if [ $((n + 1)) -gt 200 ] || [ $((bytes + size)) -gt $((2 << 20)) ]; then break; fi
		cp "$out/$f" "$dest/"
		n=$((n + 1))
		bytes=$((bytes + size))
	done < <(find "$out" -maxdepth 1 -type f -printf '%s %f\n' | sort -n)
	echo "exported $n of $(fz_files_bytes "$out" | cut -d' ' -f1) inputs ($bytes bytes) to ${dest#"$root"/}"
}

campaign_main "$@"; exit $?
