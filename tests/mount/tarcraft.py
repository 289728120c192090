"""Raw tar blocks written byte by byte, for archives no tar program writes on purpose.

The conformance tests need archives as old or odd tar implementations made them (a size in a
hard-link header, a PAX record with trailing garbage, a numeric field that overflows, a
sparse map that does not add up, ...).  GNU tar and bsdtar never write those, so this module
builds them: every field can be given as a value or as raw bytes, and the checksum is
computed last (or given, to make it wrong).

    blocks = [header(b"dir/", type=b"5", size=1234),
              header(b"dir/f", data=b"hello"),
              *pax([(b"mtime", b"1.5a")]), header(b"g", data=b"x"),
              end()]
    write(path, blocks)
"""
import struct

BLOCK = 512


def octal(value, width):
    """value as octal digits padded with zeros to width - 1, then a NUL (GNU tar's form)."""
    return b"%0*o\0" % (width - 1, value)


def base256(value, width):
    """value in GNU tar's base-256 form (first byte 0x80 or 0xff, two's complement)."""
    if value < 0:
        value += 1 << (8 * width)
        raw = value.to_bytes(width, "big")
        return bytes([raw[0] | 0x80]) + raw[1:]
    return bytes([0x80]) + value.to_bytes(width - 1, "big")


def pad(data):
    return data + bytes(-len(data) % BLOCK)


def _field(value, width, numeric=True):
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
    elif numeric:
        raw = octal(value, width)
    else:
        raw = str(value).encode()
    assert len(raw) <= width, (value, width)
    return raw + bytes(width - len(raw))


def checksum(block):
    """The unsigned header checksum of a 512-byte block (its chksum field read as spaces)."""
    return sum(block[:148]) + 8 * 32 + sum(block[156:512])


def header(name, *, type=b"0", size=None, data=None, mode=0o644, uid=0, gid=0,
           mtime=1_600_000_000, link=b"", magic="gnu", uname=b"root", gname=b"root",
           devmajor=0, devminor=0, prefix=b"", chksum=None, fields=None):
    """One header block, followed by its data blocks when data is given.

    Numbers are written in octal (use raw bytes, e.g. base256(), for anything else); size
    defaults to len(data) or 0.  magic: "gnu" ("ustar  \\0"), "ustar" ("ustar\\0" "00") or
    "v7" (no magic, no owner names).  fields: {offset: raw bytes} written over the block
    before the checksum.  chksum: raw bytes for the checksum field (otherwise the right
    checksum).  Returns bytes (a multiple of 512)."""
    if size is None:
        size = len(data) if data is not None else 0
    h = bytearray(BLOCK)

    def put(off, raw):
        h[off:off + len(raw)] = raw

    put(0, _field(name, 100, False))
    put(100, _field(mode, 8))
    put(108, _field(uid, 8))
    put(116, _field(gid, 8))
    put(124, _field(size, 12))
    put(136, _field(mtime, 12))
    put(156, type)
    put(157, _field(link, 100, False))
    if magic == "gnu":
        put(257, b"ustar  \0")
    elif magic == "ustar":
        put(257, b"ustar\x0000")
        put(345, _field(prefix, 155, False))
    if magic != "v7":
        put(265, _field(uname, 32, False))
        put(297, _field(gname, 32, False))
        put(329, _field(devmajor, 8))
        put(337, _field(devminor, 8))
    for off, raw in (fields or {}).items():
        put(off, raw)
    if chksum is None:
        put(148, b"%06o\0 " % checksum(h))
    else:
        put(148, _field(chksum, 8))
    return bytes(h) + (pad(data) if data is not None else b"")


def pax_records(records):
    """The payload of a PAX header: "LEN KEY=VALUE\\n" for each (key, value) in order."""
    out = b""
    for key, value in records:
        body = b" " + key + b"=" + value + b"\n"
        n = len(body) + 1
        while len(b"%d" % n) + len(body) != n:
            n += 1
        out += b"%d" % n + body
    return out


def pax(records=(), *, raw=None, type=b"x", name=b"././@PaxHeader"):
    """A PAX extended header ('x', or 'g' for a global one) and its payload blocks.
    raw: the payload as given (for malformed records)."""
    payload = raw if raw is not None else pax_records(records)
    return header(name, type=type, data=payload, magic="ustar")


def gnu_longname(name, type=b"L"):
    """A GNU long-name ('L') or long-link ('K') header and its payload."""
    return header(b"././@LongLink", type=type, data=name + b"\0")


def end():
    """The end-of-archive marker: two zero blocks."""
    return bytes(2 * BLOCK)


def write(path, blocks):
    with open(path, "wb") as f:
        for b in blocks:
            f.write(b)
    return path
