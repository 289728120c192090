"""Mount tests of tools/tarseek-bench.

The bench mounts archives itself, so these tests run it end to end on archives made at test
time with GNU tar and gzip: two archives of one tree plus the extracted tree give a report
whose structure is checked in every format (table, CSV, JSON, SVG); an archive with one file
changed must be caught as an md5 mismatch naming the file.  Tests that mount with
`mount --bind` (to exercise --mount-cmd without another FUSE tool) need root.

The binaries are found through TARSEEK_BUILD (the meson build folder; default: ../../build
from this file); tests needing the tarseek daemon are skipped when it is not built.
Self-contained on purpose (no conftest.py needed); every test checks that the bench left no
mount and no temporary folder behind, and unmounts leftovers itself if it did.
"""

import csv
import io
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("TARSEEK_BUILD") or os.path.join(HERE, "..", "..", "build")
BENCH = os.path.join(BUILD, "tools", "tarseek-bench")
TARSEEK = os.path.join(BUILD, "fs", "tarseek")

TABLE_HEADER = ["name", "rank", "runs", "mean", "sd", "min", "median", "timesBaseline",
                "size", "sizeRatio"]
IO_METRICS = ("io_bytes_read", "io_read_calls", "io_disk_bytes")
SUMMARY_HEADER = ["name", "rank", "median", "timesFastest", "size", "sizeRatio", "bytes read",
                  "read calls", "disk bytes"]

pytestmark = pytest.mark.skipif(
    not os.access(BENCH, os.X_OK), reason=f"tarseek-bench not built ({BENCH})")
needs_tarseek = pytest.mark.skipif(
    not os.access(TARSEEK, os.X_OK), reason=f"tarseek daemon not built ({TARSEEK})")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mount --bind needs root")


def mounts_under(prefix):
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [p for p in points if p.startswith(prefix)]


@pytest.fixture
def tmp(tmp_path):
    """A work folder; the bench's TMPDIR is a subfolder that must be empty afterwards."""
    benchtmp = tmp_path / "benchtmp"
    benchtmp.mkdir()
    yield tmp_path
    left = mounts_under(str(tmp_path))
    for point in reversed(left):
        subprocess.run(["fusermount3", "-u", "-z", point], stderr=subprocess.DEVNULL)
        subprocess.run(["umount", "-l", point], stderr=subprocess.DEVNULL)
    assert not left, f"the bench left mounts behind: {left}"
    assert not os.listdir(benchtmp), f"the bench left {os.listdir(benchtmp)} in its TMPDIR"


# Names with spaces and odd characters; the one with a newline only goes into NUL lists.
FILES = {
    "etc/hosts": b"127.0.0.1 localhost\n",
    "docs/read me.txt": b"spaces in the name\n" * 50,
    "docs/quote's & <angle> \u00e9.txt": b"odd characters\n" * 10,
    "data/big.bin": bytes((i * 7919) % 251 for i in range(300000)),
    "data/empty": b"",
    "a/b/c/deep.txt": b"deep\n" * 1000,
}
NEWLINE_NAME = "docs/new\nline.txt"


def make_tree(root, changed=None, newline=False):
    files = dict(FILES)
    if newline:
        files[NEWLINE_NAME] = b"newline in the name\n"
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data + (b"changed\n" if name == changed else b""))
    return sorted(files)


def make_tar(tree, out, gzip=False):
    members = sorted(os.listdir(tree))
    subprocess.run(["tar", "--format=gnu", "-cf", str(out), "-C", str(tree), *members],
                   check=True)
    if gzip:
        subprocess.run(["gzip", "-6", "-f", str(out)], check=True)
        out = out.with_name(out.name + ".gz")
    return out


def run_bench(tmp, *args, expect=None):
    env = dict(os.environ, TMPDIR=str(tmp / "benchtmp"), TARSEEK=TARSEEK)
    proc = subprocess.run([BENCH, *map(str, args)], capture_output=True, env=env,
                          timeout=300)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if expect is not None:
        assert proc.returncode == expect, f"exit {proc.returncode}\n{out}\n{err}"
    return proc.returncode, out, err


def parse_tables(text):
    """Maps each table's title line to its rows (lists of cells), from the text report."""
    tables, lines = {}, text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(" name ") and "|" in line:
            title = lines[i - 3]
            assert set(lines[i - 2]) == {"-"} and len(lines[i - 2]) == len(title)
            header = [c.strip() for c in line.split("|")]
            assert header == (SUMMARY_HEADER if title.startswith("summary:")
                              else TABLE_HEADER), header
            rule = lines[i + 1]
            assert set(rule) <= {"-", "|"} and len(rule) == len(line)
            rows = []
            for row in lines[i + 2:]:
                if not row.strip():
                    break
                assert len(row) == len(line), f"ragged row {row!r}"
                rows.append([c.strip() for c in row.split("|")])
            tables[title] = rows
    return tables


