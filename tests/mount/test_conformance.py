"""Conformance: a member that GNU tar or bsdtar extracts is shown, with the metadata and bytes
GNU tar extracts; where the two disagree GNU tar is followed, unless GNU tar gives up on the
member (then bsdtar's extraction is the reference).

The archives are written block by block (tarcraft.py) the way old or odd tar
implementations wrote them: GNU tar and bsdtar never write them on purpose.  Each case names
the tool whose extraction the mount must equal, and why.  The cases, by kind:

- a size in a header whose type has no data (directories, hard links, symlinks, devices,
  FIFOs), as old tars wrote them, and a PAX hard link that does carry data;
- PAX headers of several MB;
- PAX numbers with trailing garbage, malformed records;
- numeric header fields that overflow or carry odd padding;
- GNU sparse members (old 'S', PAX 0.1 and 1.0) whose map is unusual or does not add up;
- volume labels ('V') with odd size fields, a checksum field of NULs;
- the end of the archive: the first zero block ends it, unless -i (--ignore-zeros);
  tar -A / tar -r archives keep every member; an empty compressed tar.
"""
import os
import stat
import subprocess

import pytest

from conftest import compare_trees, gnu_extract, require_tool, run, snapshot
from tarcraft import base256, end, header, octal, pad, pax, write

T0 = 1_600_000_000  # tarcraft's default mtime


def bsd_extract(archive, dest):
    """Extracts archive with bsdtar as root would restore it (modes, numeric owners)."""
    os.makedirs(dest, exist_ok=True)
    return subprocess.run(["bsdtar", "-x", "-p", "--numeric-owner", "-f", archive, "-C", dest],
                          capture_output=True)


def reference(tool, archive, dest):
    """The tree `tool` extracts from archive at dest.  A non-zero exit status is allowed: in
    several cases GNU tar complains (and exits 2) but still extracts the member."""
    if tool == "gnu":
        gnu_extract(archive, dest, check=False)
    else:
        require_tool("bsdtar")
        bsd_extract(archive, dest)
    return dest


def implicit_dirs(mnt):
    """Directories the mount made up (mode 0555): tar made them 0755 at extraction."""
    return [p for p, n in snapshot(mnt, xattrs=False).items()
            if n.kind == "dir" and n.mode == 0o555 and p != b"."]


def check_case(mount, tmp_path, name, blocks, tool, *mount_args, **compare_kw):
    archive = write(str(tmp_path / (name + ".tar")), blocks)
    ref = reference(tool, archive, str(tmp_path / (name + "." + tool)))
    with mount(archive, *mount_args, allow_errors=True) as m:
        compare_trees(m.path, ref, check_root=False, xattrs=False,
                      implicit=implicit_dirs(m.path), **compare_kw)
        return m.log()


def stat_of(mnt, path):
    return os.lstat(os.path.join(str(mnt), path))


# ---- a size where there is no data ------------------------------------------------------

NO_DATA = {
    # GNU tar's extraction reads no data after these headers; bsdtar agrees
    "dir-with-size": [header(b"d/", type=b"5", size=1536), header(b"d/f", data=b"hello\n"),
                      header(b"g", data=b"x"), end()],
    "dir-by-slash-with-size": [header(b"d/", type=b"0", size=1536),
                               header(b"d/f", data=b"hello\n"), end()],
    "hardlink-with-size": [header(b"a", data=b"A" * 1000),
                           header(b"b", type=b"1", link=b"a", size=1000),
                           header(b"c", data=b"C\n"), end()],
    "hardlink-with-pax-size": [header(b"a", data=b"A" * 1000), pax([(b"size", b"1000")]),
                               header(b"b", type=b"1", link=b"a"),
                               header(b"c", data=b"C\n"), end()],
    "symlink-with-size": [header(b"s", type=b"2", link=b"a", size=1000),
                          header(b"c", data=b"C\n"), end()],
    "fifo-with-size": [header(b"p", type=b"6", size=1000), header(b"c", data=b"C\n"), end()],
    "chardev-with-size": [header(b"n", type=b"3", size=600, devmajor=1, devminor=3),
                          header(b"c", data=b"C\n"), end()],
    # pax -o linkdata: a hard link that carries the file's data.  GNU tar reads the data as
    # a bad header, skips it and extracts the rest (exit status 2); the link shows the
    # target's data, as GNU tar extracts it, and nothing is lost
    "hardlink-with-data": [header(b"a", data=b"A" * 1000), pax([(b"size", b"1000")]),
                           header(b"b", type=b"1", link=b"a", data=b"B" * 1000),
                           header(b"c", data=b"C\n"), end()],
}


