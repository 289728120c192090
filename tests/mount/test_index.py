"""The index: where it goes, when it is reused and when rebuilt (with a message saying why),
and the command line: errors with exit status 1 and a message naming the problem, usage
errors with 2, the daemon detaching without -f, and signals ending a mount cleanly.
"""
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import (TARSEEK, is_mounted, run, run_tarseek, random_bytes, semi_random,
                      wait_mounted)

IS_ROOT = os.geteuid() == 0


@pytest.fixture
def archive(tmp_path):
    """A small plain tar in its own folder: (archive path, {member: data})."""
    src = tmp_path / "src"
    src.mkdir()
    files = {"a.txt": b"alpha\n" * 1000, "b.bin": random_bytes(200_000, 1),
             "c/d.txt": semi_random(3000, 2)}
    for name, data in files.items():
        (src / name).parent.mkdir(exist_ok=True)
        (src / name).write_bytes(data)
    folder = tmp_path / "arch"
    folder.mkdir()
    path = folder / "t.tar"
    run("tar", "cf", path, "-C", src, *files)
    return path, files


def check_content(mnt, files):
    for name, data in files.items():
        with open(os.path.join(mnt, name), "rb") as f:
            assert f.read() == data, name


def indexed(log):
    return [line for line in log.splitlines() if "tarseek: info: indexed " in line]


def rebuilding(log):
    return [line for line in log.splitlines() if "rebuilding index" in line]


def fingerprint_of(path):
    st = os.stat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


# ---- location and reuse --------------------------------------------------------------------

def test_index_beside_archive_then_reused(mount, archive):
    path, files = archive
    index = str(path) + ".index.sqlite"
    with mount(path) as m:
        check_content(m.path, files)
    assert len(indexed(m.log())) == 1, m.log()
    assert "t.tar" in indexed(m.log())[0]
    assert os.path.isfile(index)
    before = fingerprint_of(index)
    with open(index, "rb") as f:
        assert f.read(16) == b"SQLite format 3\0"
    # nothing else left beside it (no temporary file)
    assert sorted(os.listdir(path.parent)) == ["t.tar", "t.tar.index.sqlite"]

    with mount(path) as m2:
        check_content(m2.path, files)
    assert indexed(m2.log()) == [] and rebuilding(m2.log()) == [], m2.log()
    assert fingerprint_of(index) == before


def test_touch_rebuilds(mount, archive):
    path, files = archive
    with mount(path):
        pass
    index = str(path) + ".index.sqlite"
    ino = os.stat(index).st_ino
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with mount(path) as m:
        check_content(m.path, files)
    log = m.log()
    assert len(rebuilding(log)) == 1, log
    line = rebuilding(log)[0]
    assert line.startswith("tarseek: notice: rebuilding index ") and index in line
    assert "mtime" in line, line
    assert len(indexed(log)) == 1
    assert os.stat(index).st_ino != ino  # a new file renamed into place


def test_size_change_rebuilds(mount, archive, tmp_path):
    path, files = archive
    with mount(path):
        pass
    extra = tmp_path / "src" / "e.txt"
    extra.write_bytes(b"appended\n")
    run("tar", "rf", path, "-C", tmp_path / "src", "e.txt")
    with mount(path) as m:
        check_content(m.path, dict(files, **{"e.txt": b"appended\n"}))
    assert any("size" in line for line in rebuilding(m.log())), m.log()


def test_same_size_and_mtime_new_content_rebuilds(mount, archive):
    """Replacing the content without changing size or mtime is caught by the fingerprint."""
    path, files = archive
    with mount(path) as m:
        check_content(m.path, files)
    data = bytearray(open(path, "rb").read())
    at = data.find(b"alpha\nalpha\n")
    assert at > 0
    data[at:at + 5] = b"ALPHA"
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns and os.stat(path).st_size == st.st_size
    with mount(path) as m:
        check_content(m.path, dict(files, **{"a.txt": b"ALPHA" + files["a.txt"][5:]}))
    assert any("content" in line for line in rebuilding(m.log())), m.log()
    assert len(indexed(m.log())) == 1


