"""Archives tarseek reads through libarchive (index/libarchive.c), made by the real tools --
GNU cpio in every -H format it writes, ar, dpkg-deb, genisoimage and xorriso, bsdtar for xar
and warc -- and libarchive's own rar, rar5, cab, lha and rpm test files (tests/data/libarchive,
see its README): mounted and compared with what bsdtar extracts from the same archive
(conftest.compare_trees: paths, types, modes, sizes, mtimes, link targets, bytes).

- cpio, ar and iso9660 store the bytes as they are: their entries are read in place (no
  checkpoint, nothing decoded); xar, warc, rar, cab, lha decode as one stream, with
  checkpoints at entry starts, read at random offsets after a second mount.
- A .deb with -r: its data.tar.xz opens as a folder, equal to what dpkg-deb -x extracts.
- An encrypted rar entry: listed, its reads fail with EACCES; a rar entry whose CRC fails
  (libarchive 3.6 reports one on this test file, bsdtar too): EIO, the daemon lives.
- A zisofs-compressed iso entry (libarchive's test file): equal to bsdtar's extraction, the
  tail libarchive leaves out read as zeros (it read EIO).
- Encrypted rar 5 entries, which libarchive before 3.8 does not mark (containers/rar5.h):
  EACCES and a log line, not EIO; the archive's plain entries read, also those after an
  encrypted one (bsdtar stops at it); in a solid archive, what libarchive lists.
- Hostile archives (libarchive's test files; libarchive 3.6.2 loops on both, bsdtar -t too):
  a xar whose file has two <link>s (it spins), an iso whose Rock Ridge continuation entry
  points at itself (it swells): refused with the guard's message (la_guard.h) well within
  the test's timeout, the peak memory of the daemon and its child bounded; inside a tar
  mounted with -r the hostile xar is shown as a file, the archives beside it open.
- Damage: truncated copies mount with fewer members or are refused; every byte served is
  the reference's.
"""
import errno
import os
import random
import subprocess
import sys

import pytest

from conftest import checkpoints, compare_trees, is_mounted, make_tree, require_tool, run

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "libarchive")
sys.path.insert(0, DATA)
import uudata  # noqa: E402  (tests/data/libarchive/uudata.py)


def require_libarchive(tarseek_bin):
    out = subprocess.run([tarseek_bin, "--version"], capture_output=True, text=True).stdout
    if "libarchive" not in out:
        pytest.skip("tarseek built without libarchive")


@pytest.fixture
def la(tarseek_bin):
    require_libarchive(tarseek_bin)
    require_tool("bsdtar")


def bsdtar_extract(archive, dest):
    os.makedirs(dest, exist_ok=True)
    run("bsdtar", "-xpf", archive, "-C", dest)
    return dest


def uudecode(name, dest):
    """A libarchive test file (uuencoded; NAME.Z.uu: compress(1)ed too) into dest/NAME."""
    path = os.path.join(dest, name)
    z = os.path.exists(os.path.join(DATA, name + ".Z.uu"))
    with open(path + ".Z" if z else path, "wb") as f:
        f.write(uudata.decode(os.path.join(DATA, name + (".Z.uu" if z else ".uu"))))
    if z:  # gzip reads compress's .Z
        with open(path, "wb") as f:
            subprocess.run(["gzip", "-dc", path + ".Z"], stdout=f, check=True)
    return path


def tree_with_big(tmp_path):
    src = tmp_path / "src"
    make_tree(src, long_names="ustar")
    rng = random.Random(3)
    (src / "big.bin").write_bytes(bytes(rng.getrandbits(8) for _ in range(300_000)) * 12)
    os.utime(src / "big.bin", (1_600_000_000, 1_600_000_000))
    return src


def random_reads(path, ref, n=40, seed=1):
    want = open(ref, "rb").read()
    rng = random.Random(seed)
    with open(path, "rb") as f:
        for _ in range(n):
            off = rng.randrange(0, len(want) + 10)
            length = rng.choice([1, 4096, 100_000, 1 << 20])
            f.seek(off)
            assert f.read(length) == want[off:off + length], (off, length)


def cpio(src, archive, fmt):
    names = subprocess.run("find . -mindepth 1 | LC_ALL=C sort", shell=True, cwd=src,
                           capture_output=True, check=True).stdout
    with open(archive, "wb") as out:
        subprocess.run(["cpio", "-o", "--quiet", "-H", fmt], cwd=src, input=names,
                       stdout=out, check=True)


