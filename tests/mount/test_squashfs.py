"""SquashFS images (containers/squashfs/, codecs/squashfs/), made by mksquashfs at test time and
compared with what unsquashfs extracts (`unsquashfs -d`: every byte, mode, owner, mtime, link
target, device number, hard link) and lists (`unsquashfs -lln`: type, permission bits, numeric
owners, size, link targets):

- every compressor mksquashfs offers here (gzip, lzo, lz4, xz, zstd, lzma), in blocks of 4 KiB
  and 128 KiB, so that files span many blocks;
- fragments, -no-fragments, -always-use-fragments, -noI -noD -noF (tables and data stored),
  -noX;
- files larger than a block, sparse files and blocks of zeros (holes), empty files and folders,
  symlinks, hard links, a fifo and devices (pseudo definitions, -p), forced owners, modes
  with the setuid/sticky bits, user.* extended attributes where the file system has them;
- a SquashFS image inside a tar, found with -r;
- damage: a flipped byte in a compressed data block (EIO on that file's reads, the others
  intact) and truncated images (a clear refusal, or EIO; never other bytes).
"""
import errno
import os
import re
import stat
import subprocess
import tarfile
import zlib

import pytest

from conftest import (TARSEEK, compare_trees, random_bytes, read_errno, require_tool, run,
                      run_tarseek, text_data, user_xattrs_supported)

COMPRESSORS = ["gzip", "lzo", "lz4", "xz", "zstd", "lzma"]


def source_tree(root, xattrs=False):
    """The tree the images are made of; returns root."""
    root.mkdir()
    (root / "d" / "sub").mkdir(parents=True)
    (root / "empty_dir").mkdir()
    (root / "seq.txt").write_bytes(b"".join(b"%d\n" % i for i in range(40_000)))
    (root / "d" / "rand.bin").write_bytes(random_bytes(300_001, seed=1))
    (root / "d" / "text.txt").write_bytes(text_data(200_000, seed=2))
    (root / "d" / "sub" / "small").write_bytes(b"small\n")
    (root / "d" / "sub" / "tiny").write_bytes(b"t")
    (root / "empty").write_bytes(b"")
    (root / "zeros").write_bytes(bytes(70_000))  # all blocks of zeros: holes
    with open(root / "sparse", "wb") as f:  # data, a hole of 1 MiB, data
        f.write(random_bytes(5000, seed=3))
        f.seek(1 << 20, 1)
        f.write(b"end\n")
    (root / "exact").write_bytes(random_bytes(131072, seed=4))  # one block exactly
    os.symlink("d/rand.bin", root / "link")
    os.symlink("nowhere/at/all", root / "dangling")
    os.symlink("d", root / "dirlink")
    os.link(root / "d" / "text.txt", root / "hard1")
    os.link(root / "d" / "text.txt", root / "d" / "sub" / "hard2")
    os.chmod(root / "d" / "sub" / "small", 0o4755)
    os.chmod(root / "empty_dir", 0o1777)
    os.chmod(root / "d" / "sub" / "tiny", 0o600)
    if xattrs:
        os.setxattr(root / "seq.txt", "user.comment", b"numbers")
        os.setxattr(root / "d", "user.folder", b"x" * 300)
    for i, p in enumerate(sorted(root.rglob("*"))):
        os.utime(p, (1_600_000_000 + i, 1_600_000_000 + 1000 * i), follow_symlinks=False)
    os.utime(root, (1_600_000_000, 1_600_000_000))
    return root


PSEUDO = ["fifo i 640 12 34 f", "null c 666 0 0 1 3", "loop9 b 660 0 6 7 9",
          "bigdev c 600 0 0 300 70000"]


def mksquashfs(src, image, *opts, pseudo=()):
    argv = ["mksquashfs", str(src), str(image), "-noappend", "-quiet", "-no-progress", *opts]
    for p in pseudo:
        argv += ["-p", p]
    return subprocess.run(argv, capture_output=True, text=True)


def extract(image, dest):
    run("unsquashfs", "-no-progress", "-d", str(dest), str(image))
    return dest


def listing(image):
    """{path: (type+mode string, "uid/gid", size or None, link target or None)} from
    `unsquashfs -lln` (root as "")."""
    out = run("unsquashfs", "-lln", "-d", "", str(image)).stdout.decode()
    rows = {}
    pat = re.compile(r"^(\S{10}) (\d+)/(\d+) +(\d+|\d+, *\d+) \S+ \S+ ?(.*)$")
    for line in out.splitlines():
        m = pat.match(line)
        if not m:
            continue
        mode, uid, gid, size, rest = m.groups()
        target = None
        if mode[0] == "l":
            rest, target = rest.split(" -> ", 1)
        rows[rest.lstrip("/")] = (mode, f"{uid}/{gid}", size.replace(" ", ""), target)
    return rows


