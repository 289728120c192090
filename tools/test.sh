#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test (unit + mount), then
# the same suite again built with AddressSanitizer + UndefinedBehaviorSanitizer (any report
# fails), then each fuzzer for a short bounded time.
#   sudo tools/test.sh                 (from the project root)
#   BUILD=dir  SANITIZE=0  FUZZ_SECONDS=N   to choose the build dir, skip the sanitizer pass,
#                                           or set the fuzzing time per harness (0: none)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
build=${BUILD:-build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dwerror=true
fi
ninja -C "$build"
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"

if [ "${SANITIZE:-1}" != 0 ]; then
  asan="$build-asan"
  if [ ! -f "$asan/build.ninja" ]; then
    meson setup "$asan" -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
  fi
  ninja -C "$asan"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
  export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
  meson test -C "$asan" --print-errorlogs --num-processes 2 --timeout-multiplier 3 "$@"
fi

if [ "${FUZZ_SECONDS:-30}" != 0 ] && [ -x tests/fuzz/run.sh ]; then
  bash tests/fuzz/run.sh "${FUZZ_SECONDS:-30}" "$build-fuzz"
fi