@pytest.mark.parametrize("case", sorted(NO_DATA))
def test_no_data_headers(mount, tmp_path, case):
    log = check_case(mount, tmp_path, case, NO_DATA[case], "gnu")
    assert "truncated" not in log and "bad header" not in log, log


def test_hardlink_size_real_old_tar(mount, tmp_path):
    """The layout of an old tar's archive (the linked file's size in the hard-link header),
    followed by more members: all of them show, the link shares the file's inode."""
    blocks = [header(b"x/", type=b"5", mode=0o755),
              header(b"x/READMf", data=b"readme\n" * 50),
              header(b"x/README", type=b"1", link=b"x/READMf", size=350),
              header(b"x/after", data=b"after\n"), end()]
    check_case(mount, tmp_path, "oldlink", blocks, "gnu")


# ---- big PAX headers ----------------------------------------------------------------------

def test_pax_header_of_8_mb(mount, tmp_path):
    """An 8 MB attribute (GNU tar reads any size; bsdtar stops at 1 MiB): the member shows,
    and the records after the big one apply."""
    blocks = [pax([(b"unknown", b"u" * 8_000_000)]), header(b"f", data=b"x"),
              pax([(b"comment", b"c" * 3_000_000), (b"path", b"named"),
                   (b"mtime", b"1234.5")]), header(b"g", data=b"y"), end()]
    check_case(mount, tmp_path, "bigpax", blocks, "gnu")


def test_pax_header_over_the_limit(mount, tmp_path):
    """Over tarseek's limit of 64 MiB: the member is left out with a message that names the
    limit, the next one shows."""
    blocks = [pax([(b"comment", b"c" * (65 << 20))]), header(b"f", data=b"x"),
              header(b"g", data=b"y"), end()]
    archive = write(str(tmp_path / "huge.tar"), blocks)
    with mount(archive, allow_errors=True) as m:
        assert os.listdir(m.path) == ["g"]
        assert "limit of 64 MiB" in m.log()


# ---- PAX numbers and records ----------------------------------------------------------------

PAX_VALUES = {
    # GNU tar and bsdtar take the leading number
    "mtime-trailing-garbage": [pax([(b"mtime", b"1748089464.951928467a")]),
                               header(b"f", data=b"x"), end()],
    "mtime-trailing-x": [pax([(b"mtime", b"17480x")]), header(b"f", data=b"x"), end()],
    "mtime-long-fraction": [pax([(b"mtime", b"1.1234567899999")]), header(b"f", data=b"x"),
                            end()],
    "mtime-negative": [pax([(b"mtime", b"-1.25")]), header(b"f", data=b"x"), end()],
    # GNU tar ignores the record with an error (exit 2) and extracts the member with the
    # header's value; so does bsdtar
    "uid-garbage": [pax([(b"uid", b"1234a")]), header(b"f", data=b"x", uid=5), end()],
    "size-garbage": [pax([(b"size", b"1a")]), header(b"f", data=b"x"),
                     header(b"g", data=b"y"), end()],
    "mtime-out-of-range": [pax([(b"mtime", b"99999999999999999999999")]),
                           header(b"f", data=b"x"), end()],
    # a malformed record: the header's records stop there, the member is extracted
    "record-without-newline": [pax(raw=b"10 path=a\n9 uid=\0"), header(b"f", data=b"x"),
                               end()],
    "record-too-long": [pax(raw=b"20 path=a\n"), header(b"f", data=b"x"), end()],
}


