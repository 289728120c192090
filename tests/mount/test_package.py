"""tarseek as an installed system tool.

Always (cheap: nothing is built here):
- `meson install --destdir` of the build makes the whole tree: the four programs, their man
  pages, the bash completion under its four names;
- the bash completion (completion/tarseek.bash) offers the options of each tool's --help,
  tarseek's mount options after -o, and files, folders, users or mount points where they
  belong.

With TARSEEK_PACKAGE_TEST=1 (tools/test.sh, after installing the .deb that tools/package.sh
made): the installed package -- its files, /usr/bin/tarseek serving a mount, mount -t
fuse.tarseek and an fstab line running /usr/bin/tarseek through mount.fuse3, man finding
the pages, bash-completion loading the script.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BUILD

SOURCE = os.environ.get("TARSEEK_SOURCE") or os.path.join(os.path.dirname(__file__), "..", "..")
PROGRAMS = {"tarseek": os.path.join(BUILD, "fs", "tarseek"),
            "tarseek-index": os.path.join(BUILD, "tools", "tarseek-index"),
            "tarseek-bench": os.path.join(BUILD, "tools", "tarseek-bench"),
            "tarseek-convert": os.path.join(BUILD, "tools", "tarseek-convert")}
COMPLETION = os.path.join(SOURCE, "completion", "tarseek.bash")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"


def help_options(tool):
    """The options of tool --help (the parser of test_manpages)."""
    from test_manpages import help_options as parse
    r = subprocess.run([PROGRAMS[tool], "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r
    return parse(r.stdout)


# ---- meson install ---------------------------------------------------------------------------

def test_meson_install_makes_the_whole_tree(tmp_path):
    dest = tmp_path / "dest"
    r = subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--quiet",
                        "--destdir", dest], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    prefix = subprocess.run(["meson", "introspect", "--buildoptions", BUILD],
                            capture_output=True, text=True, check=True).stdout
    import json
    opts = {o["name"]: o["value"] for o in json.loads(prefix)}
    root = str(dest) + opts["prefix"]
    bindir = os.path.join(root, opts["bindir"])
    mandir = os.path.join(root, opts["mandir"], "man1")
    compdir = os.path.join(root, opts["datadir"], "bash-completion", "completions")
    want = {os.path.join(bindir, p) for p in PROGRAMS}
    want |= {os.path.join(mandir, p + ".1") for p in PROGRAMS}
    want |= {os.path.join(compdir, p) for p in PROGRAMS}
    got = {os.path.join(d, f) for d, _, files in os.walk(dest) for f in files}
    assert got == want, f"missing: {sorted(want - got)}, unexpected: {sorted(got - want)}"
    for p in PROGRAMS:
        r = subprocess.run([os.path.join(bindir, p), "--version"], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0 and r.stdout.startswith(p + " "), r
        with open(os.path.join(compdir, p)) as f:  # the links resolve to the script
            assert f.read() == open(COMPLETION).read()
        with open(os.path.join(mandir, p + ".1")) as f:
            page = f.read()
        th = ".TH " + p.upper().replace("-", "\\-") + " 1 "
        assert th in page and "@VERSION@" not in page, page[:300]


# ---- debian/ ---------------------------------------------------------------------------------

# what Debian package brings each library meson.build asks for (dependency() or find_library())
DEV_PACKAGES = {"threads": None, "m": None, "dl": None, "sqlite3": "libsqlite3-dev", "zlib": "zlib1g-dev",
                "liblzma": "liblzma-dev", "bz2": "libbz2-dev", "libzstd": "libzstd-dev",
                "libxxhash": "libxxhash-dev", "lzo2": "liblzo2-dev", "fuse3": "libfuse3-dev",
                "libcrypto": "libssl-dev", "libisal": "libisal-dev", "liblz4": "liblz4-dev",
                "libarchive": "libarchive-dev", "libcurl": "libcurl4-openssl-dev",
                "ext2fs": "libext2fs-dev", "com_err": "comerr-dev", "libfsntfs": "libfsntfs-dev",
                "libbfio": "libbfio-dev", "json-c": "libjson-c-dev",
                "libsquashfs1": "libsquashfs-dev"}


def test_debian_build_depends_cover_meson_build():
    wanted = set()
    for d, _, files in os.walk(SOURCE):
        if os.path.relpath(d, SOURCE).split(os.sep)[0].startswith(("build", ".git", "obj-")):
            continue
        for f in files:
            if f != "meson.build" or os.path.relpath(d, SOURCE).startswith("tests"):
                continue
            text = open(os.path.join(d, f)).read()
            for name in re.findall(r"(?:dependency|find_library)\(\s*'([^']+)'", text):
                assert name in DEV_PACKAGES, \
                    f"{d}/meson.build needs {name}: add its -dev package to debian/control " \
                    "and to DEV_PACKAGES here"
                if DEV_PACKAGES[name]:
                    wanted.add(DEV_PACKAGES[name])
    with open(os.path.join(SOURCE, "debian", "control")) as f:
        control = f.read()
    m = re.search(r"^Build-Depends:(.*?)^\S", control, re.S | re.M)
    have = {re.split(r"[\s(]", d.strip())[0] for d in m.group(1).split(",") if d.strip()}
    assert wanted <= have, f"debian/control lacks {sorted(wanted - have)}"
    assert {"debhelper-compat", "meson", "ninja-build"} <= have


def test_debian_changelog_has_the_project_version():
    import json
    info = subprocess.run(["meson", "introspect", "--projectinfo", BUILD], capture_output=True,
                          text=True, check=True).stdout
    with open(os.path.join(SOURCE, "debian", "changelog")) as f:
        first = f.readline()
    assert first.startswith(f"tarseek ({json.loads(info)['version']}) "), first


# ---- bash completion -------------------------------------------------------------------------

# Runs bash's completion of a command line (the cursor at its end) as bash would: the line
# split into words at blanks and at the COMP_WORDBREAKS characters = and :, then the function
# registered for the command called; prints the replies.
HARNESS = r'''
source "$BASH_COMPLETION"
source "$COMPLETION"
compopt() { :; }  # only allowed while readline completes
line=$1 w='' words=()
for ((i = 0; i < ${#line}; i++)); do
    c=${line:i:1}
    if [[ $c == ' ' ]]; then
        [[ -n $w ]] && words+=("$w")
        w=''
    elif [[ $c == [=:] ]]; then
        [[ -n $w && $w != [=:]* ]] && { words+=("$w"); w=''; }
        w+=$c
    else
        [[ $w == [=:]* ]] && { words+=("$w"); w=''; }
        w+=$c
    fi
done
words+=("$w")
COMP_WORDS=("${words[@]}") COMP_CWORD=$((${#words[@]} - 1)) COMP_LINE=$line
COMP_POINT=${#line}
spec=$(complete -p "${words[0]}") || exit 3
fn=${spec#*-F } fn=${fn%% *}
"$fn" "${words[0]}" "${words[COMP_CWORD]}" "${words[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''


@pytest.fixture
def complete(tmp_path):
    if not os.path.exists(BASH_COMPLETION):
        pytest.skip("bash-completion is not installed (tools/install-deps.sh installs it)")
    (tmp_path / "d1").mkdir()
    (tmp_path / "a.tar.gz").write_bytes(b"")
    (tmp_path / "d1" / "x.index.sqlite").write_bytes(b"")

    def _complete(line):
        r = subprocess.run(["bash", "-c", HARNESS, "harness", line], cwd=tmp_path,
                           capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, BASH_COMPLETION=BASH_COMPLETION,
                                    COMPLETION=COMPLETION))
        assert r.returncode == 0 and not r.stderr, r
        return sorted(x for x in r.stdout.splitlines() if x)
    return _complete


def script_words(var):
    r = subprocess.run(["bash", "-c", f'source "$0"; printf "%s\\n" ${{{var}}}', COMPLETION],
                       capture_output=True, text=True, check=True)
    return set(r.stdout.split())


@pytest.mark.parametrize("tool,var", [("tarseek", "_tarseek_options"),
                                      ("tarseek-index", "_tarseek_index_options"),
                                      ("tarseek-bench", "_tarseek_bench_options"),
                                      ("tarseek-convert", "_tarseek_convert_options")])
def test_completion_lists_the_options_of_help(tool, var):
    offered, helped = script_words(var), set(help_options(tool))
    assert offered == helped, (f"{tool}: only --help has {sorted(helped - offered)}, "
                               f"only the completion {sorted(offered - helped)}")


def test_completion_lists_the_mount_options():
    """-o: the mount form of every long option, the owner options and FUSE's (fs/options.c's
    tables); not the generic ones tarseek ignores."""
    from test_manpages import NO_MOUNT_FORM, options_c_table
    with open(os.path.join(SOURCE, "fs", "options.c")) as f:
        text = f.read()
    want = {o[2:].replace("-", "_") + ("=" if arg else "")
            for o, arg in help_options("tarseek").items()
            if o.startswith("--") and o not in NO_MOUNT_FORM}
    want |= set(options_c_table(text, "fuse_flags"))
    want |= {n + "=" for t in ("fuse_valued", "owner_opts") for n in options_c_table(text, t)}
    offered = script_words("_tarseek_mount_options")
    assert offered == want, f"missing {sorted(want - offered)}, extra {sorted(offered - want)}"


def test_completion_of_command_lines(complete, tmp_path):
    assert complete("tarseek --index-f") == ["--index-file", "--index-folder"]
    assert complete("tarseek -o rec") == ["recreate_index", "recursion_depth=", "recursive"]
    assert complete("tarseek -o ro,allow_o") == ["ro,allow_other"]
    assert complete("tarseek -oallow_r") == ["-oallow_root"]
    # a value: readline completes the text after '=', so the replies are that text
    assert complete("tarseek -o recursive,index_folder=d") == ["d1"]
    assert complete("tarseek --index-folder d") == ["d1"]
    assert complete("tarseek --index-folder=d") == ["d1"]
    assert complete("tarseek -o uid=roo") == ["root"]
    assert complete("tarseek -o cache_size=") == []
    assert complete("tarseek --threads ") == []
    assert complete("tarseek a") == ["a.tar.gz"]
    assert complete("tarseek -r a.tar.gz ") == ["a.tar.gz", "d1"]
    assert complete("tarseek-index --ch") == ["--check"]
    assert complete("tarseek-index --index-folder ") == ["d1"]
    assert complete("tarseek-index ") == ["a.tar.gz", "d1"]
    assert complete("tarseek-bench --workload ") == ["grep", "md5", "tar"]
    assert complete("tarseek-bench --dir ") == ["d1"]
    assert complete("tarseek-bench --csv d1/") == ["d1/x.index.sqlite"]
    assert complete("tarseek-bench --mount-c") == ["--mount-cmd"]
    assert complete("tarseek-bench --order ") == ["archive", "list", "random"]
    assert complete("tarseek-bench --throttle ") == []
    assert complete("tarseek-convert --so") == ["--source-index"]
    assert complete("tarseek-convert --index-f") == ["--index-file", "--index-folder"]
    assert complete("tarseek-convert --index-folder ") == ["d1"]
    assert complete("tarseek-convert --source-index d1/") == ["d1/x.index.sqlite"]
    assert complete("tarseek-convert --level ") == []
    assert complete("tarseek-convert -b ") == []
    assert complete("tarseek-convert a.tar.gz ") == ["a.tar.gz", "d1"]


def test_completion_after_u_offers_tarseek_mounts(complete, mount, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"f\n")
    subprocess.run(["tar", "-czf", tmp_path / "m.tar.gz", "-C", tmp_path / "src", "."],
                   check=True)
    with mount(tmp_path / "m.tar.gz", "--no-prefetch", mountpoint=str(tmp_path / "mnt x")):
        # its mount point (/proc/mounts writes the space as \040), not the folders
        assert complete(f"tarseek -u {tmp_path}/") == [f"{tmp_path}/mnt x"]
        assert complete(f"tarseek --unmount {tmp_path}/mn") == [f"{tmp_path}/mnt x"]
    # no tarseek mount there: folders
    assert complete(f"tarseek -u {tmp_path}/d") == [f"{tmp_path}/d1"]


# ---- the installed package -------------------------------------------------------------------
# tools/test.sh builds the .deb (tools/package.sh), installs it, runs this file with
# TARSEEK_PACKAGE_TEST=1 and removes the package again.  These tests use /usr/bin/tarseek by
# its path: /usr/local/bin/tarseek may be a developer's link to a build, and PATH (and the
# shell behind mount(8)) finds that one first.

INSTALLED = {p: "/usr/bin/" + p for p in PROGRAMS}
FILES = {"etc/hosts": b"127.0.0.1 localhost\n", "docs/readme.txt": b"read me\n" * 100}

installed = pytest.mark.skipif(os.environ.get("TARSEEK_PACKAGE_TEST") != "1",
                               reason="tools/test.sh installs the package for these "
                                      "(TARSEEK_PACKAGE_TEST=1)")


@pytest.fixture
def archive(tmp_path):
    src = tmp_path / "src"
    for name, data in FILES.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    path = tmp_path / "backup.tar.gz"
    subprocess.run(["tar", "-czf", path, "-C", src, "."], check=True)
    return path


@installed
def test_package_holds_the_tree():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", "tarseek"],
                       capture_output=True, text=True)
    assert r.stdout.startswith("install ok installed"), r
    files = set(subprocess.run(["dpkg", "-L", "tarseek"], capture_output=True, text=True,
                               check=True).stdout.split())
    for p, path in INSTALLED.items():
        assert path in files
        assert f"/usr/share/man/man1/{p}.1.gz" in files
        assert f"/usr/share/bash-completion/completions/{p}" in files
        ours = subprocess.run([PROGRAMS[p], "--version"], capture_output=True, text=True)
        theirs = subprocess.run([path, "--version"], capture_output=True, text=True)
        assert theirs.returncode == 0
        assert theirs.stdout.splitlines()[0] == ours.stdout.splitlines()[0]


@installed
@pytest.mark.parametrize("tarseek_bin", [INSTALLED["tarseek"]])  # the mount fixture's daemon
def test_installed_daemon_serves(mount, archive):
    with mount(archive) as m:
        assert os.readlink(f"/proc/{m.proc.pid}/exe") == INSTALLED["tarseek"]
        for name, data in FILES.items():
            with open(os.path.join(m, name), "rb") as f:
                assert f.read() == data, name


# In a mount namespace of its own, where empty folders hide /usr/local/bin and /usr/local/sbin:
# mount(8) passes no PATH to mount.fuse3, whose shell then looks in its default path,
# /usr/local/bin first.  Mounts with mount -t fuse.tarseek and with an fstab line, checks that
# the daemon is /usr/bin/tarseek, a file's bytes and the read-only flag, and unmounts with
# /usr/bin/tarseek -u (which waits for the daemon to end).  Lazily unmounts on any failure.
MOUNT_SCRIPT = r'''
set -euo pipefail
for d in /usr/local/bin /usr/local/sbin; do
    if [ -d "$d" ]; then mount -t tmpfs -o size=64k,mode=0755 tarseek-test "$d"; fi
done
found=$(env -i /bin/sh -c 'command -v tarseek')
if [ "$found" != /usr/bin/tarseek ]; then echo "the shell finds tarseek at $found"; exit 1; fi
trap 'umount -l "$MNT" 2>/dev/null || true; umount -l "$MNT2" 2>/dev/null || true' EXIT
check() { # NAME MOUNTPOINT FILE
    pid=$(getfattr --only-values -n user.tarseek.pid "$2")
    exe=$(readlink "/proc/$pid/exe")
    if [ "$exe" != /usr/bin/tarseek ]; then echo "$1: the daemon is $exe"; exit 1; fi
    cmp "$2/$3" "$EXPECT"
    if ! grep -q "^[^ ]* $2 fuse.tarseek ro," /proc/mounts; then
        echo "$1: not a read-only fuse.tarseek mount:"; grep " $2 " /proc/mounts; exit 1
    fi
    /usr/bin/tarseek -u "$2"
    if grep -q " $2 " /proc/mounts; then echo "$1: still mounted"; exit 1; fi
    if kill -0 "$pid" 2>/dev/null; then echo "$1: the daemon did not end"; exit 1; fi
    echo "$1: ok"
}
mount -t fuse.tarseek -o ro,allow_other,recursive "$ARCHIVE" "$MNT"
check "mount -t fuse.tarseek" "$MNT" "$FILE"
mount -T "$FSTAB" -a
check "fstab" "$MNT" "$FILE"
check "fstab -o recursive" "$MNT2" "$INNER"
'''


@installed
def test_mount_t_and_fstab_run_the_installed_binary(archive, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    expect = tmp_path / "expect"
    expect.write_bytes(FILES["docs/readme.txt"])
    mnt2 = tmp_path / "mnt2"
    mnt2.mkdir()
    # an archive holding the archive: with recursive its members show inside it
    outer = tmp_path / "outer.tar"
    subprocess.run(["tar", "-cf", outer, "-C", archive.parent, archive.name], check=True)
    fstab = tmp_path / "fstab"
    fstab.write_text(f"# mount -T FILE -a: a plain entry and one with tarseek's options\n"
                     f"{archive} {mnt} fuse.tarseek defaults 0 0\n"
                     f"{outer} {mnt2} fuse.tarseek ro,nofail,recursive,cache_size=64M,"
                     f"index_folder={tmp_path} 0 0\n")
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c",
                        MOUNT_SCRIPT], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, MNT=str(mnt), MNT2=str(mnt2), ARCHIVE=str(archive),
                                INNER=f"{archive.name}/docs/readme.txt",
                                FILE="docs/readme.txt", EXPECT=str(expect), FSTAB=str(fstab)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-3:] == ["mount -t fuse.tarseek: ok", "fstab: ok",
                                          "fstab -o recursive: ok"], r.stdout
    # and outside: which tarseek mount(8) would start on this machine
    found = subprocess.run(["env", "-i", "/bin/sh", "-c", "command -v tarseek"],
                           capture_output=True, text=True).stdout.strip()
    if found and os.path.realpath(found) != INSTALLED["tarseek"]:
        import warnings
        warnings.warn(f"mount -t fuse.tarseek on this machine runs {found} -> "
                      f"{os.path.realpath(found)}, not {INSTALLED['tarseek']}")


@installed
@pytest.mark.parametrize("tool", sorted(PROGRAMS))
def test_man_finds_the_installed_page(tool):
    r = subprocess.run(["man", "-aw", tool], capture_output=True, text=True)
    assert f"/usr/share/man/man1/{tool}.1.gz" in r.stdout.split(), r
    env = dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "--warnings=w", "-l", f"/usr/share/man/man1/{tool}.1.gz"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and not r.stderr and tool in r.stdout, r.stderr


@installed
@pytest.mark.parametrize("tool", sorted(PROGRAMS))
def test_bash_completion_loads_the_installed_script(tool):
    """bash-completion finds it by the command's name (three of the names are links)."""
    script = (f'source {BASH_COMPLETION}; __load_completion {tool} || exit 3; '
              f'complete -p {tool}; declare -F _tarseek_mount_option')
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent",
                            "XDG_DATA_DIRS": "/usr/share"})
    assert r.returncode == 0, r
    fn = "_" + tool.replace("-", "_")
    assert f"-F {fn} {tool}" in r.stdout, r.stdout
