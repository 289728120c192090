"""The man pages (man/*.1.in, configured into the build's man/) against the tools.

- Every option that a tool's --help lists has an entry in the OPTIONS section of its man page,
  and every option the man page lists there is in --help (both parsed: the option heads of
  --help, the .TP/.TQ tags of the page).
- tarseek(1)'s MOUNT OPTIONS: every long option of --help (but -u, -h, -V) has its -o form
  there, with a value exactly when the option takes one; every mount option fs/options.c
  accepts is there; and the daemon accepts every mount option the page lists.
- Each page renders with groff -man -Tutf8 -ww and man -l without a warning, names every
  option in its text, and has a NAME line that mandb can index; tarseek(1)'s systemd unit
  examples pass systemd-analyze verify.

Needs neither root nor FUSE: the daemon is only asked for --help.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BUILD

SOURCE = os.environ.get("TARSEEK_SOURCE") or os.path.join(os.path.dirname(__file__), "..", "..")
TOOLS = {
    "tarseek": os.path.join(BUILD, "fs", "tarseek"),
    "tarseek-index": os.path.join(BUILD, "tools", "tarseek-index"),
    "tarseek-bench": os.path.join(BUILD, "tools", "tarseek-bench"),
    "tarseek-convert": os.path.join(BUILD, "tools", "tarseek-convert"),
}
NO_MOUNT_FORM = {"--unmount", "--help", "--version"}

# an option head in --help: "-f, --foreground", "--index-file PATH", "-o OPT[,OPT...]",
# "-h, --help; -V, --version", indented by at most 8 columns (descriptions by more)
_OPT = r"(?:-[A-Za-z0-9]|--[a-z0-9][a-z0-9-]*)(?: [A-Z][A-Z0-9_]*(?:\[[^\]]*\])?)?"
_HEAD = re.compile(rf"^ {{1,8}}({_OPT}(?:(?:, |; ){_OPT})*)")
_NAME = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*|-[A-Za-z0-9])(?![\w-])")


def help_text(tool):
    path = TOOLS[tool]
    if not os.path.exists(path):
        pytest.fail(f"{path} is not built")
    r = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r
    return r.stdout


def help_options(text):
    """{option: takes an argument} of every option head in a --help text."""
    found = {}
    for line in text.splitlines():
        m = _HEAD.match(line)
        if not m:
            continue
        for item in re.split(r", |; ", m.group(1)):
            names = item.split(" ")
            found[names[0]] = len(names) > 1  # ("-l, --list FILE": only --list's says)
    return found


def man_page(tool):
    path = os.path.join(BUILD, "man", tool + ".1")
    if not os.path.exists(path):
        pytest.fail(f"{path} is not made (meson configures it from man/{tool}.1.in)")
    return path


def roff_text(line):
    """The text of one roff line: font changes and escapes removed; a font macro's arguments
    joined as it prints them (.BR, .BI, ... without spaces, .B and .I with)."""
    m = re.match(r"\.([A-Z]+)\s*(.*)", line)
    if m:
        args = [q + w for q, w in re.findall(r'"([^"]*)"|(\S+)', m.group(2))]
        line = ("" if len(m.group(1)) == 2 else " ").join(args)
    line = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", line)
    return line.replace("\\-", "-").replace("\\&", "").replace("\\c", "").strip()


def sections(path):
    """{section name: [lines]} of a man page's source."""
    out, name = {}, None
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith(".SH "):
                name = line[4:].strip().strip('"')
                out[name] = []
            elif name:
                out[name].append(line)
    return out


def tags(lines):
    """The tag lines (the line after each .TP and .TQ), as text."""
    return [roff_text(lines[i + 1]) for i, line in enumerate(lines[:-1])
            if line.strip() in (".TP", ".TQ")]


def man_options(path):
    """Every option named in the tags of the OPTIONS section."""
    found = set()
    for t in tags(sections(path).get("OPTIONS", [])):
        found.update(_NAME.findall(t))
    return found


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_options_match_help(tool):
    helped = set(help_options(help_text(tool)))
    assert helped, f"no options found in {tool} --help"
    documented = man_options(man_page(tool))
    missing = sorted(helped - documented)
    extra = sorted(documented - helped)
    assert not missing, f"{tool} --help lists {missing}, {tool}(1) does not"
    assert not extra, f"{tool}(1) lists {extra}, {tool} --help does not"


def test_help_parser():
    """The parser takes option heads only, not options named in descriptions."""
    text = ("Options:\n  -f, --foreground        stay\n      --recursion-depth N at most N\n"
            "  -o OPT[,OPT...]         mount options: every long option as\n"
            "                          (default: the --cache-size)\n"
            "  -h, --help; -V, --version\n"
            "                        --tarseek-opt '--cache-size 512M'\n")
    assert help_options(text) == {"-f": False, "--foreground": False,
                                      "--recursion-depth": True, "-o": True, "-h": False,
                                      "--help": False, "-V": False, "--version": False}


# ---- tarseek(1): MOUNT OPTIONS ---------------------------------------------------------------