def test_recreate_index(mount, archive):
    path, files = archive
    with mount(path):
        pass
    index = str(path) + ".index.sqlite"
    ino = os.stat(index).st_ino
    with mount(path, "--recreate-index") as m:
        check_content(m.path, files)
    assert any("--recreate-index" in line for line in rebuilding(m.log())), m.log()
    assert len(indexed(m.log())) == 1
    assert os.stat(index).st_ino != ino


def test_index_file_option(mount, archive, tmp_path):
    path, files = archive
    index = tmp_path / "elsewhere" / "my.idx"
    index.parent.mkdir()
    with mount(path, "--index-file", index) as m:
        check_content(m.path, files)
    assert len(indexed(m.log())) == 1
    assert index.is_file()
    assert not os.path.exists(str(path) + ".index.sqlite")
    before = fingerprint_of(index)
    with mount(path, "--index-file", index) as m:
        check_content(m.path, files)
    assert indexed(m.log()) == []
    assert fingerprint_of(index) == before
    # an index made for another archive at that path: rebuilt, not used
    other = tmp_path / "arch" / "other.tar"
    run("tar", "cf", other, "-C", tmp_path / "src", "a.txt")
    with mount(other, "--index-file", index) as m:
        assert os.listdir(m.path) == ["a.txt"]
    assert len(rebuilding(m.log())) == 1, m.log()


def test_index_folder_option(mount, archive, tmp_path):
    path, files = archive
    folder = tmp_path / "indexes" / "sub"
    with mount(path, "--index-folder", folder) as m:
        check_content(m.path, files)
    made = os.listdir(folder)
    assert len(made) == 1 and made[0].startswith("t.tar.") and made[0].endswith(".index.sqlite")
    assert not os.path.exists(str(path) + ".index.sqlite")
    with mount(path, "--index-folder", folder) as m:
        pass
    assert indexed(m.log()) == []


@pytest.mark.parametrize("where", ["under-a-file", "a-file", "missing-parent-file"])
def test_unusable_index_location_says_why(archive, tmp_path, where):
    """An index folder or file that cannot be made: exit 1 with a message naming it."""
    path, _ = archive
    afile = tmp_path / "afile"
    afile.write_bytes(b"x")
    opt, loc = {"under-a-file": ("--index-folder", afile / "sub"),
                "a-file": ("--index-folder", afile),
                "missing-parent-file": ("--index-file", afile / "x.idx")}[where]
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run_tarseek("-f", opt, loc, path, mnt)
    assert r.returncode == 1
    assert str(afile) in r.stderr, f"no message naming {loc}: {r.stderr!r}"
    assert not is_mounted(mnt)
    assert afile.read_bytes() == b"x"


def test_index_inside_mount_point_refused(archive, tmp_path):
    path, _ = archive
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run_tarseek("-f", "--index-file", mnt / "x.sqlite", path, mnt)
    assert r.returncode == 1
    assert "inside the mount point" in r.stderr
    assert not is_mounted(mnt)


@pytest.fixture
def readonly_folder(tmp_path):
    """make(folder) -> a read-only view of folder (a read-only bind mount), unmounted after."""
    if not IS_ROOT:
        pytest.skip("bind mounts need root")
    made = []

    def make(folder):
        ro = tmp_path / (os.path.basename(folder) + "-ro")
        ro.mkdir()
        r = run("mount", "--bind", folder, ro, check=False)
        if r.returncode != 0:
            pytest.skip(f"mount --bind failed: {r.stderr.decode()}")
        made.append(ro)
        run("mount", "-o", "remount,bind,ro", ro)
        assert not os.access(ro, os.W_OK)
        return ro
    yield make
    for ro in made:
        subprocess.run(["umount", "-l", ro], check=False)


def test_unwritable_folder_uses_cache_home(mount, archive, tmp_path, readonly_folder):
    path, files = archive
    ro = readonly_folder(path.parent)
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    with mount(ro / "t.tar", env=env) as m:
        check_content(m.path, files)
    assert len(indexed(m.log())) == 1, m.log()
    made = os.listdir(cache / "tarseek")
    assert len(made) == 1 and made[0].startswith("t.tar.") and made[0].endswith(".index.sqlite")
    assert os.listdir(path.parent) == ["t.tar"]
    before = fingerprint_of(cache / "tarseek" / made[0])
    with mount(ro / "t.tar", env=env) as m:
        check_content(m.path, files)
    assert indexed(m.log()) == []
    assert fingerprint_of(cache / "tarseek" / made[0]) == before


