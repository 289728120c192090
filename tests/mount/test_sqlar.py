"""SQLite archives (containers/sqlar.c, codecs/sqlar/), made by `sqlite3 -Ac` at test time and
compared with what `sqlite3 -Ax` extracts (every byte, mode, mtime, link target):

- compressed members (text: sqlite3 keeps zlib's bytes when they are shorter) and stored ones
  (random bytes), files larger than a MiB (a stored blob read in pieces of a MiB), empty files,
  folders (empty ones too), symbolic links, modes;
- archives inside a tar, found with -r (.sqlar);
- damage: a flipped byte in a compressed blob (EIO on that file's reads, the others intact), a
  truncated database (a clear refusal, or EIO; never other bytes), rows whose size or data
  lie, a table that is not sqlar's.
The archive keeps no owner: the members show the archive file's.
"""
import errno
import os
import sqlite3
import stat
import subprocess
import tarfile
import zlib

import pytest

from conftest import (compare_trees, random_bytes, read_errno, require_tool, run, run_tarseek,
                      text_data)


def source_tree(root):
    root.mkdir()
    (root / "d" / "sub").mkdir(parents=True)
    (root / "empty_dir").mkdir()
    (root / "seq.txt").write_bytes(b"".join(b"%d\n" % i for i in range(40_000)))
    (root / "d" / "rand.bin").write_bytes(random_bytes(3_000_001, seed=1))  # stored, 3 pieces
    (root / "d" / "text.txt").write_bytes(text_data(2_500_000, seed=2))  # compressed
    (root / "d" / "sub" / "small").write_bytes(b"small\n")
    (root / "d" / "sub" / "tiny").write_bytes(b"t")
    (root / "empty").write_bytes(b"")
    (root / "zeros").write_bytes(bytes(100_000))
    os.symlink("d/rand.bin", root / "link")
    os.symlink("nowhere/at/all", root / "dangling")
    os.chmod(root / "d" / "sub" / "small", 0o755)
    os.chmod(root / "d" / "sub" / "tiny", 0o600)
    os.chmod(root / "empty_dir", 0o700)
    for i, p in enumerate(sorted(root.rglob("*"))):
        os.utime(p, (1_600_000_000 + i, 1_600_000_000 + 1000 * i), follow_symlinks=False)
    return root


def make_sqlar(src, archive, names):
    run("sqlite3", str(archive), "-Ac", *names, cwd=src)


def extract(archive, dest):
    """What `sqlite3 -Ax` extracts, completed from the table where sqlite3 3.40 falls short:
    it cannot extract the links it archives ("error in uncompress()": it hands their sz of -1
    to its uncompress), and the folders keep the time of their extraction.  So the links are
    made from their rows (target = data, as sqlite3 -A stores it) and every folder's and
    link's mtime set from its row."""
    dest.mkdir()  # (sqlite3 3.40 extracts nothing, silently, with -C and an absolute path)
    with sqlite3.connect(archive) as db:
        rows = db.execute("SELECT name, mode, mtime, data FROM sqlar").fetchall()
        files = [n for n, mode, _, _ in rows if not stat.S_ISLNK(mode)]
    run("sqlite3", os.path.abspath(archive), "-Ax", *files, cwd=dest)
    assert os.listdir(dest), "sqlite3 -Ax extracted nothing"
    for name, mode, mtime, data in sorted(rows, reverse=True):  # children first
        p = dest / name
        if stat.S_ISLNK(mode):
            os.symlink(data, p)
        if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
            os.utime(p, (mtime, mtime), follow_symlinks=False)
    return dest


@pytest.fixture(scope="module")
def src_dir(tmp_path_factory):
    require_tool("sqlite3")
    return source_tree(tmp_path_factory.mktemp("sqlar-src") / "src")


NAMES = ["seq.txt", "d", "empty", "empty_dir", "zeros", "link", "dangling"]