def table(tables, prefix):
    found = [rows for title, rows in tables.items() if title.startswith(prefix)]
    assert len(found) == 1, f"no single table starting {prefix!r} in {list(tables)}"
    return {row[0]: row for row in found[0]}


@needs_tarseek
def test_report_structure(tmp):
    tree = tmp / "tree"
    names = make_tree(tree)
    gz = make_tar(tree, tmp / "same.tar", gzip=True)  # gzip replaces same.tar ...
    plain = make_tar(tree, tmp / "same.tar")  # ... so make it again
    (tmp / "files.list").write_text("".join(n + "\n" for n in names))
    csv_path, json_path, svg_path = tmp / "r.csv", tmp / "r.json", tmp / "r.svg"

    _, out, err = run_bench(
        tmp, "--list", tmp / "files.list", "--dir", tree, plain, gz, "--runs", 3, "--seed", 7,
        "--csv", csv_path, "--json", json_path, "--svg", svg_path, expect=0)

    assert "seed:      7\n" in out
    assert f"files:     {len(names)} from the list" in out
    assert f"md5 check: all 3 configurations agree on all {len(names)} files." in out
    assert "random, non-consecutive order (seed 7)" in out

    tables = parse_tables(out)
    md5 = table(tables, "md5 workload")
    assert set(md5) == {"extracted", "same.tar", "same.tar.gz"}
    assert sorted(int(r[1]) for r in md5.values()) == [1, 2, 3]
    for row in md5.values():
        assert row[2] == "3"
        assert float(row[3]) >= 0 and float(row[4]) >= 0
    assert md5["extracted"][7] == "1.00"  # the first configuration is the baseline
    # Mount metrics: the two archives only (a directory is not mounted).
    for prefix, runs in [("first mount", "1"), ("second mount", "1"), ("index size", "1"),
                         ("peak RSS of the mounter, first mount", "1"),
                         ("peak RSS of the mounter, md5", "1")]:
        rows = table(tables, prefix)
        assert set(rows) == {"same.tar", "same.tar.gz"}, prefix
        assert all(r[2] == runs for r in rows.values()), (prefix, rows)
    assert "(s; baseline same.tar)" in next(t for t in tables if t.startswith("first mount"))

    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["metric", "unit", "name", "rank", "runs", "mean", "sd", "min",
                             "median", "max", "times_baseline", "baseline", "size",
                             "size_ratio"]
    metrics = {r["metric"] for r in rows}
    assert metrics == {"md5", "first_mount", "second_mount", "index_size",
                       "peak_rss_first_mount", "peak_rss_md5", *IO_METRICS}
    md5_rows = {r["name"]: r for r in rows if r["metric"] == "md5"}
    assert set(md5_rows) == {"extracted", "same.tar", "same.tar.gz"}
    assert float(md5_rows["extracted"]["times_baseline"]) == 1.0
    assert all(float(r["mean"]) > 0 for r in rows
               if r["unit"] == "MiB" and r["metric"] not in IO_METRICS)

    with open(json_path) as f:
        doc = json.load(f)
    assert doc["tool"] == "tarseek-bench" and doc["seed"] == 7 and doc["runs"] == 3
    assert doc["cold"] is False and doc["digest"] == "md5" and doc["exec"] is None
    assert [c["name"] for c in doc["configurations"]] == ["extracted", "same.tar",
                                                           "same.tar.gz"]
    assert [c["kind"] for c in doc["configurations"]] == ["directory", "tarseek", "tarseek"]
    assert doc["check"] == {"files": len(names), "bad": 0, "ok": True, "problems": []}
    assert doc["files"] == names
    by_id = {m["id"]: m for m in doc["metrics"]}
    assert by_id["md5"]["unit"] == "s" and by_id["index_size"]["unit"] == "MiB"
    for r in by_id["md5"]["results"]:
        assert len(r["samples"]) == 3 and r["runs"] == 3
        assert min(r["samples"]) == pytest.approx(r["min"])
    assert by_id["first_mount"]["baseline"] == "same.tar"

    svg = ET.parse(svg_path).getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    text = " ".join("".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text"))
    for name in ("extracted", "same.tar", "same.tar.gz", "md5 workload", "(s)"):
        assert name in text
    bars = [r for r in svg.iter("{http://www.w3.org/2000/svg}rect") if r.get("x") is not None]
    assert len(bars) == 3


@needs_tarseek
def test_mismatch_is_caught(tmp):
    tree, other = tmp / "tree", tmp / "other"
    names = make_tree(tree)
    make_tree(other, changed="docs/read me.txt")
    good = make_tar(tree, tmp / "good.tar", gzip=True)
    bad = make_tar(other, tmp / "bad.tar")
    (tmp / "files.list").write_text("".join(n + "\n" for n in names) + "not/there\n")
    json_path = tmp / "r.json"

    _, out, err = run_bench(tmp, "-l", tmp / "files.list", "-d", tree, good, bad,
                            "--runs", 2, "--json", json_path, expect=1)

    assert "md5 check FAILED: 2 of 7 files" in out
    section = out[out.index("md5 check FAILED"):]
    assert "  docs/read me.txt\n    extracted, good.tar.gz: " in section
    assert "    bad.tar: " in section
    assert "  not/there\n    extracted: read error: No such file or directory" in section
    assert "md5 check failed for 2 of 7 files" in err
    with open(json_path) as f:
        doc = json.load(f)
    problems = {p["path"]: p["results"] for p in doc["check"]["problems"]}
    assert set(problems) == {"docs/read me.txt", "not/there"}
    digests = {r["configuration"]: r["digest"] for r in problems["docs/read me.txt"]}
    assert digests["extracted"] == digests["good.tar.gz"] != digests["bad.tar"]
    # The tables are still there: a mismatch does not lose the timings.
    assert set(table(parse_tables(out), "md5 workload")) == {"extracted", "good.tar.gz",
                                                             "bad.tar"}


@needs_tarseek
def test_sample_and_nul_list(tmp):
    tree = tmp / "tree"
    names = make_tree(tree, newline=True)
    archive = make_tar(tree, tmp / "t.tar", gzip=True)
    (tmp / "files.list0").write_bytes(b"".join(n.encode() + b"\0" for n in names))

    _, out, _ = run_bench(tmp, "-0", "-l", tmp / "files.list0", "-d", tree, archive,
                          "--runs", 1, "--json", tmp / "a.json", expect=0)
    assert f"agree on all {len(names)} files" in out
    with open(tmp / "a.json") as f:
        assert NEWLINE_NAME in json.load(f)["files"]

    # --sample draws regular files from the baseline's tree (here the archive's mount),
    # the same ones again for the same seed.
    drawn = []
    for _ in range(2):
        run_bench(tmp, "--sample", 4, "--seed", 99, archive, "-d", tree, "--runs", 1,
                  "--json", tmp / "s.json", "-q", expect=0)
        with open(tmp / "s.json") as f:
            doc = json.load(f)
        assert doc["list"] is None and doc["sample"] == 4 and doc["check"]["ok"]
        drawn.append(doc["files"])
    assert drawn[0] == drawn[1] and len(set(drawn[0])) == 4
    assert set(drawn[0]) <= set(names)

    # More than the tree holds: all of them, with a warning.
    _, out, err = run_bench(tmp, "--sample", 1000, archive, "--runs", 1, expect=0)
    assert f"only {len(names)} regular files" in err


@needs_tarseek
@needs_root
def test_cold_runs_remount(tmp):
    tree = tmp / "tree"
    names = make_tree(tree)
    archive = make_tar(tree, tmp / "t.tar")
    (tmp / "files.list").write_text("".join(n + "\n" for n in names))
    _, out, _ = run_bench(tmp, "-l", tmp / "files.list", archive, "-d", tree, "--cold",
                          "--runs", 3, "--json", tmp / "r.json", expect=0)
    assert "cold (page cache dropped and a fresh mount before each run)" in out
    with open(tmp / "r.json") as f:
        by_id = {m["id"]: m for m in json.load(f)["metrics"]}
    # One fresh mount, and one RSS reading, per cold run.
    assert by_id["second_mount"]["results"][0]["runs"] == 3
    assert by_id["peak_rss_md5"]["results"][0]["runs"] == 3
    assert by_id["md5"]["baseline"] == "t.tar"


@needs_tarseek
def test_shadow_removed(tmp):
    """With --shadow always the first mount writes a shadow beside the index; the bench
    removes both, so the TMPDIR fixture finds nothing left (a shadow can be a third of the
    decoded size of the archive)."""
    tree = tmp / "tree"
    names = make_tree(tree)
    archive = make_tar(tree, tmp / "t.tar")
    subprocess.run(["xz", "-T1", "-f", str(archive)], check=True)
    (tmp / "files.list").write_text("".join(n + "\n" for n in names))
    _, out, err = run_bench(tmp, "-l", tmp / "files.list", tmp / "t.tar.xz", "-d", tree,
                            "--tarseek-opt", "--shadow always", expect=0)
    assert "cannot remove" not in err, err


@needs_root
def test_mount_cmd_bind(tmp):
    tree, copy = tmp / "tree", tmp / "copy"
    names = make_tree(tree)
    make_tree(copy)
    (tmp / "files.list").write_text("".join(n + "\n" for n in names))
    _, out, _ = run_bench(tmp, "-l", tmp / "files.list", "-d", tree, "--mount-cmd",
                          "mount --bind {archive} {mnt}", copy, "--name", "bound twice",
                          copy, "--baseline", "copy (mount)", "--runs", 2,
                          "--json", tmp / "r.json", expect=0)
    tables = parse_tables(out)
    assert set(table(tables, "md5 workload")) == {"extracted", "copy (mount)", "bound twice"}
    assert "(s; baseline copy (mount))" in out
    assert set(table(tables, "first mount")) == {"copy (mount)", "bound twice"}
    # mount --bind returns at once: there is no mounter left to measure -- at most a launcher
    # caught while it exits (a busy machine's CI saw one), which reads nothing of the files.
    assert not any(t.startswith("peak RSS") for t in tables)
    assert set(table(tables, "bytes read by the mounter")) <= {"extracted", "bound twice",
                                                                "copy (mount)"}
    with open(tmp / "r.json") as f:
        doc = json.load(f)
    io = {r["name"]: r for m in doc["metrics"] if m["id"] == "io_bytes_read"
          for r in m["results"]}
    assert "extracted" in io
    assert all(io[n]["max"] * 2**20 < 64 * 1024 for n in io if n != "extracted"), io
    assert doc["configurations"][1]["command"] == "mount --bind {archive} {mnt}"
    assert doc["configurations"][1]["kind"] == "command"


@needs_tarseek
def test_tree_workloads(tmp):
    """--workload grep and tar walk the whole tree with the real tools: the archives agree
    with the extracted tree, and a changed file is caught (a line more for grep, other bytes
    in one member for tar)."""
    tree, other = tmp / "tree", tmp / "other"
    make_tree(tree)
    make_tree(other, changed="a/b/c/deep.txt")
    good = make_tar(tree, tmp / "good.tar", gzip=True)
    bad = make_tar(other, tmp / "bad.tar")
    for workload, title in (("grep", "grep -r deep workload"), ("tar", "tar -c workload")):
        _, out, err = run_bench(tmp, "--workload", workload, "--pattern", "deep", "-d", tree,
                                good, "--runs", 2, expect=0)
        assert f"{title.replace(' workload', '')} check: all 2 configurations agree on the " \
            "whole tree." in out, out
        assert "files:     the whole tree, walked by" in out
        rows = table(parse_tables(out), title)
        assert set(rows) == {"extracted", "good.tar.gz"}
        assert all(row[2] == "2" for row in rows.values())
        # the changed tree: grep prints one more line, tar writes a longer stream
        _, out, _ = run_bench(tmp, "--workload", workload, "--pattern", "changed", "-d", tree,
                              bad, "--runs", 1, expect=1)
        assert "check FAILED" in out, out


def test_usage_errors(tmp):
    tree = tmp / "tree"
    make_tree(tree)
    cases = [
        (["-d", tree], "which files?"),
        (["--sample", 3, tree], "is a directory, not an archive"),
        (["--list", tmp / "nope", "-d", tree], "nope"),
        (["--sample", 3, "-d", tree, "--baseline", "zzz"], "no such configuration"),
        (["--sample", 3, "-d", tree, "--name", "extracted", "-d", tree], "named 'extracted'"),
        (["--sample", 3, "-d", tree, "--mount-cmd", "true {mnt}"], "followed by no archive"),
        (["--sample", 3, "--mount-cmd", "true", tree], "has no {mnt}"),
        (["--sample", 3, "-d", tree, "--name", "x"], "followed by no archive or --dir"),
        (["--sample", 0, "-d", tree], "--sample wants a whole number"),
        (["--sample", 3, "--runs", "two", "-d", tree], "--runs wants a whole number"),
        (["--sample", 3, "-d", tmp / "missing"], "No such file or directory"),
        (["--sample", 3, "--list", tmp / "x", "-d", tree], "exclude each other"),
        (["--bogus"], "Try 'tarseek-bench --help'"),
        (["--workload", "cat", "-d", tree], "--workload is md5, grep or tar"),
        (["--workload", "grep", "--sample", 3, "-d", tree], "walks the whole tree"),
        (["--workload", "tar", "--exec", "md5sum", "-d", tree], "walks the whole tree"),
        (["--workload", "grep", "--pattern", "", "-d", tree], "--pattern cannot be empty"),
        (["--sample", 3, "-d", tree, "--order", "offset"], "--order is list, archive or random"),
        (["--sample", 3, "-d", tree, "--throttle", "riops=x"], "riops wants a whole number"),
        (["--sample", 3, "-d", tree, "--throttle", "rbps=fast"], "rbps wants bytes per second"),
        (["--sample", 3, "-d", tree, "--throttle", "device=/dev/loop0"],
         "--throttle wants riops=N and/or rbps=SIZE"),
        (["--sample", 3, "-d", tree, "--throttle", "wiops=5"], "unknown key 'wiops'"),
    ]
    for args, message in cases:
        code, out, err = run_bench(tmp, *args)
        assert code == 2, (args, code, out, err)
        assert message in err, (args, err)
    code, out, _ = run_bench(tmp, "--help")
    assert code == 0 and "Cold runs:" in out and "Exit status:" in out


def test_mounter_failure(tmp):
    tree = tmp / "tree"
    make_tree(tree)
    # A daemon that exits at once: exit 3, a message that says so.
    code, out, err = run_bench(tmp, "--sample", 2, "-d", tree, "--tarseek", "/bin/false",
                               tmp / "tree" / "etc" / "hosts")
    assert code == 3, err
    assert "the mounter exited with status 1 before the mount came up" in err
    # A mount command that never mounts: timeout, with what it printed.
    code, out, err = run_bench(tmp, "--sample", 2, "-d", tree, "--mount-timeout", "0.5",
                               "--mount-cmd", "echo starting {mnt}; sleep 30", tree)
    assert code == 3, err
    assert "no mount on" in err and "starting" in err


# ---- sizes, the summary, --order, the mounter's reads, --throttle ---------------------------

def csv_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load_json(path):
    with open(path) as f:
        return json.load(f)


def format_size(n):
    """common/size.c's format_size(): powers of 1000, two decimals past bytes."""
    units, i, v = ["B", "KB", "MB", "GB", "TB"], 0, float(n)
    while v >= 1000 and i < 4:
        v, i = v / 1000, i + 1
    return f"{v:.2f} {units[i]}" if i else f"{v:.0f} {units[i]}"


def tree_size(root):
    return sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(root) for f in fs
               if os.path.isfile(os.path.join(d, f)) and not os.path.islink(os.path.join(d, f)))