@pytest.mark.parametrize("case", sorted(PAX_VALUES))
def test_pax_values(mount, tmp_path, case):
    check_case(mount, tmp_path, case, PAX_VALUES[case], "gnu")


def test_pax_mtime_garbage_value(mount, tmp_path):
    archive = write(str(tmp_path / "t.tar"), PAX_VALUES["mtime-trailing-garbage"])
    with mount(archive) as m:
        assert stat_of(m, "f").st_mtime_ns == 1748089464_951928467


# ---- numeric header fields ------------------------------------------------------------------

FIELDS = {
    # read as GNU tar reads them: one leading NUL skipped, digits up to a NUL or blank,
    # whatever follows that ignored
    "size-after-nuls": [header(b"f", size=b"\0" * 7 + b"0016\0"), header(b"g", data=b"y"),
                        end()],
    "size-one-nul": [header(b"f", size=b"\x0000000001\0", data=b"x"), end()],
    "size-leading-spaces": [header(b"f", size=b"         1 \0", data=b"x"), end()],
    "size-no-terminator": [header(b"f", size=b"000000000001", data=b"x"), end()],
    "size-junk-after-nul": [header(b"f", size=b"0000001\0abcd", data=b"x"), end()],
    "size-base256": [header(b"f", size=base256(1, 12), data=b"x"), end()],
    "mtime-base256-negative": [header(b"f", data=b"x", mtime=base256(-100, 12)), end()],
    # out of range: GNU tar extracts the member with mtime -1 (and an error)
    "mtime-base256-overflow": [header(b"f", data=b"x", mtime=b"\x80" + b"\xff" * 11), end()],
    "mtime-base256-underflow": [header(b"f", data=b"x", mtime=b"\xff" + b"\0" * 11), end()],
    "mtime-junk": [header(b"f", data=b"x", mtime=b"123abc\0"), end()],
    # a uid that does not fit: GNU tar leaves the owner alone (root's, extracting as root)
    "uid-base256-overflow": [header(b"f", data=b"x", uid=b"\x80" + b"\xff" * 7), end()],
    "uid-junk": [header(b"f", data=b"x", uid=b"12x\0"), end()],
}


@pytest.mark.parametrize("case", sorted(FIELDS))
def test_numeric_fields(mount, tmp_path, case):
    check_case(mount, tmp_path, case, FIELDS[case], "gnu")


def test_mtime_beyond_what_ext4_stores(mount, tmp_path):
    """A 12-digit octal mtime (year 4147): GNU tar lists it, but a file system clamps it on
    extraction, so the mount is checked against the number itself."""
    archive = write(str(tmp_path / "t.tar"),
                    [header(b"f", data=b"x", mtime=b"777777777777"), end()])
    with mount(archive) as m:
        assert stat_of(m, "f").st_mtime == 0o777777777777


# ---- sparse members -------------------------------------------------------------------------

def sparse10(name, numbers, data, real, extra=b"", comments=b""):
    """A PAX sparse 1.0 member: the map (count, then offset and length of each extent) at
    the start of its data."""
    m = comments + b"".join(b"%d\n" % n for n in numbers)
    return [pax([(b"GNU.sparse.major", b"1"), (b"GNU.sparse.minor", b"0"),
                 (b"GNU.sparse.name", name), (b"GNU.sparse.realsize", b"%d" % real)]),
            header(b"GNUSparseFile.0/" + name, data=pad(m) + data + extra, magic="ustar")]


def old_sparse(name, extents, real, data):
    """An old GNU sparse member ('S'): up to four extents in the header."""
    fields = {483: octal(real, 12)}
    for i, (off, length) in enumerate(extents):
        fields[386 + 24 * i] = octal(off, 12)
        fields[386 + 24 * i + 12] = octal(length, 12)
    return header(name, type=b"S", size=len(data), fields=fields) + pad(data)


