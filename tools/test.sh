#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs
#   1. every test (unit + mount; the damage and tampering matrices as a seeded sample, whose
#      seed pytest prints: `meson test -C build --suite slow` runs them whole);
#   2. the Debian package: built (tools/package.sh), checked by lintian (errors fail),
#      installed with apt-get install ./DEB, tried as a system tool (tests/mount/test_package.py
#      with TARSEEK_PACKAGE_TEST=1: /usr/bin/tarseek, mount -t fuse.tarseek, an fstab line,
#      man, bash completion) and removed with dpkg -r, also when something fails on the way;
#      skipped if a tarseek package is installed already (it is not replaced);
#   3. again built with AddressSanitizer + UndefinedBehaviorSanitizer (any report fails; -O1,
#      as ASan's authors advise: at -O0 the unit tests took a quarter longer) and, where the
#      first tree has ISA-L, without it (meson -Disal=disabled), with -Werror: the whole tree
#      must compile without ISA-L, and the unit tests of the inflate users (gzip, zip, 7z, the
#      index) pass on zlib alone (the mount tests of 1 run zlib's path at run time too:
#      test_*_zlib).  It runs every unit test, and the mount tests that reach most of the
#      daemon's own code: test_plain, test_shadow, test_concurrency, test_hostile,
#      test_damage (its matrix as a seeded sample) and test_peers (archives behind a codec).
#      The containers' and codecs' parsers have their unit tests and fuzzers under the
#      sanitizers; SANITIZE=full adds every mount test
#      and case, the matrices whole and test_zip's entries of 1 and 4.4 GB;
#   4. each libFuzzer harness for FUZZ_SECONDS (default 1: the harnesses build, replay their
#      seeds, corpora and regressions -- libFuzzer runs all of them before it looks at the
#      time -- and fuzz a little; the campaigns are tests/fuzz/campaign.sh's), one at a time,
#      beside 2 and 3.
# The package is built without the unit tests (-Dtests=false: it runs none).
# The trees of 2, 3 and 4 (its core library) are built in the background, at nice 19,
# one after the other, while the tests of 1 run (they leave a core idle much of the time);
# each step waits for its tree.  At the end (also when a step fails) it prints each step's
# wall time and CPU time.
#   sudo tools/test.sh                 (from the project root)
#   BUILD=dir  PACKAGE=0|1  NOISAL=0|1 (0: the sanitizer tree keeps ISA-L)  SANITIZE=0|1|full
#   FUZZ_SECONDS=N (0: none)
set -euo pipefail
cd "$(dirname "$0")/.."
# the wall time and the CPU time (user + system, of the processes waited for) of each step,
# printed at the end (and on the way out when a step fails): on a shared machine the CPU time
# is the figure that does not depend on what else runs
step_names=()
step_secs=()
step_cpus=()
times_file=$(mktemp /tmp/tarseek-test-times.XXXXXX)
children_secs() { # the user + system seconds of the children in the output of `times` in $1
  awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
                 printf "%d", t }' "$1"
}
cpu_secs() { # user + system seconds of this shell's children so far, into $cpu (bash's `times`
  # must run in this shell, not in a command substitution's)
  times >"$times_file"
  cpu=$(children_secs "$times_file")
}
step_start=$SECONDS
cpu_secs
step_cpu=$cpu
step() {
  local cpu
  cpu_secs
  step_names+=("$1")
  step_secs+=($((SECONDS - step_start)))
  step_cpus+=($((cpu - step_cpu)))
  step_start=$SECONDS
  step_cpu=$cpu
}
step_report() {
  local i
  printf 'test.sh: %-50s %7s %7s\n' step wall cpu >&2
  for i in "${!step_names[@]}"; do
    printf 'test.sh: %-50s %5d s %5d s\n' "${step_names[$i]}" "${step_secs[$i]}" "${step_cpus[$i]}" >&2
  done
  local cpu
  cpu_secs
  if [ -n "${bg_cpu:-}" ]; then
    printf 'test.sh: %-50s %5d s %5d s\n' "(built in the background: the 3 other trees, .deb)" \
      "$bg_wall" "$bg_cpu" >&2
    cpu=$((cpu + bg_cpu))
  fi
  if [ -n "${fuzz_cpu:-}" ]; then
    printf 'test.sh: %-50s %5d s %5d s\n' "(fuzz: from its start, waiting for its tree)" \
      "$fuzz_wall" "$fuzz_cpu" >&2
    cpu=$((cpu + fuzz_cpu))
  fi
  printf 'test.sh: %-50s %5d s %5d s\n' total "$SECONDS" "$cpu" >&2
  rm -f "$times_file"
}
cleanups=(step_report)
# the outputs of the tools the unit tests run on the same bytes in every tree, made once
# (tests/unit/testutil.c, tu_pipe)
TARSEEK_TU_CACHE=$(mktemp -d /tmp/tarseek-tu-cache.XXXXXX)
export TARSEEK_TU_CACHE
tu_cache_cleanup() { rm -rf "$TARSEEK_TU_CACHE"; }
cleanups=(tu_cache_cleanup "${cleanups[@]}")
on_exit() {
  local c
  for c in "${cleanups[@]}"; do "$c" || true; done
}
trap on_exit EXIT
bash tools/install-deps.sh
step deps
build=${BUILD:-build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dwerror=true
fi
ninja -C "$build"
step build

# ---- the other trees, built in the background while the tests of the first one run -------
package_status() { dpkg-query -W -f='${Status}' tarseek 2>/dev/null || true; }
package=${PACKAGE:-1}
if [ "$package" != 0 ] && [ -n "$(package_status)" ] &&
  [ "$(package_status)" != "unknown ok not-installed" ]; then
  echo "test.sh: a tarseek package is installed ($(package_status)): not replacing it;" \
    "the package step is skipped (dpkg -r tarseek to run it)" >&2
  package=0
fi
noisal=0
if [ "${NOISAL:-1}" != 0 ] && grep -q '^#define HAVE_ISAL 1' "$build/config.h"; then
  noisal=1
fi
sanitize=${SANITIZE:-1}
fuzz=${FUZZ_SECONDS:-1}
[ -x tests/fuzz/run.sh ] || fuzz=0
bg_dir=$(mktemp -d /tmp/tarseek-test-bg.XXXXXX)
pkg_dir=$(mktemp -d /tmp/tarseek-pkgtest.XXXXXX)
asan_dir="$build-asan"
fuzz_dir="$build-fuzz"
builds() { # the trees one after the other, so that together they take one idle core at most
  if [ "$package" != 0 ]; then
    JOBS=2 bash tools/package.sh "$pkg_dir" >"$bg_dir/package.deb" || return 1
    echo >"$bg_dir/package.done"
  fi
  if [ "$sanitize" != 0 ]; then
    if [ ! -f "$asan_dir/build.ninja" ]; then
      meson setup "$asan_dir" -Db_sanitize=address,undefined -Db_lundef=false \
        -Dbuildtype=debug -Doptimization=1 -Dwerror=true \
        "-Disal=$([ "$noisal" != 0 ] && echo disabled || echo auto)" || return 1
    fi
    ninja -C "$asan_dir" || return 1
    echo >"$bg_dir/asan.done"
  fi
  if [ "$fuzz" != 0 ]; then # the core library: tests/fuzz/run.sh builds the harnesses on it
    if [ ! -f "$fuzz_dir/build.ninja" ]; then
      CC=clang meson setup "$fuzz_dir" -Dfuzz=true -Db_lundef=false || return 1
    fi
    ninja -C "$fuzz_dir" libtarseek_core.a || return 1
  fi
}
# builds() runs at nice 19, in a session of its own (so that one kill ends all of it when this
# script fails) and not as a child of this shell (its CPU time is reported apart, from its own
# `times`, not in the step it happens to end in); builds.rc gets its exit status
( (setsid nice -n 19 bash -c "set -u; $(declare -p package noisal sanitize fuzz pkg_dir \
     asan_dir fuzz_dir bg_dir); $(declare -f builds); echo \$\$ >'$bg_dir/builds.pid'; builds; rc=\$?;
     times >'$bg_dir/builds.times'; echo \$SECONDS >'$bg_dir/builds.wall'; exit \$rc" \
     >"$bg_dir/builds.log" 2>&1 && rc=0 || rc=$? # (set -e would end this subshell here)
   echo $rc >"$bg_dir/builds.rc") &)
bg_cleanup() {
  if [ -f "$bg_dir/builds.pid" ] && [ ! -f "$bg_dir/builds.rc" ]; then
    kill -- "-$(cat "$bg_dir/builds.pid")" 2>/dev/null || true
  fi
  rm -rf "$bg_dir" "$pkg_dir"
}
cleanups=(bg_cleanup "${cleanups[@]}")
bg_gone() { # true when the background session $1 (builds, fuzz) ended without its .rc
  # (killed): then nothing will write it, and waiting for it would hang the run
  local pid
  [ -f "$bg_dir/$1.rc" ] && return 1
  pid=$(cat "$bg_dir/$1.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null && return 1
  sleep 2 # its parent writes the .rc just after it ends
  [ ! -f "$bg_dir/$1.rc" ]
}
wait_build() { # waits until the background builds have made $1 (package, asan, all)
  while [ ! -f "$bg_dir/builds.rc" ] && { [ "$1" = all ] || [ ! -f "$bg_dir/$1.done" ]; }; do
    if bg_gone builds; then
      echo "test.sh: the builds in the background ended without a status" >&2
      exit 1
    fi
    sleep 1
  done
  if [ -f "$bg_dir/builds.rc" ] && [ "$(cat "$bg_dir/builds.rc")" != 0 ]; then
    tail -n 80 "$bg_dir/builds.log" >&2
    echo "test.sh: the builds in the background failed (the end of their log is above)" >&2
    exit 1
  fi
  if [ -f "$bg_dir/builds.times" ] && [ -z "${bg_cpu:-}" ]; then
    bg_cpu=$(children_secs "$bg_dir/builds.times")
    bg_wall=$(cat "$bg_dir/builds.wall")
  fi
}

meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
step "unit + mount tests"

# The fuzzers run from here on, beside the steps below, one harness at a time (the sanitizer
# tests leave a core idle much of the time too), once their tree is built; like the builds,
# in a session of their own (killed with this script), not as a child of this shell (their
# CPU time is reported from their own `times`), their exit status in fuzz.rc
if [ "$fuzz" != 0 ]; then
  ( (setsid bash -c "echo \$\$ >'$bg_dir/fuzz.pid'
      while [ ! -f '$bg_dir/builds.rc' ]; do sleep 1; done
      [ \"\$(cat '$bg_dir/builds.rc')\" = 0 ] || exit 1
      FUZZ_JOBS=1 bash tests/fuzz/run.sh '$fuzz' '$fuzz_dir'; rc=\$?
      times >'$bg_dir/fuzz.times'; echo \$SECONDS >'$bg_dir/fuzz.wall'; exit \$rc" \
      >"$bg_dir/fuzz.log" 2>&1 && rc=0 || rc=$? # (set -e would end this subshell here)
    echo $rc >"$bg_dir/fuzz.rc") &)
  fuzz_cleanup() {
    if [ -f "$bg_dir/fuzz.pid" ] && [ ! -f "$bg_dir/fuzz.rc" ]; then
      kill -- "-$(cat "$bg_dir/fuzz.pid")" 2>/dev/null || true
    fi
  }
  cleanups=(fuzz_cleanup "${cleanups[@]}")
fi

if [ "$package" != 0 ]; then
  package_cleanup() {
    if [ -n "$(package_status)" ] && [ "$(package_status)" != "unknown ok not-installed" ]; then
      dpkg -r tarseek >/dev/null || dpkg --purge --force-all tarseek
    fi
    rm -rf "$pkg_dir"
  }
  cleanups=(package_cleanup "${cleanups[@]}")
  wait_build package
  step "package: waiting for its build"
  deb=$(tail -n 1 "$bg_dir/package.deb")
  # lintian: errors fail the step (warnings are printed)
  lintian --fail-on error "$deb"
  apt-get install -y -q "$deb" >/dev/null
  TARSEEK_PACKAGE_TEST=1 TARSEEK_BUILD="$(realpath "$build")" TARSEEK_SOURCE="$PWD" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs tests/mount/test_package.py
  dpkg -r tarseek >/dev/null
  package_cleanup
  echo "package step: built (in the background), installed, tried and removed"
  step "package: lintian, install, try, remove"
fi

if [ "$sanitize" != 0 ]; then
  wait_build asan
  step "sanitizers: waiting for their build"
  if [ "$noisal" != 0 ]; then # built without ISA-L (3. above)
    grep -q '^#define HAVE_ISAL 0' "$asan_dir/config.h"
  fi
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
  export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
  # two runs: meson takes either suites or test names, and names given with --suite select
  # nothing (it then says "No suitable tests defined" and exits 0)
  meson test -C "$asan_dir" --no-rebuild --print-errorlogs --num-processes 2 \
    --timeout-multiplier 3 --suite unit
  if [ "$sanitize" = full ]; then # every mount test, every case of the matrices
    export TARSEEK_MATRIX=all
    mount_tests=(--suite mount)
  else
    mount_tests=(test_plain test_shadow test_concurrency test_hostile test_damage test_peers)
  fi
  meson test -C "$asan_dir" --no-rebuild --print-errorlogs --num-processes 2 \
    --timeout-multiplier 3 "${mount_tests[@]}"
  step "sanitizers: unit + mount tests"
fi

wait_build all
if [ "$fuzz" != 0 ]; then
  while [ ! -f "$bg_dir/fuzz.rc" ]; do
    if bg_gone fuzz; then
      echo "test.sh: the fuzz run ended without a status" >&2
      exit 1
    fi
    sleep 1
  done
  cat "$bg_dir/fuzz.log"
  step "fuzz: waiting for the rest of its run"
  [ "$(cat "$bg_dir/fuzz.rc")" = 0 ] || { echo "test.sh: the fuzzers failed (above)" >&2; exit 1; }
  fuzz_cpu=$(children_secs "$bg_dir/fuzz.times")
  fuzz_wall=$(cat "$bg_dir/fuzz.wall")
fi
