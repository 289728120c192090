"""Tar edge cases (DESIGN-NOTES "Tar edge cases users hit"), mounted and compared with GNU
tar's extraction of the same archive, or with what the rules say where GNU tar refuses
(names with "..", absolute names).

xattrs, appended versions (tar -r), a hard link to a path overwritten later, a file replaced
by a folder, implicit parent folders, odd names (spaces, newlines, non-UTF-8 bytes, 255-byte
names, 300-byte paths, names at the ustar limits), sparse files (GNU old sparse, PAX 0.0 /
0.1 / 1.0, bsdtar, over 8 GiB), devices and FIFOs, names with "./", "/", ".." and "//".
"""
import errno
import io
import os
import stat
import tarfile

import pytest

from conftest import (archive_mtimes, compare_trees, gnu_extract, random_bytes, require_tool,
                      run, semi_random, snapshot, user_xattrs)

IS_ROOT = os.geteuid() == 0


def check(mount, archive, tmp_path, bsdtar=False, **kw):
    """Mounts archive and compares it with GNU tar's extraction.  bsdtar: the archive lists
    folders before their children's folders, so GNU tar cannot restore folder mtimes; those
    are checked against the archive's headers instead."""
    ref = tmp_path / (os.path.basename(os.fspath(archive)) + ".ref")
    gnu_extract(archive, ref)
    with mount(archive) as m:
        got = compare_trees(m.path, ref, dir_mtimes=not bsdtar, **kw)
    if bsdtar:
        want = archive_mtimes(archive)
        for p, n in got.items():
            if n.kind == "dir" and p in want:
                assert n.mtime_ns == want[p], p
    return got


# ---- xattrs --------------------------------------------------------------------------------

@pytest.mark.parametrize("tool", ["gnu-posix", "bsdtar"])
def test_xattrs(mount, tmp_path, xattr_dir, tool):
    if xattr_dir is None:
        pytest.skip("neither the test folder nor /var/tmp supports user.* xattrs")
    src = os.path.join(xattr_dir, "src")
    os.makedirs(os.path.join(src, "d"))
    files = {"plain": b"no xattrs\n", "d/f": b"with xattrs\n", "many": b"many\n"}
    for name, data in files.items():
        with open(os.path.join(src, name), "wb") as f:
            f.write(data)
    os.setxattr(os.path.join(src, "d/f"), "user.text", b"hello world")
    os.setxattr(os.path.join(src, "d/f"), "user.binary", bytes(range(256)) * 4)
    os.setxattr(os.path.join(src, "d/f"), "user.empty", b"")
    os.setxattr(os.path.join(src, "d/f"), "user.utf8", "\u65e5\u672c".encode())
    os.setxattr(os.path.join(src, "d"), "user.dir", b"folder attribute")
    for i in range(40):
        os.setxattr(os.path.join(src, "many"), f"user.attr{i:02d}", b"v" * i)
    archive = os.path.join(xattr_dir, "x.tar")
    if tool == "bsdtar":
        require_tool("bsdtar")
        run("bsdtar", "-cf", archive, "-C", src, ".")
    else:
        run("tar", "--format=posix", "--xattrs", "-cf", archive, "-C", src, ".")
    ref = os.path.join(xattr_dir, "ref")
    gnu_extract(archive, ref)
    with mount(archive) as m:
        compare_trees(m.path, ref)
        for p in ("d/f", "d", "many", "plain"):
            assert user_xattrs(os.path.join(m.path, p)) == user_xattrs(os.path.join(src, p)), p
        f = os.path.join(m.path, "d/f")
        assert os.getxattr(f, "user.binary") == bytes(range(256)) * 4
        assert os.getxattr(f, "user.empty") == b""
        assert len(os.listxattr(os.path.join(m.path, "many"))) == 40
        assert os.listxattr(os.path.join(m.path, "plain")) == []
        with pytest.raises(OSError) as e:
            os.getxattr(f, "user.absent")
        assert e.value.errno == errno.ENODATA
        # the tools users run
        out = run("getfattr", "-d", "-m", "-", "-e", "hex", f).stdout.decode()
        assert "user.text=0x68656c6c6f20776f726c64" in out
        # nothing but what the archive holds (bsdtar stores each attribute twice, as
        # LIBARCHIVE.xattr and SCHILY.xattr: still one attribute)
        assert sorted(os.listxattr(f)) == sorted(
            ["user.text", "user.binary", "user.empty", "user.utf8"])
        assert sorted(os.listxattr(os.path.join(m.path, "d"))) == ["user.dir"]


