"""tarseek-convert: round trips through every form, checked with the formats' own tools.

Sources are made by GNU tar (a tree with every file type, long names, hard links, xattrs, a
sparse file, many small files and a file spanning several blocks) and compressed by gzip, xz,
zstd and bzip2.  Each conversion is checked by GNU tar (its listing and its extraction equal
the source's), by the compressor's own test pass and decoder (the decoded bytes are the
source's tar, byte for byte), and by a mount that uses the index written beside the output:
no index is built, no decoder runs until a file is read, and the mounted tree equals the
extraction.  The zstd and xz indexes must equal what tarseek-index builds by scanning the
output; zstd frames and xz blocks must start at member boundaries."""
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import time

import pytest

from conftest import (BUILD, compare_trees, gnu_extract, have, make_tree, random_bytes, run,
                      semi_random, snapshot)

CONVERT = os.path.join(BUILD, "tools", "tarseek-convert")
INDEX = os.path.join(BUILD, "tools", "tarseek-index")
BLOCK = 64 << 10  # small blocks, so that a small tree makes many

COMPRESS = {"tar": None, "tar.gz": ["gzip", "-c"], "tar.xz": ["xz", "-c", "-T2"],
            "tar.zst": ["zstd", "-q", "-c"], "tar.bz2": ["bzip2", "-c"],
            "tar.lzo": ["lzop", "-c"], "tar.lz4": ["lz4", "-q", "-c"], "tar.lz": ["lzip", "-c"]}
TEST = {"tar.zst": ["zstd", "-q", "-t"], "tar.xz": ["xz", "-t"], "tar.gz": ["gzip", "-t"],
        "tar.lzo": ["lzop", "-t"]}
DECODE = {"tar.zst": ["zstd", "-q", "-d", "-c"], "tar.xz": ["xz", "-d", "-c"],
          "tar.gz": ["gzip", "-d", "-c"], "tar.lzo": ["lzop", "-d", "-c"], "tar": ["cat"]}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """{form: path} of one tar in every source form, and the tar's bytes."""
    for tool in ("zstd", "xz", "bzip2", "gzip"):
        if not have(tool):
            pytest.skip(f"{tool} is not installed")
    d = tmp_path_factory.mktemp("convert-src")
    root = make_tree(d / "tree", long_names="all", xattrs=True)
    small = os.path.join(root, b"small")
    os.makedirs(small)
    for i in range(300):
        with open(os.path.join(small, b"f%03d" % i), "wb") as f:
            f.write(semi_random(100 + 37 * i, i))
    with open(os.path.join(root, b"big"), "wb") as f:
        f.write(semi_random(700_000, 99) + random_bytes(300_000, 98))
    with open(os.path.join(root, b"sparse"), "wb") as f:
        f.seek(1 << 20)
        f.write(b"data in the middle")
        f.seek(3 << 20)
        f.write(b"end")
    tar = d / "src.tar"
    run("tar", "-c", "-S", "--xattrs", "--xattrs-include=user.*", "-f", tar, "-C", d, "tree")
    out = {"tar": tar}
    for form, argv in COMPRESS.items():
        if argv and have(argv[0]):
            p = d / f"src.{form}"
            with open(tar, "rb") as i, open(p, "wb") as o:
                subprocess.run(argv, stdin=i, stdout=o, check=True)
            out[form] = p
    ref = d / "extracted"
    gnu_extract(tar, ref)
    return {"forms": out, "bytes": tar.read_bytes(), "ref": ref, "dir": d}


