"""Concurrent readers of compressed archives: 8 threads reading random members (whole, or at
random offsets), all comparing bytes; 8 threads reading the same large member at once; a
chunk cache much smaller than the data (evictions while others read); lookups and listings
racing the reads.
"""
import os
import random
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import compress_file, random_bytes, require_codec, require_tool, run, semi_random

THREADS = 8
FIXED_TIME = 1_600_000_000

ARCHIVES = {
    "gzip": (["gzip", "-1", "-c"], ".tar.gz"),
    "bzip2": (["bzip2", "-1", "-c"], ".tar.bz2"),
    "xz": (["xz", "-0", "-T2", "--block-size=256KiB", "-c"], ".tar.xz"),
}


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    """{name: data}: 60 members from 0 bytes to 600 KB, plus one of 4 MB; and their tar."""
    base = tmp_path_factory.mktemp("conc")
    src = base / "src"
    src.mkdir()
    rng = random.Random(1)
    files = {}
    for i in range(60):
        n = rng.choice([0, 1, 511, 512, 4096, 70_000, 200_000, 600_000])
        data = semi_random(n, i) if i % 3 else random_bytes(n, i)
        name = f"d{i % 4}/m{i:02d}.bin"
        files[name] = data
    files["large.bin"] = semi_random(4_000_000, 99)
    for name, data in files.items():
        (src / name).parent.mkdir(exist_ok=True)
        (src / name).write_bytes(data)
    tar = base / "m.tar"
    # one time for every member: the same tar in every tree (compress_file's cache)
    run("tar", "cf", tar, f"--mtime=@{FIXED_TIME}", "-C", src, *sorted(files))
    return files, tar


def make_archive(tmp_path, members, codec):
    """The members' tar compressed for codec (made once per module, as tmp_path's copy)."""
    argv, suffix = ARCHIVES[codec]
    require_tool(argv[0])
    require_codec(codec)
    files, tar = members
    made = tar.parent / ("m" + suffix)
    if not made.exists():
        compress_file(argv, tar, made)
    archive = tmp_path / ("m" + suffix)
    shutil.copyfile(made, archive)
    return archive


def run_threads(fn, n=THREADS):
    """Runs fn(thread number) on n threads; re-raises the first failure."""
    start = threading.Barrier(n)

    def wrapped(k):
        start.wait()
        return fn(k)
    with ThreadPoolExecutor(n) as ex:
        futures = [ex.submit(wrapped, k) for k in range(n)]
        return [f.result() for f in futures]


@pytest.mark.parametrize("codec", sorted(ARCHIVES))
def test_random_members_in_parallel(mount, tmp_path, members, codec):
    files, _ = members
    archive = make_archive(tmp_path, members, codec)
    names = sorted(files)
    with mount(archive, "--gzip-spacing", "0.0625", "--cache-size", "4M") as m:
        def reader(k):
            rng = random.Random(k)
            done = 0
            for _ in range(25):
                name = rng.choice(names)
                want = files[name]
                p = os.path.join(m.path, name)
                if rng.random() < 0.3 and len(want) < 1_000_000:
                    with open(p, "rb") as f:
                        assert f.read() == want, (k, name)
                else:
                    fd = os.open(p, os.O_RDONLY)
                    try:
                        for _ in range(5):
                            off = rng.randrange(0, len(want) + 1)
                            n = rng.choice([1, 4096, 65_536, 131_072, 300_000])
                            assert os.pread(fd, n, off) == want[off:off + n], (k, name, off, n)
                    finally:
                        os.close(fd)
                done += 1
            return done
        assert sum(run_threads(reader)) == THREADS * 25