def sparse01(extents, real, data, numblocks=None):
    recs = [(b"GNU.sparse.size", b"%d" % real),
            (b"GNU.sparse.numblocks", b"%d" % (numblocks or len(extents))),
            (b"GNU.sparse.map", b",".join(b"%d,%d" % e for e in extents))]
    return [pax(recs), header(b"s", data=data, magic="ustar")]


# The maps below lack the zero-length extent GNU tar writes last, so GNU tar 1.34 extracts
# them wrong (it stops short of the real size, or writes bytes of the next header into the
# file); bsdtar extracts each one, and is the reference.
SPARSE = {
    "1.0": sparse10(b"s", [2, 0, 4, 8192, 4], b"AAAABBBB", 10000),
    "1.0-more-data-than-map": sparse10(b"s", [2, 0, 4, 8192, 4], b"AAAABBBB", 10000,
                                       extra=b"ZZZZ"),
    "1.0-less-data-than-map": sparse10(b"s", [2, 0, 4, 8192, 6], b"AAAABBBB", 10000),
    "1.0-comments": sparse10(b"s", [2, 0, 4, 8192, 4], b"AAAABBBB", 10000,
                             comments=b"#!gnu-sparse-format\n#format:1.0\n"),
    "1.0-out-of-order": sparse10(b"s", [2, 8192, 4, 0, 4], b"AAAABBBB", 10000),
    "1.0-overlapping": sparse10(b"s", [2, 0, 6, 4, 4], b"AAAAAABBBB", 10000),
    "1.0-past-real-size": sparse10(b"s", [2, 0, 4, 8192, 4], b"AAAABBBB", 5000),
    "old": [old_sparse(b"s", [(0, 4), (8192, 4)], 10000, b"AAAABBBB")],
    "old-less-data": [old_sparse(b"s", [(0, 4), (8192, 6)], 10000, b"AAAABBBB")],
    "old-out-of-order": [old_sparse(b"s", [(8192, 4), (0, 4)], 10000, b"AAAABBBB")],
    "old-past-real-size": [old_sparse(b"s", [(0, 4), (8192, 4)], 5000, b"AAAABBBB")],
    "0.1-numblocks-wrong": sparse01([(0, 4), (8192, 4)], 10000, b"AAAABBBB", numblocks=3),
    "0.1-less-data": sparse01([(0, 4), (8192, 6)], 10000, b"AAAABBBB"),
}


@pytest.mark.parametrize("case", sorted(SPARSE))
def test_sparse_maps(mount, tmp_path, case):
    blocks = SPARSE[case] + [header(b"g", data=b"y"), end()]
    archive = write(str(tmp_path / "s.tar"), blocks)
    ref = reference("bsd", archive, str(tmp_path / "ref"))
    if not os.path.exists(os.path.join(ref, "g")):
        # bsdtar loses the member after one with more data than its map needs (it reads
        # the rest as a header); GNU tar finds it, and is followed for it
        run("tar", "-x", "-p", "--numeric-owner", "-f", archive, "-C", ref, "g")
    with mount(archive, allow_errors=True) as m:
        compare_trees(m.path, ref, check_root=False, xattrs=False,
                      implicit=implicit_dirs(m.path))


def test_sparse_overlap_later_wins(mount, tmp_path):
    """Overlapping extents: each byte comes from the extent written last (bsdtar)."""
    archive = write(str(tmp_path / "t.tar"), SPARSE["1.0-overlapping"] + [end()])
    with mount(archive, allow_errors=True) as m:
        with open(os.path.join(m.path, "s"), "rb") as f:
            data = f.read()
        assert data[:8] == b"AAAABBBB" and data[8:] == bytes(10000 - 8)


