"""Encrypted zip entries read with --password / --password-file (crypto/, containers/zip.c,
index/streams.c).

The archives are made here by the real tools: Info-ZIP's `zip -P` (ZipCrypto, its check byte
from the DOS time: it writes data descriptors; also `-0`, stored), 7-Zip's
`7zz a -tzip -mem=ZipCrypto` (check byte from the CRC), `-mem=AES128` and `-mem=AES256`
(WinZip AE-2: no CRC, the authentication code is the check), and AE-1 made from 7-Zip's AE-2
by writing the CRC-32 into both headers and version 1 into the AES extra fields (no tool
here writes AE-1).  With the right password every byte equals what `unzip -P` or `7zz x`
extracts; with a wrong one, or none, a read fails with EACCES and one log line names the
entry, however often it is read; never other bytes.  The password never shows in
/proc/PID/cmdline, /proc/mounts, the log, the index file or an xattr.
"""
import errno
import os
import stat
import struct
import subprocess
import zipfile
import zlib

import pytest

from conftest import random_bytes, read_errno, require_tool, run, text_data

PW = "Qx7-unlikely-pw"  # found nowhere else: grepped for in what must not hold it


def files():
    return {"text.txt": text_data(200_000, 1), "rand.bin": random_bytes(100_000, 2),
            "empty": b"", "sub/small.txt": b"hi\n", "sub/big.txt": text_data(3 << 20, 3)}


def write_tree(root):
    for name, data in files().items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def ae1(archive):
    """7-Zip's AE-2 entries turned into AE-1: the CRC-32 in the local and central headers,
    version 1 in both AES extra fields (0x9901), nothing else changed."""
    want = files()
    data = bytearray(archive.read_bytes())

    def set_version(extra_at, extra_len):
        p = extra_at
        while p + 4 <= extra_at + extra_len:
            tag, n = struct.unpack_from("<HH", data, p)
            if tag == 0x9901:
                struct.pack_into("<H", data, p + 4, 1)
                return True
            p += 4 + n
        return False

    at = data.find(b"PK\1\2")
    done = 0
    while at >= 0:
        n, x = struct.unpack_from("<HH", data, at + 28)
        name = bytes(data[at + 46:at + 46 + n]).decode()
        lho = struct.unpack_from("<I", data, at + 42)[0]
        if name in want and want[name] and set_version(at + 46 + n, x):
            crc = zlib.crc32(want[name])
            struct.pack_into("<I", data, at + 16, crc)
            struct.pack_into("<I", data, lho + 14, crc)
            ln, lx = struct.unpack_from("<HH", data, lho + 26)
            assert set_version(lho + 30 + ln, lx), name
            done += 1
        at = data.find(b"PK\1\2", at + 46)
    assert done == sum(1 for d in want.values() if d)
    archive.write_bytes(bytes(data))


# (name, how to make it: argv after the tool, or a function, how to extract it)
MAKERS = {
    "zip -P": (["zip", "-q", "-r", "-P", PW], "unzip"),
    "zip -0 -P": (["zip", "-q", "-r", "-0", "-P", PW], "unzip"),
    "7zz ZipCrypto": (["7zz", "a", "-bd", "-tzip", "-mem=ZipCrypto", "-p" + PW], "7zz"),
    "7zz AES128": (["7zz", "a", "-bd", "-tzip", "-mem=AES128", "-p" + PW], "7zz"),
    "7zz AES256": (["7zz", "a", "-bd", "-tzip", "-mem=AES256", "-p" + PW], "7zz"),
    "AE-1": (["7zz", "a", "-bd", "-tzip", "-mem=AES256", "-p" + PW], "7zz"),
}


def make(tmp_path, kind):
    argv, extractor = MAKERS[kind]
    require_tool(argv[0], extractor)
    src = tmp_path / "src"
    if not src.exists():
        write_tree(src)
    archive = tmp_path / (kind.replace(" ", "_") + ".zip")
    run(*argv, archive, ".", cwd=src)
    if kind == "AE-1":
        ae1(archive)
    return archive


