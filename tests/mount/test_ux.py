"""What a ratarmount user reaches for (issue 37): the sources and mount points they give, and
what the daemon tells them afterwards.

- A folder alone as the source: a read-only view of it, every byte and type as in the
  folder; with -r the archives in it show as folders, their indexes go to the cache folder
  (never into the user's folder), and tarseek's own files beside an archive are never shown.
- `tarseek ARCHIVE`: mounted at ./NAME (the name without its archive extension), made, and
  removed at unmount; an empty folder of that name is used and kept; a file or a folder that
  is not empty is refused with a message.
- user.tarseek.log on the root: the daemon's last messages (info and up), also when
  detached; a plain archive changed under the mount fails its reads (EIO, even for pages the
  kernel had cached) and the log names the member; --log-file gets the same lines.
- Refusals with a message: zip's magic followed by garbage; a pipe as the source.
- --index-file :memory:: no index file anywhere, nothing left in memory after unmount.
"""
import errno
import glob
import os
import subprocess
import tarfile
import time

import pytest

from conftest import TARSEEK, is_mounted, random_bytes, run, run_tarseek, text_data


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def root_log(mnt):
    return os.getxattr(str(mnt), "user.tarseek.log").decode()


@pytest.fixture
def folder(tmp_path):
    """A folder holding a .tar.gz, a plain file, a sub-folder and a symlink; and the tree the
    archive was made of."""
    src = tmp_path / "src"
    write(str(src / "sub" / "rand.bin"), random_bytes(300_000, seed=1))
    write(str(src / "seq.txt"), text_data(200_000, seed=2))
    d = tmp_path / "folder"
    os.makedirs(d / "deep")
    run("tar", "-czf", str(d / "a.tar.gz"), "-C", str(src), ".")
    write(str(d / "plain.txt"), b"hello\n")
    write(str(d / "deep" / "x.bin"), random_bytes(70_000, seed=3))
    os.symlink("plain.txt", d / "link")
    return d, src


def test_folder_alone(mount, folder):
    d, _ = folder
    with mount(d) as m:
        assert sorted(os.listdir(m)) == ["a.tar.gz", "deep", "link", "plain.txt"]
        assert read(os.path.join(m.path, "plain.txt")) == b"hello\n"
        assert read(os.path.join(m.path, "deep", "x.bin")) == read(d / "deep" / "x.bin")
        assert read(os.path.join(m.path, "a.tar.gz")) == read(d / "a.tar.gz")
        assert os.readlink(os.path.join(m.path, "link")) == "plain.txt"
        with pytest.raises(OSError) as e:
            open(os.path.join(m.path, "new.txt"), "w")
        assert e.value.errno in (errno.EROFS, errno.EACCES)


def test_folder_recursive_keeps_the_folder_clean(mount, folder, tmp_path):
    d, src = folder
    cache = tmp_path / "cache"
    before = sorted(os.listdir(d))
    with mount("-r", d, env={"XDG_CACHE_HOME": str(cache)}) as m:
        inner = os.path.join(m.path, "a.tar.gz")
        assert os.path.isdir(inner)
        assert read(os.path.join(inner, "seq.txt")) == read(src / "seq.txt")
        assert read(os.path.join(inner, "sub", "rand.bin")) == read(src / "sub" / "rand.bin")
    assert sorted(os.listdir(d)) == before  # no index written beside a.tar.gz
    assert glob.glob(str(cache / "tarseek" / "a.tar.gz.*.index.sqlite"))


def test_own_files_hidden_in_folder_sources(mount, folder, tmp_path):
    d, _ = folder
    # an index beside the archive, made by mounting it directly
    with mount(d / "a.tar.gz"):
        pass
    assert os.path.exists(str(d / "a.tar.gz") + ".index.sqlite")
    write(str(d / "orphan.index.sqlite"), b"not beside an archive of that name")
    with mount(d) as m:
        names = os.listdir(m)
        assert "a.tar.gz.index.sqlite" not in names
        assert not os.path.exists(os.path.join(m.path, "a.tar.gz.index.sqlite"))
        assert "orphan.index.sqlite" in names  # the user's file, not ours: shown