def test_bsdtar_non_ascii_xattr_name(mount, tmp_path, xattr_dir):
    """bsdtar writes an xattr with a non-ASCII name twice: LIBARCHIVE.xattr.user.caf%C3%A9
    (name %-encoded, value base64) and SCHILY.xattr.user.caf%C3%A9 (name %-encoded too, a
    libarchive quirk).  tar.h promises one attribute per name, bsdtar's two forms merged:
    the file had one attribute, user.caf\u00e9, and the mount must show just that one."""
    require_tool("bsdtar")
    if xattr_dir is None:
        pytest.skip("neither the test folder nor /var/tmp supports user.* xattrs")
    src = os.path.join(xattr_dir, "src")
    os.makedirs(src)
    f = os.path.join(src, "f")
    with open(f, "wb") as fh:
        fh.write(b"x\n")
    os.setxattr(f, "user.caf\u00e9", b"value")
    archive = os.path.join(xattr_dir, "b.tar")
    run("bsdtar", "-cf", archive, "-C", src, "f")
    assert b"SCHILY.xattr.user.caf%C3%A9=value" in open(archive, "rb").read()
    with mount(archive) as m:
        assert user_xattrs(os.path.join(m.path, "f")) == {"user.caf\u00e9": b"value"}


# ---- numbers past the octal fields ---------------------------------------------------------

def odd_times_archive(tmp_path, fmt, times, ids):
    src = tmp_path / "src"
    src.mkdir()
    for name, ns in times.items():
        (src / name).write_bytes(name.encode())
        os.utime(src / name, ns=(0, ns))
    if ids:
        (src / "bigid").write_bytes(b"ids\n")
        os.chown(src / "bigid", 3_000_000_000, 2_500_000_000)
        (src / "midid").write_bytes(b"ids\n")
        os.chown(src / "midid", 2_097_152, 16_777_216)
    archive = tmp_path / f"odd-{fmt}.tar"
    if fmt == "bsdtar":
        require_tool("bsdtar")
        run("bsdtar", "cf", archive, "-C", src, ".")
    else:
        run("tar", "cf", archive, f"--format={fmt}", "-C", src, ".")
    return archive


@pytest.mark.parametrize("fmt", ["gnu", "posix", "bsdtar"])
def test_odd_times_and_ids(mount, tmp_path, fmt):
    """mtimes before 1970 (with a fraction), at 0 and after 2038; uid/gid past the 7-digit
    octal field and past 2^31 (GNU base-256, PAX records)."""
    times = {"neg": -1_000_000_000_250_000_000, "zero": 0, "y2100": 4_102_444_800_000_000_000}
    archive = odd_times_archive(tmp_path, fmt, times, IS_ROOT)
    got = check(mount, archive, tmp_path, bsdtar=fmt == "bsdtar")
    assert got[b"neg"].mtime_ns < 0 and got[b"y2100"].mtime_ns == times["y2100"]
    if IS_ROOT:
        assert (got[b"bigid"].uid, got[b"bigid"].gid) == (3_000_000_000, 2_500_000_000)
        assert (got[b"midid"].uid, got[b"midid"].gid) == (2_097_152, 16_777_216)


@pytest.mark.parametrize("fmt", ["gnu", "posix"])
def test_mtime_after_2262(mount, tmp_path, fmt):
    """A member dated 2300 (ext4 keeps it, GNU tar stores and restores it).  Nanoseconds
    since 1970 overflow int64 after 2262-04-11: the mount must not wrap around to 1715."""
    times = {"y2300": 10_413_792_000_000_000_000}
    archive = odd_times_archive(tmp_path, fmt, times, False)
    with mount(archive) as m:
        st = os.stat(os.path.join(m.path, "y2300"))
        assert st.st_mtime_ns == times["y2300"], st.st_mtime_ns


# ---- repeated paths --------------------------------------------------------------------------

