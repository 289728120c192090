"""Damaged archives (issue 6, part 2): a matrix over every codec -- gzip, bzip2, xz with many
blocks and with one, zstd, lzop and plain tar -- of one ~3 MB tar with ten members, compressed
by the real tool and then damaged: truncated (10 %, 50 %, 90 %, after the header, one byte
short), a flipped byte in the magic, in another header field, in the compressed data (three
spots), in the checksums and trailers each format has, garbage appended (plain, and starting
with the format's magic), and a zero-length file.

Every case runs the daemon with deadlines (60 s to mount or give up, 60 s for all the reads,
done in a child process so a hung FUSE request fails the test instead of blocking the suite).
The outcome must be one of:
  * refused: exit status 1, a message on stderr naming the archive, every line starting with
    "tarseek" (no crash report, no sanitizer report);
  * mounted: every listed member either reads exactly the original bytes (whole, and at three
    offsets read separately) with the original st_size, or fails with EIO.  Never other
    bytes, never a short file presented as complete, never another errno.  A plain tar has
    no checksum of its data, so a flipped data byte reads as the archive stores it; that is
    accepted for plain tar only, and only with exactly that byte changed.
and the daemon exits 0 after the unmount, without a sanitizer report.

The default suite runs a seeded sample of the matrix (45 of its 110 cases: every
format-specific case, every common kind of damage and every codec at least once); meson's
`slow` suite (TARSEEK_MATRIX=all) runs every case.

How each case ended is printed as a table at the end of the run (and written to
damage-summary.txt in pytest's base temporary folder).

Two more tests: the archive changes size while mounted (appended to, truncated in place):
reads give the old right bytes or EIO; and damage after indexing (a byte flipped in the
compressed data, size and mtime kept, in the middle where the fingerprint does not look):
the index is reused, reads of the damaged region fail with EIO, the rest reads right.
"""
import hashlib
import json
import os
import random
import subprocess
import sys
import tarfile
import time

import pytest

from conftest import (text_data, SANITIZER_MARKS, TARSEEK, is_mounted, print_past_capture, random_bytes,
                      require_codec, require_tool, run, sample_cases, semi_random)

MOUNT_TIMEOUT = 60
READ_TIMEOUT = 60



# The members, in archive order: (name, maker, size).  ~3.1 MB in all, small ones at both
# ends so that damage in the middle leaves some members whole.
MEMBERS = [
    ("a/first.txt", text_data, 300),
    ("a/small.bin", random_bytes, 5_000),
    ("b/text1.txt", text_data, 600_000),
    ("b/semi1.bin", semi_random, 500_000),
    ("c/random.bin", random_bytes, 200_000),
    ("c/text2.txt", text_data, 700_000),
    ("d/semi2.bin", semi_random, 400_000),
    ("d/text3.txt", text_data, 500_000),
    ("e/small.txt", text_data, 1_000),
    ("e/last.bin", semi_random, 300_000),
]

# name: (codec as tarseek names it, compressor argv (stdin -> stdout), suffix)
CODECS = {
    "gzip": ("gzip", ["gzip", "-6", "-c"], ".tar.gz"),
    "bzip2": ("bzip2", ["bzip2", "-1", "-c"], ".tar.bz2"),
    "xz-multi": ("xz", ["xz", "-1", "-T2", "--block-size=256KiB", "-c"], ".tar.xz"),
    "xz-single": ("xz", ["xz", "-1", "-T1", "-c"], ".tar.xz"),
    "zstd": ("zstd", ["zstd", "-q", "-3", "-c"], ".tar.zst"),
    "lzo": ("lzo", ["lzop", "-c"], ".tar.lzo"),
    "tar": (None, None, ".tar"),
}