def test_default_mount_point(folder, tmp_path):
    d, src = folder
    work = tmp_path / "work"
    os.makedirs(work)
    arch = work / "backup.tar.gz"
    arch.write_bytes(read(d / "a.tar.gz"))
    r = subprocess.run([TARSEEK, "backup.tar.gz"], cwd=work, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    mnt = str(work / "backup")
    try:
        assert is_mounted(mnt)
        assert read(os.path.join(mnt, "seq.txt")) == read(src / "seq.txt")
    finally:
        subprocess.run([TARSEEK, "-u", mnt], check=True, timeout=120)
    assert not os.path.exists(mnt)  # made by tarseek: removed at unmount
    # an empty folder of that name: used, and kept
    os.makedirs(mnt)
    r = subprocess.run([TARSEEK, "backup.tar.gz"], cwd=work, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert is_mounted(mnt)
    subprocess.run([TARSEEK, "-u", mnt], check=True, timeout=120)
    assert os.path.isdir(mnt)
    # a folder that is not empty: refused
    write(os.path.join(mnt, "keep.txt"), b"mine")
    r = subprocess.run([TARSEEK, "backup.tar.gz"], cwd=work, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0 and "no mount point given" in r.stderr, r.stderr
    assert not is_mounted(mnt) and read(os.path.join(mnt, "keep.txt")) == b"mine"


def test_default_mount_point_names(tmp_path):
    work = tmp_path / "w"
    os.makedirs(work / "src")
    write(str(work / "src" / "f.txt"), b"f\n")
    run("tar", "-cf", str(work / "data.tar"), "-C", str(work / "src"), ".")
    os.rename(work / "data.tar", work / "data.tar.001")  # a part's number goes, then .tar
    r = subprocess.run([TARSEEK, "data.tar.001"], cwd=work, capture_output=True, text=True,
                       timeout=120)
    if r.returncode == 0:  # a lone .001 is a file like any other
        subprocess.run([TARSEEK, "-u", str(work / "data")], check=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(work / "data")
    os.rename(work / "data.tar.001", work / "noext")
    r = subprocess.run([TARSEEK, "noext"], cwd=work, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0 and "no extension" in r.stderr, r.stderr


def make_plain(tmp_path):
    src = tmp_path / "psrc"
    write(str(src / "big.bin"), random_bytes(3_000_000, seed=4))
    write(str(src / "small.txt"), b"small\n")
    arch = tmp_path / "chg.tar"
    run("tar", "-cf", str(arch), "-C", str(src), ".")
    return arch


def corrupt(arch, member, at):
    with tarfile.open(arch) as t:
        off = t.getmember(member).offset_data + at
    with open(arch, "r+b") as f:
        f.seek(off)
        f.write(b"\xff\xff\xff\xff")


def test_log_ring_and_changed_archive(mount, tmp_path):
    arch = make_plain(tmp_path)
    # --no-prefetch: no warm-up, which would store big.bin's pages in the kernel (FUSE
    # notify_store) at a moment of its own -- a read served from them never reaches the daemon,
    # and whether it came before the read below was the machine's timing (a busy CI run)
    with mount(arch, "--no-prefetch", allow_errors=True) as m:
        assert read(os.path.join(m.path, "small.txt")) == b"small\n"  # kept by the kernel
        corrupt(arch, "./big.bin", 100_000)
        with pytest.raises(OSError) as e:
            read(os.path.join(m.path, "big.bin"))
        assert e.value.errno == errno.EIO
        # the daemon's watch drops the kernel's pages when inotify tells it, in a thread of
        # its own, and logs it once they are gone: wait for that, then small.txt reaches it
        deadline = time.monotonic() + 30
        while "changed under the mount" not in root_log(m) and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(OSError):  # cached pages dropped too
            read(os.path.join(m.path, "small.txt"))
        log = root_log(m)
        assert "big.bin: the archive changed" in log, log
        assert "changed under the mount" in log, log
        assert len(os.getxattr(m.path, "user.tarseek.log")) <= 64 * 1024


def test_log_file_detached(tmp_path):
    arch = make_plain(tmp_path)
    mnt = tmp_path / "m"
    os.makedirs(mnt)
    logf = tmp_path / "t.log"
    # --no-prefetch: no warm-up storing big.bin's pages first (test_log_ring_and_changed_archive)
    r = subprocess.run([TARSEEK, "--no-prefetch", "--log-file", str(logf), str(arch), str(mnt)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    try:
        corrupt(arch, "./big.bin", 10)
        with pytest.raises(OSError):
            read(os.path.join(mnt, "big.bin"))
        ring = root_log(mnt)  # detached: the ring has what the command printed too
        assert "indexed chg.tar" in ring and "big.bin: the archive changed" in ring, ring
    finally:
        subprocess.run([TARSEEK, "-u", str(mnt)], check=True, timeout=120)
    text = logf.read_text()
    assert "indexed chg.tar" in text and "big.bin: the archive changed" in text, text
    lines = [l for l in text.splitlines() if "big.bin: the archive changed" in l]
    assert lines[0].split()[2].startswith("tarseek[") and ": error: " in lines[0]


def test_zip_garbage_refused(tmp_path):
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"PK\x03\x04" + random_bytes(5000, seed=5))
    mnt = tmp_path / "m"
    os.makedirs(mnt)
    r = run_tarseek("-f", junk, mnt)
    assert r.returncode == 1 and "not a zip archive" in r.stderr, r.stderr
    assert not is_mounted(str(mnt))


def test_pipe_refused(tmp_path):
    mnt = tmp_path / "m"
    os.makedirs(mnt)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = run_tarseek("-f", fifo, mnt)
    assert r.returncode == 1 and "not seekable" in r.stderr, r.stderr
    r = subprocess.run(f"cat /dev/null | {TARSEEK} -f /dev/stdin {mnt}", shell=True,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "not seekable" in r.stderr, r.stderr


def shm_dirs():
    return set(glob.glob("/dev/shm/tarseek-mem-*")) | set(glob.glob("/var/tmp/tarseek-mem-*"))


def test_index_in_memory(mount, folder, tmp_path):
    d, src = folder
    cache = tmp_path / "cache"
    before = shm_dirs()
    with mount("--index-file", ":memory:", d / "a.tar.gz",
               env={"XDG_CACHE_HOME": str(cache)}) as m:
        assert read(os.path.join(m.path, "seq.txt")) == read(src / "seq.txt")
        assert len(shm_dirs() - before) == 1
    assert not os.path.exists(":memory:") and not os.path.exists(d / ":memory:")
    assert not os.path.exists(str(d / "a.tar.gz") + ".index.sqlite")
    assert not os.path.exists(cache / "tarseek") or not os.listdir(cache / "tarseek")
    assert shm_dirs() == before
