#!/usr/bin/env python3
"""Archives over HTTP against the same archives on local disk: the figures of the remote
source (net/).  Run as root from the project root after bench/make-corpus.sh:

    python3 bench/remote.py [--corpus /var/tmp/tarseek-corpus] [--runs 3] [ARCHIVE...]

For each ARCHIVE (default backup.tar.gz and backup.tar.xz of the corpus), served by Debian's
nginx on 127.0.0.1 with its index published beside it (built locally by tarseek-index, as a
user would before uploading):
  1. second-host mount: the time from starting tarseek on the URL, with an empty cache
     folder, to a mounted tree (the index fetched from the server), next to the local
     second mount; medians of alternated runs;
  2. one tarseek-bench run (cold) of the md5 workload of the corpus list over every archive
     locally and by URL: first mount (the URL's builds its index streaming the object),
     second mount, md5 time, with timesBaseline against the local mount of the same archive;
  3. from nginx's access log: requests and bytes of each md5 run, against the archive's
     size and against the compressed spans the reads need (every checkpoint chunk holding a
     byte of a listed file: its span up to the next checkpoint, each counted once);
  4. the md5 workload once more through a proxy that delays every request by 20 ms
     (tests/mount/netservers.FaultProxy): requests per file read, and the time.
Everything is printed; nothing leaves the machine.
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "mount"))
from netservers import FaultProxy, Nginx  # noqa: E402

BUILD = os.environ.get("TARSEEK_BUILD", os.path.join(ROOT, "build"))
TARSEEK = os.path.join(BUILD, "fs", "tarseek")
INDEX = os.path.join(BUILD, "tools", "tarseek-index")
BENCH = os.path.join(BUILD, "tools", "tarseek-bench")


def mounted(path):
    real = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split(" ")[4] == real for line in f)


def time_mount(source, mnt, env):
    """Seconds from starting the daemon to a mounted tree; unmounts."""
    t0 = time.monotonic()
    p = subprocess.Popen([TARSEEK, "-f", "-q", source, mnt], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while not mounted(mnt):
        if p.poll() is not None:
            raise RuntimeError(f"tarseek {source}: {p.stderr.read().decode()}")
        time.sleep(0.002)
    os.stat(mnt + "/.")
    dt = time.monotonic() - t0
    subprocess.run(["fusermount3", "-u", mnt], check=True)
    p.wait()
    return dt


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def needed_spans(archive, index, listfile, tmp):
    """Bytes of the compressed spans the listed files' reads need, and how many chunks."""
    mnt = os.path.join(tmp, "spans")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run([TARSEEK, "--index-file", index, "--no-prefetch", archive, mnt], check=True)
    try:
        files = []
        for rel in open(listfile).read().splitlines():
            out = subprocess.run(["getfattr", "--only-values", "-n", "user.tarseek.info",
                                  os.path.join(mnt, rel)], capture_output=True,
                                 text=True).stdout
            kv = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
            files.append((int(kv["data_offset"]), int(kv["size"])))
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=True)
    db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    ck = db.execute("SELECT uoff, coff FROM checkpoints ORDER BY uoff").fetchall()
    size = os.path.getsize(archive)
    need = set()
    import bisect
    uoffs = [u for u, _ in ck]
    for off, n in files:
        if n == 0:
            continue
        i = bisect.bisect_right(uoffs, off) - 1
        while i < len(ck) and ck[i][0] < off + n:
            need.add(i)
            i += 1
    total = sum((ck[i + 1][1] if i + 1 < len(ck) else size) - ck[i][1] for i in need)
    return total, len(need), len(ck)