@needs_tarseek
def test_sizes_and_summary(tmp):
    """Every table shows each configuration's size and its ratio to the plain tar; the
    summary ranks by md5 median; CSV and JSON carry the same sizes."""
    tree = tmp / "tree"
    names = make_tree(tree)
    gz = make_tar(tree, tmp / "same.tar", gzip=True)
    plain = make_tar(tree, tmp / "same.tar")
    (tmp / "files.list").write_text("".join(n + "\n" for n in names))
    sizes = {"extracted": tree_size(tree), "same.tar": os.path.getsize(plain),
             "same.tar.gz": os.path.getsize(gz)}
    ratios = {name: size / sizes["same.tar"] for name, size in sizes.items()}
    # the .tar.gz first: the plain tar is found wherever it stands
    _, out, _ = run_bench(tmp, "--list", tmp / "files.list", gz, "--dir", tree, plain,
                          "--runs", 3, "--csv", tmp / "r.csv", "--json", tmp / "r.json",
                          expect=0)
    tables = parse_tables(out)
    for title, rows in tables.items():
        for row in rows:
            name = row[0]
            size, ratio = (row[4], row[5]) if title.startswith("summary:") else (row[8], row[9])
            assert size == format_size(sizes[name]), (title, row)
            assert ratio == f"{ratios[name]:.3f}", (title, row)
    assert f"sizeRatio: size / the size of same.tar ({sizes['same.tar']} bytes, the plain " \
        "tar)." in out

    doc = load_json(tmp / "r.json")
    assert doc["plain_size"] == sizes["same.tar"] and doc["plain_from"] == "same.tar"
    for c in doc["configurations"]:
        assert c["size"] == sizes[c["name"]]
        assert c["size_ratio"] == pytest.approx(ratios[c["name"]])
    for r in csv_rows(tmp / "r.csv"):
        assert int(r["size"]) == sizes[r["name"]], r
        assert float(r["size_ratio"]) == pytest.approx(ratios[r["name"]], rel=1e-6)

    # The summary: by md5 median, fastest first, the same order as the JSON's medians.
    medians = {r["name"]: r["median"] for m in doc["metrics"] if m["id"] == "md5"
               for r in m["results"]}
    summary = next(rows for title, rows in tables.items() if title.startswith("summary:"))
    assert list(tables)[-1].startswith("summary:")  # after the other tables
    assert [row[0] for row in summary] == sorted(medians, key=lambda n: medians[n])
    assert [int(row[1]) for row in summary] == [1, 2, 3]
    assert [s["name"] for s in doc["summary"]] == [row[0] for row in summary]
    assert all(s["median"] == pytest.approx(medians[s["name"]]) for s in doc["summary"])

    # No .tar: the ratio is to the tree; neither a .tar nor a tree: blank.
    _, out, _ = run_bench(tmp, "--list", tmp / "files.list", "--dir", tree, gz, "--runs", 1,
                          "--csv", tmp / "s.csv", expect=0)
    md5 = table(parse_tables(out), "md5 workload")
    assert md5["same.tar.gz"][9] == f"{sizes['same.tar.gz'] / sizes['extracted']:.3f}"
    assert "sizeRatio: size / the size of extracted" in out
    _, out, _ = run_bench(tmp, "--list", tmp / "files.list", gz, "--runs", 1,
                          "--csv", tmp / "s.csv", "--json", tmp / "s.json", expect=0)
    md5 = table(parse_tables(out), "md5 workload")
    assert md5["same.tar.gz"][8] == format_size(sizes["same.tar.gz"])
    assert md5["same.tar.gz"][9] == ""
    assert all(r["size_ratio"] == "" for r in csv_rows(tmp / "s.csv"))
    doc = load_json(tmp / "s.json")
    assert doc["plain_size"] is None and doc["configurations"][0]["size_ratio"] is None


