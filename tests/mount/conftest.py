"""Fixtures shared by the mount tests.

Every test that mounts uses `mount(archive, *options)`: it starts `tarseek -f` with the
daemon's stderr captured, waits until the mount point is really mounted, and on the way
out always unmounts (fusermount3 -u -z) and waits for the daemon.  A test fails if the
daemon crashed (killed by a signal), exited with an error, or logged an error it should not
have (pass `allow_errors=True` for tests that feed it damaged input; a sanitizer report
fails the test even then).

Helpers for the test files: make_tree() builds the standard test tree (every file type,
modes, owners, hard links, long names, fixed mtimes with nanoseconds, xattrs);
gnu_extract() extracts an archive with GNU tar; compare_trees() asserts that a mounted tree
equals an extracted one (paths, types, modes, owners, sizes, mtimes, devices, symlink
targets, link counts, hard-link inode identity, user.* xattrs, every byte);
require_codec() skips a test when tarseek cannot read a codec yet (--version and a trial
mount); semi_random()/random_bytes() make reproducible data; gzip_member() writes gzip
members with any header field.

Matrices: sample_cases() keeps a seeded random sample of a large matrix of cases that go
through the same code many times (the damage and tampering matrices), every value of each
dimension at least once; TARSEEK_MATRIX=all keeps every case (meson's `slow` suite), and
TARSEEK_SEED=N repeats a sample (the seed is printed in pytest's header and with every
failure).  TARSEEK_INFLATE=zlib (the meson tests *_zlib) runs only the tests that inflate
deflate data: those with gzip or pigz in their name and those marked `deflate`.  A test
marked `kernel_caches` runs again when its assertion failed while somebody dropped the
kernel's caches (/proc/vmstat's drop counters moved).
"""
import errno
import hashlib
import os
import random
import shutil
import signal
import sqlite3
import stat
import struct
import subprocess
import sys
import time
import zlib
from contextlib import contextmanager

import pytest

BUILD = os.environ.get("TARSEEK_BUILD") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build")
TARSEEK = os.path.join(BUILD, "fs", "tarseek")
# what ASan, UBSan, LSan and TSan print: never acceptable in a daemon's log
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "ThreadSanitizer", "runtime error:")


# ---- matrices: a seeded sample in the default suite, every case in the slow one -------------

MATRIX_ALL = os.environ.get("TARSEEK_MATRIX", "sample") == "all"
SEED = int(os.environ.get("TARSEEK_SEED") or random.SystemRandom().randrange(1, 10**6))
SAMPLED = set()  # the test modules that sample a matrix


def sample_cases(cases, n, *dims, name="matrix"):
    """A sample of about n of cases (a list), with every value of each dims(case) present at
    least once, chosen with SEED (or all of them with TARSEEK_MATRIX=all), in their order."""
    SAMPLED.add(sys._getframe(1).f_globals.get("__name__"))
    if MATRIX_ALL or len(cases) <= n:
        return list(cases)
    rng = random.Random(f"{SEED}:{name}")
    order = list(range(len(cases)))
    rng.shuffle(order)
    chosen = set()
    for dim in dims:
        covered = {dim(cases[i]) for i in chosen}
        for i in order:
            if dim(cases[i]) not in covered:
                chosen.add(i)
                covered.add(dim(cases[i]))
    for i in order:
        if len(chosen) >= n:
            break
        chosen.add(i)
    return [c for i, c in enumerate(cases) if i in chosen]


def pytest_report_header(config):
    how = "every case" if MATRIX_ALL else f"a sample, seed {SEED} (TARSEEK_SEED={SEED} repeats it)"
    return f"tarseek matrices: {how}; TARSEEK_MATRIX=all for every case"


def pytest_configure(config):
    config.addinivalue_line("markers", "deflate: inflates deflate data (run again with zlib's "
                            "inflater by the meson tests *_zlib)")
    config.addinivalue_line("markers", "kernel_caches: asserts what the kernel's caches hold "
                            "(run again when somebody dropped them meanwhile)")


# ---- tests that count what the kernel's caches spare the daemon ------------------------------