def test_sqlar(mount, tmp_path, src_dir):
    archive = tmp_path / "x.sqlar"
    make_sqlar(src_dir, archive, NAMES)
    ref = extract(archive, tmp_path / "ref")
    with sqlite3.connect(archive) as db:
        rows = dict(db.execute("SELECT name, sz = length(data) FROM sqlar"))
    assert rows["d/rand.bin"] == 1 and rows["d/text.txt"] == 0  # stored, compressed
    with mount(archive) as m:
        # sqlite3 -Ax makes the links' targets and the files' modes and mtimes; folders'
        # mtimes as well
        compare_trees(m.path, ref, check_root=False, owners=False)
        assert os.readlink(os.path.join(m.path, "link")) == "d/rand.bin"
        st = os.stat(archive)
        assert {(os.lstat(os.path.join(m.path, n)).st_uid,
                 os.lstat(os.path.join(m.path, n)).st_gid) for n in NAMES} == \
            {(st.st_uid, st.st_gid)}


def test_acceptance(tmp_path, src_dir):
    """As the lead's script does it: `tarseek x.sqlar m`, without -f."""
    archive = tmp_path / "x.sqlar"
    make_sqlar(src_dir, archive, ["seq.txt", "d"])
    m = tmp_path / "m"
    m.mkdir()
    r = run_tarseek(archive, m)
    assert r.returncode == 0, r.stderr
    try:
        with open(m / "d" / "rand.bin", "rb") as f:
            assert f.read() == (src_dir / "d" / "rand.bin").read_bytes()
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(m)])


def test_in_tar(mount, tmp_path, src_dir):
    archive = tmp_path / "x.sqlar"
    make_sqlar(src_dir, archive, NAMES)
    ref = extract(archive, tmp_path / "ref")
    outer = tmp_path / "outer.tar"
    with tarfile.open(outer, "w") as t:
        t.add(archive, arcname="in/x.sqlar")
    with mount(outer, "-r") as m:
        compare_trees(os.path.join(m.path, "in", "x.sqlar"), ref, check_root=False,
                      owners=False)


def test_flipped_byte(mount, tmp_path, src_dir):
    """A byte flipped in the middle of a compressed blob: that file's reads fail with EIO (zlib's
    checks), the other files read whole."""
    archive = tmp_path / "x.sqlar"
    make_sqlar(src_dir, archive, ["seq.txt", "d"])
    ref = extract(archive, tmp_path / "ref")
    with sqlite3.connect(archive) as db:
        (blob,) = db.execute("SELECT data FROM sqlar WHERE name = 'seq.txt'").fetchone()
    data = bytearray(archive.read_bytes())
    # the blob's first page-sized run lies in one piece in the file
    at = data.find(blob[:200])
    assert at > 0
    data[at + 100] ^= 0x55
    bad = tmp_path / "bad.sqlar"
    bad.write_bytes(bytes(data))
    with mount(bad, allow_errors=True) as m:
        assert read_errno(os.path.join(m.path, "seq.txt")) == errno.EIO
        for n in ("d/rand.bin", "d/text.txt", "d/sub/small"):
            with open(os.path.join(m.path, n), "rb") as f:
                assert f.read() == (ref / n).read_bytes(), n
    assert "sqlar" in m.log()


@pytest.mark.parametrize("keep", [0.01, 0.3, 0.6, 0.99])
def test_truncated(tmp_path, src_dir, keep):
    """A database cut short: refused with a message, or files that read whole or fail with EIO;
    never other bytes."""
    archive = tmp_path / "x.sqlar"
    make_sqlar(src_dir, archive, NAMES)
    ref = extract(archive, tmp_path / "ref")
    data = archive.read_bytes()
    cut = tmp_path / "cut.sqlar"
    cut.write_bytes(data[:int(len(data) * keep)])
    m = tmp_path / "m"
    m.mkdir()
    r = run_tarseek(cut, m)
    if r.returncode != 0:
        assert "SQLite" in r.stderr or "not" in r.stderr, r.stderr
        assert "AddressSanitizer" not in r.stderr
        return
    try:
        for d, dirs, files in os.walk(m):
            for n in files:
                p = os.path.join(d, n)
                if os.path.islink(p):
                    continue
                e = read_errno(p)
                if e is None:
                    with open(p, "rb") as f:
                        assert f.read() == (ref / os.path.relpath(p, m)).read_bytes(), p
                else:
                    assert e == errno.EIO, (p, e)
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(m)])