@pytest.mark.parametrize("codec", ["gzip", "xz"])
def test_same_large_member_in_parallel(mount, tmp_path, members, codec):
    """Eight sequential readers of one 4 MB member, started together at different offsets
    (they meet in the same chunks), with a small cache."""
    files, _ = members
    want = files["large.bin"]
    archive = make_archive(tmp_path, members, codec)
    with mount(archive, "--gzip-spacing", "0.0625", "--cache-size", "4M") as m:
        p = os.path.join(m.path, "large.bin")

        def reader(k):
            fd = os.open(p, os.O_RDONLY)
            try:
                off = k * 37_000  # all near the start: the same chunks, at the same time
                while off < len(want):
                    chunk = os.pread(fd, 131_072, off)
                    assert chunk == want[off:off + 131_072], (k, off)
                    assert chunk
                    off += len(chunk)
            finally:
                os.close(fd)
            return off
        assert run_threads(reader) == [len(want)] * THREADS


def test_lookups_race_reads(mount, tmp_path, members):
    """Threads walking and stat-ing the tree while others read: every answer right."""
    files, _ = members
    archive = make_archive(tmp_path, members, "gzip")
    with mount(archive, "--gzip-spacing", "0.0625") as m:
        dirs = sorted({n.split("/")[0] for n in files if "/" in n})

        def worker(k):
            rng = random.Random(100 + k)
            for i in range(30):
                if k % 2:
                    name = rng.choice(sorted(files))
                    st = os.stat(os.path.join(m.path, name))
                    assert st.st_size == len(files[name]), name
                    d = rng.choice(dirs)
                    assert sorted(os.listdir(os.path.join(m.path, d))) == sorted(
                        n.split("/")[1] for n in files if n.startswith(d + "/"))
                else:
                    name = rng.choice(sorted(files))
                    with open(os.path.join(m.path, name), "rb") as f:
                        off = rng.randrange(0, len(files[name]) + 1)
                        f.seek(off)
                        assert f.read(200_000) == files[name][off:off + 200_000], name
            return True
        assert all(run_threads(worker))


def test_a_long_request_does_not_hold_up_the_others(mount, tmp_path):
    """A read that decodes for a long time in one request (the end of a 48 MB member of a
    single-block .xz, nothing decoded ahead) must not keep other requests waiting: another
    thread of the daemon answers them.  Listings and lookups of the
    small members (which the index answers: their bytes too are behind the 48 MB, in the same
    block), made while that read is in the daemon, are answered before it is."""
    require_tool("xz")
    require_codec("xz")
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    big = semi_random(48 << 20, 7)
    (src / "big.bin").write_bytes(big)
    small = {f"d/s{i}.txt": (f"small {i}\n" * (i + 1)).encode() for i in range(20)}
    for name, data in small.items():
        (src / name).write_bytes(data)
    tar = tmp_path / "t.tar"
    run("tar", "cf", tar, f"--mtime=@{FIXED_TIME}", "-C", src, "big.bin", *sorted(small))
    archive = compress_file(["xz", "-0", "-T1", "-c"], tar, tmp_path / "t.tar.xz")
    with mount(archive, "--no-prefetch", "--shadow", "never") as m:
        done = threading.Event()
        started = threading.Event()
        got = {}

        def far_read():
            fd = os.open(os.path.join(m.path, "big.bin"), os.O_RDONLY)
            try:
                started.set()
                got["tail"] = os.pread(fd, 4096, len(big) - 4096)
            finally:
                os.close(fd)
                done.set()
        t = threading.Thread(target=far_read)
        t.start()
        started.wait()
        answered_first = 0
        for name, data in sorted(small.items()):
            assert sorted(os.listdir(os.path.join(m.path, "d"))) == sorted(
                n.split("/")[1] for n in small)
            assert os.stat(os.path.join(m.path, name)).st_size == len(data), name
            answered_first += not done.is_set()
        t.join()
        assert got["tail"] == big[-4096:]
        for name, data in small.items():
            with open(os.path.join(m.path, name), "rb") as f:
                assert f.read() == data, name
        # the far read decodes 48 MB in one request: the small ones come back meanwhile
        assert answered_first == len(small), f"{answered_first} of {len(small)} before it"