def make_ordered_tar(tmp, count=24):
    """A tar whose members lie in an order unlike the sorted list: (tree, archive, list of
    sorted names, the names in archive order)."""
    tree = tmp / "otree"
    names = [f"d/f{i:02d}" for i in range(count)]
    for i, name in enumerate(names):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(bytes([i]) * (1000 + 97 * i))
    stored = names[1::2][::-1] + names[0::2]  # odd ones backwards, then the even ones
    archive = tmp / "ordered.tar"
    subprocess.run(["tar", "--format=gnu", "-cf", str(archive), "-C", str(tree), *stored],
                   check=True)
    return tree, archive, names, stored


@needs_tarseek
def test_order_archive_and_random(tmp):
    tree, archive, names, stored = make_ordered_tar(tmp)
    gz = tmp / "ordered.tar.gz"
    subprocess.run(["gzip", "-k", "-6", str(archive)], check=True)
    (tmp / "files.list").write_text("".join(n + "\n" for n in names + ["not/there"]))
    expected = [names.index(n) for n in stored] + [len(names)]  # the missing file last

    _, out, err = run_bench(tmp, "-l", tmp / "files.list", archive, gz, "-d", tree,
                            "--order", "archive", "--runs", 2, "--json", tmp / "a.json",
                            expect=1)  # not/there cannot be read
    assert "order:     archive" in out
    assert "1 of 25 files have no data offset" in err
    doc = load_json(tmp / "a.json")
    assert doc["order"] == "archive"
    orders = {c["name"]: c["read_orders"] for c in doc["configurations"]}
    assert orders["ordered.tar"] == [expected, expected]
    assert orders["ordered.tar.gz"] == [expected, expected]  # offsets in the decoded stream
    assert orders["extracted"] == [list(range(len(names) + 1))] * 2  # no offsets: the list

    # random: a permutation per run, the same for every configuration's run k, repeated by
    # the seed, unlike the list's order and unlike each other
    (tmp / "files.list").write_text("".join(n + "\n" for n in names))
    docs = []
    for _ in range(2):
        run_bench(tmp, "-l", tmp / "files.list", archive, "-d", tree, "--order", "random",
                  "--seed", 5, "--runs", 3, "--json", tmp / "r.json", expect=0)
        docs.append(load_json(tmp / "r.json"))
    runs = docs[0]["configurations"][0]["read_orders"]
    assert len(runs) == 3 and all(sorted(r) == list(range(len(names))) for r in runs)
    assert runs == docs[0]["configurations"][1]["read_orders"]
    assert runs == docs[1]["configurations"][0]["read_orders"]
    assert len({tuple(r) for r in runs} | {tuple(range(len(names)))}) == 4

    # list: the default, not recorded
    run_bench(tmp, "-l", tmp / "files.list", archive, "--runs", 1, "--json", tmp / "l.json",
              expect=0)
    doc = load_json(tmp / "l.json")
    assert doc["order"] == "list" and doc["configurations"][0]["read_orders"] is None