def test_prebuilt_index_beside_readonly_archive(mount, archive, tmp_path, readonly_folder):
    """An index shipped beside the archive is used even where nothing can be written."""
    path, files = archive
    with mount(path):
        pass
    ro = readonly_folder(path.parent)
    cache = tmp_path / "cache"
    with mount(ro / "t.tar", env={"XDG_CACHE_HOME": str(cache)}) as m:
        check_content(m.path, files)
    assert indexed(m.log()) == [], m.log()
    assert not os.path.exists(cache / "tarseek") or os.listdir(cache / "tarseek") == []


def test_incomplete_index_rebuilt(mount, archive):
    path, files = archive
    with mount(path):
        pass
    index = str(path) + ".index.sqlite"
    db = sqlite3.connect(index)
    with db:
        n = db.execute("DELETE FROM meta WHERE key = 'complete'").rowcount
    db.close()
    assert n == 1
    with mount(path) as m:
        check_content(m.path, files)
    assert any("incomplete" in line for line in rebuilding(m.log())), m.log()
    db = sqlite3.connect(index)
    assert db.execute("SELECT value FROM meta WHERE key = 'complete'").fetchone() is not None
    db.close()


def test_other_format_version_rebuilt(mount, archive):
    path, files = archive
    with mount(path):
        pass
    db = sqlite3.connect(str(path) + ".index.sqlite")
    with db:
        db.execute("UPDATE meta SET value = 999999 WHERE key = 'format'")
    db.close()
    with mount(path) as m:
        check_content(m.path, files)
    assert any("version" in line for line in rebuilding(m.log())), m.log()


def test_garbage_index_refused(archive, tmp_path):
    """A file at --index-file that is not a tarseek index is never overwritten: the mount is
    refused, saying why."""
    path, _ = archive
    garbage = b"this is not an index, it is someone's notes\n" * 10
    index = tmp_path / "notes.txt"
    index.write_bytes(garbage)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run_tarseek("-f", "--index-file", index, path, mnt)
    assert r.returncode == 1, r
    assert str(index) in r.stderr and "not a tarseek index" in r.stderr, r.stderr
    assert index.read_bytes() == garbage
    assert not is_mounted(mnt)
    # an empty file is not an index either
    index.write_bytes(b"")
    r = run_tarseek("-f", "--index-file", index, path, mnt)
    assert r.returncode == 1 and "not a tarseek index" in r.stderr, r.stderr
    assert index.read_bytes() == b""


@pytest.mark.parametrize("kind", ["text", "ratarmount-like"])
def test_foreign_file_beside_passed_over(mount, archive, tmp_path, kind):
    """ARCHIVE.index.sqlite that is not ours (ratarmount writes that very name) is left alone:
    the index goes to the cache folder instead, with a notice."""
    path, files = archive
    beside = tmp_path / "arch" / "t.tar.index.sqlite"
    if kind == "text":
        beside.write_bytes(b"this is not an index, it is someone's notes\n" * 10)
    else:
        db = sqlite3.connect(beside)
        db.execute("CREATE TABLE files (path VARCHAR(65535), name VARCHAR(65535))")
        db.execute("CREATE TABLE metadata (key VARCHAR(65535), value VARCHAR(65535))")
        db.commit()
        db.close()
    content = beside.read_bytes()
    cache = tmp_path / "xdg"
    with mount(path, env={"XDG_CACHE_HOME": str(cache)}) as m:
        check_content(m.path, files)
    assert "not a tarseek index" in m.log() and "leaving it alone" in m.log(), m.log()
    assert beside.read_bytes() == content
    assert [p.name for p in (cache / "tarseek").iterdir() if p.name.endswith(".sqlite")]