def extract(tmp_path, archive, kind):
    """{name: bytes} of what the format's own tool extracts with the password."""
    out = tmp_path / ("x-" + archive.stem)
    out.mkdir()
    if MAKERS[kind][1] == "unzip":
        run("unzip", "-q", "-P", PW, archive, "-d", out)
    else:
        run("7zz", "x", "-bd", "-p" + PW, "-o" + str(out), archive)
    got = {}
    for root, _, names in os.walk(out):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                got[os.path.relpath(p, out)] = f.read()
    return got



def assert_no_password(m, archive, pw=PW):
    """pw in none of: the daemon's command line, /proc/mounts, its log, the index file's
    bytes, an xattr of the root or of a file."""
    b = pw.encode()
    with open(f"/proc/{m.proc.pid}/cmdline", "rb") as f:
        assert b not in f.read()
    with open("/proc/mounts", "rb") as f:
        assert b not in f.read()
    assert pw not in m.log()
    for p in (m.path, os.path.join(m.path, "text.txt")):
        for name in os.listxattr(p):
            assert b not in os.getxattr(p, name), name
    index = str(archive) + ".index.sqlite"
    with open(index, "rb") as f:
        assert b not in f.read()


@pytest.mark.parametrize("kind", list(MAKERS))
def test_right_password(mount, tmp_path, kind):
    archive = make(tmp_path, kind)
    want = extract(tmp_path, archive, kind)
    assert want == {n: d for n, d in files().items()}  # the tool agrees with the source
    with mount(archive, "--password", "not-this-one", "--password", PW, "--gzip-spacing",
               "0.25") as m:
        for name, data in want.items():
            p = os.path.join(m.path, name)
            assert os.stat(p).st_size == len(data), name
            with open(p, "rb") as f:
                assert f.read() == data, name
        # random reads into the largest entry (beyond whole mode's size at this spacing:
        # decoded whole all the same, the index keeps nothing of it)
        big = want["sub/big.txt"]
        fd = os.open(os.path.join(m.path, "sub/big.txt"), os.O_RDONLY)
        try:
            for off in (0, 1, 65_535, 1 << 20, len(big) - 7, len(big) - 100_000):
                assert os.pread(fd, 131_072, off) == big[off:off + 131_072], off
        finally:
            os.close(fd)
        assert_no_password(m, archive)
    import sqlite3
    db = sqlite3.connect(str(archive) + ".index.sqlite")
    try:  # encrypted streams: whole mode (2), flagged (2), no checkpoint
        rows = db.execute("SELECT crcs, flags FROM streams").fetchall()
        assert rows and all(c == 2 and f & 2 for c, f in rows), rows
        assert db.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
    finally:
        db.close()


@pytest.mark.parametrize("kind", ["zip -P", "7zz AES256"])
@pytest.mark.parametrize("given", [(), ("--password", "Wr0ng-pw-Zz")])
def test_wrong_or_no_password(mount, tmp_path, kind, given):
    archive = make(tmp_path, kind)
    with mount(archive, *given, allow_errors=True) as m:
        for _ in range(3):  # read again and again: one line all the same
            for name, data in files().items():
                e = read_errno(os.path.join(m.path, name))
                assert e == (None if not data else errno.EACCES), name
                assert os.stat(os.path.join(m.path, name)).st_size == len(data)
        log = m.log()
        for name, data in files().items():
            if data:
                lines = [line for line in log.splitlines() if f": {name}: encrypted" in line]
                assert len(lines) == 1, (name, log)
        assert ("no password was given" in log) == (not given), log
        assert "Wr0ng-pw-Zz" not in log
        assert "damaged" not in log, log


