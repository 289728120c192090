"""Mount tests of what a small-file read costs and of what happens right after mounting.

- Requests: the root's user.tarseek.requests counts every request the daemon handled, so the
  requests one read of a small file causes are asserted exactly: one READ (no OPEN, FLUSH or
  RELEASE: the kernel's "no open" mode), one LOOKUP per path component not yet known, none
  at all for a read whose pages the kernel holds.  TARSEEK_KERNEL_OPENS=1 checks the way
  kernels without "no open" work.
- The tree walk: once user.tarseek.prefetch says tree=done, every path is known to the
  kernel: a read of any file costs its READ only, and walking the tree costs nothing.
- The whole-archive prefetch: a compressed bundle that fits the cache is decoded whole in
  the background (data=done), after which reading every file decodes nothing more; one that
  does not fit is not prefetched at all, and the daemon's memory stays within its budget; a
  read during the prefetch gets its bytes; an unmount during it is quick and clean; a block
  that is damaged costs only the reads of its files.

Archives are made by GNU tar and the codecs' own tools; contents are checked against the
tree they were made from.
"""

import os
import subprocess
import time

import pytest

from conftest import have, run, sanitized, semi_random

pytestmark = pytest.mark.skipif(not have("tar"), reason="needs GNU tar")


def requests(mnt):
    """The request counts: {"read": n, ...} (kinds not seen yet are absent)."""
    text = os.getxattr(mnt, "user.tarseek.requests").decode()
    out = {}
    for line in text.splitlines():
        name, count, _ = line.split()
        out[name] = int(count)
    return out


def delta(before, after):
    """What changed between two request counts, without the getxattr that read them."""
    d = {k: after.get(k, 0) - before.get(k, 0) for k in set(before) | set(after)}
    d["getxattr"] = d.get("getxattr", 0) - 1
    return {k: v for k, v in d.items() if v}


def prefetch_state(mnt):
    """{"data": "running", "chunks": "3", ..., "tree": "done", "pages": "running", ...}"""
    out = {}
    for word in os.getxattr(mnt, "user.tarseek.prefetch").decode().split():
        key, value = word.split("=")
        out[key] = value
    return out


def wait_for(what, pred, timeout=120):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"still not {what} after {timeout} s"
        time.sleep(0.01)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def make_bundle(root, dirs=6, files=25, size=3000, seed=1):
    """A sosreport-like tree: folders of small text-like files, one level deeper too."""
    contents = {}
    for d in range(dirs):
        for i in range(files):
            rel = f"d{d}/sub/f{i:02d}.txt" if i % 5 == 0 else f"d{d}/f{i:02d}.txt"
            data = semi_random(size + 37 * i, seed=seed * 1000 + d * 100 + i)
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            contents[rel] = data
    return contents


@pytest.fixture
def bundle(tmp_path):
    tree = tmp_path / "tree"
    contents = make_bundle(tree)
    tar = tmp_path / "bundle.tar"
    run("tar", "--sort=name", "-cf", tar, "-C", tree, ".")
    return tar, contents


def big_bundle(tmp_path, mib, codec_cmd, suffix, name="big"):
    """A tar of about mib MiB of compressible files, compressed by codec_cmd."""
    tree = tmp_path / f"{name}-tree"
    contents = {}
    for i in range(mib * 4):  # 256 KiB files
        rel = f"part{i // 64}/file{i:04d}.bin"
        data = semi_random(256 << 10, seed=i + 7)
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
        contents[rel] = data
    tar = tmp_path / f"{name}.tar"
    run("tar", "--sort=name", "-cf", tar, "-C", tree, ".")
    out = tmp_path / f"{name}.tar{suffix}"
    with open(tar, "rb") as src, open(out, "wb") as dst:
        subprocess.run(codec_cmd, stdin=src, stdout=dst, check=True)
    os.unlink(tar)
    return out, contents


# ---- requests per read --------------------------------------------------------------------


