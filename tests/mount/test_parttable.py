"""Partition tables (containers/image/parttable.c) mounted with -r: disks made by sfdisk, the
partitions dd'ed into place, each partition a member "pN.img" ("pN-NAME.img" for a named GPT
partition) numbered as sfdisk numbers it, compared with what sfdisk -J says and with the
bytes dd wrote; FAT partitions shown as their trees (compared with mcopy's extraction):

- GPT with named partitions: an ext4 (its raw bytes, or a folder once tarseek reads ext4),
  a FAT, random bytes (a raw file); also gzip-compressed, with -r (the tree) and without
  (the file disk.img);
- MBR with a primary FAT and an extended partition holding two logical ones (p5, p6);
- damage: the primary GPT header zeroed (the backup is used, with a warning), the primary
  partition array's CRC broken (the backup again), both headers broken (refused: a disk
  inside a tar then stays a file), an EBR chain that loops (it ends there, what came before
  is kept), a disk cut inside its last partition (clipped, with a warning).
"""
import json
import os
import subprocess

import pytest

from conftest import compare_trees, random_bytes, require_tool, run, run_tarseek, text_data

GPT_SCRIPT = ('label: gpt\n'
              'start=2048, size=32768, type=linux, name="root part"\n'
              'start=36864, size=16384, type=EBD0A0A2-B9E5-4433-87C0-68B6B72699C7, name="ESP"\n'
              'start=53248, size=4096, type=linux\n')
MBR_SCRIPT = ('label: dos\n'
              'start=2048, size=8192, type=c\n'
              'start=10240, size=36864, type=5\n'
              'start=12288, size=16384, type=6\n'
              'start=30720, size=8192, type=83\n')


def fat_volume(tmp_path, name, kib, files):
    require_tool("mkfs.vfat", "mcopy")
    img = tmp_path / name
    run("mkfs.vfat", "-C", img, str(kib))
    for p in files:
        run("mcopy", "-m", "-i", img, p, "::")
    ref = tmp_path / (name + ".ref")
    ref.mkdir()
    run("mcopy", "-s", "-m", "-n", "-i", img, "::", ref)
    return img, ref


def partitions(disk):
    """{number: (start byte, size in bytes)} as sfdisk -J lists the table."""
    out = subprocess.run(["sfdisk", "-J", str(disk)], capture_output=True, text=True,
                         check=True).stdout
    t = json.loads(out)["partitiontable"]
    ss = t.get("sectorsize", 512)
    return {int(p["node"][len(str(disk)):]): (p["start"] * ss, p["size"] * ss)
            for p in t["partitions"]}


def place(disk, start, data):
    with open(disk, "r+b") as f:
        f.seek(start)
        f.write(data)


def make_gpt(tmp_path):
    """disk.img: p1 "root part" an ext4 (or random bytes without mkfs.ext4), p2 "ESP" a FAT,
    p3 random bytes.  Returns (disk, {n: bytes dd'ed}, FAT ref tree)."""
    require_tool("sfdisk")
    src = tmp_path / "src"
    src.mkdir()
    (src / "seq.txt").write_bytes(text_data(100_000, 5))
    (src / "Long name.bin").write_bytes(random_bytes(70_000, 9))
    disk = tmp_path / "disk.img"
    with open(disk, "wb") as f:
        f.truncate(32 << 20)
    run("sfdisk", "-q", disk, input=GPT_SCRIPT.encode())
    if shutil_which("mkfs.ext4"):
        run("mkfs.ext4", "-q", "-F", "-d", src, tmp_path / "p1.img", "16M")
        p1 = (tmp_path / "p1.img").read_bytes()
    else:
        p1 = random_bytes(16 << 20, 1)
    fat, ref = fat_volume(tmp_path, "p2.img", 8192, sorted(src.iterdir()))
    raw = {1: p1, 2: fat.read_bytes(), 3: random_bytes(4096 * 512, 3)}
    parts = partitions(disk)
    for n, data in raw.items():
        assert parts[n][1] == len(data)
        place(disk, parts[n][0], data)
    return disk, raw, ref


def shutil_which(tool):
    import shutil
    return shutil.which(tool)


