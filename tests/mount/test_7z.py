"""7z archives made by the real 7-Zip (7zz), mounted and compared with what `7zz x` extracts
from the same archive (every path, type, mode, size, mtime, symlink target and byte:
conftest.compare_trees).

- The standard tree (plus unicode names that need UTF-16 surrogate pairs, names with
  backslashes, colons and wildcards, empty files and folders, symlinks stored with -snl):
  solid and non-solid, -mx1/-mx5/-mx9, -m0=Copy, LZMA, BZip2, Deflate, a header not
  compressed; a second mount reuses the index.
- The BCJ, BCJ2, ARM64 and RISCV filters on ELF binaries (and RISC-V-like code; RISCV also
  over Deflate, Copy and LZMA); multi-threaded LZMA2 (-mmt2) of 40 MiB,
  decoded while indexing with a checkpoint at the dictionary resets, read at many random
  offsets; an archive of stdin (-si, from a pipe and from a file); an empty archive and one
  of empty files and folders only.
- -r: a .7z inside a .tar.gz and a .tar.gz inside a .7z; user.tarseek.info.
- A Swap4 folder (a filter 7zz writes that tarseek lacks; PPMd reads since issue 38,
  test_ppmd.py) and an AES folder (-psecret -mhe=off, no --password) among readable ones:
  listed with their sizes, reads fail with EOPNOTSUPP / EACCES, the rest reads; encrypted
  headers (-mhe=on): the mount is refused with a message that says so.
- Damage: a flipped byte in packed data (a small folder: EIO on its first read; a large one:
  found while indexing; a solid folder: its later files), truncations, flipped bytes in the
  signature header and the next header, trailing garbage, damage after indexing: EIO, a clean
  refusal or fewer members, never wrong bytes, and the daemon survives (test_damage.py's
  daemon-with-deadlines and judge).

What `7zz x` cannot give, and how the comparison copes:
- owners: the 7z format stores none (7zz -snoi is for tar).  Extracted files belong to whoever
  extracts; the mount shows uid 0 and gid 0 for everything.  compare_trees skips owners, and
  the mount's 0:0 is checked on its own.
- hard links: 7zz without -snh stores each name as a file of its own; both trees then hold
  separate files, and the hard-link identity check compares that.
- setuid, setgid and sticky bits: the archive keeps them (7zz l shows "-rwsr-xr-x"), `7zz x`
  drops them (and applies the umask: it runs with umask 0 here).  Symlinks 7-Zip calls
  dangerous (absolute ones: it rewrites their target inside the output folder; ones that climb
  above the archive's root, which even -snld refuses: it writes an empty file instead).  For
  these few paths the reference is repaired from 7-Zip's own reading of the archive -- the
  mode from `7zz l -slt`, the target from `7zz x -so` of that member, its mtime from the
  listing -- and the test of the standard tree checks that exactly these paths needed it.
"""
import calendar
import errno
import hashlib
import os
import random
import shutil
import sqlite3
import stat
import struct
import time
import zlib

import pytest

from conftest import compare_trees, make_tree, random_bytes, read_errno, run, semi_random
from test_damage import (Daemon, check_no_sanitizer, check_refusal, judge, read_all,
                         text_data)

pytestmark = pytest.mark.skipif(shutil.which("7zz") is None,
                                reason="7zz (Debian package 7zip) is needed")

# 7zz converts names with the locale's charset and prints times in local time: fix both
ENV7 = dict(os.environ, LC_ALL="C.UTF-8", TZ="UTC")


def make_7z(src, archive, *switches, files=(".",)):
    """7zz a of files (relative to src) into archive (a new archive, or one more folder added
    to an existing one)."""
    run("7zz", "a", "-bd", "-bso0", "-bsp0", "-y", *switches, os.path.abspath(archive), *files,
        cwd=src, env=ENV7)
    return archive


def listing(archive):
    """(archive properties, [item properties]) from `7zz l -slt` (times in UTC)."""
    out = run("7zz", "l", "-slt", archive, env=ENV7).stdout.decode()
    head, _, body = out.partition("\n----------\n")
    props = {}
    for line in head.split("\n--\n", 1)[-1].splitlines():
        k, sep, v = line.partition(" = ")
        if sep:
            props[k] = v
    items = []
    for block in body.split("\n\n"):
        d = {}
        for line in block.splitlines():
            k, sep, v = line.partition(" = ")
            if sep:
                d[k] = v
            elif line.endswith(" ="):
                d[line[:-2]] = ""
        if "Path" in d:
            items.append(d)
    return props, items


def unix_mode(attributes):
    """(type letter, permission bits) of an Attributes value such as "A -rwsr-xr-x", or None
    when it has no unix part."""
    s = attributes.split()[-1] if attributes.split() else ""
    if len(s) != 10 or s[0] not in "-dlpcbs":
        return None
    mode = 0
    for i, (who, special) in enumerate(((6, 0o4000), (3, 0o2000), (0, 0o1000))):
        r, w, x = s[1 + 3 * i:4 + 3 * i]
        mode |= (r == "r") << (who + 2) | (w == "w") << (who + 1)
        mode |= (x in "xst") << who
        if x in "sStT":
            mode |= special
    return s[0], mode


def listing_ns(modified):
    """"2020-09-13 12:27:13.1234570" (UTC) in ns."""
    day, clock = modified.split()
    sec, _, frac = clock.partition(".")
    t = calendar.timegm(time.strptime(f"{day} {sec}", "%Y-%m-%d %H:%M:%S"))
    return t * 10**9 + int((frac + "000000000")[:9])


