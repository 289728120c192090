"""PPMd (7z coder 030401, var.H: codecs/ppmd/ppmd7.c) in 7z archives made by the real 7-Zip
(7zz a -m0=PPMd:o=N:mem=M), mounted and compared with what `7zz x` extracts: every path, type,
size and byte (conftest.compare_trees; modes, owners and times are test_7z's business, the
same code for every method).  Issue 38.

Orders 2, 6, 16 and 32 (7zz writes none higher) with memory sizes from 64 KiB (the model
fills and restarts many times over the tree) to 16 MiB; solid and not; the x86 BCJ filter
before PPMd (-mf=BCJ: the filter reads PPMd's output) on ELF binaries.  The tree: text with
long repeats, a 1.5 MB file read at random offsets (a PPMd folder restarts only at its start:
each read decodes from there or from the cache), random bytes, small and empty files.

Damage: a flipped byte in the packed data makes a file read EIO (the range coder, or the
folder's CRC) and none read wrong bytes; so with 200 zeroed bytes in a solid folder.

PPMd var.I rev. 1 (zip method 98: codecs/ppmd/ppmd8.c, the ppmd-zip codec) in zips made by 7zz
(7zz a -tzip -mm=PPMd -mx=L -mo=N -mmem=M): the same tree, compared with `7zz x` (and with
unzip where it can: Debian's UnZip 6.0 cannot, it skips method 98 entries), orders 2..16;
-mx=7 and up make 7-Zip write the cut-off restore method, 1 MiB makes the model run out on
the large file.  A flipped byte in one entry's data reads EIO for that entry only; ZipCrypto
and WinZip AES over PPMd read with --password.
"""
import errno
import os
import random
import shutil
import subprocess
import zipfile

import pytest

from conftest import compare_trees, random_bytes, read_errno, run
from sevenzip_cli import ENV7, check_tree, extract, make

pytestmark = pytest.mark.skipif(shutil.which("7zz") is None,
                                reason="7zz (Debian package 7zip) is needed")


def words_text(n, seed):
    """n bytes of words, with paragraphs that come back later."""
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrst") for _ in range(rng.randint(2, 9)))
             for _ in range(3000)]
    paras = [b" ".join(rng.choice(words) for _ in range(rng.randint(50, 400)))
             for _ in range(200)]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(paras) if rng.random() < 0.5 else \
            b" ".join(rng.choice(words) for _ in range(100))
        out += b"\n"
    return bytes(out[:n])


def make_src(root):
    os.makedirs(root / "sub")
    (root / "text.txt").write_bytes(words_text(300_000, 1))
    (root / "sub" / "large.txt").write_bytes(words_text(1_500_000, 2))
    (root / "sub" / "random.bin").write_bytes(random_bytes(120_000, 3))
    (root / "small.txt").write_bytes(b"hello ppmd\n" * 10)
    (root / "one").write_bytes(b"x")
    (root / "empty").write_bytes(b"")
    return root


def methods(archive):
    out = run("7zz", "l", "-slt", archive, env=ENV7).stdout.decode()
    return [line.split(" = ", 1)[1] for line in out.splitlines()
            if line.startswith("Method = ") and line != "Method = "]


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return make_src(tmp_path_factory.mktemp("ppmd") / "src")


@pytest.mark.parametrize("props,solid", [("o=6:mem=16m", "on"), ("o=6:mem=16m", "off"),
                                         ("o=2:mem=1m", "on"), ("o=16:mem=64k", "on"),
                                         ("o=32:mem=4m", "off")])
def test_7z(mount, tmp_path, src, props, solid):
    archive = make(tmp_path / "p.7z", src, f"-m0=PPMd:{props}", f"-ms={solid}")
    ms = methods(archive)
    assert ms and all(x.startswith("PPMD") for x in ms), ms
    ref = extract(archive, tmp_path / "ref")
    with mount(archive) as m:
        check_tree(m, ref)


def test_bcj(mount, tmp_path):
    """-mf=BCJ before PPMd on ELF binaries: a filter over PPMd, not over LZMA."""
    src = tmp_path / "src"
    src.mkdir()
    n = 0
    for name in ("ls", "cp", "sh", "python3", "7zz"):
        path = shutil.which(name)
        if path and n < 3:
            data = open(os.path.realpath(path), "rb").read()[:2_000_000]
            (src / name).write_bytes(data)
            n += 1
    (src / "notes.txt").write_bytes(words_text(50_000, 7))
    archive = make(tmp_path / "bcj.7z", src, "-m0=PPMd:o=8:mem=8m", "-mf=BCJ")
    ms = methods(archive)
    assert any("BCJ" in x and "PPMD" in x for x in ms), ms
    ref = extract(archive, tmp_path / "ref")
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False, mtimes=False, dir_mtimes=False,
                      owners=False, xattrs=False)


