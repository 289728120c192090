"""Single compressed files (not tars): the mount is a folder holding one file, named by the
gzip FNAME field when there is one, else after the archive without its suffix; its size is
the decompressed size, its mtime the archive's, and it reads right at any offset.  A gzipped
ext2 image is loop-mounted from the mount (as root, when loop devices work).
"""
import os
import random
import stat
import subprocess

import pytest

from conftest import (gzip_member, random_bytes, require_codec, require_tool, run, semi_random,
                      snapshot)

IS_ROOT = os.geteuid() == 0
MTIME_NS = 1_500_000_000_250_000_000


def payload(n=1_500_000, seed=5):
    # neither a tar header nor zeros at the start: clearly not a tar
    return b"QFI\xfb" + semi_random(n // 2, seed) + random_bytes(n - n // 2 - 4, seed)


def make(tmp_path, argv, name, data, rename=None):
    """Compresses data written to tmp_path/name with argv (the tool's own file mode, so it
    stores the name where the format can); returns the archive path, mtime set."""
    folder = tmp_path / "a"
    folder.mkdir(exist_ok=True)
    f = folder / name
    f.write_bytes(data)
    run(*argv, f)
    archives = [p for p in folder.iterdir() if p.name != name and p.name.startswith(name)]
    assert len(archives) == 1, archives
    archive = archives[0]
    if rename:
        archive = archive.rename(folder / rename)
    if f.exists():
        f.unlink()
    os.utime(archive, ns=(MTIME_NS, MTIME_NS))
    os.chmod(archive, 0o640)
    return archive


def check_single(m, name, data):
    entries = os.listdir(m.path)
    assert entries == [name], entries
    p = os.path.join(m.path, name)
    st = os.stat(p)
    assert stat.S_ISREG(st.st_mode)
    assert st.st_size == len(data)
    assert st.st_mtime_ns == MTIME_NS
    assert stat.S_IMODE(st.st_mode) == 0o440  # the archive's mode, read bits only
    fd = os.open(p, os.O_RDONLY)
    try:
        # whole, in 128 KiB reads
        off = 0
        while True:
            chunk = os.pread(fd, 131072, off)
            assert chunk == data[off:off + 131072], off
            if not chunk:
                break
            off += len(chunk)
        assert off == len(data)
        rng = random.Random(3)
        for _ in range(80):
            o = rng.randrange(0, len(data) + 5)
            n = rng.choice([1, 3, 4096, 100_000, 131_072, 700_000])
            assert os.pread(fd, n, o) == data[o:o + n], (o, n)
    finally:
        os.close(fd)


CASES = {
    # case: (codec, argv, file name, archive renamed to, name in the mount)
    "gzip-fname": ("gzip", ["gzip", "-k"], "vm.img", None, "vm.img"),
    "gzip-fname-renamed": ("gzip", ["gzip", "-k"], "vm.img", "backup.gz", "vm.img"),
    "gzip-n": ("gzip", ["gzip", "-k", "-n"], "vm.img", None, "vm.img"),
    "gzip-n-renamed": ("gzip", ["gzip", "-k", "-n"], "vm.img", "backup.gz", "backup"),
    "gzip-n-odd-suffix": ("gzip", ["gzip", "-k", "-n"], "vm.img", "vm.img.compressed",
                          "vm.img.compressed.decompressed"),
    "pigz": ("gzip", ["pigz", "-k", "-p", "2"], "data.bin", "d.gz", "data.bin"),
    "bzip2": ("bzip2", ["bzip2", "-k"], "vm.img", None, "vm.img"),
    "bzip2-1": ("bzip2", ["bzip2", "-k", "-1"], "vm.img", "x.BZ2", "x"),
    "xz-single": ("xz", ["xz", "-k", "-0", "-T1"], "vm.img", None, "vm.img"),
    "xz-multiblock": ("xz", ["xz", "-k", "-0", "-T2", "--block-size=512KiB"], "vm.img", None,
                      "vm.img"),
    "lzma-suffix": ("xz", ["xz", "-k", "-0", "-T1"], "vm.img", "vm.img.lzma", "vm.img"),
    # codecs still being written: skipped until a trial mount shows them working
    "zstd": ("zstd", ["zstd", "-q", "-k"], "vm.img", None, "vm.img"),
    "lzop": ("lzo", ["lzop"], "vm.img", None, "vm.img"),
    "lz4": ("lz4", ["lz4", "-q", "-m"], "vm.img", None, "vm.img"),  # -m: to vm.img.lz4
    "lzip": ("lzip", ["lzip", "-k"], "vm.img", None, "vm.img"),
    "plzip": ("lzip", ["plzip", "-k", "-B", "128KiB"], "vm.img", None, "vm.img"),
    "lzma-alone": ("lzma", ["xz", "-k", "--format=lzma"], "vm.img", None, "vm.img"),
    "compress": ("compress", ["compress", "-f"], "vm.img", None, "vm.img"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_file(mount, tmp_path, case):
    codec, argv, name, rename, shown = CASES[case]
    require_tool(argv[0])
    require_codec(codec)
    data = payload()
    archive = make(tmp_path, argv, name, data, rename)
    with mount(archive, "--gzip-spacing", "0.0625") as m:
        check_single(m, shown, data)
    assert "indexed" in m.log() and "one " in m.log(), m.log()
    # and from the stored index
    with mount(archive, "--gzip-spacing", "0.0625") as m:
        check_single(m, shown, data)
    assert "indexed" not in m.log()


def test_single_gzip_hostile_fname(mount, tmp_path):
    """The FNAME field is a name, never a path: only its last component is used, and a
    name that is '.', '..' or empty falls back to the archive's name."""
    require_codec("gzip")
    data = payload(200_000)
    for fname, shown in ((b"../../etc/passwd", "passwd"), (b"dir/sub/file.img", "file.img"),
                         (b"..", "x"), (b".", "x"), (b"a/", "x")):
        archive = tmp_path / "x.gz"
        archive.write_bytes(gzip_member(data, fname=fname))
        os.utime(archive, ns=(MTIME_NS, MTIME_NS))
        os.chmod(archive, 0o644)
        with mount(archive) as m:
            assert os.listdir(m.path) == [shown], fname
            assert open(os.path.join(m.path, shown), "rb").read() == data
        os.unlink(str(archive) + ".index.sqlite")


@pytest.mark.deflate
def test_single_empty_and_tiny(mount, tmp_path):
    """A compressed empty file is one empty file; a compressed 10-byte file one 10-byte
    file (shorter than a tar block)."""
    require_codec("gzip")
    for data, name in ((b"", "empty"), (b"0123456789", "tiny")):
        archive = tmp_path / (name + ".gz")
        archive.write_bytes(gzip_member(data))
        with mount(archive) as m:
            assert os.listdir(m.path) == [name]
            p = os.path.join(m.path, name)
            assert os.stat(p).st_size == len(data)
            assert open(p, "rb").read() == data


@pytest.mark.deflate
def test_single_blank_disk_image(mount, tmp_path):
    """A gzipped file of zeros (a blank disk image, a zeroed swap file) named like a single
    file must show that file.  tar_probe takes 1024+ zero bytes for an empty tar, which is
    right for a .tar but hides the whole content of blank.img.gz: the mount was an empty
    folder."""
    require_codec("gzip")
    archive = tmp_path / "blank.img.gz"
    archive.write_bytes(gzip_member(bytes(2 * 1_048_576)))
    with mount(archive) as m:
        assert os.listdir(m.path) == ["blank.img"]
        assert os.stat(os.path.join(m.path, "blank.img")).st_size == 2 * 1_048_576


def loop_usable():
    if not IS_ROOT:
        return "loop mounts need root"
    if not os.path.exists("/dev/loop-control"):
        return "no /dev/loop-control"
    r = subprocess.run(["losetup", "-f"], capture_output=True)
    if r.returncode != 0:
        return "no free loop device: " + r.stderr.decode()
    return None


def test_loop_mount_gzipped_ext2_image(mount, tmp_path):
    why = loop_usable()
    if why:
        pytest.skip(why)
    require_tool("mke2fs")
    require_codec("gzip")
    src = tmp_path / "content"
    (src / "sub").mkdir(parents=True)
    files = {"hello.txt": b"hello from inside the image\n", "sub/random.bin": random_bytes(700_000, 8),
             "sub/text": semi_random(300_000, 9)}
    for n, d in files.items():
        (src / n).write_bytes(d)
    img = tmp_path / "vm.img"
    run("mke2fs", "-q", "-F", "-t", "ext2", "-b", "1024", "-d", src, img, "4M")
    run("gzip", img)
    archive = tmp_path / "vm.img.gz"
    target = tmp_path / "inner"
    target.mkdir()
    with mount(archive, "--gzip-spacing", "0.0625") as m:
        inner = os.path.join(m.path, "vm.img")
        assert os.stat(inner).st_size == 4 * 1024 * 1024
        r = run("mount", "-o", "loop,ro", inner, target, check=False)
        if r.returncode != 0:
            pytest.skip(f"loop mount failed: {r.stderr.decode()}")
        try:
            for n, d in files.items():
                assert (target / n).read_bytes() == d, n
            got = snapshot(target, xattrs=False)
            assert {b"hello.txt", b"sub", b"sub/random.bin", b"sub/text", b"lost+found"} <= set(got)
        finally:
            run("umount", target, check=False)  # "-o loop" frees its loop device
        assert not os.path.ismount(target)
