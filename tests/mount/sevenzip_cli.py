"""7-Zip's command line as the method tests use it (test_deflate64.py, test_ppmd.py): make an
archive of a folder, extract one, and compare a mount with the extraction (the tree, then
random reads of its large file)."""
import os
import random

from conftest import compare_trees, run

ENV7 = dict(os.environ, LC_ALL="C.UTF-8", TZ="UTC")


def make(archive, src, *switches):
    """7zz a of everything in src, with switches."""
    run("7zz", "a", "-bd", "-bso0", "-bsp0", "-y", *switches, archive, ".", cwd=src, env=ENV7)
    return archive


def extract(archive, dest):
    run("7zz", "x", "-y", "-bd", "-bsp0", f"-o{dest}", archive, env=ENV7)
    return dest


def check_tree(m, ref, big="sub/large.txt", reads=30):
    """The mount m equals the extraction ref (bytes, types, modes), and `reads` random reads
    of 5000 bytes of its file big give ref's bytes."""
    compare_trees(m.path, ref, check_root=False, mtimes=False, dir_mtimes=False, owners=False,
                  xattrs=False)
    data = (ref / big).read_bytes()
    rng = random.Random(5)
    with open(os.path.join(m.path, big), "rb") as f:
        for _ in range(reads):
            off = rng.randrange(len(data))
            f.seek(off)
            assert f.read(5000) == data[off:off + 5000], off