MAGIC = {"gzip": b"\x1f\x8b\x08\x00", "bzip2": b"BZh91AY&SY", "xz-multi": b"\xfd7zXZ\x00",
         "xz-single": b"\xfd7zXZ\x00", "zstd": b"\x28\xb5\x2f\xfd",
         "lzo": b"\x89LZO\x00\r\n\x1a\n", "tar": b"ustar"}


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    """(source folder, tar path, {name: bytes}, {name: data offset in the tar})."""
    base = tmp_path_factory.mktemp("damage-tree")
    src = base / "src"
    files = {}
    for i, (name, make, size) in enumerate(MEMBERS):
        data = make(size, 100 + i)
        files[name] = data
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    tar = base / "tree.tar"
    run("tar", "cf", tar, "--format=gnu", "-C", src, *[m[0] for m in MEMBERS])
    with tarfile.open(tar) as t:
        offsets = {m.name: (m.offset, m.offset_data) for m in t.getmembers()}
    return src, tar, files, offsets


_compressed = {}


def compressed(original, kind):
    """The clean archive of kind (bytes), made once per run."""
    if kind not in _compressed:
        codec, argv, _ = CODECS[kind]
        _, tar, _, _ = original
        if argv is None:
            _compressed[kind] = tar.read_bytes()
        else:
            with open(tar, "rb") as i:
                r = subprocess.run(argv, stdin=i, capture_output=True, check=True)
            _compressed[kind] = r.stdout
    return _compressed[kind]


# ---- where things are in each format ---------------------------------------------------------

def xz_blocks(data, tmp_path):
    """[(compressed offset, total size, check size)] of the blocks of an .xz file."""
    p = tmp_path / "probe.xz"
    p.write_bytes(data)
    out = run("xz", "--robot", "--list", "-vv", p).stdout.decode()
    blocks = []
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "block":
            # block stream n-in-stream n-in-file cpos upos csize usize ratio check ...
            check = {"CRC64": 8, "CRC32": 4, "SHA-256": 32, "None": 0}[f[9]]
            blocks.append((int(f[4]), int(f[6]), check))
    return blocks


def lzop_layout(data):
    """(header length, flags, [(block header offset, block header length, clen)])."""
    assert data[:9] == MAGIC["lzo"]
    version = int.from_bytes(data[9:11], "big")
    p = 9 + 2 + 2
    if version >= 0x0940:
        p += 2  # version needed
    p += 1  # method
    if version >= 0x0940:
        p += 1  # level
    flags = int.from_bytes(data[p:p + 4], "big")
    p += 4
    if flags & 0x800:
        p += 4  # filter
    p += 4 + 4  # mode, mtime low
    if version >= 0x0940:
        p += 4  # mtime high
    p += 1 + data[p] + 4  # name length, name, header checksum
    hlen = p
    assert not flags & 0x40, "extra field"
    blocks = []
    while True:
        ulen = int.from_bytes(data[p:p + 4], "big")
        if ulen == 0:
            break
        clen = int.from_bytes(data[p + 4:p + 8], "big")
        n = 8 + 4 * (bool(flags & 1) + bool(flags & 0x100))
        if clen < ulen:
            n += 4 * (bool(flags & 2) + bool(flags & 0x200))
        blocks.append((p, n, clen))
        p += n + clen
    return hlen, flags, blocks


def zstd_header_len(data):
    fhd = data[4]
    single = (fhd >> 5) & 1
    return (4 + 1 + (0 if single else 1) + [0, 1, 2, 4][fhd & 3] +
            [1 if single else 0, 2, 4, 8][fhd >> 6])


def header_len(kind, data):
    return {"gzip": 10, "bzip2": 4, "xz-multi": 12, "xz-single": 12, "tar": 512,
            "zstd": zstd_header_len(data) if kind == "zstd" else 0,
            "lzo": lzop_layout(data)[0] if kind == "lzo" else 0}[kind]


def flip(data, off, mask=0xff):
    b = bytearray(data)
    b[off] ^= mask
    return bytes(b)


def tar_data_spots(original, fractions):
    """Offsets inside member data (not headers) near the given fractions of the tar."""
    _, tar, files, offsets = original
    size = tar.stat().st_size
    spots = []
    for fr in fractions:
        want = int(size * fr)
        for name, (hdr, data_off) in sorted(offsets.items(), key=lambda kv: kv[1]):
            if data_off <= want < data_off + len(files[name]):
                spots.append(want)
                break
        else:
            raise AssertionError(f"no member data at {want}")
    return spots