def check_listing(mnt, image):
    """The mount agrees with `unsquashfs -lln` on every path."""
    rows = listing(image)
    assert rows, "unsquashfs listed nothing"
    for path, (mode, owner, size, target) in rows.items():
        if path == "":
            continue  # the mount's root is tarseek's, as for every archive
        full = os.path.join(mnt, path)
        st = os.lstat(full)
        assert stat.filemode(st.st_mode) == mode, (path, stat.filemode(st.st_mode), mode)
        assert f"{st.st_uid}/{st.st_gid}" == owner, (path, st.st_uid, st.st_gid, owner)
        if mode[0] in "-l":
            assert str(st.st_size) == size, (path, st.st_size, size)
        if mode[0] in "cb":
            # unsquashfs -lln prints the inode's 32-bit number split as 24 + 8 bits (a minor
            # above 255 shows in its major); unsquashfs -d makes the node right
            ma, mi = os.major(st.st_rdev), os.minor(st.st_rdev)
            enc = (mi & 0xff) | (ma << 8) | ((mi & ~0xff) << 12)
            assert f"{enc >> 8},{enc & 0xff}" == size, (path, ma, mi, size)
        if target is not None:
            assert os.readlink(full) == target, path
    got = {os.path.relpath(os.path.join(d, n), mnt)
           for d, dirs, files in os.walk(mnt) for n in dirs + files}
    assert got == set(rows) - {""}, sorted(got ^ (set(rows) - {""}))


@pytest.fixture(scope="module")
def src_dir(tmp_path_factory):
    require_tool("mksquashfs", "unsquashfs")
    base = tmp_path_factory.mktemp("sqfs-src")
    return source_tree(base / "src", xattrs=user_xattrs_supported(str(base)))


CASES = [(c, b, o) for c in COMPRESSORS for b in ("4K", "128K")
         for o in ("", "-no-fragments")]
CASES += [("gzip", "128K", "-always-use-fragments"), ("gzip", "4K", "-noI -noD -noF"),
          ("xz", "64K", "-noD"), ("zstd", "128K", "-noX -noI"),
          ("lz4", "4K", "-noF -always-use-fragments")]


@pytest.mark.parametrize("comp,block,opts", CASES,
                         ids=["-".join(filter(None, [c, b, o.replace(" ", "")]))
                              for c, b, o in CASES])
def test_squashfs(mount, tmp_path, src_dir, comp, block, opts):
    image = tmp_path / "t.sqsh"
    r = mksquashfs(src_dir, image, "-comp", comp, "-b", block, *opts.split(), pseudo=PSEUDO)
    if r.returncode != 0 and comp == "lzma":
        pytest.skip(f"mksquashfs does not make lzma images here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    ref = extract(image, tmp_path / "ref")
    with mount(image) as m:
        compare_trees(m.path, ref, check_root=False)
        check_listing(m.path, image)


def test_owners_forced(mount, tmp_path, src_dir):
    image = tmp_path / "o.sqsh"
    r = mksquashfs(src_dir, image, "-force-uid", "4321", "-force-gid", "98765", "-all-time",
                   "1234567890")
    assert r.returncode == 0, r.stderr
    ref = extract(image, tmp_path / "ref")
    with mount(image) as m:
        got = compare_trees(m.path, ref, check_root=False)
        check_listing(m.path, image)
    assert {(n.uid, n.gid) for p, n in got.items() if p != b"."} == {(4321, 98765)}
    assert {n.mtime_ns for p, n in got.items() if p != b"."} == {1234567890 * 10**9}


def test_acceptance(tmp_path, src_dir):
    """As the lead's script does it: `tarseek sq.img m`, without -f."""
    image = tmp_path / "sq.img"
    assert mksquashfs(src_dir, image).returncode == 0
    m = tmp_path / "m"
    m.mkdir()
    r = run_tarseek(image, m)
    assert r.returncode == 0, r.stderr
    try:
        with open(m / "d" / "rand.bin", "rb") as f:
            assert f.read() == (src_dir / "d" / "rand.bin").read_bytes()
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(m)])


