"""Plain (uncompressed) tar archives, mounted and compared with what GNU tar extracts.

The standard test tree (conftest.make_tree) is archived by GNU tar in the gnu, posix, ustar
and v7 formats and by bsdtar (its default restricted pax, and gnutar); every path, type,
mode, owner, size, mtime, device number, symlink target, link count, user.* xattr (posix
and bsdtar), hard-link inode identity and every byte must match GNU tar's extraction.
Then: reads at odd offsets and lengths, a folder of thousands of entries (readdir offsets,
seekdir/telldir resume, ls, find), every kind of write refused with EROFS, statfs, an
empty archive.
"""
import ctypes
import errno
import os
import stat
import subprocess

import pytest

from conftest import (archive_mtimes, compare_trees, gnu_extract, make_tree, random_bytes,
                      require_tool, run, snapshot, user_xattrs_supported)

IS_ROOT = os.geteuid() == 0

# name: (archiver argv before "-cf ARCHIVE -C SRC .", long names the format can store,
#        stores xattrs, stores devices/FIFOs)
FORMATS = {
    "gnu": (["tar", "--format=gnu"], "all", False, True),
    "posix": (["tar", "--format=posix", "--xattrs"], "all", True, True),
    "ustar": (["tar", "--format=ustar"], "ustar", False, True),
    "v7": (["tar", "--format=v7"], "none", False, False),
    "bsdtar": (["bsdtar"], "all", True, True),
    "bsdtar-gnutar": (["bsdtar", "--format=gnutar"], "all", False, True),
}


def build(tmp_path, fmt, xattr_dir=None):
    argv, long_names, xattrs, specials = FORMATS[fmt]
    require_tool(argv[0])
    base = xattr_dir if (xattrs and xattr_dir) else tmp_path
    src = os.path.join(base, "src-" + fmt)
    make_tree(src, long_names=long_names, specials=specials and IS_ROOT,
              xattrs=xattrs and xattr_dir is not None)
    archive = os.path.join(base, fmt + ".tar")
    run(*argv, "-cf", archive, "-C", src, ".")
    return src, archive


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_format_matches_gnu_extraction(mount, tmp_path, xattr_dir, fmt):
    src, archive = build(tmp_path, fmt, xattr_dir)
    ref = tmp_path / "ref"
    gnu_extract(archive, ref)
    bsd = fmt.startswith("bsdtar")
    with mount(archive) as m:
        got = compare_trees(m.path, ref, dir_mtimes=not bsd)
        if bsd:
            # GNU tar sets a folder's mtime before bsdtar's archive order lets it extract the
            # folder's children: check folders against what the archive's headers say.
            want = archive_mtimes(archive)
            for p, n in got.items():
                if n.kind == "dir" and p != b".":
                    assert n.mtime_ns == want[p], p
    # the comparison saw what it should have: not a vacuous pass
    kinds = {n.kind for n in got.values()}
    assert {"file", "dir", "symlink"} <= kinds
    if FORMATS[fmt][3] and IS_ROOT:
        assert {"fifo", "chr", "blk"} <= kinds
    assert got[b"links/hard1"].nlink == 3
    assert got[b"links/hard1"].ino == got[b"links/target"].ino == got[b"links/other/hard2"].ino
    assert got[b"modes/setuid"].mode == 0o4755 and got[b"sticky"].mode == 0o1777
    if IS_ROOT:
        assert (got[b"owners/file"].uid, got[b"owners/file"].gid) == (1234, 5678)
    if fmt == "posix":
        # pax records carry nanoseconds; GNU tar restores them, so must the mount
        assert sum(1 for n in got.values() if n.mtime_ns % 10**9) > 20
    if FORMATS[fmt][2] and xattr_dir is not None:
        assert got[b"one"].xattrs == {"user.binary": bytes(range(256)), "user.comment": b"hello",
                                      "user.empty": b""}
        assert got[b"dir"].xattrs == {"user.folder": b"a folder"}
    if FORMATS[fmt][1] != "none":
        assert b"long/" + b"n" * 100 in got
        assert got[b"long/" + b"p" * 70 + b"/" + b"q" * 77 + b"/" + b"m" * 100].kind == "file"