def test_password_file_and_mount_option(mount, tmp_path):
    archive = make(tmp_path, "7zz AES256")
    zc = make(tmp_path, "zip -P")
    pwfile = tmp_path / "passwords"
    pwfile.write_bytes(b"first-wrong\r\n\nsecond-wrong\n" + PW.encode() + b"\n")
    want = files()
    with mount(archive, zc, "--no-union", "--password-file", pwfile) as m:
        for a in (archive, zc):
            d = os.path.join(m.path, a.name)
            for name, data in want.items():
                with open(os.path.join(d, name), "rb") as f:
                    assert f.read() == data, (a.name, name)
    with mount(zc, "-o", f"ro,password=wrong,password={PW},password_file={pwfile}") as m:
        for name, data in want.items():
            with open(os.path.join(m.path, name), "rb") as f:
                assert f.read() == data, name
        assert_no_password(m, zc)


@pytest.mark.parametrize("kind", ["zip -0 -P", "7zz AES256", "AE-1"])
def test_damaged_entry_never_other_bytes(mount, tmp_path, kind):
    """A byte of an encrypted entry's data changed: its reads fail (ZipCrypto: its CRC-32;
    AES: the authentication code, under which no password opens it), the others read."""
    archive = make(tmp_path, kind)
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as z:
        i = z.getinfo("rand.bin")
    lho = i.header_offset
    n, x = struct.unpack_from("<HH", data, lho + 26)
    data[lho + 30 + n + x + 40_000] ^= 0x20
    archive.write_bytes(bytes(data))
    with mount(archive, "--password", PW, allow_errors=True) as m:
        assert read_errno(os.path.join(m.path, "rand.bin")) in (errno.EIO, errno.EACCES)
        with open(os.path.join(m.path, "text.txt"), "rb") as f:
            assert f.read() == files()["text.txt"]


def test_password_options_refused(tmp_path):
    from conftest import run_tarseek
    r = run_tarseek("--password", "", "x.zip", tmp_path)
    assert r.returncode != 0 and "empty password" in r.stderr, r
    r = run_tarseek("--password-file", tmp_path / "missing", "x.zip", tmp_path)
    assert r.returncode != 0 and "missing" in r.stderr, r
    r = run_tarseek("--password", "x" * 2000 + PW, "x.zip", tmp_path)
    assert r.returncode != 0 and PW not in r.stderr, r


def zipcrypto_check(password, header):
    """The last byte of a ZipCrypto entry's 12-byte header decrypted with password (APPNOTE
    6.1.5): what the check byte is compared with."""
    def crc(c, b):  # one step of the CRC-32 table update, as the cipher uses it
        return zlib.crc32(bytes([b]), c ^ 0xffffffff) ^ 0xffffffff
    k0, k1, k2 = 0x12345678, 0x23456789, 0x34567890

    def update(b):
        nonlocal k0, k1, k2
        k0 = crc(k0, b)
        k1 = ((k1 + (k0 & 0xff)) * 134775813 + 1) & 0xffffffff
        k2 = crc(k2, k1 >> 24)

    for b in password:
        update(b)
    for c in header:
        t = (k2 | 2) & 0xffff
        p = c ^ (((t * (t ^ 1)) >> 8) & 0xff)
        update(p)
    return p


def test_wrong_password_passing_the_check_byte(mount, tmp_path):
    """A stored ZipCrypto entry (nothing to inflate on trial) and a wrong password that its
    check byte lets through, given first: the entry's CRC-32 chooses the right one."""
    archive = make(tmp_path, "zip -0 -P")
    with zipfile.ZipFile(archive) as z:
        i = z.getinfo("rand.bin")
    data = archive.read_bytes()
    lho = i.header_offset
    n, x = struct.unpack_from("<HH", data, lho + 26)
    header = data[lho + 30 + n + x:lho + 30 + n + x + 12]
    check = (i._raw_time >> 8) if i.flag_bits & 8 else i.CRC >> 24
    assert zipcrypto_check(PW.encode(), header) == check  # the model is right
    wrong = next(w for w in (b"wrong-%d" % k for k in range(100_000))
                 if zipcrypto_check(w, header) == check)
    with mount(archive, "--password", wrong.decode(), "--password", PW) as m:
        with open(os.path.join(m.path, "rand.bin"), "rb") as f:
            assert f.read() == files()["rand.bin"]


