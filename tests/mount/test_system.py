"""Mount tests of tarseek as a system tool: through mount(8) and mount.fuse3, fstab, the ways
mount helpers and systemd call it, and tarseek -u.

mount(8) runs `mount.fuse3 SRC MNT -o OPTS`, which runs `tarseek SRC MNT -o OPTS` found on
PATH -- but mount(8) gives its helpers the default PATH (/usr/local/sbin:/usr/local/bin:...),
not the caller's.  So this file runs in a mount namespace of its own (unshare at import,
before any thread starts), where /usr/local/bin is a folder holding only a link to the
build's tarseek: mount(8) finds the build, never an installed tarseek, and nothing outside
the test sees the change.  The tests that call mount.fuse3 or tarseek directly also put the
build first on PATH.  Every case checks what /proc/mounts
says (ro, whatever was asked) and that the mount serves the archive; failures must be a
non-zero status with the reason, and leave nothing mounted.  Needs root.
"""

import ctypes
import fcntl
import os
import pwd
import select
import shutil
import signal
import struct
import subprocess
import time

import pytest

from conftest import TARSEEK, is_mounted, run

CLONE_NEWNS = 0x00020000


def private_namespace_with_build_on_default_path():
    """This process into a mount namespace of its own, with the build's tarseek as the only
    program in /usr/local/bin (the first folder of mount(8)'s PATH that may be empty)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tarseek-test",
                    "/usr/local/bin"], check=True)
    os.symlink(TARSEEK, "/usr/local/bin/tarseek")


if os.geteuid() == 0 and shutil.which("mount.fuse3") and os.path.isdir("/usr/local/bin"):
    private_namespace_with_build_on_default_path()

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount.fuse3"),
                                reason="needs root and mount.fuse3")

FILES = {"etc/hosts": b"127.0.0.1 localhost\n", "docs/readme.txt": b"read me\n" * 100,
         "bin/tool": b"\x7fELF" + bytes(range(256)) * 8}


@pytest.fixture
def env(tmp_path):
    """PATH with the build's tarseek first (mount.fuse3 finds it there)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(TARSEEK, bindir / "tarseek")
    return dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}")


@pytest.fixture
def archive(tmp_path):
    src = tmp_path / "src"
    for name, data in FILES.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    os.chmod(src / "bin/tool", 0o755)
    path = tmp_path / "a.tar.gz"
    run("tar", "-czf", path, "-C", src, ".")
    return path


@pytest.fixture
def mnt(tmp_path):
    m = tmp_path / "mnt"
    m.mkdir()
    yield m
    for _ in range(3):
        if not is_mounted(m):
            break
        subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)
    assert not is_mounted(m)


def mount_options(path):
    """The options /proc/mounts lists for the mount at path."""
    real = os.path.realpath(path)
    with open("/proc/mounts") as f:
        found = [line.split()[3] for line in f if line.split()[1] == real]
    assert found, f"{path} is not mounted"
    return found[-1].split(",")


def check_tree(m):
    for name, data in FILES.items():
        with open(os.path.join(m, name), "rb") as f:
            assert f.read() == data, name


def mount(env, *argv, check=True):
    r = subprocess.run(["mount", *map(str, argv)], env=env, capture_output=True, text=True,
                       timeout=60)
    if check:
        assert r.returncode == 0, r
    return r


def umount(m):
    subprocess.run(["umount", str(m)], check=True, timeout=60)
    deadline = time.monotonic() + 20
    while is_mounted(m) and time.monotonic() < deadline:
        time.sleep(0.02)


GENERIC = ["rw", "ro", "defaults", "relatime", "strictatime", "lazytime", "nodiratime",
           "noatime", "nodev", "nosuid", "noexec", "noauto", "nofail", "_netdev", "user",
           "users", "x-systemd.automount", "x-systemd.mount-timeout=300", "nonempty",
           "kernel_cache", "comment=x"]


@pytest.mark.parametrize("opt", GENERIC)
def test_generic_option_accepted_and_ro_shown(env, archive, mnt, opt):
    mount(env, "-t", "fuse.tarseek", archive, mnt, "-o", opt)
    try:
        opts = mount_options(mnt)
        assert "ro" in opts and "rw" not in opts, opts
        check_tree(mnt)
    finally:
        umount(mnt)


