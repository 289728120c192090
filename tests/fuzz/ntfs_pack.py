"""Packs an NTFS image of at most 2 MiB for fuzz_ntfs (make-seeds.sh): a 512-byte bitmap, one
bit per 512-byte block of the image (bit i of byte i // 8, least significant first), then the
blocks whose bit is set, in order.  Blocks of zeros are left out, and so are $LogFile and
$UpCase (which the listing does not need), so that a seed stays under the harness's max_len.

    python3 ntfs_pack.py IMAGE OUT
"""
import re
import subprocess
import sys

BLOCK = 512
BLOCKS = 4096


def runs(img, path):
    """(first byte, length) of each run of a metadata file, from ntfsinfo."""
    out = subprocess.run(["ntfsinfo", "-v", "-F", path, img], capture_output=True,
                         text=True).stdout
    csize = 512
    m = re.search(r"Cluster Size:\s*(\d+)", subprocess.run(
        ["ntfsinfo", "-m", img], capture_output=True, text=True).stdout)
    if m:
        csize = int(m.group(1))
    for vcn, lcn, n in re.findall(r"^\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s*$",
                                  out, re.M):
        yield int(lcn, 16) * csize, int(n, 16) * csize


def main(img, out):
    data = bytearray(open(img, "rb").read()[:BLOCK * BLOCKS])
    for meta in ("/$LogFile", "/$UpCase"):
        for off, n in runs(img, meta):
            data[off:off + n] = bytes(len(data[off:off + n]))
    bitmap = bytearray(BLOCKS // 8)
    blocks = []
    for i in range(0, len(data) // BLOCK):
        b = data[i * BLOCK:(i + 1) * BLOCK]
        if any(b):
            bitmap[i // 8] |= 1 << (i % 8)
            blocks.append(bytes(b))
    open(out, "wb").write(bytes(bitmap) + b"".join(blocks))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