def test_appended_versions(mount, tmp_path):
    """tar -r of a changed file: the mount shows the last version, like extraction."""
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    f = src / "d" / "file.txt"
    archive = tmp_path / "a.tar"
    f.write_bytes(b"version 1, the longest of them all\n" * 100)
    (src / "d" / "other").write_bytes(b"other\n")
    run("tar", "cf", archive, "-C", src, "d")
    for i, data in enumerate([b"version 2\n", b"", b"version 4, last\n" * 7], start=2):
        f.write_bytes(data)
        os.chmod(f, 0o600 + i)
        os.utime(f, (1_500_000_000 + i, 1_500_000_000 + i))
        run("tar", "rf", archive, "-C", src, "d/file.txt")
    # and the folder again (tar -r of a folder re-adds it with its children)
    (src / "d" / "late").write_bytes(b"added with the second copy of d\n")
    run("tar", "rf", archive, "-C", src, "d")
    got = check(mount, archive, tmp_path, check_root=False)
    assert got[b"d/file.txt"].size == len(b"version 4, last\n" * 7)
    assert got[b"d/file.txt"].mode == 0o604
    assert {b"d/other", b"d/late"} <= set(got)
    listed = run("tar", "tf", archive).stdout.split()
    assert listed.count(b"d/file.txt") == 5


def test_hard_link_to_overwritten_path(mount, tmp_path):
    """A hard link made before its target is overwritten keeps the old data (as when GNU tar
    extracts it: the link shares the old inode, the new file is a new one)."""
    archive = tmp_path / "h.tar"
    with tarfile.open(archive, "w", format=tarfile.GNU_FORMAT) as t:
        def add(name, data=None, **kw):
            ti = tarfile.TarInfo(name)
            ti.mtime = 1_600_000_000
            for k, v in kw.items():
                setattr(ti, k, v)
            if data is not None:
                ti.size = len(data)
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
        add("f", b"old data\n", mode=0o644)
        add("link1", type=tarfile.LNKTYPE, linkname="f", mode=0o644)
        add("f", b"new data, longer\n", mode=0o640)
        add("link2", type=tarfile.LNKTYPE, linkname="f", mode=0o640)
        add("chain", type=tarfile.LNKTYPE, linkname="link1", mode=0o644)
    got = check(mount, archive, tmp_path, check_root=False)
    assert got[b"link1"].ino == got[b"chain"].ino != got[b"f"].ino == got[b"link2"].ino
    assert got[b"link1"].nlink == 2 and got[b"f"].nlink == 2


def test_file_replaced_by_folder(mount, tmp_path):
    archive = tmp_path / "r.tar"
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as t:
        for name, kind, data in (("x", tarfile.REGTYPE, b"a file first\n"),
                                 ("x", tarfile.DIRTYPE, None),
                                 ("x/inside", tarfile.REGTYPE, b"inside the folder\n"),
                                 ("y/z", tarfile.REGTYPE, b"y is a folder first\n"),
                                 ("y", tarfile.SYMTYPE, None)):
            ti = tarfile.TarInfo(name)
            ti.type = kind
            ti.mtime = 1_600_000_000
            ti.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
            if kind == tarfile.SYMTYPE:
                ti.linkname = "x"
            if data:
                ti.size = len(data)
            t.addfile(ti, io.BytesIO(data) if data else None)
    with mount(archive) as m:
        got = snapshot(m.path)
        assert got[b"x"].kind == "dir"
        assert open(os.path.join(m.path, "x/inside"), "rb").read() == b"inside the folder\n"
        # the last member for y is a symlink (GNU tar would refuse to replace the non-empty
        # folder; the mount shows the last version of each path)
        assert got[b"y"].kind == "symlink" and got[b"y"].link == b"x"
        assert open(os.path.join(m.path, "y/inside"), "rb").read() == b"inside the folder\n"


