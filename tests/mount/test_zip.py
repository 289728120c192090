"""Zip archives, mounted and compared with what unzip extracts (every path, type, mode, owner,
size, mtime, symlink target and byte: conftest.compare_trees).

- Info-ZIP zip -r -y at -0, -1, -6, -9 and -Z bzip2 of the standard tree (modes with
  setuid/setgid/sticky bits -- unzip -K keeps them --, owners -- unzip -X restores them --,
  symlinks, empty files and folders, unicode names, a path over 300 bytes, deep folders);
  a second mount reuses the index.  unzip leaves symlinks at the time it made them: their
  mtimes are taken from the source tree (the archive stores them to the second).
- Python's zipfile with ZIP_DEFLATED, ZIP_BZIP2 and ZIP_LZMA; bsdtar --format zip; Python's
  DOS times under two time zones (TZ set for zipfile, unzip and the daemon alike: a DOS time
  has no zone, tarseek shows it as local time as unzip extracts it).
- Many small files (3,000: whole-mode streams, read all) and large deflated entries (40 MiB,
  and 1 GiB from a pipe: decoded while indexing, with checkpoints), read at many random
  offsets; an entry over 4 GiB (zip64); large bzip2 and LZMA entries with a small spacing.
- A zip inside a tar.gz and a tar.gz inside a zip with -r; a union of a zip and a tar; a name
  stored twice (PATH.versions); user.tarseek.info.
- Encrypted (zip -P) and unsupported (method 6, implode) entries: listed with their size, reads fail
  with EACCES / EOPNOTSUPP, the rest works.
- Damage: a flipped byte in a small deflated entry (EIO at its first read), in a large one
  (found while indexing: EIO), in a stored one, in the central directory; truncations and
  appended garbage: EIO, a refusal or fewer entries, never wrong bytes, and the daemon
  survives (test_damage.py's daemon-with-deadlines and judge).

The four bugs this test found first (stored CRCs, bytes after the end record, backslash
names, a bad name's message) are checked as the rest.
"""
import hashlib
import os
import random
import sqlite3
import stat
import struct
import subprocess
import zipfile
import zlib

import pytest

import conftest
from conftest import (MATRIX_ALL, compare_trees, exe_sanitized, make_tree, random_bytes,
                      read_errno, require_tool, run, semi_random, snapshot)
from test_damage import Daemon, check_refusal, judge, read_all

pytestmark = pytest.mark.skipif(not all(os.path.exists(f"/usr/bin/{t}") for t in ("zip", "unzip")),
                                reason="zip and unzip are needed")

# The entries of 1 and 4.4 GB: under the sanitizers their 5.4 GB go through instrumented
# copies and CRCs (over four minutes of the sanitizer pass) while they check sizes and offsets,
# which the plain build's run checks; the sanitizer pass runs them with TARSEEK_MATRIX=all
# (tools/test.sh with SANITIZE=full).
gigabytes = pytest.mark.skipif(exe_sanitized() and not MATRIX_ALL,
                               reason="gigabytes under the sanitizers: SANITIZE=full runs them")


def info(path):
    """user.tarseek.info of path as a dict."""
    text = os.getxattr(path, "user.tarseek.info", follow_symlinks=False).decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def unzip(archive, dest, env=None, check=True):
    """Extracts as a user restoring a backup would, as root: -K keeps setuid/setgid/sticky
    bits, -X the owners."""
    os.makedirs(dest, exist_ok=True)
    return run("unzip", "-q", "-K", "-X", "-o", archive, "-d", dest, env=env, check=check)


def fix_symlink_times(ref, src):
    """unzip does not set a symlink's mtime: give each the source's, to the second (what the
    archive's extended timestamp holds)."""
    for dirpath, dirnames, filenames in os.walk(ref):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            if os.path.islink(p):
                rel = os.path.relpath(p, ref)
                t = int(os.lstat(os.path.join(src, rel)).st_mtime)
                os.utime(p, (t, t), follow_symlinks=False)