def start_and_wait(args, timeout=20):
    """Starts tarseek -f args...; returns (exit status or None if it mounted, stderr)."""
    mnt = args[-1]
    proc = subprocess.Popen([TARSEEK, "-f", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while proc.poll() is None and not is_mounted(mnt) and time.monotonic() < deadline:
        time.sleep(0.02)
    if proc.poll() is None:
        subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return None, proc.stderr.read()
    return proc.returncode, proc.stderr.read()


def test_sqlite_file_of_another_program_refused(archive, tmp_path):
    """An SQLite database that is not a tarseek index (no meta table) must not be
    overwritten: --index-file pointing at the wrong file is a typo away."""
    path, _ = archive
    index = tmp_path / "app.db"
    db = sqlite3.connect(index)
    with db:
        db.execute("CREATE TABLE precious (x)")
        db.execute("INSERT INTO precious VALUES ('keep me')")
    db.close()
    before = index.read_bytes()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    rc, err = start_and_wait(["--index-file", index, path, mnt])
    assert index.read_bytes() == before, f"another program's database was overwritten: {err}"
    assert rc == 1 and str(index) in err, (rc, err)


# ---- command line errors --------------------------------------------------------------------

def test_cli_errors(archive, tmp_path):
    path, _ = archive
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    notatar = tmp_path / "random.bin"
    notatar.write_bytes(random_bytes(10_000, 9))
    afile = tmp_path / "afile"
    afile.write_bytes(b"x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = [
        ([tmp_path / "missing.tar", mnt], ["missing.tar", "No such file"]),
        ([fifo, mnt], ["fifo", "not seekable"]),
        ([notatar, mnt], ["random.bin", "not an archive"]),
        ([path, tmp_path / "nomnt"], ["nomnt", "No such file"]),
        ([path, afile], ["afile", "not a directory"]),
    ]
    for args, words in cases:
        r = run_tarseek("-f", *args)
        assert r.returncode == 1, (args, r)
        for w in words:
            assert w in r.stderr, (args, w, r.stderr)
        assert r.stderr.startswith("tarseek: "), r.stderr
        assert not is_mounted(mnt)
    # nothing left behind for the file that is not an archive
    assert not os.path.exists(str(notatar) + ".index.sqlite")
    assert [n for n in os.listdir(tmp_path) if "tmp" in n] == []


def test_busy_mount_point(mount, archive, tmp_path):
    path, files = archive
    with mount(path) as m:
        r = run_tarseek("-f", path, m.path)
        assert r.returncode == 1
        assert m.path in r.stderr and "busy" in r.stderr, r.stderr
        check_content(m.path, files)  # the first mount is unharmed


def test_usage_errors(archive, tmp_path):
    path, _ = archive
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    for args in (["--no-such-option", path, mnt], ["-Z", path, mnt], [], ["-u"],
                 ["--gzip-spacing", "0.01", path, mnt],
                 ["--gzip-spacing", "lots", path, mnt], ["--cache-size", "1K", path, mnt],
                 ["--threads", "0", path, mnt], ["--threads", "x", path, mnt],
                 ["--index-file"]):
        r = run_tarseek(*args)
        assert r.returncode == 2, (args, r)
        assert "tarseek" in r.stderr and "--help" in r.stderr, (args, r.stderr)
        assert not is_mounted(mnt)
    # a source that is the mount point (or inside it) would be hidden by the mount
    r = run_tarseek(path, mnt, mnt)
    assert r.returncode == 1 and "inside the mount point" in r.stderr, r
    assert not is_mounted(mnt)


def test_help_and_version():
    r = run_tarseek("--help")
    assert r.returncode == 0 and r.stdout.startswith("Usage: tarseek")
    for opt in ("--index-file", "--index-folder", "--recreate-index", "--gzip-spacing",
                "--cache-size", "--threads", "-f", "-d", "-o", "-q", "--version"):
        assert opt in r.stdout, opt
    r = run_tarseek("-h")
    assert r.returncode == 0 and "Usage" in r.stdout
    r = run_tarseek("--version")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith("tarseek ") and any(l.startswith("codecs: ") for l in lines)
    assert "gzip" in r.stdout
    assert run_tarseek("-V").stdout == r.stdout


def test_quiet_mount_logs_nothing(mount, archive):
    path, files = archive
    with mount(path, "-q") as m:
        check_content(m.path, files)
    assert m.log() == ""


# ---- daemon life ---------------------------------------------------------------------------

def daemon_pids(mnt):
    """Pids of tarseek processes whose command line names mnt."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"tarseek" and os.fsencode(mnt) in argv:
            out.append(int(pid))
    return out


def test_daemon_detaches(archive, tmp_path):
    path, files = archive
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    start = time.monotonic()
    r = run_tarseek(path, mnt, timeout=60)
    try:
        assert r.returncode == 0, r
        assert is_mounted(mnt), "the parent returned before the mount was there"
        pids = daemon_pids(mnt)
        assert len(pids) == 1, pids
        # the daemon is in its own session, not our child
        assert os.getsid(pids[0]) == pids[0]
        check_content(mnt, files)
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
    deadline = time.monotonic() + 10
    while daemon_pids(mnt) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert daemon_pids(mnt) == [], "the daemon did not exit after fusermount3 -u"
    assert not is_mounted(mnt)
    assert time.monotonic() - start < 30


def test_daemon_with_relative_paths(tmp_path):
    """Relative archive, mount point and --index-file: the daemon changes to / when it
    detaches, and every FUSE thread (each opening its own SQLite connection) still finds
    the archive and the index."""
    from concurrent.futures import ThreadPoolExecutor
    src = tmp_path / "src"
    src.mkdir()
    files = {f"f{i:03d}": semi_random(1000 + 37 * i, i) for i in range(200)}
    for n, d in files.items():
        (src / n).write_bytes(d)
    run("tar", "czf", tmp_path / "r.tar.gz", "-C", src, ".")
    (tmp_path / "mnt").mkdir()
    r = subprocess.run([TARSEEK, "--index-file", "r.idx", "r.tar.gz", "mnt"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    mnt = tmp_path / "mnt"
    try:
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "r.idx").is_file()

        def read(n):
            return (mnt / n).read_bytes() == files[n]
        with ThreadPoolExecutor(8) as ex:
            assert all(ex.map(read, sorted(files)))
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
    deadline = time.monotonic() + 10
    while daemon_pids(mnt) and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.parametrize("sig, relative", [(signal.SIGTERM, False), (signal.SIGINT, False),
                                           (signal.SIGHUP, False), (signal.SIGTERM, True)])
def test_signal_unmounts_cleanly(archive, tmp_path, sig, relative):
    """relative: the mount point is given relative to the current folder; the daemon changes
    to / once mounted, so it must keep the absolute path to unmount at exit (it used to fail
    with "failed to unmount mnt", leaving a dead mount behind)."""
    path, files = archive
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log_path = tmp_path / "log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([TARSEEK, "-f", path, "mnt" if relative else mnt], stdout=log,
                                stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        wait_mounted(proc, str(mnt), str(log_path))
        check_content(mnt, files)
        proc.send_signal(sig)
        rc = proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt])
    assert rc == 0, (rc, log_path.read_text())
    assert not is_mounted(mnt), log_path.read_text()
    assert ": error:" not in log_path.read_text()
    assert "failed to unmount" not in log_path.read_text()
    # and the index it used is still valid
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([TARSEEK, "-f", path, mnt], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_mounted(proc, str(mnt), str(log_path))
    finally:
        subprocess.run(["fusermount3", "-u", mnt])
        proc.wait(timeout=15)
    assert proc.returncode == 0
    assert len(indexed(log_path.read_text())) == 1


def test_signal_while_file_open(archive, tmp_path):
    """SIGTERM with a file open: the daemon still exits 0 (the mount is detached lazily)."""
    path, files = archive
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log_path = tmp_path / "log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([TARSEEK, "-f", path, mnt], stdout=log, stderr=subprocess.STDOUT)
    fd = None
    try:
        wait_mounted(proc, str(mnt), str(log_path))
        fd = os.open(mnt / "b.bin", os.O_RDONLY)
        assert os.read(fd, 10) == files["b.bin"][:10]
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=15)
    finally:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass  # ENOTCONN: the daemon is gone, as it should be
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt])
    assert rc == 0, (rc, log_path.read_text())