# a value for each metavariable of the page, one the daemon accepts
SAMPLES = {"N": "1", "MODE": "auto", "PATH": "/tmp/x.index.sqlite", "DIR": "/tmp", "MIB": "4", "SIZE": "64M",
           "USER": "root", "GROUP": "root", "MASK": "022", "BYTES": "131072", "NAME": "x",
           "TEXT": "x", "URL": "http://127.0.0.1:9000", "SECONDS": "30", "PW": "x",
           "FILE": "/etc/hostname"}  # FILE: --password-file's, a file of one line


def mount_option_tags():
    """[(name, metavariable or None)] of the tags of tarseek(1)'s MOUNT OPTIONS."""
    lines = sections(man_page("tarseek")).get("MOUNT OPTIONS")
    assert lines, "tarseek(1) has no MOUNT OPTIONS section"
    out = []
    for t in tags(lines):
        name, eq, meta = t.partition("=")
        assert re.fullmatch(r"[a-z_][a-z0-9_-]*\*?", name), f"odd mount option tag {t!r}"
        out.append((name, meta if eq else None))
    return out


def test_every_long_option_has_its_mount_form():
    helped = help_options(help_text("tarseek"))
    forms = dict(mount_option_tags())
    for opt, arg in helped.items():
        if not opt.startswith("--") or opt in NO_MOUNT_FORM:
            continue
        name = opt[2:].replace("-", "_")
        assert name in forms, f"tarseek(1) MOUNT OPTIONS lacks {name} (for {opt})"
        assert (forms[name] is not None) == arg, \
            f"{name}: {'a value' if arg else 'no value'} in --help, not in tarseek(1)"


def options_c_table(text, table):
    m = re.search(r"static const char \*const " + table + r"\[\] = \{(.*?)\};", text, re.S)
    assert m, f"fs/options.c has no table {table}[] any more: update this test"
    return re.findall(r'"([^"]*)"', m.group(1))


def test_every_accepted_mount_option_is_documented():
    """What fs/options.c accepts besides the long options: its tables and two prefixes."""
    with open(os.path.join(SOURCE, "fs", "options.c")) as f:
        text = f.read()
    forms = dict(mount_option_tags())
    accepted = {n: False for t in ("fuse_flags", "ignored") for n in options_c_table(text, t)}
    accepted.update({n: True for t in ("fuse_valued", "owner_opts")
                     for n in options_c_table(text, t)})
    accepted.update({"x-*": False, "comment": True})
    for name, valued in accepted.items():
        assert name in forms, f"tarseek accepts -o {name}, tarseek(1) does not list it"
        if name != "x-*":
            assert (forms[name] is not None) == valued, f"-o {name}: value or not?"


def test_daemon_accepts_every_documented_mount_option():
    bad = []
    for name, meta in mount_option_tags():
        opt = name.replace("*", "test") + ("=" + SAMPLES[meta] if meta else "")
        r = subprocess.run([TOOLS["tarseek"], "-o", opt, "--help"], capture_output=True,
                           text=True, timeout=30)
        if r.returncode != 0 or not r.stdout.startswith("Usage:"):
            bad.append(f"-o {opt}: exit {r.returncode}: {r.stderr.strip()}")
    assert not bad, "tarseek refuses mount options its man page lists:\n" + "\n".join(bad)
    # and the check means something: an unknown one is refused
    r = subprocess.run([TOOLS["tarseek"], "-o", "no_such_option", "--help"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "no_such_option" in r.stderr, r


# ---- rendering -------------------------------------------------------------------------------

def need(tool):
    if not shutil.which(tool):
        pytest.skip(f"{tool} is not installed (tools/install-deps.sh installs it)")


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_groff_renders_without_warnings(tool):
    need("groff")
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", man_page(tool)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not r.stderr, r.stderr


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_man_renders_without_warnings(tool):
    need("man")
    env = dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "--warnings=w", "-E", "UTF-8", "-l", man_page(tool)],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and not r.stderr, r.stderr
    out = r.stdout
    for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"):
        assert re.search(rf"^{heading}$", out, re.M), f"{tool}(1) has no {heading}"
    # every option shows whole (no hyphenation, \- written for every dash)
    words = set(re.findall(r"(?<![\w-])--?[A-Za-z0-9][a-z0-9-]*", out))
    missing = sorted(set(help_options(help_text(tool))) - words)
    assert not missing, f"{tool}(1) as rendered does not show {missing}"


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_name_line_indexable(tool):
    need("lexgrog")
    r = subprocess.run(["lexgrog", man_page(tool)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r
    assert f"{tool} - " in r.stdout, r.stdout


def test_systemd_units_of_the_page_verify(tmp_path):
    """The .mount and .automount examples of tarseek(1), as systemd-analyze verify reads
    them: no unknown key, a name that matches Where=."""
    need("systemd-analyze")
    with open(man_page("tarseek")) as f:
        page = f.read()
    units = []
    for name in ("mnt-backup.mount", "mnt-backup.automount"):
        at = page.index(".I /etc/systemd/system/" + name.replace("-", "\\-"))
        body = page[page.index(".EX\n", at) + 4:page.index(".EE\n", at)]
        assert "[Install]" in body, body
        (tmp_path / name).write_text(body.replace("\\-", "-"))
        units.append(str(tmp_path / name))
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", *units], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
