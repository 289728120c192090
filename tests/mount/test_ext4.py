"""ext2/3/4 file systems inside images (containers/ext4/), shown as folders with -r.

Images are made at test time without root by `mkfs.ext4 -d` (and mkfs.ext2, mkfs.ext3) from a
tree with files of several sizes, a sparse file, nested folders, short and long symlinks, a hard
link, a fifo, a unicode name, several modes and user.* xattrs; a fragmented file is added with debugfs -w (files
written around it and removed first).  Each mount is compared with the source tree (types,
modes, owners, sizes, link targets, hard links, every byte) and every file's bytes with what
`debugfs -R "rdump / OUT"` extracts.  The image is mounted as it is, compressed (.img.gz,
.img.xz: read through the codec's checkpoints) and as a member of a tar; without -r the .img.xz
is the file fs.img.  Damage: a data block overwritten (that file reads what is there, as
debugfs dumps it), a zeroed superblock (the image stays a file), a superblock that makes no
sense and a truncated image (refused with a message, the image stays a file).
"""
import os
import stat
import subprocess

import pytest

from conftest import compare_trees, require_tool, run, run_tarseek, user_xattrs_supported


def make_tree(tmp_path):
    src = tmp_path / "src"
    (src / "d" / "e").mkdir(parents=True)
    (src / "deep" / "1" / "2" / "3").mkdir(parents=True)
    (src / "small.txt").write_bytes(b"hello\n")
    (src / "d" / "big").write_bytes(os.urandom(150_000))
    (src / "d" / "e" / "two-blocks").write_bytes(os.urandom(4097))
    (src / "empty").write_bytes(b"")
    (src / "mid").write_bytes(os.urandom(200))  # inline: 60 bytes in i_block, 140 in an xattr
    (src / "deep" / "1" / "2" / "3" / "leaf").write_bytes(b"leaf")
    with open(src / "sparse", "wb") as f:
        f.truncate(3 << 20)
        f.seek(1 << 20)
        f.write(b"middle" * 1000)
        f.seek((3 << 20) - 5)
        f.write(b"tail!")
    with open(src / "all-hole", "wb") as f:
        f.truncate(1 << 20)
    with open(src / "hole-end", "wb") as f:
        f.write(b"x" * 5000)
        f.truncate(100_000)
    os.symlink("small.txt", src / "short")
    os.symlink("l" * 300, src / "long")
    os.link(src / "d" / "big", src / "hard")
    os.mkfifo(src / "fifo")
    (src / "\u00fcn\u00efc\u00f8d\u00e9 \u6587").write_bytes(b"unicode\n")
    if user_xattrs_supported(src):  # in the inode's body, and (500 bytes) in a block
        os.setxattr(src / "small.txt", "user.comment", b"a small file")
        os.setxattr(src / "d" / "big", "user.big", os.urandom(500))
        os.setxattr(src / "d" / "big", "user.empty", b"")
        os.setxattr(src / "d", "user.folder", b"yes")
    os.chmod(src / "small.txt", 0o4751)
    os.chmod(src / "d" / "e", 0o700)
    os.chmod(src / "empty", 0o600)
    return src


def mkfs(kind, src, img, *opts, size="16M"):
    require_tool("mkfs." + kind, "debugfs")
    run("mkfs." + kind, "-q", "-F", *opts, "-d", str(src), str(img), size)


def expected(src):
    """The source tree as the image holds it: with the lost+found mkfs adds."""
    lf = src / "lost+found"
    if not lf.exists():
        lf.mkdir()
        os.chmod(lf, 0o700)
    return src


def rdump(img, out):
    out.mkdir()
    run("debugfs", "-R", f"rdump / {out}", str(img))
    return out


def compare_rdump(mounted, dumped, inline=False):
    """Every regular file debugfs extracts reads the same in the mount.  inline: debugfs 1.47.0
    dumps the whole 60 bytes of i_block for an inline file: the mount's bytes, then zeros."""
    n = 0
    for root, dirs, files in os.walk(dumped):
        for name in files:
            p = os.path.join(root, name)
            if not stat.S_ISREG(os.lstat(p).st_mode):
                continue
            rel = os.path.relpath(p, dumped)
            with open(p, "rb") as a, open(os.path.join(mounted, rel), "rb") as b:
                want, got = a.read(), b.read()
                if inline:  # the sizes are compared with the source's
                    assert want.rstrip(b"\0") == got.rstrip(b"\0"), rel
                else:
                    assert want == got, rel
            n += 1
    assert n > 5