def md5_runs(log_records, uri):
    """[(requests, bytes)] of each mount in the log: a mount starts with the 64 KiB probe."""
    runs = []
    for r in log_records:
        if r["uri"] != uri:
            continue
        if r["range"] == "bytes=0-65535":
            runs.append([0, 0])
        if runs:
            runs[-1][0] += 1
            runs[-1][1] += r["bytes_sent"] or 0
    return runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="/var/tmp/tarseek-corpus")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mount-runs", type=int, default=5)
    ap.add_argument("archives", nargs="*", default=["backup.tar.gz", "backup.tar.xz"])
    a = ap.parse_args()
    listfile = os.path.join(a.corpus, "backup.list")
    tmp = tempfile.mkdtemp(prefix="tarseek-remote-")
    env = dict(os.environ)
    for name in a.archives:  # the published indexes, built locally as before an upload
        path = os.path.join(a.corpus, name)
        subprocess.run([INDEX, "-q", path], check=True)
    with Nginx(a.corpus, tmp) as ng:
        print(f"nginx {ng.url} serving {a.corpus}")
        # 1. second-host mounts
        mnt = os.path.join(tmp, "m")
        os.makedirs(mnt)
        for name in a.archives:
            url, local = f"{ng.url}/{name}", os.path.join(a.corpus, name)
            remote_t, local_t = [], []
            for i in range(a.mount_runs):
                drop_caches()
                e = dict(env, XDG_CACHE_HOME=os.path.join(tmp, f"cache-{name}-{i}"))
                remote_t.append(time_mount(url, mnt, e))
                drop_caches()
                local_t.append(time_mount(local, mnt, env))
            rm, lm = statistics.median(remote_t), statistics.median(local_t)
            print(f"second-host mount {name}: by URL (index fetched) {rm:.3f} s, local "
                  f"{lm:.3f} s (medians of {a.mount_runs}; ratio {rm / lm:.2f})")
        # 2. one tarseek-bench run
        ng.clear_log()
        cmd = [BENCH, "--cold", "--runs", str(a.runs), "--list", listfile,
               "--index-dir", os.path.join(tmp, "idx")]
        for name in a.archives:
            cmd += [os.path.join(a.corpus, name), "--name", "http:" + name, f"{ng.url}/{name}"]
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        # 3. what was fetched
        log = ng.requests()
        for name in a.archives:
            path = os.path.join(a.corpus, name)
            size = os.path.getsize(path)
            idx = path + ".index.sqlite"  # the published one: built from this file
            spans, nck, allck = needed_spans(path, idx, listfile, tmp)
            runs = md5_runs(log, "/" + name)
            print(f"{name}: {size / 1e6:.1f} MB; the list's reads need {nck} of {allck} "
                  f"chunks, {spans / 1e6:.1f} MB of compressed spans")
            for i, (req, b) in enumerate(runs):
                kind = ("first mount (index built)" if i == 0 else
                        "a mount (no read)" if req <= 2 else "md5 run")
                print(f"  {kind}: {req} requests, {b / 1e6:.1f} MB = {b / size:.2f} x the "
                      f"archive, {b / spans:.2f} x the spans needed")
        # 4. 20 ms per request
        with FaultProxy("127.0.0.1", ng.port) as px:
            px.delay_ms = 20
            for name in a.archives:
                px.reset()
                px.delay_ms = 20
                cmd = [BENCH, "--cold", "--runs", "1", "--list", listfile, "--keep-index",
                       "--index-dir", os.path.join(tmp, "idx"), "--name", "http:" + name,
                       f"{ng.url}/{name}", "--name", "delayed:" + name, f"{px.url}/{name}"]
                print("$", " ".join(cmd), flush=True)
                r = subprocess.run(cmd, capture_output=True, text=True)
                print(r.stdout[-3000:])
                gets = [e for e in px.log if e[1] == "/" + name]
                nfiles = len(open(listfile).read().splitlines())
                runs = [0]
                for e in gets:
                    if e[2] == "bytes=0-65535":
                        runs.append(0)
                    runs[-1] += 1
                print(f"{name} with 20 ms per request: requests per mount {runs[1:]}, "
                      f"{max(runs[1:]) / nfiles:.2f} per file read ({nfiles} files)")


if __name__ == "__main__":
    main()