def zip_dir(src, archive, *args, env=None):
    run("zip", "-q", "-r", *args, os.path.abspath(archive), ".", cwd=src, env=env)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The standard tree, plus a deep folder and more unicode names."""
    base = tmp_path_factory.mktemp("zip-tree")
    src = base / "src"
    make_tree(src)
    deep = src / "deep"
    p = deep
    for i in range(30):
        p = p / f"level{i:02d}"
    p.mkdir(parents=True)
    (p / "bottom.txt").write_bytes(b"at the bottom\n")
    (src / "\u00fcnic\u00f6de \u0444\u0430\u0439\u043b \U0001f600.txt").write_bytes(b"emoji\n")
    os.utime(deep, (1_600_000_000, 1_600_000_000))
    return src


def text_data(n, seed):
    return conftest.text_data(n, seed, words=500)


def index_of(archive):
    return str(archive) + ".index.sqlite"


def streams(archive):
    db = sqlite3.connect(index_of(archive))
    try:
        return db.execute("SELECT codec, crcs, usize FROM streams ORDER BY id").fetchall()
    finally:
        db.close()


def checkpoints(archive, codec=None):
    db = sqlite3.connect(index_of(archive))
    try:
        return db.execute("SELECT count(*) FROM checkpoints c JOIN streams s ON s.id = c.stream"
                          + (" WHERE s.codec = ?" if codec else ""),
                          (codec,) if codec else ()).fetchone()[0]
    finally:
        db.close()


def random_reads(path, want, n=60, seed=0):
    rng = random.Random(seed)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert os.fstat(fd).st_size == len(want)
        for _ in range(n):
            off = rng.randrange(0, len(want) + 10)
            length = rng.choice([1, 100, 4096, 65_537, 131_072, 1_000_000])
            assert os.pread(fd, length, off) == want[off:off + length], (off, length)
    finally:
        os.close(fd)



# ---- Info-ZIP ---------------------------------------------------------------------------

@pytest.mark.parametrize("level", ["-0", "-1", "-6", "-9", "-Zbzip2"])
def test_infozip(mount, tmp_path, tree, level):
    archive = tmp_path / "tree.zip"
    zip_dir(tree, archive, "-y", *(["-Z", "bzip2"] if level == "-Zbzip2" else [level]))
    ref = tmp_path / "ref"
    unzip(archive, ref)
    fix_symlink_times(ref, tree)
    with mount(archive) as m:
        got = compare_trees(m.path, ref, check_root=False)
    assert len(got) > 50
    log = m.log()
    assert "indexed tree.zip" in log, log
    codecs = {c for c, _, _ in streams(archive)}
    # what does not shrink is stored: a stream of codec "stored", CRC-checked as the rest
    assert codecs == ({"stored"} if level == "-0" else
                      {"bzip2" if level == "-Zbzip2" else "deflate", "stored"}), codecs
    # the second mount reuses the index and reads the same
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False)
    assert "indexed" not in m.log(), m.log()


def test_python_methods(mount, tmp_path, tree):
    """zipfile.write of the tree with each method (and DOS times: TZ=UTC for all three).
    unzip 6.0 cannot extract LZMA: that archive is compared with the extraction of the
    deflated one, which holds the same entries with the same attributes."""
    env = dict(os.environ, TZ="UTC")
    for method in (zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        archive = tmp_path / f"py{method}.zip"
        run("/usr/bin/python3", "-c", f"""
import os, zipfile
with zipfile.ZipFile({str(archive)!r}, 'w', {method}) as z:
    for d, dirs, files in os.walk('.'):
        for n in sorted(dirs + files):
            p = os.path.join(d, n)
            if not os.path.islink(p):
                z.write(p)