def test_in_tar(mount, tmp_path, src_dir):
    """An image inside a tar, named .sqsh and .squashfs, shown as a folder with -r."""
    for name in ("a.sqsh", "b.squashfs", "c.sfs"):
        assert mksquashfs(src_dir, tmp_path / name, "-comp", "xz").returncode == 0
    ref = extract(tmp_path / "a.sqsh", tmp_path / "ref")
    archive = tmp_path / "outer.tar"
    with tarfile.open(archive, "w") as t:
        for name in ("a.sqsh", "b.squashfs", "c.sfs"):
            t.add(tmp_path / name, arcname="in/" + name)
    with mount(archive, "-r") as m:
        for name in ("a.sqsh", "b.squashfs", "c.sfs"):
            compare_trees(os.path.join(m.path, "in", name), ref, check_root=False)


def test_flipped_byte(mount, tmp_path):
    """A byte flipped in the middle of a file's compressed block: that file's reads fail
    with EIO, the others read whole; never other bytes.  mksquashfs's gzip writes a block as
    zlib's compress2 at level 9 makes it, so the test finds the victim's second block in the
    image by compressing it the same way."""
    require_tool("mksquashfs", "unsquashfs")
    src = tmp_path / "src"
    src.mkdir()
    victim = text_data(400_000, seed=7)
    (src / "a_first.txt").write_bytes(text_data(50_000, seed=8))
    (src / "victim.txt").write_bytes(victim)
    (src / "z_last.bin").write_bytes(random_bytes(200_000, seed=9))
    image = tmp_path / "t.sqsh"
    assert mksquashfs(src, image, "-comp", "gzip", "-no-fragments").returncode == 0
    ref = extract(image, tmp_path / "ref")
    data = bytearray(image.read_bytes())
    block = zlib.compress(victim[131072:262144], 9)
    at = data.find(block)
    assert at > 0, "the victim's second block is not where zlib would put it"
    data[at + len(block) // 2] ^= 0x55
    bad = tmp_path / "bad.sqsh"
    bad.write_bytes(bytes(data))
    with mount(bad, allow_errors=True) as m:
        assert read_errno(os.path.join(m.path, "victim.txt")) == errno.EIO
        with open(os.path.join(m.path, "victim.txt"), "rb") as f:  # never other bytes
            try:
                assert f.read(131072) == victim[:131072]
            except OSError as e:
                assert e.errno == errno.EIO
        for n in ("a_first.txt", "z_last.bin"):
            with open(os.path.join(m.path, n), "rb") as f:
                assert f.read() == (ref / n).read_bytes(), n
    assert "does not decode" in m.log()


@pytest.mark.parametrize("keep", [0.01, 0.5, 0.9, 0.999])
def test_truncated(tmp_path, src_dir, keep):
    """An image cut short: refused with a message (its tables are at its end), or, if it
    mounts, files that read whole or fail with EIO; never other bytes."""
    image = tmp_path / "t.sqsh"
    assert mksquashfs(src_dir, image, "-comp", "gzip").returncode == 0
    ref = extract(image, tmp_path / "ref")
    data = image.read_bytes()
    cut = tmp_path / "cut.sqsh"
    cut.write_bytes(data[:int(len(data) * keep)])
    m = tmp_path / "m"
    m.mkdir()
    r = run_tarseek(cut, m)
    if r.returncode != 0:
        assert "SquashFS" in r.stderr or "squashfs" in r.stderr, r.stderr
        assert "AddressSanitizer" not in r.stderr
        return
    try:
        for d, dirs, files in os.walk(m):
            for n in files:
                p = os.path.join(d, n)
                if not stat.S_ISREG(os.lstat(p).st_mode):
                    continue
                e = read_errno(p)
                if e is None:
                    with open(p, "rb") as f:
                        assert f.read() == (ref / os.path.relpath(p, m)).read_bytes(), p
                else:
                    assert e == errno.EIO, (p, e)
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(m)])


def test_loaded_when_needed(mount, tmp_path, src_dir):
    """libsquashfs is mapped by a daemon that mounts an image, not by one that mounts a tar
    (common/dl.h); --version says whether it can be loaded."""
    def maps_squashfs(pid):
        with open(f"/proc/{pid}/maps") as f:
            return any("libsquashfs" in line for line in f)
    archive = tmp_path / "t.tar"
    with tarfile.open(archive, "w") as t:
        t.add(src_dir / "seq.txt", arcname="seq.txt")
    with mount(archive) as m:
        with open(os.path.join(m.path, "seq.txt"), "rb") as f:
            f.read()
        assert not maps_squashfs(m.proc.pid)
    image = tmp_path / "t.sqsh"
    assert mksquashfs(src_dir, image).returncode == 0
    with mount(image) as m:
        assert maps_squashfs(m.proc.pid)
    out = subprocess.run([TARSEEK, "--version"], capture_output=True,
                         text=True).stdout
    assert "libsquashfs.so.1 (SquashFS images) found" in out, out
