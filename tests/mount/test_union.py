"""Union mounts, versions, archives inside archives, tarseek-index, many sources.

- A union of a .tar, a .tar.gz, a .tar.xz and a plain folder (in that order) is compared
  with a reference union computed here with overlay rules: the last source wins for a
  file, folders merge, a later file hides an earlier folder (and everything below it), a
  later folder replaces an earlier file.  Every path, type, byte and symlink target; the
  source each file comes from (user.tarseek.source); sorted merged listings without
  duplicates; inode numbers unique and stable; readdir's d_ino/d_type equal to lstat's;
  ls -laR, find and os.walk agree.  user.tarseek.* answered but never listed, while an
  archive's own xattrs are.
- --no-union: one folder per source, clashing names get .2, .3.
- Versions: tar -r appends; PATH.versions/N equals tar --occurrence=N; .versions is found by
  lookup but not listed; a real member named x.versions wins; versions across sources;
  a hard link shows the version that existed when the link was written.
- Nesting (-r): a tar.gz holding a tar.xz holding a .gz file and a plain .tar, read through
  every layer and compared with a manual extraction; without -r, with --recursion-depth 1,
  with --strip-extension; a second mount decodes nothing until a file is read
  (user.tarseek.decoders_started on the root) and reuses the index.
- tarseek-index: --check, build, reuse by a mount, stale with other options,
  --index-folder.
- 200 small archives of mixed codecs in one union mount, and the daemon's descriptors.
"""
import ctypes
import errno
import os
import stat
import subprocess

import pytest

from conftest import (BUILD, TARSEEK, codec_state, is_mounted, random_bytes, run,
                      semi_random, unmount, wait_mounted)

TARSEEK_INDEX = os.path.join(BUILD, "tools", "tarseek-index")


# ---- helpers -------------------------------------------------------------------------------

def write(root, rel, data):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def info(path):
    """user.tarseek.info of path as a dict."""
    text = os.getxattr(path, "user.tarseek.info", follow_symlinks=False).decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def src_of(path):
    return os.getxattr(path, "user.tarseek.source", follow_symlinks=False).decode()


def indexed(log):
    """The "indexed" lines of a daemon log (an index was built)."""
    return [line for line in log.splitlines() if "indexed" in line]


def decoders_started(mnt):
    return int(os.getxattr(os.fspath(mnt), "user.tarseek.decoders_started"))