def extract(archive, dest):
    """`7zz x` of archive into dest, as a user restoring it would (umask 0; -snld, which 7zz
    accepts but does not list in its help, to keep relative links that leave their folder),
    then the repairs of the module's docstring.  Returns {path: what was repaired}."""
    os.makedirs(dest, exist_ok=True)
    r = run("7zz", "x", "-snld", "-y", "-bd", "-bsp0", f"-o{dest}", archive, check=False,
            env=ENV7, preexec_fn=lambda: os.umask(0))
    out = (r.stdout + r.stderr).decode(errors="replace")
    odd = [l for l in out.splitlines()
           if "ERROR" in l and "Dangerous link path was ignored" not in l]
    assert r.returncode in (0, 2) and not odd, f"7zz x exited with {r.returncode}:\n{out}"
    assert r.returncode == 0 or "Dangerous link" in out, out
    fixed = {}
    _, items = listing(archive)
    for it in items:
        um = unix_mode(it.get("Attributes", ""))
        if um is None:
            continue
        kind, mode = um
        p = os.path.join(os.fsencode(dest), os.fsencode(it["Path"]))
        if kind == "l":
            target = run("7zz", "x", "-so", "-spd", "-bd", archive, it["Path"],
                         env=ENV7).stdout
            if os.path.islink(p) and os.readlink(p) == target:
                continue
            parent = os.path.dirname(p)
            pst = os.stat(parent)
            os.unlink(p)
            os.symlink(target, p)
            ns = listing_ns(it["Modified"])
            os.utime(p, ns=(ns, ns), follow_symlinks=False)
            os.utime(parent, ns=(pst.st_atime_ns, pst.st_mtime_ns))
            fixed[it["Path"]] = "symlink"
        elif (os.lstat(p).st_mode & 0o7777) != mode:
            os.chmod(p, mode)
            fixed[it["Path"]] = "mode"
    return fixed


def index_of(archive):
    return str(archive) + ".index.sqlite"


def db_rows(archive, sql, *args):
    db = sqlite3.connect(index_of(archive))
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def streams(archive):
    return db_rows(archive, "SELECT codec, crcs, usize FROM streams ORDER BY id")


def checkpoints(archive):
    return db_rows(archive, "SELECT count(*) FROM checkpoints")[0][0]


def info(path):
    """user.tarseek.info of path as a dict."""
    text = os.getxattr(path, "user.tarseek.info", follow_symlinks=False).decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)



def random_reads(path, want, n=80, seed=0):
    rng = random.Random(seed)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert os.fstat(fd).st_size == len(want)
        for _ in range(n):
            off = rng.randrange(0, len(want) + 10)
            length = rng.choice([1, 100, 4096, 65_537, 131_072, 1_000_000, 3_000_000])
            got = os.pread(fd, length, off)
            assert got == want[off:off + length], (
                f"pread({length}, {off}): {len(got)} bytes, "
                f"{'right length' if len(got) == len(want[off:off + length]) else 'wrong length'}"
                f", wrong bytes")
    finally:
        os.close(fd)


def check_mount(mount, archive, ref, **kw):
    """Mounts archive, compares it with ref; the owners are 0:0.  Returns (snapshot, log)."""
    with mount(archive) as m:
        got = compare_trees(m.path, ref, check_root=False, owners=False, **kw)
    others = [(p, n.uid, n.gid) for p, n in got.items() if p != b"." and (n.uid, n.gid) != (0, 0)]
    assert not others, f"7z stores no owner, yet: {others[:5]}"
    return got, m.log()


# ---- the standard tree ------------------------------------------------------------------------