@needs_tarseek
@needs_root
def test_io_columns_cold(tmp):
    """The mounter's reads during each cold pass: the daemon's for tarseek (no prefetch, so
    that what the pass reads is read during the pass), this process's for the tree.  The
    listed files lie in the middle of a 6 MiB archive: a mount reads its first and last MiB
    (the index's fingerprint), the pass must fetch the rest from the disk."""
    tree = tmp / "tree"
    tree.mkdir()
    for i in range(24):
        (tree / f"f{i:02d}").write_bytes(os.urandom(256 * 1024))
    names = [f"f{i:02d}" for i in range(8, 16)]
    gz = make_tar(tree, tmp / "io.tar", gzip=True)
    (tmp / "files.list").write_text("".join(n + "\n" for n in names))
    _, out, _ = run_bench(tmp, "-l", tmp / "files.list", gz, "-d", tree, "--cold", "--runs", 2,
                          "--tarseek-opt", "--no-prefetch", "--json", tmp / "r.json",
                          "--csv", tmp / "r.csv", expect=0)
    tables = parse_tables(out)
    for prefix in ("bytes read by the mounter", "read calls of the mounter",
                   "disk bytes read for the mounter"):
        assert set(table(tables, prefix)) == {"io.tar.gz", "extracted"}, prefix
    by_id = {m["id"]: {r["name"]: r for r in m["results"]} for m in load_json(tmp / "r.json")
             ["metrics"]}
    data = 8 * 256 * 1024
    for metric in IO_METRICS:
        for name in ("io.tar.gz", "extracted"):
            r = by_id[metric][name]
            assert r["runs"] == 2 and all(v > 0 for v in r["samples"]), (metric, name, r)
    # random data does not compress: the daemon reads at least the files' bytes of the
    # archive in each pass, the tree's reader the files
    assert by_id["io_bytes_read"]["io.tar.gz"]["min"] * 2**20 >= 0.9 * data
    assert by_id["io_bytes_read"]["extracted"]["min"] * 2**20 >= data
    assert by_id["io_read_calls"]["extracted"]["min"] >= 8 * 2  # 128 KiB reads
    summary = next(rows for title, rows in tables.items() if title.startswith("summary:"))
    assert all(row[6] and row[7] and row[8] for row in summary), summary
    assert {r["metric"] for r in csv_rows(tmp / "r.csv")} >= set(IO_METRICS)


