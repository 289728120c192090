"""FAT file systems (containers/fat/) mounted with -r, compared with what mtools extracts
(`mcopy -s -m`: the bytes, the names, the modification times):

- FAT12 (a small volume), FAT16 and FAT32 (`mkfs.vfat -F 32`), each holding long names,
  unicode names, 8.3 names in lower case (the NT flags), nested folders, an empty file, a
  file of many clusters, a fragmented file (two files written, one deleted with `mdel`, a
  bigger one written into the gap and after it), a read-only file (`mattrib +r`: 0444, the
  kernel's rule; mcopy itself extracts it 0644) and a volume label (not a member);
- without -r the image stays a file;
- damage: a cluster chain that loops (that file EIO, the rest readable), a chain pointing
  past the FAT, a truncated image (files past the end EIO).
"""
import errno
import os
import shutil
import struct
import subprocess

import pytest

from conftest import compare_trees, random_bytes, read_errno, require_tool, run, text_data


def make_tree(src):
    src.mkdir()
    (src / "A Long File Name.txt").write_bytes(text_data(3000, 1))
    (src / "café ünïcode ✓.txt").write_bytes(b"unicode\n")
    (src / "lower.txt").write_bytes(b"lower case 8.3\n")
    (src / "UPPER.TXT").write_bytes(b"upper case 8.3\n")
    (src / "empty").write_bytes(b"")
    (src / "big.bin").write_bytes(random_bytes(300_000, 7))
    d = src / "dir" / "sub folder" / "deeper"
    d.mkdir(parents=True)
    (d / "n.txt").write_bytes(b"nested\n")
    (src / "dir" / "x.dat").write_bytes(random_bytes(5000, 3))
    (src / "emptydir").mkdir()


def make_fat(tmp_path, kind):
    """An image of kind fat12/fat16/fat32 holding make_tree's files, a fragmented file, a
    read-only file and a label.  Returns (image, ref tree as mcopy extracts it)."""
    require_tool("mkfs.vfat", "mcopy", "mdel", "mattrib")
    src = tmp_path / "src"
    make_tree(src)
    img = tmp_path / f"{kind}.img"
    args = {"fat12": ["-F", "12", "-s", "1"], "fat16": ["-F", "16"], "fat32": ["-F", "32"]}[kind]
    size = {"fat12": 2048, "fat16": 20480, "fat32": 40960}[kind]
    run("mkfs.vfat", *args, "-n", "MYLABEL", "-C", img, str(size))
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    for p in sorted(src.iterdir()):
        run("mcopy", "-s", "-m", "-i", img, p, "::", env=env)
    # fragmentation: a hole left by a deleted file, filled by a bigger one
    (tmp_path / "gap1").write_bytes(random_bytes(20_000, 11))
    (tmp_path / "keep").write_bytes(random_bytes(10_000, 12))
    (tmp_path / "frag.bin").write_bytes(random_bytes(60_000, 13))
    (tmp_path / "ro.txt").write_bytes(b"read only\n")
    run("mcopy", "-m", "-i", img, tmp_path / "gap1", tmp_path / "keep", "::", env=env)
    run("mdel", "-i", img, "::gap1", env=env)
    if kind == "fat32":  # FSInfo's next-free hint made unknown: mtools then fills the gap
        with open(img, "r+b") as f:
            f.seek(512 + 492)
            f.write(b"\xff" * 4)
    run("mcopy", "-m", "-i", img, tmp_path / "frag.bin", tmp_path / "ro.txt", "::", env=env)
    run("mattrib", "-i", img, "+r", "::ro.txt", env=env)
    ref = tmp_path / "ref"
    ref.mkdir()
    run("mcopy", "-s", "-m", "-n", "-i", img, "::", ref, env=env)
    os.chmod(ref / "ro.txt", 0o444)  # the kernel's rule; mcopy ignores the attribute
    return img, ref


def fat_chain_of(img, name):
    """(fat type bits, FAT byte offset, first cluster) of root file name (8.3, FAT12/16) --
    used to damage an image; found through the BPB and the root folder."""
    b = open(img, "rb").read()
    bps, spc, rsvd, nfats, roots = struct.unpack_from("<HBHBH", b, 11)
    fatsz = struct.unpack_from("<H", b, 22)[0]
    root = (rsvd + nfats * fatsz) * bps
    for off in range(root, root + roots * 32, 32):
        if b[off:off + 11] == name:
            return rsvd * bps, struct.unpack_from("<H", b, off + 26)[0]
    raise AssertionError(f"{name} not in the root folder")