def cache_drops():
    """The kernel's counts of `echo N > /proc/sys/vm/drop_caches`, by anyone on the machine."""
    with open("/proc/vmstat") as f:
        return tuple(line for line in f if line.startswith(("drop_pagecache", "drop_slab")))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test marked kernel_caches that fails while somebody dropped the kernel's caches (a
    cold run of tarseek-bench beside it: meson runs test_bench and test_remote alone, other
    suites on the same machine do not) measured nothing: it runs again, three times at most.
    A failure with no drop meanwhile stands."""
    if not pyfuncitem.get_closest_marker("kernel_caches"):
        return None
    args = {a: pyfuncitem.funcargs[a] for a in pyfuncitem._fixtureinfo.argnames}
    for attempt in range(4):
        mark = cache_drops()
        try:
            pyfuncitem.obj(**args)
            return True
        except AssertionError:
            if cache_drops() == mark or attempt == 3:
                raise
            print(f"the kernel's caches were dropped during the test: run {attempt + 2}")
    return True


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TARSEEK_INFLATE") != "zlib":
        return
    keep, drop = [], []
    for item in items:
        name = item.name.lower()
        if "gzip" in name or "pigz" in name or item.get_closest_marker("deflate"):
            keep.append(item)
        else:
            drop.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and not MATRIX_ALL and getattr(item.module, "__name__", None) in SAMPLED:
        rep.sections.append(("tarseek matrices", f"TARSEEK_SEED={SEED} repeats this sample"))


def is_mounted(path):
    real = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mnt = line.split(" ")[4].encode().decode("unicode_escape")
            if mnt == real:
                return True
    return False


class Mount:
    """A running tarseek daemon and its mount point."""

    def __init__(self, path, proc, log_path):
        self.path = path
        self.proc = proc
        self.log_path = log_path

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def __str__(self):
        return self.path

    def __fspath__(self):
        return self.path


def wait_mounted(proc, mnt, log_path, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_mounted(mnt):
            return
        if proc.poll() is not None:
            with open(log_path, errors="replace") as f:
                raise RuntimeError(
                    f"tarseek exited with {proc.returncode} before mounting:\n{f.read()}")
        time.sleep(0.01)
    proc.kill()
    raise RuntimeError(f"tarseek did not mount {mnt} within {timeout} s")


def unmount(mnt, proc, timeout=30):
    if is_mounted(mnt):
        subprocess.run(["fusermount3", "-u", "-z", mnt], check=False,
                       stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("tarseek did not exit after unmount")


@pytest.fixture
def tarseek_bin():
    if not os.path.exists(TARSEEK):
        pytest.fail(f"{TARSEEK} is not built")
    return TARSEEK


@pytest.fixture
def mount(tmp_path, tarseek_bin):
    """mount(archive, *options, allow_errors=False, mountpoint=None, env=None) -> Mount

    env: extra environment variables for the daemon (e.g. XDG_CACHE_HOME)."""
    active = []
    counter = [0]

    @contextmanager
    def _mount(*args, allow_errors=False, mountpoint=None, timeout=120, env=None):
        counter[0] += 1
        mnt = mountpoint or str(tmp_path / f"mnt{counter[0]}")
        os.makedirs(mnt, exist_ok=True)
        log_path = str(tmp_path / f"tarseek{counter[0]}.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([tarseek_bin, "-f", *map(str, args), mnt],
                                    stdout=log, stderr=subprocess.STDOUT,
                                    env=dict(os.environ, **env) if env else None)
        m = Mount(mnt, proc, log_path)
        active.append(m)
        try:
            wait_mounted(proc, mnt, log_path, timeout)
            yield m
        finally:
            unmount(mnt, proc)
            active.remove(m)
            out = m.log()
            assert proc.returncode >= 0, \
                f"tarseek died of signal {-proc.returncode}:\n{out}"
            assert proc.returncode == 0, f"tarseek exited with {proc.returncode}:\n{out}"
            # a sanitizer report fails the test even where errors are expected
            bad = [line for line in out.splitlines()
                   if (": error:" in line and not allow_errors)
                   or any(s in line for s in SANITIZER_MARKS)]
            assert not bad, "tarseek logged errors:\n" + "\n".join(bad)

    yield _mount
    for m in list(active):
        unmount(m.path, m.proc)


_sanitized_exe = {}


def exe_sanitized(exe=TARSEEK):
    """True if the executable is a sanitizer build: gcc's calls into libasan/libtsan, clang's
    has the runtime inside; both name __asan_init (__tsan_init)."""
    if exe not in _sanitized_exe:
        try:
            with open(exe, "rb") as f:
                data = f.read()
        except OSError:
            return False
        _sanitized_exe[exe] = b"__asan_init" in data or b"__tsan_init" in data
    return _sanitized_exe[exe]


def sanitized(pid):
    """True if process pid runs a sanitizer build."""
    try:
        return exe_sanitized(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return False


def run_tarseek(*args, timeout=120, env=None):
    """Runs tarseek (without -f) expecting it to fail or print: returns CompletedProcess."""
    return subprocess.run([TARSEEK, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **env) if env else None)


def read_errno(path):
    """None if path reads whole, else the errno of the failure."""
    try:
        with open(path, "rb") as f:
            f.read()
        return None
    except OSError as e:
        return e.errno


def have(tool):
    return shutil.which(tool) is not None


# ---- helpers shared by the test files ------------------------------------------------------

def tarseek_version():
    """(version line, set of codec names) from `tarseek --version`."""
    out = subprocess.run([TARSEEK, "--version"], capture_output=True, text=True).stdout
    codecs = set()
    for line in out.splitlines():
        if line.startswith("codecs:"):
            codecs = {c.strip() for c in line.split(":", 1)[1].split(",") if c.strip()}
    return out.splitlines()[0] if out else "", codecs


_codec_state = {}

# How to compress a tiny tar with each codec, for the trial mount: (tool, argv, suffix).
_TRIAL = {
    "gzip": (["gzip", "-c"], ".tar.gz"),
    "bzip2": (["bzip2", "-c"], ".tar.bz2"),
    "xz": (["xz", "-c"], ".tar.xz"),
    "zstd": (["zstd", "-q", "-c"], ".tar.zst"),
    "lzo": (["lzop", "-c"], ".tar.lzo"),
    "lz4": (["lz4", "-c"], ".tar.lz4"),
    "lzip": (["lzip", "-c"], ".tar.lz"),
    "lzma": (["xz", "--format=lzma", "-c"], ".tar.lzma"),
    "compress": (["compress", "-c"], ".tar.Z"),
}


def codec_state(name):
    """None if tarseek handles codec `name`, else the reason it does not.

    A codec counts as present when `tarseek --version` lists it AND a trial mount of a tiny
    archive made with it shows the archive's file.  A trial mount that fails for any other
    reason than "not an archive tarseek knows" counts as present, so the real tests run and
    show the failure instead of being skipped."""
    if name in _codec_state:
        return _codec_state[name]
    import tempfile
    reason = None
    _, codecs = tarseek_version()
    argv, suffix = _TRIAL[name]
    if name not in codecs:
        reason = f"tarseek --version does not list codec {name}"
    elif not have(argv[0]):
        reason = f"{argv[0]} is not installed"
    else:
        d = tempfile.mkdtemp(prefix="tarseek-trial-")
        try:
            with open(os.path.join(d, "probe.txt"), "wb") as f:
                f.write(b"trial\n")
            subprocess.run(["tar", "cf", os.path.join(d, "t.tar"), "-C", d, "probe.txt"],
                           check=True)
            arch = os.path.join(d, "t" + suffix)
            with open(os.path.join(d, "t.tar"), "rb") as src, open(arch, "wb") as dst:
                subprocess.run(argv, stdin=src, stdout=dst, check=True)
            mnt = os.path.join(d, "mnt")
            os.mkdir(mnt)
            log_path = os.path.join(d, "log")
            with open(log_path, "wb") as log:
                proc = subprocess.Popen([TARSEEK, "-f", arch, mnt], stdout=log,
                                        stderr=subprocess.STDOUT)
            try:
                wait_mounted(proc, mnt, log_path, timeout=30)
            except RuntimeError as e:
                if "not an archive nor a compressed file" in str(e):
                    reason = f"codec {name} is listed but not usable yet (trial mount: {e})"
            finally:
                unmount(mnt, proc)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    _codec_state[name] = reason
    return reason


def require_codec(name):
    reason = codec_state(name)
    if reason:
        pytest.skip(reason)


def require_tool(*tools):
    for t in tools:
        if not have(t):
            pytest.skip(f"{t} is not installed")


# 16 symbols: about 4 bits of entropy per byte, so data compresses roughly 2:1.
_SEMI = bytes(b"abcdefghijklmnop"[i % 16] for i in range(256))


def text_data(n, seed, words=2000):
    """n bytes of text-like data (numbered lines of words from a vocabulary of `words`:
    compresses about 4:1, fast for every codec), the same for the same arguments."""
    rng = random.Random(seed)
    vocab = [("w%x" % rng.getrandbits(20)).encode() for _ in range(words)]
    out = bytearray()
    i = 0
    while len(out) < n:
        out += b"%d " % i + b" ".join(rng.choices(vocab, k=12)) + b"\n"
        i += 1
    return bytes(out[:n])


def semi_random(n, seed=0):
    """n bytes of reproducible, moderately compressible data."""
    import random
    rng = random.Random(seed)
    return rng.randbytes(n).translate(_SEMI)


def random_bytes(n, seed=0):
    import random
    return random.Random(seed).randbytes(n)


def compress_file(argv, src, out):
    """Runs argv (a compressor: stdin -> stdout) on the file src into out; returns out.

    tools/test.sh tests the same sources in two trees one after the other (the release build,
    then the sanitizers'), and the compressors write the same bytes for the same command and
    input: with TARSEEK_TU_CACHE set (as for the unit tests' tu_pipe, tests/unit/testutil.c)
    the output is kept there under a hash of the command and src's bytes, and the next tree's
    test copies it instead of running the tool again.  An input that differs (a tar of files
    written with the time of the run) only misses the cache."""
    argv = [os.fspath(a) for a in argv]
    cache = os.environ.get("TARSEEK_TU_CACHE")
    kept = None
    if cache and os.path.isdir(cache):
        h = hashlib.sha256("\0".join(argv).encode() + b"\0\0")
        with open(src, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        kept = os.path.join(cache, "mount-" + h.hexdigest())
        if os.path.exists(kept):
            shutil.copyfile(kept, out)
            return out
    with open(src, "rb") as i, open(out, "wb") as o:
        r = subprocess.run(argv, stdin=i, stdout=o, stderr=subprocess.PIPE)
    assert r.returncode == 0, (argv, r.stderr)
    if kept:
        tmp = f"{kept}.{os.getpid()}.tmp"
        shutil.copyfile(out, tmp)
        os.replace(tmp, kept)  # whole, or not there
    return out


def run(*argv, check=True, **kw):
    """Runs a command (items may be str, bytes or paths); fails the test with its output."""
    argv = [os.fspath(a) for a in argv]
    r = subprocess.run(argv, capture_output=True, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{argv!r} exited with {r.returncode}:\n"
                             f"{r.stdout.decode(errors='replace')}"
                             f"{r.stderr.decode(errors='replace')}")
    return r


def gnu_extract(archive, dest, *extra, ignore_zeros=False, check=True):
    """Extracts archive with GNU tar the way a user restoring a backup would (as root:
    permissions, numeric owners, user.* xattrs, sub-second mtimes), stopping at the first
    end-of-archive marker as tar and tarseek do (ignore_zeros=True reads past it, as
    tarseek -i does).  GNU tar detects gzip/bzip2/xz by itself.  check=False: a non-zero
    exit status is allowed (GNU tar extracts what it can and exits 2 on some damage)."""
    os.makedirs(dest, exist_ok=True)
    run("tar", "-x", "-p", "--numeric-owner", "--xattrs", "--xattrs-include=user.*",
        *(["--ignore-zeros"] if ignore_zeros else []), *extra, "-f", archive, "-C", dest,
        check=check)


def pax_ns(text):
    """Nanoseconds from a pax time record ("1600000033.12345702")."""
    sec, _, frac = text.partition(".")
    ns = int(sec) * 10**9 + int((frac + "000000000")[:9])
    return ns


def checkpoints(index):
    """The number of checkpoints an index file holds."""
    db = sqlite3.connect(index)
    try:
        return db.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    finally:
        db.close()


def archive_mtimes(archive):
    """{path as the mount shows it: mtime in ns} from the archive's own headers."""
    import tarfile
    out = {}
    with tarfile.open(archive, ignore_zeros=True) as t:
        for member in t:
            name = os.fsencode(member.name).rstrip(b"/")
            if name.startswith(b"./"):
                name = name[2:]
            mt = member.pax_headers.get("mtime")
            out[name] = pax_ns(mt) if mt else int(member.mtime) * 10**9
    return out


def gzip_member(payload, *, fname=None, comment=None, extra=None, hcrc=False, level=6,
                mtime=1_600_000_000):
    """A gzip member with the optional header fields (RFC 1952) that gzip(1) never writes
    together: FEXTRA, FNAME, FCOMMENT, FHCRC."""
    flags = (4 if extra is not None else 0) | (8 if fname else 0) | (16 if comment else 0) | \
        (2 if hcrc else 0)
    head = b"\x1f\x8b\x08" + bytes([flags]) + struct.pack("<I", mtime) + b"\x00\x03"
    if extra is not None:
        head += struct.pack("<H", len(extra)) + extra
    if fname:
        head += fname + b"\0"
    if comment:
        head += comment + b"\0"
    if hcrc:
        head += struct.pack("<H", zlib.crc32(head) & 0xffff)
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = c.compress(payload) + c.flush()
    return head + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xffffffff)


def user_xattrs(path):
    """{name: value} of the user.* extended attributes of path (not following symlinks)."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return {}
        raise
    return {n: os.getxattr(path, n, follow_symlinks=False)
            for n in sorted(names) if n.startswith("user.")}


def user_xattrs_supported(folder):
    """True if files in folder can carry user.* xattrs."""
    probe = os.path.join(folder, ".xattr-probe")
    with open(probe, "wb"):
        pass
    try:
        os.setxattr(probe, "user.probe", b"1")
        return True
    except OSError:
        return False
    finally:
        os.unlink(probe)


class Node:
    """What lstat and friends say about one path of a tree."""
    __slots__ = ("path", "kind", "mode", "uid", "gid", "size", "mtime_ns", "rdev", "nlink",
                 "ino", "link", "xattrs")

    def __repr__(self):
        return (f"Node({self.path!r} {self.kind} {self.mode:o} uid={self.uid} gid={self.gid} "
                f"size={self.size} mtime={self.mtime_ns} nlink={self.nlink} link={self.link!r})")


def _kind(m):
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "symlink"),
                       (stat.S_ISCHR, "chr"), (stat.S_ISBLK, "blk"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket")):
        if test(m):
            return name
    return "?"


def snapshot(root, xattrs=True):
    """{relative bytes path (b'.' for root): Node} for every path under root."""
    root = os.fsencode(root)
    nodes = {}

    def add(full, rel):
        st = os.lstat(full)
        n = Node()
        n.path = rel
        n.kind = _kind(st.st_mode)
        n.mode = stat.S_IMODE(st.st_mode)
        n.uid, n.gid = st.st_uid, st.st_gid
        n.size = st.st_size
        n.mtime_ns = st.st_mtime_ns
        n.rdev = st.st_rdev if n.kind in ("chr", "blk") else 0
        n.nlink = st.st_nlink
        n.ino = st.st_ino
        n.link = os.readlink(full) if n.kind == "symlink" else None
        n.xattrs = user_xattrs(full) if xattrs and n.kind in ("file", "dir") else {}
        nodes[rel] = n

    add(root, b".")
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            add(full, os.path.relpath(full, root))
    return nodes


def first_difference(path_a, path_b, chunk=1 << 20):
    """None if the two files hold the same bytes, else a description of the first difference."""
    with open(path_a, "rb") as a, open(path_b, "rb") as b:
        off = 0
        while True:
            x, y = a.read(chunk), b.read(chunk)
            if x != y:
                n = min(len(x), len(y))
                i = next((i for i in range(n) if x[i] != y[i]), n)
                return (f"differ at byte {off + i} ({x[i:i + 8]!r} vs {y[i:i + 8]!r}; "
                        f"chunk lengths {len(x)} and {len(y)})")
            if not x:
                return None
            off += len(x)


def compare_trees(mounted, expected, *, check_root=True, implicit=(), content=True,
                  xattrs=True, mtimes=True, dir_mtimes=True, owners=True):
    """Asserts that the tree at mounted is the tree at expected (normally what GNU tar
    extracted): the same paths, types, permission bits, owners, sizes, mtimes (to the
    nanosecond), device numbers, symlink targets, link counts, user.* xattrs, hard-link
    inode identity (paths share an inode in one tree exactly when they do in the other) and
    every byte of every regular file.

    implicit: relative paths (str or bytes) of directories that the archive does not hold;
    for them (tar made them up as 0755 at extraction time) only the type is compared and the
    mount must show mode 0555.  check_root=False skips the metadata of the root itself.
    dir_mtimes=False skips directory mtimes (GNU tar does not restore them when an archive
    lists a folder's children after other folders, as bsdtar does).  Returns the mount's
    snapshot."""
    got = snapshot(mounted, xattrs)
    want = snapshot(expected, xattrs)
    implicit = {os.fsencode(p) for p in implicit}
    problems = []
    for p in sorted(set(want) - set(got)):
        problems.append(f"missing in the mount: {p!r} ({want[p].kind})")
    for p in sorted(set(got) - set(want)):
        problems.append(f"extra in the mount: {p!r} ({got[p].kind})")
    for p in sorted(set(got) & set(want)):
        g, w = got[p], want[p]
        if g.kind != w.kind:
            problems.append(f"{p!r}: type {g.kind}, expected {w.kind}")
            continue
        if p == b"." and not check_root:
            continue
        if p in implicit:
            if g.mode != 0o555:
                problems.append(f"{p!r}: implicit directory has mode {g.mode:o}, expected 555")
            continue
        fields = ["mode", "size", "rdev", "link", "nlink"]
        if owners:
            fields += ["uid", "gid"]
        if mtimes and (dir_mtimes or g.kind != "dir"):
            fields.append("mtime_ns")
        if xattrs:
            fields.append("xattrs")
        if g.kind == "dir":
            fields.remove("size")
        for f in fields:
            a, b = getattr(g, f), getattr(w, f)
            if a != b:
                if f == "mode":
                    a, b = oct(a), oct(b)
                if f == "xattrs":  # only what differs, values shortened
                    short = lambda v: v if len(v) <= 40 else v[:40] + b"..."
                    a, b = ({k: short(v) for k, v in x.items() if x.get(k) != y.get(k)}
                            for x, y in ((a, b), (b, a)))
                problems.append(f"{p!r}: {f} is {a!r}, expected {b!r}")
        if content and g.kind == "file" and g.size == w.size:
            d = first_difference(os.path.join(os.fsencode(mounted), p),
                                 os.path.join(os.fsencode(expected), p))
            if d:
                problems.append(f"{p!r}: content {d}")

    # hard links: the partition of non-directories by inode must be the same
    def groups(nodes):
        by_ino = {}
        for p, n in nodes.items():
            if n.kind != "dir" and p in got and p in want:
                by_ino.setdefault(n.ino, set()).add(p)
        return {frozenset(s) for s in by_ino.values()}
    gg, wg = groups(got), groups(want)
    for s in sorted(wg - gg, key=sorted):
        problems.append(f"hard links: expected one inode for {sorted(s)!r}")
    for s in sorted(gg - wg, key=sorted):
        problems.append(f"hard links: the mount shares one inode among {sorted(s)!r}")
    assert not problems, (f"{mounted} differs from {expected}:\n  " +
                          "\n  ".join(problems[:60]) +
                          (f"\n  ... and {len(problems) - 60} more" if len(problems) > 60 else ""))
    return got


def check_archive(mount, archive, tmp_path, *mount_args, extract_args=(), **compare_kw):
    """Mounts archive, extracts it with GNU tar, and compares the two trees."""
    ref = tmp_path / (os.path.basename(os.fspath(archive)) + ".extracted")
    gnu_extract(archive, ref, *extract_args)
    with mount(archive, *mount_args) as m:
        return compare_trees(m.path, ref, **compare_kw)


def make_tree(root, *, long_names="all", specials=False, xattrs=False, subsecond=True):
    """Builds the standard test tree under root (which must not exist) and returns root.

    Files of sizes around the 512-byte block, an empty file and directory, nested folders,
    modes with setuid/setgid/sticky bits and 0000, other owners, relative, absolute,
    dangling and directory symlinks, a file with three hard links, names with spaces and
    UTF-8, and fixed mtimes (with nanoseconds when subsecond).  long_names: "ustar" adds a
    file name of exactly 100 bytes (the size of the name field, so no NUL) in a 155-byte
    directory (the prefix field full), "all" also a path over 300 bytes and a 220-byte
    symlink target, "none" nothing (v7); specials adds a FIFO and two device
    nodes (root only); xattrs sets user.* attributes on a file and a folder."""
    root = os.fsencode(root)
    os.makedirs(root)
    j = lambda *p: os.path.join(root, *[os.fsencode(x) for x in p])
    files = {
        "empty": b"",
        "one": b"x",
        "b511": semi_random(511, 1),
        "b512": semi_random(512, 2),
        "b513": semi_random(513, 3),
        "dir/sub/deep/file.txt": b"deep\n" * 1000,
        "dir/random.bin": random_bytes(300_000, 4),
        "dir/with space.txt": b"spaces\n",
        "dir/unicod\u00e9 \u65e5\u672c.txt": b"utf-8\n",
        "modes/private": b"0600\n",
        "modes/exec": b"#!/bin/sh\n",
        "modes/setuid": b"4755\n",
        "modes/setgid": b"2755\n",
        "modes/none": b"0000\n",
        "owners/file": b"uid 1234 gid 5678\n",
        "links/target": semi_random(70_000, 5),
    }
    for name, data in files.items():
        os.makedirs(os.path.dirname(j(name)), exist_ok=True)
        with open(j(name), "wb") as f:
            f.write(data)
    os.makedirs(j("emptydir"))
    os.makedirs(j("sticky"))
    os.makedirs(j("private_dir"))
    with open(j("private_dir/inside"), "wb") as f:
        f.write(b"inside\n")
    for name, mode in (("modes/private", 0o600), ("modes/exec", 0o755),
                       ("modes/setuid", 0o4755), ("modes/setgid", 0o2755),
                       ("modes/none", 0), ("sticky", 0o1777), ("private_dir", 0o700),
                       ("emptydir", 0o750)):
        os.chmod(j(name), mode)
    if os.geteuid() == 0:
        os.chown(j("owners/file"), 1234, 5678)
        os.chown(j("owners"), 65534, 65534)
    os.symlink(b"dir/sub/deep/file.txt", j("links/rel"))
    os.symlink(b"../dir", j("links/to_dir"))
    os.symlink(b"/etc/hostname", j("links/absolute"))
    os.symlink(b"nowhere/at all", j("links/dangling"))
    os.link(j("links/target"), j("links/hard1"))
    os.makedirs(j("links/other"))
    os.link(j("links/target"), j("links/other/hard2"))
    if long_names in ("ustar", "all"):
        os.makedirs(j("long"))
        with open(j("long", "n" * 100), "wb") as f:
            f.write(b"a 100-byte name\n")
        # "./long/" + 70 + "/" + 77 = a 155-byte prefix, then a 100-byte name
        os.makedirs(j("long", "p" * 70, "q" * 77))
        with open(j("long", "p" * 70, "q" * 77, "m" * 100), "wb") as f:
            f.write(b"prefix and name fields full\n")
    if long_names == "all":
        deep = j("long", *(["d" * 60] * 4))
        os.makedirs(deep)
        with open(os.path.join(deep, b"f" * 60), "wb") as f:
            f.write(b"a path over 300 bytes\n")
        os.symlink(b"../" * 40 + b"t" * 100, j("long/longlink"))
    if specials:
        os.mkfifo(j("fifo"))
        os.mknod(j("null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(j("loopdev"), 0o660 | stat.S_IFBLK, os.makedev(7, 200))
    if xattrs:
        os.setxattr(j("one"), "user.comment", b"hello")
        os.setxattr(j("one"), "user.binary", bytes(range(256)))
        os.setxattr(j("one"), "user.empty", b"")
        os.setxattr(j("dir"), "user.folder", b"a folder")
    # fixed mtimes, children before parents
    t = 1_600_000_000_123_456_789 if subsecond else 1_600_000_000_000_000_000
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            paths.append(os.path.join(dirpath, n))
    for i, p in enumerate(sorted(paths, key=lambda p: -p.count(b"/"))):
        ns = t + i * 1_000_000_007
        os.utime(p, ns=(ns, ns), follow_symlinks=False)
    os.utime(root, ns=(t - 5, t - 5))
    return root


@pytest.fixture
def xattr_dir(tmp_path):
    """A folder whose files can carry user.* xattrs: tmp_path, else one in /var/tmp; None
    if neither can (tests then skip what needs xattrs)."""
    if user_xattrs_supported(tmp_path):
        yield tmp_path
        return
    import tempfile
    d = tempfile.mkdtemp(prefix="tarseek-xattr-", dir="/var/tmp")
    try:
        yield d if user_xattrs_supported(d) else None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def print_past_capture(config, text):
    """Writes text to the terminal even though pytest captures output (so that a test
    module's summary table shows without -s, in meson's test log too)."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if capman is None or tr is None:
        print(text)
        return
    with capman.global_and_fixture_disabled():
        tr.write_line(text)
