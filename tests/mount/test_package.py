"""tarseek as an installed system tool.

Always (cheap: nothing is built here):
- `meson install --destdir` of the build makes the whole tree: the three programs, their man
  pages, the bash completion under its three names;
- the bash completion (completion/tarseek.bash) offers the options of each tool's --help,
  tarseek's mount options after -o, and files, folders, users or mount points where they
  belong.
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
            "tarseek-bench": os.path.join(BUILD, "tools", "tarseek-bench")}
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
                                      ("tarseek-bench", "_tarseek_bench_options")])
def test_completion_lists_the_options_of_help(tool, var):
    offered, helped = script_words(var), set(help_options(tool))
    assert offered == helped, \
        f"{tool}: --help only {sorted(helped - offered)}, completion only {sorted(offered - helped)}"


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
