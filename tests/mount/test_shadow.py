"""The shadow (shadow/): what the first mount decodes, kept beside the index as seekable zstd.

Archives made by the real tools in every codec the shadow serves; the first mount writes the
shadow, the second reads through it and every byte is compared with GNU tar's extraction (and
`zstd -d` of the shadow with the tar).  Then what must never give wrong bytes: a shadow
missing, cut short, damaged in a frame, another index's, deleted or replaced under a running
mount, a full disk while it is written, an index built without one, two first mounts at once.

The suite runs with TARSEEK_SHADOW=never (tests/mount/meson.build); these tests ask for the
shadow with --shadow.
"""
import os
import shutil
import sqlite3
import subprocess
import threading
import time

import pytest

from conftest import (text_data, TARSEEK, checkpoints, compare_trees, compress_file, gnu_extract,
                      have, make_tree, require_codec, require_tool, run, semi_random)



@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A tree of about 3 MB (small files and a few large ones) and its plain tar."""
    base = tmp_path_factory.mktemp("shadow-tree")
    src = base / "src"
    make_tree(src)
    data = src / "data"
    data.mkdir()
    (data / "text.txt").write_bytes(text_data(1_500_000, 1))
    (data / "semi.bin").write_bytes(semi_random(700_000, 2))
    for i in range(60):
        (data / f"f{i:02d}.txt").write_bytes(text_data(500 + i * 997, 10 + i))
    # fixed times and order: the same tar in every tree, whose compressed copies the next
    # tree takes from TARSEEK_TU_CACHE (compress_file)
    for p in sorted(data.iterdir()) + [data, src]:
        os.utime(p, (1_600_000_000, 1_600_000_000))
    tar = base / "tree.tar"
    run("tar", "cf", tar, "--sort=name", "-C", src, ".")
    ref = base / "ref"
    gnu_extract(tar, ref)
    return tar, ref


_compressed = {}  # argv -> the tree's tar compressed with it, made once per module


def make(tree, tmp_path, argv, suffix):
    """The tree's tar compressed with argv, as tmp_path/tree<suffix>: a copy of the one made by
    the first test that asked for it (the compressors write the same bytes every time; a
    dozen tests use xz -3, whose run took most of each one's time)."""
    tar, _ = tree
    key = tuple(argv)
    if key not in _compressed:
        made = tar.parent / f"tree-{len(_compressed)}{suffix}"
        _compressed[key] = compress_file(argv, tar, made)
    out = tmp_path / ("tree" + suffix)
    shutil.copyfile(_compressed[key], out)
    return out


def shadow_of(index):
    return str(index)[: -len(".sqlite")] + ".shadow.zst"


def xattr(path, key):
    return os.getxattr(path, "user.tarseek." + key).decode()


def zstd_gives_the_tar(shadow, tree):
    """`zstd -d` of a shadow writes out the decoded tar."""
    if have("zstd"):
        out = subprocess.run(["zstd", "-q", "-d", "-c", shadow], capture_output=True).stdout
        assert out == open(tree[0], "rb").read()


def read_through_the_shadow(mount, archive, index, tree, mode):
    """A mount of the indexed archive reads every file through the shadow; its log."""
    with mount(archive, "--index-file", index, "--shadow", mode, "--no-prefetch") as m:
        assert "indexed" not in m.log()
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "open"
        return m.log()


# codec: (compressor argv (stdin -> stdout), suffix, codec name for require_codec)
CODECS = {
    "xz-single": (["xz", "-3", "-T1", "-c"], ".tar.xz", "xz"),
    "xz-blocks": (["xz", "-1", "-T2", "--block-size=1MiB", "-c"], ".tar.xz", "xz"),
    "bzip2": (["bzip2", "-1", "-c"], ".tar.bz2", "bzip2"),
    "lzma": (["xz", "--format=lzma", "-3", "-c"], ".tar.lzma", "lzma"),
    "lzip": (["lzip", "-3", "-c"], ".tar.lz", "lzip"),
    "compress": (["compress", "-c"], ".tar.Z", "compress"),
    "lz4": (["lz4", "-q", "-c"], ".tar.lz4", "lz4"),
    "lzop": (["lzop", "-c"], ".tar.lzo", "lzo"),
    "zstd-one-frame": (["zstd", "-q", "-3", "-c"], ".tar.zst", "zstd"),
}


@pytest.mark.parametrize("variant", sorted(CODECS))
def test_codec_reads_through_the_shadow(variant, tree, tmp_path, mount):
    argv, suffix, codec = CODECS[variant]
    require_tool(argv[0])
    require_codec(codec)
    archive = make(tree, tmp_path, argv, suffix)
    index = tmp_path / "i.index.sqlite"
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch") as m:
        assert "no shadow" not in m.log(), m.log()
    shadow = shadow_of(index)
    assert os.path.getsize(shadow) > 0
    assert not [f for f in os.listdir(tmp_path) if ".tmp." in f]  # nothing left half-made
    zstd_gives_the_tar(shadow, tree)
    log = read_through_the_shadow(mount, archive, index, tree, "auto")
    assert "shadow" not in log, log


def test_gzip_only_when_asked(tree, tmp_path, mount):
    archive = make(tree, tmp_path, ["gzip", "-6", "-c"], ".tar.gz")
    index = tmp_path / "g.index.sqlite"
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch"):
        pass
    assert not os.path.exists(shadow_of(index))  # cheap already: none under auto
    dense = checkpoints(index)
    with mount(archive, "--index-file", index, "--shadow", "always", "--recreate-index",
               "--no-prefetch"):
        pass
    assert os.path.exists(shadow_of(index))
    # with a shadow the checkpoints are only the way back: 4 MiB apart, not 256 KiB, and the
    # index says so (an index asked for with --gzip-spacing 256K is then made again)
    assert dense >= 8 and checkpoints(index) <= dense // 4, (dense, checkpoints(index))
    db = sqlite3.connect(index)
    try:
        opts = db.execute("SELECT value FROM meta WHERE key = 'options'").fetchone()[0]
    finally:
        db.close()
    assert "gzip_spacing=4194304;" in opts, opts
    with mount(archive, "--index-file", index, "--shadow", "always", "--no-prefetch") as m:
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "open"
    # never: not made, and not read where there is one
    with mount(archive, "--index-file", index, "--shadow", "never", "--no-prefetch") as m:
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "none"


@pytest.mark.parametrize("variant", ["gzip", "lz4", "zstd-one-frame"])
def test_fast_decoder_large_stream_stored(variant, tree, tmp_path, mount):
    """A large stream of a decoder faster than the shadow's compression has its shadow stored
    uncompressed, every frame raw (TARSEEK_SHADOW_STORE_MIN makes this small archive "large"):
    said in the log, as large as the tar, `zstd -d` gives the tar, the next mount reads through
    it.  Without the knob the same archive's shadow is compressed."""
    argv, suffix, codec = {"gzip": (["gzip", "-6", "-c"], ".tar.gz", "gzip"),
                           "lz4": CODECS["lz4"], "zstd-one-frame": CODECS["zstd-one-frame"]}[variant]
    require_tool(argv[0])
    require_codec(codec)
    archive = make(tree, tmp_path, argv, suffix)
    index = tmp_path / "f.index.sqlite"
    tar_size = os.path.getsize(tree[0])
    env = {"TARSEEK_SHADOW_STORE_MIN": "1"}
    with mount(archive, "--index-file", index, "--shadow", "always", "--no-prefetch",
               env=env) as m:
        assert "stored as it is decoded, uncompressed" in m.log(), m.log()
    shadow = shadow_of(index)
    assert os.path.getsize(shadow) > tar_size  # raw blocks, their headers and checksums
    zstd_gives_the_tar(shadow, tree)
    read_through_the_shadow(mount, archive, index, tree, "always")
    with mount(archive, "--index-file", index, "--shadow", "always", "--recreate-index",
               "--no-prefetch") as m:
        assert "stored as it is decoded" not in m.log(), m.log()
        assert "0 of them stored uncompressed" in m.log(), m.log()
    assert os.path.getsize(shadow) < tar_size


def test_plain_tar_has_none(tree, tmp_path, mount):
    index = tmp_path / "p.index.sqlite"
    with mount(tree[0], "--index-file", index, "--shadow", "always"):
        pass
    assert not os.path.exists(shadow_of(index))


@pytest.fixture
def shadowed(tree, tmp_path, mount):
    """A single-block .tar.xz with its index and shadow made by a first mount."""
    require_tool("xz")
    archive = make(tree, tmp_path, ["xz", "-3", "-T1", "-c"], ".tar.xz")
    index = tmp_path / "s.index.sqlite"
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch"):
        pass
    assert os.path.exists(shadow_of(index))
    return archive, index, shadow_of(index)


def test_shadow_missing(shadowed, tree, mount):
    archive, index, shadow = shadowed
    os.unlink(shadow)
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch") as m:
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "none"
        assert "is gone" in m.log()


@pytest.mark.parametrize("cut", [1, 9, 5000, 100000])
def test_shadow_cut_short(shadowed, tree, mount, cut):
    archive, index, shadow = shadowed
    size = os.path.getsize(shadow)
    os.truncate(shadow, size - cut)
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch") as m:
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "none"
        log = m.log()
    # one warning; the daemon may also have made a new shadow in the background before the
    # unmount (fs/shadow_later.c) -- a race the test does not decide, so both outcomes are
    # checked: when it says it made one, the next mount reads through it
    lines = log.splitlines()
    assert sum("damaged or cut short" in l for l in lines) == 1, log
    made = [l for l in lines if "shadow made beside its index" in l]
    assert len(lines) == 1 + len(made) and len(made) <= 1, log
    if made:
        with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch") as m:
            compare_trees(m.path, tree[1])
            assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "open"


def test_shadow_damaged_frame(shadowed, tree, mount):
    """A flipped byte inside a frame: the read that meets it is made from the archive; every
    byte is right, one error of the frame and one line saying the archive is read instead."""
    archive, index, shadow = shadowed
    with open(shadow, "r+b") as f:
        f.seek(300)
        b = f.read(1)
        f.seek(300)
        f.write(bytes([b[0] ^ 0x10]))
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch",
               allow_errors=True) as m:
        compare_trees(m.path, tree[1])
        log = m.log()
    assert "reads decode the archive instead" in log, log