NAMES = ["\u00fcnic\u00f6de \u0444\u0430\u0439\u043b \U0001f600.txt",  # a surrogate pair
         "e\u0301t\u00e9 (combining)", "\u65e5\u672c\u8a9e\u306e\u30d5\u30a1\u30a4\u30eb",
         "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", "back\\slash", "colon:star*q?",
         " lead space", "trail.", "\U0001f389\U0001f600\U0001f4a9"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The standard tree, plus more names, a deep folder and a folder of empty things."""
    base = tmp_path_factory.mktemp("7z-tree")
    src = base / "src"
    make_tree(src)
    names = src / "names"
    names.mkdir()
    for i, n in enumerate(NAMES):
        (names / n).write_bytes(f"name {i}\n".encode())
    (names / "\U0001f4c1 folder").mkdir()
    p = src / "deep"
    for i in range(30):
        p = p / f"level{i:02d}"
    p.mkdir(parents=True)
    (p / "bottom.txt").write_bytes(b"at the bottom\n")
    (src / "empties" / "d1" / "d2").mkdir(parents=True)
    for n in ("e1", "d1/e2", "d1/d2/e3"):
        (src / "empties" / n).write_bytes(b"")
    for dirpath, dirnames, filenames in os.walk(src / "names"):
        for n in dirnames + filenames:
            os.utime(os.path.join(dirpath, n), (1_500_000_000, 1_500_000_000))
    for d in (src / "names", src / "deep", src / "empties"):
        os.utime(d, (1_600_000_000, 1_600_000_000))
    return src


# What `7zz x` gets wrong in the standard tree (see the docstring): repaired from the listing.
TREE_REPAIRS = {"modes/setuid": "mode", "modes/setgid": "mode", "sticky": "mode",
                "links/absolute": "symlink", "long/longlink": "symlink"}

# id: (7zz switches, a word every folder's Method must hold, solid)
VARIANTS = {
    "mx5": ([], "LZMA2", True),
    "mx1": (["-mx1"], "LZMA2", True),
    "mx9": (["-mx9"], "LZMA2", True),
    "non-solid": (["-ms=off"], "LZMA2", False),
    "copy": (["-m0=Copy"], "Copy", False),  # 7-Zip stores each file in a folder of its own
    "lzma": (["-m0=LZMA"], "LZMA:", True),
    "bzip2": (["-m0=BZip2"], "BZip2", True),
    "deflate": (["-m0=Deflate", "-mhc=off"], "Deflate", True),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_tree(mount, tmp_path, tree, variant):
    switches, method, solid = VARIANTS[variant]
    archive = make_7z(tree, tmp_path / "tree.7z", "-snl", *switches)
    props, items = listing(archive)
    files = [i for i in items if i.get("Size", "0") != "0" and not i["Attributes"].startswith("D")]
    assert all(method in i["Method"] for i in files), {i["Method"] for i in files}
    ref = tmp_path / "ref"
    fixed = extract(archive, ref)
    assert fixed == TREE_REPAIRS, fixed
    got, log = check_mount(mount, archive, ref)
    assert len(got) > 80
    assert "indexed tree.7z" in log, log
    # one stream per folder, as 7-Zip counts them ("Blocks")
    s = streams(archive)
    assert {c for c, _, _ in s} == {"7z"} and len(s) == int(props["Blocks"]), (s, props)
    assert (len(s) < 5) == solid, (len(s), props)
    if variant in ("mx5", "non-solid"):
        # the second mount reuses the index and reads the same
        _, log = check_mount(mount, archive, ref)
        assert "indexed" not in log, log


@pytest.fixture(scope="module")
def elf_dir(tmp_path_factory):
    src = tmp_path_factory.mktemp("7z-elf") / "src"
    src.mkdir()
    shutil.copy2("/bin/ls", src / "ls")
    shutil.copy2("/bin/ls", src / "ls.copy")
    (src / "notes.txt").write_bytes(text_data(30_000, 9))
    (src / "rv.bin").write_bytes(riscv_like(400_000, 3))
    return src


def riscv_like(n, seed):
    """RISC-V-like code (no RISC-V binary is at hand here): JALs with rd ra/t0/zero, AUIPC
    followed by an instruction reading its rd (JALR, ADDI, loads) or another register, AUIPCs
    with rd sp (what the filter's special form uses), 16-bit instructions, random words."""
    r = random.Random(seed)
    out = bytearray()
    while len(out) < n:
        c = r.random()
        if c < 0.2:
            out += struct.pack("<I", r.getrandbits(20) << 12 | r.choice([1, 5, 0, 3]) << 7 | 0x6F)
        elif c < 0.45:
            rd = r.choice([1, 5, 6, 10, 11, 2, 0])
            rs1 = rd if r.random() < 0.8 else r.randrange(32)
            out += struct.pack("<I", r.getrandbits(20) << 12 | rd << 7 | 0x17)
            out += struct.pack("<I", r.getrandbits(12) << 20 | rs1 << 15 | r.getrandbits(3) << 12
                               | r.randrange(32) << 7 | r.choice([0x67, 0x13, 0x03, 0x23, 0x01]))
        elif c < 0.65:
            out += struct.pack("<H", r.getrandbits(16))
        else:
            out += struct.pack("<I", r.getrandbits(32))
    return bytes(out[:n])


@pytest.mark.parametrize("filt", ["BCJ", "BCJ2", "ARM64", "RISCV"])
def test_filters_on_elf(mount, tmp_path, elf_dir, filt):
    archive = make_7z(elf_dir, tmp_path / "elf.7z", f"-mf={filt}")
    _, items = listing(archive)
    methods = {i["Path"]: i["Method"] for i in items}
    assert filt in methods["ls"].split(), methods
    ref = tmp_path / "ref"
    assert extract(archive, ref) == {}
    check_mount(mount, archive, ref)


@pytest.mark.parametrize("chain", [("-m0=RISCV", "-m1=Deflate"), ("-m0=RISCV", "-m1=Copy"),
                                   ("-mf=RISCV", "-m0=LZMA")])
def test_riscv_over_other_coders(mount, tmp_path, elf_dir, chain):
    """The RISCV filter (ours: liblzma 5.4 has none) over Deflate, Copy and LZMA, as 7zz
    writes them; 7zz x is the reference."""
    archive = make_7z(elf_dir, tmp_path / "rv.7z", *chain)
    _, items = listing(archive)
    assert "RISCV" in {i["Path"]: i["Method"] for i in items}["rv.bin"].split(), items
    ref = tmp_path / "ref"
    assert extract(archive, ref) == {}
    check_mount(mount, archive, ref)


def test_bcj_multiblock(mount, tmp_path):
    """BCJ over LZMA2 made by two threads, of 8 MiB of this machine's binaries: the scan checks
    each restart candidate against its sequential output (the x86 filter keeps state), so the
    checkpoints must give the same bytes as 7zz x."""
    bins = sorted((os.path.join("/usr/bin", n) for n in os.listdir("/usr/bin")),
                  key=lambda p: (-os.path.getsize(p) if os.path.isfile(p) else 0, p))
    data = bytearray()
    for b in bins:
        if len(data) >= 8 << 20 or not os.path.isfile(b) or os.path.islink(b):
            continue
        with open(b, "rb") as f:
            data += f.read(8 << 20)
    if len(data) < 4 << 20:
        pytest.skip("fewer than 4 MiB of binaries in /usr/bin")
    src = tmp_path / "src"
    src.mkdir()
    (src / "bins").write_bytes(bytes(data[:8 << 20]))
    archive = make_7z(src, tmp_path / "bcj.7z", "-mf=BCJ", "-m0=LZMA2:d=256k", "-mmt2", "-mx1")
    _, items = listing(archive)
    assert items[0]["Method"].split() == ["BCJ", "LZMA2:18"], items[0]
    ref = tmp_path / "ref"
    extract(archive, ref)
    want = (ref / "bins").read_bytes()
    assert want == bytes(data[:8 << 20])
    for seed in (0, 1):
        with mount(archive, "--gzip-spacing", "1") as m:
            random_reads(os.path.join(m.path, "bins"), want, n=60, seed=seed)
    assert checkpoints(archive) >= 6, checkpoints(archive)


# ---- multi-threaded LZMA2: a large folder, random reads ---------------------------------------

@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """(archive, {name: extracted bytes}): 40 MiB of semi-random data between two small files,
    one solid LZMA2 folder made by two threads (-mx1: a 256 KiB dictionary, so 1 MiB blocks,
    each starting with a dictionary reset)."""
    base = tmp_path_factory.mktemp("7z-big")
    src = base / "src"
    src.mkdir()
    data = {"a.txt": b"first\n", "big.bin": semi_random(40 << 20, 7), "z.txt": b"last\n"}
    for n, d in data.items():
        (src / n).write_bytes(d)
    archive = make_7z(src, base / "big.7z", "-mx1", "-mmt2", files=list(data))
    ref = base / "ref"
    extract(archive, ref)
    got = {n: (ref / n).read_bytes() for n in data}
    assert got == data, "7zz x does not give back what was archived"
    return archive, got


def test_lzma2_multithreaded(mount, big):
    archive, files = big
    props, items = listing(archive)
    assert props["Blocks"] == "1" and "LZMA2" in props["Method"], props
    with mount(archive) as m:
        random_reads(os.path.join(m.path, "big.bin"), files["big.bin"])
        for n in ("a.txt", "z.txt"):
            assert open(os.path.join(m.path, n), "rb").read() == files[n]
    assert "indexed" in m.log()
    s = streams(archive)
    assert len(s) == 1 and s[0][1] == 1, s  # decoded while indexing: segment CRCs
    # a checkpoint at a dictionary reset every 4 MiB (the default spacing) or so
    assert checkpoints(archive) >= 8, checkpoints(archive)
    with mount(archive) as m:
        random_reads(os.path.join(m.path, "big.bin"), files["big.bin"], seed=1)
        with open(os.path.join(m.path, "big.bin"), "rb") as f:
            assert f.read() == files["big.bin"]
        assert open(os.path.join(m.path, "z.txt"), "rb").read() == files["z.txt"]
    assert "indexed" not in m.log(), m.log()


# ---- odd archives -----------------------------------------------------------------------------

def test_stdin(mount, tmp_path):
    """-si: from a pipe (7-Zip stores the pipe's mode, prw-------, and no name: the member is
    named after the archive), from a file, and with -siNAME."""
    data = text_data(50_000, 4)
    (tmp_path / "input.txt").write_bytes(data)
    os.chmod(tmp_path / "input.txt", 0o640)
    piped = tmp_path / "piped.7z"
    run("7zz", "a", "-bd", "-bso0", "-si", piped, input=data, env=ENV7)
    redirected = tmp_path / "redirected.7z"
    with open(tmp_path / "input.txt", "rb") as f:
        run("7zz", "a", "-bd", "-bso0", "-si", redirected, stdin=f, env=ENV7)
    named = tmp_path / "named.7z"
    run("7zz", "a", "-bd", "-bso0", "-sidir/given name.txt", named, input=data, env=ENV7)
    for archive, name in ((piped, "piped"), (redirected, "redirected"),
                          (named, "dir/given name.txt")):
        ref = tmp_path / (archive.name + ".ref")
        extract(archive, ref)
        assert (ref / name).read_bytes() == data, os.listdir(ref)
        got, _ = check_mount(mount, archive, ref, implicit=("dir",) if archive is named else ())
        assert os.fsencode(name) in got


def test_empty_archive(mount, tmp_path):
    (tmp_path / "nothing").mkdir()
    archive = make_7z(tmp_path / "nothing", tmp_path / "empty.7z")
    assert archive.stat().st_size == 32  # the signature header alone
    with mount(archive) as m:
        assert os.listdir(m.path) == []


def test_empty_files_and_folders(mount, tmp_path):
    """No packed stream at all: the header lists empty files and folders only."""
    src = tmp_path / "src"
    (src / "a" / "b" / "c").mkdir(parents=True)
    (src / "empty dir").mkdir()
    for n in ("zero", "a/zero2", "a/b/c/zero3"):
        (src / n).write_bytes(b"")
    os.chmod(src / "a" / "zero2", 0o600)
    for p in ("a/b/c/zero3", "a/b/c", "a/b", "a/zero2", "a", "empty dir", "zero"):
        os.utime(src / p, (1_600_000_000, 1_600_000_000))
    archive = make_7z(src, tmp_path / "empties.7z")
    props, _ = listing(archive)
    assert props["Blocks"] == "0", props
    ref = tmp_path / "ref"
    extract(archive, ref)
    got, _ = check_mount(mount, archive, ref)
    assert len(got) == 8 and streams(archive) == []


# ---- with the rest of tarseek -----------------------------------------------------------------

def test_nested(mount, tmp_path):
    """-r: a .7z inside a .tar.gz, a .tar.gz and a .7z inside a .7z, read through every layer."""
    inner = tmp_path / "inner"
    (inner / "d").mkdir(parents=True)
    (inner / "d" / "f.txt").write_bytes(text_data(50_000, 1))
    (inner / "g.bin").write_bytes(random_bytes(20_000, 2))
    box = tmp_path / "box"
    box.mkdir()
    make_7z(inner, box / "in.7z")
    run("tar", "czf", box / "in.tar.gz", "-C", inner, ".")
    outer_7z = make_7z(box, tmp_path / "outer.7z")
    outer_tgz = tmp_path / "outer.tar.gz"
    run("tar", "czf", outer_tgz, "-C", box, "in.7z")
    want = {"d/f.txt": (inner / "d" / "f.txt").read_bytes(),
            "g.bin": (inner / "g.bin").read_bytes()}
    with mount("-r", outer_7z, outer_tgz) as m:
        for top in ("in.7z", "in.tar.gz"):
            d = os.path.join(m.path, top)
            assert os.path.isdir(d), (top, os.listdir(m.path))
            for rel, data in want.items():
                assert open(os.path.join(d, rel), "rb").read() == data, (top, rel)
            assert info(os.path.join(d, "d", "f.txt"))["format"] == (
                "7z" if top == "in.7z" else "tar")
        # in.7z is the tar.gz's member (the last source wins); its own 7z members say so
        assert info(os.path.join(m.path, "in.7z", "g.bin"))["codec"] == "7z"
    # without -r they are files, whose bytes are the archives'
    with mount(outer_7z) as m:
        assert open(os.path.join(m.path, "in.7z"), "rb").read() == (box / "in.7z").read_bytes()
        assert open(os.path.join(m.path, "in.tar.gz"), "rb").read() == \
            (box / "in.tar.gz").read_bytes()


def test_info_attribute(mount, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_bytes(text_data(10_000, 3))
    (src / "b.bin").write_bytes(random_bytes(10_000, 4))
    archive = make_7z(src, tmp_path / "i.7z", "-snl")
    with mount(archive) as m:
        for n, size in (("a.txt", 10_000), ("b.bin", 10_000)):
            x = info(os.path.join(m.path, n))
            assert x["format"] == "7z" and x["codec"] == "7z" and x["kind"] == "archive", x
            assert x["source"] == str(archive) and int(x["size"]) == size, x
        assert "user.tarseek.info" not in os.listxattr(os.path.join(m.path, "a.txt"))


# ---- folders tarseek cannot read ------------------------------------------------------------

def test_swap4_and_aes(mount, tmp_path):
    """Four folders, added one by one: Swap4, LZMA2, AES (-psecret -mhe=off), LZMA2."""
    src = tmp_path / "src"
    src.mkdir()
    files = {"swap4.txt": text_data(100_000, 1), "plain.txt": text_data(150_000, 2),
             "secret.txt": text_data(40_000, 3), "after.txt": text_data(300, 4)}
    for n, d in files.items():
        (src / n).write_bytes(d)
    archive = tmp_path / "mixed.7z"
    make_7z(src, archive, "-m0=Swap4", files=["swap4.txt"])
    make_7z(src, archive, files=["plain.txt"])
    make_7z(src, archive, "-psecret", "-mhe=off", files=["secret.txt"])
    make_7z(src, archive, files=["after.txt"])
    _, items = listing(archive)
    methods = {i["Path"]: i["Method"] for i in items}
    assert "Swap4" in methods["swap4.txt"] and "7zAES" in methods["secret.txt"], methods
    with mount(archive, allow_errors=True) as m:
        j = lambda p: os.path.join(m.path, p)
        assert sorted(os.listdir(m.path)) == sorted(files)
        for n, d in files.items():
            assert os.stat(j(n)).st_size == len(d), n  # listed with their sizes
        assert read_errno(j("swap4.txt")) == errno.EOPNOTSUPP
        assert read_errno(j("secret.txt")) == errno.EACCES
        for n in ("plain.txt", "after.txt"):
            assert open(j(n), "rb").read() == files[n], n
        # the failure is the same the second time (nothing half-decoded is kept)
        assert read_errno(j("swap4.txt")) == errno.EOPNOTSUPP
    log = m.log()
    assert "Swap4" in log and "encrypted" in log, log
    assert len(streams(archive)) == 3  # the AES folder's: it decodes with a password


def test_encrypted_headers_refused(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "f.txt").write_bytes(b"secret\n")
    archive = make_7z(src, tmp_path / "hidden.7z", "-psecret", "-mhe=on")
    d = Daemon(archive, tmp_path / "mnt", tmp_path / "log")
    if d.mounted:
        d.stop()
        raise AssertionError("an archive with encrypted headers was mounted:\n" + d.log())
    check_refusal(d.proc.returncode, d.log(), archive)
    assert "encrypted" in d.log() and "password" in d.log(), d.log()


# ---- damage ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def damage_src(tmp_path_factory):
    """(folder, {name: bytes}): small texts, a 3 MiB text (decoded while indexing with
    --gzip-spacing 0.25, which allows whole mode up to 1 MiB), a random file."""
    base = tmp_path_factory.mktemp("7z-damage")
    src = base / "src"
    (src / "d").mkdir(parents=True)
    files = {"a.txt": text_data(2000, 1), "d/small.txt": text_data(60_000, 2),
             "d/big.txt": text_data(3 << 20, 3), "d/random.bin": random_bytes(200_000, 4),
             "z.txt": text_data(3000, 5)}
    for n, d in files.items():
        (src / n).write_bytes(d)
    return src, files


def make_damage_7z(damage_src, path, *switches):
    """Makes the archive; returns (bytes, {member: (offset, length) of its folder's packed
    data}).  7-Zip writes the packed streams right after the 32-byte signature header, folder
    after folder, and lists each folder's packed size at its first file."""
    src, files = damage_src
    make_7z(src, path, "-mx1", *switches, files=list(files))
    _, items = listing(path)
    packed, block_of = {}, {}
    for it in items:
        if it.get("Block", "") != "":
            b = int(it["Block"])
            block_of[it["Path"]] = b
            if it.get("Packed Size", "") != "":
                packed[b] = int(it["Packed Size"])
    start, at = {}, 32
    for b in sorted(packed):
        start[b] = at
        at += packed[b]
    where = {n: (start[b], packed[b]) for n, b in block_of.items()}
    return path.read_bytes(), where


def refusal_line(rc, log, archive):
    """test_damage.check_refusal without its rule that the message names the archive (7z
    messages do not yet: test_refusals_name_the_archive): exit status 1, only tarseek's lines,
    no sanitizer report.  Returns the last error line."""
    assert rc == 1, f"tarseek exited with {rc} (expected 1 for a refusal):\n{log}"
    check_no_sanitizer(log)
    lines = [l for l in log.splitlines() if l.strip()]
    assert lines, "refused without a message"
    odd = [l for l in lines if not l.startswith("tarseek")]
    assert not odd, "lines that are not tarseek messages:\n" + log
    errors = [l for l in lines if ": error:" in l]
    return (errors or lines)[-1]


def outcome(tmp_path, archive, files, *args, name="x", header_hit=False):
    """Mounts (or sees it refused), reads everything, judges: ("refused: ...", log) or
    (counts, log).  header_hit: the header's fields were damaged past its CRC, so EOPNOTSUPP is
    a fine failure too (a method id was hit), and a member may show under a damaged name if
    its bytes are some original member's."""
    d = Daemon(archive, tmp_path / f"mnt-{name}", tmp_path / f"log-{name}", *args)
    if not d.mounted:
        return "refused: " + refusal_line(d.proc.returncode, d.log(), archive), d.log()
    try:
        listing_ = read_all(d)
    except BaseException:
        d.kill()
        raise
    log = d.stop()
    counts, problems = judge(listing_, files)
    if header_hit:
        problems = [p for p in problems if "errno 95" not in p]
        originals = {hashlib.sha256(d).hexdigest() for d in files.values()}
        for rel, r in listing_["files"].items():
            if rel not in files and r["whole"][0] == "ok" and r["whole"][2] in originals:
                problems = [p for p in problems if not p.startswith(repr(rel))]
                counts["absent"] -= 1  # it is here, under another name
                counts["renamed"] = counts.get("renamed", 0) + 1
    if counts["absent"] > 0 and not any(": warning:" in l or ": error:" in l
                                    for l in log.splitlines()):
        problems.append(f"{counts['absent']} members not shown, and no warning says so")
    assert not problems, "\n".join(problems) + "\n--- daemon log:\n" + log
    return counts, log


def flip(data, off, mask=0x55):
    b = bytearray(data)
    b[off] ^= mask
    return bytes(b)


@pytest.mark.parametrize("method", ["LZMA2", "Copy", "BZip2"])
def test_damage_small_folder(tmp_path, damage_src, method):
    """Non-solid: a flipped byte in d/small.txt's folder fails its reads with EIO (whole mode
    checks its CRC before any byte is returned); the other folders read."""
    archive = tmp_path / "d.7z"
    data, where = make_damage_7z(damage_src, archive, "-ms=off", f"-m0={method}")
    off, n = where["d/small.txt"]
    archive.write_bytes(flip(data, off + n // 2))
    counts, log = outcome(tmp_path, archive, damage_src[1])
    assert counts == {"intact": len(damage_src[1]) - 1, "eio": 1, "as-stored": 0,
                      "absent": 0}, (counts, log)


def test_damage_riscv_folder(tmp_path, damage_src):
    """A flipped byte under the RISCV filter (over Copy, so no coder below notices): the
    file's CRC fails, EIO; the other folders read."""
    archive = tmp_path / "d.7z"
    data, where = make_damage_7z(damage_src, archive, "-ms=off", "-m0=RISCV", "-m1=Copy")
    off, n = where["d/small.txt"]
    archive.write_bytes(flip(data, off + n // 2))
    counts, log = outcome(tmp_path, archive, damage_src[1])
    assert counts == {"intact": len(damage_src[1]) - 1, "eio": 1, "as-stored": 0,
                      "absent": 0}, (counts, log)


def test_damage_large_folder(tmp_path, damage_src):
    """A flipped byte in the 3 MiB folder: found while indexing, EIO; the others intact."""
    archive = tmp_path / "d.7z"
    data, where = make_damage_7z(damage_src, archive, "-ms=off")
    off, n = where["d/big.txt"]
    archive.write_bytes(flip(data, off + n // 2))
    counts, log = outcome(tmp_path, archive, damage_src[1], "--gzip-spacing", "0.25")
    assert counts["eio"] == 1 and counts["intact"] == len(damage_src[1]) - 1, (counts, log)
    assert "indexed" in log and ("CRC" in log or "damaged" in log or "corrupt" in log), log


def test_damage_solid_folder(tmp_path, damage_src):
    """One solid folder, a byte flipped in its middle: the files decoded before the damage may
    read, the rest fail with EIO; never other bytes."""
    archive = tmp_path / "d.7z"
    data, where = make_damage_7z(damage_src, archive)
    assert len(set(where.values())) == 1
    off, n = where["a.txt"]
    archive.write_bytes(flip(data, off + n // 2))
    counts, log = outcome(tmp_path, archive, damage_src[1])
    assert counts["eio"] >= 1, (counts, log)


LINKS = {"link1": "a.txt", "link2": "some/long/target/path"}


@pytest.mark.parametrize("case", ["solid", "crc", "large"])
def test_damaged_symlinks(mount, tmp_path, case):
    """Symlinks stored with -snl (their target is their data) in a damaged folder: listed as
    symlinks of their target's length, readlink fails with EIO and the log says why -- never
    an empty or wrong target (issue 38).  solid: a byte flipped in the middle of one solid
    LZMA2 folder, the links decoded after it (the small folder whose targets cannot be read
    while indexing: readlink reads through the folder's reader); crc: -ms=off -m0=Copy, a byte
    flipped in link2's target (its CRC-32 fails while indexing: marked damaged); large: a
    3 MiB folder decoded while indexing (--gzip-spacing 0.25), the links past the damage.

    7-Zip (`7zz x`), the format's own tool: solid and large report "Data Error" naming each
    link and create neither; crc reports "CRC Failed : link2" and still writes the damaged
    target (as it writes a damaged file's bytes).  Ours is EIO in every case: the rule's
    "damage is a refusal or EIO", where 7-Zip's exit status is its only refusal."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_bytes(text_data(3 << 20 if case == "large" else 200_000, 1))
    for name, target in LINKS.items():
        os.symlink(target, src / name)
    switches = ["-snl", "-mx1"] + (["-ms=off", "-m0=Copy"] if case == "crc" else [])
    archive = make_7z(src, tmp_path / "l.7z", *switches, files=["a.txt", *LINKS])
    data = archive.read_bytes()
    _, items = listing(archive)
    assert [i["Path"] for i in items] == ["a.txt", *LINKS], items  # the links decode last
    if case == "crc":
        at = data.index(LINKS["link2"].encode()) + 3
    else:
        at = 32 + int(items[0]["Packed Size"]) // 2
    archive.write_bytes(flip(data, at))
    ref = run("7zz", "x", "-snld", "-y", "-bd", f"-o{tmp_path / 'ref'}", archive, check=False,
              env=ENV7)
    out = ref.stdout.decode() + ref.stderr.decode()
    assert ref.returncode != 0, out
    bad = ["link2"] if case == "crc" else list(LINKS)
    for name in bad:
        assert ("CRC Failed : " if case == "crc" else "Data Error : ") + name in out, out
        assert case == "crc" or not os.path.lexists(tmp_path / "ref" / name), out
    args = ["--gzip-spacing", "0.25"] if case == "large" else []
    with mount(archive, *args, allow_errors=True) as m:
        for name, target in LINKS.items():
            p = os.path.join(m.path, name)
            st = os.lstat(p)
            assert stat.S_ISLNK(st.st_mode) and st.st_size == len(target), (name, st)
            if name not in bad:
                assert os.readlink(p) == target
                continue
            for _ in range(2):  # the same the second time
                with pytest.raises(OSError) as e:
                    os.readlink(p)
                assert e.value.errno == errno.EIO, (name, e.value)
        assert read_errno(os.path.join(m.path, "a.txt")) == (None if case == "crc"
                                                             else errno.EIO)
    log = m.log()
    assert "CRC" in log or "corrupt" in log or "damaged" in log, log


def with_sig_crcs(data, next_header=None):
    """data with the signature header's CRCs made right again (of the next header too: what
    a writer with a bug, or damage in memory before the CRCs were computed, would give)."""
    b = bytearray(data)
    off, size = struct.unpack_from("<QQ", b, 12)
    if next_header is not None:
        start = 32 + off
        b[start:start + size] = next_header
    struct.pack_into("<I", b, 28, zlib.crc32(b[32 + off:32 + off + size]))
    struct.pack_into("<I", b, 8, zlib.crc32(b[12:32]))
    return bytes(b)


def damage_cases(data, where):
    """name -> (damaged bytes, whether the header's fields may be hit).  The signature header's
    fields, the packed (LZMA) header of a compressed one, the next header (its CRC catches a
    flip: then the same flips with the CRCs made right, so that the parser meets them),
    truncations, bytes appended."""
    off, size = struct.unpack_from("<QQ", data, 12)
    nh = 32 + off  # the next header: the header, or the encoded header that says where it is
    assert nh + size == len(data), (off, size, len(data))
    packed_end = max(o + n for o, n in where.values())  # a compressed header's packed bytes
    cases = {
        "flip-magic": flip(data, 2),
        "flip-version": flip(data, 6, 0x01),
        "flip-start-header-crc": flip(data, 9),
        "flip-next-header-offset": flip(data, 13, 0x01),
        "flip-next-header-size": flip(data, 20, 0x01),
        "flip-next-header-crc": flip(data, 29),
        "flip-next-header-first": flip(data, nh),
        "flip-next-header-middle": flip(data, nh + size // 2),
        "flip-next-header-last": flip(data, len(data) - 1),
        "next-header-offset-minus-1": with_sig_crcs(data[:12] + struct.pack("<Q", off - 1) +
                                                    data[20:]),
        "next-header-size-plus-1": with_sig_crcs(data[:20] + struct.pack("<Q", size + 1) +
                                                 data[28:]),
        "trunc-signature-only": data[:32],
        "trunc-31": data[:31],
        "trunc-10%": data[:len(data) // 10],
        "trunc-50%": data[:len(data) // 2],
        "trunc-90%": data[:len(data) * 9 // 10],
        "trunc-in-header": data[:nh + size // 2],
        "trunc-last-byte": data[:-1],
        "garbage-appended": data + random_bytes(1000, 7),
        "signature-appended": data + data[:32],
    }
    if packed_end < nh:
        for k, at in enumerate((packed_end, (packed_end + nh) // 2, nh - 1)):
            cases[f"flip-packed-header-{k}"] = flip(data, at)
    cases = {k: (v, False) for k, v in cases.items()}
    # every 7th byte of the next header flipped, with the CRCs made right
    header = data[nh:]
    for k in range(1, len(header), 7):
        cases[f"header-byte-{k}-crc-fixed"] = (with_sig_crcs(data, flip(header, k)), True)
    return cases


# case -> outcome, for the summary printed at the end of the matrix
RESULTS = {}


@pytest.mark.parametrize("header", ["compressed", "plain"])
def test_damage_matrix(tmp_path, damage_src, header):
    """Every case mounts with members intact or failing with EIO (never wrong bytes, never a
    short file shown whole; a member under a damaged name only with some member's bytes), or is
    refused cleanly; the daemon survives.  Bytes after the archive change nothing."""
    clean = tmp_path / "clean.7z"
    data, where = make_damage_7z(damage_src, clean, "-ms=off",
                                 *(["-mhc=off"] if header == "plain" else []))
    for name, (bad, header_hit) in damage_cases(data, where).items():
        archive = tmp_path / f"{name}.7z"
        archive.write_bytes(bad)
        counts, log = outcome(tmp_path, archive, damage_src[1], name=name,
                              header_hit=header_hit)
        RESULTS[f"{header}:{name}"] = counts
        if name in ("garbage-appended", "signature-appended"):
            assert not isinstance(counts, str) and counts["intact"] == len(damage_src[1]), \
                (name, counts, log)
        archive.unlink()
        if os.path.exists(index_of(archive)):
            os.unlink(index_of(archive))
    print("\n".join(f"{k}: {v}" for k, v in RESULTS.items() if k.startswith(header)))


def test_refusals_name_the_archive(tmp_path, damage_src):
    """test_damage's rule for a refusal: the message names the archive (as zip's do)."""
    clean = tmp_path / "clean.7z"
    data, where = make_damage_7z(damage_src, clean, "-ms=off")
    cases = damage_cases(data, where)
    unnamed = []
    for name in ("flip-start-header-crc", "flip-next-header-last", "trunc-50%", "trunc-31",
                 "flip-next-header-first"):
        archive = tmp_path / f"{name}.7z"
        archive.write_bytes(cases[name][0])
        d = Daemon(archive, tmp_path / f"mnt-{name}", tmp_path / f"log-{name}")
        assert not d.mounted, d.stop()
        refusal_line(d.proc.returncode, d.log(), archive)
        if archive.name not in d.log():
            unnamed.append(f"{name}: {d.log().strip()}")
    assert not unnamed, "refusals that do not name the archive:\n  " + "\n  ".join(unnamed)


@pytest.mark.parametrize("kind", ["copy", "lzma2-40MiB"])
def test_damage_after_indexing(tmp_path, damage_src, big, kind):
    """Index, then flip a byte in the middle of a large folder keeping size and mtime (where
    the fingerprint -- the first and last MiB -- does not look): the index is reused, that
    folder's file fails with EIO, the others read right.  copy: the 3 MiB text in a Copy folder
    (decoded while indexing with --gzip-spacing 0.25: segment CRCs); lzma2-40MiB: the
    multi-threaded LZMA2 archive, its decoders started at checkpoints."""
    archive = tmp_path / "d.7z"
    if kind == "copy":
        data, where = make_damage_7z(damage_src, archive, "-ms=off", "-m0=Copy")
        files = damage_src[1]
        off, n = where["d/big.txt"]
        args = ("--gzip-spacing", "0.25")
    else:
        shutil.copyfile(big[0], archive)
        files = big[1]
        data = archive.read_bytes()
        _, items = listing(archive)
        off, n = 32, int(next(i["Packed Size"] for i in items if i["Path"] == "a.txt"))
        args = ()
    assert off + n // 2 > (1 << 20) and off + n // 2 < len(data) - (1 << 20)
    d = Daemon(archive, tmp_path / "mnt1", tmp_path / "log1", "--no-prefetch", *args)
    assert d.mounted, d.log()
    d.stop()
    st = archive.stat()
    with open(archive, "r+b") as f:
        f.seek(off + n // 2)
        f.write(bytes([data[off + n // 2] ^ 0xff]))
    os.utime(archive, ns=(st.st_atime_ns, st.st_mtime_ns))
    counts, log = outcome(tmp_path, archive, files, *args, name="after")
    assert "indexed" not in log, log
    assert counts["eio"] == 1 and counts["intact"] == len(files) - 1, (counts, log)


# ---- other writers -----------------------------------------------------------------------------

@pytest.mark.skipif(not shutil.which("bsdtar"), reason="bsdtar is needed")
@pytest.mark.parametrize("compression", ["lzma2", "deflate", "store"])
def test_bsdtar_7zip(mount, tmp_path, tree, compression):
    """libarchive's 7z writer (bsdtar --format 7zip), compared with what 7zz extracts."""
    archive = tmp_path / "bsd.7z"
    run("bsdtar", "--format", "7zip", "--options", f"7zip:compression={compression}",
        "-cf", archive, "-C", tree, ".")
    ref = tmp_path / "ref"
    extract(archive, ref)
    got, log = check_mount(mount, archive, ref)
    assert len(got) > 80
    assert "indexed bsd.7z" in log, log
