#!/usr/bin/env bash
# Builds the Debian package of this source tree into OUTDIR (run as root on Debian 12):
#   tools/package.sh OUTDIR
# OUTDIR receives tarseek_VERSION_ARCH.deb, its -dbgsym package, .buildinfo and .changes;
# the last line of the output is the path of the .deb.
#
# The tree as it is (tracked and untracked files, not the ignored ones such as build*/) is
# copied to a temporary folder and built there with `dpkg-buildpackage -us -uc -b`, so the
# work tree gets no obj-*/, debian/tarseek/ or ../*.deb.  What the build lacks is installed
# with apt-get: the packaging tools, then the Build-Depends of debian/control.  No tests run
# during the build (debian/rules); tools/test.sh installs the package and tries it.
#   JOBS=N   parallel build jobs (default: all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 1 ]; then
  echo "usage: tools/package.sh OUTDIR" >&2
  exit 2
fi
mkdir -p "$1"
out=$(realpath "$1")
jobs=${JOBS:-$(nproc)}

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  echo "installing: $*" >&2
  apt-get install -y -q --no-install-recommends "$@" ||
    { apt-get update -q && apt-get install -y -q --no-install-recommends "$@"; }
}

tools=(build-essential dpkg-dev debhelper lintian)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi

work=$(mktemp -d /tmp/tarseek-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
src=$work/tarseek
mkdir "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # the files of the tree as they are now, except those git ignores (a file deleted but not
  # yet committed is left out too)
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$src"
else
  tar --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$src"
fi

cd "$src"
if ! dpkg-checkbuilddeps >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  echo "installing the Build-Depends of debian/control" >&2
  apt-get build-dep -y -q --no-install-recommends "$src" ||
    { apt-get update -q && apt-get build-dep -y -q --no-install-recommends "$src"; }
fi
DEB_BUILD_OPTIONS="nocheck parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
  dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1 || {
    tail -n 60 "$work/build.log" >&2
    echo "tools/package.sh: dpkg-buildpackage failed (the end of its log is above)" >&2
    exit 1
  }
cd "$work"
shopt -s nullglob
built=(tarseek*.deb tarseek*.ddeb tarseek*.buildinfo tarseek*.changes)
mv -f "${built[@]}" "$out"/
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
deb=$out/tarseek_${version}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || { echo "tools/package.sh: no $deb was made" >&2; exit 1; }
echo "$deb"
