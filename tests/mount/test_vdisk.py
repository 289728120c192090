"""Virtual-disk images (containers/vdisk/): qcow2, VHD (qemu's "vpc"), VHDX and VMDK, shown
with -r as a folder holding one file, the virtual disk, named after the image with .img
(vm.qcow2 -> vm.img).  Every image is made by qemu-img from a raw disk with random data,
holes and a written-out zero run, and the mounted disk is compared byte for byte with what
`qemu-img convert -O raw` makes of the same image:

- each format and subformat, mounted as the source; inside a tar (a folder per image), and
  gzip-compressed (read through the .gz's checkpoints);
- without -r an image stays the file it is (inside a tar: its own bytes);
- a tar written as the disk's content: the disk (named *.img) is itself shown as a folder
  by the nested pass, its files compared with what GNU tar extracts;
- refusals, the disk listed with its size and its reads failing with the reason: compressed
  qcow2 clusters and streamOptimized VMDK (EOPNOTSUPP), a qcow2 over a backing file;
  damage: a truncated image (EIO).
"""
import errno
import gzip
import os
import shutil

import pytest

from conftest import compare_trees, gnu_extract, random_bytes, read_errno, require_tool, run

FORMATS = [("qcow2", "compat=0.10", "qcow2"), ("qcow2", "compat=1.1,cluster_size=4096", "qcow2"),
           ("vpc", "subformat=fixed", "vhd"), ("vpc", "subformat=dynamic", "vhd"),
           ("vhdx", "subformat=dynamic,block_size=1M", "vhdx"), ("vhdx", "subformat=fixed", "vhdx"),
           ("vmdk", "subformat=monolithicSparse", "vmdk")]


def raw_disk(path, size=6 << 20):
    """Random data at 0 and 3 MiB + 7 KiB, zeros written out between, a hole, data at the end."""
    with open(path, "wb") as f:
        f.write(random_bytes(700_000, 1))
        f.seek((3 << 20) + 7168)
        f.write(random_bytes(900_000, 2))
        f.write(bytes(1 << 20))
        f.seek(size - 50_000)
        f.write(random_bytes(50_000, 3))
    return path


def make(tmp_path, fmt, opts, ext, raw=None, name="vm"):
    """The image of raw (default: raw_disk) in fmt, and qemu's own raw view of it."""
    raw = raw or raw_disk(tmp_path / "disk.raw")
    img = tmp_path / f"{name}.{ext}"
    run("qemu-img", "convert", "-f", "raw", "-O", fmt, "-o", opts, raw, img)
    back = tmp_path / f"{name}.{ext}.raw"
    run("qemu-img", "convert", "-f", fmt, "-O", "raw", img, back)
    return img, back.read_bytes()