def tree_of(root):
    """{relative path: ("dir", None) | ("file", bytes) | ("symlink", target)} of a real
    folder (root excluded)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            full = os.path.join(dirpath, n)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("symlink", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", None)
            else:
                out[rel] = ("file", read(full))
    return out


def mounted_tree(root):
    """Like tree_of for a mount, checking on the way that no listing has a duplicate."""
    for dirpath, dirnames, filenames in os.walk(root):
        names = dirnames + filenames
        assert len(names) == len(set(names)), f"duplicates in {dirpath}: {sorted(names)}"
    return tree_of(root)


def reference_union(sources):
    """The union of [(staging folder, source path)] by overlay rules: {rel: (kind, value,
    source path)}.  A later file replaces an earlier entry and everything below it; a later
    folder replaces an earlier non-folder and merges with an earlier folder."""
    want = {}
    for stage, source in sources:
        for rel, (kind, value) in sorted(tree_of(stage).items()):
            old = want.get(rel)
            if kind == "dir" and old and old[0] == "dir":
                want[rel] = ("dir", None, source)
                continue
            if old:
                for p in [p for p in want if p.startswith(rel + "/")]:
                    del want[p]
            want[rel] = (kind, value, source)
    return want


def compare_union(mnt, want):
    got = mounted_tree(mnt)
    problems = []
    for p in sorted(set(want) - set(got)):
        problems.append(f"missing: {p} ({want[p][0]} from {want[p][2]})")
    for p in sorted(set(got) - set(want)):
        problems.append(f"extra: {p} ({got[p][0]})")
    for p in sorted(set(got) & set(want)):
        (gk, gv), (wk, wv, src) = got[p], want[p]
        if gk != wk:
            problems.append(f"{p}: a {gk}, expected a {wk} (from {src})")
        elif gv != wv:
            problems.append(f"{p}: {gk} content {gv[:40]!r}, expected {wv[:40]!r} from {src}")
        elif gk == "file":  # the kernel answers no user.* xattr of a symlink (ENODATA)
            s = src_of(os.path.join(mnt, p))
            if s != os.path.realpath(src):
                problems.append(f"{p}: user.tarseek.source is {s}, expected {src}")
    assert not problems, "union differs from the reference:\n  " + "\n  ".join(problems)
    return got


class Dirent(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.opendir.restype = ctypes.c_void_p
_libc.opendir.argtypes = [ctypes.c_char_p]
_libc.readdir64.restype = ctypes.POINTER(Dirent)
_libc.readdir64.argtypes = [ctypes.c_void_p]
_libc.closedir.argtypes = [ctypes.c_void_p]

DT = {stat.S_IFDIR: 4, stat.S_IFREG: 8, stat.S_IFLNK: 10}


def raw_readdir(path):
    """[(name, d_ino, d_type)] as getdents gives them, without . and .."""
    d = _libc.opendir(os.fsencode(path))
    assert d, f"opendir {path}: {os.strerror(ctypes.get_errno())}"
    out = []
    try:
        while True:
            ctypes.set_errno(0)
            e = _libc.readdir64(d)
            if not e:
                assert ctypes.get_errno() == 0, os.strerror(ctypes.get_errno())
                break
            name = e.contents.d_name.decode()
            if name not in (".", ".."):
                out.append((name, e.contents.d_ino, e.contents.d_type))
    finally:
        _libc.closedir(d)
    return out


def codecs_usable():
    """Compressors (argv, suffix) whose codec tarseek reads, plus plain tar."""
    out = [(None, ".tar")]
    for name, argv, suffix in (("gzip", ["gzip", "-c"], ".tar.gz"),
                               ("bzip2", ["bzip2", "-c"], ".tar.bz2"),
                               ("xz", ["xz", "-c"], ".tar.xz"),
                               ("zstd", ["zstd", "-q", "-c"], ".tar.zst"),
                               ("lzo", ["lzop", "-c"], ".tar.lzo")):
        if codec_state(name) is None:
            out.append((argv, suffix))
    return out


def make_archive(path, stage, compress=None, *members):
    """tar of stage (or of the given members of it), piped through compress."""
    members = members or (".",)
    if compress is None:
        run("tar", "cf", path, "-C", stage, *members)
        return
    tar = subprocess.run(["tar", "cf", "-", "-C", stage, *members], capture_output=True,
                         check=True).stdout
    with open(path, "wb") as f:
        subprocess.run(compress, input=tar, stdout=f, check=True)


# ---- the union of four sources -------------------------------------------------------------

# stage name -> {path: bytes, or ("symlink", target), or None for an empty folder}
UNION = {
    "a": {
        "common.txt": semi_random(5000, 1),
        "ab.txt": b"ab from a\n" * 300,
        "ac.txt": b"ac from a\n" * 300,
        "only_a.txt": b"only a\n",
        "shared/only_a": b"shared a\n",
        "shared/ab.bin": random_bytes(20_000, 2),
        "shared/sub/deep_a": b"deep a\n",
        "f2d": b"a file in a, a folder in c\n",
        "d2f/secret": b"below a folder that c replaces by a file\n",
        "d2f/more/secret2": b"deeper\n",
        "dfd/a_child": b"a folder in a, a file in b, a folder in c\n",
        "fdf": b"file in a\n",
        "only_a_dir/with/file": b"nested only in a\n",
        "link_a": ("symlink", "common.txt"),
        "emptydir_a": None,
    },
    "b": {
        "common.txt": b"b\n" * 50,
        "ab.txt": b"ab from b\n",
        "shared/only_b": b"shared b\n",
        "shared/ab.bin": random_bytes(7_000, 3),
        "shared/sub/deep_b": b"deep b\n",
        "dfd": b"the file of b that hides a's folder\n",
        "fdf/b_child": b"a folder in b between two files\n",
        "only_b.txt": b"only b\n",
        "link_a": b"b replaces a's symlink by a file\n",
    },
    "c": {
        "common.txt": semi_random(3000, 4),
        "ac.txt": b"ac from c\n",
        "shared/only_c": b"shared c\n",
        "shared/sub/deep_c": b"deep c\n",
        "f2d/inside": b"c's folder\n",
        "d2f": b"c's file hides a's folder\n",
        "dfd/c_child": b"c's folder\n",
        "fdf": b"file in c\n",
        "emptydir_a": b"c's file replaces a's empty folder\n",
    },
    "d": {
        "common.txt": b"from the folder\n",
        "shared/only_d": b"shared d\n",
        "shared/sub/deep_d": b"deep d\n",
        "only_d.txt": b"only d\n",
        "link_d": ("symlink", "only_d.txt"),
        "emptydir_d": None,
    },
}


def stage(root, files):
    os.makedirs(root)
    for rel, data in files.items():
        p = os.path.join(root, rel)
        if data is None:
            os.makedirs(p, exist_ok=True)
        elif isinstance(data, tuple):
            os.makedirs(os.path.dirname(p), exist_ok=True)
            os.symlink(data[1], p)
        else:
            write(root, rel, data)
    return root


@pytest.fixture
def union4(tmp_path):
    """[(staging folder, source path)] for a.tar, b.tar.gz, c.tar.xz and the folder d."""
    out = []
    for name, (compress, suffix) in (("a", (None, ".tar")), ("b", (["gzip", "-c"], ".tar.gz")),
                                     ("c", (["xz", "-c"], ".tar.xz"))):
        st = stage(str(tmp_path / ("stage_" + name)), UNION[name])
        path = str(tmp_path / (name + suffix))
        make_archive(path, st, compress)
        out.append((st, path))
    d = stage(str(tmp_path / "d"), UNION["d"])
    out.append((d, d))
    return out


def test_union_matches_overlay_reference(mount, union4):
    want = reference_union(union4)
    # the fixture covers what it claims to
    assert want["f2d"][0] == "dir" and want["d2f"][0] == "file" and want["fdf"][0] == "file"
    assert "d2f/secret" not in want and "dfd/a_child" not in want and "dfd/c_child" in want
    with mount(*[s for _, s in union4]) as m:
        compare_union(m.path, want)


def test_union_overrides_and_conflicts(mount, union4):
    """The same rules, spelled out path by path (so a failure names the rule)."""
    a, b, c, d = (s for _, s in union4)
    with mount(a, b, c, d) as m:
        j = lambda p: os.path.join(m.path, p)
        # last source wins, and the size is the winner's too
        assert read(j("common.txt")) == UNION["d"]["common.txt"]
        assert os.stat(j("common.txt")).st_size == len(UNION["d"]["common.txt"])
        assert src_of(j("common.txt")) == os.path.realpath(d)
        assert read(j("ab.txt")) == UNION["b"]["ab.txt"]
        assert src_of(j("ab.txt")) == os.path.realpath(b)
        assert read(j("ac.txt")) == UNION["c"]["ac.txt"]
        assert read(j("shared/ab.bin")) == UNION["b"]["shared/ab.bin"]
        assert src_of(j("only_a.txt")) == os.path.realpath(a)
        assert src_of(j("shared/only_c")) == os.path.realpath(c)
        # a file replaced by a later symlink / a symlink by a later file
        assert not os.path.islink(j("link_a")) and read(j("link_a")) == UNION["b"]["link_a"]
        assert os.readlink(j("link_d")) == "only_d.txt"
        # file earlier, folder later: a folder holding only the later folder's entries
        assert os.path.isdir(j("f2d"))
        assert os.listdir(j("f2d")) == ["inside"]
        # folder earlier, file later: a file, nothing below it
        assert os.path.isfile(j("d2f")) and read(j("d2f")) == UNION["c"]["d2f"]
        for p in ("d2f/secret", "d2f/more", "d2f/more/secret2"):
            with pytest.raises(NotADirectoryError):
                os.lstat(j(p))
        assert os.path.isfile(j("emptydir_a"))
        # folder, file, folder: the file in between hides the first folder
        assert os.path.isdir(j("fdf")) is False and read(j("fdf")) == UNION["c"]["fdf"]
        assert os.path.isdir(j("dfd"))
        assert sorted(os.listdir(j("dfd"))) == ["c_child"], \
            "a_child of a.tar leaks through the file dfd of b.tar.gz"
        with pytest.raises(FileNotFoundError):
            os.lstat(j("dfd/a_child"))


def test_merged_listings_sorted_without_duplicates(mount, union4):
    with mount(*[s for _, s in union4]) as m:
        root = os.listdir(m.path)
        assert root == sorted(root) and len(root) == len(set(root))
        assert set(root) == {"common.txt", "ab.txt", "ac.txt", "only_a.txt", "only_b.txt",
                             "only_d.txt", "shared", "f2d", "d2f", "dfd", "fdf", "only_a_dir",
                             "link_a", "link_d", "emptydir_a", "emptydir_d"}
        shared = os.listdir(os.path.join(m.path, "shared"))
        assert shared == ["ab.bin", "only_a", "only_b", "only_c", "only_d", "sub"]
        sub = os.listdir(os.path.join(m.path, "shared", "sub"))
        assert sub == ["deep_a", "deep_b", "deep_c", "deep_d"]
        # what the merged folders say about themselves
        assert os.getxattr(os.path.join(m.path, "shared"), "user.tarseek.kind") == b"union"
        assert os.getxattr(os.path.join(m.path, "shared"), "user.tarseek.sources") == \
            b"a.tar:b.tar.gz:c.tar.xz:d"
        assert os.getxattr(m.path, "user.tarseek.sources") == b"a.tar:b.tar.gz:c.tar.xz:d"


def test_inodes_unique_stable_and_readdir_agrees(mount, union4):
    with mount(*[s for _, s in union4]) as m:
        first = {}
        for dirpath, dirnames, filenames in os.walk(m.path):
            for n in [""] + dirnames + filenames:
                p = os.path.join(dirpath, n) if n else dirpath
                first[p] = os.lstat(p).st_ino
        assert first[m.path] == 1
        inos = list(first.values())
        dup = {i for i in inos if inos.count(i) > 1}
        assert not dup, f"inode numbers shared: {[p for p, i in first.items() if i in dup]}"
        # readdir's d_ino and d_type are what lstat says; every folder, merged or not
        for dirpath, dirnames, filenames in os.walk(m.path):
            entries = raw_readdir(dirpath)
            assert sorted(n for n, _, _ in entries) == sorted(dirnames + filenames)
            for name, ino, dtype in entries:
                st = os.lstat(os.path.join(dirpath, name))
                assert ino == st.st_ino, f"{dirpath}/{name}: d_ino {ino}, st_ino {st.st_ino}"
                assert dtype == DT[stat.S_IFMT(st.st_mode)], f"{dirpath}/{name}: d_type {dtype}"
        # the same numbers on every later lookup, in any order
        for p in sorted(first, reverse=True):
            assert os.lstat(p).st_ino == first[p], p
            assert os.stat(p, follow_symlinks=False).st_ino == first[p], p
    # a second mount of the same sources: entries of archives keep their numbers
    with mount(*[s for _, s in union4]) as m2:
        for p, ino in first.items():
            q = os.path.join(m2.path, os.path.relpath(p, m.path))
            if os.path.isfile(q) and not os.path.islink(q):
                if not src_of(q).endswith(("a.tar", ".tar.gz", ".tar.xz")):
                    continue
                assert os.lstat(q).st_ino == ino, q


def test_ls_find_walk_agree(mount, union4):
    with mount(*[s for _, s in union4]) as m:
        walked = {"."}
        for dirpath, dirnames, filenames in os.walk(m.path):
            for n in dirnames + filenames:
                walked.add(os.path.relpath(os.path.join(dirpath, n), m.path))
        found = run("find", m.path, "-printf", "%P\\n").stdout.decode().splitlines()
        assert len(found) == len(set(found))
        assert set(found) == (walked - {"."}) | {""}
        ls = run("ls", "-laR", m.path)
        out = ls.stdout.decode()
        assert "?" not in out.replace(m.path, ""), out  # ls prints ? for what it cannot stat
        assert ls.stderr == b""
        assert "link_d -> only_d.txt" in out
        # the number of entries ls -laR shows (without . and ..) equals the walk
        names = [line for line in out.splitlines()
                 if line and line[0] in "-dl" and not line.endswith((" .", " .."))]
        assert len(names) == len(walked) - 1
        # find -type agrees with the types os.walk and lstat see
        types = {rel: kind for rel, (kind, _) in tree_of(m.path).items()}
        for kind, flag in (("dir", "d"), ("file", "f"), ("symlink", "l")):
            got = set(run("find", m.path, "-mindepth", "1", "-type", flag, "-printf",
                          "%P\\n").stdout.decode().splitlines())
            assert got == {p for p, k in types.items() if k == kind}, kind
            assert got, kind


def test_tarseek_xattrs_answered_not_listed(mount, tmp_path, xattr_dir):
    """user.tarseek.* are there for getxattr on every kind of entry, never in listxattr;
    an archive's own user.* xattrs are listed and read."""
    if xattr_dir is None:
        pytest.skip("no folder here takes user.* xattrs")
    st = os.path.join(xattr_dir, "xstage")
    write(st, "tagged.txt", b"tagged\n")
    write(st, "plain.txt", b"plain\n")
    os.setxattr(os.path.join(st, "tagged.txt"), "user.comment", b"from the archive")
    x = str(tmp_path / "x.tar")
    run("tar", "--format=posix", "--xattrs", "--xattrs-include=user.*", "-cf", x, "-C", st, ".")
    other = str(tmp_path / "other.tar.gz")
    ost = str(tmp_path / "ostage")
    write(ost, "other.txt", b"other\n")
    make_archive(other, ost, ["gzip", "-c"])
    with mount(x, other) as m:
        tagged = os.path.join(m.path, "tagged.txt")
        assert os.listxattr(tagged) == ["user.comment"]
        assert os.getxattr(tagged, "user.comment") == b"from the archive"
        assert os.getxattr(tagged, "user.tarseek.source") == os.fsencode(os.path.realpath(x))
        assert os.getxattr(tagged, "user.tarseek.kind") == b"archive"
        assert os.getxattr(tagged, "user.tarseek.codec") == b"none"
        o = os.path.join(m.path, "other.txt")
        assert os.getxattr(o, "user.tarseek.codec") == b"gzip"
        assert info(o)["source"] == os.path.realpath(other)
        for p in (m.path, tagged, o, os.path.join(m.path, "plain.txt")):
            names = os.listxattr(p)
            assert not [n for n in names if n.startswith("user.tarseek")], (p, names)
        with pytest.raises(OSError) as e:
            os.getxattr(tagged, "user.tarseek.no_such_key")
        assert e.value.errno == errno.ENODATA
        # getfattr -d (what users run) shows the archive's attribute and none of ours
        out = run("getfattr", "-d", tagged).stdout.decode()
        assert "user.comment" in out and "user.tarseek" not in out
        out = run("getfattr", "-n", "user.tarseek.source", "--only-values", o).stdout
        assert out == os.fsencode(os.path.realpath(other))