def test_tarseek_options_from_fstab(env, archive, mnt, tmp_path):
    """Every long option has a mount form: an fstab line says what the command line can."""
    ix = tmp_path / "ix"
    ix.mkdir()
    inner = tmp_path / "outer"
    inner.mkdir()
    shutil.copy(archive, inner / "inner.tar.gz")
    outer = tmp_path / "outer.tar"
    run("tar", "-cf", outer, "-C", inner, "inner.tar.gz")
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{outer} {mnt} fuse.tarseek noauto,recursive,strip_extension,"
                     f"index_folder={ix},cache_size=64M,gzip_spacing=1,threads=1,"
                     f"disk_cache_size=0,no_prefetch 0 0\n")
    mount(env, "-T", fstab, mnt)
    try:
        assert "ro" in mount_options(mnt)
        check_tree(mnt / "inner")  # -r and --strip-extension
        made = os.listdir(ix)
        assert len(made) == 1 and made[0].startswith("outer.tar."), made  # --index-folder
        info = os.getxattr(mnt, "user.tarseek.prefetch").decode()
        assert info.startswith("data=off"), info  # no_prefetch
    finally:
        umount(mnt)


def test_owner_and_mode_mapping(env, archive, mnt):
    nobody = pwd.getpwnam("nobody")
    mount(env, "-t", "fuse.tarseek", archive, mnt, "-o", f"uid=nobody,gid={nobody.pw_gid},"
          "umask=027,fmask=137")
    try:
        st = os.stat(mnt / "bin/tool")
        assert (st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid)
        assert st.st_mode & 0o7777 == 0o755 & ~0o137, oct(st.st_mode)
        st = os.stat(mnt / "docs")
        assert st.st_mode & 0o7777 == 0o755 & ~0o027, oct(st.st_mode)  # umask sets dmask
    finally:
        umount(mnt)


@pytest.mark.parametrize("opt, says", [("bogus", "unknown mount option 'bogus'"),
                                       ("cache_size=lots", "-o cache_size: 'lots' is not a size"),
                                       ("recursive=3", "takes no value"),
                                       ("index_folder", "wants a value"),
                                       ("uid=nosuchuserhere", "no such user")])
def test_bad_option_refused_by_name(env, archive, mnt, opt, says):
    r = mount(env, "-t", "fuse.tarseek", archive, mnt, "-o", opt, check=False)
    assert r.returncode != 0, r
    assert says in r.stderr, r.stderr
    assert not is_mounted(mnt)
    r = subprocess.run([TARSEEK, archive, mnt, "-o", opt], capture_output=True, text=True)
    assert r.returncode == 2 and says in r.stderr, r