@needs_tarseek
@needs_root
def test_io_of_mount_commands(tmp):
    """A --mount-cmd tool's reads: the foreground process of its group (tarseek -f through
    sh), or, when it daemonizes (tarseek without -f), the process naming the mount point."""
    tree = tmp / "tree"
    tree.mkdir()
    for i in range(24):
        (tree / f"f{i:02d}").write_bytes(os.urandom(256 * 1024))
    gz = make_tar(tree, tmp / "io.tar", gzip=True)
    (tmp / "files.list").write_text("".join(f"f{i:02d}\n" for i in range(8, 16)))
    cmd = f"{TARSEEK} --no-prefetch --index-file {{index}} {{archive}} {{mnt}}"
    run_bench(tmp, "-l", tmp / "files.list", "--cold", "--runs", 1, "--json", tmp / "r.json",
              "--mount-cmd", cmd.replace("--no-prefetch", "-f --no-prefetch"), "--name",
              "foreground", gz, "--mount-cmd", cmd, "--name", "daemon", gz, expect=0)
    by_id = {m["id"]: {r["name"]: r for r in m["results"]}
             for m in load_json(tmp / "r.json")["metrics"]}
    for name in ("foreground", "daemon"):
        assert by_id["io_bytes_read"][name]["min"] * 2**20 >= 0.9 * 8 * 256 * 1024, name
        assert by_id["io_read_calls"][name]["min"] > 0, name


