"""Hostile input that is not damage (issue 6, parts 3, 4 and 7).

Hostile names: members named ../../etc/x, /abs, a/../../b, with odd bytes, paths of 4 KiB,
components longer than 255 (and 1024) bytes, a symlink loop, hard links to themselves, a
hard-link chain of 1000, a hard-link cycle, hard links to missing members and to folders.
Nothing may appear outside the mount point, every lookup and listing ends (each runs with a
deadline: a hang kills the daemon and fails the test), and the daemon answers afterwards.

Hostile indexes: truncated, bytes flipped, another archive's index, an older format, an
index in a shared folder owned by another user, and checkpoint rows tampered with through
SQLite (CRCs, aux blobs, offsets, lengths, codec fields) while meta stays complete and valid
(a seeded sample of the codecs x tamperings in the default suite, every case in the slow one).
tarseek must rebuild, refuse with a message, or (tampered checkpoints) mount and then fail
reads with EIO -- never crash, never read out of bounds (run the suite with an
-Db_sanitize=address,undefined build: a sanitizer report fails the test), never serve
wrong bytes.

Permissions: without allow_other only the mounting user gets in (FUSE's default); with
-o allow_other, default_permissions is on, so the kernel enforces the archive's modes and
owners for other users.
"""
import errno
import io
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import tarfile
import tempfile
import threading
import time

import pytest

from conftest import (SANITIZER_MARKS, TARSEEK, is_mounted, print_past_capture, random_bytes,
                      require_codec, require_tool, run, sample_cases, semi_random)

IS_ROOT = os.geteuid() == 0
NOBODY = 65534


# ---- helpers ---------------------------------------------------------------------------------

def with_deadline(fn, proc, timeout=30, what="the operation"):
    """Runs fn() on a thread; if it has not returned after timeout seconds, kills the daemon
    proc (which aborts its pending requests, so the thread comes back) and fails."""
    box = {}

    def body():
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the caller
            box["error"] = e
    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        proc.kill()
        t.join(10)
        raise AssertionError(f"{what} did not finish within {timeout} s (a hang?)")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def add(t, name, kind=tarfile.REGTYPE, data=None, link="", mode=None, uid=0, gid=0):
    """Adds a member to tarfile t with exactly this (possibly hostile) name."""
    ti = tarfile.TarInfo(os.fsdecode(name) if isinstance(name, bytes) else name)
    ti.type = kind
    ti.mtime = 1_600_000_000
    ti.mode = mode if mode is not None else (0o755 if kind == tarfile.DIRTYPE else 0o644)
    ti.uid, ti.gid = uid, gid
    ti.linkname = os.fsdecode(link) if isinstance(link, bytes) else link
    if data is not None:
        ti.size = len(data)
    t.addfile(ti, io.BytesIO(data) if data is not None else None)


def open_tar(path, fmt=tarfile.GNU_FORMAT):
    return tarfile.open(path, "w", format=fmt, encoding="utf-8", errors="surrogateescape")


def alive(m, probe=b"ok.txt", want=b"ok\n"):
    """The daemon still answers: the root lists and a small file reads right."""
    def check():
        os.listdir(m.path)
        with open(os.path.join(os.fsencode(m.path), probe), "rb") as f:
            return f.read()
    assert with_deadline(check, m.proc, 15, "a lookup after the hostile operations") == want
    assert m.proc.poll() is None, "the daemon is gone"


