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
import shutil
import subprocess
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
    # mount --bind returns at once: there is no mounter left to measure.
    assert not any(t.startswith("peak RSS") for t in tables)
    with open(tmp / "r.json") as f:
        doc = json.load(f)
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