@pytest.mark.parametrize("fmt", ["newc", "odc", "crc", "bin", "hpodc"])
def test_cpio(la, mount, tmp_path, fmt):
    require_tool("cpio")
    src = tree_with_big(tmp_path)
    archive = tmp_path / f"t.{fmt}.cpio"
    cpio(src, archive, fmt)
    ref = bsdtar_extract(archive, tmp_path / "ref")
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False, xattrs=False)
        random_reads(os.path.join(m.path, "big.bin"), ref / "big.bin")
    assert checkpoints(str(archive) + ".index.sqlite") == 0  # read in place


def test_ar_and_deb(la, mount, tmp_path):
    require_tool("ar", "dpkg-deb", "xz")
    src = tmp_path / "files"
    src.mkdir()
    (src / "a.txt").write_bytes(b"alpha\n" * 1000)
    (src / "b.bin").write_bytes(os.urandom(70_001))
    archive = tmp_path / "t.a"
    run("ar", "rc", archive, src / "a.txt", src / "b.bin")
    with mount(archive) as m:
        assert sorted(os.listdir(m.path)) == ["a.txt", "b.bin"]
        for n in ("a.txt", "b.bin"):
            assert open(os.path.join(m.path, n), "rb").read() == (src / n).read_bytes()
    assert checkpoints(str(archive) + ".index.sqlite") == 0

    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: tarseek-test\nVersion: 1.0\nArchitecture: all\n"
        "Maintainer: t <t@example.org>\nDescription: test\n")
    (pkg / "usr" / "share" / "doc" / "x").mkdir(parents=True)
    (pkg / "usr" / "share" / "doc" / "x" / "README").write_bytes(b"read me\n" * 300)
    (pkg / "usr" / "bin").mkdir(parents=True)
    (pkg / "usr" / "bin" / "tool").write_bytes(os.urandom(50_000))
    os.chmod(pkg / "usr" / "bin" / "tool", 0o755)
    deb = tmp_path / "x.deb"
    run("dpkg-deb", "-Zxz", "--root-owner-group", "--build", pkg, deb)
    ref = tmp_path / "deb-ref"
    run("dpkg-deb", "-x", deb, ref)
    with mount(deb, "-r") as m:
        names = sorted(os.listdir(m.path))
        assert "debian-binary" in names and "data.tar.xz" in names, names
        compare_trees(os.path.join(m.path, "data.tar.xz"), ref, check_root=False,
                      xattrs=False, dir_mtimes=False)


@pytest.mark.parametrize("tool", ["genisoimage", "xorriso"])
def test_iso9660(la, mount, tmp_path, tool):
    require_tool(tool)
    src = tree_with_big(tmp_path)
    archive = tmp_path / "t.iso"
    if tool == "genisoimage":
        run("genisoimage", "-quiet", "-R", "-J", "-o", archive, src)
    else:
        run("xorriso", "-abort_on", "FAILURE", "-outdev", archive, "-map", src, "/")
    ref = bsdtar_extract(archive, tmp_path / "ref")
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False, xattrs=False)
        random_reads(os.path.join(m.path, "big.bin"), ref / "big.bin")
    assert checkpoints(str(archive) + ".index.sqlite") == 0


@pytest.mark.parametrize("fmt", ["xar", "warc"])
def test_bsdtar_formats(la, mount, tmp_path, fmt):
    src = tree_with_big(tmp_path)
    archive = tmp_path / f"t.{fmt}"
    files = sorted(subprocess.run(["find", ".", "-type", "f", "-print0"], cwd=src,
                                  capture_output=True, check=True).stdout.split(b"\0")[:-1])
    if fmt == "warc":
        # files only, and plain ones (the standard tree's odd names: "Invalid record
        # version" from bsdtar 3.6 reading its own warc)
        src = tmp_path / "plain"
        (src / "c").mkdir(parents=True)
        rng = random.Random(5)
        for name, size in (("a.txt", 5000), ("b.txt", 150_000), ("c/d.txt", 70_000)):
            (src / name).write_bytes(bytes(rng.choice(b"abc \n") for _ in range(size)))
        files = [b"./a.txt", b"./b.txt", b"./c/d.txt"]
    run("bsdtar", "--format", fmt, "-cf", archive, "-C", src,
        *(files if fmt == "warc" else ["."]))
    # (the warc reference is the files: bsdtar 3.6's own reader fails on records over ~64 KB
    # read in its 10 KB blocks; tarseek hands libarchive 1 MiB at a time)
    ref = bsdtar_extract(archive, tmp_path / "ref") if fmt == "xar" else src
    with mount(archive, "--gzip-spacing", "0.25") as m:
        compare_trees(m.path, ref, check_root=False, xattrs=False,
                      dir_mtimes=fmt != "warc", mtimes=fmt != "warc", owners=fmt != "warc",
                      implicit=("c",) if fmt == "warc" else ())
    assert checkpoints(str(archive) + ".index.sqlite") >= 1
    # a second mount: the stored checkpoints, random reads of the large entry
    with mount(archive, "--gzip-spacing", "0.25") as m:
        big = "big.bin" if fmt == "xar" else max(
            (os.fsdecode(f)[2:] for f in files), key=lambda f: os.path.getsize(src / f))
        random_reads(os.path.join(m.path, big), ref / big)
    assert "indexed" not in m.log()


