"""Archives that 7-Zip, unzip or bsdtar open (issue 38), made at test time by the real tools
and compared, entry by entry, with what the format's own tool extracts from the same file
(conftest.compare_trees: paths, types, modes, sizes, mtimes, link targets, bytes).

- An archive behind a codec (index/nested.c idx_wrap): a cpio -- every Linux initramfs --
  compressed with each codec tarseek reads, a zip in xz, a 7z in gzip, an iso in zstd: the
  archive's entries, as bsdtar (cpio, iso), unzip or 7zz extract them, not one decompressed
  file; the same cut short: the entries before the cut, or a refusal, never other bytes.
- Self-extracting archives: 7z behind p7zip's ELF stub (7zz -sfx, 7z a -sfx), behind a PE
  stub ("MZ", holding a false signature whose CRC fails, as 7-Zip skips), zip behind
  unzipsfx with and without zip -A, zip behind a PE stub: what 7zz x or unzip extracts; a
  7z SFX cut short: refused as truncated.
"""
import os
import shutil
import subprocess

import pytest

from conftest import compare_trees, require_tool, run, run_tarseek


def require_libarchive(tarseek_bin):
    out = subprocess.run([tarseek_bin, "--version"], capture_output=True, text=True).stdout
    if "libarchive" not in out:
        pytest.skip("tarseek built without libarchive")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A small tree: a file, a big one over several gzip checkpoints, a symlink, a folder,
    modes and mtimes of its own."""
    src = tmp_path_factory.mktemp("peers") / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "a.txt").write_bytes(b"alpha\n" * 100)
    (src / "sub" / "big.txt").write_bytes(b"".join(b"%08d\n" % i for i in range(150_000)))
    (src / "sub" / "deeper" / "empty").write_bytes(b"")
    os.symlink("a.txt", src / "link")
    os.chmod(src / "a.txt", 0o640)
    for p in ("a.txt", "sub/big.txt", "sub/deeper/empty", "sub/deeper", "sub"):
        os.utime(src / p, (1_600_000_000, 1_600_000_000 + len(p)))
    return src


def bsdtar_extract(archive, dest):
    os.makedirs(dest, exist_ok=True)
    run("bsdtar", "-xpf", archive, "-C", dest)
    return dest


def make_cpio(src, archive):
    names = subprocess.run("find . -mindepth 1 | LC_ALL=C sort", shell=True, cwd=src,
                           capture_output=True, check=True).stdout
    with open(archive, "wb") as out:
        subprocess.run(["cpio", "-o", "--quiet", "-H", "newc"], cwd=src, input=names,
                       stdout=out, check=True)


def compress(tool, path, out):
    with open(path, "rb") as i, open(out, "wb") as o:
        subprocess.run([tool, "-c"], stdin=i, stdout=o, check=True)


CODECS = {"gzip": "gz", "xz": "xz", "zstd": "zst", "lz4": "lz4", "lzip": "lz",
          "lzma": "lzma", "compress": "Z", "bzip2": "bz2"}


@pytest.mark.parametrize("tool", sorted(CODECS))
def test_cpio_behind_codec(tarseek_bin, mount, tmp_path, tree, tool):
    """find | cpio -o | CODEC: the cpio's entries, as bsdtar extracts them."""
    require_libarchive(tarseek_bin)
    require_tool("cpio", "bsdtar", tool)
    plain = tmp_path / "t.cpio"
    make_cpio(tree, plain)
    archive = tmp_path / f"t.cpio.{CODECS[tool]}"
    compress(tool, plain, archive)
    ref = bsdtar_extract(archive, tmp_path / "ref")
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False, xattrs=False)
        assert "behind its codec" in m.log()


def test_zip_7z_iso_behind_codec(tarseek_bin, mount, tmp_path, tree):
    """A zip in xz (unzip's extraction), a 7z in gzip (7zz's), an iso in zstd (bsdtar's)."""
    require_libarchive(tarseek_bin)
    require_tool("zip", "unzip", "7zz", "genisoimage", "bsdtar", "xz", "zstd")
    z, s, iso = tmp_path / "t.zip", tmp_path / "t.7z", tmp_path / "t.iso"
    run("zip", "-qry", z, ".", cwd=tree)
    run("7zz", "a", "-bd", "-bso0", "-snl", s, ".", cwd=tree)
    run("genisoimage", "-quiet", "-R", "-o", iso, tree)
    cases = []
    compress("xz", z, tmp_path / "t.zip.xz")
    run("unzip", "-qX", z, "-d", tmp_path / "ref.zip")
    # unzip restores no symlink's mtime: the zip's times are compared by test_zip.py
    cases.append((tmp_path / "t.zip.xz", tmp_path / "ref.zip", False))
    compress("gzip", s, tmp_path / "t.7z.gz")
    run("7zz", "x", "-bd", "-bso0", "-snl", f"-o{tmp_path / 'ref.7z'}", s)
    cases.append((tmp_path / "t.7z.gz", tmp_path / "ref.7z", True))
    run("zstd", "-q", iso, "-o", tmp_path / "t.iso.zst")
    cases.append((tmp_path / "t.iso.zst", bsdtar_extract(iso, tmp_path / "ref.iso"), True))
    for archive, ref, mtimes in cases:
        with mount(archive) as m:
            compare_trees(m.path, ref, check_root=False, xattrs=False, owners=False,
                          dir_mtimes=False, mtimes=mtimes)


