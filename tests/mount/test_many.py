"""Mount tests of an archive of many members: 200k tiny files (written by Python's tarfile, GNU
format), in 150 folders of 1000, one folder of 50,000 and one folder 40 levels deep.

- A walk of the mount lists every member exactly once, and every folder.
- stat of random members gives their size, mode and mtime; reads give their bytes.
- The folder of 50,000 entries and the deep folder are listed completely.
- Requests: a walk that only lists costs no LOOKUP (folders come with their attributes, files
  bare, at most 4096 of them per folder); once stats have shown up, listings carry every
  attribute, and a du-like walk and a stat of every member then cost no LOOKUP at all.
"""

import io
import os
import random
import stat
import tarfile

import pytest

from conftest import have

pytestmark = pytest.mark.skipif(not have("tar"), reason="needs GNU tar")

SPREAD = 150  # folders of 1000
BIG = 50_000  # members of the big folder
DEPTH = 40


def member_data(name):
    return name.encode() * 2


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """(tar path, {member path: (data, mtime)}, deep folder path)"""
    d = tmp_path_factory.mktemp("many")
    tar = d / "many.tar"
    members = {}
    deep = "/".join(f"l{i:02d}" for i in range(DEPTH))
    names = [f"d{i // 1000:03d}/f{i:06d}" for i in range(SPREAD * 1000)]
    names += [f"big/g{i:05d}" for i in range(BIG)]
    names.append(f"{deep}/leaf.txt")
    with tarfile.open(tar, "w", format=tarfile.GNU_FORMAT) as t:
        for k, name in enumerate(names):
            data = member_data(name)
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 1_600_000_000 + k, 0o640
            t.addfile(ti, io.BytesIO(data))
            members[name] = (data, ti.mtime)
    return tar, members, deep


def requests(mnt):
    out = {}
    for line in os.getxattr(mnt, "user.tarseek.requests").decode().splitlines():
        name, count, _ = line.split()
        out[name] = int(count)
    return out


def test_walk_lists_every_member_once(mount, many):
    tar, members, deep = many
    with mount(tar, "--no-prefetch") as m:
        files, dirs = [], []
        for dirpath, dirnames, filenames in os.walk(m.path):
            rel = os.path.relpath(dirpath, m.path)
            dirs += [os.path.normpath(os.path.join(rel, x)) for x in dirnames]
            files += [os.path.normpath(os.path.join(rel, x)) for x in filenames]
        assert len(files) == len(set(files)) == len(members)
        assert set(files) == set(members)
        want_dirs = {os.path.dirname(n) for n in members}
        want_dirs |= {"/".join(deep.split("/")[:i]) for i in range(1, DEPTH + 1)}
        assert len(dirs) == len(set(dirs)) and set(dirs) == want_dirs


def test_stat_and_read_random_members(mount, many):
    tar, members, _ = many
    rng = random.Random(20)
    with mount(tar, "--no-prefetch") as m:
        for name in rng.sample(sorted(members), 2000):
            data, mtime = members[name]
            st = os.stat(os.path.join(m.path, name))
            assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o640, name
            assert st.st_size == len(data) and int(st.st_mtime) == mtime, name
        for name in rng.sample(sorted(members), 300):
            with open(os.path.join(m.path, name), "rb") as f:
                assert f.read() == members[name][0], name


def test_big_and_deep_folders_listed_completely(mount, many):
    tar, members, deep = many
    with mount(tar, "--no-prefetch") as m:
        big = os.listdir(os.path.join(m.path, "big"))
        assert len(big) == BIG and set(big) == {f"g{i:05d}" for i in range(BIG)}
        assert os.listdir(os.path.join(m.path, deep)) == ["leaf.txt"]
        with open(os.path.join(m.path, deep, "leaf.txt"), "rb") as f:
            assert f.read() == members[f"{deep}/leaf.txt"][0]
        # every level of the chain holds just the next one
        for i in range(DEPTH - 1):
            level = "/".join(deep.split("/")[: i + 1])
            assert os.listdir(os.path.join(m.path, level)) == [f"l{i + 1:02d}"]


@pytest.mark.kernel_caches
def test_listing_requests(mount, many):
    """A walk that only lists (find, os.walk) gets bare names for the files and so costs no
    inode in the kernel per file; stats of those names switch the mount to listings with every
    attribute (dirplus.h), after which a du-like walk and a stat of every member cost no
    LOOKUP at all."""
    tar, members, _ = many
    with mount(tar, "--no-prefetch") as m:
        for dirpath, _, _ in os.walk(m.path):  # folders carry their attributes: no LOOKUP
            pass
        walked = requests(m.path)
        assert walked.get("lookup", 0) == 0, walked
        assert walked.get("readdirplus", 0) > 0
        first = sorted(n for n in members if n.startswith("d000/"))
        for name in first:  # listed bare: each one a LOOKUP
            os.stat(os.path.join(m.path, name))
        statted = requests(m.path)
        assert statted.get("lookup", 0) == len(first) == 1000, statted
        for dirpath, _, filenames in os.walk(m.path):  # du: the folders listed anew, whole
            for f in filenames:
                os.lstat(os.path.join(dirpath, f))
        after_du = requests(m.path)
        assert after_du.get("lookup", 0) == statted["lookup"], after_du
        assert after_du["readdirplus"] > statted["readdirplus"]
        for name in members:
            os.stat(os.path.join(m.path, name))
        assert requests(m.path).get("lookup", 0) == statted["lookup"]


@pytest.mark.kernel_caches
def test_stats_after_listing_one_big_folder(mount, many):
    """In one folder, only the first 4096 files go bare (DP_BARE_MAX): a du-like pass over the
    50,000-entry folder, listed first and then stat'd, costs at most that many LOOKUPs."""
    tar, members, _ = many
    with mount(tar, "--no-prefetch") as m:
        big = os.path.join(m.path, "big")
        names = os.listdir(big)
        before = requests(m.path)
        for n in names:
            os.lstat(os.path.join(big, n))
        looked = requests(m.path).get("lookup", 0) - before.get("lookup", 0)
        assert 8 <= looked <= 4096, looked
