#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs
#   1. every test (unit + mount);
#   2. the Debian package: built (tools/package.sh), checked by lintian (errors fail),
#      installed with apt-get install ./DEB, tried as a system tool (tests/mount/test_package.py with TARSEEK_PACKAGE_TEST=1: /usr/bin/tarseek,
#      mount -t fuse.tarseek, an fstab line, man, bash completion) and removed with dpkg -r,
#      also when something fails on the way; skipped if a tarseek package is installed
#      already (it is not replaced);
#   2b. again built without ISA-L (meson -Disal=disabled, where libisal was found): the whole
#      tree must compile, and the unit tests of the inflate users (gzip, zip, 7z, the index)
#      pass on zlib alone (the mount tests run zlib's path at run time: test_*_zlib);
#   3. again built with AddressSanitizer + UndefinedBehaviorSanitizer (any report fails): the
#      unit tests and the mount tests, except the exhaustive matrices (test_damage,
#      test_hostile, test_stress), which SANITIZE=full adds;
#   4. each libFuzzer harness for FUZZ_SECONDS (default 10).
# At the end (also when a step fails) it prints each step's wall time and CPU time.
#   sudo tools/test.sh                 (from the project root)
#   BUILD=dir  PACKAGE=0|1  NOISAL=0|1  SANITIZE=0|1|full  FUZZ_SECONDS=N (0: none)
set -euo pipefail
cd "$(dirname "$0")/.."
# the wall time and the CPU time (user + system, of the processes waited for) of each step,
# printed at the end (and on the way out when a step fails): on a shared machine the CPU time
# is the figure that does not depend on what else runs
step_names=()
step_secs=()
step_cpus=()
times_file=$(mktemp /tmp/tarseek-test-times.XXXXXX)
cpu_secs() { # user + system seconds of this shell's children so far, into $cpu (bash's `times`
  # must run in this shell, not in a command substitution's)
  times >"$times_file"
  cpu=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
                       printf "%d", t }' "$times_file")
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
  printf 'test.sh: %-34s %7s %7s\n' step wall cpu >&2
  for i in "${!step_names[@]}"; do
    printf 'test.sh: %-34s %5d s %5d s\n' "${step_names[$i]}" "${step_secs[$i]}" "${step_cpus[$i]}" >&2
  done
  local cpu
  cpu_secs
  printf 'test.sh: %-34s %5d s %5d s\n' total "$SECONDS" "$cpu" >&2
  rm -f "$times_file"
}
trap step_report EXIT
bash tools/install-deps.sh
step deps
build=${BUILD:-build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dwerror=true
fi
ninja -C "$build"
step build
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
step "unit + mount tests"

package_status() { dpkg-query -W -f='${Status}' tarseek 2>/dev/null || true; }
if [ "${PACKAGE:-1}" != 0 ]; then
  if [ -n "$(package_status)" ] && [ "$(package_status)" != "unknown ok not-installed" ]; then
    echo "test.sh: a tarseek package is installed ($(package_status)): not replacing it;" \
      "the package step is skipped (dpkg -r tarseek to run it)" >&2
  else
    pkg_dir=$(mktemp -d /tmp/tarseek-pkgtest.XXXXXX)
    package_cleanup() {
      if [ -n "$(package_status)" ] && [ "$(package_status)" != "unknown ok not-installed" ]; then
        dpkg -r tarseek >/dev/null || dpkg --purge --force-all tarseek
      fi
      rm -rf "$pkg_dir"
    }
    trap 'package_cleanup; step_report' EXIT
    pkg_start=$SECONDS
    deb=$(bash tools/package.sh "$pkg_dir" | tail -n 1)
    # lintian: errors fail the step (warnings are printed)
    lintian --fail-on error "$deb"
    apt-get install -y -q "$deb" >/dev/null
    TARSEEK_PACKAGE_TEST=1 TARSEEK_BUILD="$(realpath "$build")" TARSEEK_SOURCE="$PWD" \
      /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs tests/mount/test_package.py
    dpkg -r tarseek >/dev/null
    package_cleanup
    trap step_report EXIT
    echo "package step: built, installed, tried and removed in $((SECONDS - pkg_start)) s"
    step package
  fi
fi

if [ "${NOISAL:-1}" != 0 ] && grep -q '^#define HAVE_ISAL 1' "$build/config.h"; then
  noisal="$build-noisal"
  if [ ! -f "$noisal/build.ninja" ]; then
    meson setup "$noisal" -Dwerror=true -Disal=disabled >/dev/null
  fi
  ninja -C "$noisal" >/dev/null
  grep -q '^#define HAVE_ISAL 0' "$noisal/config.h"
  meson test -C "$noisal" --no-rebuild --print-errorlogs --num-processes 2 \
    gzip zip sevenzip index validate fuzz_regress reader stream
  step "without ISA-L: build + unit tests"
fi

sanitize=${SANITIZE:-1}
if [ "$sanitize" != 0 ]; then
  asan="$build-asan"
  if [ ! -f "$asan/build.ninja" ]; then
    meson setup "$asan" -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
  fi
  ninja -C "$asan"
  step "ASan/UBSan: build"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
  export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
  # two runs: meson takes either suites or test names, and names given with --suite select
  # nothing (it then says "No suitable tests defined" and exits 0)
  meson test -C "$asan" --print-errorlogs --num-processes 2 --timeout-multiplier 3 --suite unit
  if [ "$sanitize" = full ]; then
    mount_tests=(--suite mount)
  else
    mount_tests=(test_plain test_formats test_index test_codecs test_single test_concurrency
                 test_union test_bench test_prefetch test_zip test_7z test_libarchive
                 test_convert)
  fi
  meson test -C "$asan" --print-errorlogs --num-processes 2 --timeout-multiplier 3 \
    "${mount_tests[@]}"
  step "ASan/UBSan: tests"
fi

fuzz=${FUZZ_SECONDS:-10}
if [ "$fuzz" != 0 ] && [ -x tests/fuzz/run.sh ]; then
  bash tests/fuzz/run.sh "$fuzz" "$build-fuzz"
  step "fuzz: build + harnesses"
fi