def test_gzip_of_gzip_stays_a_file(tarseek_bin, mount, tmp_path):
    """A compressed file compressed again is shown decompressed once, as gzip -d gives it."""
    inner = tmp_path / "x.gz"
    data = b"payload\n" * 1000
    subprocess.run(["gzip", "-c"], input=data, stdout=open(inner, "wb"), check=True)
    compress("xz", inner, tmp_path / "x.gz.xz")
    with mount(tmp_path / "x.gz.xz") as m:
        assert os.listdir(m.path) == ["x.gz"]
        assert open(os.path.join(m.path, "x.gz"), "rb").read() == inner.read_bytes()


def test_cpio_behind_codec_cut_short(tarseek_bin, mount, tmp_path, tree):
    """A cpio.gz cut in its big entry: the entries before it, each as bsdtar extracts it,
    with a warning; nothing of the cut entry nor a decompressed file in its place."""
    require_libarchive(tarseek_bin)
    require_tool("cpio", "bsdtar")
    plain = tmp_path / "t.cpio"
    make_cpio(tree, plain)
    full = tmp_path / "full.cpio.gz"
    compress("gzip", plain, full)
    data = full.read_bytes()
    cut = tmp_path / "cut.cpio.gz"
    cut.write_bytes(data[:len(data) // 2])
    ref = tmp_path / "ref"
    ref.mkdir()
    subprocess.run(["bsdtar", "-xpf", cut, "-C", ref], capture_output=True)  # fails at the cut
    with mount(cut, allow_errors=True) as m:
        names = sorted(os.listdir(m.path))
        assert names and "cut.cpio" not in names, names
        assert "damaged" in m.log() or "cannot be read" in m.log()
        for dirpath, _, files in os.walk(m.path):
            for f in files:
                p = os.path.join(dirpath, f)
                rel = os.path.relpath(p, m.path)
                if os.path.islink(p):
                    continue
                assert open(p, "rb").read() == (tree / rel).read_bytes(), rel


SFX_7ZCON = "/usr/lib/p7zip/7zCon.sfx"  # p7zip-full's ELF stub


def fake_pe_stub(size=70_000):
    """An executable's first bytes as 7-Zip's PE stubs start ("MZ"), with a false 7z
    signature inside (its start header's CRC does not match) that the search must skip."""
    body = bytearray(os.urandom(size))
    body[:2] = b"MZ"
    body[1000:1006] = b"7z\xbc\xaf\x27\x1c"
    return bytes(body)


def test_sfx(mount, tmp_path, tree):
    require_tool("7zz", "7z", "zip", "unzip", "unzipsfx")
    if not os.path.exists(SFX_7ZCON):
        pytest.skip(f"{SFX_7ZCON} (p7zip-full) is missing")
    plain7, plainz = tmp_path / "t.7z", tmp_path / "t.zip"
    run("7zz", "a", "-bd", "-bso0", "-snl", plain7, ".", cwd=tree)
    run("zip", "-qry", plainz, ".", cwd=tree)
    cases = []
    a = tmp_path / "a.sfx"
    run("7zz", "a", "-bd", "-bso0", "-snl", f"-sfx{SFX_7ZCON}", a, ".", cwd=tree)
    cases.append((a, "7z"))
    b = tmp_path / "b.exe"
    run("7z", "a", "-bd", "-bso0", "-sfx", b, ".", cwd=tree)
    cases.append((b, "7z"))
    c = tmp_path / "c.exe"
    c.write_bytes(fake_pe_stub() + plain7.read_bytes())
    cases.append((c, "7z"))
    d = tmp_path / "d.sfx"
    d.write_bytes(open(shutil.which("unzipsfx"), "rb").read() + plainz.read_bytes())
    cases.append((d, "zip"))
    e = tmp_path / "e.sfx"
    e.write_bytes(d.read_bytes())
    run("zip", "-qA", e)
    cases.append((e, "zip"))
    f = tmp_path / "f.exe"
    f.write_bytes(fake_pe_stub() + plainz.read_bytes())
    cases.append((f, "zip"))
    for archive, kind in cases:
        ref = tmp_path / (archive.name + ".ref")
        if kind == "7z":
            run("7zz", "x", "-bd", "-bso0", "-snl", f"-o{ref}", archive)
        else:  # unzip warns of the bytes before an archive not made with -A: exit 1
            r = subprocess.run(["unzip", "-qX", archive, "-d", ref], capture_output=True)
            assert r.returncode in (0, 1), r
        with mount(archive) as m:
            compare_trees(m.path, ref, check_root=False, xattrs=False, owners=False,
                          dir_mtimes=False, mtimes=kind == "7z")
    cut = tmp_path / "cut.exe"
    cut.write_bytes(a.read_bytes()[:-200])
    (tmp_path / "never").mkdir()
    r = run_tarseek("-f", cut, tmp_path / "never")
    assert r.returncode != 0 and "truncated" in r.stderr, r.stderr