@pytest.mark.kernel_caches
def test_small_file_read_is_one_request(mount, bundle):
    tar, contents = bundle
    with mount(tar, "--no-prefetch") as m:
        assert read(os.path.join(m.path, "d0/f01.txt")) == contents["d0/f01.txt"]
        before = requests(m.path)
        assert "open" in before and "release" not in before, before  # open said ENOSYS once
        # a file in a known folder: its LOOKUP and one READ, nothing else
        assert read(os.path.join(m.path, "d0/f02.txt")) == contents["d0/f02.txt"]
        after = requests(m.path)
        assert delta(before, after) == {"lookup": 1, "read": 1}, delta(before, after)
        # again: the kernel holds its entry and its pages
        assert read(os.path.join(m.path, "d0/f02.txt")) == contents["d0/f02.txt"]
        os.stat(os.path.join(m.path, "d0/f02.txt"))
        again = requests(m.path)
        assert delta(after, again) == {}, delta(after, again)
        # three new components: three lookups
        assert read(os.path.join(m.path, "d1/sub/f05.txt")) == contents["d1/sub/f05.txt"]
        assert delta(again, requests(m.path)) == {"lookup": 3, "read": 1}


@pytest.mark.kernel_caches
def test_kernel_opens_fallback(mount, bundle):
    """Without "no open" (old kernels, or TARSEEK_KERNEL_OPENS=1) a read costs OPEN, READ and
    RELEASE, and no FLUSH (the handle says noflush)."""
    tar, contents = bundle
    with mount(tar, "--no-prefetch", env={"TARSEEK_KERNEL_OPENS": "1"}) as m:
        assert read(os.path.join(m.path, "d0/f01.txt")) == contents["d0/f01.txt"]
        # that read's RELEASE may come late (see below): counted before the next read
        wait_for("released", lambda: requests(m.path).get("release", 0) >= 1, timeout=30)
        before = requests(m.path)
        assert read(os.path.join(m.path, "d0/f02.txt")) == contents["d0/f02.txt"]
        # the kernel sends RELEASE after close() has returned (it is asynchronous for a
        # FUSE mount), so a loaded machine may count it a little later
        wait_for("released", lambda: requests(m.path).get("release", 0)
                 > before.get("release", 0), timeout=30)
        after = requests(m.path)
        d = delta(before, after)
        d.pop("getxattr", None)  # the polling's own
        assert d == {"lookup": 1, "open": 1, "read": 1, "release": 1}, d
        names = []
        for dirpath, _, files in os.walk(m.path):  # opendir/releasedir are used as well
            names += [os.path.relpath(os.path.join(dirpath, f), m.path) for f in files]
        assert sorted(names) == sorted(contents)


@pytest.mark.kernel_caches
def test_tree_walk_leaves_nothing_to_look_up(mount, bundle):
    tar, contents = bundle
    with mount(tar) as m:
        wait_for("walked", lambda: prefetch_state(m.path)["tree"] == "done")
        assert read(os.path.join(m.path, "d0/f01.txt")) == contents["d0/f01.txt"]
        before = requests(m.path)
        for rel in ("d3/f04.txt", "d5/sub/f20.txt"):
            assert read(os.path.join(m.path, rel)) == contents[rel]
        after = requests(m.path)
        # no lookup; a READ each unless the warm-up stored its pages already
        assert delta(before, after).keys() <= {"read"}, delta(before, after)
        # a whole walk with stat: listings and attributes are all in the kernel already
        seen = {}
        for dirpath, _, files in os.walk(m.path):
            for f in files:
                full = os.path.join(dirpath, f)
                seen[os.path.relpath(full, m.path)] = os.stat(full).st_size
        assert seen == {k: len(v) for k, v in contents.items()}
        assert delta(after, requests(m.path)) == {}, delta(after, requests(m.path))


@pytest.mark.kernel_caches
def test_find_during_the_walk_leaves_nothing_to_look_up(mount, tmp_path):
    """A find right after mounting lists folders before the warm-up does, with the files'
    names bare (no attributes: cheap for find).  The warm-up drops those listings from the
    kernel's cache and lists them again with every attribute, so once it is done a stat of
    every file still costs no LOOKUP."""
    tree = tmp_path / "many"
    names = []
    for i in range(3000):
        rel = f"g{i // 300:02d}/f{i:04d}"
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(b"y")
        names.append(rel)
    tar = tmp_path / "many.tar"
    run("tar", "-cf", tar, "-C", tree, ".")
    for _ in range(3):  # the find gets ahead of the walk in some folders, behind in others
        with mount(tar) as m:
            found = subprocess.run(["find", m.path, "-type", "f"], check=True,
                                   capture_output=True, text=True).stdout.split()
            assert len(found) == len(names)
            wait_for("walked", lambda: prefetch_state(m.path)["tree"] == "done")
            before = requests(m.path)
            for rel in names:
                assert os.stat(os.path.join(m.path, rel)).st_size == 1
            d = delta(before, requests(m.path))
            d.pop("getxattr", None)  # the polling's own
            assert d == {}, d