def convert(src, out, *opts, check=True):
    # lzo's blocks are always 1 MiB (its checkpoints are groups of that size)
    block = [] if str(out).endswith(".tar.lzo") else ["--block-size", f"{BLOCK >> 10}K"]
    r = subprocess.run([CONVERT, "-q", *block, *map(str, opts), str(src), str(out)],
                       capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, f"tarseek-convert failed:\n{r.stderr}"
    return r


def listing(archive):
    return run("tar", "-tv", "--full-time", "--numeric-owner", "-f", archive).stdout


def decoded(form, path):
    return run(*DECODE[form], path).stdout


def index_rows(index, sql):
    db = sqlite3.connect(index)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def member_starts(index):
    """Where the tar's members start (their first header), in order."""
    starts = [r[0] for r in index_rows(
        index, "SELECT DISTINCT hdr_off FROM entries WHERE id != 1 AND (flags & 4) = 0"
        " ORDER BY hdr_off")]
    return starts


def check_cut_rule(starts, block_starts, usize):
    """Every block starts at a member start or inside a member larger than BLOCK, so no
    member smaller than a block spans two blocks."""
    import bisect
    ends = starts[1:] + [usize]
    for b in block_starts[1:]:
        if b in starts:
            continue
        i = bisect.bisect_right(starts, b) - 1
        assert i >= 0 and ends[i] - starts[i] > BLOCK, \
            f"a block starts at {b}, inside a member of {ends[i] - starts[i]} bytes"
    assert len(block_starts) >= 3, "the tree should need several blocks"


FORMS = [("tar.zst", ()), ("tar.xz", ()), ("tar.gz", ()), ("tar.gz", ("--gzip-members",)),
         ("tar.lzo", ()), ("tar", ())]


@pytest.mark.parametrize("form,opts", FORMS, ids=[f + "".join(o) for f, o in FORMS])
def test_round_trip_from_gzip(source, tmp_path, mount, form, opts):
    if form in TEST and not have(TEST[form][0]):
        pytest.skip(f"{TEST[form][0]} is not installed")
    src = source["forms"]["tar.gz"]
    out = tmp_path / f"out.{form}"
    convert(src, out, "--verify", *opts)
    index = str(out) + ".index.sqlite"
    assert os.path.exists(index)
    assert not [n for n in os.listdir(tmp_path) if ".tsk-" in n]
    # every other tool reads it, and reads the very same tar
    if form in TEST:
        said = run(*TEST[form], out).stderr.lower()  # lzop -t warns of multipart files
        assert b"warning" not in said, said
    assert decoded(form, out) == source["bytes"]
    assert listing(out) == listing(source["forms"]["tar"])
    ext = tmp_path / "extracted"
    gnu_extract(out, ext)
    compare_trees(ext, source["ref"], check_root=False)
    # the mount uses the written index: nothing is built, nothing decoded until a read
    st = os.stat(index)
    with mount(out, "--no-prefetch") as m:
        info = os.getxattr(m.path, "user.tarseek.info").decode()
        if form != "tar":
            assert "decoders_started=0\n" in info, info
        assert "indexed" not in m.log()
        compare_trees(os.path.join(m.path, "tree"), source["ref"] / "tree")
    after = os.stat(index)
    assert (after.st_ino, after.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)


@pytest.mark.parametrize("form", ["tar", "tar.xz", "tar.zst", "tar.bz2", "tar.lzo", "tar.lz4",
                                  "tar.lz"])
def test_every_source_codec(source, tmp_path, form):
    if form not in source["forms"]:
        pytest.skip(f"{COMPRESS[form][0]} is not installed")
    out = tmp_path / "out.tar.zst"
    convert(source["forms"][form], out)
    assert decoded("tar.zst", out) == source["bytes"]


@pytest.mark.parametrize("form", ["tar.zst", "tar.xz", "tar.lzo"])
def test_index_equals_a_scan(source, tmp_path, form):
    """The checkpoints written with the file are those a scan of it places; so are the
    members, the stream and the stamp."""
    out = tmp_path / f"out.{form}"
    convert(source["forms"]["tar"], out)
    scanned = tmp_path / "scanned.sqlite"
    run(INDEX, "-q", "--index-file", scanned, out)
    for sql in ("SELECT uoff, ulen, coff, clen, extra, bits, flags, crcs, aux FROM checkpoints"
                " ORDER BY stream, idx",
                "SELECT * FROM entries ORDER BY id", "SELECT * FROM streams",
                "SELECT key, value FROM meta WHERE key != 'tarseek_version' ORDER BY key"):
        assert index_rows(str(out) + ".index.sqlite", sql) == index_rows(scanned, sql), sql


def zstd_frames(path):
    """[(compressed, decoded)] sizes from a seekable zstd file's seek table."""
    data = open(path, "rb").read()
    assert struct.unpack("<I", data[-4:])[0] == 0x8F92EAB1
    n, desc = struct.unpack("<IB", data[-9:-4])
    esz = 12 if desc & 0x80 else 8
    size = struct.unpack("<I", data[-9 - n * esz - 4:-9 - n * esz])[0]
    assert size == n * esz + 9
    table = data[-9 - n * esz:-9]
    return [struct.unpack("<II", table[i * esz:i * esz + 8]) for i in range(n)]


def test_zstd_frames_at_member_starts(source, tmp_path):
    out = tmp_path / "out.tar.zst"
    convert(source["forms"]["tar"], out)
    frames = zstd_frames(out)
    assert sum(c for c, _ in frames) + 8 + len(frames) * 8 + 9 == os.path.getsize(out)
    starts, pos = [], 0
    for _, d in frames:
        starts.append(pos)
        pos += d
    assert pos == len(source["bytes"])
    assert max(d for _, d in frames) <= BLOCK + BLOCK // 4
    check_cut_rule(member_starts(str(out) + ".index.sqlite"), starts, pos)


def test_xz_blocks_at_member_starts(source, tmp_path):
    out = tmp_path / "out.tar.xz"
    convert(source["forms"]["tar"], out)
    lines = run("xz", "--robot", "--list", "-vv", out).stdout.decode().splitlines()
    # block lines: "block", stream, block in stream, block in file, comp offset, uncomp
    # offset, comp size, uncomp size, ratio, check, check value, header size, sizes present
    # ("cu": both), ... (xz(1), ROBOT MODE)
    blocks = [line.split("\t") for line in lines if line.startswith("block\t")]
    starts = [int(b[5]) for b in blocks]
    assert all(b[12] == "cu" for b in blocks), "sizes in every block header"
    check_cut_rule(member_starts(str(out) + ".index.sqlite"), starts, len(source["bytes"]))


def test_lzo_groups_at_member_starts(source, tmp_path):
    """lzo's checkpoints are 1 MiB groups of lzop blocks: every block but the last holds from
    1 MiB to under 1.25 MiB and starts where a member does, or 1 MiB after the block before
    (a member then spans the cut); every lzop block is at most lzop's 256 KiB."""
    if not have("lzop"):
        pytest.skip("lzop is not installed")
    out = tmp_path / "out.tar.lzo"
    convert(source["forms"]["tar"], out)
    index = str(out) + ".index.sqlite"
    cks = index_rows(index, "SELECT uoff, ulen FROM checkpoints ORDER BY idx")
    assert len(cks) >= 3, cks
    starts = set(member_starts(index))
    for (uoff, ulen), (nxt, _) in zip(cks, cks[1:]):
        assert uoff + ulen == nxt and (1 << 20) <= ulen < (5 << 18), (uoff, ulen)
        assert nxt in starts or ulen == 1 << 20, (uoff, ulen)
    assert cks[-1][0] + cks[-1][1] == len(source["bytes"])
    listing_ = run("lzop", "-l", "-v", out).stdout.decode()
    assert "lzo" in listing_.lower()


def test_check_finds_a_flipped_byte(source, tmp_path):
    out = tmp_path / "out.tar.zst"
    convert(source["forms"]["tar"], out)
    r = subprocess.run([CONVERT, "-q", "--check", source["forms"]["tar"], out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    data = bytearray(out.read_bytes())
    frames = zstd_frames(out)
    mid = sum(c for c, _ in frames[:len(frames) // 2]) + 40  # inside a middle frame
    data[mid] ^= 0x20
    out.write_bytes(bytes(data))
    r = subprocess.run([CONVERT, "-q", "--check", source["forms"]["tar"], out],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "error" in r.stderr


def test_single_compressed_file(tmp_path, mount):
    img = tmp_path / "vm.img"
    img.write_bytes(semi_random(3 << 20, 7))
    run("gzip", "-k", img)
    out = tmp_path / "vm.img.zst"
    convert(tmp_path / "vm.img.gz", out)
    assert decoded("tar.zst", out) == img.read_bytes()
    with mount(out, "--no-prefetch") as m:
        assert os.listdir(m.path) == ["vm.img"]
        assert open(os.path.join(m.path, "vm.img"), "rb").read() == img.read_bytes()


def test_interrupted_conversion_leaves_nothing(tmp_path):
    src = tmp_path / "big.tar"
    d = tmp_path / "d"
    d.mkdir()
    for i in range(24):
        (d / f"f{i}").write_bytes(semi_random(2 << 20, i))
    run("tar", "-cf", src, "-C", tmp_path, "d")
    run(INDEX, "-q", src)
    out = tmp_path / "out.tar.xz"
    p = subprocess.Popen([CONVERT, "-q", "-j", "1", "--level", "9", src, out],
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not [n for n in os.listdir(tmp_path) if ".tsk-" in n]:
        assert time.monotonic() < deadline and p.poll() is None, "no temporary output seen"
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    err = p.communicate(timeout=60)[1]
    assert p.returncode == 1, err
    assert "interrupted" in err
    left = sorted(n for n in os.listdir(tmp_path) if n.startswith("out"))
    assert left == [], left


def test_bad_requests(source, tmp_path):
    src = source["forms"]["tar"]
    r = convert(src, tmp_path / "x.tar.bz2", check=False)
    assert r.returncode == 2 and "cannot write the form" in r.stderr
    r = convert(tmp_path / "missing.tar", tmp_path / "x.tar.zst", check=False)
    assert r.returncode == 1 and "missing.tar" in r.stderr
    out = tmp_path / "x.tar.zst"
    out.write_bytes(b"keep me")
    r = convert(src, out, check=False)
    assert r.returncode == 1 and "exists" in r.stderr
    assert out.read_bytes() == b"keep me"
    convert(src, out, "--force")
    assert decoded("tar.zst", out) == source["bytes"]
    r = convert(src, src, "--force", check=False)
    assert r.returncode != 0
    assert src.read_bytes() == source["bytes"]
    junk = tmp_path / "junk.bin"
    junk.write_bytes(random_bytes(5000, 3))
    r = convert(junk, tmp_path / "z.tar.zst", check=False)
    assert r.returncode == 1 and "not an archive" in r.stderr
    r = convert(src, tmp_path / "y.tar.gz", "--level", "12", check=False)
    assert r.returncode == 1 and "level" in r.stderr
    assert not [n for n in os.listdir(tmp_path) if ".tsk-" in n or n.startswith("y.")]


# ---- container sources: zip, 7z, cpio, iso9660 ----------------------------------------------
#
# Their members are written anew as a tar.  What GNU tar extracts from each output must be what
# the format's own tool extracts from the source (unzip, 7zz x, bsdtar): every path, type,
# mode, owner, size, mtime, symlink target, hard link and byte; bsdtar must list the output as
# GNU tar does; the output mounts with the index written beside it (no decoder started until
# a read) and shows the same tree.

from test_7z import extract as extract_7z, make_7z  # noqa: E402
from test_libarchive import bsdtar_extract, cpio  # noqa: E402
from test_zip import fix_symlink_times, unzip  # noqa: E402

CONTAINERS = {"zip": ("zip", "unzip"), "7z": ("7zz",), "cpio": ("cpio", "bsdtar"),
              "iso": ("genisoimage", "bsdtar")}
LONG = "n" * 120  # a name over the 100 bytes of the ustar name field
NOT_UTF8 = b"caf\xe9 latin-1"


def container_tree(root, *, not_utf8=False, hard_links=True):
    """Files the four formats all store: deflatable text over several blocks, random bytes
    (kept stored by zip), many small files, an empty folder, modes, a symlink, a long name
    and a path over 200 bytes, a hard link (cpio and iso9660 keep it), mtimes with a fraction
    of a second (7z keeps it to 100 ns: a pax mtime record; the others whole seconds)."""
    root = os.fsencode(root)
    j = lambda *p: os.path.join(root, *[os.fsencode(x) for x in p])
    os.makedirs(j("small"))
    os.makedirs(j("emptydir"))
    os.makedirs(j("modes"))
    os.makedirs(j("dir", "sub"))
    with open(j("text.txt"), "wb") as f:
        f.write(semi_random(300_000, 11))
    with open(j("rand.stored"), "wb") as f:
        f.write(random_bytes(100_000, 12))
    for i in range(60):
        with open(j("small", f"f{i:02d}"), "wb") as f:
            f.write(semi_random(50 + 97 * i, 100 + i))
    with open(j("dir", "sub", "deep.txt"), "wb") as f:
        f.write(b"deep\n" * 300)
    with open(j("modes", "private"), "wb") as f:
        f.write(b"0600\n")
    with open(j("modes", "exec"), "wb") as f:
        f.write(b"#!/bin/sh\n")
    os.chmod(j("modes", "private"), 0o600)
    os.chmod(j("modes", "exec"), 0o755)
    os.chmod(j("emptydir"), 0o750)
    with open(j(LONG), "wb") as f:
        f.write(b"a long name\n")
    deep = j("long", "d" * 60, "e" * 60)
    os.makedirs(deep)
    with open(os.path.join(deep, b"f" * 70), "wb") as f:
        f.write(b"a path over 200 bytes\n")
    os.symlink(b"text.txt", j("link"))
    if hard_links:
        with open(j("hard1"), "wb") as f:
            f.write(semi_random(5000, 13))
        os.link(j("hard1"), j("hard2"))
    if not_utf8:
        with open(os.path.join(root, NOT_UTF8), "wb") as f:
            f.write(b"not utf-8\n")
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        paths += [os.path.join(dirpath, n) for n in dirnames + filenames]
    for i, p in enumerate(sorted(paths, key=lambda p: -p.count(b"/"))):
        ns = (1_600_000_000 + 2 * i) * 10**9 + 123_456_700
        os.utime(p, ns=(ns, ns), follow_symlinks=False)
    return root


def make_container(kind, base):
    """(archive, reference tree the format's tool extracts) of container_tree in kind."""
    src = base / f"{kind}-src"
    container_tree(src, not_utf8=kind == "zip", hard_links=kind in ("cpio", "iso"))
    ref = base / f"{kind}-ref"
    if kind == "zip":
        archive = base / "t.zip"
        # -y: symlinks as links; -n: .stored files are stored, the rest deflated
        run("zip", "-q", "-r", "-y", "-n", ".stored", os.path.abspath(archive), ".", cwd=src)
        import zipfile
        with zipfile.ZipFile(archive) as z:
            methods = {i.filename: i.compress_type for i in z.infolist()}
        assert methods["rand.stored"] == zipfile.ZIP_STORED
        assert methods["text.txt"] == zipfile.ZIP_DEFLATED
        unzip(archive, ref)
        fix_symlink_times(ref, src)
    elif kind == "7z":
        archive = make_7z(src, base / "t.7z", "-snl")
        extract_7z(archive, ref)
    elif kind == "cpio":
        archive = base / "t.cpio"
        cpio(src, archive, "newc")
        bsdtar_extract(archive, ref)
    else:
        archive = base / "t.iso"
        run("genisoimage", "-quiet", "-R", "-o", archive, src)
        bsdtar_extract(archive, ref)
    return archive, ref


@pytest.fixture(scope="module")
def containers(tmp_path_factory):
    base = tmp_path_factory.mktemp("convert-containers")
    made = {}

    def get(kind):
        for tool in CONTAINERS[kind]:
            if not have(tool):
                pytest.skip(f"{tool} is not installed")
        if kind not in made:
            made[kind] = make_container(kind, base)
        return made[kind]
    return get


def names_of(tool, archive, *opts):
    return sorted(run(tool, *opts, "-tf", archive).stdout.splitlines())


def ref_paths(ref):
    """Every path under ref as tar lists it (folders with their '/')."""
    out = []
    for p, n in snapshot(ref, xattrs=False).items():
        if p != b".":
            out.append(p + b"/" if n.kind == "dir" else p)
    return sorted(out)


@pytest.mark.parametrize("form", ["tar.zst", "tar.gz", "tar.xz", "tar"])
@pytest.mark.parametrize("kind", list(CONTAINERS))
def test_container_source(containers, tmp_path, mount, kind, form):
    archive, ref = containers(kind)
    out = tmp_path / f"out.{form}"
    convert(archive, out, "--verify")
    assert not [n for n in os.listdir(tmp_path) if ".tsk-" in n]
    if form in TEST:
        said = run(*TEST[form], out).stderr.lower()
        assert b"warning" not in said, said
    # GNU tar and bsdtar list the same members: those the source's own tool extracts
    # (the top folder, "./", is there when the source lists it: iso9660's root does)
    listed = names_of("tar", out, "--quoting-style=literal")
    assert [n for n in listed if n != b"./"] == ref_paths(ref)
    if have("bsdtar"):  # both print a byte that is not UTF-8 as \ooo
        assert names_of("bsdtar", out) == names_of("tar", out)
    listing_ = listing(out).decode(errors="replace")
    if kind == "7z":  # the fraction of a second 7z keeps, in a pax record
        assert ".1234567 " in listing_, listing_
    if kind in ("cpio", "iso"):
        assert "hard2 link to hard1" in listing_ or "hard1 link to hard2" in listing_, listing_
    assert "link -> text.txt" in listing_
    ext = tmp_path / "extracted"
    gnu_extract(out, ext)
    compare_trees(ext, ref, check_root=False, xattrs=False)
    # members start every block: a frame never starts inside a small member
    index = str(out) + ".index.sqlite"
    if form == "tar.zst":
        starts, pos = [], 0
        for _, d in zstd_frames(out):
            starts.append(pos)
            pos += d
        check_cut_rule(member_starts(index), starts, pos)
    with mount(out, "--no-prefetch") as m:
        info = os.getxattr(m.path, "user.tarseek.info").decode()
        if form != "tar":
            assert "decoders_started=0\n" in info, info
        assert "indexed" not in m.log()
        compare_trees(m.path, ref, check_root=False, xattrs=False)


def test_zip_versions_and_stored_names(tmp_path):
    """A name stored twice: the output holds the last one only (no PATH.versions)."""
    import warnings
    import zipfile
    archive = tmp_path / "dup.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("f.txt", b"first\n")
            z.writestr("dir/other", b"o\n")
            z.writestr("f.txt", b"second, longer\n", compress_type=zipfile.ZIP_STORED)
    out = tmp_path / "dup.tar.gz"
    convert(archive, out, "--verify")
    assert names_of("tar", out) == [b"dir/other", b"f.txt"]  # dir/ was never listed
    assert run("tar", "-xOf", out, "f.txt").stdout == b"second, longer\n"


def test_container_check_finds_differences(containers, tmp_path):
    """--check pairs a container's members by path: a flipped byte in the output, a member
    missing on either side, another target of a symlink are each an error."""
    archive, ref = containers("zip")
    out = tmp_path / "out.tar.zst"
    convert(archive, out)
    r = subprocess.run([CONVERT, "-q", "--check", archive, out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    data = bytearray(out.read_bytes())
    frames = zstd_frames(out)
    mid = sum(c for c, _ in frames[:len(frames) // 2]) + 40  # inside a middle frame
    data[mid] ^= 0x20
    flipped = tmp_path / "flipped.tar.zst"
    flipped.write_bytes(bytes(data))
    shutil.copy(str(out) + ".index.sqlite", str(flipped) + ".index.sqlite")
    r = subprocess.run([CONVERT, "-q", "--check", archive, flipped], capture_output=True,
                       text=True)
    assert r.returncode == 1 and "error" in r.stderr, r.stderr

    # the source has a file more, a file less, another size, another byte, another target
    cases = [("extra", lambda d: (d / "extra.txt").write_bytes(b"more\n"), "is missing"),
             ("missing", lambda d: (d / "small" / "f07").unlink(), "not in the source"),
             ("size", lambda d: (d / "small" / "f07").write_bytes(b"x"), "bytes"),
             ("content", lambda d: (d / "text.txt").write_bytes(
                 semi_random(300_000, 11)[:-1] + b"!"), "differs"),
             ("link", lambda d: ((d / "link").unlink(), os.symlink("rand.stored", d / "link")),
              "points to")]
    for name, change, word in cases:
        d = tmp_path / f"tree-{name}"
        shutil.copytree(ref, d, symlinks=True)
        change(d)
        z = tmp_path / f"{name}.zip"
        run("zip", "-q", "-r", "-y", os.path.abspath(z), ".", cwd=d)
        r = subprocess.run([CONVERT, "-q", "--check", z, out], capture_output=True, text=True)
        assert r.returncode == 1, (name, r.stderr)
        assert word in r.stderr, (name, r.stderr)


def test_damaged_container_source(containers, tmp_path):
    """Flipped bytes inside a deflated zip entry: the conversion fails (exit 1) when it reads
    the entry, and leaves nothing behind."""
    import zipfile
    archive, _ = containers("zip")
    with zipfile.ZipFile(archive) as z:
        info = z.getinfo("text.txt")
    assert info.compress_type == zipfile.ZIP_DEFLATED
    data = bytearray(archive.read_bytes())
    n, m = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    at = info.header_offset + 30 + n + m + info.compress_size // 2
    data[at] ^= 0xff
    data[at + 1] ^= 0xff
    bad = tmp_path / "bad.zip"
    bad.write_bytes(bytes(data))
    for form in ("tar.zst", "tar"):
        out = tmp_path / f"bad.{form}"
        r = convert(bad, out, check=False)
        assert r.returncode == 1, r.stderr
        assert "text.txt" in r.stderr, r.stderr
        left = [n for n in os.listdir(tmp_path) if n.startswith("bad.") and n != "bad.zip"
                and not n.startswith("bad.zip.")]
        assert left == [], left