@pytest.mark.parametrize("kind", ["fat12", "fat16", "fat32"])
def test_fat_tree(mount, tmp_path, kind):
    img, ref = make_fat(tmp_path, kind)
    with mount("-r", img) as m:
        compare_trees(m.path, ref, check_root=False, owners=False, xattrs=False,
                      dir_mtimes=False)
        assert os.stat(os.path.join(m.path, "ro.txt")).st_mode & 0o777 == 0o444
        assert "MYLABEL" not in os.listdir(m.path)


def test_fat_gz_with_and_without_r(mount, tmp_path):
    """fat16.img.gz: without -r the file fat16.img (a user loop-mounts it), with -r its tree."""
    img, ref = make_fat(tmp_path, "fat16")
    run("gzip", "-k", img)
    with mount(str(img) + ".gz") as m:
        assert os.listdir(m.path) == ["fat16.img"]
        with open(os.path.join(m.path, "fat16.img"), "rb") as f:
            assert f.read() == open(img, "rb").read()
    with mount("-r", str(img) + ".gz", "--index-file", tmp_path / "r.index") as m:
        compare_trees(m.path, ref, check_root=False, owners=False, xattrs=False,
                      dir_mtimes=False)


def test_fat_inside_a_tar_gz(mount, tmp_path):
    img, ref = make_fat(tmp_path, "fat12")
    run("tar", "czf", tmp_path / "t.tar.gz", "-C", tmp_path, "fat12.img")
    with mount("-r", tmp_path / "t.tar.gz") as m:
        compare_trees(os.path.join(m.path, "fat12.img"), ref, check_root=False,
                      owners=False, xattrs=False, dir_mtimes=False)


def test_fat_damaged_loop(mount, tmp_path):
    """big.bin's chain made to loop back to its first cluster: big.bin EIO, the rest read."""
    img, ref = make_fat(tmp_path, "fat16")
    fat, first = fat_chain_of(img, b"BIG     BIN")
    with open(img, "r+b") as f:
        f.seek(fat + 2 * (first + 3))
        f.write(struct.pack("<H", first))
    with mount("-r", img, allow_errors=True) as m:
        assert read_errno(os.path.join(m.path, "big.bin")) == errno.EIO
        assert "loops" in m.log()
        os.remove(ref / "big.bin")
        for root, _, files in os.walk(ref):
            for n in files:
                rel = os.path.relpath(os.path.join(root, n), ref)
                with open(os.path.join(m.path, rel), "rb") as f:
                    assert f.read() == open(os.path.join(root, n), "rb").read(), rel


def test_fat_damaged_outside(mount, tmp_path):
    """big.bin's chain pointing outside the volume, and a truncated image: EIO, no zeros."""
    img, ref = make_fat(tmp_path, "fat12")
    fat, first = fat_chain_of(img, b"BIG     BIN")
    with open(img, "r+b") as f:
        f.seek(fat + first + first // 2)
        v = struct.unpack("<H", f.read(2))[0]
        v = (v & 0x000F) | 0xFF0 << 4 if first & 1 else (v & 0xF000) | 0xFF0
        f.seek(fat + first + first // 2)
        f.write(struct.pack("<H", v))
    with mount("-r", img, allow_errors=True) as m:
        assert read_errno(os.path.join(m.path, "big.bin")) == errno.EIO
        with open(os.path.join(m.path, "keep"), "rb") as f:
            assert f.read() == (ref / "keep").read_bytes()
    cut = tmp_path / "cut.img"
    data = open(img, "rb").read()
    cut.write_bytes(data[:len(data) // 2])
    with mount("-r", cut, allow_errors=True) as m:
        for root, _, files in os.walk(m.path):
            for n in files:
                p = os.path.join(root, n)
                rel = os.path.relpath(p, m.path)
                e = read_errno(p)
                if e is None:
                    assert open(p, "rb").read() == open(ref / rel, "rb").read(), rel
                else:
                    assert e == errno.EIO, rel
