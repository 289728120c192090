"""Split archives mounted whole from their first part (common/parts.h), made by the real tools
with incompressible data, so that there are several parts, and compared byte for byte with
what the tool extracts from the same parts:

- a .tar.gz cut by `split -b 1000000 --numeric-suffixes=1 -a 3` (NAME.001, ...): `tar -x` of
  the parts put back together;
- 7-Zip volumes (`7zz a -v1m`: NAME.7z.001, ...), and of a zip (`7zz a -tzip -v1m`:
  NAME.zip.001, ..., one disk cut in parts: its offsets are the whole file's): `7zz x`;
- a split zip (`zip -s 1m`: NAME.z01, ..., NAME.zip), given as NAME.zip and as NAME.z01:
  `7zz x` of the split zip, and the tree it was made of.  Not `unzip` after `zip -s 0 --out`:
  Debian 12's zip 3.0 leaves out of its output the bytes an entry has in the last part
  (NAME.zip), so that unzip refuses it ("overlapped components"); the test says so if that
  changes;
- the three side by side in a union, and found in a folder with -r (NAME.001 and NAME.zip
  shown as folders, the other parts as files);
- a part missing in the middle and a part cut short: the mount is refused with a message
  naming the part; a split zip without its NAME.zip, or its NAME.zip alone: refused;
- a part changed after the first mount: the second mount rebuilds the index and shows the
  new bytes;
- tarseek-convert of a first part: the whole archive rewritten (`tar -x` of its output).
"""
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, random_bytes, run, run_tarseek, text_data

BIG = 3_000_000  # three parts of 1 MB (1 MiB for 7zz and zip), incompressible


def make_tree(root):
    """A small tree: a large incompressible file, text, a sub-folder, an empty file."""
    os.makedirs(root / "sub")
    (root / "big.bin").write_bytes(random_bytes(BIG, seed=37))
    (root / "seq.txt").write_bytes(text_data(200_000, seed=4))
    (root / "sub" / "rand.bin").write_bytes(random_bytes(300_000, seed=5))
    (root / "sub" / "empty").write_bytes(b"")
    return root


def files_of(top):
    """{relative path: bytes} of every regular file, and the set of folders, below top."""
    files, dirs = {}, set()
    for dirpath, dirnames, filenames in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        for d in dirnames:
            dirs.add(os.path.normpath(os.path.join(rel, d)))
        for f in filenames:
            with open(os.path.join(dirpath, f), "rb") as fh:
                files[os.path.normpath(os.path.join(rel, f))] = fh.read()
    return files, dirs


def same_tree(mounted, expected):
    got_files, got_dirs = files_of(mounted)
    want_files, want_dirs = files_of(expected)
    assert sorted(got_files) == sorted(want_files)
    assert got_dirs == want_dirs
    for p, data in want_files.items():
        assert got_files[p] == data, p


def parts(folder, prefix):
    return sorted(p for p in os.listdir(folder) if p.startswith(prefix))


@pytest.fixture
def src(tmp_path):
    return make_tree(tmp_path / "src")


def split_tgz(tmp_path, src):
    """whole.tar.gz cut into whole.tar.gz.001 ...: (first part, folder of the tool's
    extraction)."""
    d = tmp_path / "tgz"
    d.mkdir()
    run("tar", "-czf", d / "whole.tar.gz", "-C", src, ".")
    run("split", "-b", "1000000", "--numeric-suffixes=1", "-a", "3", d / "whole.tar.gz",
        d / "whole.tar.gz.")
    os.unlink(d / "whole.tar.gz")
    names = parts(d, "whole.tar.gz.")
    assert len(names) >= 3, names
    joined = tmp_path / "joined.tar.gz"
    with open(joined, "wb") as out:
        for n in names:
            out.write((d / n).read_bytes())
    ref = tmp_path / "ref-tgz"
    ref.mkdir()
    run("tar", "-xzf", joined, "-C", ref)
    return d / "whole.tar.gz.001", ref