def test_damaged(mount, tmp_path, src):
    archive = make(tmp_path / "p.7z", src, "-m0=PPMd:o=6:mem=16m", "-ms=off")
    data = bytearray(archive.read_bytes())
    data[32 + 100_000] ^= 0x20  # inside the packed streams (which start at 32)
    archive.write_bytes(bytes(data))
    failed = []
    with mount(archive, allow_errors=True) as m:
        for rel in ("text.txt", "small.txt", "sub/random.bin", "sub/large.txt", "one"):
            path = os.path.join(m.path, rel)
            e = read_errno(path)
            if e is None:
                with open(path, "rb") as f:
                    assert f.read() == (src / rel).read_bytes(), rel  # never wrong bytes
            else:
                assert e == errno.EIO, (rel, e)
                failed.append(rel)
        assert "PPMd" in m.log(), m.log()
    assert failed, "a flipped byte in the packed data went unnoticed"


def test_zeroed(mount, tmp_path, src):
    """200 bytes of a solid folder's packed data zeroed (the header, after the data, intact):
    the files from there on read EIO, those before read right."""
    archive = make(tmp_path / "p.7z", src, "-m0=PPMd:o=6:mem=16m", "-ms=on")
    ref = extract(archive, tmp_path / "ref")
    data = bytearray(archive.read_bytes())
    data[32 + 60_000:32 + 60_200] = bytes(200)  # a run of zeros in the middle of the stream
    archive.write_bytes(bytes(data))
    with mount(archive, allow_errors=True) as m:
        bad = 0
        for rel in ("text.txt", "sub/large.txt", "sub/random.bin"):
            path = os.path.join(m.path, rel)
            e = read_errno(path)
            if e is None:
                with open(path, "rb") as f:
                    assert f.read() == (ref / rel).read_bytes(), rel
            else:
                assert e == errno.EIO, (rel, e)
                bad += 1
        assert bad, "zeroed packed data went unnoticed"


# ---- zip method 98: PPMd var.I rev. 1 ----------------------------------------------------------

def zip_methods(archive):
    with zipfile.ZipFile(archive) as z:
        return {i.filename: i.compress_type for i in z.infolist() if i.file_size}


def unzip_can_ppmd(archive, dest):
    """Extracts with unzip into dest if this unzip decodes PPMd; False if it cannot."""
    if shutil.which("unzip") is None:
        return False
    r = subprocess.run(["unzip", "-q", "-o", "-d", str(dest), str(archive)],
                       capture_output=True, env=ENV7)
    return r.returncode == 0 and b"PK compat" not in r.stdout + r.stderr


@pytest.mark.parametrize("switches", [("-mx=5", "-mo=6", "-mmem=16m"),
                                      ("-mx=5", "-mo=2", "-mmem=1m"),
                                      ("-mx=9", "-mo=16", "-mmem=1m"),
                                      ("-mx=7", "-mo=8", "-mmem=2m")])
def test_zip(mount, tmp_path, src, switches):
    archive = make(tmp_path / "p.zip", src, "-tzip", "-mm=PPMd", *switches)
    ms = zip_methods(archive)
    assert all(ms[n] == 98 for n in ("text.txt", "small.txt", "sub/large.txt")), ms
    ref = extract(archive, tmp_path / "ref")
    with mount(archive) as m:
        check_tree(m, ref)
        if unzip_can_ppmd(archive, tmp_path / "unzip"):
            compare_trees(m.path, tmp_path / "unzip", check_root=False, mtimes=False,
                          dir_mtimes=False, owners=False, xattrs=False)


def test_zip_damaged(mount, tmp_path, src):
    """A flipped byte in text.txt's data: that entry reads EIO, the others their bytes."""
    archive = make(tmp_path / "p.zip", src, "-tzip", "-mm=PPMd", "-mx=5", "-mo=6")
    with zipfile.ZipFile(archive) as z:
        i = z.getinfo("text.txt")
    data = bytearray(archive.read_bytes())
    n, e = int.from_bytes(data[i.header_offset + 26:i.header_offset + 28], "little"), \
        int.from_bytes(data[i.header_offset + 28:i.header_offset + 30], "little")
    data[i.header_offset + 30 + n + e + i.compress_size // 2] ^= 0x10
    archive.write_bytes(bytes(data))
    with mount(archive, allow_errors=True) as m:
        assert read_errno(os.path.join(m.path, "text.txt")) == errno.EIO
        for rel in ("small.txt", "sub/large.txt", "sub/random.bin", "one"):
            with open(os.path.join(m.path, rel), "rb") as f:
                assert f.read() == (src / rel).read_bytes(), rel
        assert "ppmd" in m.log().lower(), m.log()


@pytest.mark.parametrize("scheme", ["ZipCrypto", "AES256"])
def test_zip_encrypted(mount, tmp_path, src, scheme):
    """ZipCrypto and WinZip AES (method 99, the real method 98 in its extra field)."""
    archive = make(tmp_path / "e.zip", src, "-tzip", "-mm=PPMd", "-mo=8", f"-mem={scheme}",
                   "-psecret")
    ref = tmp_path / "ref"
    run("7zz", "x", "-y", "-bd", "-bsp0", "-psecret", f"-o{ref}", archive, env=ENV7)
    with mount("--password", "secret", archive) as m:
        check_tree(m, ref)