def check(path, src, img, tmp_path):
    compare_trees(path, expected(src), check_root=False, mtimes=False,
                  xattrs=user_xattrs_supported(src))
    compare_rdump(path, rdump(img, tmp_path / "rdump"))


@pytest.mark.parametrize("kind,opts", [
    ("ext4", []),
    ("ext4", ["-b", "4096", "-O", "64bit,metadata_csum"]),
    ("ext4", ["-O", "^extent,^64bit"]),
    ("ext3", []),
    ("ext2", []),
])
def test_ext4_image(mount, tmp_path, kind, opts):
    src = make_tree(tmp_path)
    img = tmp_path / "fs.img"
    mkfs(kind, src, img, *opts)
    with mount(img, "-r") as m:
        check(m.path, src, img, tmp_path)
        # the mtimes in seconds (mkfs -d 1.47 keeps no nanoseconds)
        for p in ("small.txt", "d/big", "sparse"):
            assert int(os.lstat(os.path.join(m.path, p)).st_mtime) == \
                int(os.lstat(src / p).st_mtime)


@pytest.mark.parametrize("comp", ["gz", "xz"])
def test_ext4_compressed(mount, tmp_path, comp):
    src = make_tree(tmp_path)
    img = tmp_path / "fs.img"
    mkfs("ext4", src, img)
    run(comp == "gz" and "gzip" or "xz", "-k", str(img))
    with mount(str(img) + "." + comp, "-r") as m:
        check(m.path, src, img, tmp_path)
    # a second mount: from the index
    with mount(str(img) + "." + comp, "-r") as m:
        with open(os.path.join(m.path, "d", "big"), "rb") as f:
            assert f.read() == (src / "d" / "big").read_bytes()


def test_ext4_without_r(mount, tmp_path):
    src = make_tree(tmp_path)
    img = tmp_path / "fs.img"
    mkfs("ext4", src, img)
    run("xz", "-k", str(img))
    with mount(str(img) + ".xz") as m:
        p = os.path.join(m.path, "fs.img")
        assert stat.S_ISREG(os.lstat(p).st_mode)
        with open(p, "rb") as f:
            assert f.read() == img.read_bytes()


@pytest.mark.parametrize("name", ["t.tar", "t.tar.gz"])
def test_ext4_in_tar(mount, tmp_path, name):
    """A member of a tar, and of a tar.gz (its blocks read through the gzip checkpoints)."""
    src = make_tree(tmp_path)
    img = tmp_path / "fs.img"
    mkfs("ext4", src, img)
    run("tar", "caf", str(tmp_path / name), "-C", str(tmp_path), "fs.img")
    with mount(tmp_path / name, "-r") as m:
        check(os.path.join(m.path, "fs.img"), src, img, tmp_path)


def test_ext4_in_folder(mount, tmp_path):
    """A folder source: its disk.img (any name) is a folder with -r."""
    src = make_tree(tmp_path)
    (tmp_path / "folder").mkdir()
    img = tmp_path / "folder" / "disk.raw"
    mkfs("ext4", src, img)
    with mount(tmp_path / "folder", "-r") as m:
        check(os.path.join(m.path, "disk.raw"), src, img, tmp_path)


def test_ext4_fragmented(mount, tmp_path):
    src = make_tree(tmp_path)
    img = tmp_path / "fs.img"
    mkfs("ext4", src, img)
    parts = {}
    for i in range(1, 7):
        parts[f"f{i}"] = os.urandom(8192 * i)
        (tmp_path / f"f{i}").write_bytes(parts[f"f{i}"])
    frag = os.urandom(60_000)
    (tmp_path / "frag").write_bytes(frag)
    cmds = "".join(f"write f{i} f{i}\n" for i in range(1, 7)) + "rm f2\nrm f4\nwrite frag frag\n"
    (tmp_path / "cmds").write_text(cmds)
    run("debugfs", "-w", "-f", "cmds", str(img), cwd=tmp_path)
    out = run("debugfs", "-R", "stat /frag", str(img)).stdout
    assert b"EXTENTS" in out
    with mount(img, "-r") as m:
        with open(os.path.join(m.path, "frag"), "rb") as f:
            assert f.read() == frag
        for n in ("f1", "f3", "f5", "f6"):
            with open(os.path.join(m.path, n), "rb") as f:
                assert f.read() == parts[n]
        assert not os.path.exists(os.path.join(m.path, "f2"))
        compare_rdump(m.path, rdump(img, tmp_path / "rdump"))