@pytest.mark.kernel_caches
def test_warm_pages_leave_nothing_to_read(mount, bundle):
    """Once the warm-up has stored the files' pages (a plain tar: read ahead, then spliced
    into the kernel's page cache), reading every file costs no request at all."""
    tar, contents = bundle
    with mount(tar) as m:
        wait_for("warm", lambda: prefetch_state(m.path)["pages"] == "done")
        st = prefetch_state(m.path)
        assert st["data"] == "done" and st["chunks"] == "1", st  # the archive read ahead
        assert int(st["stored"]) == sum(len(v) for v in contents.values())
        assert read(os.path.join(m.path, "d0/f01.txt")) == contents["d0/f01.txt"]
        before = requests(m.path)  # after the first open (ENOSYS: no opens from then on)
        for rel, data in contents.items():
            assert read(os.path.join(m.path, rel)) == data, rel
        assert delta(before, requests(m.path)) == {}


def wide_tar(tmp_path):
    """30,000 one-byte files in 300 folders: long enough to walk that a read right after the
    mount comes first."""
    import io
    import tarfile
    tar = tmp_path / "wide.tar"
    with tarfile.open(tar, "w", format=tarfile.GNU_FORMAT) as t:
        for i in range(30000):
            info = tarfile.TarInfo(f"g{i // 100:03d}/f{i:05d}")
            info.size = 1
            t.addfile(info, io.BytesIO(b"z"))
    return tar


@pytest.mark.kernel_caches
def test_warmup_waits_for_the_user(mount, tmp_path):
    """The warm-up gives way to the user's requests: after a read it waits (tree=waiting)
    and lists nothing until the user has been quiet for the quiet time
    (TARSEEK_WARMUP_QUIET_MS, made long here), then goes on to the end.  Polling the status
    (GETXATTR) does not hold it up."""
    tar = wide_tar(tmp_path)
    with mount(tar, env={"TARSEEK_WARMUP_QUIET_MS": "4000"}) as m:
        assert read(os.path.join(m.path, "g299/f29999")) == b"z"  # the user's request
        # at its next folder the walk gives way (a listing under way has ended by then)
        wait_for("giving way", lambda: prefetch_state(m.path)["tree"] in ("waiting", "done"))
        st = prefetch_state(m.path)
        assert st["tree"] == "waiting", st
        waits = st["waits"]
        first = requests(m.path).get("readdirplus", 0)
        # for as long as that one wait lasts (state read after the count: the count was
        # taken inside it), nothing is listed
        seen = 0
        while True:
            n = requests(m.path).get("readdirplus", 0)
            st = prefetch_state(m.path)
            if st["tree"] != "waiting" or st["waits"] != waits:
                break
            assert n == first, f"listed while giving way: {n} READDIRPLUS, {first} before"
            seen += 1
        assert seen > 0
        wait_for("walked", lambda: prefetch_state(m.path)["tree"] == "done", timeout=60)
        assert requests(m.path)["readdirplus"] > first + 100  # ~300 folders, listed after
        before = requests(m.path)
        assert os.stat(os.path.join(m.path, "g123/f12345")).st_size == 1
        assert "lookup" not in delta(before, requests(m.path))


def test_unmount_while_the_warmup_gives_way(mount, tmp_path):
    """An unmount while the walk waits for the user to be quiet ends the daemon at once, not
    when the quiet time is over (10 minutes here; mount() fails a daemon still running 30 s
    after its unmount)."""
    tar = wide_tar(tmp_path)
    with mount(tar, env={"TARSEEK_WARMUP_QUIET_MS": "600000"}) as m:
        assert read(os.path.join(m.path, "g299/f29999")) == b"z"  # the user's request
        wait_for("giving way", lambda: prefetch_state(m.path)["tree"] in ("waiting", "done"))
        assert prefetch_state(m.path)["tree"] == "waiting"


def test_no_warmup_without_prefetch(mount, bundle):
    tar, _ = bundle
    with mount(tar, "--no-prefetch") as m:
        assert prefetch_state(m.path) == {"data": "off", "chunks": "0", "done": "0",
                                          "failed": "0", "bytes": "0", "tree": "off",
                                          "pages": "off", "stored": "0", "waits": "0"}
        assert "readdirplus" not in requests(m.path)


# ---- the whole-archive prefetch -------------------------------------------------------------


@pytest.mark.parametrize("codec", [["gzip", "-6"], ["xz", "-T2", "--block-size=256KiB"],
                                   ["bzip2", "-1"]], ids=["gz", "xz", "bz2"])