""", cwd=tree, env=env)
        ref = tmp_path / f"ref{method}"
        if method == zipfile.ZIP_LZMA:
            ref = tmp_path / f"ref{zipfile.ZIP_DEFLATED}"
        else:
            unzip(archive, ref, env=env)
        with mount(archive, env={"TZ": "UTC"}) as m:
            compare_trees(m.path, ref, check_root=False)
        want = {zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
                zipfile.ZIP_LZMA: "lzma-zip"}[method]
        assert {c for c, _, _ in streams(archive)} == {want}


@pytest.mark.parametrize("tz", ["UTC", "XST-5:30"])
def test_dos_times_local(mount, tmp_path, tz):
    """A DOS time has no zone: zipfile writes local time, unzip reads it as local time, the
    mount shows it as local time -- in every zone the same instant as the file had (to two
    seconds)."""
    env = dict(os.environ, TZ=tz)
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "f.txt").write_bytes(b"dos time\n")
    (src / "g.txt").write_bytes(b"another\n")
    for p, t in ((src / "sub" / "f.txt", 1_600_000_000), (src / "g.txt", 1_234_567_890),
                 (src / "sub", 1_500_000_000)):
        os.utime(p, (t, t))
    archive = tmp_path / "dos.zip"
    zip_dir(src, archive, "-X", env=env)  # -X: no extended timestamp, the DOS time alone
    ref = tmp_path / "ref"
    unzip(archive, ref, env=env)
    with mount(archive, env={"TZ": tz}) as m:
        compare_trees(m.path, ref, check_root=False)
        assert os.stat(os.path.join(m.path, "g.txt")).st_mtime == 1_234_567_890


def test_bsdtar_zip(mount, tmp_path, tree):
    require_tool("bsdtar")
    archive = tmp_path / "bsd.zip"
    run("bsdtar", "--format", "zip", "-cf", archive, ".", cwd=tree)
    ref = tmp_path / "ref"
    unzip(archive, ref)
    fix_symlink_times(ref, tree)
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False)


def test_many_small_files(mount, tmp_path):
    """3,000 small deflated files (one whole-mode stream each) and a few hundred folders."""
    src = tmp_path / "src"
    rng = random.Random(3)
    for i in range(3000):
        d = src / f"d{i % 300:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:04d}.txt").write_bytes(text_data(rng.randrange(0, 3000), i))
    archive = tmp_path / "many.zip"
    zip_dir(src, archive)
    ref = tmp_path / "ref"
    unzip(archive, ref)
    with mount(archive) as m:
        got = compare_trees(m.path, ref, check_root=False)
    assert len(got) == 3301
    s = streams(archive)
    assert len(s) > 2900 and all(crcs == 2 for _, crcs, _ in s)  # IDX_CRCS_MEMBERS
    assert checkpoints(archive) == 0


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """(archive, {name: bytes}): a 40 MiB deflated entry between two small ones."""
    base = tmp_path_factory.mktemp("zip-big")
    src = base / "src"
    src.mkdir()
    files = {"a.txt": b"first\n", "big.bin": semi_random(40 << 20, 7), "z.txt": b"last\n"}
    for n, d in files.items():
        (src / n).write_bytes(d)
    archive = base / "big.zip"
    run("zip", "-q", "-1", archive, *files, cwd=src)
    return archive, files


def test_large_deflated_entry(mount, big):
    archive, files = big
    with mount(archive) as m:
        random_reads(os.path.join(m.path, "big.bin"), files["big.bin"])
        assert open(os.path.join(m.path, "z.txt"), "rb").read() == b"last\n"
    assert "indexed" in m.log()
    s = [x for x in streams(archive) if x[2] == 40 << 20]
    assert s and s[0][1] == 1, s  # decoded while indexing: segment CRCs
    assert checkpoints(archive, "deflate") >= 9  # one every 4 MiB
    with mount(archive) as m:
        random_reads(os.path.join(m.path, "big.bin"), files["big.bin"], seed=1)
        with open(os.path.join(m.path, "big.bin"), "rb") as f:
            assert f.read() == files["big.bin"]
    assert "indexed" not in m.log(), m.log()


GIB_BLOCK = 1 << 16


def gib_pool():
    """256 blocks of 64 KiB of compressible text; block k of the 1 GiB entry is pool block
    (k * 97) % 256 with k written over its first 12 bytes, so that any range can be made
    again from its offset alone and no two blocks are the same."""
    text = text_data(256 * GIB_BLOCK, 11)
    return [text[i * GIB_BLOCK:(i + 1) * GIB_BLOCK] for i in range(256)]


def gib_bytes(pool, off, n):
    out = bytearray()
    k = off // GIB_BLOCK
    while len(out) < n + off % GIB_BLOCK:
        out += b"%011d\n" % k + pool[(k * 97) % 256][12:]
        k += 1
    return bytes(out[off % GIB_BLOCK:off % GIB_BLOCK + n])


@gigabytes
def test_1gib_deflated_entry(mount, tmp_path):
    """A 1 GiB entry deflated by zip from a pipe (data descriptor, zip64): decoded once while
    indexing, then 200 reads at random offsets byte-exact; the second mount too."""
    pool = gib_pool()
    archive = tmp_path / "gib.zip"
    size = 1 << 30
    with open(archive, "wb") as out:
        z = subprocess.Popen(["zip", "-q", "-1", "-fz", "-", "-"], stdin=subprocess.PIPE,
                             stdout=out)
        for off in range(0, size, 64 * GIB_BLOCK):
            z.stdin.write(gib_bytes(pool, off, 64 * GIB_BLOCK))
        z.stdin.close()
        assert z.wait() == 0
    rng = random.Random(5)
    offs = [rng.randrange(0, size - 5000) for _ in range(200)] + [0, size - 4096]
    for n in range(2):
        with mount(archive) as m:
            path = os.path.join(m.path, "-")
            assert os.path.getsize(path) == size
            with open(path, "rb") as f:
                for o in offs:
                    f.seek(o)
                    got = f.read(4096 + o % 900)
                    assert got == gib_bytes(pool, o, len(got)), o
        assert ("indexed" in m.log()) == (n == 0), m.log()
    assert checkpoints(archive, "deflate") >= 200  # one every 4 MiB


@gigabytes
def test_entry_over_4gib(mount, tmp_path):
    """4.4 GB of zeros deflated by zip from a pipe (zip64 sizes in the data descriptor and the
    directory): its size, reads on both sides of 4 GiB and at the end, a second mount."""
    archive = tmp_path / "z64.zip"
    size = 4_400_000_000
    with open(archive, "wb") as out:
        head = subprocess.Popen(["head", "-c", str(size), "/dev/zero"], stdout=subprocess.PIPE)
        subprocess.run(["zip", "-q", "-1", "-fz", "-", "-"], stdin=head.stdout, stdout=out,
                       check=True)
        assert head.wait() == 0
    with zipfile.ZipFile(archive) as z:
        assert z.getinfo("-").file_size == size
    for n in range(2):
        with mount(archive) as m:
            path = os.path.join(m.path, "-")
            assert os.path.getsize(path) == size
            with open(path, "rb") as f:
                for off in (0, (1 << 32) - 5000, 1 << 32, size - 10_000):
                    f.seek(off)
                    assert f.read(10_000) == bytes(10_000), off
                f.seek(size - 1)
                assert f.read(10) == b"\0"
        assert ("indexed" in m.log()) == (n == 0), m.log()


def test_large_bzip2_lzma_entries(mount, tmp_path):
    """Larger than whole mode allows at --gzip-spacing 0.25 (1 MiB): decoded while indexing;
    bzip2 gets a checkpoint per block, LZMA only its start (--shadow never: what the index
    holds without one, whatever TARSEEK_SHADOW the suite runs with; a shadow's frames would
    replace those checkpoints)."""
    data = {"b.bin": semi_random(3 << 20, 8), "l.bin": semi_random(3 << 20, 9)}
    archive = tmp_path / "bl.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(zipfile.ZipInfo("b.bin", (2020, 1, 1, 0, 0, 0)), data["b.bin"],
                   compress_type=zipfile.ZIP_BZIP2, compresslevel=1)
        z.writestr(zipfile.ZipInfo("l.bin", (2020, 1, 1, 0, 0, 0)), data["l.bin"],
                   compress_type=zipfile.ZIP_LZMA)
    for _ in range(2):
        with mount(archive, "--gzip-spacing", "0.25", "--shadow", "never") as m:
            for n, d in data.items():
                random_reads(os.path.join(m.path, n), d, n=25)
    assert sorted((c, crcs) for c, crcs, _ in streams(archive)) == [("bzip2", 1), ("lzma-zip", 1)]
    assert checkpoints(archive, "bzip2") >= 3
    assert checkpoints(archive, "lzma-zip") == 1


# ---- with the rest of tarseek -----------------------------------------------------------------

def test_nested(mount, tmp_path, tree):
    """-r: a zip inside a tar.gz, a tar.gz and a zip inside a zip, read through every layer."""
    inner = tmp_path / "inner"
    (inner / "d").mkdir(parents=True)
    (inner / "d" / "f.txt").write_bytes(text_data(50_000, 1))
    (inner / "g.bin").write_bytes(random_bytes(20_000, 2))
    box = tmp_path / "box"
    box.mkdir()
    zip_dir(inner, box / "in.zip")
    run("tar", "czf", box / "in.tar.gz", "-C", inner, ".")
    outer_zip = tmp_path / "outer.zip"
    zip_dir(box, outer_zip)
    outer_tgz = tmp_path / "outer.tar.gz"
    run("tar", "czf", outer_tgz, "-C", box, "in.zip")
    want = {"d/f.txt": (inner / "d" / "f.txt").read_bytes(),
            "g.bin": (inner / "g.bin").read_bytes()}
    with mount("-r", outer_zip, outer_tgz) as m:
        for top in ("in.zip", "in.tar.gz"):
            d = os.path.join(m.path, top)
            assert os.path.isdir(d), (top, os.listdir(m.path))
            for rel, data in want.items():
                assert open(os.path.join(d, rel), "rb").read() == data, (top, rel)
            assert info(os.path.join(d, "d", "f.txt"))["format"] == ("zip" if top == "in.zip"
                                                                     else "tar")
    # without -r they are files, whose bytes are the archives'
    with mount(outer_zip) as m:
        assert open(os.path.join(m.path, "in.zip"), "rb").read() == (box / "in.zip").read_bytes()


def test_union_with_tar(mount, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "both").mkdir(parents=True)
    (b / "both").mkdir(parents=True)
    (a / "both" / "x.txt").write_bytes(b"from the zip\n")
    (a / "only-zip.txt").write_bytes(b"zip\n")
    (b / "both" / "x.txt").write_bytes(b"from the tar\n")
    (b / "both" / "y.txt").write_bytes(b"tar y\n")
    zip_dir(a, tmp_path / "a.zip")
    run("tar", "cf", tmp_path / "b.tar", "-C", b, ".")
    with mount(tmp_path / "a.zip", tmp_path / "b.tar") as m:
        j = lambda *p: os.path.join(m.path, *p)
        assert sorted(os.listdir(m.path)) == ["both", "only-zip.txt"]
        assert open(j("both", "x.txt"), "rb").read() == b"from the tar\n"  # the last wins
        assert open(j("both", "y.txt"), "rb").read() == b"tar y\n"
        assert open(j("only-zip.txt"), "rb").read() == b"zip\n"
        assert info(j("only-zip.txt"))["format"] == "zip"
        assert info(j("both", "y.txt"))["format"] == "tar"
    with mount(tmp_path / "b.tar", tmp_path / "a.zip") as m:
        assert open(os.path.join(m.path, "both", "x.txt"), "rb").read() == b"from the zip\n"


def test_versions(mount, tmp_path):
    """A name stored twice (zipfile warns, and writes both): the last shows, every one under
    PATH.versions/N."""
    archive = tmp_path / "dup.zip"
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("f.txt", b"first\n")
            z.writestr("other", b"o\n")
            z.writestr("f.txt", b"second, longer\n")
            z.writestr("f.txt", b"third\n", compress_type=zipfile.ZIP_STORED)
    with mount(archive) as m:
        f = os.path.join(m.path, "f.txt")
        assert open(f, "rb").read() == b"third\n"
        v = f + ".versions"
        assert sorted(os.listdir(v)) == ["1", "2", "3"]
        for n, want in (("1", b"first\n"), ("2", b"second, longer\n"), ("3", b"third\n")):
            assert open(os.path.join(v, n), "rb").read() == want
        assert info(f)["versions"] == "3"


def test_info_attribute(mount, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "deflated.txt").write_bytes(text_data(10_000, 3))
    (src / "stored.bin").write_bytes(random_bytes(10_000, 4))
    (src / "bz.txt").write_bytes(text_data(10_000, 5))
    archive = tmp_path / "i.zip"
    run("zip", "-q", archive, "deflated.txt", "stored.bin", cwd=src)
    run("zip", "-q", "-Z", "bzip2", archive, "bz.txt", cwd=src)
    with mount(archive) as m:
        j = lambda p: os.path.join(m.path, p)
        d, s, b = info(j("deflated.txt")), info(j("stored.bin")), info(j("bz.txt"))
        for x in (d, s, b):
            assert x["format"] == "zip" and x["kind"] == "archive", x
            assert x["source"] == str(archive)
        assert d["codec"] == "deflate" and b["codec"] == "bzip2", (d, b)
        assert s["codec"] == "stored", s
        assert int(s["header_offset"]) > 0 and int(s["size"]) == 10_000
        with zipfile.ZipFile(archive) as z:
            assert int(s["header_offset"]) == z.getinfo("stored.bin").header_offset
        assert "kind=union" in os.getxattr(m.path, "user.tarseek.info").decode() or \
            info(m.path)["kind"] == "archive"
        assert "user.tarseek.info" not in os.listxattr(j("stored.bin"))


# ---- entries tarseek cannot read -------------------------------------------------------

def patch_method(archive, name, method):
    """Sets the compression method of entry name in both its headers."""
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as z:
        lho = z.getinfo(name).header_offset
    struct.pack_into("<H", data, lho + 8, method)
    at = data.index(b"PK\1\2")
    while at >= 0:
        n = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + n] == name.encode():
            struct.pack_into("<H", data, at + 10, method)
            break
        at = data.find(b"PK\1\2", at + 4)
    else:
        raise AssertionError(f"{name} not in the directory")
    archive.write_bytes(bytes(data))


def test_encrypted_and_unsupported(mount, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    files = {"plain.txt": text_data(5000, 1), "secret.txt": text_data(7000, 2),
             "imploded.txt": text_data(9000, 3), "after.txt": text_data(3000, 4)}
    for n, d in files.items():
        (src / n).write_bytes(d)
    archive = tmp_path / "mixed.zip"
    run("zip", "-q", archive, "plain.txt", cwd=src)
    run("zip", "-q", "-P", "pw", archive, "secret.txt", cwd=src)
    run("zip", "-q", archive, "imploded.txt", "after.txt", cwd=src)
    patch_method(archive, "imploded.txt", 6)  # implode: a method tarseek lacks
    with mount(archive, allow_errors=True) as m:
        j = lambda p: os.path.join(m.path, p)
        assert sorted(os.listdir(m.path)) == sorted(files)
        for n, d in files.items():
            assert os.stat(j(n)).st_size == len(d), n  # listed with their sizes
        assert read_errno(j("secret.txt")) == 13  # EACCES
        assert read_errno(j("imploded.txt")) == 95  # EOPNOTSUPP
        assert open(j("plain.txt"), "rb").read() == files["plain.txt"]
        assert open(j("after.txt"), "rb").read() == files["after.txt"]
    log = m.log()
    assert "encrypted" in log and "implode" in log, log


# ---- damage ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def damage_src(tmp_path_factory):
    """(folder, {name: bytes}): small texts (whole mode), a 20 MiB text (decoded while
    indexing), a stored random file."""
    base = tmp_path_factory.mktemp("zip-damage")
    src = base / "src"
    (src / "d").mkdir(parents=True)
    files = {"a.txt": text_data(2000, 1), "d/small.txt": text_data(60_000, 2),
             "d/big.txt": text_data(20 << 20, 3), "d/stored.bin": random_bytes(200_000, 4),
             "z.txt": text_data(3000, 5)}
    for n, d in files.items():
        (src / n).write_bytes(d)
    return src, files


def make_damage_zip(damage_src, path):
    src, files = damage_src
    run("zip", "-q", "-n", ".bin", path, *files, cwd=src)  # -n: .bin stored
    with zipfile.ZipFile(path) as z:
        assert z.getinfo("d/stored.bin").compress_type == zipfile.ZIP_STORED
        where = {i.filename: (i.header_offset, i.compress_size,
                              i.header_offset + 30 + len(i.filename.encode()) +
                              len(i.extra)) for i in z.infolist()}
    # (the local extra field of Info-ZIP is longer than the central one: read it)
    data = path.read_bytes()
    for n, (lho, csize, _) in where.items():
        nl, xl = struct.unpack_from("<HH", data, lho + 26)
        where[n] = (lho, csize, lho + 30 + nl + xl)
    return data, where


def mounted_outcome(tmp_path, archive, files, as_stored=None, name="x", enotsup=False):
    """Mounts (or sees it refused), reads everything, judges: (refused message | counts).
    enotsup: EOPNOTSUPP is a fine failure too (the directory's method field was hit), and a
    member may show under a damaged name (nothing checks the directory's names) if its bytes
    are some original member's."""
    d = Daemon(archive, tmp_path / f"mnt-{name}", tmp_path / f"log-{name}")
    if not d.mounted:
        return "refused: " + check_refusal(d.proc.returncode, d.log(), archive), None
    try:
        listing = read_all(d)
    except BaseException:
        d.kill()
        raise
    log = d.stop()
    counts, problems = judge(listing, files, as_stored)
    if counts["absent"] and not any(": warning:" in l or ": error:" in l
                                    for l in log.splitlines()):
        problems.append(f"{counts['absent']} members not shown, and no warning says so")
    if enotsup:
        problems = [p for p in problems if "errno 95" not in p]
        originals = {hashlib.sha256(d).hexdigest() for d in files.values()}
        for rel, r in listing["files"].items():
            if rel not in files and r["whole"][0] == "ok" and r["whole"][2] in originals:
                problems = [p for p in problems if not p.startswith(repr(rel))]
    assert not problems, "\n".join(problems) + "\n--- daemon log:\n" + log
    return counts, log


def test_damage_small_entry(tmp_path, damage_src):
    """A flipped byte in a small deflated entry: EIO when it is read (whole mode checks its
    CRC before any byte is returned), the others intact."""
    archive = tmp_path / "d.zip"
    data, where = make_damage_zip(damage_src, archive)
    lho, csize, start = where["d/small.txt"]
    b = bytearray(data)
    b[start + csize // 2] ^= 0x55
    archive.write_bytes(bytes(b))
    counts, log = mounted_outcome(tmp_path, archive, damage_src[1])
    assert counts["eio"] == 1 and counts["intact"] == len(damage_src[1]) - 1, (counts, log)


def test_damage_large_entry(tmp_path, damage_src):
    """A flipped byte in the 20 MiB entry: found while indexing (its CRC), EIO; the others
    intact."""
    archive = tmp_path / "d.zip"
    data, where = make_damage_zip(damage_src, archive)
    lho, csize, start = where["d/big.txt"]
    b = bytearray(data)
    b[start + csize // 2] ^= 0x55
    archive.write_bytes(bytes(b))
    counts, log = mounted_outcome(tmp_path, archive, damage_src[1])
    assert counts["eio"] == 1 and counts["intact"] == len(damage_src[1]) - 1, (counts, log)
    assert "CRC" in log or "damaged" in log, log


def test_damage_stored_entry(tmp_path, damage_src):
    archive = tmp_path / "d.zip"
    data, where = make_damage_zip(damage_src, archive)
    lho, csize, start = where["d/stored.bin"]
    b = bytearray(data)
    b[start + csize // 2] ^= 0x55
    archive.write_bytes(bytes(b))
    counts, log = mounted_outcome(tmp_path, archive, damage_src[1])
    assert counts["eio"] == 1, counts


def damage_cases(data, where):
    """name -> damaged bytes: the central directory and the end record flipped, truncations,
    garbage appended."""
    cd = data.index(b"PK\1\2")
    end = data.rindex(b"PK\5\6")
    cases = {}
    for k, off in enumerate((cd, cd + 10, cd + 28, cd + 42, (cd + end) // 2, end - 5)):
        b = bytearray(data)
        b[off] ^= 0xff
        cases[f"flip-directory-{k}"] = bytes(b)
    for k in (4, 8, 10, 12, 16, 20):
        b = bytearray(data)
        b[end + k] ^= 0x01
        cases[f"flip-end-record-{k}"] = bytes(b)
    for frac in (0.1, 0.5, 0.9):
        cases[f"trunc-{int(frac * 100)}%"] = data[:int(len(data) * frac)]
    cases["trunc-in-directory"] = data[:(cd + end) // 2]
    cases["trunc-before-end-record"] = data[:end]
    cases["trunc-last-byte"] = data[:-1]
    cases["garbage-appended"] = data + random_bytes(1000, 7)
    return cases


def test_damage_matrix(tmp_path, damage_src):
    """Every case mounts with members intact or failing with EIO (never wrong bytes, never a
    short file shown whole), or is refused cleanly; the daemon survives."""
    clean = tmp_path / "clean.zip"
    data, where = make_damage_zip(damage_src, clean)
    results = {}
    for name, bad in damage_cases(data, where).items():
        archive = tmp_path / f"{name}.zip"
        archive.write_bytes(bad)
        counts, log = mounted_outcome(tmp_path, archive, damage_src[1], name=name,
                                      enotsup=name.startswith("flip-directory"))
        results[name] = counts
        if name.startswith("trunc-") and name not in ("trunc-before-end-record",
                                                     "trunc-last-byte", "trunc-in-directory"):
            # the walk of local headers: every entry whose data is in the file
            intact = sum(1 for n, (lho, c, s) in where.items() if s + c <= len(bad))
            assert not isinstance(counts, str) and counts["intact"] == intact, (name, counts)
    print(results)


def test_truncated_symlinks(mount, tmp_path):
    """zip -y stores a symlink as an entry whose data is its target and whose type is in the
    central directory only (the unix mode in the external attributes; the local header keeps
    none, and Info-ZIP's local extra fields, 'UT' and 'ux', keep times and owners).  Cut
    before the directory, the archive is read from its local headers: the links show as
    regular files holding their targets, 0644.  The reference tools on the same bytes:
    Info-ZIP's unzip (the format's tool) refuses the archive; bsdtar -x, which reads the local
    headers as they come, writes regular files holding the targets (mode 0664); 7zz x the
    same (0644), with an error.  Never a symlink with an empty target, never an error."""
    require_tool("bsdtar")
    src = tmp_path / "src"
    src.mkdir()
    links = {"link1": "a.txt", "link2": "some/long/target/path"}
    (src / "a.txt").write_bytes(text_data(20_000, 1))
    for name, target in links.items():
        os.symlink(target, src / name)
    archive = tmp_path / "l.zip"
    run("zip", "-q", "-y", archive, "a.txt", *links, cwd=src)
    with zipfile.ZipFile(archive) as z:
        assert all(stat.S_ISLNK(z.getinfo(n).external_attr >> 16) for n in links)
    data = archive.read_bytes()
    cd = struct.unpack_from("<I", data, data.rindex(b"PK\5\6") + 16)[0]
    archive.write_bytes(data[:cd + 10])  # the directory's first record cut
    assert run("unzip", "-o", "-d", tmp_path / "unzip", archive, check=False).returncode != 0
    assert not os.path.exists(tmp_path / "unzip" / "link1")
    tools = {"bsdtar": lambda dest: ["bsdtar", "-xf", archive, "-C", dest],
             "7zz": lambda dest: ["7zz", "x", "-snld", "-y", "-bd", f"-o{dest}", archive]}
    for tool, argv in tools.items():
        if not conftest.have(tool):
            continue
        dest = tmp_path / tool
        dest.mkdir()
        run(*argv(dest), check=False)
        for name, target in links.items():
            p = dest / name
            assert not p.is_symlink() and p.read_bytes() == target.encode(), (tool, name)
    with mount(archive) as m:
        for name, target in links.items():
            p = os.path.join(m.path, name)
            st = os.lstat(p)
            assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644, (name, st)
            assert open(p, "rb").read() == target.encode(), name
        assert open(os.path.join(m.path, "a.txt"), "rb").read() == text_data(20_000, 1)
    assert "no zip central directory" in m.log(), m.log()


def test_garbage_after_end_record(mount, tmp_path, tree):
    archive = tmp_path / "g.zip"
    zip_dir(tree, archive, "-y")
    ref = tmp_path / "ref"
    unzip(archive, ref)
    fix_symlink_times(ref, tree)
    with open(archive, "ab") as f:
        f.write(random_bytes(64, 1))
    with mount(archive, allow_errors=True) as m:
        compare_trees(m.path, ref, check_root=False)


def test_damage_after_indexing(tmp_path, damage_src):
    """Index, then flip a byte in the middle of the 20 MiB entry keeping size and mtime: the
    index is reused, that entry fails with EIO, the small ones read right."""
    archive = tmp_path / "d.zip"
    data, where = make_damage_zip(damage_src, archive)
    d = Daemon(archive, tmp_path / "mnt1", tmp_path / "log1", "--no-prefetch")
    assert d.mounted, d.log()
    d.stop()
    st = archive.stat()
    lho, csize, start = where["d/big.txt"]
    with open(archive, "r+b") as f:
        f.seek(start + csize // 2)
        c = f.read(1)
        f.seek(start + csize // 2)
        f.write(bytes([c[0] ^ 0xff]))
    os.utime(archive, ns=(st.st_atime_ns, st.st_mtime_ns))
    counts, log = mounted_outcome(tmp_path, archive, damage_src[1], name="after")
    assert "indexed" not in log, log
    assert counts["eio"] == 1 and counts["intact"] == len(damage_src[1]) - 1, counts


# ---- names -----------------------------------------------------------------------------------

def test_backslash_names(mount, tmp_path):
    archive = tmp_path / "bs.zip"
    with zipfile.ZipFile(archive, "w") as z:
        zi = zipfile.ZipInfo("dir\\file.txt", (2020, 1, 2, 3, 4, 6))
        zi.create_system = 0
        z.writestr(zi, b"backslashes\n")
    ref = tmp_path / "ref"
    r = unzip(archive, ref, env=dict(os.environ, TZ="UTC"), check=False)
    # unzip warns ("appears to use backslashes as path separators", exit 1) and makes dir/
    assert r.returncode in (0, 1) and (ref / "dir" / "file.txt").is_file(), r
    with mount(archive, env={"TZ": "UTC"}) as m:
        compare_trees(m.path, ref, check_root=False, dir_mtimes=False, implicit=("dir",))


def test_dos_readonly_attribute(mount, tmp_path):
    """Entries made on MS-DOS/Windows (FAT and NTFS hosts, no unix mode): the read-only
    attribute takes the write bits away, files 0444 and folders 0555, as unzip extracts them
    (7zz: files only; bsdtar: FAT hosts only); without it, 0644 and 0755."""
    archive = tmp_path / "ro.zip"
    entries = [("ro.txt", 0, 0x01), ("rw.txt", 0, 0x20), ("ro_dir/", 0, 0x11),
               ("rw_dir/", 0, 0x10), ("ntfs_ro.txt", 11, 0x21), ("hidden.txt", 0, 0x02)]
    with zipfile.ZipFile(archive, "w") as z:
        for name, host, attr in entries:
            zi = zipfile.ZipInfo(name, (2020, 1, 2, 3, 4, 6))
            zi.create_system = host
            zi.external_attr = attr
            z.writestr(zi, b"" if name.endswith("/") else name.encode())
    ref = tmp_path / "ref"
    ref.mkdir()
    subprocess.run(["unzip", "-q", str(archive)], cwd=ref, check=True,
                   preexec_fn=lambda: os.umask(0o022))
    want = {n: stat.S_IMODE(os.stat(ref / n).st_mode) for n in os.listdir(ref)}
    assert want == {"ro.txt": 0o444, "rw.txt": 0o644, "ro_dir": 0o555, "rw_dir": 0o755,
                    "ntfs_ro.txt": 0o444, "hidden.txt": 0o644}, want
    with mount(archive) as m:
        got = {n: stat.S_IMODE(os.stat(os.path.join(m.path, n)).st_mode)
               for n in os.listdir(m.path)}
    assert got == want


def test_shift_jis_backslash_names(mount, tmp_path):
    """Japanese Windows names (cp932, no UTF-8 flag, MS-DOS host): 0x5C is the second byte of
    many two-byte characters (\\x95\\x5c is one character).  Only a backslash that is a
    character of its own separates folders, as a cp932 reader sees the name (unzip splits at
    every 0x5C, bsdtar and 7-Zip under the C locale at none): Python's cp932 codec is the
    reference here.  Names that are not Shift-JIS keep unzip's rule (test_backslash_names)."""
    names = ["\u8868.txt",                      # one character that ends in 0x5C
             "dir\\\u8868\u793a.txt",          # a separator, then such a character
             "\u30bd\u30d5\u30c8\\a.txt"]      # three of them, then a separator
    archive = tmp_path / "sjis.zip"
    holders = [("N%d" % i).ljust(len(n.encode("cp932")), "x") for i, n in enumerate(names)]
    with zipfile.ZipFile(archive, "w") as z:
        for h, n in zip(holders, names):
            zi = zipfile.ZipInfo(h, (2020, 1, 2, 3, 4, 6))
            zi.create_system = 0
            z.writestr(zi, n.encode())
    data = archive.read_bytes()
    for h, n in zip(holders, names):  # the raw cp932 bytes in place of the ASCII holder
        assert data.count(h.encode()) == 2
        data = data.replace(h.encode(), n.encode("cp932"))
    archive.write_bytes(data)
    with mount(archive) as m:
        got = sorted(os.fsencode(os.path.relpath(os.path.join(d, f), m.path))
                     for d, _, fs in os.walk(m.path) for f in fs)
        assert got == sorted(n.replace("\\", "/").encode("cp932") for n in names)
        for n in names:
            path = os.path.join(os.fsencode(m.path), n.replace("\\", "/").encode("cp932"))
            with open(path, "rb") as f:
                assert f.read() == n.encode()


def test_dot_name_message(mount, tmp_path):
    archive = tmp_path / "dot.zip"
    with zipfile.ZipFile(archive, "w") as z:
        zi = zipfile.ZipInfo(".", (2020, 1, 2, 3, 4, 6))
        zi.extra = struct.pack("<HH", 0xcafe, 4) + b"JUNK"
        z.writestr(zi, b"x")
        z.writestr("ok.txt", b"ok\n")
    with mount(archive, allow_errors=True) as m:
        assert os.listdir(m.path) == ["ok.txt"]
    line = [l for l in m.log().splitlines() if "no usable name" in l]
    assert line and "('.')" in line[0], m.log()