@pytest.mark.skipif(not IS_ROOT, reason="mknod needs root")
def test_hard_links_to_special_files(mount, tmp_path):
    """Hard links to a symlink (GNU tar stores them as links), a FIFO and a device."""
    src = tmp_path / "src"
    src.mkdir()
    os.symlink("target-of-sym", src / "sym")
    os.link(src / "sym", src / "sym-hard", follow_symlinks=False)
    os.mkfifo(src / "fifo")
    os.link(src / "fifo", src / "fifo-hard")
    os.mknod(src / "dev", 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    os.link(src / "dev", src / "dev-hard")
    archive = tmp_path / "h.tar"
    run("tar", "cf", archive, "-C", src, ".")
    got = check(mount, archive, tmp_path)
    assert got[b"sym-hard"].ino == got[b"sym"].ino and got[b"sym-hard"].link == b"target-of-sym"


def test_gnu_and_pax_special_headers(mount, tmp_path):
    """GNU incremental dumpdirs ('D'), a volume label ('V', skipped), and a PAX global header
    whose uid and mtime apply to every later member."""
    src = tmp_path / "src"
    (src / "d" / "e").mkdir(parents=True)
    (src / "d" / "f").write_bytes(b"1\n")
    (src / "d" / "e" / "g").write_bytes(b"2\n")
    inc = tmp_path / "inc.tar"
    run("tar", "-g", tmp_path / "snapshot", "-cf", inc, "-C", src, "d")
    assert b"D" in bytes(open(inc, "rb").read()[156:157])  # the first member is a dumpdir
    got = check(mount, inc, tmp_path, check_root=False)
    assert got[b"d/e"].kind == "dir" and got[b"d/e/g"].size == 2

    vol = tmp_path / "vol.tar"
    run("tar", "-V", "My Label", "-cf", vol, "-C", src, "d")
    got = check(mount, vol, tmp_path, check_root=False)
    assert set(got) == {b".", b"d", b"d/f", b"d/e", b"d/e/g"}

    glob = tmp_path / "glob.tar"
    with tarfile.open(glob, "w", format=tarfile.PAX_FORMAT,
                      pax_headers={"comment": "global", "uid": "4242",
                                   "mtime": "1234567890.5"}) as t:
        for n in ("a", "b"):
            ti = tarfile.TarInfo(n)
            ti.size = 2
            ti.mtime = 1_600_000_000
            t.addfile(ti, io.BytesIO(b"x\n"))
    got = check(mount, glob, tmp_path, check_root=False)
    assert got[b"a"].mtime_ns == 1_234_567_890_500_000_000
    if IS_ROOT:
        assert got[b"b"].uid == 4242


# ---- implicit parents ------------------------------------------------------------------------

def test_implicit_parents(mount, tmp_path):
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "c.txt").write_bytes(b"c\n")
    (src / "q" / "r" / "s").mkdir(parents=True)
    (src / "q" / "r" / "s" / "t.txt").write_bytes(b"t\n")
    os.chmod(src / "q", 0o700)
    os.utime(src / "q", (1_234_567_890, 1_234_567_890))
    archive = tmp_path / "i.tar"
    # no member for a/, a/b/, q/r/, q/r/s/; q/ comes after its child
    run("tar", "cf", archive, "--no-recursion", "-C", src, "a/b/c.txt", "q/r/s/t.txt", "q")
    got = check(mount, archive, tmp_path, check_root=False,
                implicit=["a", "a/b", "q/r", "q/r/s"])
    for p in (b"a", b"a/b", b"q/r", b"q/r/s"):
        assert got[p].kind == "dir" and got[p].mode == 0o555, p
    # q's own member arrived later: its metadata wins, its children stay
    assert got[b"q"].mode == 0o700 and got[b"q"].mtime_ns == 1_234_567_890 * 10**9
    assert got[b"q"].nlink == 3
    with mount(archive) as m:
        assert sorted(os.listdir(m.path)) == ["a", "q"]
        assert os.listdir(os.path.join(m.path, "a", "b")) == ["c.txt"]
        # mode 0555 folders are still traversable and listable
        assert os.access(os.path.join(m.path, "a", "b"), os.R_OK | os.X_OK)


# ---- odd names -------------------------------------------------------------------------------

ODD_NAMES = [b"with space", b" leading and trailing ", b"new\nline", b"tab\there",
             b"non-utf8 \xff\xfe\x80", b"latin1 caf\xe9", b"back\\slash", b"quote'\"`$",
             b"glob*?[]", b"-dash", b"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
             b"\x01control\x7f", b"n" * 100, b"w" * 250]