def test_options_after_the_arguments(archive, mnt):
    r = subprocess.run([TARSEEK, archive, mnt, "-o", "cache_size=32M", "-q"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    try:
        check_tree(mnt)
    finally:
        subprocess.run([TARSEEK, "-u", mnt], check=True, timeout=60)


def test_max_read(archive, mnt):
    """max_read must be repeated at FUSE init or libfuse ends the daemon after the command
    exited 0; now it works, and the command's status is the mount's."""
    r = subprocess.run([TARSEEK, archive, mnt, "-o", "max_read=65536"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r
    try:
        check_tree(mnt)
    finally:
        subprocess.run([TARSEEK, "-u", mnt], check=True, timeout=60)


def test_failed_start_is_a_failure(tmp_path, mnt):
    """A daemon that cannot serve must not let the command report success."""
    r = subprocess.run([TARSEEK, tmp_path / "missing.tar", mnt], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "missing.tar" in r.stderr, r
    assert not is_mounted(mnt)


def test_drop_privileges(env, archive, mnt):
    """mount.fuse3 opens /dev/fuse, mounts itself and passes /dev/fd/N as the mount point."""
    mount(env, "-t", "fuse.tarseek", archive, mnt, "-o", "drop_privileges,ro")
    try:
        assert "ro" in mount_options(mnt)
        check_tree(mnt)
    finally:
        umount(mnt)


def test_no_path_no_home(archive, mnt, tmp_path):
    """mount(8) and systemd give no HOME: the index goes to /var/cache/tarseek for root."""
    src = tmp_path / "ro-src"
    src.mkdir()
    shutil.copy(archive, src / "nohome.tar.gz")
    view = tmp_path / "ro-view"  # a read-only view: nothing can go beside the archive
    view.mkdir()
    run("mount", "--bind", src, view)
    index = None
    try:
        run("mount", "-o", "remount,ro,bind", view)
        r = subprocess.run([TARSEEK, view / "nohome.tar.gz", mnt], env={},
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r
        try:
            check_tree(mnt)
            index = os.getxattr(mnt / "etc/hosts", "user.tarseek.index").decode()
            assert index.startswith("/var/cache/tarseek/nohome.tar.gz."), index
        finally:
            subprocess.run([TARSEEK, "-u", mnt], check=True, timeout=60)
    finally:
        subprocess.run(["umount", view], timeout=30)
        if index:
            os.unlink(index)


def test_unmount_waits_for_the_daemon(archive, mnt):
    subprocess.run([TARSEEK, archive, mnt], check=True, timeout=60)
    pid = int(os.getxattr(mnt, "user.tarseek.pid"))
    os.kill(pid, 0)
    r = subprocess.run([TARSEEK, "-u", mnt], capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r
    assert not is_mounted(mnt)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    r = subprocess.run([TARSEEK, "-u", mnt], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "not a tarseek mount" in r.stderr, r


def test_recursive_folder_source(archive, mnt, tmp_path):
    """-r mounts archives found in a folder source in their place, like archives inside
    archives (their indexes where top-level ones go)."""
    folder = tmp_path / "bundles"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(archive, folder / "sub" / "one.tar.gz")
    shutil.copy(archive, folder / "two.tgz")
    (folder / "fake.tar.gz").write_bytes(b"not an archive at all\n")
    (folder / "notes.txt").write_text("notes\n")
    ix = tmp_path / "ix"
    other = tmp_path / "other.tar.gz"
    shutil.copy(archive, other)
    subprocess.run([TARSEEK, "-r", "--index-folder", ix, folder, other, mnt], check=True,
                   timeout=60)
    try:
        check_tree(mnt / "sub" / "one.tar.gz")
        check_tree(mnt / "two.tgz")
        assert os.path.isfile(mnt / "fake.tar.gz")  # named like one, but not an archive
        assert (mnt / "fake.tar.gz").read_bytes() == b"not an archive at all\n"
        assert (mnt / "notes.txt").read_text() == "notes\n"
        assert len(os.listdir(ix)) == 3  # other, one, two
    finally:
        subprocess.run([TARSEEK, "-u", mnt], check=True, timeout=60)


# ---- x-systemd.automount: mounting over an autofs trigger ---------------------------------

AUTOFS_IOC_READY = 0x9360
AUTOFS_IOC_FAIL = 0x9361
AUTOFS_IOC_CATATONIC = 0x9362
V5_PACKET = "<iiIIQIIIII256s"  # struct autofs_v5_packet, padded to 304 bytes


def test_mount_over_autofs_trigger(archive, mnt):
    """What systemd does for x-systemd.automount: a direct autofs mount on the mount point;
    the first access asks the automounter (here: this test), which mounts tarseek on top and
    tells the kernel it is ready; the access then sees the archive."""
    r, w = os.pipe()
    try:
        subprocess.run(["mount", "-t", "autofs", "-o",
                        f"fd={w},pgrp={os.getpgrp()},minproto=5,maxproto=5,direct",
                        "tarseek-test", mnt], check=True, pass_fds=(w,), timeout=30)
    except subprocess.CalledProcessError:
        pytest.skip("cannot make an autofs mount here")
    ioctl_fd = os.open(mnt, os.O_RDONLY)  # in our process group: no trigger
    client = None
    daemon = None
    try:
        # an access from another process group triggers the automount
        client = subprocess.Popen(["cat", str(mnt / "etc/hosts")], stdout=subprocess.PIPE,
                                  start_new_session=True)
        packet = os.read(r, 304)
        fields = struct.unpack_from(V5_PACKET, packet)
        token = fields[2]
        res = subprocess.run([TARSEEK, archive, mnt], capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 0, res
        fcntl.ioctl(ioctl_fd, AUTOFS_IOC_READY, token)
        out, _ = client.communicate(timeout=30)
        assert out == FILES["etc/hosts"]
        assert "ro" in mount_options(mnt)
        check_tree(mnt)
        daemon = int(os.getxattr(mnt, "user.tarseek.pid"))
        # Once tarseek's mount is gone, an access to the mount point from another process
        # group is a new trigger, and it waits for this automounter, which waits for
        # `tarseek -u`, which waits for the daemon (a CI run hung here for a minute: the
        # warm-up's view, made late, looked the mount point up).  So while tarseek -u runs,
        # every trigger is answered (failed) and noted: the daemon must make none.
        unmount = subprocess.Popen([TARSEEK, "-u", mnt], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
        triggers = []
        deadline = time.monotonic() + 60
        while unmount.poll() is None and time.monotonic() < deadline:
            if select.select([r], [], [], 0.05)[0]:
                p = struct.unpack_from(V5_PACKET, os.read(r, 304))
                triggers.append({"pid": p[7], "tgid": p[8], "name": p[10]})
                fcntl.ioctl(ioctl_fd, AUTOFS_IOC_FAIL, p[2])
        assert unmount.wait(timeout=5) == 0, unmount.stdout.read()
        assert not [t for t in triggers if t["tgid"] == daemon], \
            f"the daemon (pid {daemon}) looked the mount point up after its unmount: {triggers}"
    finally:
        if client and client.poll() is None:
            client.kill()
        # catatonic: from now on an access fails at once instead of waiting for this test
        fcntl.ioctl(ioctl_fd, AUTOFS_IOC_CATATONIC, 0)
        if daemon is None:  # failed before its unmount
            subprocess.run([TARSEEK, "-u", mnt], timeout=60)
        os.close(ioctl_fd)
        os.close(r)
        os.close(w)
        subprocess.run(["umount", "-l", mnt], timeout=30)
