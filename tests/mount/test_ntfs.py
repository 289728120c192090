"""NTFS file systems inside images (containers/ntfs/, shown as folders with -r), compared byte
for byte with what ntfs-3g's own reader extracts (`ntfscat IMAGE /PATH`) and with the files
copied in:

- an image made without mounting (mkntfs, then ntfscp for each file -- ntfscp makes no
  folders, so these are at the root): resident files (in their MFT record; one crosses a
  512-byte stride, so its map reads two bytes from the record's update sequence array), a
  non-resident one of many clusters, an empty one, a Unicode name; mounted as the image, as
  ntfs.img.gz (through the gzip codec's checkpoints), and as a member of a tar; without -r the
  .img.gz is the file ntfs.img, unchanged;
- an image filled through ntfs-3g's own mount (folders need it): folders three deep, a hard
  link, symbolic links as ntfs-3g writes them (Interix) and as Windows does (a reparse
  point, written through ntfs-3g's system.ntfs_reparse_data), a sparse file, a read-only file
  (0444), a compressed file (listed, its reads EOPNOTSUPP), an alternate data stream (not
  shown);
- damage: a data cluster of a file overwritten (the file reads what is there, as ntfscat
  does), the boot sector zeroed or wrong (no folder: the image stays a file, its bytes as
  they are).
"""
import errno
import os
import struct
import subprocess

import pytest

from conftest import BUILD, random_bytes, read_errno, require_tool, run, text_data


def _built_with_ntfs():
    try:
        with open(os.path.join(BUILD, "config.h")) as f:
            return "#define HAVE_LIBFSNTFS 1" in f.read()
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _built_with_ntfs(), reason="built without libfsntfs")

FILES = {
    "small.txt": b"hello\n",
    "stride.txt": text_data(600, 1),  # resident, across a stride of its record
    "big.bin": random_bytes(300_000, 2),
    "medium.txt": text_data(50_000, 3),
    "empty": b"",
    "h\u00e9llo w\u00f6rld \u2603.txt": text_data(40, 4),
}


def ntfscat(img, path):
    return run("ntfscat", img, path).stdout


def plain_image(tmp_path, name="ntfs.img"):
    """mkntfs + ntfscp: FILES at the root, no mount."""
    require_tool("mkntfs", "ntfscp", "ntfscat")
    img = tmp_path / name
    with open(img, "wb") as f:
        f.truncate(8 << 20)
    run("mkntfs", "-F", "-f", "-q", img)
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    for i, (n, data) in enumerate(FILES.items()):
        (src / f"f{i}").write_bytes(data)
        run("ntfscp", "-f", img, src / f"f{i}", "/" + n)
    return img


def check_files(root, img):
    assert sorted(os.listdir(root)) == sorted(FILES)
    for n, data in FILES.items():
        with open(os.path.join(root, n), "rb") as f:
            got = f.read()
        assert got == data, n
        assert got == ntfscat(img, "/" + n), n


def test_ntfs_plain(mount, tmp_path):
    img = plain_image(tmp_path)
    with mount(img, "-r") as m:
        check_files(m.path, img)
        assert os.stat(os.path.join(m.path, "small.txt")).st_mode & 0o777 == 0o644
    with mount(img, "-r") as m:  # the index made by the first mount: nothing indexed again
        check_files(m.path, img)
        assert "indexed" not in m.log()


def test_ntfs_gz_and_tar(mount, tmp_path):
    img = plain_image(tmp_path)
    raw = img.read_bytes()
    run("gzip", "-k", img)
    gz = str(img) + ".gz"
    with mount(gz, "-r") as m:
        check_files(m.path, img)
    with mount(gz, "-r") as m:  # the listing and the checkpoints from the index
        check_files(m.path, img)
        assert "indexed" not in m.log()
    with mount(gz) as m:  # without -r: the file, unchanged
        assert os.listdir(m.path) == ["ntfs.img"]
        with open(os.path.join(m.path, "ntfs.img"), "rb") as f:
            assert f.read() == raw
    run("tar", "cf", tmp_path / "t.tar", "-C", tmp_path, "ntfs.img", "ntfs.img.gz")
    with mount(tmp_path / "t.tar", "-r") as m:
        check_files(os.path.join(m.path, "ntfs.img"), img)
        check_files(os.path.join(m.path, "ntfs.img.gz"), img)