def test_compare_trees_catches_differences(tmp_path):
    """The comparison itself must notice each kind of difference (else the tests above
    could pass vacuously)."""
    a = make_tree(tmp_path / "a", specials=IS_ROOT)
    compare_trees(a, a)

    def differs(change):
        b = tmp_path / ("b" + str(differs.n))
        differs.n += 1
        run("cp", "-a", a, b)
        change(os.fsencode(b))
        with pytest.raises(AssertionError):
            compare_trees(a, b)
    differs.n = 0

    def flip_byte(b):
        p = os.path.join(b, b"dir/random.bin")
        st = os.stat(p)
        with open(p, "r+b") as f:
            f.seek(123_457)
            c = f.read(1)
            f.seek(123_457)
            f.write(bytes([c[0] ^ 1]))
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))

    def break_link(b):
        p = os.path.join(b, b"links/hard1")
        data = open(p, "rb").read()
        st = os.stat(p)
        os.unlink(p)
        open(p, "wb").write(data)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))

    differs(flip_byte)
    differs(break_link)
    differs(lambda b: os.chmod(os.path.join(b, b"one"), 0o640))
    differs(lambda b: os.utime(os.path.join(b, b"one"), ns=(1, 1_600_000_000_123_456_788)))
    differs(lambda b: os.unlink(os.path.join(b, b"links/rel")) or
            os.symlink(b"dir/sub/deep/file.txT", os.path.join(b, b"links/rel")))
    differs(lambda b: os.mkdir(os.path.join(b, b"emptydir/new")))