def test_folder_source_holding_the_mount_point(tmp_path):
    """A folder source that contains the mount point: refused, or the mount point hidden --
    never the mount showing (and reading) itself inside itself.  (Not tried with -s: there
    the daemon's lookup in its own mount waits for itself forever.)"""
    src = tmp_path / "src"
    write(str(src), "hello", b"hi\n")
    mnt = src / "mnt"
    mnt.mkdir()
    st = str(tmp_path / "st")
    write(st, "a", b"a\n")
    a = str(tmp_path / "a.tar")
    make_archive(a, st)
    log_path = str(tmp_path / "log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([TARSEEK, "-f", a, str(src), str(mnt)], stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        try:
            wait_mounted(proc, str(mnt), log_path, timeout=30)
        except RuntimeError as e:  # refused: fine, if it says why
            assert proc.returncode == 1 and "mount point" in str(e), str(e)
            return
        assert read(str(mnt / "hello")) == b"hi\n" and read(str(mnt / "a")) == b"a\n"
        # in a child process with a timeout: a lookup here may never return
        r = subprocess.run(["ls", "-a", str(mnt / "mnt")], capture_output=True, timeout=20)
        inside = r.stdout.decode().split()
        assert "hello" not in inside and "a" not in inside, \
            f"{mnt}/mnt is the mount itself: {inside}"
    finally:
        if is_mounted(str(mnt)):
            unmount(str(mnt), proc)
        else:
            proc.wait(timeout=30)


# ---- --no-union ----------------------------------------------------------------------------

def test_no_union_one_folder_per_source(mount, tmp_path):
    made = {}
    for name, folder, data in (("t.tar", "x", b"x's t\n"), ("t.tar", "y", b"y's t\n"),
                               ("u.tar.gz", "x", b"u\n")):
        st = str(tmp_path / f"stage-{folder}-{name}")
        write(st, "file.txt", data)
        os.makedirs(tmp_path / folder, exist_ok=True)
        path = str(tmp_path / folder / name)
        make_archive(path, st, ["gzip", "-c"] if name.endswith(".gz") else None)
        made[(folder, name)] = path
    plain = str(tmp_path / "y" / "t.tar.d")
    write(plain, "file.txt", b"folder\n")
    tx, ty, u = made[("x", "t.tar")], made[("y", "t.tar")], made[("x", "u.tar.gz")]
    with mount("--no-union", tx, u, ty, tx, plain) as m:
        assert sorted(os.listdir(m.path)) == ["t.tar", "t.tar.2", "t.tar.3", "t.tar.d",
                                              "u.tar.gz"]
        j = lambda *p: os.path.join(m.path, *p)
        assert read(j("t.tar", "file.txt")) == b"x's t\n"
        assert read(j("t.tar.2", "file.txt")) == b"y's t\n"
        assert read(j("t.tar.3", "file.txt")) == b"x's t\n"
        assert read(j("u.tar.gz", "file.txt")) == b"u\n"
        assert read(j("t.tar.d", "file.txt")) == b"folder\n"
        assert src_of(j("t.tar.2", "file.txt")) == os.path.realpath(ty)
        assert src_of(j("t.tar.3", "file.txt")) == os.path.realpath(tx)
        for n in os.listdir(m.path):
            assert os.path.isdir(j(n)) and os.listdir(j(n)) == ["file.txt"]
        # nothing is merged: the root holds only the folders
        with pytest.raises(FileNotFoundError):
            os.lstat(j("file.txt"))
        with pytest.raises(FileNotFoundError):
            os.lstat(j("t.tar.4"))
        inos = [os.lstat(j(n, "file.txt")).st_ino for n in os.listdir(m.path)]
        assert len(set(inos)) == len(inos)


def test_no_union_generated_name_clashes_with_a_source_name(mount, tmp_path):
    """x/t.tar, y/t.tar and z/t.tar.2: the second t.tar must not be shown as "t.tar.2",
    which is the third source's own name -- every source needs a folder of its own."""
    paths = []
    for folder, name, data in (("x", "t.tar", b"x\n"), ("y", "t.tar", b"y\n"),
                               ("z", "t.tar.2", b"z\n")):
        st = str(tmp_path / ("st" + folder))
        write(st, "f", data)
        os.makedirs(tmp_path / folder)
        paths.append(str(tmp_path / folder / name))
        make_archive(paths[-1], st)
    with mount("--no-union", *paths) as m:
        names = os.listdir(m.path)
        assert len(names) == 3
        assert len(set(names)) == 3, f"two sources share a folder name: {names}"
        assert names[0] == "t.tar"
        assert sorted(read(os.path.join(m.path, n, "f")) for n in set(names)) == \
            [b"x\n", b"y\n", b"z\n"]


def test_union_with_nested_archives_and_hard_links(mount, tmp_path):
    """-r in a union: x.tar inside both archives merges as one folder; a hard link resolves
    inside its own archive even when a later source overrides its target's path."""
    for name, inner in (("a", "file1"), ("b", "file2")):
        i = str(tmp_path / ("i" + name))
        write(i, inner, inner.encode() + b"\n")
        s = str(tmp_path / ("s" + name))
        write(s, "f", b"f of %s\n" % name.encode())
        make_archive(os.path.join(s, "x.tar"), i)
        if name == "a":
            os.link(os.path.join(s, "f"), os.path.join(s, "g"))
    a, b = str(tmp_path / "a.tar"), str(tmp_path / "b.tar.gz")
    make_archive(a, str(tmp_path / "sa"), None, "f", "g", "x.tar")
    make_archive(b, str(tmp_path / "sb"), ["gzip", "-c"], "f", "x.tar")
    with mount("-r", a, b) as m:
        j = lambda p: os.path.join(m.path, p)
        assert sorted(os.listdir(m.path)) == ["f", "g", "x.tar"]
        assert read(j("f")) == b"f of b\n"
        assert read(j("g")) == b"f of a\n"
        assert os.lstat(j("g")).st_ino == os.lstat(j("f.versions/1")).st_ino
        assert os.path.isdir(j("x.tar"))
        assert os.listdir(j("x.tar")) == ["file1", "file2"]
        assert read(j("x.tar/file1")) == b"file1\n" and read(j("x.tar/file2")) == b"file2\n"
        for name, ino, dtype in raw_readdir(j("x.tar")) + raw_readdir(m.path):
            p = j(name) if name in ("f", "g", "x.tar") else j("x.tar/" + name)
            assert ino == os.lstat(p).st_ino and dtype == DT[stat.S_IFMT(os.lstat(p).st_mode)]
        # each version of x.tar is the archive of its source, mounted as a folder
        assert os.listdir(j("x.tar.versions/1")) == ["file1"]
        assert os.listdir(j("x.tar.versions/2")) == ["file2"]


def test_same_archive_twice_in_a_union(mount, tmp_path):
    st = str(tmp_path / "st")
    write(st, "f.txt", b"once\n")
    a = str(tmp_path / "a.tar")
    make_archive(a, st)
    with mount(a, a) as m:
        assert os.listdir(m.path) == ["f.txt"]
        assert read(os.path.join(m.path, "f.txt")) == b"once\n"
        v = os.path.join(m.path, "f.txt.versions")
        assert os.listdir(v) == ["1", "2"]
        assert info(os.path.join(v, "2"))["source_index"] == "2"


# ---- versions ------------------------------------------------------------------------------

def occurrence(archive, member, n):
    return run("tar", "-xOf", archive, f"--occurrence={n}", member).stdout


@pytest.fixture
def appended(tmp_path):
    """v.tar: f.txt stored three times (tar -r), each time changed; x stored twice beside a
    real member named x.versions; keep.txt once."""
    st = tmp_path / "vs"
    st.mkdir()
    (st / "f.txt").write_bytes(semi_random(3000, 10))
    (st / "keep.txt").write_bytes(b"keep\n")
    (st / "x").write_bytes(b"x one\n")
    (st / "x.versions").write_bytes(b"a real member named x.versions\n")
    (st / "sub").mkdir()
    (st / "sub" / "g").write_bytes(b"g one\n")
    path = str(tmp_path / "v.tar")
    run("tar", "cf", path, "-C", st, "f.txt", "keep.txt", "x", "x.versions", "sub")
    (st / "f.txt").write_bytes(b"second version, shorter\n")
    (st / "x").write_bytes(b"x two\n")
    (st / "sub" / "g").write_bytes(b"g two\n")
    run("tar", "rf", path, "-C", st, "f.txt", "x", "sub/g")
    (st / "f.txt").write_bytes(random_bytes(10_000, 11))
    run("tar", "rf", path, "-C", st, "f.txt")
    return path


def test_versions_from_tar_append(mount, appended):
    with mount(appended) as m:
        f = os.path.join(m.path, "f.txt")
        assert read(f) == occurrence(appended, "f.txt", 3)
        assert read(f) == random_bytes(10_000, 11)
        v = f + ".versions"
        # not listed, but there for lookup and stat
        assert sorted(os.listdir(m.path)) == ["f.txt", "keep.txt", "sub", "x", "x.versions"]
        assert "f.txt.versions" not in [n for n, _, _ in raw_readdir(m.path)]
        assert stat.S_ISDIR(os.stat(v).st_mode)
        assert os.path.isdir(v)
        assert os.listdir(v) == ["1", "2", "3"]
        for n in (1, 2, 3):
            want = occurrence(appended, "f.txt", n)
            assert read(os.path.join(v, str(n))) == want, f"version {n}"
            assert os.stat(os.path.join(v, str(n))).st_size == len(want)
            assert os.getxattr(os.path.join(v, str(n)), "user.tarseek.version") == b"%d" % n
        assert len({occurrence(appended, "f.txt", n) for n in (1, 2, 3)}) == 3
        assert os.getxattr(f, "user.tarseek.versions") == b"3"
        # the newest version is the file itself
        assert os.lstat(os.path.join(v, "3")).st_ino == os.lstat(f).st_ino
        for bad in ("0", "4", "01", "x", "-1"):
            with pytest.raises(FileNotFoundError):
                os.lstat(os.path.join(v, bad))
        # a path stored once has a .versions folder of one
        assert os.listdir(os.path.join(m.path, "keep.txt.versions")) == ["1"]
        with pytest.raises(FileNotFoundError):
            os.lstat(os.path.join(m.path, "nothing.versions"))
        # a real member named x.versions wins over x's versions folder
        xv = os.path.join(m.path, "x.versions")
        assert os.path.isfile(xv)
        assert read(xv) == b"a real member named x.versions\n"
        assert read(os.path.join(m.path, "x")) == b"x two\n"
        # in a subfolder too; readdir of a .versions folder agrees with stat
        sv = os.path.join(m.path, "sub", "g.versions")
        assert os.listdir(os.path.join(m.path, "sub")) == ["g"]
        assert [read(os.path.join(sv, n)) for n in os.listdir(sv)] == [b"g one\n", b"g two\n"]
        for name, ino, dtype in raw_readdir(v):
            st = os.lstat(os.path.join(v, name))
            assert (ino, dtype) == (st.st_ino, DT[stat.S_IFREG]), name
        assert os.getxattr(v, "user.tarseek.kind") == b"versions"


def test_versions_across_sources(mount, tmp_path, appended):
    st = str(tmp_path / "second")
    write(st, "f.txt", b"the second source's f\n")
    write(st, "new.txt", b"new\n")
    second = str(tmp_path / "second.tar.gz")
    make_archive(second, st, ["gzip", "-c"])
    st3 = str(tmp_path / "third")
    write(st3, "new.txt", b"new in the folder\n")
    with mount(appended, second, st3) as m:
        f = os.path.join(m.path, "f.txt")
        assert read(f) == b"the second source's f\n"
        v = f + ".versions"
        assert os.listdir(v) == ["1", "2", "3", "4"]
        for n in (1, 2, 3):
            p = os.path.join(v, str(n))
            assert read(p) == occurrence(appended, "f.txt", n)
            assert src_of(p) == os.path.realpath(appended)
        assert read(os.path.join(v, "4")) == b"the second source's f\n"
        assert src_of(os.path.join(v, "4")) == os.path.realpath(second)
        nv = os.path.join(m.path, "new.txt.versions")
        assert os.listdir(nv) == ["1", "2"]
        assert read(os.path.join(nv, "1")) == b"new\n"
        assert src_of(os.path.join(nv, "1")) == os.path.realpath(second)
        assert read(os.path.join(nv, "2")) == b"new in the folder\n"
        assert src_of(os.path.join(nv, "2")) == os.path.realpath(st3)
        assert "f.txt.versions" not in os.listdir(m.path)


def test_hard_link_shows_version_at_link_time(mount, tmp_path):
    st = tmp_path / "hl"
    st.mkdir()
    f, g = st / "f", st / "g"
    f.write_bytes(b"version one\n")
    path = str(tmp_path / "h.tar")
    run("tar", "cf", path, "-C", st, "f")
    f.write_bytes(b"version two, when g was linked\n")
    os.link(f, g)
    run("tar", "rf", path, "-C", st, "f", "g")
    f.unlink()
    f.write_bytes(b"version three, after the link\n")
    run("tar", "rf", path, "-C", st, "f")
    # the archive is what the test thinks it is
    listing = run("tar", "tvf", path).stdout.decode()
    assert "g link to f" in listing, listing
    ref = tmp_path / "ref"
    ref.mkdir()
    run("tar", "xf", path, "-C", ref)
    assert (ref / "g").read_bytes() == b"version two, when g was linked\n"
    with mount(path) as m:
        assert read(os.path.join(m.path, "f")) == b"version three, after the link\n"
        assert read(os.path.join(m.path, "g")) == (ref / "g").read_bytes()
        assert os.path.getsize(os.path.join(m.path, "g")) == len(b"version two, when g was linked\n")
        assert os.listdir(os.path.join(m.path, "f.versions")) == ["1", "2", "3"]
        assert read(os.path.join(m.path, "f.versions", "2")) == read(os.path.join(m.path, "g"))
        # g is not the same file as the newest f
        assert os.lstat(os.path.join(m.path, "g")).st_ino != \
            os.lstat(os.path.join(m.path, "f")).st_ino


# ---- archives inside archives --------------------------------------------------------------

DEEP = semi_random(300_000, 20)


@pytest.fixture
def nest(tmp_path):
    """outer.tar.gz holding inner.tar.xz (holding data.txt.gz and notes.txt), plain.tar
    (holding p.txt), a file named plain (so plain.tar keeps its extension with
    --strip-extension), readme.txt and sub/more.txt.  Returns (archive, {member: bytes})."""
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "data.txt").write_bytes(DEEP)
    run("gzip", inner / "data.txt")  # keeps the name data.txt in the gzip header
    (inner / "notes.txt").write_bytes(b"notes in the xz layer\n")
    outer = tmp_path / "outer"
    outer.mkdir()
    make_archive(str(outer / "inner.tar.xz"), str(inner), ["xz", "-c"])
    pl = tmp_path / "pl"
    pl.mkdir()
    (pl / "p.txt").write_bytes(b"in the plain tar\n" * 100)
    make_archive(str(outer / "plain.tar"), str(pl))
    (outer / "plain").write_bytes(b"a file that takes the stripped name\n")
    (outer / "readme.txt").write_bytes(b"readme\n")
    (outer / "sub").mkdir()
    (outer / "sub" / "more.txt").write_bytes(b"more\n")
    folder = tmp_path / "nest"
    folder.mkdir()
    path = str(folder / "outer.tar.gz")
    make_archive(path, str(outer), ["gzip", "-c"])
    members = {p: v[1] for p, v in tree_of(outer).items() if v[0] == "file"}
    return path, members