def block_of(img, path):
    out = run("debugfs", "-R", f"bmap {path} 0", str(img)).stdout
    return int(out.split()[-1])


def test_ext4_damaged_data(mount, tmp_path):
    """A data block overwritten: the file reads what is there, as debugfs dumps it."""
    src = make_tree(tmp_path)
    img = tmp_path / "fs.img"
    mkfs("ext4", src, img)
    blk = block_of(img, "/d/big")
    with open(img, "r+b") as f:
        f.seek(blk * 1024)
        f.write(b"\xaa" * 1024)
    run("debugfs", "-R", f"dump /d/big {tmp_path / 'big.out'}", str(img))
    want = (tmp_path / "big.out").read_bytes()
    assert want != (src / "d" / "big").read_bytes() and b"\xaa" * 1024 in want
    with mount(img, "-r") as m:
        with open(os.path.join(m.path, "d", "big"), "rb") as f:
            assert f.read() == want
        with open(os.path.join(m.path, "small.txt"), "rb") as f:
            assert f.read() == b"hello\n"


@pytest.mark.parametrize("damage", ["zeroed", "nonsense", "truncated"])
def test_ext4_damaged_superblock(mount, tmp_path, damage):
    """A zeroed superblock is no ext4: the image stays a file.  A superblock whose inodes per
    group make no sense, and an image cut short, are refused with a message, and the image
    stays a file too."""
    src = make_tree(tmp_path)
    img = tmp_path / "fs.img"
    mkfs("ext4", src, img)
    with open(img, "r+b") as f:
        if damage == "zeroed":
            f.seek(1024)
            f.write(bytes(1024))
        elif damage == "truncated":
            f.truncate(5 << 20)
        else:
            f.seek(1024 + 40)
            f.write(b"\xff\xff\xff\x7f")
    run("tar", "cf", str(tmp_path / "t.tar"), "-C", str(tmp_path), "fs.img")
    with mount(tmp_path / "t.tar", "-r", allow_errors=True) as m:
        p = os.path.join(m.path, "fs.img")
        assert stat.S_ISREG(os.lstat(p).st_mode)
        with open(p, "rb") as f:
            assert f.read() == img.read_bytes()
        if damage != "zeroed":
            assert ("truncated" if damage == "truncated" else "make no sense") in m.log()
    # the image alone: a clear refusal, no crash
    mnt = tmp_path / "alone"
    mnt.mkdir()
    r = run_tarseek("-r", img, mnt)
    assert r.returncode == 1, r
    assert {"zeroed": "not an archive", "nonsense": "make no sense",
            "truncated": "the image is truncated"}[damage] in r.stderr


def test_ext4_inline_data(mount, tmp_path):
    """inline_data: small files and folders inside their inodes (the bytes mapped where the
    inode is).  Compared with debugfs only: mkfs.ext4 -d 1.47.0 writes a sparse file short
    with this feature."""
    src = make_tree(tmp_path)
    img = tmp_path / "fs.img"
    mkfs("ext4", src, img, "-O", "inline_data", "-I", "512")
    for p in ("small.txt", "mid"):
        out = run("debugfs", "-R", f"stat /{p}", str(img)).stdout
        assert b"Size of inline data" in out
    with mount(img, "-r") as m:
        compare_rdump(m.path, rdump(img, tmp_path / "rdump"), inline=True)
        for p in ("small.txt", "empty", "mid", "all-hole", "d/big", "d/e/two-blocks", "\u00fcn\u00efc\u00f8d\u00e9 \u6587"):
            with open(os.path.join(m.path, p), "rb") as f:
                assert f.read() == (src / p).read_bytes(), p
        assert os.readlink(os.path.join(m.path, "long")) == "l" * 300
        assert os.readlink(os.path.join(m.path, "short")) == "small.txt"
        assert stat.S_ISFIFO(os.lstat(os.path.join(m.path, "fifo")).st_mode)