@pytest.fixture
def slow_disk(tmp):
    """A 256 MiB ext4 image on a loop device, mounted: (device, mount point)."""
    if os.geteuid() != 0:
        pytest.skip("a loop device needs root")
    if not all(shutil.which(t) for t in ("losetup", "mkfs.ext4", "mount", "umount")):
        pytest.skip("losetup, mkfs.ext4, mount or umount missing")
    img, mnt = tmp / "disk.img", tmp / "slow"
    with open(img, "wb") as f:
        f.truncate(256 << 20)
    subprocess.run(["mkfs.ext4", "-q", str(img)], check=True)
    loop = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True,
                          text=True)
    if loop.returncode:
        pytest.skip(f"no loop device: {loop.stderr.strip()}")
    dev = loop.stdout.strip()
    mnt.mkdir()
    try:
        subprocess.run(["mount", dev, str(mnt)], check=True)
        try:
            yield dev, mnt
        finally:
            if subprocess.run(["umount", str(mnt)]).returncode:
                subprocess.run(["umount", "-l", str(mnt)])
    finally:
        subprocess.run(["losetup", "-d", dev])


def have_blkio_controller():
    try:
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            if "io" in f.read().split():
                return True
    except OSError:
        pass
    return os.path.exists("/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device")


def blkio_cgroups():
    root = "/sys/fs/cgroup/blkio"
    return sorted(d for d in os.listdir(root) if d.startswith("tarseek-bench-")) \
        if os.path.isdir(root) else []


