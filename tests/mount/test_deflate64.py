"""Deflate64 (zip method 9, 7z coder 040109: codecs/inflate64.c), in archives made by the real
7-Zip (7zz a -tzip -mm=Deflate64, 7zz a -m0=Deflate64, solid and not), mounted and compared
with what `7zz x` extracts: every path, type, size and byte (conftest.compare_trees; modes,
owners and times are test_zip's and test_7z's business, the same code for every method).

Also WinZip AES (7zz -mem=AES256) over Deflate64.

The tree: a text file over 200 KB whose paragraphs come back 60 KB later (matches from beyond
deflate's 32 KiB, distance codes 30 and 31), a 1.5 MB one read at random offsets, random bytes
(stored blocks), a small and an empty file, a folder.  (7-Zip's encoder writes no match over
257 bytes; the unit test test_deflate64.c covers length code 285's 16 extra bits.)

Damage: a flipped byte in a zip entry's compressed data reads EIO (the decoder or the entry's
CRC-32 catches it); one in a 7z's packed data makes a file read EIO and none read wrong bytes.
"""
import errno
import os
import random
import shutil
import zipfile

import pytest

from conftest import random_bytes, read_errno, run
from sevenzip_cli import ENV7, check_tree, extract, make

pytestmark = pytest.mark.skipif(shutil.which("7zz") is None,
                                reason="7zz (Debian package 7zip) is needed")


def far_repeats(n, seed):
    """n bytes of words in which every 40 KB paragraph comes back about 60 KB later."""
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefghijklmnop") for _ in range(rng.randint(2, 9)))
             for _ in range(3000)]
    para = b" ".join(rng.choice(words) for _ in range(8000))[:40000]
    out = bytearray()
    while len(out) < n:
        out += para + b"\n" + b" ".join(rng.choice(words) for _ in range(3300)) + b"\n"
        para = para[20000:] + b" ".join(rng.choice(words) for _ in range(4000))[:20000]
    return bytes(out[:n])


def make_src(root):
    os.makedirs(root / "sub")
    (root / "far.txt").write_bytes(far_repeats(300_000, 1))
    (root / "sub" / "large.txt").write_bytes(far_repeats(1_500_000, 2))
    (root / "sub" / "random.bin").write_bytes(random_bytes(150_000, 3))
    (root / "small.txt").write_bytes(b"hello deflate64\n" * 10)
    (root / "empty").write_bytes(b"")
    return root


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return make_src(tmp_path_factory.mktemp("d64") / "src")


def test_zip(mount, tmp_path, src):
    archive = make(tmp_path / "d64.zip", src, "-tzip", "-mm=Deflate64")
    with zipfile.ZipFile(archive) as z:
        methods = {i.filename: i.compress_type for i in z.infolist() if i.file_size}
    assert all(methods[n] == 9 for n in ("far.txt", "small.txt", "sub/large.txt")), methods
    ref = extract(archive, tmp_path / "ref")
    with mount(archive) as m:
        check_tree(m, ref, reads=40)


def test_zip_aes(mount, tmp_path, src):
    """WinZip AES (method 99) over Deflate64: the real method comes from the 0x9901 field."""
    archive = make(tmp_path / "aes.zip", src, "-tzip", "-mm=Deflate64", "-mem=AES256",
                   "-psecret")
    ref = tmp_path / "ref"
    run("7zz", "x", "-y", "-bd", "-bsp0", "-psecret", f"-o{ref}", archive, env=ENV7)
    with mount("--password", "secret", archive) as m:
        check_tree(m, ref, reads=40)


@pytest.mark.parametrize("solid", ["on", "off"])
def test_7z(mount, tmp_path, src, solid):
    archive = make(tmp_path / "d64.7z", src, "-m0=Deflate64", f"-ms={solid}")
    listing = run("7zz", "l", "-slt", archive, env=ENV7).stdout.decode()
    assert "Method = Deflate64" in listing, listing
    ref = extract(archive, tmp_path / "ref")
    with mount(archive) as m:
        check_tree(m, ref, reads=40)


def test_zip_damaged(mount, tmp_path, src):
    archive = make(tmp_path / "d64.zip", src, "-tzip", "-mm=Deflate64")
    with zipfile.ZipFile(archive) as z:
        info = z.getinfo("far.txt")
    data = bytearray(archive.read_bytes())
    name_len, extra_len = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28],
                                         "little"), \
        int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    data[start + info.compress_size // 2] ^= 0x20
    archive.write_bytes(bytes(data))
    with mount(archive, allow_errors=True) as m:
        assert read_errno(os.path.join(m.path, "far.txt")) == errno.EIO
        for rel in ("small.txt", "sub/random.bin", "sub/large.txt"):  # the rest reads
            with open(os.path.join(m.path, rel), "rb") as f:
                assert f.read() == (src / rel).read_bytes(), rel
        # the EIO comes with its reason: the decoder's, the CRC's, or the stream ending early
        assert "deflate64:" in m.log(), m.log()


def test_7z_damaged(mount, tmp_path, src):
    archive = make(tmp_path / "d64.7z", src, "-m0=Deflate64", "-ms=off")
    data = bytearray(archive.read_bytes())
    data[32 + 150_000] ^= 0x20  # inside the packed streams (which start at 32)
    archive.write_bytes(bytes(data))
    failed = []
    with mount(archive, allow_errors=True) as m:
        for rel in ("far.txt", "small.txt", "sub/random.bin", "sub/large.txt"):
            path = os.path.join(m.path, rel)
            e = read_errno(path)
            if e is None:
                with open(path, "rb") as f:
                    assert f.read() == (src / rel).read_bytes(), rel  # never wrong bytes
            else:
                assert e == errno.EIO, (rel, e)
                failed.append(rel)
    assert failed, "a flipped byte in the packed data went unnoticed"