def check_gpt(root, raw, ref):
    names = sorted(os.listdir(root))
    assert names == ["p1-root part.img", "p2-ESP.img", "p3.img"], names
    p1 = os.path.join(root, "p1-root part.img")
    if os.path.isfile(p1):  # no ext4 in this build: the raw partition
        with open(p1, "rb") as f:
            assert f.read() == raw[1]
    compare_trees(os.path.join(root, "p2-ESP.img"), ref, check_root=False, owners=False,
                  xattrs=False, dir_mtimes=False)
    with open(os.path.join(root, "p3.img"), "rb") as f:
        assert f.read() == raw[3]


def test_gpt(mount, tmp_path):
    disk, raw, ref = make_gpt(tmp_path)
    with mount("-r", disk) as m:
        check_gpt(m.path, raw, ref)
    # --strip-extension: the partitions read as folders lose ".img", the raw ones keep it
    with mount("-r", "--strip-extension", disk, "--index-file", tmp_path / "s.index") as m:
        names = set(os.listdir(m.path))
        assert {"p2-ESP", "p3.img"} <= names and len(names) == 3, names
        compare_trees(os.path.join(m.path, "p2-ESP"), ref, check_root=False, owners=False,
                      xattrs=False, dir_mtimes=False)


def test_gpt_gz(mount, tmp_path):
    disk, raw, ref = make_gpt(tmp_path)
    run("gzip", "-k", disk)
    gz = str(disk) + ".gz"
    with mount(gz, "--index-file", tmp_path / "plain.index") as m:
        assert os.listdir(m.path) == ["disk.img"]
        with open(os.path.join(m.path, "disk.img"), "rb") as f:
            assert f.read() == disk.read_bytes()
    with mount("-r", gz, "--index-file", tmp_path / "r.index") as m:
        check_gpt(m.path, raw, ref)
    with mount("-r", gz, "--index-file", tmp_path / "r.index") as m:  # the index reused
        check_gpt(m.path, raw, ref)
        assert "indexed" not in m.log()


