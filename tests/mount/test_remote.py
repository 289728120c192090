"""Archives mounted by URL: http:// and https:// from Debian's nginx, s3:// from an S3 server
that verifies AWS Signature Version 4 (netservers.SigV4Server) and from s3rver (npm), faults
injected by a proxy (netservers.FaultProxy).  Every server runs on 127.0.0.1, started and
stopped by the test.

What is checked: every byte of a mount by URL equals GNU tar's extraction (tar in every
codec, zip, a single compressed file); an index published beside the archive on the server is
fetched and used (no decode at mount: the decoder counters), also one built from the local
copy before the upload; a changed object is noticed (at mount: the index is rebuilt; under a
mount: EIO, and the daemon lives); a server without Range support, a missing object, a bad
certificate and wrong credentials are refused with a clear message; faults (503s, dropped
and stalled connections) are retried to the right bytes or fail with EIO within
--remote-timeout; credentials and presigned signatures never reach the log, /proc/mounts or
the user.tarseek.* attributes; remote sources work in unions with local ones, with -r and
--no-union; reads cost few requests.
"""
import errno
import hashlib
import os
import shutil
import subprocess
import time

import pytest

from conftest import (compare_trees, gnu_extract, have, make_tree, random_bytes, run_tarseek,
                      semi_random, BUILD)
from netservers import FaultProxy, Nginx, S3rver, SigV4Server, require_nginx, require_s3rver

INDEX_TOOL = os.path.join(BUILD, "tools", "tarseek-index")


def make_archives(www, tmp_path):
    """The served folder: one tree as tar in several codecs, a zip, a single .gz file.
    Returns the tree's root."""
    tree = tmp_path / "tree"
    make_tree(os.fsencode(tree), long_names="ustar")
    big = tree / "big.bin"
    big.write_bytes(semi_random(6 << 20, seed=3))  # several gzip checkpoints at 1 MiB
    os.makedirs(www, exist_ok=True)
    subprocess.run(["tar", "-cf", str(www / "t.tar"), "-C", str(tree), "."], check=True)
    for ext, tool in (("gz", "gzip"), ("xz", "xz"), ("zst", "zstd"), ("bz2", "bzip2")):
        if have(tool):
            subprocess.run(f"{tool} -c < {www / 't.tar'} > {www / ('t.tar.' + ext)}",
                           shell=True, check=True)
    (www / "vm.img").write_bytes(random_bytes(3 << 20, seed=5) + bytes(2 << 20))
    subprocess.run(["gzip", "-k", str(www / "vm.img")], check=True)
    os.remove(www / "vm.img")
    if have("zip"):
        subprocess.run(["zip", "-qr", str(www / "t.zip"), "."], cwd=tree, check=True)
    return tree


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """Made once for the module: (served folder to copy, GNU tar's extraction, the tree)."""
    base = tmp_path_factory.mktemp("archives")
    tree = make_archives(base / "www", base)
    gnu_extract(base / "www" / "t.tar", base / "ref")
    return base / "www", base / "ref", tree


def served(archives, dest):
    """A fresh copy of the served folder at dest (tests change what they serve)."""
    shutil.copytree(archives[0], dest)
    return dest


@pytest.fixture
def site(tmp_path, archives):
    require_nginx()
    www = served(archives, tmp_path / "www")
    with Nginx(www, tmp_path) as ng:
        yield ng, www, archives[1], archives[2]


def cache_env(tmp_path, name="cache"):
    return {"XDG_CACHE_HOME": str(tmp_path / name)}


