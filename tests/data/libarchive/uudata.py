"""Decoding the uuencoded libarchive test files of this folder (libarchive's own encoding:
lines may carry padding past their length byte, so Python's binascii is given each line cut
to its length).  Used by tests/mount/test_libarchive.py and tests/fuzz/make-seeds.sh:

    python3 tests/data/libarchive/uudata.py DEST_DIR [MAX_BYTES]   # every NAME.uu to DEST/NAME
                                                                   # (but the HOSTILE ones)
"""
import binascii
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# archives on which libarchive 3.6 loops for ever (tests/mount/test_libarchive.py shows they
# are refused): never fuzz seeds, as the fuzzers run libarchive unguarded
HOSTILE = {"test_read_format_xar_doublelink.xar.uu",
           "test_read_format_iso_rockridge_ce_loop.iso.Z.uu",
           # not hostile, but a 10 GiB sparse member: libarchive's data read of it would
           # make every execution of fuzz_libarchive write 10 GiB of zeros
           "test_read_format_gtar_sparse_skip_entry.tar.Z.uu"}


def decode(path):
    """The bytes of the uuencoded file at path."""
    out = bytearray()
    begun = False
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b"begin "):  # what comes before it is a description
                begun = True
                continue
            if not begun or not line.strip():
                continue
            if line.strip() == b"end":
                break
            n = (line[0] - 32) & 63
            out += binascii.a2b_uu(line[:((n + 2) // 3) * 4 + 1].rstrip(b"\n") + b"\n")
    return bytes(out)


if __name__ == "__main__":
    dest, most = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".uu") and name not in HOSTILE:
            data = decode(os.path.join(HERE, name))
            if most is None or len(data) < most:
                with open(os.path.join(dest, name[:-3]), "wb") as f:
                    f.write(data)