@pytest.mark.parametrize("fmt", ["gnu", "posix"])
def test_sparse_made_by_gnu_tar(mount, tmp_path, fmt):
    """Real GNU tar output (with its closing zero-length extent), compared with GNU tar."""
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "s", "wb") as f:
        f.write(b"AAAA")
        f.seek(1 << 20)
        f.write(b"BBBB")
        f.truncate(3 << 20)
    archive = str(tmp_path / "s.tar")
    run("tar", "--format=" + fmt, "-S", "-cf", archive, "-C", src, "s")
    ref = tmp_path / "ref"
    gnu_extract(archive, ref)
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False)


# ---- volume labels, checksums ---------------------------------------------------------------

def signed_sum_zero_label():
    """A 'V' header with a checksum field of NULs and a negative base-256 size whose signed
    byte sum is 0 (what a fuzzer found for libarchive): GNU tar and bsdtar take the
    checksum as valid; bsdtar skips the label whatever its size, GNU tar refuses it."""
    h = bytearray(header(b"", type=b"V", size=base256(-5, 12), magic="v7", chksum=b""))
    total = sum(b - 256 if b >= 128 else b for b in h[:148] + bytes(b" " * 8) + h[156:])
    i = 0
    while total > 0:  # spend the positive sum on bytes of the name field read as -1..-128
        step = min(total, 128)
        h[1 + i] = 256 - step
        total -= step
        i += 1
    return bytes(h)


LABELS = {
    # bsdtar skips the label whatever its size; GNU tar refuses the archive (it cannot
    # read the size): bsdtar is followed
    "negative-size": ([header(b"label", type=b"V", size=base256(-5, 12)),
                       header(b"f", data=b"x"), end()], "bsd"),
    # a size field GNU tar cannot read either; it then goes on to the next header and
    # extracts f
    "junk-size": ([header(b"label", type=b"V", size=b"zz"), header(b"f", data=b"x"), end()],
                  "gnu"),
    # a label with data: GNU tar skips the data (bsdtar takes it for the end)
    "with-data": ([header(b"label", type=b"V", size=512), bytes(512),
                   header(b"f", data=b"x"), end()], "gnu"),
}


@pytest.mark.parametrize("case", sorted(LABELS))
def test_volume_labels(mount, tmp_path, case):
    blocks, tool = LABELS[case]
    check_case(mount, tmp_path, case, blocks, tool)


def test_label_with_nul_checksum(mount, tmp_path):
    """An archive of one such label block: bsdtar reads an empty archive, and so does the
    mount (it used to refuse it as not a tar archive)."""
    archive = write(str(tmp_path / "v.tar"), [signed_sum_zero_label()])
    require_tool("bsdtar")
    r = subprocess.run(["bsdtar", "-tf", archive], capture_output=True)
    assert r.returncode == 0 and r.stdout == b""
    with mount(archive) as m:
        assert os.listdir(m.path) == []


# ---- symlink modes --------------------------------------------------------------------------

def test_symlink_mode(mount, tmp_path):
    """A symlink stored with mode 0755 (macOS writes such) is 0777, as tar extracts it."""
    blocks = [header(b"s", type=b"2", link=b"target", mode=0o755), end()]
    check_case(mount, tmp_path, "sym", blocks, "gnu")


# ---- the end of the archive -----------------------------------------------------------------

def two_archives(tmp_path):
    a = write(str(tmp_path / "a.tar"), [header(b"a", data=b"first\n"), end()])
    b = write(str(tmp_path / "b.tar"), [header(b"b", data=b"second\n"), end()])
    cat = tmp_path / "cat.tar"
    cat.write_bytes(open(a, "rb").read() + bytes(8192) + open(b, "rb").read())
    return str(cat)


def test_concatenated_stops_at_marker(mount, tmp_path):
    """cat a.tar b.tar: tar shows a.tar's members only, and so does the mount, with a notice
    that says how to see the rest."""
    cat = two_archives(tmp_path)
    ref = tmp_path / "ref"
    gnu_extract(cat, ref)
    assert sorted(os.listdir(ref)) == ["a"]
    with mount(cat) as m:
        assert sorted(os.listdir(m.path)) == ["a"]
        assert "--ignore-zeros" in m.log()