# sample: folders the archive does not list (bsdtar makes them at extraction)
SAMPLES = {"test_read_format_rar.rar": (), "test_read_format_rar5_multiple_files.rar": (),
           "test_read_format_cab_1.cab": ("dir1", "dir2"), "test_read_format_lha_lh6.lzh": (),
           "test_read_format_cpio_svr4_gzip_rpm.rpm": ("etc",),
           # zisofs: libarchive gives the compressed blocks' bytes and leaves out the tail of
           # zeros; bsdtar extends the file to its size, and so does the mount
           "test_read_format_iso_zisofs.iso": ()}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_libarchive_samples(la, mount, tmp_path, name):
    archive = uudecode(name, tmp_path)
    ref = bsdtar_extract(archive, tmp_path / "ref")
    for _ in range(2):  # the first mount builds the index, the second uses it
        with mount(archive) as m:
            compare_trees(m.path, ref, check_root=False, xattrs=False, owners=False,
                          implicit=SAMPLES[name])


def data_extents(path):
    """The data regions of a sparse file, as SEEK_DATA/SEEK_HOLE find them."""
    out, off = [], 0
    with open(path, "rb") as f:
        while True:
            try:
                d = os.lseek(f.fileno(), off, os.SEEK_DATA)
            except OSError:
                return out
            off = os.lseek(f.fileno(), d, os.SEEK_HOLE)
            out.append((d, off))


def test_gtar_sparse_without_closing_extent(mount, tmp_path):
    """libarchive's gtar_sparse_skip_entry: a 10 GiB sparse `a` whose map has no closing
    zero-length extent (the one GNU tar writes), then `b`.  Its last extent ends at
    10737418244, the real size its header states: GNU tar's listing, bsdtar's extraction and
    libarchive's own test (test_read_format_gtar_sparse_skip_entry.c) all give that size;
    GNU tar 1.34 alone extracts one byte less, dropping a byte of the map's data.  The mount
    follows the archive: the size, every data region's bytes as bsdtar extracts them, and
    `b` after it (which bsdtar 3.6 loses: it retries there, so `b` is GNU tar's)."""
    require_tool("bsdtar", "tar")
    archive = uudecode("test_read_format_gtar_sparse_skip_entry.tar", tmp_path)
    listing = run("tar", "-tvf", archive).stdout.decode()
    assert " 10737418244 " in listing
    ref = tmp_path / "ref"
    ref.mkdir()
    run("bsdtar", "-xf", archive, "-C", ref, "a", check=False)
    gnu = tmp_path / "gnu"
    gnu.mkdir()
    run("tar", "-xf", archive, "-C", gnu, "b")
    regions = data_extents(ref / "a")
    if sum(hi - lo for lo, hi in regions) > 1 << 20:
        pytest.skip("the file system under tmp_path does not keep bsdtar's holes")
    assert regions and regions[-1][1] == 10737418244
    with mount(archive, allow_errors=True) as m:
        a = os.path.join(m.path, "a")
        assert os.stat(a).st_size == os.stat(ref / "a").st_size == 10737418244
        with open(a, "rb") as f, open(ref / "a", "rb") as r:
            for lo, hi in regions:
                f.seek(lo)
                r.seek(lo)
                assert f.read(hi - lo) == r.read(hi - lo), (lo, hi)
        with open(os.path.join(m.path, "b"), "rb") as f:
            assert f.read() == (gnu / "b").read_bytes() == b"foo\n"


