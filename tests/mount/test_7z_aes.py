"""Mount tests of 7z archives encrypted with AES-256 (7zz a -p), read with --password.

Archives are made at test time by 7zz and compared, byte for byte, with what `7zz x -psecret`
extracts:
- the right password: LZMA2 (7-Zip's default), LZMA (-m0=LZMA), a solid folder of several
  files with an empty one, Copy, and an encrypted header (-mhe=on); a folder larger than whole
  mode allows (decoded while indexing, --gzip-spacing 64K); the right password after a wrong
  one (tried in order), and from --password-file;
- a wrong password (or none): listed with their sizes, every read fails with EACCES and one
  log line naming the file -- never other bytes; the password appears in no log line, no
  index row and no xattr;
- an encrypted header with a wrong password, or none: the mount is refused with a message
  saying to give the password with --password;
- an index made without the password of a large folder is made again when the password is
  given; the index made with it, mounted with a wrong one: EACCES, one log line.
"""
import errno
import os
import shutil
import sqlite3
import stat
import subprocess

import pytest

from conftest import read_errno, run
from test_7z import ENV7, index_of, make_7z
from test_damage import Daemon, check_refusal, text_data

pytestmark = pytest.mark.skipif(shutil.which("7zz") is None,
                                reason="7zz (Debian package 7zip) is needed")

PW = "s3cr3t-PW"
WRONG = "Wr0ng-PW"


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    """A folder of files: texts, random bytes, an empty file, a file in a subfolder."""
    base = tmp_path_factory.mktemp("7z-aes")
    s = base / "src"
    (s / "sub").mkdir(parents=True)
    (s / "a.txt").write_bytes(text_data(120_000, 1))
    (s / "sub" / "rand.bin").write_bytes(os.urandom(300_000))
    (s / "sub" / "b.txt").write_bytes(text_data(5_000, 2))
    (s / "empty").write_bytes(b"")
    return s


def extract(archive, dest):
    """What 7-Zip itself extracts with the password."""
    run("7zz", "x", "-bd", "-bso0", "-bsp0", "-y", f"-p{PW}", f"-o{dest}", str(archive),
        env=ENV7)
    return dest


