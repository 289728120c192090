"""ar archives (containers/ar.c), compared with what GNU ar extracts (`ar xo`: the bytes, the
modes and the mtimes the headers hold):

- GNU ar with and without -D (deterministic), long names (the "//" table), an odd-sized member
  (its padding byte), an empty one, modes and mtimes of the files;
- llvm-ar's BSD and darwin formats ("#1/N": the name at the start of the data) and its GNU one;
- the layout Microsoft's lib.exe and `llvm-ar --format=coff` write for import libraries (two
  "/" linker members, a "//" table of NUL-ended names), which libarchive 3.6 cannot read
  ("Invalid string table"); llvm-ar 14 cannot write it, so the test builds it byte by byte;
  and what llvm-lib 14 writes from COFF objects made by clang;
- damage: cut in a member's data (listed, its reads EIO, the others intact), cut in a header
  (the listing ends there), a long name the table does not hold (that member left out).
Every member is read in place: no checkpoint, nothing decoded.
"""
import errno
import os
import struct

import pytest

from conftest import checkpoints, compare_trees, require_tool, run


def files(tmp_path):
    src = tmp_path / "files"
    src.mkdir()
    content = {"a.txt": b"alpha\n" * 1000, "odd.bin": os.urandom(70_001), "empty": b"",
               "a_member_name_longer_than_sixteen_bytes.txt": b"long name\n",
               "with space.txt": b"space\n"}
    for i, (n, d) in enumerate(sorted(content.items())):
        (src / n).write_bytes(d)
        os.chmod(src / n, [0o644, 0o600, 0o755, 0o444, 0o640][i])
        os.utime(src / n, (1_600_000_000 + i, 1_600_000_000 + 1000 * i))
    return src, sorted(content)


def ar_extract(archive, dest):
    """What GNU ar extracts, with the headers' mtimes (o)."""
    dest.mkdir()
    run("ar", "xo", os.path.abspath(archive), cwd=dest)
    return dest


@pytest.mark.parametrize("how", ["gnu", "gnu-deterministic", "llvm-bsd", "llvm-darwin",
                                 "llvm-gnu"])
def test_ar_formats(mount, tmp_path, how):
    require_tool("ar")
    src, names = files(tmp_path)
    archive = tmp_path / "t.a"
    if how.startswith("llvm"):
        require_tool("llvm-ar")
        run("llvm-ar", "--format=" + how[5:], "rcU", archive, *names, cwd=src)
    else:
        run("ar", "rcD" if how == "gnu-deterministic" else "rcU", archive, *names, cwd=src)
    ref = ar_extract(archive, tmp_path / "ref")
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False, owners=False)
    assert checkpoints(str(archive) + ".index.sqlite") == 0  # read in place


def member(name, data):
    h = name.ljust(16) + b"1600000000".ljust(12) + b"0".ljust(6) + b"0".ljust(6)
    h += b"100644".ljust(8) + str(len(data)).encode().ljust(10) + b"`\n"
    assert len(h) == 60
    return h + data + (b"\n" if len(data) % 2 else b"")


def coff_library(objs):
    """An import library's layout as lib.exe writes it: the first linker member (big-endian
    offsets), the second (little-endian, with symbol indices), the long-name member whose
    names end with NUL, then the members ("name/" or "/N")."""
    syms = [b"sym%d" % i for i in range(len(objs))]
    longnames, names = b"", []
    for n, _ in objs:
        if len(n) < 16:
            names.append(n + b"/")
        else:
            names.append(b"/%d" % len(longnames))
            longnames += n + b"\0"
    first_len = 4 + 4 * len(syms) + sum(len(s) + 1 for s in syms)
    second_len = 8 + 4 * len(objs) + 2 * len(syms) + sum(len(s) + 1 for s in syms)
    off = 8 + sum(60 + n + n % 2 for n in (first_len, second_len, len(longnames)))
    offs, body = [], b""
    for (n, d), name in zip(objs, names):
        offs.append(off + len(body))
        body += member(name, d)
    table = b"".join(s + b"\0" for s in syms)
    first = struct.pack(">I", len(syms)) + b"".join(struct.pack(">I", o) for o in offs) + table
    second = struct.pack("<I", len(objs)) + b"".join(struct.pack("<I", o) for o in offs)
    second += struct.pack("<I", len(syms))
    second += b"".join(struct.pack("<H", i + 1) for i in range(len(syms))) + table
    assert (len(first), len(second)) == (first_len, second_len)
    return b"!<arch>\n" + member(b"/", first) + member(b"/", second) + \
        member(b"//", longnames) + body


