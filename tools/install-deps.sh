#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test tarseek (run as root).
# Skips apt-get entirely when everything is already installed.
set -euo pipefail
pkgs=(
  build-essential meson ninja-build pkg-config
  libfuse3-dev fuse3 libsqlite3-dev zlib1g-dev liblzma-dev libbz2-dev libzstd-dev libxxhash-dev liblzo2-dev libisal-dev liblz4-dev libarchive-dev libjson-c-dev libext2fs-dev comerr-dev
  libfsntfs-dev libbfio-dev libsquashfs-dev
  libssl-dev libcurl4-openssl-dev
  python3 python3-pytest
  groff-base man-db bash-completion
  tar gzip pigz bzip2 xz-utils pixz zstd lzop lz4 lzip plzip tarlz ncompress libarchive-tools 7zip attr e2fsprogs ntfs-3g sqlite3
  squashfs-tools fdisk dosfstools mtools
  cpio genisoimage xorriso zip unzip p7zip-full qemu-utils
  umoci skopeo
  nginx-light openssl ca-certificates
  clang libclang-rt-14-dev llvm
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# s3rver (npm), the S3 server of tests/mount/test_remote.py, into /opt/s3rver (skipped when
# there already, or when the machine has no npm: the test then says it is skipped)
S3RVER=/opt/s3rver/node_modules/.bin/s3rver
if [ ! -x "$S3RVER" ] && command -v npm >/dev/null; then
  mkdir -p /opt/s3rver
  (cd /opt/s3rver && npm install --no-audit --no-fund --loglevel=error s3rver@3.7.1 >&2) ||
    echo "install-deps: s3rver could not be installed: its test is skipped" >&2
fi