def manual_extraction(archive, dest):
    """Extracts archive, then every archive inside it, in place of the member (a folder of
    the same name), the way -r shows them: tar for tars, gunzip for a .gz."""
    os.makedirs(dest)
    run("tar", "xf", archive, "-C", dest)
    todo = [dest]
    while todo:
        d = todo.pop()
        for n in sorted(os.listdir(d)):
            p = os.path.join(d, n)
            if os.path.isdir(p):
                todo.append(p)
            elif n.endswith((".tar", ".tar.gz", ".tar.xz")):
                tmp = p + ".x"
                os.mkdir(tmp)
                run("tar", "xf", p, "-C", tmp)
                os.unlink(p)
                os.rename(tmp, p)
                todo.append(p)
            elif n.endswith(".gz"):
                tmp = p + ".x"
                os.mkdir(tmp)
                with open(os.path.join(tmp, n[:-3]), "wb") as out:
                    subprocess.run(["gunzip", "-c", p], stdout=out, check=True)
                os.unlink(p)
                os.rename(tmp, p)


def test_nested_read_through_three_layers(mount, tmp_path, nest):
    path, _ = nest
    ref = str(tmp_path / "manual")
    manual_extraction(path, ref)
    want = tree_of(ref)
    assert want["inner.tar.xz/data.txt.gz/data.txt"] == ("file", DEEP)
    with mount("-r", path) as m:
        got = mounted_tree(m.path)
        assert sorted(got) == sorted(want)
        for p in want:
            assert got[p][0] == want[p][0], p
            assert got[p][1] == want[p][1], p
        deep = os.path.join(m.path, "inner.tar.xz", "data.txt.gz", "data.txt")
        assert os.path.getsize(deep) == len(DEEP)
        # reads at offsets inside the third layer
        with open(deep, "rb") as f:
            for off in (0, 1, 65_535, 150_001, len(DEEP) - 7):
                f.seek(off)
                assert f.read(1000) == DEEP[off:off + 1000], off
        for p in ("inner.tar.xz", "inner.tar.xz/data.txt.gz", "plain.tar"):
            assert stat.S_ISDIR(os.lstat(os.path.join(m.path, p)).st_mode), p
    assert any("archive" in line and "inside indexed" in line for line in m.log().splitlines()), \
        m.log()