def split_7z(tmp_path, src):
    d = tmp_path / "7z"
    d.mkdir()
    run("7zz", "a", "-bd", "-v1m", d / "vol.7z", ".", cwd=src)
    assert len(parts(d, "vol.7z.")) >= 3
    ref = tmp_path / "ref-7z"
    run("7zz", "x", "-bd", f"-o{ref}", d / "vol.7z.001")
    return d / "vol.7z.001", ref


def split_zip(tmp_path, src):
    d = tmp_path / "zip"
    d.mkdir()
    run("zip", "-q", "-r", "-s", "1m", d / "sp.zip", ".", cwd=src)
    assert len(parts(d, "sp.z")) >= 3, parts(d, "sp.z")
    ref = tmp_path / "ref-zip"
    run("7zz", "x", "-bd", f"-o{ref}", d / "sp.zip")
    return d / "sp.zip", ref


need_7zz = pytest.mark.skipif(shutil.which("7zz") is None, reason="7zz is needed")
need_zip = pytest.mark.skipif(shutil.which("zip") is None or shutil.which("7zz") is None,
                              reason="zip and 7zz are needed")


def test_split_tar_gz(mount, tmp_path, src):
    first, ref = split_tgz(tmp_path, src)
    with mount(first) as m:
        same_tree(m.path, ref)
    assert "indexed whole.tar.gz.001" in m.log(), m.log()
    with mount(first) as m2:  # the index is valid for the parts as they are
        same_tree(m2.path, ref)
    assert "indexed" not in m2.log() and "rebuilding" not in m2.log(), m2.log()


@need_7zz
def test_7z_volumes(mount, tmp_path, src):
    first, ref = split_7z(tmp_path, src)
    with mount(first) as m:
        same_tree(m.path, ref)


@need_7zz
def test_7z_volumes_of_a_zip(mount, tmp_path, src):
    d = tmp_path / "vz"
    d.mkdir()
    run("7zz", "a", "-bd", "-tzip", "-v1m", d / "vz.zip", ".", cwd=src)
    assert len(parts(d, "vz.zip.")) >= 3
    ref = tmp_path / "ref-vz"
    run("7zz", "x", "-bd", f"-o{ref}", d / "vz.zip.001")
    with mount(d / "vz.zip.001") as m:
        same_tree(m.path, ref)


@need_zip
def test_zip_split(mount, tmp_path, src):
    last, ref = split_zip(tmp_path, src)
    same_tree(ref, src)
    with mount(last) as m:  # the name the user knows: NAME.zip
        same_tree(m.path, ref)
    with mount(last.parent / "sp.z01") as m:  # or the first part
        same_tree(m.path, ref)


@need_zip
def test_zip_s0_still_broken(tmp_path, src):
    """Why unzip is not the reference: `zip -s 0 --out` of the split zip, tested by unzip.
    If this fails, zip was fixed: compare with unzip's extraction of its output instead."""
    last, _ = split_zip(tmp_path, src)
    whole = tmp_path / "whole.zip"
    run("zip", "-q", "-s", "0", last, "--out", whole, stdin=subprocess.DEVNULL)
    if shutil.which("unzip") is None:
        pytest.skip("unzip is needed")
    r = run("unzip", "-t", whole, check=False, stdin=subprocess.DEVNULL)
    assert r.returncode != 0, "zip -s 0 works now: use unzip for the reference"


@need_zip
def test_zip_split_part_alone(tmp_path, src):
    last, _ = split_zip(tmp_path, src)
    for p in parts(last.parent, "sp.z0"):
        os.rename(last.parent / p, tmp_path / p)
    (tmp_path / "mnt").mkdir()
    r = run_tarseek("-f", last, tmp_path / "mnt")
    assert r.returncode != 0
    assert "sp.zip" in r.stderr and "not beside it" in r.stderr, r.stderr