def test_cut_in_last_page(mount, tmp_path):
    """A database cut inside its last page, a stored blob's: EIO, never the zeros SQLite's pager
    would make of a short read."""
    src = tmp_path / "src"
    src.mkdir()
    data = random_bytes(200_000, seed=11)
    (src / "r.bin").write_bytes(data)
    archive = tmp_path / "x.sqlar"
    make_sqlar(src, archive, ["r.bin"])
    whole = archive.read_bytes()
    cut = tmp_path / "cut.sqlar"
    cut.write_bytes(whole[:-100])
    with mount(cut, allow_errors=True) as m:
        assert read_errno(os.path.join(m.path, "r.bin")) == errno.EIO
    assert "cannot read its data" in m.log()


def test_lying_rows(mount, tmp_path):
    """Rows whose size or data lie, written with Python's sqlite3 in sqlar's schema: a stored
    blob shorter than its size, zlib's bytes that make more or fewer bytes than the size, data
    missing, an odd mode: each listed, its reads EIO; the good rows read whole."""
    archive = tmp_path / "lies.sqlar"
    good = text_data(50_000, seed=5)
    rows = [
        ("good.txt", 0o100644, 1_600_000_000, len(good), zlib.compress(good)),
        ("stored.bin", 0o100644, 1_600_000_000, 5, b"12345"),
        ("short.bin", 0o100644, 1_600_000_000, 10, b"123"),  # neither stored nor zlib's
        ("more.txt", 0o100644, 1_600_000_000, len(good) - 1, zlib.compress(good)),
        ("fewer.txt", 0o100644, 1_600_000_000, len(good) + 1, zlib.compress(good)),
        ("nodata.bin", 0o100644, 1_600_000_000, 7, None),
        ("garbage.bin", 0o100644, 1_600_000_000, 1000, b"not zlib at all"),
        ("fifo", 0o010644, 1_600_000_000, 5, b"fifo!"),  # sqlite3 -Ax writes it as a file
        ("dir", 0o040755, 1_600_000_000, 0, None),
        ("dir/after.txt", 0o100600, 1_600_000_000, 6, b"after\n"),
    ]
    with sqlite3.connect(archive) as db:
        db.execute("CREATE TABLE sqlar(name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT,"
                   " data BLOB)")
        db.executemany("INSERT INTO sqlar VALUES (?, ?, ?, ?, ?)", rows)
    with mount(archive, allow_errors=True) as m:
        def rd(n):
            with open(os.path.join(m.path, n), "rb") as f:
                return f.read()
        assert rd("good.txt") == good
        assert rd("stored.bin") == b"12345"
        assert rd("fifo") == b"fifo!"
        assert rd("dir/after.txt") == b"after\n"
        for n in ("short.bin", "more.txt", "fewer.txt", "nodata.bin", "garbage.bin"):
            assert read_errno(os.path.join(m.path, n)) == errno.EIO, n


@pytest.mark.parametrize("how", ["view", "no-table", "other-columns", "without-rowid"])
def test_not_sqlar(tmp_path, how):
    """A database without a table sqlar in its format is not an archive: refused, with a
    message, and no query of its schema runs (a view, a trigger)."""
    archive = tmp_path / "db.sqlar"
    with sqlite3.connect(archive) as db:
        db.execute("CREATE TABLE t(name TEXT, mode INT, mtime INT, sz INT, data BLOB)")
        db.execute("INSERT INTO t VALUES ('a', 33188, 0, 1, 'x')")
        if how == "view":
            db.execute("CREATE VIEW sqlar AS SELECT * FROM t")
        elif how == "other-columns":
            db.execute("CREATE TABLE sqlar(name TEXT, mode INT, size INT, data BLOB)")
        elif how == "without-rowid":
            db.execute("CREATE TABLE sqlar(name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT,"
                       " data BLOB) WITHOUT ROWID")
            db.execute("INSERT INTO sqlar VALUES ('a', 33188, 0, 1, 'x')")
    m = tmp_path / "m"
    m.mkdir()
    r = run_tarseek(archive, m)
    if r.returncode == 0:
        subprocess.run(["fusermount3", "-u", "-z", str(m)])
    if how == "without-rowid":
        # read as a plain file or refused; never a crash
        assert "AddressSanitizer" not in r.stderr
        return
    assert r.returncode != 0 or not os.path.exists(m / "a"), r.stderr