def walk_fd(root, limit=100_000):
    """{relative bytes path: lstat} of everything under root, walking with directory file
    descriptors (paths may be longer than PATH_MAX).  Errors are recorded as ints."""
    out = {}

    def walk(dfd, rel, depth):
        assert depth < 200, "directory depth over 200: a loop?"
        for name in sorted(os.listdir(dfd)):
            b = os.fsencode(name)
            p = rel + b"/" + b if rel else b
            try:
                st = os.stat(b, dir_fd=dfd, follow_symlinks=False)
            except OSError as e:
                out[p] = e.errno
                continue
            out[p] = st
            assert len(out) < limit, "endless listing"
            if stat.S_ISDIR(st.st_mode):
                fd = os.open(b, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
                try:
                    walk(fd, p, depth + 1)
                finally:
                    os.close(fd)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        walk(fd, b"", 0)
    finally:
        os.close(fd)
    return out


def read_at(root, rel):
    """The bytes of root/rel opened component by component (rel may exceed PATH_MAX)."""
    parts = rel.split(b"/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for p in parts[:-1]:
            nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nfd
        ffd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
        try:
            chunks = []
            while True:
                b = os.read(ffd, 1 << 20)
                if not b:
                    return b"".join(chunks)
                chunks.append(b)
        finally:
            os.close(ffd)
    finally:
        os.close(fd)


# ---- hostile names ---------------------------------------------------------------------------

LONG_DIRS = [b"d%02d" % i + b"x" * 197 for i in range(20)]  # 20 x 200 bytes + slashes
LONG_PATH = b"long/" + b"/".join(LONG_DIRS) + b"/file.txt"  # 4,034 bytes


@pytest.fixture
def hostile_names(tmp_path):
    """A GNU tar of hostile names, and {visible path: content} of the files that must read."""
    archive = tmp_path / "names" / "hostile.tar"
    archive.parent.mkdir()
    chain = 1000
    with open_tar(archive) as t:
        add(t, "ok.txt", data=b"ok\n")
        add(t, "../../etc/x", data=b"not in /etc\n")
        add(t, "/abs", data=b"absolute\n")
        add(t, "a/../../b", data=b"b\n")
        add(t, "../../../../../../tmp/tarseek-escape", data=b"escape\n")
        for n in (b"odd/ctl\x01", b"odd/hi\xff\xfe", b"odd/back\\slash", b"odd/new\nline",
                  b"odd/\x7fdel", b"odd/ tab\tspace "):
            add(t, n, data=n + b"\n")
        add(t, LONG_PATH, data=b"a 4 KiB path\n")
        # components longer than NAME_MAX (255) and than FUSE_NAME_MAX (1024)
        add(t, b"toolong/" + b"n" * 256, data=b"256\n")
        add(t, b"toolong/" + b"m" * 1000, data=b"1000\n")
        add(t, b"toolong/" + b"k" * 3000, data=b"3000\n")
        add(t, b"toolong/fine.txt", data=b"fine\n")
        # symlinks going round
        add(t, "loop/a", tarfile.SYMTYPE, link="b")
        add(t, "loop/b", tarfile.SYMTYPE, link="a")
        add(t, "loop/self", tarfile.SYMTYPE, link="self")
        add(t, "loop/up", tarfile.SYMTYPE, link="../loop/up")
        # hard links that go nowhere or round
        add(t, "hl/self", tarfile.LNKTYPE, link="hl/self")
        add(t, "hl/file", data=b"file\n")
        add(t, "hl/file", tarfile.LNKTYPE, link="hl/file")
        add(t, "hl/missing", tarfile.LNKTYPE, link="no/such/member")
        add(t, "hl/cyc1", tarfile.LNKTYPE, link="hl/cyc2")
        add(t, "hl/cyc2", tarfile.LNKTYPE, link="hl/cyc1")
        add(t, "hl/todir", tarfile.LNKTYPE, link="odd")
        add(t, "hl/toroot", tarfile.LNKTYPE, link="/")
        add(t, "hl/dotdot", tarfile.LNKTYPE, link="../../etc/passwd")
        add(t, "chain/f0000", data=b"chained\n")
        for i in range(1, chain):
            add(t, "chain/f%04d" % i, tarfile.LNKTYPE, link="chain/f%04d" % (i - 1))
    must = {b"ok.txt": b"ok\n", b"etc/x": b"not in /etc\n", b"abs": b"absolute\n",
            b"b": b"b\n", b"tmp/tarseek-escape": b"escape\n", LONG_PATH: b"a 4 KiB path\n",
            b"toolong/fine.txt": b"fine\n", b"hl/file": b"file\n",
            b"chain/f0000": b"chained\n", b"chain/f0999": b"chained\n",
            b"chain/f0500": b"chained\n"}
    return archive, must


ESCAPES = ["/etc/x", "/abs", "/b", "/tmp/b", "/tmp/tarseek-escape", "/tmp/x", "/tmp/abs"]


def test_hostile_names(mount, tmp_path, hostile_names):
    archive, must = hostile_names
    outside = [p for p in ESCAPES if os.path.lexists(p)]
    around = {d: set(os.listdir(d)) for d in (tmp_path, tmp_path.parent, archive.parent)}
    with mount(archive, allow_errors=True) as m:
        root = os.fsencode(m.path)
        tree = with_deadline(lambda: walk_fd(m.path), m.proc, 60, "walking the mount")
        for p, data in must.items():
            assert p in tree, (p[:80], sorted(k[:60] for k in tree)[:40])
            got = with_deadline(lambda: read_at(root, p), m.proc, 15, f"reading {p[:40]!r}")
            assert got == data, p[:80]
        # every name is a plain component: no '', '.', '..', no slash
        for p in tree:
            for c in p.split(b"/"):
                assert c not in (b"", b".", b".."), p[:100]
        # odd bytes are kept as they are
        for n in (b"ctl\x01", b"hi\xff\xfe", b"back\\slash", b"new\nline", b"\x7fdel",
                  b" tab\tspace "):
            assert isinstance(tree.get(b"odd/" + n), os.stat_result), n
            assert read_at(root, b"odd/" + n) == b"odd/" + n + b"\n"
        # the 4 KiB path is longer than PATH_MAX from the root of the file system
        assert len(os.path.join(root, LONG_PATH)) > 4096 - 100

        # names longer than NAME_MAX: the folder still lists and its other files read;
        # a long name that is listed either reads right or fails with ENAMETOOLONG (which
        # limit applies is the kernel's: recent FUSE accepts names up to PATH_MAX)
        listing = with_deadline(lambda: os.listdir(os.path.join(root, b"toolong")), m.proc, 15)
        assert b"fine.txt" in listing, listing
        long_want = {b"n" * 256: b"256\n", b"m" * 1000: b"1000\n", b"k" * 3000: b"3000\n"}
        for n in listing:
            if n == b"fine.txt":
                continue
            assert n in long_want, n[:40]
            try:
                got = with_deadline(lambda: read_at(root, b"toolong/" + n), m.proc, 15)
            except OSError as e:
                assert e.errno == errno.ENAMETOOLONG, (len(n), e)
            else:
                assert got == long_want[n], len(n)

        # the symlink loop: readlink answers, following fails with ELOOP, and ends
        lp = os.path.join(root, b"loop")
        assert os.readlink(os.path.join(lp, b"a")) == b"b"
        assert os.readlink(os.path.join(lp, b"b")) == b"a"
        assert os.readlink(os.path.join(lp, b"self")) == b"self"
        for n in (b"a", b"b", b"self", b"up"):
            def follow(n=n):
                with pytest.raises(OSError) as e:
                    os.stat(os.path.join(lp, n))
                return e.value.errno
            assert with_deadline(follow, m.proc, 15, f"stat of loop/{n}") == errno.ELOOP

        # the hard-link chain: one inode with 1000 names, every name reads
        ch = os.path.join(root, b"chain")
        names = with_deadline(lambda: sorted(os.listdir(ch)), m.proc, 30)
        assert len(names) == 1000, len(names)
        inos = set()

        def stat_all():
            for n in names:
                inos.add(os.lstat(os.path.join(ch, n)).st_ino)
        with_deadline(stat_all, m.proc, 30, "stat of 1000 chained hard links")
        assert len(inos) == 1
        assert os.lstat(os.path.join(ch, b"f0999")).st_nlink == 1000

        # hard links to themselves, in a cycle, to nothing, to folders: whatever shows up
        # is not a folder (no directory hard links: a loop for find), and reads end
        hl = os.path.join(root, b"hl")
        for n in with_deadline(lambda: os.listdir(hl), m.proc, 15):
            p = os.path.join(hl, n)
            st = tree[b"hl/" + n]
            assert isinstance(st, os.stat_result), (n, st)
            assert not stat.S_ISDIR(st.st_mode), f"hl/{n!r} is a hard-linked folder"
            if stat.S_ISREG(st.st_mode):
                def rd(p=p):
                    try:
                        with open(p, "rb") as f:
                            return f.read()
                    except OSError as e:
                        return e.errno
                got = with_deadline(rd, m.proc, 15, f"reading hl/{n!r}")
                if n == b"file":
                    assert got == b"file\n"
                else:
                    # no member data is behind these names: they may not read as bytes of
                    # other members or of files outside the mount
                    assert got in (b"", errno.EIO, errno.ENOENT, errno.EINVAL), (n, got)
        hidden = {b"self", b"missing", b"cyc1", b"cyc2", b"todir", b"toroot", b"dotdot"} - \
            set(os.listdir(hl))
        alive(m)
    # a hard link left out is left out with a warning naming it
    for n in hidden:
        assert f"'hl/{n.decode()}'" in m.log(), (n, m.log())
    # nothing appeared outside the mount
    assert [p for p in ESCAPES if os.path.lexists(p)] == outside
    for d, before in around.items():
        new = set(os.listdir(d)) - before
        new = {n for n in new if not n.startswith(("mnt", "tarseek"))}
        assert not new - {"hostile.tar.index.sqlite"}, (d, new)


def test_names_with_4k_paths_in_pax_and_deep_nesting(mount, tmp_path):
    """A pax archive with a 4 KiB path and a folder chain 1,000 levels deep: lookups walk
    it, the daemon answers, the file reads right."""
    archive = tmp_path / "deep.tar"
    deep = b"/".join([b"d"] * 1000) + b"/bottom.txt"
    with open_tar(archive, tarfile.PAX_FORMAT) as t:
        add(t, "ok.txt", data=b"ok\n")
        add(t, LONG_PATH, data=b"pax 4 KiB\n")
        add(t, deep, data=b"bottom\n")
    with mount(archive) as m:
        root = os.fsencode(m.path)
        assert with_deadline(lambda: read_at(root, LONG_PATH), m.proc) == b"pax 4 KiB\n"
        assert with_deadline(lambda: read_at(root, deep), m.proc) == b"bottom\n"
        alive(m)


# ---- hostile indexes -------------------------------------------------------------------------

def tree_files(seed=0):
    files = {"ok.txt": b"ok\n", "a.txt": b"alpha\n" * 5000,
             "b.bin": random_bytes(300_000, seed + 1),
             "c/semi.bin": semi_random(900_000, seed + 2),
             "c/text.bin": semi_random(1_200_000, seed + 3)}
    return files


def make_archive(folder, name, files, compressor=None):
    src = folder / (name + ".src")
    for n, d in files.items():
        (src / n).parent.mkdir(parents=True, exist_ok=True)
        (src / n).write_bytes(d)
    tar = folder / (name + ".tar")
    run("tar", "cf", tar, "--format=gnu", "-C", src, *sorted(files))
    shutil.rmtree(src)
    if not compressor:
        return tar
    argv, suffix = compressor
    out = folder / (name + suffix)
    if argv[0] == "zstd":
        # one frame per 256 KiB (zstd -c writes one frame, which is one checkpoint)
        data = tar.read_bytes()
        with open(out, "wb") as o:
            for i in range(0, len(data), 256 * 1024):
                o.write(subprocess.run(argv, input=data[i:i + 256 * 1024],
                                       capture_output=True, check=True).stdout)
    else:
        with open(tar, "rb") as i, open(out, "wb") as o:
            subprocess.run(argv, stdin=i, stdout=o, check=True)
    tar.unlink()
    return out


def start(archive, mnt, *args, timeout=60):
    """tarseek -f ... with a deadline: (proc, log path, mounted?)."""
    mnt = str(mnt)
    os.makedirs(mnt, exist_ok=True)
    log_path = mnt + ".log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([TARSEEK, "-f", *map(str, args), str(archive), mnt],
                                stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_mounted(mnt):
            return proc, log_path, True
        if proc.poll() is not None:
            return proc, log_path, False
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    raise AssertionError(f"tarseek neither mounted nor gave up within {timeout} s")


def stop(proc, mnt, log_path):
    if is_mounted(str(mnt)):
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("tarseek did not exit after the unmount")
    log = open(log_path, errors="replace").read()
    assert proc.returncode >= 0, f"tarseek died of signal {-proc.returncode}:\n{log}"
    assert proc.returncode == 0, f"tarseek exited with {proc.returncode}:\n{log}"
    check_clean(log)
    return log


def check_clean(log):
    bad = [l for l in log.splitlines() if any(s in l for s in SANITIZER_MARKS)]
    assert not bad, "sanitizer report:\n" + log


def read_members(mnt, files, proc):
    """{name: 'ok' | 'EIO'}; any other errno or wrong bytes fail the test.

    Members are read last first, each starting with reads in its middle and at its end, so
    decoders start at many checkpoints (a sequential pass from the start would run one
    decoder through the archive and never use most of them)."""
    out = {}

    def one(name, want):
        p = os.path.join(mnt, name)
        st = os.stat(p)
        fd = os.open(p, os.O_RDONLY)
        try:
            spots = [len(want) // 2, max(0, len(want) - 5000), len(want) // 3, 0]
            for off in spots:
                got = os.pread(fd, 70_000, off)
                assert got == want[off:off + 70_000], f"{name}: pread at {off} wrong"
            # never more than the member's size and a bit: a tampered index may claim
            # terabytes
            got = b""
            while len(got) <= len(want):
                b = os.read(fd, min(1 << 20, len(want) + 1 - len(got)))
                if not b:
                    break
                got += b
        finally:
            os.close(fd)
        assert got == want, f"{name}: wrong bytes ({len(got)} bytes, want {len(want)})"
        assert st.st_size == len(want), name

    def body():
        for name, want in sorted(files.items(), reverse=True):
            try:
                one(name, want)
            except OSError as e:
                assert e.errno == errno.EIO, f"{name}: errno {e.errno} ({e.strerror}), not EIO"
                out[name] = "EIO"
                continue
            out[name] = "ok"
    with_deadline(body, proc, 60, "reading every member")
    return out


# case -> how it ended, printed at the end of the run
RESULTS = {}




@pytest.fixture(scope="module", autouse=True)
def summary(request, tmp_path_factory):
    yield
    if RESULTS:
        width = max(len(k) for k in RESULTS)
        text = "\nhostile indexes (case -> outcome):\n" + "\n".join(
            f"  {k:<{width}}  {v}" for k, v in sorted(RESULTS.items())) + "\n"
        (tmp_path_factory.getbasetemp() / "hostile-index-summary.txt").write_text(text)
        print_past_capture(request.config, text)


def outcome(archive, mnt, files, *args, key=None):
    """Mounts with a deadline.  Returns ('refused', message) or ('mounted', reads, log).
    Reads that fail otherwise than with EIO, or give wrong bytes, fail the test."""
    proc, log_path, mounted = start(archive, mnt, *args)
    if not mounted:
        log = open(log_path, errors="replace").read()
        check_clean(log)
        assert proc.returncode == 1, f"exit status {proc.returncode}:\n{log}"
        lines = [l for l in log.splitlines() if l.strip()]
        assert lines and all(l.startswith("tarseek") for l in lines), log
        if key:
            msg = re.sub(r"/[^\s:]*/", "", lines[-1])  # folders out of the paths
            RESULTS[key] = "refused: " + (msg if len(msg) < 100 else msg[:97] + "...")
        return ("refused", lines[-1])
    try:
        try:
            reads = read_members(mnt, files, proc)
        except AssertionError as e:
            if key:
                RESULTS[key] = "mounted -- WRONG: " + str(e).splitlines()[0][:90]
            raise
    finally:
        log = stop(proc, mnt, log_path)
    if key:
        vals = list(reads.values())
        how = ("rebuilt, " if "indexed" in log else "index used, ")
        RESULTS[key] = (f"mounted ({how}{vals.count('ok')} of {len(vals)} read right"
                        + (f", {vals.count('EIO')} EIO)" if "EIO" in vals else ")"))
    return ("mounted", reads, log)


def flip_file(path, off):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0xff]))