@need_7zz
@need_zip
def test_union_and_recursion(mount, tmp_path, src):
    tgz, ref_tgz = split_tgz(tmp_path, src)
    vol, ref_7z = split_7z(tmp_path, src)
    sp, ref_zip = split_zip(tmp_path, src)
    # side by side in a union: the same tree three times over
    with mount(tgz, vol, sp) as m:
        same_tree(m.path, ref_zip)
    # in a folder with -r: the first parts (a split zip's NAME.zip) are folders
    folder = tmp_path / "folder"
    folder.mkdir()
    for d in (tgz.parent, vol.parent, sp.parent):
        for p in os.listdir(d):
            os.rename(d / p, folder / p)
    other = tmp_path / "other.tar"
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "note.txt").write_bytes(b"another source\n")
    run("tar", "-cf", other, "-C", tmp_path / "o", ".")
    with mount("-r", folder, other) as m:
        top = sorted(os.listdir(m.path))
        assert "note.txt" in top
        for name, ref in (("whole.tar.gz.001", ref_tgz), ("vol.7z.001", ref_7z),
                          ("sp.zip", ref_zip)):
            assert os.path.isdir(os.path.join(m.path, name)), (name, top)
            same_tree(os.path.join(m.path, name), ref)
        for name in ("whole.tar.gz.002", "vol.7z.002", "sp.z01", "sp.z02"):
            p = os.path.join(m.path, name)
            assert os.path.isfile(p), name
            with open(p, "rb") as f, open(folder / name, "rb") as g:
                assert f.read() == g.read(), name


def test_missing_part(tmp_path, src):
    first, _ = split_tgz(tmp_path, src)
    os.unlink(first.parent / "whole.tar.gz.002")
    (tmp_path / "mnt").mkdir()
    r = run_tarseek("-f", first, tmp_path / "mnt")
    assert r.returncode != 0
    assert "whole.tar.gz.002" in r.stderr and "missing" in r.stderr, r.stderr


@need_zip
def test_zip_last_part_missing(tmp_path, src):
    last, _ = split_zip(tmp_path, src)
    os.unlink(last)
    (tmp_path / "mnt").mkdir()
    r = run_tarseek("-f", last.parent / "sp.z01", tmp_path / "mnt")
    assert r.returncode != 0
    assert "sp.zip" in r.stderr and "missing" in r.stderr, r.stderr


def test_short_part(tmp_path, src):
    first, _ = split_tgz(tmp_path, src)
    second = first.parent / "whole.tar.gz.002"
    os.truncate(second, 999_000)
    (tmp_path / "mnt").mkdir()
    r = run_tarseek("-f", first, tmp_path / "mnt")
    assert r.returncode != 0
    assert "whole.tar.gz.002" in r.stderr and "cut short" in r.stderr, r.stderr


def test_changed_part(mount, tmp_path, src):
    """A middle part rewritten (same size, other bytes, a later mtime): the second mount
    notices, rebuilds, and shows the new bytes."""
    d = tmp_path / "tar"
    d.mkdir()
    run("tar", "-cf", d / "t.tar", "-C", src, ".")
    run("split", "-b", "1000000", "--numeric-suffixes=1", "-a", "3", d / "t.tar", d / "t.tar.")
    os.unlink(d / "t.tar")
    first = d / "t.tar.001"
    with mount(first) as m:
        assert open(os.path.join(m.path, "big.bin"), "rb").read() == \
            (src / "big.bin").read_bytes()
    # the second part lies inside big.bin's data: new bytes there
    second = d / "t.tar.002"
    data = bytearray(second.read_bytes())
    data[1000:1100] = b"\x5a" * 100
    second.write_bytes(bytes(data))
    st = os.stat(second)
    os.utime(second, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    joined = tmp_path / "joined.tar"
    with open(joined, "wb") as out:
        for n in parts(d, "t.tar."):
            if not n.endswith(".sqlite"):
                out.write((d / n).read_bytes())
    ref = tmp_path / "ref"
    ref.mkdir()
    run("tar", "-xf", joined, "-C", ref)
    assert (ref / "big.bin").read_bytes() != (src / "big.bin").read_bytes()
    with mount(first) as m2:
        same_tree(m2.path, ref)
    assert "rebuilding index" in m2.log() and "modified" in m2.log(), m2.log()


def test_convert(tmp_path, src):
    first, ref = split_tgz(tmp_path, src)
    out = tmp_path / "out.tar.zst"
    run(os.path.join(BUILD, "tools", "tarseek-convert"), first, out)
    got = tmp_path / "got"
    got.mkdir()
    run("tar", "-xf", out, "-C", got)
    same_tree(got, ref)