def test_reads_at_odd_offsets(mount, tmp_path):
    data = random_bytes(1_000_003, 7)
    src = tmp_path / "src"
    src.mkdir()
    (src / "blob").write_bytes(data)
    (src / "small").write_bytes(b"0123456789")
    archive = tmp_path / "a.tar"
    run("tar", "cf", archive, "-C", src, "blob", "small")
    with mount(archive) as m:
        fd = os.open(os.path.join(m.path, "blob"), os.O_RDONLY)
        try:
            assert os.fstat(fd).st_size == len(data)
            n = len(data)
            for off in (0, 1, 511, 512, 513, 4095, 4096, 4097, 65535, 131071, 131072, 131073,
                        n // 2 + 1, n - 4097, n - 512, n - 1, n, n + 1, n + 100_000):
                for length in (1, 7, 511, 4097, 131_073, 300_001):
                    got = os.pread(fd, length, off)
                    assert got == data[off:off + length], (off, length)
            # backwards, and the kernel's page cache dropped in between
            for off in range(n - 77_777, 0, -77_777):
                assert os.pread(fd, 1234, off) == data[off:off + 1234], off
        finally:
            os.close(fd)
        with open(os.path.join(m.path, "small"), "rb") as f:
            assert f.read() == b"0123456789"
            f.seek(9)
            assert f.read(5) == b"9"
            f.seek(10)
            assert f.read(5) == b""


class Dirent(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.opendir.restype = ctypes.c_void_p
    libc.opendir.argtypes = [ctypes.c_char_p]
    libc.readdir64.restype = ctypes.POINTER(Dirent)
    libc.readdir64.argtypes = [ctypes.c_void_p]
    libc.telldir.restype = ctypes.c_long
    libc.telldir.argtypes = [ctypes.c_void_p]
    libc.seekdir.restype = None
    libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
    libc.rewinddir.restype = None
    libc.rewinddir.argtypes = [ctypes.c_void_p]
    libc.closedir.argtypes = [ctypes.c_void_p]
    return libc


def read_rest(libc, d):
    """[(name, d_type, telldir after it)] until the end of the directory stream."""
    out = []
    while True:
        ctypes.set_errno(0)
        e = libc.readdir64(d)
        if not e:
            assert ctypes.get_errno() == 0, os.strerror(ctypes.get_errno())
            return out
        out.append((e.contents.d_name, e.contents.d_type, libc.telldir(d)))


def test_readdir_thousands(mount, tmp_path):
    """One folder of 3000 entries with names of varied length (so replies end at varied
    places): listdir, readdir resume at many offsets (seekdir/telldir), ls -la, find."""
    src = tmp_path / "src"
    big = src / "big"
    big.mkdir(parents=True)
    names = []
    for i in range(3000):
        name = f"{i:05d}-" + "x" * (i * 37 % 200)
        names.append(name)
        if i % 10 == 0:
            (big / name).mkdir()
        else:
            (big / name).write_bytes(b"%d\n" % i)
    archive = tmp_path / "big.tar"
    run("tar", "cf", archive, "-C", src, ".")
    ref = tmp_path / "ref"
    gnu_extract(archive, ref)
    with mount(archive) as m:
        path = os.path.join(m.path, "big")
        assert sorted(os.listdir(path)) == sorted(names)
        compare_trees(m.path, ref)

        libc = _libc()
        d = libc.opendir(os.fsencode(path))
        assert d, os.strerror(ctypes.get_errno())
        try:
            first = read_rest(libc, d)
            got = [n for n, _, _ in first]
            assert sorted(got) == sorted([b".", b".."] + [os.fsencode(n) for n in names])
            for name, dtype, _ in first:
                if name not in (b".", b".."):
                    want = 4 if int(name[:5]) % 10 == 0 else 8  # DT_DIR, DT_REG
                    assert dtype == want, name
            # resume after entry k from its telldir position
            for k in (0, 1, 2, 3, 57, 500, 1001, 1999, 2500, len(first) - 2, len(first) - 1):
                libc.seekdir(d, first[k][2])
                rest = [n for n, _, _ in read_rest(libc, d)]
                assert rest == got[k + 1:], f"resuming after entry {k}"
            libc.rewinddir(d)
            assert [n for n, _, _ in read_rest(libc, d)] == got
        finally:
            libc.closedir(d)

        ls = run("ls", "-la", path).stdout.decode().splitlines()
        assert ls[0].startswith("total ")
        assert len(ls) == 1 + 2 + len(names)
        assert sum(1 for line in ls if line.startswith("d")) == 2 + 300
        found = run("find", m.path, "-print0").stdout.split(b"\0")[:-1]
        assert len(found) == 1 + 1 + len(names)
        # ls -f (getdents in large buffers, no sorting) in a fresh process
        assert len(run("ls", "-f", path).stdout.splitlines()) == 2 + len(names)


def test_ls_and_find_agree_with_extraction(mount, tmp_path):
    src = tmp_path / "src"
    make_tree(src, specials=IS_ROOT)
    archive = tmp_path / "t.tar"
    run("tar", "cf", archive, "-C", src, ".")
    ref = tmp_path / "ref"
    gnu_extract(archive, ref)
    fmt = "%P\\t%y\\t%m\\t%U\\t%G\\t%T@\\t%l\\t%n\\n"
    with mount(archive) as m:
        for args in ([], ["!", "-type", "d", "-printf", "%P\\t%s\\n"]):
            a = run("find", m.path, *(args or ["-printf", fmt])).stdout
            b = run("find", ref, *(args or ["-printf", fmt])).stdout
            assert sorted(a.split(b"\n")) == sorted(b.split(b"\n"))
        ls = run("ls", "-laR", "--time-style=full-iso", "-n", m.path).stdout.decode()
        assert "setuid" in ls and "-rwsr-xr-x" in ls
        assert "rel -> dir/sub/deep/file.txt" in ls


def test_copy_out_and_mmap(mount, tmp_path):
    """What users do with a mount: cp -a it somewhere (the copy must equal GNU tar's
    extraction) and mmap its files."""
    import mmap
    src = tmp_path / "src"
    make_tree(src, specials=IS_ROOT)
    archive = tmp_path / "t.tar"
    run("tar", "cf", archive, "-C", src, ".")
    ref = tmp_path / "ref"
    gnu_extract(archive, ref)
    copy = tmp_path / "copy"
    with mount(archive) as m:
        run("cp", "-a", m.path, copy)
        with open(os.path.join(m.path, "dir/random.bin"), "rb") as f:
            with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
                want = (src / "dir" / "random.bin").read_bytes()
                assert mm[:] == want
                assert mm[123_457:200_001] == want[123_457:200_001]
    # cp -a keeps everything but the root's metadata (cp sets it from the mount's root)
    compare_trees(copy, ref, check_root=False)


def test_writes_are_refused(mount, tmp_path):
    src = tmp_path / "src"
    make_tree(src, long_names="none", xattrs=user_xattrs_supported(tmp_path))
    archive = tmp_path / "t.tar"
    run("tar", "cf", archive, "-C", src, ".")
    with mount(archive) as m:
        f = os.path.join(m.path, "one")
        d = os.path.join(m.path, "dir")

        def refused(fn, *args, codes=(errno.EROFS,)):
            with pytest.raises(OSError) as e:
                fn(*args)
            assert e.value.errno in codes, f"{fn.__name__}{args}: {e.value}"

        refused(os.open, f, os.O_WRONLY)
        refused(os.open, f, os.O_RDWR)
        refused(os.open, f, os.O_RDONLY | os.O_TRUNC)
        refused(os.open, os.path.join(d, "new"), os.O_WRONLY | os.O_CREAT, 0o644)
        refused(os.open, f, os.O_WRONLY | os.O_APPEND)
        refused(os.mkdir, os.path.join(d, "newdir"))
        refused(os.rmdir, os.path.join(m.path, "emptydir"))
        refused(os.unlink, f)
        refused(os.rename, f, os.path.join(d, "moved"))
        refused(os.symlink, "x", os.path.join(d, "sl"))
        refused(os.link, f, os.path.join(d, "hl"))
        refused(os.mkfifo, os.path.join(d, "fifo"))
        refused(os.chmod, f, 0o777)
        refused(os.chown, f, 1, 1)
        refused(os.utime, f, (1, 1))
        refused(os.utime, f)  # touch
        refused(os.truncate, f, 0)
        refused(os.setxattr, f, "user.new", b"v")
        refused(os.removexattr, f, "user.comment", codes=(errno.EROFS, errno.ENODATA))
        for argv in (["touch", f], ["touch", os.path.join(d, "newfile")], ["chmod", "777", f],
                     ["setfattr", "-n", "user.x", "-v", "1", f], ["mkdir", d + "/x"]):
            if not os.path.exists("/usr/bin/" + argv[0]) and not os.path.exists("/bin/" + argv[0]):
                continue
            r = run(*argv, check=False)
            assert r.returncode != 0, argv
            assert b"Read-only file system" in r.stderr, (argv, r.stderr)
        # and nothing changed
        assert open(f, "rb").read() == b"x"
        assert not os.path.exists(os.path.join(d, "new"))


def test_statfs(mount, tmp_path):
    src = tmp_path / "src"
    make_tree(src)
    archive = tmp_path / "t.tar"
    run("tar", "cf", archive, "-C", src, ".")
    with mount(archive) as m:
        sv = os.statvfs(m.path)
        assert sv.f_flag & os.ST_RDONLY
        assert sv.f_namemax >= 255
        entries = len(snapshot(m.path, xattrs=False))
        assert sv.f_files >= entries
        assert sv.f_bsize > 0 and sv.f_frsize > 0
        # the data must fit in what statfs calls the size of the filesystem
        assert sv.f_blocks * sv.f_frsize >= 300_000 + 70_000
        assert sv.f_bfree == 0 and sv.f_bavail == 0
        r = run("df", "-P", m.path)
        assert "tarseek" in r.stdout.decode()
        r = run("stat", "-f", m.path)
        assert b"fuse" in r.stdout


def test_empty_archive(mount, tmp_path):
    archive = tmp_path / "e.tar"
    run("tar", "cf", archive, "-T", "/dev/null")
    assert os.path.getsize(archive) >= 1024
    with mount(archive) as m:
        assert os.listdir(m.path) == []
        st = os.stat(m.path)
        assert stat.S_ISDIR(st.st_mode)
        assert run("find", m.path).stdout.splitlines() == [os.fsencode(m.path)]
    # bsdtar's empty archive too
    if os.path.exists("/usr/bin/bsdtar"):
        archive2 = tmp_path / "e2.tar"
        subprocess.run(["bsdtar", "cf", archive2, "-T", "/dev/null"], check=True)
        with mount(archive2) as m:
            assert os.listdir(m.path) == []