def test_nested_without_r_members_are_files(mount, tmp_path, nest):
    path, members = nest
    with mount(path) as m:
        got = mounted_tree(m.path)
        assert {p for p, v in got.items() if v[0] == "file"} == set(members)
        for p, data in members.items():
            assert got[p][1] == data, p
        assert got["inner.tar.xz"][1][:6] == b"\xfd7zXZ\0"


def test_recursion_depth_one(mount, tmp_path, nest):
    path, members = nest
    with mount("--recursion-depth", "1", path) as m:
        j = lambda p: os.path.join(m.path, p)
        assert os.path.isdir(j("inner.tar.xz")) and os.path.isdir(j("plain.tar"))
        assert sorted(os.listdir(j("inner.tar.xz"))) == ["data.txt.gz", "notes.txt"]
        gz = j("inner.tar.xz/data.txt.gz")
        assert os.path.isfile(gz)
        assert read(gz) == read(str(tmp_path / "inner" / "data.txt.gz"))
        assert read(j("plain.tar/p.txt")) == b"in the plain tar\n" * 100
        assert read(j("inner.tar.xz/notes.txt")) == b"notes in the xz layer\n"


def test_strip_extension(mount, tmp_path, nest):
    path, _ = nest
    with mount("-r", "--strip-extension", path) as m:
        j = lambda p: os.path.join(m.path, p)
        assert sorted(os.listdir(m.path)) == ["inner", "plain", "plain.tar", "readme.txt", "sub"]
        assert os.path.isdir(j("inner"))
        # the sibling "plain" already takes the stripped name: plain.tar keeps its own
        assert os.path.isfile(j("plain")) and os.path.isdir(j("plain.tar"))
        assert read(j("plain")) == b"a file that takes the stripped name\n"
        assert sorted(os.listdir(j("inner"))) == ["data.txt", "notes.txt"]
        assert os.path.isdir(j("inner/data.txt"))
        assert read(j("inner/data.txt/data.txt")) == DEEP
        with pytest.raises(FileNotFoundError):
            os.lstat(j("inner.tar.xz"))