@pytest.mark.parametrize("fmt", ["gnu", "posix", "ustar", "bsdtar"])
def test_odd_names(mount, tmp_path, fmt):
    src = os.fsencode(tmp_path / "src")
    os.makedirs(src)
    names = list(ODD_NAMES)
    if fmt == "ustar":
        names = [n for n in names if len(n) <= 40]  # the link names must fit 100 bytes
    for i, n in enumerate(names):
        os.makedirs(os.path.join(src, n + b".d"))
        with open(os.path.join(src, n + b".d", n), "wb") as f:
            f.write(b"%d %s\n" % (i, n))
        os.symlink(n + b".d/" + n, os.path.join(src, b"link to " + n[:240]))
    if fmt != "ustar":
        # a 300+-byte path of 100-byte components, and a 255-byte name in it
        deep = os.path.join(src, b"x" * 100, b"y" * 100, b"z" * 100)
        os.makedirs(deep)
        with open(os.path.join(deep, b"v" * 255), "wb") as f:
            f.write(b"deep\n")
    archive = tmp_path / f"names-{fmt}.tar"
    if fmt == "bsdtar":
        require_tool("bsdtar")
        run("bsdtar", "cf", archive, "-C", src, ".")
    else:
        run("tar", "cf", archive, f"--format={fmt}", "-C", src, ".")
    got = check(mount, archive, tmp_path, bsdtar=fmt == "bsdtar")
    for n in names:
        assert n + b".d/" + n in got, n
    if fmt != "ustar":
        assert b"/".join([b"x" * 100, b"y" * 100, b"z" * 100, b"v" * 255]) in got


def test_ustar_fields_exactly_full(mount, tmp_path):
    """ustar and v7 names of exactly 100 bytes (no NUL in the name field), a 155-byte prefix,
    and a 100-byte symlink target (no NUL in the linkname field)."""
    src = tmp_path / "src"
    prefix = "p" * 70 + "/" + "q" * 84   # 155 bytes
    (src / prefix).mkdir(parents=True)
    (src / prefix / ("m" * 100)).write_bytes(b"prefix and name full\n")
    (src / ("n" * 99)).write_bytes(b"99\n")
    os.symlink("t" * 100, src / "link100")
    for fmt, names in (("ustar", [prefix, prefix + "/" + "m" * 100, "n" * 99, "link100"]),
                       ("v7", ["n" * 99, "link100"]), ("gnu", [prefix + "/" + "m" * 100])):
        archive = tmp_path / f"full-{fmt}.tar"
        top = ["p" * 70] if fmt != "v7" else []
        run("tar", "cf", archive, f"--format={fmt}", "-C", src, *top, "n" * 99, "link100")
        got = check(mount, archive, tmp_path, check_root=False)
        for n in names:
            assert os.fsencode(n) in got, (fmt, n)
        assert got[b"link100"].link == b"t" * 100


# ---- sparse files ----------------------------------------------------------------------------