@pytest.mark.parametrize("opt", ["-i", "--ignore-zeros"])
def test_concatenated_with_ignore_zeros(mount, tmp_path, opt):
    cat = two_archives(tmp_path)
    ref = tmp_path / "ref"
    gnu_extract(cat, ref, "--ignore-zeros")
    with mount(cat, opt) as m:
        compare_trees(m.path, ref, check_root=False)


def test_ignore_zeros_shapes_the_index(mount, tmp_path):
    """The same index file with and without -i: rebuilt each time, with a message."""
    cat = two_archives(tmp_path)
    idx = str(tmp_path / "cat.idx")
    with mount(cat, "--index-file", idx) as m:
        assert os.listdir(m.path) == ["a"]
    with mount(cat, "-i", "--index-file", idx) as m:
        assert sorted(os.listdir(m.path)) == ["a", "b"]
        assert "built with other options" in m.log()
    with mount(cat, "--index-file", idx) as m:
        assert os.listdir(m.path) == ["a"]


@pytest.mark.parametrize("opt", [(), ("-i",)])
def test_garbage_after_marker(mount, tmp_path, opt):
    archive = write(str(tmp_path / "g.tar"),
                    [header(b"a", data=b"a"), end(), b"garbage!" * 64])
    with mount(archive, *opt) as m:
        assert os.listdir(m.path) == ["a"]
        assert "ignored" in m.log()


def test_lone_zero_block(mount, tmp_path):
    """One zero block between members ends the archive for GNU tar and bsdtar."""
    blocks = [header(b"a", data=b"a"), bytes(512), header(b"b", data=b"b"), end()]
    check_case(mount, tmp_path, "lone", blocks, "gnu")
    archive = str(tmp_path / "lone.tar")
    with mount(archive, "-i") as m:
        assert sorted(os.listdir(m.path)) == ["a", "b"]


@pytest.mark.parametrize("how", ["append", "concatenate"])
def test_tar_append_and_concatenate(mount, tmp_path, how):
    """tar -r and tar -A leave no marker in the middle: every member shows without -i."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("one", "two", "three"):
        (src / name).write_bytes(name.encode() * 100)
    archive = str(tmp_path / "x.tar")
    run("tar", "-cf", archive, "-C", src, "one")
    if how == "append":
        run("tar", "-rf", archive, "-C", src, "two")
        run("tar", "-rf", archive, "-C", src, "three")
    else:
        other = str(tmp_path / "other.tar")
        run("tar", "-cf", other, "-C", src, "two", "three")
        run("tar", "-Af", archive, other)
    ref = tmp_path / "ref"
    gnu_extract(archive, ref)
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False)
        assert sorted(os.listdir(m.path)) == ["one", "three", "two"]


@pytest.mark.parametrize("tool,suffix", [("gzip", ".tar.gz"), ("gzip", ".tgz"),
                                         ("xz", ".tar.xz"), ("bzip2", ".tar.bz2")])
def test_empty_compressed_tar(mount, tmp_path, tool, suffix):
    """gzip < /dev/null > x.tar.gz: an empty archive, as tar -tf lists it."""
    archive = tmp_path / ("x" + suffix)
    archive.write_bytes(subprocess.run([tool, "-c"], input=b"", capture_output=True,
                                       check=True).stdout)
    assert run("tar", "-tf", archive).stdout == b""
    with mount(archive) as m:
        assert os.listdir(m.path) == []


def test_empty_compressed_file_not_named_tar(mount, tmp_path):
    """An empty .gz that does not call itself a tar is still an empty file."""
    archive = tmp_path / "notes.gz"
    archive.write_bytes(subprocess.run(["gzip", "-c"], input=b"", capture_output=True,
                                       check=True).stdout)
    with mount(archive) as m:
        assert os.listdir(m.path) == ["notes"]
        assert stat.S_ISREG(stat_of(m, "notes").st_mode)
        assert stat_of(m, "notes").st_size == 0