def test_mbr_extended(mount, tmp_path):
    require_tool("sfdisk")
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_bytes(text_data(20_000, 2))
    disk = tmp_path / "mbr.img"
    with open(disk, "wb") as f:
        f.truncate(24 << 20)
    run("sfdisk", "-q", disk, input=MBR_SCRIPT.encode())
    parts = partitions(disk)
    assert sorted(parts) == [1, 2, 5, 6]
    fat1, ref1 = fat_volume(tmp_path, "f1.img", parts[1][1] // 1024, sorted(src.iterdir()))
    fat5, ref5 = fat_volume(tmp_path, "f5.img", parts[5][1] // 1024, sorted(src.iterdir()))
    p6 = random_bytes(parts[6][1], 6)
    place(disk, parts[1][0], fat1.read_bytes())
    place(disk, parts[5][0], fat5.read_bytes())
    place(disk, parts[6][0], p6)
    with mount("-r", disk) as m:
        assert sorted(os.listdir(m.path)) == ["p1.img", "p5.img", "p6.img"]
        compare_trees(os.path.join(m.path, "p1.img"), ref1, check_root=False, owners=False,
                      xattrs=False, dir_mtimes=False)
        compare_trees(os.path.join(m.path, "p5.img"), ref5, check_root=False, owners=False,
                      xattrs=False, dir_mtimes=False)
        with open(os.path.join(m.path, "p6.img"), "rb") as f:
            assert f.read() == p6
    # the second EBR's link turned back to the first: the chain ends there, p5 and p6 kept
    ext = parts[2][0]
    ebr2 = None
    with open(disk, "r+b") as f:
        f.seek(ext + 446 + 16)
        e = f.read(16)
        ebr2 = ext + int.from_bytes(e[8:12], "little") * 512
        f.seek(ebr2 + 446 + 16)
        f.write(bytes([0, 0, 0, 0, 5, 0, 0, 0]) + (0).to_bytes(4, "little") +
                (2048).to_bytes(4, "little"))
    with mount("-r", disk, "--index-file", tmp_path / "loop.index", allow_errors=True) as m:
        assert sorted(os.listdir(m.path)) == ["p1.img", "p5.img", "p6.img"]
        assert "loop" in m.log()


def test_gpt_backup(mount, tmp_path):
    disk, raw, ref = make_gpt(tmp_path)
    good = disk.read_bytes()
    place(disk, 512, bytes(512))  # the primary header zeroed
    with mount("-r", disk, "--index-file", tmp_path / "a.index") as m:
        check_gpt(m.path, raw, ref)
        assert "backup" in m.log()
    disk.write_bytes(good)
    place(disk, 1024 + 10, b"\xff")  # the primary array: its CRC no longer matches
    with mount("-r", disk, "--index-file", tmp_path / "b.index") as m:
        check_gpt(m.path, raw, ref)
        assert "backup" in m.log()
    # both broken: refused; inside a tar the disk stays a file
    place(disk, len(good) - 512 + 30, b"\xff")
    (tmp_path / "mnt-refused").mkdir()
    r = run_tarseek("-f", "-r", "--index-file", ":memory:", disk, tmp_path / "mnt-refused")
    assert r.returncode != 0 and "and so is the backup" in r.stderr, r.stderr
    run("tar", "cf", tmp_path / "t.tar", "-C", tmp_path, "disk.img")
    with mount("-r", tmp_path / "t.tar", allow_errors=True) as m:
        assert os.path.isfile(os.path.join(m.path, "disk.img"))
        assert "damaged" in m.log()


def test_truncated_disk(mount, tmp_path):
    disk, raw, ref = make_gpt(tmp_path)
    parts = partitions(disk)
    data = disk.read_bytes()
    cut = tmp_path / "cut.img"
    cut.write_bytes(data[:parts[3][0] + 1000])
    with mount("-r", cut, allow_errors=True) as m:
        with open(os.path.join(m.path, "p3.img"), "rb") as f:
            assert f.read() == raw[3][:1000]
        assert "clipped" in m.log()
        compare_trees(os.path.join(m.path, "p2-ESP.img"), ref, check_root=False,
                      owners=False, xattrs=False, dir_mtimes=False)


def test_named_by_file_system_label(mount, tmp_path):
    """A partition the table does not name is named after its file system's label (FAT's
    volume label, ext2/3/4's volume name); the number stays first, so two of one label stay
    apart; a GPT name wins over the label; no label, or FAT's "NO NAME": pN.img."""
    require_tool("sfdisk", "mkfs.vfat", "mkfs.ext4")
    disk = tmp_path / "labels.img"
    with open(disk, "wb") as f:
        f.truncate(40 << 20)
    run("sfdisk", "-q", disk, input=('label: dos\n'
                                     'start=2048, size=8192, type=c\n'
                                     'start=10240, size=32768, type=83\n'
                                     'start=43008, size=8192, type=c\n'
                                     'start=51200, size=8192, type=c\n').encode())
    parts = partitions(disk)
    vols = {}
    for n, label in ((1, "BOOT"), (3, None), (4, "BOOT")):
        img = tmp_path / f"v{n}.img"
        run("mkfs.vfat", *(["-n", label] if label else []), "-C", img, str(parts[n][1] // 1024))
        vols[n] = img.read_bytes()
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_bytes(text_data(5000, 3))
    run("mkfs.ext4", "-q", "-F", "-L", "root/fs", "-d", src, tmp_path / "v2.img",
        str(parts[2][1] // 1024) + "K")
    vols[2] = (tmp_path / "v2.img").read_bytes()
    for n, data in vols.items():
        place(disk, parts[n][0], data)
    with mount("-r", disk) as m:
        names = sorted(os.listdir(m.path))
        assert names == ["p1-BOOT.img", "p2-root_fs.img", "p3.img", "p4-BOOT.img"], names
        with open(os.path.join(m.path, "p2-root_fs.img", "a.txt"), "rb") as f:
            assert f.read() == (src / "a.txt").read_bytes()
    # a GPT name wins over the file system's label
    gpt = tmp_path / "gpt.img"
    with open(gpt, "wb") as f:
        f.truncate(24 << 20)
    run("sfdisk", "-q", gpt, input=('label: gpt\n'
                                    'start=2048, size=8192, type=linux, name="named"\n'
                                    'start=10240, size=8192, type=linux\n').encode())
    gparts = partitions(gpt)
    place(gpt, gparts[1][0], vols[1][:gparts[1][1]])
    place(gpt, gparts[2][0], vols[4][:gparts[2][1]])
    with mount("-r", gpt) as m:
        assert sorted(os.listdir(m.path)) == ["p1-named.img", "p2-BOOT.img"]
