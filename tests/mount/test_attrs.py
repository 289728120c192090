"""Issue 38: when 7-Zip, unzip or bsdtar extracts an entry, tarseek shows it with the same
type, metadata and bytes -- the corners where the archive says it in a way tarseek missed.

- 7z: FILE_ATTRIBUTE_READONLY without the unix extension (an archive made on Windows): files
  0444 and folders 0555, as bsdtar extracts them (7zz x: the file 0444; the folder 0755, as
  Windows ignores the bit on folders); with the unix extension, its mode wins over the bit.
  7zz on Linux always writes the extension, so the test makes the archive with 7zz (header
  not compressed, -mhc=off) and rewrites the attributes in place, fixing both CRCs.
"""
import os
import shutil
import stat
import struct
import zlib

import pytest

from conftest import run

HAVE_7ZZ = shutil.which("7zz") is not None
ENV7 = dict(os.environ, LC_ALL="C.UTF-8", TZ="UTC")


# ---- 7z: Windows attributes -------------------------------------------------------------------

def sz_rewrite_attributes(data, change):
    """data, a 7z with a plain header (-mhc=off), with each file's attributes a replaced by
    change(i, a); the next header's CRC and the signature header's CRC fixed."""
    d = bytearray(data)
    off, size, _ = struct.unpack_from("<QQI", d, 12)
    h = 32 + off
    hdr = d[h:h + size]
    assert hdr[0] == 0x01, "not a plain header (7zz -mhc=off)"
    # kWinAttributes (0x15): its size (one byte for these few files), allDefined 1, external 0,
    # then a UINT32 per file; find the property whose shape fits
    i = -1
    while True:
        i = hdr.index(b"\x15", i + 1)
        n = hdr[i + 1]
        if n > 2 and (n - 2) % 4 == 0 and hdr[i + 2] == 1 and hdr[i + 3] == 0 \
                and i + 2 + n < len(hdr):
            break
    for k in range((n - 2) // 4):
        p = i + 4 + 4 * k
        a, = struct.unpack_from("<I", hdr, p)
        struct.pack_into("<I", hdr, p, change(k, a))
    d[h:h + size] = hdr
    struct.pack_into("<I", d, 28, zlib.crc32(hdr))
    struct.pack_into("<I", d, 8, zlib.crc32(bytes(d[12:32])))
    return bytes(d)


def sz_attributes(archive):
    """{path: Attributes} from `7zz l -slt`."""
    out = run("7zz", "l", "-slt", str(archive), env=ENV7).stdout.decode()
    got, path = {}, None
    for line in out.splitlines():
        if line.startswith("Path = "):
            path = line[7:]
        elif line.startswith("Attributes = ") and path is not None:
            got[path] = line[13:]
    return got


@pytest.mark.skipif(not HAVE_7ZZ, reason="7zz (Debian package 7zip) is needed")
def test_7z_readonly_attribute(mount, tmp_path):
    src = tmp_path / "src"
    (src / "ro dir").mkdir(parents=True)
    (src / "rw dir").mkdir()
    (src / "ro.txt").write_bytes(b"read only\n")
    (src / "rw.txt").write_bytes(b"writable\n")
    (src / "ro dir" / "in.txt").write_bytes(b"inside\n")
    (src / "empty ro").write_bytes(b"")
    for p in ("ro.txt", "empty ro"):
        os.chmod(src / p, 0o444)
    os.chmod(src / "ro dir", 0o555)
    made = tmp_path / "made.7z"
    try:
        run("7zz", "a", "-bd", "-bso0", "-bsp0", "-mhc=off", str(made), ".", cwd=src, env=ENV7)
    finally:
        os.chmod(src / "ro dir", 0o755)
    # 7zz sets R itself where the owner cannot write, beside the unix extension
    attrs = sz_attributes(made)
    assert attrs["ro.txt"].startswith("RA ") and attrs["ro dir"].startswith("RD "), attrs

    windows = tmp_path / "windows.7z"  # the extension dropped: the Windows bits alone
    windows.write_bytes(sz_rewrite_attributes(made.read_bytes(), lambda i, a: a & 0x7FFF))
    attrs = sz_attributes(windows)
    assert attrs["ro.txt"] == "RA" and attrs["ro dir"] == "RD" and attrs["rw.txt"] == "A", attrs
    run("7zz", "t", "-bd", "-bso0", str(windows), env=ENV7)  # the CRCs are right

    # the reference: bsdtar's extraction, where it has one
    ref = tmp_path / "ref"
    ref.mkdir()
    if shutil.which("bsdtar"):
        run("bsdtar", "-xf", str(windows), "-C", str(ref))
    want = {"ro.txt": 0o444, "empty ro": 0o444, "ro dir": 0o555, "rw.txt": 0o644,
            "rw dir": 0o755, "ro dir/in.txt": 0o644}
    with mount(windows) as m:
        for p, mode in want.items():
            st = os.lstat(os.path.join(m.path, p))
            assert stat.S_IMODE(st.st_mode) == mode, (p, oct(st.st_mode))
            if p.endswith("dir"):
                assert stat.S_ISDIR(st.st_mode), p
            else:
                assert stat.S_ISREG(st.st_mode), p
            if shutil.which("bsdtar") and mode in (0o444, 0o555):
                r = os.lstat(ref / p)
                assert stat.S_IMODE(r.st_mode) == mode, (p, "bsdtar", oct(r.st_mode))
        assert open(os.path.join(m.path, "ro.txt"), "rb").read() == b"read only\n"
    os.chmod(ref / "ro dir", 0o755)

    # the extension wins: R set on every entry, and each keeps the mode its extension holds
    # (the same modes as above: the source's)
    both = tmp_path / "both.7z"
    both.write_bytes(sz_rewrite_attributes(made.read_bytes(), lambda i, a: a | 0x1))
    assert all(a.startswith("R") for a in sz_attributes(both).values())
    with mount(both) as m:
        for p, mode in want.items():
            st = os.lstat(os.path.join(m.path, p))
            assert stat.S_IMODE(st.st_mode) == mode, (p, oct(st.st_mode))


# ---- zip: an extended timestamp in the local header only ------------------------------------

def zip_drop_central_times(data):
    """data, a zip of one disk without zip64 or comment, with the extended timestamps (0x5455)
    taken out of its central directory's extra fields (the local headers keep theirs): as
    macOS's archivers write them."""
    end = data.rindex(b"PK\x05\x06")
    n, cd_size, cd_off = struct.unpack_from("<HII", data, end + 10)
    out, p = bytearray(), cd_off
    for _ in range(n):
        assert data[p:p + 4] == b"PK\x01\x02"
        nl, xl, cl = struct.unpack_from("<HHH", data, p + 28)
        x, kept = data[p + 46 + nl:p + 46 + nl + xl], b""
        while len(x) >= 4:
            tag, ln = struct.unpack_from("<HH", x)
            if tag != 0x5455:
                kept += x[:4 + ln]
            x = x[4 + ln:]
        rec = bytearray(data[p:p + 46 + nl]) + kept + data[p + 46 + nl + xl:p + 46 + nl + xl + cl]
        struct.pack_into("<H", rec, 30, len(kept))
        out += rec
        p += 46 + nl + xl + cl
    assert p == cd_off + cd_size
    e = bytearray(data[end:])
    struct.pack_into("<I", e, 12, len(out))
    return data[:cd_off] + bytes(out) + bytes(e)


@pytest.mark.skipif(shutil.which("zip") is None, reason="zip (Info-ZIP) is needed")
def test_zip_local_only_timestamp(mount, tmp_path):
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "a.txt").write_bytes(b"a\n")
    (src / "b.txt").write_bytes(b"bb\n")
    # odd seconds (a DOS time has two-second steps), and zip run in New York: the DOS time
    # (local time there) is hours away from the timestamp
    times = {"d/a.txt": 1_234_567_891, "b.txt": 1_500_000_001, "d": 1_400_000_001}
    for p, t in times.items():
        os.utime(src / p, (t, t))
    made = tmp_path / "made.zip"
    run("zip", "-q", "-r", str(made), "d", "b.txt", cwd=src,
        env=dict(os.environ, TZ="America/New_York"))
    local = tmp_path / "local.zip"
    local.write_bytes(zip_drop_central_times(made.read_bytes()))
    data = local.read_bytes()
    end = data.rindex(b"PK\x05\x06")
    assert b"UT" not in data[struct.unpack_from("<I", data, end + 16)[0]:end]
    assert data.count(b"UT") >= len(times)  # the local headers'

    # the references: what unzip and bsdtar extract (unzip -t checks the archive too)
    refs = []
    for tool, argv in (("unzip", ["unzip", "-q", "-o", str(local), "-d"]),
                       ("bsdtar", ["bsdtar", "-xf", str(local), "-C"])):
        if shutil.which(tool):
            ref = tmp_path / tool
            ref.mkdir()
            run(*argv, str(ref), env=dict(os.environ, TZ="UTC"))
            refs.append(ref)
    with mount(local) as m:
        for p, t in times.items():
            assert os.lstat(os.path.join(m.path, p)).st_mtime == t, p
            for ref in refs:
                assert os.lstat(ref / p).st_mtime == t, (p, ref.name)
        assert open(os.path.join(m.path, "d", "a.txt"), "rb").read() == b"a\n"