def make_sparse(folder):
    """Sparse files: 10 data extents (more than a GNU header holds: extension headers),
    data at odd offsets, a hole at the end, an all-hole file, a dense file."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "ten"), "wb") as f:
        for i in range(10):
            f.seek(i * 1_048_576 + i * 4096 + 17 * i)
            f.write(semi_random(3000 + 1000 * i, i))
        f.truncate(12 * 1_048_576 + 5)
    with open(os.path.join(folder, "hole-at-end"), "wb") as f:
        f.write(random_bytes(70_000, 1))
        f.truncate(3_000_000)
    with open(os.path.join(folder, "dense"), "wb") as f:
        f.write(random_bytes(10_000, 2))


SPARSE = {
    "gnu": ["tar", "--format=gnu", "--sparse"],
    "oldgnu": ["tar", "--format=oldgnu", "--sparse"],
    "pax-0.0": ["tar", "--format=posix", "--sparse", "--sparse-version=0.0"],
    "pax-0.1": ["tar", "--format=posix", "--sparse", "--sparse-version=0.1"],
    "pax-1.0": ["tar", "--format=posix", "--sparse", "--sparse-version=1.0"],
    "bsdtar": ["bsdtar"],
}


@pytest.mark.parametrize("kind", sorted(SPARSE))
def test_sparse(mount, tmp_path, kind):
    argv = SPARSE[kind]
    require_tool(argv[0])
    src = tmp_path / "src"
    make_sparse(src)
    archive = tmp_path / f"sparse-{kind}.tar"
    run(*argv, "-cf", archive, "-C", src, ".")
    # the archive really is sparse (else this tests nothing)
    assert os.path.getsize(archive) < 2_000_000
    got = check(mount, archive, tmp_path, bsdtar=kind == "bsdtar")
    assert got[b"ten"].size == 12 * 1_048_576 + 5
    assert got[b"hole-at-end"].size == 3_000_000
    with mount(archive) as m:
        want = open(src / "ten", "rb").read()
        fd = os.open(os.path.join(m.path, "ten"), os.O_RDONLY)
        try:
            for i in range(10):
                start = i * 1_048_576 + i * 4096 + 17 * i
                end = start + 3000 + 1000 * i
                for off, n in ((start - 1, 2), (start - 100, 4000), (end - 1, 2),
                               (end - 7, 131_072), (start + 511, 513), (start - 65_536, 70_000)):
                    off = max(off, 0)
                    assert os.pread(fd, n, off) == want[off:off + n], (i, off, n)
            assert os.pread(fd, 10, len(want) - 3) == want[-3:]
        finally:
            os.close(fd)


@pytest.mark.parametrize("kind", sorted(SPARSE))
def test_sparse_all_hole(mount, tmp_path, kind):
    """A sparse file with no data at all (a sparse map of no extents, or one empty extent)
    must read as zeros -- not as the archive bytes that follow its header."""
    argv = SPARSE[kind]
    require_tool(argv[0])
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "all-hole", "wb") as f:
        f.truncate(1_048_576)
    (src / "next").write_bytes(b"the member after the hole\n" * 100)
    archive = tmp_path / f"hole-{kind}.tar"
    run(*argv, "-cf", archive, "-C", src, "all-hole", "next")
    assert os.path.getsize(archive) < 100_000
    with mount(archive) as m:
        p = os.path.join(m.path, "all-hole")
        assert os.stat(p).st_size == 1_048_576
        data = open(p, "rb").read()
        assert len(data) == 1_048_576
        assert data == bytes(1_048_576), f"non-zero bytes: {data[:data.find(bytes(64))][:80]!r}"
        assert open(os.path.join(m.path, "next"), "rb").read() == \
            b"the member after the hole\n" * 100


def test_sparse_over_8_gib(mount, tmp_path):
    """A 9 GiB sparse file: sizes past the 8 GiB octal limit (GNU base-256, PAX realsize)."""
    src = tmp_path / "src"
    src.mkdir()
    marks = {0: b"head" * 1000, 8 * 2**30 + 12345: b"middle" * 100, 9 * 2**30 - 100: b"tail" * 25}
    with open(src / "big", "wb") as f:
        for off, data in marks.items():
            f.seek(off)
            f.write(data)
    for fmt in ("gnu", "posix"):
        archive = tmp_path / f"big-{fmt}.tar"
        run("tar", "cf", archive, f"--format={fmt}", "--sparse", "-C", src, "big")
        assert os.path.getsize(archive) < 100_000
        with mount(archive) as m:
            p = os.path.join(m.path, "big")
            assert os.stat(p).st_size == 9 * 2**30
            fd = os.open(p, os.O_RDONLY)
            try:
                for off, data in marks.items():
                    assert os.pread(fd, len(data), off) == data, (fmt, off)
                    if off:
                        assert os.pread(fd, 8, off - 8) == b"\0" * 8
                assert os.pread(fd, 100, 2**33) == b"\0" * 100
                assert os.pread(fd, 100, 9 * 2**30) == b""
            finally:
                os.close(fd)


# ---- devices and FIFOs -----------------------------------------------------------------------

@pytest.mark.skipif(not IS_ROOT, reason="mknod needs root")
@pytest.mark.parametrize("fmt", ["gnu", "posix", "ustar", "bsdtar"])
def test_devices_and_fifo(mount, tmp_path, fmt):
    src = tmp_path / "src"
    src.mkdir()
    os.mknod(src / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(src / "disk", 0o660 | stat.S_IFBLK, os.makedev(259, 70000))
    os.mknod(src / "tty", 0o620 | stat.S_IFCHR, os.makedev(136, 4))
    os.mkfifo(src / "fifo", 0o640)
    archive = tmp_path / f"dev-{fmt}.tar"
    if fmt == "bsdtar":
        require_tool("bsdtar")
        run("bsdtar", "cf", archive, "-C", src, ".")
    else:
        run("tar", "cf", archive, f"--format={fmt}", "-C", src, ".")
    got = check(mount, archive, tmp_path, bsdtar=fmt == "bsdtar")
    assert got[b"disk"].kind == "blk" and got[b"disk"].rdev == os.makedev(259, 70000)
    assert got[b"null"].kind == "chr" and got[b"null"].rdev == os.makedev(1, 3)
    assert got[b"fifo"].kind == "fifo" and got[b"fifo"].mode == 0o640


# ---- names that try to leave the mount -------------------------------------------------------

def test_names_never_escape(mount, tmp_path):
    """'./', leading '/', '..' and '//' in member names: normalised inside the mount ('..'
    drops the component before it, never climbing above the root)."""
    archive = tmp_path / "evil.tar"
    members = [
        ("./", tarfile.DIRTYPE, None, ""),
        ("./dot.txt", tarfile.REGTYPE, b"dot\n", ""),
        ("/abs/file.txt", tarfile.REGTYPE, b"absolute\n", ""),
        ("../escape.txt", tarfile.REGTYPE, b"escape\n", ""),
        ("../../../../etc/passwd-x", tarfile.REGTYPE, b"not /etc\n", ""),
        ("sub/../up.txt", tarfile.REGTYPE, b"up\n", ""),
        ("x/./y//z.txt", tarfile.REGTYPE, b"z\n", ""),
        ("//double/lead.txt", tarfile.REGTYPE, b"lead\n", ""),
        ("deep/a/b/../../../../../../top.txt", tarfile.REGTYPE, b"top\n", ""),
        ("hard", tarfile.LNKTYPE, None, "../escape.txt"),
        ("sym", tarfile.SYMTYPE, None, "../../../etc/passwd"),
        ("..", tarfile.DIRTYPE, None, ""),
        ("../", tarfile.DIRTYPE, None, ""),
    ]
    with tarfile.open(archive, "w", format=tarfile.GNU_FORMAT) as t:
        for name, kind, data, link in members:
            ti = tarfile.TarInfo(name)
            ti.type = kind
            ti.mtime = 1_600_000_000
            ti.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
            ti.linkname = link
            if data:
                ti.size = len(data)
            t.addfile(ti, io.BytesIO(data) if data else None)
    # tarfile keeps names as given (else this tests nothing)
    assert "/abs/file.txt" in tarfile.open(archive).getnames()
    expected = {
        b"dot.txt": b"dot\n", b"abs/file.txt": b"absolute\n", b"escape.txt": b"escape\n",
        b"etc/passwd-x": b"not /etc\n", b"up.txt": b"up\n", b"x/y/z.txt": b"z\n",
        b"double/lead.txt": b"lead\n", b"top.txt": b"top\n", b"hard": b"escape\n",
    }
    dirs = {b".", b"abs", b"etc", b"x", b"x/y", b"double"}
    with mount(archive, allow_errors=False) as m:
        got = snapshot(m.path)
        assert set(got) == set(expected) | dirs | {b"sym"}, sorted(got)
        for p, data in expected.items():
            assert open(os.path.join(os.fsencode(m.path), p), "rb").read() == data, p
        for p in dirs:
            assert got[p].kind == "dir", p
        assert got[b"hard"].ino == got[b"escape.txt"].ino
        # symlinks are returned verbatim
        assert got[b"sym"].link == b"../../../etc/passwd"
        real = os.path.realpath(m.path)
        for dirpath, dirnames, filenames in os.walk(m.path):
            for n in dirnames + filenames:
                assert n not in (".", "..", "") and "/" not in n
                assert os.path.realpath(os.path.join(dirpath, n)).startswith(real + "/") or \
                    n == "sym"
    # nothing appeared beside the mount point or above it
    for d in (tmp_path, tmp_path.parent):
        for n in ("escape.txt", "top.txt", "etc", "passwd-x", "abs", "double"):
            assert not os.path.lexists(d / n), d / n