class Ntfs3gMount:
    """The image mounted by ntfs-3g, to fill it (folders, links, attributes)."""

    def __init__(self, img, where, *opts):
        self.where = where
        os.makedirs(where, exist_ok=True)
        r = subprocess.run(["ntfs-3g", *opts, str(img), str(where)], capture_output=True)
        if r.returncode != 0:
            pytest.fail(f"ntfs-3g cannot mount the image: {r.stderr.decode(errors='replace')}")

    def __enter__(self):
        return self.where

    def __exit__(self, *exc):
        subprocess.run(["fusermount3", "-u", str(self.where)], check=True)


def reparse_symlink(target):
    """A Windows symbolic link's reparse data: relative target (flags 1)."""
    t = target.replace("/", "\\").encode("utf-16-le")
    body = struct.pack("<HHHHI", 0, len(t), len(t), len(t), 1) + t + t
    return struct.pack("<IHH", 0xA000000C, len(body), 0) + body


def rich_image(tmp_path):
    require_tool("mkntfs", "ntfs-3g", "ntfscat", "fusermount3")
    img = tmp_path / "rich.img"
    with open(img, "wb") as f:
        f.truncate(16 << 20)
    run("mkntfs", "-F", "-f", "-q", img)
    with Ntfs3gMount(img, tmp_path / "fill", "-o", "streams_interface=xattr") as d:
        os.makedirs(d / "dir" / "sub" / "deep")
        (d / "dir" / "sub" / "deep" / "f.txt").write_bytes(b"inner\n")
        (d / "dir" / "big").write_bytes(random_bytes(100_000, 5))
        os.link(d / "dir" / "big", d / "dir" / "sub" / "hard")
        os.symlink("../big", d / "dir" / "sub" / "ilink")  # ntfs-3g: Interix
        (d / "dir" / "wlink").write_bytes(b"")
        os.setxattr(d / "dir" / "wlink", "system.ntfs_reparse_data",
                    reparse_symlink("sub/deep/f.txt"))
        with open(d / "sparse", "wb") as f:
            f.truncate(5 << 20)
            f.seek(3_000_000)
            f.write(b"tail of a sparse file")
        (d / "ro.txt").write_bytes(b"read only\n")
        os.setxattr(d / "ro.txt", "system.ntfs_attrib_be", struct.pack(">I", 0x21))
        os.mkdir(d / "cdir")  # compressed: what is written in it is compressed
        os.setxattr(d / "cdir", "system.ntfs_attrib_be", struct.pack(">I", 0x810))
        (d / "cdir" / "comp.txt").write_bytes(text_data(100_000, 6))
        (d / "ads.txt").write_bytes(b"main stream\n")
        os.setxattr(d / "ads.txt", "user.side", b"an alternate data stream")
    return img


def test_ntfs_rich(mount, tmp_path):
    img = rich_image(tmp_path)
    with mount(img, "-r", allow_errors=True) as m:  # the compressed file's read: an error
        root = m.path
        names = set()
        for top, dirs, files in os.walk(root):
            for n in dirs + files:
                names.add(os.path.relpath(os.path.join(top, n), root))
        assert names == {"dir", "dir/sub", "dir/sub/deep", "dir/sub/deep/f.txt", "dir/big",
                         "dir/sub/hard", "dir/sub/ilink", "dir/wlink", "sparse", "ro.txt",
                         "cdir", "cdir/comp.txt", "ads.txt"}
        for n in ("dir/sub/deep/f.txt", "dir/big", "dir/sub/hard", "sparse", "ro.txt",
                  "ads.txt"):
            with open(os.path.join(root, n), "rb") as f:
                assert f.read() == ntfscat(img, "/" + n), n
        big = os.stat(os.path.join(root, "dir/big"))
        assert big.st_nlink == 2
        assert os.stat(os.path.join(root, "dir/sub/hard")).st_ino == big.st_ino
        assert os.readlink(os.path.join(root, "dir/sub/ilink")) == "../big"
        assert os.readlink(os.path.join(root, "dir/wlink")) == "sub/deep/f.txt"
        with open(os.path.join(root, "dir/wlink"), "rb") as f:
            assert f.read() == b"inner\n"
        assert os.stat(os.path.join(root, "sparse")).st_size == 5 << 20
        assert os.stat(os.path.join(root, "ro.txt")).st_mode & 0o777 == 0o444
        assert os.stat(os.path.join(root, "dir")).st_mode & 0o777 == 0o755
        assert read_errno(os.path.join(root, "cdir/comp.txt")) == errno.EOPNOTSUPP
        assert os.stat(os.path.join(root, "cdir/comp.txt")).st_size == 100_000