@pytest.mark.parametrize("stub", ["elf", "pe"])
@pytest.mark.parametrize("name", ["test_read_format_rar.rar",
                                  "test_read_format_rar5_multiple_files.rar"])
def test_rar_sfx(la, mount, tarseek_bin, tmp_path, name, stub):
    """A self-extracting rar: an executable stub, then the rar where libarchive's rar readers
    look for it (past 64 KiB, at a multiple of 16); WinRAR makes these, no Debian tool does, so
    the stub is this machine's /bin/ls (ELF) or an "MZ" header and zeros (PE), as long as
    WinRAR's.  The mount equals bsdtar -x of the SFX; an executable without a rar in it stays
    what it was (not an archive)."""
    rar = uudecode(name, str(tmp_path))
    if stub == "elf":
        head = open("/bin/ls", "rb").read()[:0x10030]
        assert len(head) == 0x10030 and head[:4] == b"\x7fELF"
    else:
        head = b"MZ" + bytes(0x1802e)
    sfx = tmp_path / "x.exe"
    sfx.write_bytes(head + open(rar, "rb").read())
    ref = bsdtar_extract(sfx, tmp_path / "ref")
    assert os.listdir(ref)
    with mount(sfx) as m:
        compare_trees(m.path, ref, check_root=False, xattrs=False, dir_mtimes=False)
    plain = tmp_path / "plain.exe"
    plain.write_bytes(head * 3)
    (tmp_path / "nomount").mkdir()
    r = subprocess.run([tarseek_bin, "-f", plain, tmp_path / "nomount"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and "not an archive" in r.stderr, r


def test_rar_encrypted_and_bad_crc(la, mount, tmp_path):
    enc = uudecode("test_read_format_rar_encryption_data.rar", tmp_path)
    with mount(enc, allow_errors=True) as m:
        names = sorted(os.listdir(m.path))
        assert names == ["bar.txt", "foo.txt"], names
        for n in names:
            assert os.stat(os.path.join(m.path, n)).st_size == 16
            with pytest.raises(OSError) as e:
                open(os.path.join(m.path, n), "rb").read()
            assert e.value.errno == errno.EACCES
    assert "encrypted" in m.log()
    bad = uudecode("test_read_format_rar_multi_lzss_blocks.rar", tmp_path)
    assert subprocess.run(["bsdtar", "-xOf", bad], capture_output=True).returncode != 0
    with mount(bad, allow_errors=True) as m:
        p = os.path.join(m.path, "multi_lzss_blocks_test.txt")
        assert os.stat(p).st_size == 20131111
        with pytest.raises(OSError) as e:
            open(p, "rb").read()
        assert e.value.errno == errno.EIO
        assert os.listdir(m.path)  # alive


def test_rar5_encrypted(la, mount, tmp_path):
    # a.txt and c.txt plain, b.txt and d.txt encrypted (libarchive's test_read_format_rar5_
    # encrypted: "This is from X.txt" in each)
    enc = uudecode("test_read_format_rar5_encrypted.rar", tmp_path)
    with mount(enc, allow_errors=True) as m:
        names = sorted(os.listdir(m.path))
        assert names == ["a.txt", "b.txt", "c.txt", "d.txt"], names
        for n in names:
            p = os.path.join(m.path, n)
            assert os.stat(p).st_size == 18, n
            if n in ("a.txt", "c.txt"):
                assert open(p, "rb").read() == f"This is from {n}".encode(), n
            else:
                with pytest.raises(OSError) as e:
                    open(p, "rb").read()
                assert e.value.errno == errno.EACCES, n
    log = m.log()
    assert "b.txt: encrypted" in log and "d.txt: encrypted" in log, log
    assert "damaged" not in log, log
    # solid: libarchive (bsdtar -t too) lists the first file alone, which is encrypted
    solid = uudecode("test_read_format_rar5_solid_encrypted.rar", tmp_path)
    with mount(solid, allow_errors=True) as m:
        assert os.listdir(m.path) == ["a.txt"]
        with pytest.raises(OSError) as e:
            open(os.path.join(m.path, "a.txt"), "rb").read()
        assert e.value.errno == errno.EACCES
    assert "a.txt: encrypted" in m.log()


@pytest.mark.parametrize("kind", ["cpio", "xar", "iso"])
def test_truncated(la, mount, tmp_path, kind):
    require_tool({"cpio": "cpio", "xar": "bsdtar", "iso": "genisoimage"}[kind])
    src = tree_with_big(tmp_path)
    archive = tmp_path / f"t.{kind}"
    if kind == "cpio":
        cpio(src, archive, "newc")
    elif kind == "xar":
        run("bsdtar", "--format", "xar", "-cf", archive, "-C", src, ".")
    else:
        run("genisoimage", "-quiet", "-R", "-o", archive, src)
    ref = bsdtar_extract(archive, tmp_path / "ref")
    data = archive.read_bytes()
    for frac in (0.3, 0.7, 0.97):
        cut = tmp_path / f"cut-{frac}.{kind}"
        cut.write_bytes(data[:int(len(data) * frac)])
        cm = mount(cut, allow_errors=True)
        try:
            m = cm.__enter__()
        except (RuntimeError, AssertionError) as e:
            assert "exited with" in str(e), e  # refused, with its message: no mount
            continue
        try:
            for root, _, files in os.walk(m.path):
                for f in files:
                    p = os.path.join(root, f)
                    rel = os.path.relpath(p, m.path)
                    if os.path.islink(p) or not os.path.isfile(ref / rel):
                        continue
                    try:
                        got = open(p, "rb").read()
                    except OSError as e:
                        assert e.errno == errno.EIO, (rel, e)
                        continue
                    assert got == (ref / rel).read_bytes(), rel
        finally:
            cm.__exit__(None, None, None)


# libarchive's hostile test files, and what the guard says of each (TARSEEK_LA_WATCHDOG=3,
# TARSEEK_LA_MEMORY=256)
HOSTILE = {"test_read_format_xar_doublelink.xar": "libarchive made no progress on it for 3 s",
           "test_read_format_iso_rockridge_ce_loop.iso": "libarchive took more than 256 MiB"}
GUARD_ENV = {"TARSEEK_LA_WATCHDOG": "3", "TARSEEK_LA_MEMORY": "256"}

# runs argv and prints its exit code and the peak resident KiB of it and every process it
# waited for (the daemon's child among them)
PEAK = ("import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], timeout=60)\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_refused(la, tarseek_bin, tmp_path, name):
    archive = uudecode(name, tmp_path)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    # the bound on time is PEAK's timeout (the watchdog's 3 s, or the budget reached)
    p = subprocess.run([sys.executable, "-c", PEAK, tarseek_bin, "-f", archive, mnt],
                       capture_output=True, text=True, timeout=90,
                       env=dict(os.environ, **GUARD_ENV))
    code, peak_kib = map(int, p.stdout.split())
    assert code != 0 and not is_mounted(mnt), p.stderr
    assert HOSTILE[name] in p.stderr and "(a hostile archive?): refused" in p.stderr, p.stderr
    assert peak_kib < 512 * 1024, peak_kib  # 256 MiB of budget, and what the daemon had


def test_hostile_inside(la, mount, tmp_path):
    """A hostile xar inside a tar (-r): refused, shown as a file; beside it a cpio and the
    zisofs iso open as folders, equal to bsdtar's extraction."""
    src = tmp_path / "outer"
    src.mkdir()
    bad = uudecode("test_read_format_xar_doublelink.xar", src)
    iso = uudecode("test_read_format_iso_zisofs.iso", src)
    os.remove(iso + ".Z")
    tree = tree_with_big(tmp_path)
    cpio(tree, src / "good.cpio", "newc")
    tarball = tmp_path / "outer.tar"
    run("tar", "-cf", tarball, "-C", src, ".")
    with mount(tarball, "-r", allow_errors=True, timeout=60, env=GUARD_ENV) as m:
        with open(os.path.join(m.path, os.path.basename(bad)), "rb") as f:
            assert f.read() == open(bad, "rb").read()
        compare_trees(os.path.join(m.path, "good.cpio"),
                      bsdtar_extract(src / "good.cpio", tmp_path / "ref1"),
                      check_root=False, xattrs=False)
        compare_trees(os.path.join(m.path, os.path.basename(iso)),
                      bsdtar_extract(iso, tmp_path / "ref2"), check_root=False,
                      xattrs=False, owners=False)
    assert HOSTILE["test_read_format_xar_doublelink.xar"] in m.log(), m.log()