@pytest.fixture
def indexed_tar(tmp_path):
    """A plain tar with its index built beside it by a first mount: (archive, files)."""
    files = tree_files()
    folder = tmp_path / "arch"
    folder.mkdir()
    archive = make_archive(folder, "t", files)
    proc, log_path, mounted = start(archive, tmp_path / "first")
    assert mounted, open(log_path).read()
    stop(proc, tmp_path / "first", log_path)
    return archive, files


@pytest.mark.parametrize("how", ["truncate-half", "truncate-4096", "truncate-100",
                                 "flip-header", "flip-page-2", "flip-middle", "flip-end",
                                 "flip-every-4k"])
def test_damaged_index_file(tmp_path, indexed_tar, how):
    """An index file damaged on disk: rebuilt, or refused with a message naming it; if it
    is used anyway, the files read right or fail with EIO -- no crash."""
    archive, files = indexed_tar
    index = str(archive) + ".index.sqlite"
    size = os.path.getsize(index)
    assert size > 3 * 4096
    if how.startswith("truncate"):
        n = {"truncate-half": size // 2, "truncate-4096": 4096, "truncate-100": 100}[how]
        os.truncate(index, n)
    elif how == "flip-every-4k":
        for off in range(4096 + 100, size, 4096):
            flip_file(index, off)
    else:
        flip_file(index, {"flip-header": 30, "flip-page-2": 4096 + 50,
                          "flip-middle": size // 2 + 7, "flip-end": size - 30}[how])
    result = outcome(archive, tmp_path / "mnt", files, key=f"index file: {how}")
    if result[0] == "refused":
        assert "index" in result[1], result
        return
    _, reads, log = result
    assert set(reads.values()) == {"ok"}, (reads, log)


def test_index_of_another_archive(tmp_path, indexed_tar):
    """Another archive's index copied in place (same size even): detected, rebuilt."""
    archive, files = indexed_tar
    other_files = dict(files)
    other_files["a.txt"] = b"ALPHA\n" * 5000  # same sizes, other bytes
    other = make_archive(tmp_path, "other", other_files)
    assert other.stat().st_size == archive.stat().st_size
    # give the other archive the same mtime too: only the fingerprint can tell them apart
    st = archive.stat()
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    proc, log_path, mounted = start(other, tmp_path / "o")
    assert mounted
    stop(proc, tmp_path / "o", log_path)
    shutil.copy(str(other) + ".index.sqlite", str(archive) + ".index.sqlite")
    result = outcome(archive, tmp_path / "mnt", files, key="index of another archive")
    assert result[0] == "mounted", result
    _, reads, log = result
    assert set(reads.values()) == {"ok"}, reads
    assert "rebuilding index" in log and "content changed" in log, log


def test_index_of_older_format(tmp_path, indexed_tar):
    archive, files = indexed_tar
    index = str(archive) + ".index.sqlite"
    db = sqlite3.connect(index)
    with db:
        db.execute("UPDATE meta SET value = 1 WHERE key = 'format'")
    db.close()
    result = outcome(archive, tmp_path / "mnt", files, key="index of format 1")
    assert result[0] == "mounted", result
    _, reads, log = result
    assert set(reads.values()) == {"ok"}
    assert "rebuilding index" in log and "another version" in log, log


@pytest.mark.skipif(not IS_ROOT, reason="needs root to chown to another user")
def test_index_of_another_user_in_shared_folder(tmp_path):
    """--index-folder in a shared folder (mode 1777, like /tmp): an index there that belongs
    to another user may have been written by that user to lie about the archive (here: a
    member's data offset and size point at another member).  It must not be trusted: tarseek
    rebuilds it or refuses with a message, and never shows the other user's version."""
    files = tree_files()
    folder = tmp_path / "arch"
    folder.mkdir()
    archive = make_archive(folder, "t", files)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    os.chmod(tmp_path, 0o755)
    proc, log_path, mounted = start(archive, tmp_path / "first", "--index-folder", shared)
    assert mounted
    stop(proc, tmp_path / "first", log_path)
    (index,) = [shared / n for n in os.listdir(shared)]
    # the other user's edit: ok.txt now shows the first 3 bytes of b.bin
    db = sqlite3.connect(index)
    with db:
        b_off = db.execute("SELECT data_off FROM entries WHERE name = CAST('b.bin' AS BLOB)"
                           ).fetchone()
        if b_off is None:
            b_off = db.execute("SELECT data_off FROM entries WHERE name = 'b.bin'").fetchone()
        n = db.execute("UPDATE entries SET data_off = ? WHERE CAST(name AS TEXT) = 'ok.txt'",
                       b_off).rowcount
    db.close()
    assert n == 1
    os.chown(index, NOBODY, NOBODY)
    os.chmod(index, 0o644)
    result = outcome(archive, tmp_path / "mnt", files, "--index-folder", shared,
                     key="index of another user (edited) in a 1777 --index-folder")
    if result[0] == "refused":
        assert str(index) in result[1] or "index" in result[1], result
        return
    _, reads, log = result
    assert set(reads.values()) == {"ok"}, (reads, log)


# Tampered checkpoint rows: (name, SQL run on the index copy).  meta is left alone, so the
# index still says it is complete and valid for the archive.
TAMPER = {
    "crcs-garbage": "UPDATE checkpoints SET crcs = randomblob(length(crcs)) WHERE idx = 1",
    "crcs-short": "UPDATE checkpoints SET crcs = substr(crcs, 1, length(crcs) - 4) WHERE idx = 1",
    "crcs-null": "UPDATE checkpoints SET crcs = NULL",
    "aux-garbage": "UPDATE checkpoints SET aux = randomblob(40000) WHERE idx >= 1",
    "aux-short": "UPDATE checkpoints SET aux = x'00' WHERE idx >= 1",
    "aux-huge-len": "UPDATE checkpoints SET aux = zeroblob(5000000) WHERE idx = 1",
    "uoff-huge": "UPDATE checkpoints SET uoff = 9223372036854775000 WHERE idx = 1",
    "uoff-negative": "UPDATE checkpoints SET uoff = -4096 WHERE idx = 1",
    "ulen-zero": "UPDATE checkpoints SET ulen = 0 WHERE idx = 1",
    "ulen-huge": "UPDATE checkpoints SET ulen = 9223372036854775000 "
                 "WHERE idx = (SELECT max(idx) FROM checkpoints)",
    "coff-huge": "UPDATE checkpoints SET coff = 9223372036854775000 WHERE idx = 1",
    "coff-shifted": "UPDATE checkpoints SET coff = coff + 1 WHERE idx = 1",
    "clen-huge": "UPDATE checkpoints SET clen = 9223372036854775000 WHERE idx = 1",
    "clen-zero": "UPDATE checkpoints SET clen = 0",
    "extra-huge": "UPDATE checkpoints SET extra = -1",
    "bits-garbage": "UPDATE checkpoints SET bits = 4294967295",
    "flags-garbage": "UPDATE checkpoints SET flags = 4294967295",
    "rows-swapped": "UPDATE checkpoints SET coff = (SELECT coff FROM checkpoints c2 "
                    "WHERE c2.idx = 0) WHERE idx = 1",
    "row-deleted": "DELETE FROM checkpoints WHERE idx = 1",
    "all-deleted": "DELETE FROM checkpoints",
    "usize-huge": "UPDATE meta SET value = 9000000000000 WHERE key = 'usize'",
}

TAMPER_CODECS = {
    "gzip": ("gzip", ["gzip", "-1", "-c"], ".tar.gz", ["--gzip-spacing", "0.25"]),
    "bzip2": ("bzip2", ["bzip2", "-1", "-c"], ".tar.bz2", []),
    "xz": ("xz", ["xz", "-0", "-T2", "--block-size=256KiB", "-c"], ".tar.xz", []),
    "zstd": ("zstd", ["zstd", "-q", "-1", "-c"], ".tar.zst", []),  # one frame per 256 KiB
    "lzo": ("lzo", ["lzop", "-c"], ".tar.lzo", []),
}

_tamper_base = {}


@pytest.fixture(scope="module")
def tamper_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tamper")


def tamper_base(folder, kind):
    """(archive, its valid index, files, extra args), built once per codec."""
    if kind not in _tamper_base:
        codec, argv, suffix, args = TAMPER_CODECS[kind]
        files = tree_files(10)
        archive = make_archive(folder, kind, files, (argv, suffix))
        index = folder / (kind + ".index")
        proc, log_path, mounted = start(archive, folder / (kind + ".mnt"), "--index-file",
                                        index, *args)
        assert mounted, open(log_path).read()
        stop(proc, folder / (kind + ".mnt"), log_path)
        db = sqlite3.connect(index)
        n = db.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        db.close()
        assert n >= 2, f"{kind}: {n} checkpoints, the tampering needs two or more"
        _tamper_base[kind] = (archive, index, files, args)
    return _tamper_base[kind]


# 105 cases: every tampering over five codecs, the same checks of the index's rows each time.
# The default suite runs a seeded sample with every tampering and every codec (conftest.
# sample_cases); TARSEEK_MATRIX=all (meson test --suite slow) runs them all.
TAMPER_CASES = sample_cases([(k, t) for k in sorted(TAMPER_CODECS) for t in sorted(TAMPER)], 26,
                            lambda c: c[1], lambda c: c[0], name="tamper")


@pytest.mark.parametrize("kind,tamper", TAMPER_CASES, ids=[f"{k}-{t}" for k, t in TAMPER_CASES])
def test_tampered_checkpoints(tmp_path, tamper_dir, kind, tamper):
    """A valid, complete index whose checkpoint rows (or sizes) were changed behind
    tarseek's back: refused, rebuilt, or mounted with reads that are right or EIO; no
    crash, no sanitizer report, no hang."""
    codec, argv, _, _ = TAMPER_CODECS[kind]
    require_tool(argv[0])
    require_codec(codec)
    archive, index, files, args = tamper_base(tamper_dir, kind)
    copy = tmp_path / "tampered.index"
    shutil.copy(index, copy)
    db = sqlite3.connect(copy)
    with db:
        db.execute(TAMPER[tamper])
    db.close()
    result = outcome(archive, tmp_path / "mnt", files, "--index-file", copy, *args,
                     key=f"checkpoints {kind}: {tamper}")
    if result[0] == "refused":
        assert "index" in result[1] or archive.name in result[1], result
        return
    _, reads, log = result
    # the damage is to one checkpoint or one member: the rest must still read
    assert "ok" in reads.values() or tamper in ("crcs-null", "all-deleted", "usize-huge",
                                                "aux-garbage", "aux-short", "clen-zero",
                                                "extra-huge", "bits-garbage",
                                                "flags-garbage"), (reads, log)


# ---- permissions -----------------------------------------------------------------------------

def as_nobody(*argv):
    """Runs argv as uid/gid 65534 with no supplementary groups: CompletedProcess."""
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                           "--clear-groups", "--", *map(str, argv)],
                          capture_output=True, text=True, timeout=30)


@pytest.fixture
def public_dir():
    """A folder that every user can traverse (pytest's own is 0700)."""
    d = tempfile.mkdtemp(prefix="tarseek-perm-", dir="/tmp")
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def perm_archive(public_dir):
    archive = os.path.join(public_dir, "perm.tar")
    with open_tar(archive) as t:
        add(t, "ok.txt", data=b"ok\n")
        add(t, "public.txt", data=b"everyone\n", mode=0o644, uid=1234, gid=1234)
        add(t, "private.txt", data=b"secret\n", mode=0o600, uid=1234, gid=1234)
        add(t, "mine.txt", data=b"nobody's\n", mode=0o600, uid=NOBODY, gid=NOBODY)
        add(t, "group.txt", data=b"group\n", mode=0o640, uid=1234, gid=NOBODY)
        add(t, "closed", tarfile.DIRTYPE, mode=0o700, uid=1234, gid=1234)
        add(t, "closed/inside.txt", data=b"inside\n", mode=0o644, uid=1234, gid=1234)
    return archive


@pytest.mark.skipif(not IS_ROOT, reason="mounts as root and reads as another user")
def test_only_the_mounting_user_by_default(mount, public_dir, perm_archive):
    mnt = os.path.join(public_dir, "mnt")
    os.makedirs(mnt)
    r = as_nobody("stat", mnt)  # the control: the folder itself is open to everyone
    assert r.returncode == 0, r
    with mount(perm_archive, mountpoint=mnt) as m:
        assert open(os.path.join(mnt, "public.txt"), "rb").read() == b"everyone\n"
        assert open(os.path.join(mnt, "private.txt"), "rb").read() == b"secret\n"  # root
        for argv in (["stat", mnt], ["cat", os.path.join(mnt, "public.txt")],
                     ["ls", mnt]):
            r = as_nobody(*argv)
            assert r.returncode != 0 and "Permission denied" in r.stderr, (argv, r)
        alive(m)


@pytest.mark.skipif(not IS_ROOT, reason="mounts as root and reads as another user")
def test_allow_other_enforces_archive_modes(mount, public_dir, perm_archive):
    mnt = os.path.join(public_dir, "mnt")
    with mount(perm_archive, "-o", "allow_other", mountpoint=mnt) as m:
        opts = [l.split() for l in open("/proc/self/mounts") if l.split()[1] == mnt][0][3]
        assert "default_permissions" in opts and "allow_other" in opts, opts
        ok = {"public.txt": "everyone\n", "mine.txt": "nobody's\n", "group.txt": "group\n"}
        for name, want in ok.items():
            r = as_nobody("cat", os.path.join(mnt, name))
            assert r.returncode == 0 and r.stdout == want, (name, r)
        for name in ("private.txt", "closed/inside.txt"):
            r = as_nobody("cat", os.path.join(mnt, name))
            assert r.returncode != 0 and "Permission denied" in r.stderr, (name, r)
        r = as_nobody("ls", os.path.join(mnt, "closed"))
        assert r.returncode != 0 and "Permission denied" in r.stderr, r
        r = as_nobody("ls", mnt)
        assert r.returncode == 0 and "private.txt" in r.stdout, r
        # root passes the checks, as on any file system
        assert open(os.path.join(mnt, "private.txt"), "rb").read() == b"secret\n"
        alive(m)


# Tampered entries: a member's offset past the end of the data, or a size far beyond it.
ENTRY_TAMPER = {
    "data-off-past-end": "UPDATE entries SET data_off = 9000000000000 "
                         "WHERE CAST(name AS TEXT) = 'b.bin'",
    "size-huge": "UPDATE entries SET size = 9000000000000, stored = 9000000000000 "
                 "WHERE CAST(name AS TEXT) = 'b.bin'",
}


@pytest.mark.parametrize("tamper", sorted(ENTRY_TAMPER))
@pytest.mark.parametrize("kind", ["tar", "gzip", "xz"])
def test_tampered_entries(tmp_path, tamper_dir, kind, tamper):
    """An entry pointing past the end of the (decompressed) data: reads there fail with EIO
    -- not zeros, not a short file, no read outside the archive -- and other members read."""
    if kind == "tar":
        key = "tar"
        if key not in _tamper_base:
            files = tree_files(20)
            archive = make_archive(tamper_dir, "plain", files)
            index = tamper_dir / "plain.index"
            proc, log_path, mounted = start(archive, tamper_dir / "plain.mnt", "--index-file",
                                            index)
            assert mounted
            stop(proc, tamper_dir / "plain.mnt", log_path)
            _tamper_base[key] = (archive, index, files, [])
        archive, index, files, args = _tamper_base[key]
    else:
        codec, argv, _, _ = TAMPER_CODECS[kind]
        require_tool(argv[0])
        require_codec(codec)
        archive, index, files, args = tamper_base(tamper_dir, kind)
    copy = tmp_path / "tampered.index"
    shutil.copy(index, copy)
    db = sqlite3.connect(copy)
    with db:
        assert db.execute(ENTRY_TAMPER[tamper]).rowcount == 1
    db.close()
    others = {n: d for n, d in files.items() if n != "b.bin"}
    want = files["b.bin"]
    result = outcome(archive, tmp_path / "mnt", others, "--index-file", copy, *args)
    if result[0] == "refused":
        return
    proc, log_path, mounted = start(archive, tmp_path / "mnt2", "--index-file", copy, *args)
    assert mounted

    def probe():
        p = os.path.join(tmp_path / "mnt2", "b.bin")
        fd = os.open(p, os.O_RDONLY)
        try:
            # the size first: after a short read the kernel takes it for the end of the file
            size = os.fstat(fd).st_size
            got = {}
            for off in (0, 100_000, len(want) - 10, len(want) + 10_000, 2**39, 2**40):
                try:
                    got[off] = os.pread(fd, 4096, off)
                except OSError as e:
                    got[off] = e.errno
            return size, got
        finally:
            os.close(fd)
    try:
        size, got = with_deadline(probe, proc, 30, "reading b.bin")
    finally:
        log = stop(proc, tmp_path / "mnt2", log_path)
    first_log = result[2] if len(result) > 2 else ""
    if "rebuilding index" in first_log and "checksum" in first_log:
        # the tampering was caught by the index's checksum and the index rebuilt: the
        # member then reads as the archive holds it
        assert size == len(want), (size, first_log)
        for off, r in got.items():
            assert r == want[off:off + 4096], (off, first_log)
        return
    for off, r in got.items():
        if off >= size:
            assert r == b"", (off, r)  # past the end the index gives: an ordinary EOF
        elif isinstance(r, int):
            assert r == errno.EIO, (off, r, log)
        elif tamper == "size-huge" and off < len(want):
            # the member's own bytes are right; what follows them in the data is what the
            # tampered size asks for
            n = min(len(r), len(want) - off)
            assert r[:n] == want[off:off + n], off
            if off + 4096 <= len(want):
                assert len(r) == 4096
        elif tamper == "size-huge" and off < 2**30:
            pass  # what follows the member in the archive: bytes the archive holds
        else:
            # bytes the index promises but the archive does not hold: EIO, never a short
            # read (which says end of file) nor zeros
            assert False, (f"b.bin (st_size {size}) at {off}: {len(r)} bytes returned, "
                           f"expected EIO\n{log}")