def test_nested_second_mount_decodes_nothing(mount, tmp_path, nest):
    path, members = nest
    with mount("-r", path) as m:
        deep = os.path.join(m.path, "inner.tar.xz", "data.txt.gz", "data.txt")
        assert read(deep) == DEEP
        assert decoders_started(m.path) > 0
    assert indexed(m.log()), m.log()
    with mount("-r", "--no-prefetch", path) as m2:  # prefetch would decode, by design
        assert os.getxattr(m2.path, "user.tarseek.decoders_started") == b"0"
        n = 0
        for dirpath, dirnames, filenames in os.walk(m2.path):
            for name in dirnames + filenames:
                os.lstat(os.path.join(dirpath, name))
                n += 1
        assert n == 10  # the whole tree, three layers deep, was listed
        assert os.getxattr(m2.path, "user.tarseek.decoders_started") == b"0"
        assert os.getxattr(m2.path, "user.tarseek.decoded_bytes") == b"0"
        assert read(os.path.join(m2.path, "inner.tar.xz", "data.txt.gz", "data.txt")) == DEEP
        assert decoders_started(m2.path) > 0
        assert int(os.getxattr(m2.path, "user.tarseek.decoded_bytes")) >= len(DEEP)
    assert indexed(m2.log()) == [], m2.log()