def files_of(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = p
    return out


def same_bytes(mounted, ref):
    want = files_of(ref)
    got = files_of(mounted)
    assert sorted(got) == sorted(want)
    for rel, p in want.items():
        with open(p, "rb") as f, open(got[rel], "rb") as g:
            assert g.read() == f.read(), rel


def no_secret(m, archive):
    """The password is in no log line, no row of the index, no xattr."""
    assert PW not in m.log()
    with open(index_of(archive), "rb") as f:
        assert PW.encode() not in f.read()
    for rel, p in files_of(m.path).items():  # a symlink's own (its target may be absent)
        for x in os.listxattr(p, follow_symlinks=False):
            assert PW.encode() not in os.getxattr(p, x, follow_symlinks=False), (rel, x)
    for x in os.listxattr(m.path):
        assert PW.encode() not in os.getxattr(m.path, x), x


CASES = {
    "lzma2": (),
    "lzma": ("-m0=LZMA",),
    "solid": ("-ms=on", "-mx=1"),
    "copy": ("-m0=Copy",),
    "hdr": ("-mhe=on",),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_right_password(mount, tmp_path, src, name):
    archive = make_7z(src, tmp_path / f"{name}.7z", f"-p{PW}", *CASES[name])
    ref = extract(archive, tmp_path / "ref")
    with mount(archive, "--password", PW) as m:
        same_bytes(m.path, ref)
        no_secret(m, archive)
    # a second mount reads through the index made by the first
    with mount(archive, "--password", WRONG, "--password", PW) as m:
        same_bytes(m.path, ref)


@pytest.mark.parametrize("name", ["lzma2", "lzma", "solid", "copy"])
def test_wrong_password(mount, tmp_path, src, name):
    archive = make_7z(src, tmp_path / f"{name}.7z", f"-p{PW}", *CASES[name])
    for opts in (("--password", WRONG), ()):
        with mount(archive, *opts, allow_errors=True) as m:
            a = os.path.join(m.path, "a.txt")
            assert os.stat(a).st_size == 120_000
            assert os.stat(os.path.join(m.path, "empty")).st_size == 0
            assert open(os.path.join(m.path, "empty"), "rb").read() == b""
            assert read_errno(a) == errno.EACCES
            rand = os.path.join(m.path, "sub", "rand.bin")
            assert read_errno(rand) == errno.EACCES
        lines = [l for l in m.log().splitlines() if "a.txt" in l]
        assert len(lines) == 1 and "encrypted" in lines[0], m.log()
        assert WRONG not in m.log() and PW not in m.log()


def test_password_order_and_file(mount, tmp_path, src):
    archive = make_7z(src, tmp_path / "f.7z", f"-p{PW}")
    ref = extract(archive, tmp_path / "ref")
    pwfile = tmp_path / "pw"
    pwfile.write_text(f"nope\n{PW}\n")
    with mount(archive, "--password-file", pwfile) as m:
        same_bytes(m.path, ref)


def test_encrypted_header_wrong_password(tmp_path, src):
    archive = make_7z(src, tmp_path / "hdr.7z", f"-p{PW}", "-mhe=on")
    for opts in (("--password", WRONG), ()):
        d = Daemon(archive, tmp_path / "mnt", tmp_path / "log", *opts)
        if d.mounted:
            d.stop()
            raise AssertionError("mounted an encrypted header without its password:\n"
                                 + d.log())
        check_refusal(d.proc.returncode, d.log(), archive)
        assert "the archive's header is encrypted: give its password with --password" \
            in d.log(), d.log()
        assert WRONG not in d.log()


def test_large_folder_indexed_without_password(mount, tmp_path):
    """A folder beyond whole mode is decoded while indexing: without the password its files
    are marked EACCES; a later mount with it makes the index again and reads them."""
    s = tmp_path / "src"
    s.mkdir()
    (s / "big.txt").write_bytes(text_data(3_000_000, 7))
    archive = make_7z(s, tmp_path / "big.7z", f"-p{PW}")
    ref = extract(archive, tmp_path / "ref")
    with mount(archive, "--gzip-spacing", "64K", allow_errors=True) as m:
        assert read_errno(os.path.join(m.path, "big.txt")) == errno.EACCES
    assert "encrypted" in m.log()
    with mount(archive, "--gzip-spacing", "64K", "--password", PW) as m:
        same_bytes(m.path, ref)
        no_secret(m, archive)
    db = sqlite3.connect(index_of(archive))
    try:
        assert db.execute("SELECT count(*) FROM entries WHERE unreadable IS NOT NULL"
                          ).fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM checkpoints").fetchone()[0] >= 1
    finally:
        db.close()
    # the index made with the password, read with a wrong one: a decoder refuses, one line
    with mount(archive, "--gzip-spacing", "64K", "--password", WRONG, allow_errors=True) as m:
        big = os.path.join(m.path, "big.txt")
        assert read_errno(big) == errno.EACCES
        with open(big, "rb") as f:  # at another offset too
            f.seek(2_000_000)
            with pytest.raises(OSError) as e:
                f.read(4096)
            assert e.value.errno == errno.EACCES
    lines = [l for l in m.log().splitlines() if "big.txt" in l]
    assert len(lines) == 1 and "encrypted" in lines[0], m.log()
    assert WRONG not in m.log()


def test_no_plaintext_on_disk(mount, tmp_path):
    """An encrypted folder's decoded bytes are written nowhere: no shadow beside the index
    (--shadow always), nothing in the cache's disk tier (a RAM cache far smaller than the
    folder, so that its segments are evicted), the stream flagged secret in the index."""
    s = tmp_path / "src"
    s.mkdir()
    data = os.urandom(24 << 20)
    (s / "big.bin").write_bytes(data)
    archive = make_7z(s, tmp_path / "big.7z", f"-p{PW}", "-mx1", "-m0=LZMA2:c=1m", "-mmt2")
    dc = tmp_path / "dc"
    dc.mkdir()
    with mount(archive, "--password", PW, "--shadow", "always", "--cache-size", "4M",
               "--disk-cache-size", "64M", "--disk-cache-dir", dc, "--no-prefetch") as m:
        with open(os.path.join(m.path, "big.bin"), "rb") as f:
            assert f.read() == data
        # the disk tier's file is unlinked: read it through the daemon's descriptors
        pid = m.proc.pid
        tier = b""
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith(str(dc)):
                with open(f"/proc/{pid}/fd/{fd}", "rb") as t:
                    tier += t.read()
        for off in range(0, len(data), 1 << 20):
            assert data[off:off + 64] not in tier, off
    index = index_of(archive)
    assert not os.path.exists(index[: -len(".sqlite")] + ".shadow.zst")
    db = sqlite3.connect(index)
    try:
        flags = [r[0] for r in db.execute("SELECT flags FROM streams")]
    finally:
        db.close()
    assert flags and all(f & 4 for f in flags), flags  # IDX_S_SECRET


# the targets: unique strings, so that the index's bytes can be searched for them
LINK_TARGETS = {"link1": "Tg1-only-here.txt", "sub/link2": "../Tg2/only/here"}


@pytest.mark.parametrize("size", ["whole", "large"])
def test_encrypted_symlinks(mount, tmp_path, size):
    """Symlinks stored with -snl in an AES folder (their target is their data), after a file
    in the same solid folder: whole (decoded at its first read) or large (decoded while
    indexing: --gzip-spacing 64K).  Without the password they are listed as symlinks of their
    target's length and readlink fails with EACCES and a log line naming them -- never an
    empty target; with it (a second mount: the index made again for the large folder, reused
    for the small one) readlink gives the target.  The index holds no target, even when made
    with the password (an encrypted folder's plaintext is written nowhere).  7-Zip: 7zz x -p
    makes the links; without a password (none to be read from its input) it makes none."""
    s = tmp_path / "src"
    (s / "sub").mkdir(parents=True)
    (s / "a.txt").write_bytes(text_data(3_000_000 if size == "large" else 20_000, 1))
    for name, target in LINK_TARGETS.items():
        os.symlink(target, s / name)
    archive = make_7z(s, tmp_path / "l.7z", "-snl", "-mx1", f"-p{PW}",
                      files=["a.txt", *LINK_TARGETS])
    ref = tmp_path / "ref"
    run("7zz", "x", "-bd", "-bso0", "-bsp0", "-snld", "-y", f"-p{PW}", f"-o{ref}", archive,
        env=ENV7)
    for name, target in LINK_TARGETS.items():
        assert os.readlink(ref / name) == target, name
    r = run("7zz", "x", "-bd", "-snld", "-y", f"-o{tmp_path / 'nopw'}", archive, check=False,
            env=ENV7, stdin=subprocess.DEVNULL)
    assert r.returncode != 0 and not any(os.path.lexists(tmp_path / "nopw" / n)
                                         for n in LINK_TARGETS), r
    spacing = ("--gzip-spacing", "64K") if size == "large" else ()
    with mount(archive, *spacing, allow_errors=True) as m:
        for name, target in LINK_TARGETS.items():
            p = os.path.join(m.path, name)
            st = os.lstat(p)
            assert stat.S_ISLNK(st.st_mode) and st.st_size == len(target), (name, st)
            with pytest.raises(OSError) as e:
                os.readlink(p)
            assert e.value.errno == errno.EACCES, (name, e.value)
    for name in LINK_TARGETS:
        assert f": {os.path.basename(name)}: encrypted" in m.log(), (name, m.log())
    with mount(archive, *spacing, "--password", PW) as m:
        for name, target in LINK_TARGETS.items():
            assert os.readlink(os.path.join(m.path, name)) == target, name
        with open(os.path.join(m.path, "a.txt"), "rb") as f:
            assert f.read() == (s / "a.txt").read_bytes()
        no_secret(m, archive)
    with open(index_of(archive), "rb") as f:
        held = f.read()
    for target in LINK_TARGETS.values():
        assert target.encode() not in held, target