def test_coff_import_library(mount, tmp_path):
    require_tool("ar")
    objs = [(b"f1.obj", os.urandom(421)), (b"f2.obj", b"two\n"),
            (b"a_long_object_file_name.obj", os.urandom(1000)),
            (b"another_long_object_name.obj", b"")]
    archive = tmp_path / "imp.lib"
    archive.write_bytes(coff_library(objs))
    ref = ar_extract(archive, tmp_path / "ref")
    assert sorted(os.listdir(ref)) == sorted(n.decode() for n, _ in objs)  # GNU ar reads it
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False, owners=False)


def test_llvm_lib(mount, tmp_path):
    require_tool("ar", "clang", "llvm-lib")
    for i in range(4):
        (tmp_path / ("f%d.c" % i)).write_text("int f%d(void) { return %d; }\n" % (i, i))
        run("clang", "--target=x86_64-pc-windows-msvc", "-c", "f%d.c" % i, "-o",
            "object_file_with_a_long_name_%d.obj" % i, cwd=tmp_path)
    archive = tmp_path / "x.lib"
    run("llvm-lib", "/out:" + str(archive),
        *["object_file_with_a_long_name_%d.obj" % i for i in range(4)], cwd=tmp_path)
    ref = ar_extract(archive, tmp_path / "ref")
    assert len(os.listdir(ref)) == 4
    with mount(archive) as m:
        compare_trees(m.path, ref, check_root=False, owners=False, mtimes=False)


def read_errno(path):
    try:
        with open(path, "rb") as f:
            f.read()
    except OSError as e:
        return e.errno
    return 0


def test_damage(mount, tmp_path):
    require_tool("ar")
    src, names = files(tmp_path)
    archive = tmp_path / "t.a"
    run("ar", "rcU", archive, *names, cwd=src)
    data = archive.read_bytes()
    last = names[-1]  # ar keeps the order given: the last member's data ends the file
    assert data.endswith((src / last).read_bytes() + b"\n" * (len(data) % 2))

    cut = tmp_path / "cut-in-data.a"
    cut.write_bytes(data[:-3])
    with mount(cut, allow_errors=True) as m:
        assert sorted(os.listdir(m.path)) == names
        assert read_errno(os.path.join(m.path, last)) == errno.EIO
        for n in names[:-1]:
            with open(os.path.join(m.path, n), "rb") as f:
                assert f.read() == (src / n).read_bytes(), n
    assert "ends inside its data" in m.log()

    at = data.index(b"odd.bin/")  # cut 20 bytes into that member's header
    head = tmp_path / "cut-in-header.a"
    head.write_bytes(data[:at + 20])
    with mount(head, allow_errors=True) as m:
        before = [n for n in names if data.index(n.encode()[:15]) < at]
        assert sorted(os.listdir(m.path)) == sorted(before)
    assert "no member header" in m.log()

    objs = [(b"ok.obj", b"fine\n"), (b"a_long_object_file_name.obj", b"lost\n")]
    lib = coff_library(objs).replace(b"/0  ", b"/99 ")  # past the name table
    bad = tmp_path / "bad-name.lib"
    bad.write_bytes(lib)
    with mount(bad, allow_errors=True) as m:
        assert os.listdir(m.path) == ["ok.obj"]
    assert "not in the name table" in m.log()
