#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test (unit + mount).
#   sudo tools/test.sh            (from the project root; BUILD=dir to choose the build dir)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
build=${BUILD:-build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dwerror=true
fi
ninja -C "$build"
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
