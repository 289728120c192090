#!/usr/bin/env bash
# The main job: installs what is missing, builds, mounts an archive (the one given, or a
# sample it makes), lists and reads from it, unmounts, then runs the benchmark on it.
#   sudo tools/demo.sh [ARCHIVE]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bash tools/install-deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build
tarseek=$root/build/fs/tarseek
bench=$root/build/tools/tarseek-bench

work=/var/tmp/tarseek-demo
mkdir -p "$work"
if [ $# -ge 1 ]; then
  archive=$(realpath "$1")
  tree=
else
  # a sample: some documentation and configuration, as a sosreport-like tar.gz
  tree=$work/tree
  archive=$work/sample.tar.gz
  if [ ! -s "$archive" ]; then
    rm -rf "$tree" && mkdir -p "$tree"
    (cd / && tar --ignore-failed-read -cf - etc usr/share/doc 2>/dev/null || true) | tar -xf - -C "$tree" 2>/dev/null || true
    tar -C "$tree" -czf "$archive.part" . && mv "$archive.part" "$archive"
  fi
fi

mnt=$work/mnt
mkdir -p "$mnt"
mountpoint -q "$mnt" && fusermount3 -u "$mnt"
echo "== mounting $archive on $mnt"
time "$tarseek" "$archive" "$mnt"
trap 'fusermount3 -u "$mnt" 2>/dev/null || true' EXIT
echo "== top of the tree"
ls -la "$mnt" | head -20 || true # head may close the pipe early
echo "== $(find "$mnt" | wc -l) entries"
echo "== md5 of the first 5 regular files"
mapfile -t some < <(find "$mnt" -type f | head -5) # (head closes the pipe early: no pipefail)
md5sum "${some[@]}"
fusermount3 -u "$mnt"
trap - EXIT
echo "== second mount (index reused)"
time "$tarseek" "$archive" "$mnt"
fusermount3 -u "$mnt"

echo "== benchmark: md5 of 200 random files, 3 runs each, cold page cache"
args=(--sample 200 --seed 1 --runs 3 --cold --svg "$work/bench.svg")
if [ -n "$tree" ]; then
  "$bench" "${args[@]}" --dir "$tree" "$archive"
else
  "$bench" "${args[@]}" "$archive"
fi
echo "== chart: $work/bench.svg"