@pytest.mark.kernel_caches
def test_prefetch_decodes_the_bundle(mount, tmp_path, codec):
    if not have(codec[0]):
        pytest.skip(f"needs {codec[0]}")
    arc, contents = big_bundle(tmp_path, 6, codec, "." + {"gzip": "gz", "xz": "xz",
                                                          "bzip2": "bz2"}[codec[0]])
    with mount(arc, "--gzip-spacing", "1") as m:
        wait_for("prefetched", lambda: prefetch_state(m.path)["data"] == "done")
        st = prefetch_state(m.path)
        assert int(st["chunks"]) > 1 and st["done"] == st["chunks"] and st["failed"] == "0"
        assert int(st["bytes"]) > 6 << 20
        decoded = int(os.getxattr(m.path, "user.tarseek.decoded_bytes"))
        assert decoded >= 6 << 20
        wait_for("warm", lambda: prefetch_state(m.path)["pages"] == "done")
        first = sorted(contents)[0]
        assert read(os.path.join(m.path, first)) == contents[first]
        before = requests(m.path)  # after the first open (ENOSYS: no opens from then on)
        for rel, data in contents.items():
            assert read(os.path.join(m.path, rel)) == data, rel
        # the kernel had the pages already; every byte came from the cache
        assert delta(before, requests(m.path)) == {}
        assert int(os.getxattr(m.path, "user.tarseek.decoded_bytes")) == decoded
    assert "prefetch done" in m.log()


def vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_bundle_larger_than_the_cache_is_not_prefetched(mount, tmp_path):
    arc, contents = big_bundle(tmp_path, 40, ["gzip", "-1"], ".gz")
    with mount(arc, "--cache-size", "16M", "--disk-cache-size", "0") as m:
        st = prefetch_state(m.path)
        assert st["data"] == "none" and st["chunks"] == "0", st
        wait_for("walked", lambda: prefetch_state(m.path)["tree"] == "done")
        # the warm-up's pages phase ends as "none" (nothing stored: the archive was not
        # prefetched) or "done"; once it has ended nothing decodes in the background
        wait_for("past the pages phase", lambda: prefetch_state(m.path)["pages"] != "running")
        assert prefetch_state(m.path)["pages"] == "none"  # nor are pages stored
        assert int(os.getxattr(m.path, "user.tarseek.decoded_bytes")) == 0
        rel = sorted(contents)[len(contents) // 2]
        assert read(os.path.join(m.path, rel)) == contents[rel]
        if not sanitized(m.proc.pid):  # a sanitizer's shadow and quarantine are not ours
            assert vm_hwm_mib(m.proc.pid) < 16 + 64
    assert "not prefetched" in m.log(), m.log()


def test_read_during_prefetch(mount, tmp_path):
    arc, contents = big_bundle(tmp_path, 24, ["bzip2", "-9"], ".bz2")
    with mount(arc, "--threads", "1") as m:
        assert prefetch_state(m.path)["data"] == "running"
        last = sorted(contents)[-1]  # the end of the archive: prefetch is not there yet
        assert read(os.path.join(m.path, last)) == contents[last]
        assert prefetch_state(m.path)["data"] == "running"
        first = sorted(contents)[0]
        assert read(os.path.join(m.path, first)) == contents[first]
        wait_for("prefetched", lambda: prefetch_state(m.path)["data"] == "done")
        for rel, data in contents.items():
            assert read(os.path.join(m.path, rel)) == data, rel


def test_unmount_during_prefetch(mount, tmp_path):
    arc, _ = big_bundle(tmp_path, 24, ["bzip2", "-9"], ".bz2")
    with mount(arc, "--threads", "1") as m:
        assert prefetch_state(m.path)["data"] == "running"
        # a plain unmount, not a lazy one: nothing of the prefetch or of the tree walk (which
        # lists through a private view of the mount) keeps the mount point busy
        subprocess.run(["fusermount3", "-u", m.path], check=True)
        m.proc.wait(timeout=120)  # a hang; how long the exit takes is the machine's
    assert m.proc.returncode == 0
    # stopped between two segments, not at the end of the decode: its own account says so
    log = m.log()
    assert "prefetch stopped:" in log, log
    done, total = log.split("prefetch stopped: ")[1].split(" chunks")[0].split(" of ")
    assert int(done) < int(total)


def test_damage_found_by_prefetch_fails_only_its_reads(mount, tmp_path):
    arc, contents = big_bundle(tmp_path, 12, ["bzip2", "-1"], ".bz2")
    index = tmp_path / "i.sqlite"
    with mount(arc, "--index-file", index, "--no-prefetch") as m:
        pass
    # one byte in the middle of the file (outside the fingerprinted first and last MiB),
    # the mtime kept: the index stays valid, the block's CRC fails
    st = os.stat(arc)
    assert st.st_size > 3 << 20
    with open(arc, "r+b") as f:
        f.seek(st.st_size // 2)
        b = f.read(1)
        f.seek(st.st_size // 2)
        f.write(bytes([b[0] ^ 0x55]))
    os.utime(arc, ns=(st.st_atime_ns, st.st_mtime_ns))
    with mount(arc, "--index-file", index, allow_errors=True) as m:
        wait_for("prefetched", lambda: prefetch_state(m.path)["data"] == "done")
        state = prefetch_state(m.path)
        assert state["failed"] == "1" and int(state["done"]) == int(state["chunks"]) - 1
        failed = []
        for rel, data in sorted(contents.items()):
            try:
                assert read(os.path.join(m.path, rel)) == data, rel
            except OSError as e:
                assert e.errno == 5, e  # EIO
                failed.append(rel)
        assert 1 <= len(failed) <= 4, failed  # one bzip2 block: about 100 KB
    assert "rebuild" not in m.log()


def test_unmount_during_tree_walk(mount, tmp_path):
    """The walk lists through a private, detached view of the mount: a plain unmount while
    it runs is not refused as busy, the walk stops there (its log line says how many folders
    it had listed: fewer than the tree has), the daemon ends and no view stays."""
    tree = tmp_path / "many"
    for i in range(4000):
        (tree / f"g{i // 100:02d}" / f"d{i:04d}").mkdir(parents=True)
        (tree / f"g{i // 100:02d}" / f"d{i:04d}" / "f").write_bytes(b"x")
    folders = 1 + 40 + 4000
    tar = tmp_path / "many.tar"
    run("tar", "-cf", tar, "-C", tree, ".")
    for _ in range(3):  # a walk that ended before the unmount came proves nothing: again
        with mount(tar) as m:
            wait_for("viewing", lambda: prefetch_state(m.path)["tree"] != "starting")
            assert prefetch_state(m.path)["tree"] in ("running", "done")
            st = os.stat(m.path)
            dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
            subprocess.run(["fusermount3", "-u", m.path], check=True)
            # the daemon ends (a walk that kept the file system alive to its end would still
            # end: the log line below tells the two apart, with no clock involved)
            m.proc.wait(timeout=120)

            # no view of this mount stays (field 3 is the file system's device).  The daemons
            # of tests running beside this one show theirs for the moment between bind and
            # detach, and a mount made right now may get the device number this one just gave
            # back: a leaked view stays, theirs go within microseconds
            def views():
                with open("/proc/self/mountinfo") as f:
                    return [ln for ln in f if ".tarseek-walk-" in ln and ln.split()[2] == dev]
            wait_for("without a walk view", lambda: not views(), timeout=30)
        assert m.proc.returncode == 0
        stopped = [ln for ln in m.log().splitlines() if "warm-up stopped: " in ln]
        if stopped:
            break
    else:
        raise AssertionError("the walk ended before the unmount three times:\n" + m.log())
    listed = int(stopped[0].split("warm-up stopped: ")[1].split()[0])
    assert listed < folders, stopped


def test_detached_daemon_prefetches_and_warms_after_the_command(bundle, tmp_path):
    """Detached (no -f), the prefetch and the warm-up wait until the command that mounted has
    exited (fs/main.c, struct bg), then run as in the foreground: the plain archive read
    ahead, the tree listed, the files' pages stored, so that reading them costs no request."""
    from conftest import TARSEEK, is_mounted
    tar, contents = bundle
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run([TARSEEK, "--index-folder", tmp_path / "idx", tar, mnt],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and is_mounted(mnt), r
    try:
        wait_for("warm", lambda: prefetch_state(mnt)["pages"] == "done")
        st = prefetch_state(mnt)
        assert st["data"] == "done" and st["tree"] == "done", st
        first = sorted(contents)[0]
        assert read(os.path.join(mnt, first)) == contents[first]
        before = requests(mnt)  # after the first open (ENOSYS: no opens from then on)
        for rel, data in contents.items():
            assert read(os.path.join(mnt, rel)) == data, rel
        assert delta(before, requests(mnt)) == {}
    finally:
        subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