def read(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("fmt,opts,ext", FORMATS,
                         ids=[f"{f}-{o.split(',')[0]}" for f, o, _ in FORMATS])
def test_vdisk_formats(mount, tmp_path, fmt, opts, ext):
    require_tool("qemu-img")
    img, want = make(tmp_path, fmt, opts, ext)
    with mount("-r", img) as m:
        assert os.listdir(m.path) == ["vm.img"]
        assert os.path.getsize(os.path.join(m.path, "vm.img")) == len(want)
        assert read(os.path.join(m.path, "vm.img")) == want
        # reads at odd offsets across extents and holes
        with open(os.path.join(m.path, "vm.img"), "rb") as f:
            for off in (0, 4095, 700_000 - 3, (3 << 20) + 7000, len(want) - 10):
                f.seek(off)
                assert f.read(9000) == want[off:off + 9000]


def test_vdisk_in_tar_and_gz(mount, tmp_path):
    require_tool("qemu-img")
    raw = raw_disk(tmp_path / "disk.raw")
    q, qwant = make(tmp_path, "qcow2", "compat=1.1", "qcow2", raw)
    v, vwant = make(tmp_path, "vpc", "subformat=dynamic", "vhd", raw, name="d")
    k, kwant = make(tmp_path, "vmdk", "subformat=monolithicSparse", "vmdk", raw, name="k")
    x, xwant = make(tmp_path, "vhdx", "subformat=dynamic", "vhdx", raw, name="x")
    outer = tmp_path / "outer.tar"
    run("tar", "cf", outer, "-C", tmp_path, q.name, v.name, k.name, x.name)
    with mount("-r", outer) as m:
        assert read(os.path.join(m.path, "vm.qcow2", "vm.img")) == qwant
        assert read(os.path.join(m.path, "d.vhd", "d.img")) == vwant
        assert read(os.path.join(m.path, "k.vmdk", "k.img")) == kwant
        assert read(os.path.join(m.path, "x.vhdx", "x.img")) == xwant
    # without -r: the images are the files they are
    with mount(outer) as m:
        assert sorted(os.listdir(m.path)) == ["d.vhd", "k.vmdk", "vm.qcow2", "x.vhdx"]
        assert read(os.path.join(m.path, "vm.qcow2")) == q.read_bytes()
    gz = tmp_path / "vm.qcow2.gz"
    gz.write_bytes(gzip.compress(q.read_bytes(), 6))
    with mount("-r", gz) as m:
        assert os.listdir(m.path) == ["vm.img"]
        assert read(os.path.join(m.path, "vm.img")) == qwant
    with mount("-r", gz) as m:  # a second mount: from the index, nothing decoded again
        assert read(os.path.join(m.path, "vm.img")) == qwant
        assert "indexed" not in m.log()


def test_vdisk_holding_a_tar(mount, tmp_path):
    """A tar written on the disk: the disk, named vm.img, is shown as a folder too."""
    require_tool("qemu-img")
    src = tmp_path / "files"
    src.mkdir()
    (src / "a.bin").write_bytes(random_bytes(300_000, 5))
    (src / "b.txt").write_bytes(b"hello\n" * 1000)
    inner = tmp_path / "inner.tar"
    run("tar", "cf", inner, "-C", src, "a.bin", "b.txt")
    raw = tmp_path / "disk.raw"
    shutil.copy(inner, raw)
    os.truncate(raw, 4 << 20)
    img, want = make(tmp_path, "qcow2", "cluster_size=4096", "qcow2", raw)
    ref = tmp_path / "ref"
    gnu_extract(inner, ref)
    with mount("-r", img) as m:
        compare_trees(os.path.join(m.path, "vm.img"), ref, check_root=False, owners=False)


def test_vdisk_refused(mount, tmp_path):
    require_tool("qemu-img")
    raw = raw_disk(tmp_path / "disk.raw")
    run("qemu-img", "convert", "-c", "-f", "raw", "-O", "qcow2", raw, tmp_path / "c.qcow2")
    run("qemu-img", "convert", "-f", "raw", "-O", "vmdk", "-o", "subformat=streamOptimized",
        raw, tmp_path / "s.vmdk")
    run("qemu-img", "create", "-f", "qcow2", "-b", raw, "-F", "raw", tmp_path / "b.qcow2")
    img, _ = make(tmp_path, "qcow2", "cluster_size=4096", "qcow2", raw, name="t")
    data = img.read_bytes()
    (tmp_path / "t.qcow2").write_bytes(data[:len(data) - 8192])
    outer = tmp_path / "outer.tar"
    run("tar", "cf", outer, "-C", tmp_path, "c.qcow2", "s.vmdk", "b.qcow2", "t.qcow2")
    with mount("-r", outer, allow_errors=True) as m:
        for folder, disk, err in (("c.qcow2", "c.img", errno.EOPNOTSUPP),
                                  ("s.vmdk", "s.img", errno.EOPNOTSUPP),
                                  ("b.qcow2", "b.img", errno.EOPNOTSUPP),
                                  ("t.qcow2", "t.img", errno.EIO)):
            path = os.path.join(m.path, folder, disk)
            assert os.path.getsize(path) == 6 << 20, path
            assert read_errno(path) == err, path
        log = m.log()
    assert "compressed qcow2 clusters: convert with qemu-img convert -O qcow2" in log
    assert "backing file" in log
    assert "streamOptimized" in log