@needs_tarseek
def test_throttle_slows_cold_reads(tmp, slow_disk):
    """--throttle on a loop device: a cold pass reads measurably slower than without it
    (a relative check: 2 MiB at 2 MiB/s and 20 reads/s takes seconds, unthrottled a
    fraction of one).  The index is built by the unthrottled run and kept for the other, so
    that only the pass reads the 25 MiB archive's middle."""
    if not have_blkio_controller():
        pytest.skip("no blkio (cgroup v1) or io (cgroup v2) controller")
    dev, mnt = slow_disk
    tree = tmp / "ttree"
    tree.mkdir()
    for i in range(100):
        (tree / f"f{i:03d}").write_bytes(os.urandom(256 * 1024))
    archive = make_tar(tree, mnt / "t.tar")
    (tmp / "files.list").write_text("".join(f"f{i:03d}\n" for i in range(46, 54)))
    # what a killed bench leaves: an empty cgroup named after a process that is gone
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = f"/sys/fs/cgroup/blkio/tarseek-bench-{gone.pid}"
    if os.path.isdir("/sys/fs/cgroup/blkio"):
        os.mkdir(stale)
    before = blkio_cgroups()
    common = ["-l", tmp / "files.list", archive, "--cold", "--runs", 1,
              "--index-dir", tmp / "idx"]

    run_bench(tmp, *common, "--json", tmp / "free.json", expect=0)
    _, out, err = run_bench(tmp, *common, "--keep-index", "--throttle",
                            f"riops=20,rbps=2M,device={dev}", "--json", tmp / "slow.json",
                            expect=0)
    rdev = os.stat(dev).st_rdev
    assert f"reads from device {os.major(rdev)}:{os.minor(rdev)} limited to 20 reads/s and " \
        "2.0 MiB/s" in err, err
    assert f"throttle:  riops=20,rbps=2M,device={dev}" in out

    def md5_median(path):
        doc = load_json(path)
        return next(m for m in doc["metrics"] if m["id"] == "md5")["results"][0]["median"]

    free, slow = md5_median(tmp / "free.json"), md5_median(tmp / "slow.json")
    print(f"md5 median: {free:.3f} s free, {slow:.3f} s throttled")
    assert slow >= 1.5 * free, (free, slow)
    assert load_json(tmp / "slow.json")["throttle"] == f"riops=20,rbps=2M,device={dev}"
    # the cgroup is gone, and so is the stale one (swept by the throttled run)
    assert set(blkio_cgroups()) <= set(before) - {os.path.basename(stale)}
    assert not os.path.exists(stale)

    # Without device=, the disk holding the first archive (here the loop device itself).
    _, _, err = run_bench(tmp, "-l", tmp / "files.list", archive, "--runs", 1,
                          "--index-dir", tmp / "idx", "--keep-index",
                          "--throttle", "riops=1000", expect=0)
    assert f"reads from device {os.major(rdev)}:{os.minor(rdev)} limited to 1000 reads/s " \
        "(cgroup" in err, err
    assert set(blkio_cgroups()) <= set(before) - {os.path.basename(stale)}


def test_throttle_needs_root(tmp):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run the bench as nobody")
    shared = tempfile.mkdtemp(prefix="tarseek-bench-nobody.", dir="/tmp")
    try:
        os.chmod(shared, 0o755)
        make_tree(pathlib.Path(shared))
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BENCH,
             "--throttle", "riops=100,rbps=150M", "--sample", "2", "-d", shared],
            capture_output=True, text=True, timeout=60,
            env=dict(os.environ, TMPDIR="/tmp"))
    finally:
        shutil.rmtree(shared)
    assert proc.returncode == 2, proc
    assert "--throttle needs root" in proc.stderr, proc.stderr


CONVERT = os.path.join(BUILD, "tools", "tarseek-convert")


@needs_tarseek
@pytest.mark.skipif(not os.access(CONVERT, os.X_OK), reason="tarseek-convert not built")
def test_convert_forms(tmp):
    """--convert: the first archive converted into each form and measured beside it, with
    the index the conversion wrote; the conversions go away with the temporary folder, or
    stay in --convert-dir."""
    tree = tmp / "tree"
    names = make_tree(tree)
    gz = make_tar(tree, tmp / "conv.tar", gzip=True)
    (tmp / "files.list").write_text("".join(n + "\n" for n in names))
    _, out, err = run_bench(tmp, "--list", tmp / "files.list", gz, "--runs", 1,
                            "--convert", "zst,xz,tar", "--json", tmp / "c.json", expect=0)
    doc = load_json(tmp / "c.json")
    got = [c["name"] for c in doc["configurations"]]
    assert got == ["conv.tar.gz", "conv.tar.zst (converted)", "conv.tar.xz (converted)",
                   "conv.tar (converted)"], got
    assert "md5 check: all 4 configurations agree" in out
    # the converted plain tar is the plain tar the ratios are taken against
    assert doc["plain_from"] == "conv.tar (converted)"
    assert "converted conv.tar.gz to" in err
    assert not list(tmp.glob("benchtmp/*"))  # the tmp fixture checks it too

    keep = tmp / "kept"
    run_bench(tmp, "--list", tmp / "files.list", gz, "--runs", 1, "--convert", "gz",
              "--convert-opt", "--gzip-members", "--convert-dir", keep, expect=0)
    assert sorted(os.listdir(keep)) == ["conv.tar.gz", "conv.tar.gz.index.sqlite"]
    r = subprocess.run([os.path.join(BUILD, "tools", "tarseek-index"), "--check",
                        "--index-file", keep / "conv.tar.gz.index.sqlite", keep / "conv.tar.gz"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr

    rc, _, err = run_bench(tmp, "--list", tmp / "files.list", gz, "--convert", "bz2")
    assert rc != 0 and "not a form" in err