# the targets: unique strings, so that the index's bytes can be searched for them
LINK_TARGETS = {"link1": "Tg1-only-here.txt", "sub/link2": "../Tg2/only/here"}


@pytest.mark.parametrize("kind", ["zip -y -P", "7zz -snl AES256"])
def test_encrypted_symlinks(mount, tmp_path, kind):
    """Symlinks stored encrypted (their target is their data): with no password, or a wrong
    one, they are listed as symlinks of their target's length and readlink fails with EACCES
    and a log line naming them -- never an empty or garbled target; with the password,
    readlink gives the target.  The index holds no target (nor any other plaintext), whether
    it was made with the password or without (the second mount reuses the first's index).

    The format's tools: Info-ZIP's unzip -P makes the links (zip -y); without the password
    it skips them ("unable to get password").  7zz x -p makes them (7-Zip's AES zip, which
    unzip 6.0 cannot read).  bsdtar (libarchive 3.6) writes a ZipCrypto link's ciphertext as
    its target, with --passphrase or without: the format's tool is followed."""
    require_tool("zip", "unzip", "7zz")
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "text.txt").write_bytes(text_data(5_000, 1))
    for name, target in LINK_TARGETS.items():
        os.symlink(target, src / name)
    archive = tmp_path / "links.zip"
    names = ["text.txt", *LINK_TARGETS]
    if kind == "zip -y -P":
        run("zip", "-q", "-y", "-P", PW, archive, *names, cwd=src)
        ref, skipped = tmp_path / "ref", tmp_path / "nopw"
        run("unzip", "-q", "-P", PW, archive, "-d", ref)
        r = run("unzip", archive, "-d", skipped, check=False, stdin=subprocess.DEVNULL)
        out = r.stdout.decode() + r.stderr.decode()
        assert all(f"skipping: {n}" in out for n in LINK_TARGETS), out
        assert not any(os.path.lexists(skipped / n) for n in LINK_TARGETS), out
    else:
        run("7zz", "a", "-bd", "-bso0", "-tzip", "-snl", "-mem=AES256", "-p" + PW, archive,
            *names, cwd=src)
        ref = tmp_path / "ref"
        run("7zz", "x", "-bd", "-bso0", "-snld", "-p" + PW, "-o" + str(ref), archive)
    for name, target in LINK_TARGETS.items():  # what the format's tool makes
        assert os.readlink(ref / name) == target, name
    index = str(archive) + ".index.sqlite"
    for given in ((), ("--password", "Wr0ng-pw-Zz")):
        with mount(archive, *given, allow_errors=True) as m:
            for name, target in LINK_TARGETS.items():
                p = os.path.join(m.path, name)
                st = os.lstat(p)
                assert stat.S_ISLNK(st.st_mode) and st.st_size == len(target), (name, st)
                for _ in range(2):
                    with pytest.raises(OSError) as e:
                        os.readlink(p)
                    assert e.value.errno == errno.EACCES, (name, e.value)
        log = m.log()
        for name in LINK_TARGETS:
            assert f": {name}: encrypted" in log, (name, log)
        assert "damaged" not in log, log
    with mount(archive, "--password", PW) as m:
        for name, target in LINK_TARGETS.items():
            assert os.readlink(os.path.join(m.path, name)) == target, name
        with open(os.path.join(m.path, "text.txt"), "rb") as f:
            assert f.read() == text_data(5_000, 1)
        assert_no_password(m, archive)
    with open(index, "rb") as f:
        held = f.read()
    for target in LINK_TARGETS.values():
        assert target.encode() not in held, target