# ---- tarseek-index -------------------------------------------------------------------------

def tarseek_index(*args):
    if not os.path.exists(TARSEEK_INDEX):
        pytest.fail(f"{TARSEEK_INDEX} is not built")
    return subprocess.run([TARSEEK_INDEX, *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_tarseek_index_then_mount(mount, tmp_path):
    folder = tmp_path / "arch"
    folder.mkdir()
    st = str(tmp_path / "st")
    write(st, "a.txt", semi_random(100_000, 30))
    write(st, "b/c.txt", b"c\n")
    path = str(folder / "t.tar.gz")
    make_archive(path, st, ["gzip", "-c"])
    index = path + ".index.sqlite"

    r = tarseek_index("--check", path)
    assert r.returncode == 1, r
    assert r.stdout == f"{path}: no index\n", r
    assert not os.path.exists(index)

    r = tarseek_index(path)
    assert r.returncode == 0, r
    assert r.stdout == f"{path}: index built at {index}\n", r
    assert os.path.isfile(index)
    before = os.stat(index).st_mtime_ns

    with mount(path) as m:
        assert read(os.path.join(m.path, "a.txt")) == semi_random(100_000, 30)
    assert indexed(m.log()) == [], m.log()
    assert os.stat(index).st_mtime_ns == before

    r = tarseek_index("--check", path)
    assert r.returncode == 0, r
    assert r.stdout == f"{path}: index valid at {index}\n", r
    # other options shape another index: stale for them
    r = tarseek_index("--check", "-r", path)
    assert r.returncode == 1, r
    assert r.stdout == f"{path}: stale index\n", r
    r = tarseek_index("--check", "--strip-extension", "-r", path)
    assert r.returncode == 1, r
    # and --check changed nothing
    assert os.stat(index).st_mtime_ns == before
    r = tarseek_index("--check", path)
    assert r.returncode == 0, r


def test_tarseek_index_folder_and_recursive(mount, tmp_path, nest):
    path, _ = nest
    ixdir = tmp_path / "indexes"
    ixdir.mkdir()
    r = tarseek_index("--check", "-r", "--index-folder", ixdir, path)
    assert r.returncode == 1 and "no index" in r.stdout, r
    r = tarseek_index("-r", "--index-folder", ixdir, path)
    assert r.returncode == 0, r
    made = os.listdir(ixdir)
    assert len(made) == 1 and made[0].endswith(".index.sqlite"), made
    assert r.stdout == f"{path}: index built at {ixdir / made[0]}\n", r
    assert not os.path.exists(path + ".index.sqlite")
    r = tarseek_index("--check", "-r", "--index-folder", ixdir, path)
    assert r.returncode == 0 and "index valid at" in r.stdout, r
    # the index beside the archive does not exist: --check without the folder says so
    r = tarseek_index("--check", "-r", path)
    assert r.returncode == 1, r
    with mount("-r", "--no-prefetch", "--index-folder", ixdir, path) as m:
        assert os.getxattr(m.path, "user.tarseek.decoders_started") == b"0"
        assert read(os.path.join(m.path, "inner.tar.xz", "data.txt.gz", "data.txt")) == DEEP
        assert info(os.path.join(m.path, "readme.txt"))["index"] == str(ixdir / made[0])
    assert indexed(m.log()) == [], m.log()
    assert os.listdir(ixdir) == made
    assert not os.path.exists(path + ".index.sqlite")


def test_tarseek_index_several_archives(tmp_path):
    paths = []
    for i in range(3):
        st = str(tmp_path / f"st{i}")
        write(st, "f", b"%d\n" % i)
        p = str(tmp_path / f"a{i}.tar")
        make_archive(p, st)
        paths.append(p)
    assert tarseek_index(paths[0]).returncode == 0
    r = tarseek_index("--check", *paths)
    assert r.returncode == 1, r
    lines = r.stdout.splitlines()
    assert lines == [f"{paths[0]}: index valid at {paths[0]}.index.sqlite",
                     f"{paths[1]}: no index", f"{paths[2]}: no index"], r
    r = tarseek_index("-q", *paths)
    assert r.returncode == 0, r
    assert tarseek_index("--check", *paths).returncode == 0
    r = tarseek_index("--check", str(tmp_path / "missing.tar"))
    assert r.returncode == 1 and "missing.tar" in r.stderr + r.stdout, r


# ---- many sources --------------------------------------------------------------------------

N_MANY = 200


def test_200_archives_in_one_union(mount, tmp_path):
    codecs = codecs_usable()
    stages = tmp_path / "stages"
    stages.mkdir()
    folder = tmp_path / "many"
    folder.mkdir()
    paths, want = [], {}
    procs = []
    for i in range(N_MANY):
        st = str(stages / str(i))
        files = {"common.txt": b"archive %d\n" % i,
                 f"own/{i:03d}.txt": semi_random(100 + i * 7, i),
                 f"group{i % 10}/f{i:03d}": b"%d\n" % i * (i % 5 + 1)}
        for rel, data in files.items():
            write(st, rel, data)
            want[rel] = data
        compress, suffix = codecs[i % len(codecs)]
        p = str(folder / f"a{i:03d}{suffix}")
        paths.append(p)
        tar = ["tar", "cf", "-", "-C", st, "."]
        with open(p, "wb") as out:
            if compress is None:
                procs.append(subprocess.Popen(tar, stdout=out))
            else:
                t = subprocess.Popen(tar, stdout=subprocess.PIPE)
                procs.append(subprocess.Popen(compress, stdin=t.stdout, stdout=out))
                t.stdout.close()
                procs.append(t)
        if len(procs) > 64:
            for pr in procs:
                assert pr.wait() == 0
            procs = []
    for pr in procs:
        assert pr.wait() == 0
    want["common.txt"] = b"archive %d\n" % (N_MANY - 1)
    dirs = {"own"} | {f"group{g}" for g in range(10)}

    with mount(*paths) as m:
        found = run("find", m.path, "-mindepth", "1", "-printf", "%P\\n").stdout.decode()
        found = found.splitlines()
        assert len(found) == len(want) + len(dirs)
        assert set(found) == set(want) | dirs
        for rel, data in want.items():
            assert read(os.path.join(m.path, rel)) == data, rel
        assert src_of(os.path.join(m.path, "common.txt")) == os.path.realpath(paths[-1])
        assert len(os.listdir(os.path.join(m.path, "common.txt.versions"))) == N_MANY
        assert read(os.path.join(m.path, "common.txt.versions", "1")) == b"archive 0\n"
        assert read(os.path.join(m.path, "common.txt.versions", "57")) == b"archive 56\n"
        assert read(os.path.join(m.path, "common.txt.versions", str(N_MANY))) == \
            b"archive %d\n" % (N_MANY - 1)
        assert sorted(os.listdir(os.path.join(m.path, "common.txt.versions")), key=int) == \
            [str(k) for k in range(1, N_MANY + 1)]
        fds = len(os.listdir(f"/proc/{m.proc.pid}/fd"))
        print(f"\n{N_MANY} archives ({len(codecs)} codecs): the daemon holds {fds} descriptors")
        assert fds < 1.5 * N_MANY + 32, f"{fds} open descriptors for {N_MANY} archives"
    assert len(indexed(m.log())) == N_MANY
