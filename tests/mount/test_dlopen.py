"""Libraries loaded when a source needs them (common/dl.h, issue 35): libcurl at the first URL,
libarchive at the first archive of its formats.  A daemon that mounts a tar, a .tar.xz, a zip
or a 7z -- and reads from it -- maps neither (its /proc/PID/maps); a cpio mount maps
libarchive and works, a mount by URL maps libcurl and works.  With a library made unloadable
(a private mount namespace where /dev/null is bound over it), what needs it is refused with a
message naming the library, and everything else works.
"""
import os
import subprocess

import pytest

from conftest import BUILD, TARSEEK, have, require_tool, run
from netservers import Nginx, require_nginx

INDEX_TOOL = os.path.join(BUILD, "tools", "tarseek-index")
ON_DEMAND = ("libcurl", "libarchive")
FILES = {"a.txt": b"hello\n", "sub/b.bin": bytes(range(256)) * 300, "sub/empty": b""}


def mapped(pid):
    """The file names of the shared libraries the process maps."""
    with open(f"/proc/{pid}/maps") as f:
        return {os.path.basename(line.split()[-1]) for line in f if ".so" in line}


def loads(pid, name):
    return any(lib.startswith(name + ".so") or lib.startswith(name + "-") for lib in mapped(pid))


def make_src(tmp_path):
    src = tmp_path / "src"
    for name, data in FILES.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    return src


def check_files(mnt):
    for name, data in FILES.items():
        with open(os.path.join(mnt, name), "rb") as f:
            assert f.read() == data, name


def make(kind, src, out):
    """The archive of src as kind, in out."""
    if kind == "tar":
        run("tar", "-cf", out / "t.tar", "-C", src, ".")
        return out / "t.tar"
    if kind == "tar.xz":
        run("tar", "-cJf", out / "t.tar.xz", "-C", src, ".")
        return out / "t.tar.xz"
    if kind == "zip":
        require_tool("zip")
        run("zip", "-qr", out / "t.zip", ".", cwd=src)
        return out / "t.zip"
    if kind == "7z":
        require_tool("7zz")
        run("7zz", "a", "-bd", "-bso0", out / "t.7z", ".", cwd=src)
        return out / "t.7z"
    require_tool("cpio")
    names = subprocess.run("find . -mindepth 1 | LC_ALL=C sort", shell=True, cwd=src,
                           capture_output=True, check=True).stdout
    with open(out / "t.cpio", "wb") as f:
        subprocess.run(["cpio", "-o", "--quiet", "-H", "newc"], cwd=src, input=names,
                       stdout=f, check=True)
    return out / "t.cpio"


@pytest.mark.parametrize("kind", ["tar", "tar.xz", "zip", "7z"])
def test_own_formats_load_neither_library(mount, tmp_path, kind):
    archive = make(kind, make_src(tmp_path), tmp_path)
    # twice: the first mount builds the index, the second opens it
    for _ in range(2):
        with mount(archive) as m:
            check_files(m.path)
            libs = mapped(m.proc.pid)
            assert any(lib.startswith("libc.so") for lib in libs), libs  # maps are read
            for name in ON_DEMAND:
                assert not loads(m.proc.pid, name), f"{name} is mapped: {sorted(libs)}"


def test_libarchive_format_loads_libarchive(mount, tmp_path):
    if "libarchive" not in subprocess.run([TARSEEK, "--version"], capture_output=True,
                                          text=True).stdout:
        pytest.skip("tarseek built without libarchive")
    archive = make("cpio", make_src(tmp_path), tmp_path)
    with mount(archive) as m:
        check_files(m.path)
        assert loads(m.proc.pid, "libarchive")
        assert not loads(m.proc.pid, "libcurl")


def test_url_loads_libcurl(mount, tmp_path):
    require_nginx()
    www = tmp_path / "www"
    www.mkdir()
    make("tar", make_src(tmp_path), www)
    with Nginx(www, tmp_path) as ng:
        with mount(f"{ng.url}/t.tar", env={"XDG_CACHE_HOME": str(tmp_path / "cache")}) as m:
            check_files(m.path)
            assert loads(m.proc.pid, "libcurl")
            assert not loads(m.proc.pid, "libarchive")


def library_path(soname):
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():  # "\tlibarchive.so.13 (libc6,x86-64) => /lib/..."
        if line.strip().startswith(soname + " ") and "=>" in line:
            return os.path.realpath(line.split("=>")[1].strip())
    return None


def without(soname, script, *args):
    """Runs the shell script (its arguments: args) in a private mount namespace where soname
    cannot be loaded: (exit status, stdout + stderr)."""
    if not have("unshare"):
        pytest.skip("unshare is not installed")
    path = library_path(soname)
    if not path:
        pytest.skip(f"{soname} is not installed")
    hide = f'mount --bind /dev/null "{path}" || exit 99\n'
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        hide + script, "sh", *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    if r.returncode == 99:
        pytest.skip(f"cannot hide {soname} in a mount namespace: {r.stderr}")
    return r.returncode, r.stdout + r.stderr


def test_missing_libarchive_refuses_its_formats_only(tmp_path):
    if "libarchive" not in subprocess.run([TARSEEK, "--version"], capture_output=True,
                                          text=True).stdout:
        pytest.skip("tarseek built without libarchive")
    src = make_src(tmp_path)
    tar, cpio = make("tar", src, tmp_path), make("cpio", src, tmp_path)
    rc, out = without("libarchive.so.13", '"$1" --index-folder "$2" "$3" || exit 1\n'
                      '"$1" --index-folder "$2" "$4"; echo "cpio: $?"\n'
                      '"$5" --version', INDEX_TOOL, tmp_path / "idx", tar, cpio, TARSEEK)
    assert rc == 0, out
    assert "need libarchive.so.13, which cannot be loaded" in out, out
    assert "cpio: 1" in out, out
    assert "libarchive.so.13 (rar, iso9660, cpio, ...) missing" in out, out
    assert out.count("error:") == 2, out  # the library, then the index it could not build


def test_missing_libcurl_refuses_urls_only(tmp_path):
    tar = make("tar", make_src(tmp_path), tmp_path)
    rc, out = without("libcurl.so.4", '"$1" --index-folder "$2" "$3" || exit 1\n'
                      '"$1" http://127.0.0.1:9/t.tar; echo "url: $?"',
                      INDEX_TOOL, tmp_path / "idx", tar)
    assert rc == 0, out
    assert "need libcurl.so.4, which cannot be loaded" in out, out
    assert "url: 1" in out, out