def cluster_of(img, path):
    """The first cluster of a file and the cluster size, by ntfsinfo."""
    out = run("ntfsinfo", "-v", "-F", path, img).stdout.decode(errors="replace")
    csize = int(run("ntfsinfo", "-m", img).stdout.decode().split("Cluster Size:")[1].split()[0])
    for line in out.splitlines():
        parts = line.split()
        # runlist rows: "0x0  0x5c  0x4a" (VCN LCN length)
        if len(parts) == 3 and all(p.startswith("0x") for p in parts) and parts[0] == "0x0":
            return int(parts[1], 16), csize
    pytest.fail(f"no runlist for {path} in ntfsinfo's output:\n{out}")


def test_ntfs_damage(mount, tmp_path):
    require_tool("ntfsinfo")
    img = plain_image(tmp_path)
    lcn, csize = cluster_of(img, "/big.bin")
    with open(img, "r+b") as f:  # a data cluster overwritten: the file reads what is there
        f.seek(lcn * csize + 100)
        f.write(b"\xa5" * 1000)
    with mount(img, "-r") as m:
        with open(os.path.join(m.path, "big.bin"), "rb") as f:
            got = f.read()
        assert got == ntfscat(img, "/big.bin")
        assert got != FILES["big.bin"] and got[100:1100] == b"\xa5" * 1000
        with open(os.path.join(m.path, "small.txt"), "rb") as f:
            assert f.read() == FILES["small.txt"]

    zero = tmp_path / "zero.img"  # the boot sector zeroed, or wrong: the file stays a file
    wrong = tmp_path / "wrong.img"
    raw = img.read_bytes()
    zero.write_bytes(bytes(512) + raw[512:])
    wrong.write_bytes(raw[:0x0b] + b"\x33\x00\x07" + raw[0x0e:])
    run("tar", "cf", tmp_path / "t.tar", "-C", tmp_path, "zero.img", "wrong.img")
    with mount(tmp_path / "t.tar", "-r", allow_errors=True) as m:
        for n, data in (("zero.img", zero.read_bytes()), ("wrong.img", wrong.read_bytes())):
            p = os.path.join(m.path, n)
            assert os.path.isfile(p), n
            with open(p, "rb") as f:
                assert f.read() == data, n


def test_ntfs_small_clusters(mount, tmp_path):
    """512-byte clusters: the root folder's index blocks (4 KiB) span clusters, which Debian
    12's libfsntfs misreads (it lists none or few of their names): the container finds the
    files through their MFT records' $FILE_NAME instead, each in its folder."""
    require_tool("mkntfs", "ntfscp", "ntfscat")
    img = tmp_path / "small.img"
    with open(img, "wb") as f:
        f.truncate(2 << 20)
    run("mkntfs", "-F", "-f", "-q", "-c", "512", "-s", "512", img)
    want = {}
    for i in range(60):
        p = tmp_path / f"f{i}"
        want[f"file-with-a-long-name-{i}.txt"] = text_data(100 + 37 * i, i)
        p.write_bytes(want[f"file-with-a-long-name-{i}.txt"])
        run("ntfscp", "-f", img, p, f"/file-with-a-long-name-{i}.txt")
    with mount(img, "-r") as m:
        assert sorted(os.listdir(m.path)) == sorted(want)
        for n, data in want.items():
            with open(os.path.join(m.path, n), "rb") as f:
                assert f.read() == data == ntfscat(img, "/" + n), n