def info(path, key):
    out = subprocess.run(["getfattr", "--only-values", "-n", "user.tarseek.info", path],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        k, _, v = line.partition("=")
        if k == key:
            return v
    return None


def xattr_info(path):
    return subprocess.run(["getfattr", "--only-values", "-n", "user.tarseek.info", path],
                          capture_output=True, text=True).stdout


def read_at(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(n)


def quiet(ng, seconds=1.0, timeout=30):
    """Waits until nginx has logged no request for a while."""
    n, since, t0 = -1, time.monotonic(), time.monotonic()
    while time.monotonic() - since < seconds and time.monotonic() - t0 < timeout:
        m = len(ng.requests())
        if m != n:
            n, since = m, time.monotonic()
        time.sleep(0.1)


def body_bytes(reqs, uri):
    return sum(r["bytes_sent"] or 0 for r in reqs if r["uri"] == uri)


@pytest.mark.parametrize("name", ["t.tar", "t.tar.gz", "t.tar.xz", "t.tar.zst", "t.tar.bz2"])
def test_tar_by_url_equals_gnu_tar(site, mount, tmp_path, name):
    ng, www, ref, _ = site
    if not os.path.exists(www / name):
        pytest.skip(f"no tool for {name}")
    with mount(f"{ng.url}/{name}", env=cache_env(tmp_path)) as m:
        compare_trees(m.path, ref)
        assert info(m.path + "/big.bin", "source") == f"{ng.url}/{name}"
    # the mount streamed the object once: not much more than its size
    size = os.path.getsize(www / name)
    assert body_bytes(ng.requests(), "/" + name) <= size + (1 << 20)


CONVERT_TOOL = os.path.join(BUILD, "tools", "tarseek-convert")


def test_convert_from_url(site, mount, tmp_path):
    """tarseek-convert reads a source by URL (its index built, as a mount would, in the cache
    folder) and writes the same tar, verified, which mounts with the index written beside it;
    a missing object is refused with the URL in the message."""
    ng, www, ref, _ = site
    if not have("zstd"):
        pytest.skip("zstd is not installed")
    out = tmp_path / "conv.tar.zst"
    env = dict(os.environ, **cache_env(tmp_path))
    r = subprocess.run([CONVERT_TOOL, "--verify", f"{ng.url}/t.tar.gz", out],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert f"{ng.url}/t.tar.gz (" in r.stderr, r.stderr  # the closing line names the URL
    assert subprocess.run(["zstd", "-dc", out], capture_output=True,
                          check=True).stdout == (www / "t.tar").read_bytes()
    assert oct(os.stat(out).st_mode & 0o777) == "0o644"
    with mount(out, "--no-prefetch") as m:
        assert "decoders_started=0\n" in xattr_info(m.path)
        compare_trees(m.path, ref)
    r = subprocess.run([CONVERT_TOOL, "-q", f"{ng.url}/missing.tar.gz", tmp_path / "x.tar.zst"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1 and "missing.tar.gz" in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "x.tar.zst")


def test_zip_and_single_file_by_url(site, mount, tmp_path):
    ng, www, ref, tree = site
    if os.path.exists(www / "t.zip"):
        with mount(f"{ng.url}/t.zip", env=cache_env(tmp_path)) as m:
            with open(m.path + "/big.bin", "rb") as f:
                assert f.read() == (tree / "big.bin").read_bytes()
    with mount(f"{ng.url}/vm.img.gz", env=cache_env(tmp_path)) as m:
        assert os.listdir(m.path) == ["vm.img"]
        got = open(m.path + "/vm.img", "rb").read()
        want = subprocess.run(["gzip", "-dc", str(www / "vm.img.gz")], capture_output=True,
                              check=True).stdout
        assert got == want


def test_published_index_is_fetched_and_used(site, mount, tmp_path):
    """An index built from the local copy and published beside the archive validates against
    the object (its mtime changed with the copy) and is used: no decode at mount, and a read
    of a small file costs a request or two."""
    ng, www, ref, tree = site
    local = tmp_path / "local"
    os.makedirs(local)
    shutil.copy(www / "t.tar.gz", local / "t.tar.gz")
    subprocess.run([INDEX_TOOL, "-q", str(local / "t.tar.gz")], check=True)
    # "upload": copies with new mtimes
    shutil.copy(local / "t.tar.gz.index.sqlite", www / "t.tar.gz.index.sqlite")
    os.utime(www / "t.tar.gz", (time.time() - 3600, time.time() - 3600))
    ng.clear_log()
    with mount(f"{ng.url}/t.tar.gz", env=cache_env(tmp_path)) as m:
        assert "using the index published beside" in m.log()
        assert "indexed t.tar.gz" not in m.log()
        assert "decoders_started=0" in xattr_info(m.path)
        # the probe, and the first and last MiB that fingerprint the object
        assert body_bytes(ng.requests(), "/t.tar.gz") <= (2 << 20) + (64 << 10)
    # the next mount uses the copy in the cache folder, which learnt the object's ETag: no
    # index fetched, no fingerprint, only the probe
    ng.clear_log()
    with mount(f"{ng.url}/t.tar.gz", env=cache_env(tmp_path)) as m:
        assert "decoders_started=0" in xattr_info(m.path)
        reqs = ng.requests(at_least=1)
        assert [r["uri"] for r in reqs] == ["/t.tar.gz"], reqs
        ng.clear_log()
        names = sorted(p for p in ref.rglob("*") if p.is_file() and not p.is_symlink()
                       and 0 < p.stat().st_size < 4096)
        assert len(names) >= 5
        for p in names[:5]:
            rel = os.path.relpath(p, ref)
            assert open(os.path.join(m.path, rel), "rb").read() == p.read_bytes()
        # each read: the compressed span of its checkpoint, in one request (the first may
        # hold the others' spans: the tree is small)
        reqs = [r for r in ng.requests() if r["uri"] == "/t.tar.gz"]
        assert 1 <= len(reqs) <= 5, reqs
        compare_trees(m.path, ref)


def test_index_built_from_url_notices_a_changed_object(site, mount, tmp_path):
    ng, www, ref, tree = site
    url = f"{ng.url}/t.tar.gz"
    out = subprocess.run([INDEX_TOOL, url], capture_output=True, text=True,
                         env=dict(os.environ, **cache_env(tmp_path)))
    assert out.returncode == 0, out.stderr
    assert "index built at" in out.stdout
    out = subprocess.run([INDEX_TOOL, url], capture_output=True, text=True,
                         env=dict(os.environ, **cache_env(tmp_path)))
    assert "index valid at" in out.stdout
    # replace the object: same size, other bytes (its ETag changes with its mtime)
    data = bytearray((www / "t.tar.gz").read_bytes())
    subprocess.run(f"gzip -1 -c < {www / 't.tar'} > {www / 'new.gz'}", shell=True, check=True)
    os.replace(www / "new.gz", www / "t.tar.gz")
    assert (www / "t.tar.gz").read_bytes() != bytes(data)
    with mount(url, env=cache_env(tmp_path)) as m:
        assert "the object's size differs" in m.log() or "changed on the server" in m.log()
        compare_trees(m.path, ref)


def random_archive(www, tmp_path):
    """www/r.tar.gz holding r.bin, 12 MiB of noise: more than the smallest caches hold, so
    that reads after the first mount fetch again.  Returns r.bin's bytes."""
    d = tmp_path / "rnd"
    os.makedirs(d)
    want = random_bytes(12 << 20, seed=9)
    (d / "r.bin").write_bytes(want)
    subprocess.run(["tar", "-czf", str(www / "r.tar.gz"), "-C", str(d), "."], check=True)
    return want


def test_object_changed_under_the_mount_is_eio(site, mount, tmp_path):
    ng, www, ref, tree = site
    want = random_archive(www, tmp_path)
    # caches too small to hold what the next reads want: no disk tier (so no decoding ahead
    # either), and the remote cache holds the file's tail from the indexing pass
    with mount(f"{ng.url}/r.tar.gz", "--no-prefetch", "--cache-size", "4M",
               "--disk-cache-size", "0", "--remote-cache-size", "4M", "--remote-disk-cache", "0",
               env=cache_env(tmp_path), allow_errors=True) as m:
        with open(m.path + "/r.bin", "rb") as f:
            assert f.read(4096) == want[:4096]
        # the same size, other bytes
        data = bytearray((www / "r.tar.gz").read_bytes())
        for i in range(1000, len(data), 4096):
            data[i] ^= 0xFF
        (www / "r.tar.gz.new").write_bytes(bytes(data))
        os.utime(www / "r.tar.gz.new", (1, 1))
        os.replace(www / "r.tar.gz.new", www / "r.tar.gz")
        with pytest.raises(OSError) as e:
            read_at(m.path + "/r.bin", 2 << 20, 1 << 20)
        assert e.value.errno == errno.EIO
        assert "changed on the server" in m.log()
        assert os.listdir(m.path)  # the daemon lives
        # deleted: EIO, and the log says so
        os.remove(www / "r.tar.gz")
        with pytest.raises(OSError) as e:
            read_at(m.path + "/r.bin", 3 << 20, 1 << 20)
        assert e.value.errno == errno.EIO
        assert "not found (HTTP 404)" in m.log()
        assert os.listdir(m.path)


def test_fetched_bytes_are_kept_on_disk(site, mount, tmp_path):
    """With caches in memory smaller than the file, a second read of it is served by the
    disk tier of fetched bytes: no request reaches the server."""
    ng, www, ref, tree = site
    want = random_archive(www, tmp_path)
    with mount(f"{ng.url}/r.tar.gz", "--no-prefetch", "--cache-size", "4M",
               "--disk-cache-size", "0", "--remote-cache-size", "4M",
               "--remote-disk-cache", "64M", env=cache_env(tmp_path)) as m:
        ng.clear_log()
        assert open(m.path + "/r.bin", "rb").read() == want
        first = [r for r in ng.requests() if r["uri"] == "/r.tar.gz"]
        assert first and body_bytes(first, "/r.tar.gz") >= len(want) / 2
        subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=False)
        quiet(ng)  # a background fetch may still be ending
        ng.clear_log()
        with open(m.path + "/r.bin", "rb") as f:  # backwards: nothing of it is in memory
            for off in range(len(want) - (1 << 20), -1, -(1 << 20)):
                f.seek(off)
                assert f.read(1 << 20) == want[off:off + (1 << 20)]
        assert not [r for r in ng.requests() if r["uri"] == "/r.tar.gz"]


def test_refusals_are_clear(site, tmp_path):
    ng, www, ref, tree = site
    os.makedirs(tmp_path / "m1", exist_ok=True)
    r = run_tarseek(f"{ng.url}/missing.tar.gz", str(tmp_path / "m1"), env=cache_env(tmp_path))
    assert r.returncode != 0 and "not found (HTTP 404)" in r.stderr
    # a server without ranges
    with Nginx(www, tmp_path, ranges=False) as plain:
        r = run_tarseek(f"{plain.url}/t.tar.gz", str(tmp_path / "m1"), env=cache_env(tmp_path))
        assert r.returncode != 0 and "does not honour Range" in r.stderr
    # nothing listens
    r = run_tarseek("http://127.0.0.1:9/t.tar.gz", "--remote-timeout", "2", str(tmp_path / "m1"),
                    env=cache_env(tmp_path))
    assert r.returncode != 0 and "gave up after" in r.stderr
    r = run_tarseek("s3://bucket", str(tmp_path / "m1"), env=cache_env(tmp_path))
    assert r.returncode != 0 and "s3://BUCKET/KEY" in r.stderr
    r = run_tarseek("--s3-endpoint", "ftp://x", "s3://b/k", str(tmp_path / "m1"))
    assert r.returncode != 0 and "not an http:// or https:// URL" in r.stderr


def test_https_http2_and_certificates(tmp_path, mount, archives):
    require_nginx(tls=True)
    www = served(archives, tmp_path / "www")
    ref = archives[1]
    with Nginx(www, tmp_path, tls=True) as ng:
        os.makedirs(tmp_path / "m0", exist_ok=True)
        r = run_tarseek(f"{ng.url}/t.tar.gz", str(tmp_path / "m0"), env=cache_env(tmp_path))
        assert r.returncode != 0 and "TLS certificate not trusted" in r.stderr
        env = dict(cache_env(tmp_path), CURL_CA_BUNDLE=ng.ca_file)
        with mount(f"{ng.url}/t.tar.xz", env=env) as m:
            compare_trees(m.path, ref)
        protos = {r["protocol"] for r in ng.requests() if r["uri"] == "/t.tar.xz"}
        assert protos == {"HTTP/2.0"}


def test_faults_are_retried_or_eio_within_the_bound(site, mount, tmp_path):
    """Each fault on a fresh mount (the index is kept: a mount costs the probe), so that
    nothing of what is read is held already."""
    ng, www, ref, tree = site
    want = random_archive(www, tmp_path)
    opts = ("--no-prefetch", "--remote-timeout", "6", "--remote-cache-size", "4M",
            "--remote-disk-cache", "0", "--cache-size", "4M")

    def read(m, off, n):
        return read_at(m.path + "/r.bin", off, n)

    with FaultProxy("127.0.0.1", ng.port) as px:
        url = f"{px.url}/r.tar.gz"
        px.fail_next(3, status=503)
        with mount(url, *opts, env=cache_env(tmp_path), allow_errors=True) as m:
            assert "done after 4 tries" in m.log()
            # dropped mid-body (FIN), twice, then fine: the right bytes
            px.drop_next(2, after_bytes=5000)
            assert read(m, 2 << 20, 1 << 20) == want[2 << 20:3 << 20]
            assert px.log and not px._faults
        with mount(url, *opts, env=cache_env(tmp_path), allow_errors=True) as m:
            # reset (RST) mid-body, then fine
            px.drop_next(1, after_bytes=20000, reset=True)
            assert read(m, 3 << 20, 1 << 20) == want[3 << 20:4 << 20]
            assert not px._faults
        with mount(url, *opts, env=cache_env(tmp_path), allow_errors=True) as m:
            # 429 with Retry-After 0, twice, then fine
            px.fail_next(2, status=429, retry_after=0)
            assert read(m, 4 << 20, 256 << 10) == want[4 << 20:(4 << 20) + (256 << 10)]
            assert not px._faults
        with mount(url, *opts, env=cache_env(tmp_path), allow_errors=True) as m:
            # a server that keeps failing: EIO within the bound, nothing wrong returned
            px.fail_next(1000, status=503)
            t0 = time.monotonic()
            with pytest.raises(OSError) as e:
                read(m, 5 << 20, 512 << 10)
            assert e.value.errno == errno.EIO
            assert time.monotonic() - t0 < 6 + 15
            assert "gave up after" in m.log()
            # ... and it comes back
            px.reset()
            assert read(m, 5 << 20, 512 << 10) == want[5 << 20:(5 << 20) + (512 << 10)]
        with mount(url, *opts, env=cache_env(tmp_path), allow_errors=True) as m:
            # a stalled body is cut and retried
            px.stall_next(1, seconds=30, after_bytes=100)
            assert read(m, 0, len(want)) == want
            assert not px._faults


def test_union_recursive_and_no_union(site, mount, tmp_path):
    ng, www, ref, tree = site
    inner = tmp_path / "outer"
    os.makedirs(inner)
    shutil.copy(www / "t.tar.gz", inner / "inner.tar.gz")
    (inner / "note.txt").write_text("outer\n")
    subprocess.run(["tar", "-czf", str(www / "outer.tar.gz"), "-C", str(inner), "."], check=True)
    local = tmp_path / "l.tar"
    (tmp_path / "ldir").mkdir()
    (tmp_path / "ldir" / "local-only.txt").write_text("local\n")
    subprocess.run(["tar", "-cf", str(local), "-C", str(tmp_path / "ldir"), "."], check=True)
    with mount(str(local), f"{ng.url}/t.tar.zst", env=cache_env(tmp_path)) as m:
        assert open(m.path + "/local-only.txt").read() == "local\n"
        assert open(m.path + "/big.bin", "rb").read() == (tree / "big.bin").read_bytes()
    # versions: the same path in a local and a remote archive
    (tmp_path / "ldir" / "big.bin").write_bytes(b"the local one\n")
    subprocess.run(["tar", "-cf", str(local), "-C", str(tmp_path / "ldir"), "."], check=True)
    with mount(f"{ng.url}/t.tar.gz", str(local), env=cache_env(tmp_path)) as m:
        assert open(m.path + "/big.bin", "rb").read() == b"the local one\n"  # the last wins
        assert open(m.path + "/big.bin.versions/1", "rb").read() == \
            (tree / "big.bin").read_bytes()
        assert open(m.path + "/big.bin.versions/2", "rb").read() == b"the local one\n"
    with mount("-r", f"{ng.url}/outer.tar.gz", env=cache_env(tmp_path)) as m:
        compare_trees(m.path + "/inner.tar.gz", ref)
    with mount("--no-union", str(local), f"{ng.url}/t.tar.gz?X-Amz-Signature=SECRETSIG",
               env=cache_env(tmp_path)) as m:
        assert sorted(os.listdir(m.path)) == ["l.tar", "t.tar.gz"]
        compare_trees(m.path + "/t.tar.gz", ref)
        mounts = open("/proc/mounts").read()
        assert "SECRETSIG" not in mounts and "SECRETSIG" not in m.log()
        assert "SECRETSIG" not in xattr_info(m.path + "/t.tar.gz/big.bin")


S3_KEY, S3_SECRET, S3_TOKEN = "AKIDTARSEEKTEST", "tarseek/secret+key", "session-token-1"


def s3_env(tmp_path, **kw):
    env = dict(cache_env(tmp_path), HOME=str(tmp_path / "home"))
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
              "AWS_REGION", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION"):
        env[k] = ""
    env.update(kw)
    return env


def test_s3_signed_requests(tmp_path, mount, archives):
    root = tmp_path / "s3"
    os.makedirs(root / "bucket")
    served(archives, root / "bucket" / "dir")
    ref = archives[1]
    with SigV4Server(root, S3_KEY, S3_SECRET, region="eu-west-1",
                     session_token=S3_TOKEN) as s3:
        ep = ("--s3-endpoint", s3.endpoint)
        env = s3_env(tmp_path, AWS_ACCESS_KEY_ID=S3_KEY, AWS_SECRET_ACCESS_KEY=S3_SECRET,
                     AWS_SESSION_TOKEN=S3_TOKEN, AWS_REGION="eu-west-1")
        with mount(*ep, "s3://bucket/dir/t.tar.gz", "-d", env=env) as m:
            compare_trees(m.path, ref)
            log = m.log()
        assert s3.accepted > 0 and s3.rejected == 0, s3.last_error
        assert S3_SECRET not in log and S3_TOKEN not in log
        # from a credentials file, a named profile, the region from the config file
        home = tmp_path / "home" / ".aws"
        os.makedirs(home, exist_ok=True)
        (home / "credentials").write_text(
            f"[default]\naws_access_key_id = nobody\naws_secret_access_key = x\n\n"
            f"[ci]\naws_access_key_id = {S3_KEY}\naws_secret_access_key = {S3_SECRET}\n"
            f"aws_session_token = {S3_TOKEN}\n")
        (home / "config").write_text("[profile ci]\nregion = eu-west-1\n")
        with mount("s3://bucket/dir/t.tar.xz", env=s3_env(tmp_path, AWS_PROFILE="ci",
                                                         AWS_ENDPOINT_URL=s3.endpoint)) as m:
            compare_trees(m.path, ref)
        assert s3.rejected == 0, s3.last_error
        # a wrong secret: refused, with S3's answer in the message
        bad = s3_env(tmp_path, AWS_ACCESS_KEY_ID=S3_KEY, AWS_SECRET_ACCESS_KEY="wrong",
                     AWS_SESSION_TOKEN=S3_TOKEN, AWS_REGION="eu-west-1",
                     XDG_CACHE_HOME=str(tmp_path / "c2"))
        os.makedirs(tmp_path / "m9", exist_ok=True)
        r = run_tarseek(*ep, "s3://bucket/dir/t.tar.zst", str(tmp_path / "m9"), env=bad)
        assert r.returncode != 0 and "access denied (HTTP 403)" in r.stderr
        assert "wrong" not in r.stderr
        assert s3.rejected > 0
        # unsigned: refused too (AccessDenied)
        rejected = s3.rejected
        r = run_tarseek(*ep, "s3://bucket/dir/t.tar.zst", str(tmp_path / "m9"),
                        env=s3_env(tmp_path, XDG_CACHE_HOME=str(tmp_path / "c3")))
        assert r.returncode != 0 and "access denied" in r.stderr and s3.rejected > rejected


def test_s3rver(tmp_path, mount, archives):
    require_s3rver()
    www, ref = archives[0], archives[1]
    with S3rver(tmp_path) as s3:
        s3.create_bucket("backups")
        s3.put_object("backups", "host1/t.tar.bz2", str(www / "t.tar.bz2"))
        s3.put_object("backups", "host1/vm.img.gz", str(www / "vm.img.gz"))
        # the index of the local file, uploaded beside the archive: used, nothing decoded
        local = tmp_path / "local"
        os.makedirs(local)
        shutil.copy(www / "t.tar.bz2", local / "t.tar.bz2")
        subprocess.run([INDEX_TOOL, "-q", str(local / "t.tar.bz2")], check=True)
        s3.put_object("backups", "host1/t.tar.bz2.index.sqlite",
                      str(local / "t.tar.bz2.index.sqlite"))
        env = s3_env(tmp_path, AWS_ACCESS_KEY_ID=S3rver.access_key,
                     AWS_SECRET_ACCESS_KEY=S3rver.secret_key)
        with mount("--no-union", "--s3-endpoint", s3.endpoint, "s3://backups/host1/t.tar.bz2",
                   "s3://backups/host1/vm.img.gz", env=env) as m:
            assert "using the index published beside s3://backups/host1/t.tar.bz2" in m.log()
            assert "indexed t.tar.bz2" not in m.log()
            compare_trees(m.path + "/t.tar.bz2", ref)
            want = subprocess.run(["gzip", "-dc", str(www / "vm.img.gz")],
                                  capture_output=True, check=True).stdout
            got = open(m.path + "/vm.img.gz/vm.img", "rb").read()
            assert hashlib.md5(got).digest() == hashlib.md5(want).digest()