# Damage variants common to every format: name -> function(kind, clean bytes, ctx) -> bytes.
def _common_variants():
    v = {
        "trunc-10%": lambda k, d, c: d[:len(d) // 10],
        "trunc-50%": lambda k, d, c: d[:len(d) // 2],
        "trunc-90%": lambda k, d, c: d[:len(d) * 9 // 10],
        "trunc-header-only": lambda k, d, c: d[:header_len(k, d)],
        "trunc-last-byte": lambda k, d, c: d[:-1],
        "flip-magic": lambda k, d, c: flip(d, 0 if k != "tar" else 257),
        "garbage-appended": lambda k, d, c: d + random_bytes(1000, 77),
        "garbage-with-magic": lambda k, d, c: d + MAGIC[k] + random_bytes(1000, 78),
        "zero-length": lambda k, d, c: b"",
    }
    for fr in (25, 50, 75):
        v[f"flip-data-{fr}%"] = (lambda fr: lambda k, d, c: flip(
            d, tar_data_spots(c["original"], [fr / 100])[0] if k == "tar"
            else len(d) * fr // 100))(fr)
    return v


def _xz_block_check(k, d, c):
    blocks = xz_blocks(d, c["tmp_path"])
    off, total, check = blocks[1] if len(blocks) > 1 else blocks[0]
    assert check > 0
    return flip(d, off + total - 1)


def _xz_index(k, d, c):
    backward = (int.from_bytes(d[-8:-4], "little") + 1) * 4
    return flip(d, len(d) - 12 - backward + 3)


def _lzo_block_checksum(k, d, c):
    hlen, flags, blocks = lzop_layout(d)
    assert flags & 1  # adler32 of the decompressed data
    off, n, clen = blocks[len(blocks) // 2]
    return flip(d, off + 8)


def _tar_member_header(original, index):
    _, _, _, offsets = original
    return sorted(offsets.values())[index][0]


SPECIFIC = {
    "gzip": {
        "flip-header-flags": lambda k, d, c: flip(d, 3),
        "flip-header-method": lambda k, d, c: flip(d, 2),
        "flip-trailer-crc32": lambda k, d, c: flip(d, len(d) - 8),
        "flip-trailer-isize": lambda k, d, c: flip(d, len(d) - 4, 0x01),
    },
    "bzip2": {
        "flip-header-level": lambda k, d, c: flip(d, 3),
        "flip-block-magic": lambda k, d, c: flip(d, 5),
        "flip-block-crc": lambda k, d, c: flip(d, 10),
        "flip-stream-crc": lambda k, d, c: flip(d, len(d) - 2),
    },
    "xz-multi": {
        "flip-header-flags": lambda k, d, c: flip(d, 7),
        "flip-block-check": _xz_block_check,
        "flip-index": _xz_index,
        "flip-footer-crc": lambda k, d, c: flip(d, len(d) - 12),
        "flip-footer-magic": lambda k, d, c: flip(d, len(d) - 1),
    },
    "xz-single": {
        "flip-header-flags": lambda k, d, c: flip(d, 7),
        "flip-block-check": _xz_block_check,
        "flip-index": _xz_index,
        "flip-footer-crc": lambda k, d, c: flip(d, len(d) - 12),
        "flip-footer-magic": lambda k, d, c: flip(d, len(d) - 1),
    },
    "zstd": {
        "flip-header-descriptor": lambda k, d, c: flip(d, 4, 0x04),  # checksum flag off
        "flip-header-window": lambda k, d, c: flip(d, 5),
        "flip-content-checksum": lambda k, d, c: flip(d, len(d) - 1),
    },
    "lzo": {
        "flip-header-method": lambda k, d, c: flip(d, 15),
        "flip-header-checksum": lambda k, d, c: flip(d, lzop_layout(d)[0] - 1),
        "flip-block-checksum": _lzo_block_checksum,
        "flip-end-marker": lambda k, d, c: flip(d, len(d) - 1),
    },
    "tar": {
        "flip-first-header-name": lambda k, d, c: flip(d, 10),
        "flip-header-checksum": lambda k, d, c: flip(
            d, _tar_member_header(c["original"], 4) + 150, 0x01),
        "flip-header-size": lambda k, d, c: flip(
            d, _tar_member_header(c["original"], 6) + 124 + 5, 0x01),
        "flip-end-of-archive": lambda k, d, c: flip(
            d, len(d) - 1024 + 100 if d[-1024:] == bytes(1024) else len(d) - 1),
    },
}

COMMON = _common_variants()
ALL_CASES = [(k, v) for k in CODECS for v in list(COMMON) + list(SPECIFIC.get(k, {}))]
# 110 cases, of which 84 are the twelve common kinds of damage over the seven codecs.  The
# default suite runs a sample (conftest.sample_cases): every format-specific case (29), every
# common kind of damage and every codec at least once, 45 in all; TARSEEK_MATRIX=all (meson
# test --suite slow) runs them all.
CASES = sample_cases(ALL_CASES, 45, lambda c: c[1] if c[1] in COMMON else c, lambda c: c[0],
                     name="damage")
if os.environ.get("TARSEEK_INFLATE") == "zlib":  # test_damage_zlib: every gzip case
    CASES = [c for c in ALL_CASES if c[0] == "gzip"]



# case id -> outcome text, for the summary table
RESULTS = {}


@pytest.fixture(scope="module", autouse=True)
def summary(request, tmp_path_factory):
    yield
    if not RESULTS:
        return
    width = max(len(k) for k in RESULTS)
    lines = ["", "damage matrix (case -> outcome):"]
    for key in sorted(RESULTS, key=lambda k: (list(CODECS).index(k.split(":")[0]), k)):
        lines.append(f"  {key:<{width}}  {RESULTS[key]}")
    text = "\n".join(lines) + "\n"
    path = tmp_path_factory.getbasetemp() / "damage-summary.txt"
    path.write_text(text)
    print_past_capture(request.config, text + f"(also in {path})")


# ---- running the daemon with deadlines -------------------------------------------------------

# Reads everything under the mount point; prints JSON: per regular file its st_size, the
# result of reading it whole (sha256 or errno) and of three separate reads at offsets.
READER = r'''
import hashlib, json, os, stat, sys
root = sys.argv[1]
out = {"files": {}, "errors": [], "others": []}
def slices(size):
    return sorted({(0, 4096), (size // 2, 5000), (max(0, size - 3000), 3000)})
def walk(d):
    try:
        names = sorted(os.listdir(d))
    except OSError as e:
        out["errors"].append([os.path.relpath(d, root), e.errno])
        return
    for n in names:
        p = os.path.join(d, n)
        rel = os.path.relpath(p, root)
        try:
            st = os.lstat(p)
        except OSError as e:
            out["errors"].append([rel, e.errno])
            continue
        if stat.S_ISDIR(st.st_mode):
            walk(p)
            continue
        if not stat.S_ISREG(st.st_mode):
            out["others"].append(rel)
            continue
        r = {"size": st.st_size, "slices": []}
        h = hashlib.sha256()
        got = 0
        try:
            with open(p, "rb") as f:
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    h.update(b)
                    got += len(b)
            r["whole"] = ["ok", got, h.hexdigest()]
        except OSError as e:
            r["whole"] = ["err", e.errno]
        for off, n in slices(st.st_size):
            try:
                fd = os.open(p, os.O_RDONLY)
                try:
                    b = os.pread(fd, n, off)
                finally:
                    os.close(fd)
                r["slices"].append([off, n, "ok", hashlib.sha256(b).hexdigest()])
            except OSError as e:
                r["slices"].append([off, n, "err", e.errno])
        out["files"][rel] = r
walk(root)
print(json.dumps(out))
'''


class Daemon:
    """tarseek -f started with a deadline: .mounted, or .rc and .log after it gave up."""

    def __init__(self, archive, mnt, log_path, *args, timeout=MOUNT_TIMEOUT, tarseek=None):
        self.mnt = str(mnt)
        self.log_path = log_path
        os.makedirs(self.mnt, exist_ok=True)
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen([tarseek or TARSEEK, "-f", *map(str, args),
                                          str(archive), self.mnt],
                                         stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        self.mounted = False
        while time.monotonic() < deadline:
            if is_mounted(self.mnt):
                self.mounted = True
                return
            if self.proc.poll() is not None:
                return
            time.sleep(0.01)
        self.kill()
        raise AssertionError(f"tarseek neither mounted nor gave up within {timeout} s:\n"
                             f"{self.log()}")

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], stderr=subprocess.DEVNULL)

    def stop(self):
        """Unmounts and checks the daemon's exit: 0, no signal, no sanitizer report."""
        if is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], stderr=subprocess.DEVNULL)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("tarseek did not exit within 30 s of the unmount")
        out = self.log()
        assert self.proc.returncode >= 0, f"tarseek died of signal {-self.proc.returncode}:\n{out}"
        assert self.proc.returncode == 0, f"tarseek exited with {self.proc.returncode}:\n{out}"
        check_no_sanitizer(out)
        return out


def check_no_sanitizer(log):
    bad = [line for line in log.splitlines() if any(s in line for s in SANITIZER_MARKS)]
    assert not bad, "sanitizer report:\n" + log


def read_all(daemon, timeout=READ_TIMEOUT):
    """Everything under the mount, read by a child process with a deadline: a hang kills the
    daemon (which aborts the hung requests) and fails the test."""
    try:
        r = subprocess.run([sys.executable, "-c", READER, daemon.mnt], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        log = daemon.log()
        daemon.kill()
        raise AssertionError(f"reading the mount took over {timeout} s (a hang?):\n{log}")
    assert r.returncode == 0, f"reader failed:\n{r.stderr}"
    return json.loads(r.stdout)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def judge(listing, files, as_stored=None):
    """Checks what the mount showed against the original members: returns (counts, problems).

    as_stored: {name: bytes} accepted instead of the original (plain tar whose data was
    changed: tar keeps no checksum of data, so the mount shows what the archive holds)."""
    counts = {"intact": 0, "eio": 0, "as-stored": 0, "absent": 0}
    problems = []
    got = listing["files"]
    for name, data in files.items():
        if name not in got:
            counts["absent"] += 1
    for name, r in sorted(got.items()):
        if name not in files:
            problems.append(f"{name!r}: listed but not a member of the original")
            continue
        want = files[name]
        alt = (as_stored or {}).get(name)
        reads = [("whole", r["whole"], 0, len(want))] + [
            (f"pread({s[0]}, {s[1]})", s[2:], s[0], s[1]) for s in r["slices"]]
        kinds = []
        for what, res, off, n in reads:
            if res[0] == "err":
                if res[1] != 5:
                    problems.append(f"{name}: {what} failed with errno {res[1]} "
                                    f"({os.strerror(res[1])}), not EIO")
                kinds.append("err")
                continue
            if res[-1] == sha(want[off:off + n]):
                kinds.append("orig")
            elif alt is not None and res[-1] == sha(alt[off:off + n]):
                kinds.append("stored")
            else:
                kinds.append("wrong")
                problems.append(f"{name}: {what} returned wrong bytes" +
                                (f" ({res[1]} bytes; the original has {len(want)})"
                                 if what == "whole" else ""))
        if any(k != "err" for k in kinds) and r["size"] != len(want):
            problems.append(f"{name}: st_size {r['size']}, the original has {len(want)}")
        if kinds[0] == "orig":
            counts["intact"] += 1
        elif kinds[0] == "stored":
            counts["as-stored"] += 1
        elif r["whole"][0] == "err" and r["whole"][1] == 5:
            counts["eio"] += 1
    for rel, e in listing["errors"]:
        if e != 5:
            problems.append(f"{rel}: listing failed with errno {e} ({os.strerror(e)})")
    return counts, problems


def check_refusal(rc, log, archive):
    assert rc == 1, f"tarseek exited with {rc} (expected 1 for a refusal):\n{log}"
    check_no_sanitizer(log)
    lines = [l for l in log.splitlines() if l.strip()]
    assert lines, "refused without a message"
    odd = [l for l in lines if not l.startswith("tarseek")]
    assert not odd, "lines that are not tarseek messages:\n" + log
    assert os.path.basename(archive) in log, f"the message does not name the archive:\n{log}"
    errors = [l for l in lines if ": error:" in l]
    return (errors or lines)[-1]


def outcome_text(counts, total):
    parts = [f"mounted, {counts['intact']} of {total} intact"]
    if counts["eio"]:
        parts.append(f"{counts['eio']} EIO")
    if counts["as-stored"]:
        parts.append(f"{counts['as-stored']} as stored (tar has no data checksum)")
    if counts["absent"]:
        parts.append(f"{counts['absent']} not listed")
    return ", ".join(parts)


def short_message(line, archive):
    line = line.replace(str(archive), os.path.basename(archive))
    return line if len(line) <= 110 else line[:107] + "..."


def require_kind(kind):
    codec, argv, _ = CODECS[kind]
    if argv:
        require_tool(argv[0])
        require_codec(codec)


# ---- the matrix ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,variant", CASES, ids=[f"{k}:{v}" for k, v in CASES])
def test_damaged_archive(tmp_path, original, kind, variant):
    require_kind(kind)
    _, _, files, _ = original
    clean = compressed(original, kind)
    ctx = {"original": original, "tmp_path": tmp_path}
    fn = COMMON.get(variant) or SPECIFIC[kind][variant]
    bad = fn(kind, clean, ctx)
    assert bad != clean or variant == "garbage-appended", "the damage changed nothing"
    archive = tmp_path / ("tree" + CODECS[kind][2])
    archive.write_bytes(bad)
    as_stored = None
    if kind == "tar" and variant.startswith("flip-data"):
        # the one member whose data holds the flipped byte may read as stored
        _, _, _, offsets = original
        as_stored = {}
        for name, (hdr, data_off) in offsets.items():
            if data_off <= len(bad) and bad[data_off:data_off + len(files[name])] != files[name]:
                as_stored[name] = bad[data_off:data_off + len(files[name])]
        assert len(as_stored) == 1

    key = f"{kind}:{variant}"
    d = Daemon(archive, tmp_path / "mnt", tmp_path / "log")
    if not d.mounted:
        msg = check_refusal(d.proc.returncode, d.log(), archive)
        RESULTS[key] = "refused: " + short_message(msg, archive)
        assert not variant.startswith("garbage"), \
            f"{key}: a complete archive followed by garbage was refused:\n{d.log()}"
        return
    try:
        listing = read_all(d)
    except BaseException:
        d.kill()
        raise
    log = d.stop()
    counts, problems = judge(listing, files, as_stored)
    if counts["absent"]:
        # members were left out: the user must be told why
        if not any(": warning:" in l or ": error:" in l for l in log.splitlines()):
            problems.append(f"{counts['absent']} members not shown, and no warning says so")
    if variant.startswith("garbage"):
        # the archive before the garbage is whole and passed its checks: all of it shows
        if counts["intact"] != len(files):
            problems.append("garbage after a complete archive hid or broke members "
                            f"({counts['intact']} of {len(files)} intact)")
    RESULTS[key] = outcome_text(counts, len(files)) + (" -- WRONG: " + problems[0]
                                                       if problems else "")
    assert not problems, f"{key}: " + "\n".join(problems) + "\n--- daemon log:\n" + log


# ---- the archive changes while mounted -----------------------------------------------------

def decodable_prefix(kind, data):
    """How many bytes of the tar a decoder can produce from data (a truncated archive)."""
    import lzma
    import zlib
    if kind == "tar":
        return len(data)
    if kind == "gzip":
        return len(zlib.decompressobj(31).decompress(data))
    if kind == "xz-multi":
        return len(lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(data))
    raise AssertionError(kind)


def chunk_starts(index):
    """The decoded offsets at which the index's checkpoints start ([] for a plain tar)."""
    import sqlite3
    db = sqlite3.connect(index)
    try:
        return sorted(r[0] for r in db.execute("SELECT uoff FROM checkpoints"))
    finally:
        db.close()


@pytest.mark.parametrize("change", ["append", "truncate"])
@pytest.mark.parametrize("kind", ["tar", "gzip", "xz-multi"])
def test_archive_changes_size_while_mounted(tmp_path, original, kind, change):
    """Appending to or truncating (in place, same inode) the archive under a running mount:
    reads give the right bytes (from before the change, or unaffected by it) or EIO, never
    other bytes, and the daemon neither crashes nor hangs.

    A plain tar has no checksum of its members' data: once its file is not the one opened
    (another size or modification time), every read that reaches the daemon fails with EIO and
    a log line naming the member -- an append and a rewrite in place look alike -- and the
    kernel's cached pages of its files are dropped (fs/watch.h).  Only the member read before
    the change may still come intact, from pages the kernel held until the watch dropped them.

    After a truncation the outcome of each member follows from what was decodable and what
    was decoded: a member whose chunks all lie before the chunk the new end falls in reads
    intact; a member that starts past both the new end's decodable bytes and the first chunk
    (the only one the first read may have decoded, its rest in the background at most) has
    nothing it could be served from and fails with EIO; members in between may do either."""
    require_kind(kind)
    _, _, files, offsets = original
    archive = tmp_path / ("tree" + CODECS[kind][2])
    index = tmp_path / "index"
    clean = compressed(original, kind)
    archive.write_bytes(clean)
    # --no-prefetch: no warm-up or readahead filling the kernel's page cache with every member
    # before the change.  The index is built by a mount of its own first, so that the mount
    # under test decodes only what is read
    Daemon(archive, tmp_path / "mnt", tmp_path / "log0", "--no-prefetch", "--index-file",
           index).stop()
    starts = chunk_starts(index)
    d = Daemon(archive, tmp_path / "mnt", tmp_path / "log", "--no-prefetch", "--index-file",
               index)
    assert d.mounted, d.log()
    try:
        # read the first member before the change, so caches hold part of the data
        first = sorted(files)[0]
        assert (tmp_path / "mnt" / first).read_bytes() == files[first]
        with open(archive, "r+b") as f:
            if change == "append":
                f.seek(0, os.SEEK_END)
                f.write(random_bytes(300_000, 5))
            else:
                f.truncate(len(clean) * 6 // 10)
        listing = read_all(d)
    except BaseException:
        d.kill()
        raise
    log = d.stop()
    assert "info: indexed" not in log and "rebuilding" not in log, \
        "the mount under test built the index (the test needs it built before):\n" + log
    counts, problems = judge(listing, files)
    key = f"{kind}:changed-while-mounted-{change}"
    RESULTS[key] = outcome_text(counts, len(files)) + (" -- WRONG: " + problems[0]
                                                       if problems else "")
    assert not problems, "\n".join(problems) + "\n--- daemon log:\n" + log
    assert counts["absent"] == 0  # the listing comes from the index, made before the change
    if kind == "tar":
        how = {n: r["whole"][0] for n, r in listing["files"].items()}
        assert all(how[n] == "err" for n in files if n != first), (how, log)
        assert f"{os.path.basename(sorted(files)[1])}: the archive changed" in log, log
        return
    if change == "append":
        assert counts["intact"] == len(files), counts
        return
    usable = decodable_prefix(kind, clean[:len(clean) * 6 // 10])
    # the start of the chunk the new end falls in (a plain tar: the new end itself), and the
    # end of the first chunk (what the read of the first member may have had decoded)
    cut_chunk = max([u for u in starts if u <= usable], default=usable)
    first_end = starts[1] if len(starts) > 1 else 0
    kept = [n for n, (_, off) in offsets.items() if n in files and off + len(files[n]) <= cut_chunk]
    gone = [n for n, (_, off) in offsets.items() if n in files and off >= max(usable, first_end)]
    assert kept and gone, (kept, gone, usable, cut_chunk)  # the cut leaves both kinds
    how = {n: r["whole"][0] for n, r in listing["files"].items()}
    assert all(how[n] == "ok" for n in kept), (
        f"members wholly before the new end failed: {how} (kept {kept})\n{log}")
    assert all(how[n] == "err" for n in gone), (
        f"members past the new end were served: {how} (gone {gone}; decodable {usable} "
        f"bytes, chunks at {starts})\n{log}")
    assert ": error:" in log, "the failed reads were not logged:\n" + log


# ---- damage after indexing -------------------------------------------------------------------

# Members for an archive that stays over 2 MiB compressed (mostly incompressible), so that a
# byte flipped in its middle is outside the first and last MiB the fingerprint covers.
BIG_MEMBERS = [("first.txt", text_data, 20_000)] + [
    (f"mid/r{i}.bin", random_bytes if i % 2 else semi_random, 700_000) for i in range(6)] + [
    ("last.txt", text_data, 20_000)]

# codecs whose checkpoints decode independently (a damaged chunk leaves later ones readable)
INDEPENDENT = {"gzip", "bzip2", "xz-multi", "lzo"}


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("damage-big")
    src = base / "src"
    files = {}
    for i, (name, make, size) in enumerate(BIG_MEMBERS):
        files[name] = make(size, 200 + i)
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(files[name])
    tar = base / "big.tar"
    run("tar", "cf", tar, "--format=gnu", "-C", src, *[m[0] for m in BIG_MEMBERS])
    return tar, files


@pytest.mark.parametrize("kind", [k for k in CODECS if k != "tar"])
def test_damage_after_indexing(tmp_path, big_tree, kind):
    """Index, unmount, flip a byte in the middle of the compressed data keeping size and
    mtime (the fingerprint looks at the first and last MiB only), mount again: the index is
    reused, the member over the damaged spot fails with EIO, the first member (and with
    independent checkpoints the last) reads right, nothing reads wrong."""
    require_kind(kind)
    tar, files = big_tree
    codec, argv, suffix = CODECS[kind]
    archive = tmp_path / ("big" + suffix)
    with open(tar, "rb") as i, open(archive, "wb") as o:
        subprocess.run(argv, stdin=i, stdout=o, check=True)
    size = archive.stat().st_size
    assert size > 2 * 2**20 + 200_000, size
    args = ["--gzip-spacing", "0.25"]
    d = Daemon(archive, tmp_path / "mnt1", tmp_path / "log1", *args)
    assert d.mounted, d.log()
    log = d.stop()
    assert "indexed" in log, log

    st = archive.stat()
    spot = size // 2
    with open(archive, "r+b") as f:
        f.seek(spot)
        b = f.read(1)
        f.seek(spot)
        f.write(bytes([b[0] ^ 0xff]))
    os.utime(archive, ns=(st.st_atime_ns, st.st_mtime_ns))

    d = Daemon(archive, tmp_path / "mnt2", tmp_path / "log2", *args)
    assert d.mounted, d.log()
    try:
        listing = read_all(d)
    except BaseException:
        d.kill()
        raise
    log = d.stop()
    assert "indexed" not in log and "rebuilding" not in log, \
        "the index was not reused (the test needs it to be):\n" + log
    counts, problems = judge(listing, files)
    key = f"{kind}:flip-after-indexing"
    RESULTS[key] = outcome_text(counts, len(files)) + (" -- WRONG: " + problems[0]
                                                       if problems else "")
    assert not problems, "\n".join(problems) + "\n--- daemon log:\n" + log
    assert counts["absent"] == 0
    assert counts["eio"] >= 1, f"no read failed over the damaged spot: {counts}\n{log}"
    assert listing["files"]["first.txt"]["whole"][0] == "ok"
    if kind in INDEPENDENT:
        assert listing["files"]["last.txt"]["whole"][0] == "ok", log
    assert ": error:" in log, "the failed reads were not logged:\n" + log