def test_shadow_of_another_index(shadowed, tree, tmp_path, mount):
    archive, index, shadow = shadowed
    # a second index (and shadow) of the same archive; its shadow put in the first's place
    index2 = tmp_path / "t.index.sqlite"
    with mount(archive, "--index-file", index2, "--shadow", "auto", "--no-prefetch"):
        pass
    shutil.copyfile(shadow_of(index2), shadow)
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch") as m:
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "none"
        log = m.log()
    assert "belongs to another index or archive" in log, log


def test_shadow_replaced_under_a_running_mount(shadowed, tree, tmp_path, mount):
    """Deleted, then replaced by garbage while mounted: the mount keeps the file it opened and
    every byte stays right (a small cache, so the second pass reads the shadow again)."""
    archive, index, shadow = shadowed
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch",
               "--cache-size", "4M", "--disk-cache-size", "0") as m:
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "open"
        os.unlink(shadow)
        with open(shadow, "wb") as f:
            f.write(os.urandom(os.path.getsize(tree[0]) // 4))
        compare_trees(m.path, tree[1])


def test_old_index_without_shadow(tree, tmp_path, mount):
    """An index built without a shadow (an older tarseek, --shadow never) is used as it is;
    a mount that wants a shadow makes one in the background once it is ready, and the next
    mount reads through it."""
    require_tool("xz")
    archive = make(tree, tmp_path, ["xz", "-3", "-T1", "-c"], ".tar.xz")
    index = tmp_path / "o.index.sqlite"
    with mount(archive, "--index-file", index, "--shadow", "never", "--no-prefetch"):
        pass
    assert not os.path.exists(shadow_of(index))
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch") as m:
        assert "indexed" not in m.log()
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "none"
        deadline = time.monotonic() + 60
        while "shadow made" not in m.log():
            assert time.monotonic() < deadline, m.log()
            time.sleep(0.05)
    assert os.path.exists(shadow_of(index))
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch") as m:
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "open"


def test_shadow_after_the_first_mount(tree, tmp_path, mount):
    """A large stream whose decoder holds every core (bzip2 with -P 2) leaves its shadow for
    after the first mount (TARSEEK_SHADOW_LATER_MIN makes this small archive "large"): the
    mount is ready without it, the shadow is made in the background while mounted, and the
    next mount reads through it.  (The default threshold keeps a small one's shadow in the
    build: test_codec_reads_through_the_shadow's bzip2 finds it right after the first mount.)"""
    require_tool("bzip2")
    require_codec("bzip2")
    archive = make(tree, tmp_path, ["bzip2", "-1", "-c"], ".tar.bz2")
    index = tmp_path / "l.index.sqlite"
    env = {"TARSEEK_SHADOW_LATER_MIN": "1"}
    with mount(archive, "--index-file", index, "--shadow", "auto", "-P", "2", "--no-prefetch",
               env=env) as m:
        assert "its shadow is made after the mount" in m.log(), m.log()
        compare_trees(m.path, tree[1])
        deadline = time.monotonic() + 60
        while "shadow made" not in m.log():
            assert time.monotonic() < deadline, m.log()
            time.sleep(0.05)
    assert os.path.exists(shadow_of(index))
    with mount(archive, "--index-file", index, "--shadow", "auto", "-P", "2", "--no-prefetch",
               env=env) as m:
        assert "indexed" not in m.log()
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "open"
    # one core: the decoder leaves none idle to wait for, so the build makes the shadow
    os.unlink(index)
    os.unlink(shadow_of(index))
    with mount(archive, "--index-file", index, "--shadow", "auto", "-P", "1", "--no-prefetch",
               env=env) as m:
        assert "after the mount" not in m.log(), m.log()
    assert os.path.exists(shadow_of(index))


def test_tarseek_index_makes_the_shadow(tree, tmp_path, mount):
    """tarseek-index makes shadows as the mount would: with the index, or for one without."""
    require_tool("lzip")
    archive = make(tree, tmp_path, ["lzip", "-3", "-c"], ".tar.lz")
    tool = os.path.join(os.path.dirname(TARSEEK), "..", "tools", "tarseek-index")
    index = tmp_path / "x.index.sqlite"
    run(tool, "-q", "--shadow", "never", "--index-file", index, archive)
    assert not os.path.exists(shadow_of(index))
    out = subprocess.run([tool, "-q", "--index-file", str(index), str(archive)],
                         capture_output=True, text=True, env=dict(os.environ,
                                                                   TARSEEK_SHADOW="auto"))
    assert out.returncode == 0 and "shadow made" in out.stdout, out
    with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch") as m:
        compare_trees(m.path, tree[1])
        assert xattr(os.path.join(m.path, "data", "text.txt"), "shadow") == "open"


def test_shadow_too_large(tree, tmp_path, mount):
    require_tool("xz")
    archive = make(tree, tmp_path, ["xz", "-3", "-T1", "-c"], ".tar.xz")
    index = tmp_path / "l.index.sqlite"
    with mount(archive, "--index-file", index, "--shadow", "auto", "--shadow-max", "1M",
               "--no-prefetch") as m:
        compare_trees(m.path, tree[1])
        assert "no shadow is kept" in m.log()
    assert not os.path.exists(shadow_of(index))
    assert not [f for f in os.listdir(tmp_path) if ".tmp." in f]


def test_disk_full(tree, tmp_path, mount):
    """The index's folder on a file system with room for the index but not the shadow: a
    message, no shadow, the mount works."""
    require_tool("xz")
    archive = make(tree, tmp_path, ["xz", "-3", "-T1", "-c"], ".tar.xz")
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1200k", "tmpfs", small]).returncode:
        pytest.skip("cannot mount a tmpfs")
    try:
        index = small / "f.index.sqlite"
        with mount(archive, "--index-file", index, "--shadow", "auto", "--no-prefetch") as m:
            compare_trees(m.path, tree[1])
            assert "no shadow is kept" in m.log(), m.log()
        assert not os.path.exists(shadow_of(index))
        assert not [f for f in os.listdir(small) if ".tmp." in f]
    finally:
        subprocess.run(["umount", "-l", small])


def test_two_first_mounts_at_once(tree, tmp_path):
    """Two daemons build the same index and shadow at once: both mounts work, and what is left
    is an index and a shadow that go together (a third mount reads through it)."""
    require_tool("xz")
    archive = make(tree, tmp_path, ["xz", "-3", "-T1", "-c"], ".tar.xz")
    index = tmp_path / "c.index.sqlite"
    mnts = [tmp_path / "a", tmp_path / "b"]
    for mnt in mnts:
        mnt.mkdir()
    errs = []

    def one(mnt):
        r = subprocess.run([TARSEEK, "--index-file", str(index), "--shadow", "auto",
                            "--no-prefetch", str(archive), str(mnt)], capture_output=True,
                           text=True, timeout=120)
        if r.returncode:
            errs.append(r.stderr)

    threads = [threading.Thread(target=one, args=(m,)) for m in mnts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errs, errs
        for mnt in mnts:
            compare_trees(str(mnt), tree[1])
    finally:
        for mnt in mnts:
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)])
    assert not [f for f in os.listdir(tmp_path) if ".tmp." in f]
    out = tmp_path / "third"
    out.mkdir()
    r = subprocess.run([TARSEEK, "--index-file", str(index), "--shadow", "auto", "--no-prefetch",
                        str(archive), str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    try:
        compare_trees(str(out), tree[1])
        # the index that won the race goes with one of the two shadows: if it is the other
        # one, the mount says so and reads the archive -- never other bytes
        assert xattr(os.path.join(str(out), "data", "text.txt"), "shadow") in ("open", "none")
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(out)])
