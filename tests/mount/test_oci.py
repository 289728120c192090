"""Container images (containers/oci/): an OCI image layout and a `docker save` tar mount as the
merged root file system of their image.

The images are made here with Python's tarfile (as the lead's check does), and by skopeo from
a docker save tar (its own OCI writer, gzip and zstd): layers with
whiteouts of files and folders, opaque folders, a file replaced by a folder and back,
symlinks, hard links (one to a file a later layer removes, one to a file a later layer
replaces), empty files and random data; gzip, zstd (the zstd tool) and plain layers.  The
reference is made independently of the mount: the layers extracted in order into a folder,
whiteouts applied as the OCI image spec says (ref_merge), and compare_trees checks every
byte, mode, mtime, owner, link and link count; umoci's unpack of the same layout is a second
reference, written by others (umoci 0.4.7 reads no zstd layer).  Then: several images and tags (one folder
each), --oci-raw (the tar as it is, its own index), a second mount that decodes nothing, and
damage: a layer cut short (the files before the cut read), a changed byte (EIO, never wrong bytes), bad JSON, a digest or a
size that does not match, a missing blob, an unknown media type (refused with a message).
"""
import errno
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import tarfile

import pytest

from conftest import checkpoints, compare_trees, have, read_errno, require_tool, run, run_tarseek

MT = 1_600_000_000


def layer_tar(entries):
    """A layer: entries are (path, kind, payload[, mode]) with kind 'd' (folder), 'f' (file,
    payload its bytes), 'l' (symlink to payload), 'h' (hard link to payload)."""
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        for i, e in enumerate(entries):
            path, kind, payload = e[:3]
            ti = tarfile.TarInfo(path)
            ti.mtime = MT + 1000 * i + 7
            ti.uid, ti.gid = 1000 + i % 3, 100 + i % 2
            data = None
            if kind == "d":
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            elif kind == "f":
                ti.mode, ti.size, data = 0o644, len(payload), io.BytesIO(payload)
            elif kind == "l":
                ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, payload, 0o777
            elif kind == "h":
                ti.type, ti.linkname, ti.mode = tarfile.LNKTYPE, payload, 0o644
            if len(e) > 3 and e[3] is not None:
                ti.mode = e[3]
            if len(e) > 4:  # user xattrs, as GNU tar writes them
                ti.pax_headers = {"SCHILY.xattr." + k: v for k, v in e[4].items()}
            t.addfile(ti, data)
    return b.getvalue()


def compress(data, how):
    if how == "gzip":
        return gzip.compress(data, mtime=0)
    if how == "zstd":
        return subprocess.run(["zstd", "-q", "-c", "-3"], input=data, capture_output=True,
                              check=True).stdout
    return data


MEDIA = {"gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
         "zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
         "none": "application/vnd.oci.image.layer.v1.tar"}


def add(t, name, data):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime = len(data), MT
    t.addfile(ti, io.BytesIO(data))


def oci_image(path, images, how="gzip", *, tamper=None):
    """An OCI layout at path: images are (tag or None, [layer tars]).  tamper(blobs, doc) may
    change the documents before they are written: doc is a dict of name -> bytes."""
    blobs = {}

    def blob(data):
        h = hashlib.sha256(data).hexdigest()
        blobs[h] = data
        return h

    descs = []
    for tag, layers in images:
        comp = [compress(ly, how) for ly in layers]
        cfg = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {
            "type": "layers",
            "diff_ids": ["sha256:" + hashlib.sha256(ly).hexdigest() for ly in layers]}}).encode()
        man = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": "sha256:" + blob(cfg), "size": len(cfg)},
            "layers": [{"mediaType": MEDIA[how], "digest": "sha256:" + blob(c), "size": len(c)}
                       for c in comp]}).encode()
        d = {"mediaType": "application/vnd.oci.image.manifest.v1+json",
             "digest": "sha256:" + blob(man), "size": len(man)}
        if tag:
            d["annotations"] = {"org.opencontainers.image.ref.name": tag}
        descs.append(d)
    docs = {"oci-layout": b'{"imageLayoutVersion": "1.0.0"}',
            "index.json": json.dumps({"schemaVersion": 2, "manifests": descs}).encode()}
    if tamper:
        tamper(blobs, docs)
    with tarfile.open(path, "w") as t:
        for n, d in docs.items():
            add(t, n, d)
        for h, d in blobs.items():
            add(t, "blobs/sha256/" + h, d)
    return path


def docker_image(path, images, how="none"):
    """A `docker save` tar: images are ([tags], [layer tars])."""
    with tarfile.open(path, "w") as t:
        man = []
        for k, (tags, layers) in enumerate(images):
            names = []
            for i, ly in enumerate(layers):
                n = f"{k}{i:02d}{hashlib.sha256(ly).hexdigest()[:20]}/layer.tar"
                add(t, n, compress(ly, how))
                names.append(n)
            cfg = json.dumps({"rootfs": {"type": "layers", "diff_ids": [
                "sha256:" + hashlib.sha256(ly).hexdigest() for ly in layers]}}).encode()
            cname = hashlib.sha256(cfg).hexdigest() + ".json"
            add(t, cname, cfg)
            man.append({"Config": cname, "RepoTags": tags, "Layers": names})
        add(t, "manifest.json", json.dumps(man).encode())
    return path


def ref_merge(layers, dest):
    """The reference: layers applied in order, as the OCI image spec's "Applying Changesets"
    says, into dest.  Returns the folders no layer listed (made as parents)."""
    dest = str(dest)
    os.mkdir(dest)
    layer_of = {}  # path -> layer that made it
    meta = {}
    implicit = set()

    def under(p):
        return [q for q in layer_of if q.startswith(p + "/")]

    def remove(p):
        full = os.path.join(dest, p)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        elif os.path.lexists(full):
            os.unlink(full)
        for q in [p] + under(p):
            layer_of.pop(q, None)
            meta.pop(q, None)
            implicit.discard(q)

    def prune(d, L):
        """Removes what layers before L made below d, keeping folders holding layer L's."""
        kids = sorted({q[len(d) + 1:].split("/")[0] for q in under(d)} if d else
                      {q.split("/")[0] for q in layer_of})
        keep_any = False
        for k in kids:
            p = f"{d}/{k}" if d else k
            keep = layer_of.get(p) == L
            if os.path.isdir(os.path.join(dest, p)) and not os.path.islink(os.path.join(dest, p)):
                keep |= prune(p, L)
            if keep:
                keep_any = True
            else:
                remove(p)
        return keep_any

    for L, data in enumerate(layers):
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            for ti in t.getmembers():
                p = os.path.normpath("/" + ti.name).lstrip("/")
                if not p:
                    continue
                parent, base = os.path.split(p)
                # parents: folders, made when missing
                acc = ""
                for c in parent.split("/") if parent else []:
                    acc = f"{acc}/{c}" if acc else c
                    full = os.path.join(dest, acc)
                    if os.path.lexists(full) and not (os.path.isdir(full) and not os.path.islink(full)):
                        remove(acc)
                    if not os.path.lexists(full):
                        os.mkdir(full)
                        layer_of[acc] = L
                        meta[acc] = (0o755, MT, 0, 0)
                        implicit.add(acc)
                if base == ".wh..wh..opq":
                    prune(parent, L)
                    continue
                if base.startswith(".wh."):
                    w = os.path.join(parent, base[4:]) if parent else base[4:]
                    if w in layer_of and layer_of[w] != L:
                        full = os.path.join(dest, w)
                        isdir = os.path.isdir(full) and not os.path.islink(full)
                        if not (isdir and prune(w, L)):
                            remove(w)
                    continue
                full = os.path.join(dest, p)
                target = None
                if ti.islnk():
                    target = os.path.join(dest, os.path.normpath("/" + ti.linkname).lstrip("/"))
                    if target == full:
                        continue
                    tmp = os.path.join(os.path.dirname(dest), "hardlink.tmp")
                    os.link(target, tmp)
                if os.path.lexists(full) and not (ti.isdir() and os.path.isdir(full)
                                                  and not os.path.islink(full)):
                    remove(p)
                if ti.isdir():
                    os.makedirs(full, exist_ok=True)
                elif ti.isfile():
                    with open(full, "wb") as f:
                        f.write(t.extractfile(ti).read())
                    for k, v in ti.pax_headers.items():
                        if k.startswith("SCHILY.xattr.user."):
                            os.setxattr(full, k[len("SCHILY.xattr."):], v.encode())
                elif ti.issym():
                    os.symlink(ti.linkname, full)
                elif ti.islnk():
                    os.rename(tmp, full)
                layer_of[p] = L
                implicit.discard(p)
                if ti.islnk():  # a hard link: its inode's metadata, the target's
                    meta[p] = meta[os.path.relpath(target, dest)]
                else:
                    meta[p] = (ti.mode, ti.mtime, ti.uid, ti.gid)
    for p in sorted(meta, key=lambda q: -q.count("/")):
        full = os.path.join(dest, p)
        if not os.path.lexists(full):
            continue
        mode, mtime, uid, gid = meta[p]
        os.lchown(full, uid, gid)
        if not os.path.islink(full):
            os.chmod(full, mode)
        os.utime(full, (mtime, mtime), follow_symlinks=False)
    return implicit


def rand(n, seed):
    import random
    r = random.Random(seed)
    return bytes(r.getrandbits(8) for _ in range(n))


def layers_simple():
    l1 = layer_tar([("etc", "d", None), ("etc/keep.txt", "f", b"base\n"),
                    ("etc/gone.txt", "f", b"x\n"), ("opt", "d", None),
                    ("opt/old.txt", "f", b"old\n")])
    l2 = layer_tar([("etc", "d", None), ("etc/.wh.gone.txt", "f", b""),
                    ("etc/keep.txt", "f", b"top\n"), ("opt", "d", None),
                    ("opt/.wh..wh..opq", "f", b""), ("opt/new.txt", "f", b"new\n")])
    return [l1, l2]


def layers_rules():
    """Every rule once or more."""
    big = rand(300_000, 1)
    l1 = layer_tar([
        ("usr", "d", None), ("usr/lib", "d", None), ("usr/lib/a.so", "f", big),
        ("usr/lib/b.so", "f", b"b" * 5000), ("usr/share", "d", None),
        ("usr/share/doc", "d", None), ("usr/share/doc/README", "f", b"readme\n"),
        ("var", "d", None), ("var/cache", "d", None), ("var/cache/x", "f", b"cache"),
        ("var/cache/sub", "d", None), ("var/cache/sub/y", "f", b"y"),
        ("swap", "f", b"a file, later a folder\n"),
        ("back", "d", None), ("back/inner", "f", b"in a folder, later a file\n"),
        ("bin", "l", "usr/bin"), ("usr/bin", "d", None), ("usr/bin/tool", "f", b"#!/bin/sh\n", 0o755),
        ("usr/bin/alias", "h", "usr/bin/tool"),
        ("data", "f", b"linked, then removed\n"), ("keeplink", "h", "data"),
        ("repl", "f", b"linked, then replaced\n"), ("repllink", "h", "repl"),
        ("empty", "f", b"", None, {"user.note": "kept"}), ("abs", "l", "/usr/lib/a.so"),
    ])
    l2 = layer_tar([
        ("usr", "d", None), ("usr/share", "d", None),
        ("usr/share/.wh.doc", "f", b""),  # a folder whited out
        ("var", "d", None), ("var/cache", "d", None),
        ("var/cache/new", "f", b"new in cache"),
        ("var/cache/.wh..wh..opq", "f", b""),  # opaque after this layer's own file
        ("swap", "d", None), ("swap/now-a-folder", "f", b"folder\n"),
        ("back", "f", b"a file now\n"),
        (".wh.data", "f", b""), ("repl", "f", b"replaced\n"),
        ("usr/lib/b.so", "f", rand(70_000, 2)),
        ("./dot/./slash//path", "f", b"normalised\n"),
        ("lnk2", "l", "../../etc/passwd"),
        ("../../climbs", "f", b"stays inside\n"), ("/rooted/file", "f", b"inside too\n"),
    ])
    l3 = layer_tar([
        ("swap", "f", b"a file again\n"),
        ("back", "d", None), ("back/again", "f", b"folder again\n"),
        ("usr/share/doc", "d", None), ("usr/share/doc/new", "f", b"after the whiteout\n"),
        ("var/cache/sub", "d", None), ("var/cache/sub/z", "f", b"z"),
        ("usr/lib/b2.so", "h", "usr/lib/b.so"),
        ("usr/.wh.nothing", "f", b""),
    ])
    return [l1, l2, l3]


def check_image(mount, tmp_path, archive, layers, *opts):
    ref = tmp_path / "ref"
    implicit = ref_merge(layers, ref)
    with mount(archive, *opts) as m:
        compare_trees(m.path, ref, check_root=False, implicit=implicit)
        assert not any(".wh." in n for _, _, fs in os.walk(m.path) for n in fs)


@pytest.mark.parametrize("layout", ["oci", "docker"])
def test_the_check(mount, tmp_path, layout):
    """The lead's check: two layers, a whiteout and an opaque folder."""
    layers = layers_simple()
    a = tmp_path / "img.tar"
    if layout == "oci":
        oci_image(a, [(None, layers)])
    else:
        docker_image(a, [(["x:1"], layers)])
    check_image(mount, tmp_path, a, layers)


@pytest.mark.parametrize("how", ["gzip", "zstd", "none"])
@pytest.mark.parametrize("layout", ["oci", "docker"])
def test_rules(mount, tmp_path, layout, how):
    if how == "zstd" and not have("zstd"):
        pytest.skip("no zstd")
    layers = layers_rules()
    a = tmp_path / "img.tar"
    if layout == "oci":
        oci_image(a, [("latest", layers)], how)
    else:
        docker_image(a, [(["x:1"], layers)], how)
    check_image(mount, tmp_path, a, layers)


def umoci_rootfs(tmp_path, archive, tag):
    """What umoci (Debian's, no daemon) unpacks from the OCI layout in archive."""
    lay, bundle = tmp_path / "layout", tmp_path / "bundle"
    lay.mkdir()
    with tarfile.open(archive) as t:
        t.extractall(lay)
    r = subprocess.run(["umoci", "unpack", "--image", f"{lay}:{tag}", str(bundle)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr
    return bundle / "rootfs", ""


@pytest.mark.parametrize("how", ["gzip", "zstd", "none"])
def test_umoci_reference(mount, tmp_path, how):
    """The mount against umoci's own merge of the same layout (a second reference, written
    by others): every byte, mode, owner, mtime and link."""
    require_tool("umoci")
    if how == "zstd" and not have("zstd"):
        pytest.skip("no zstd")
    layers = layers_rules()
    a = oci_image(tmp_path / "img.tar", [("latest", layers)], how)
    rootfs, err = umoci_rootfs(tmp_path, a, "latest")
    if rootfs is None and how == "zstd":
        pytest.skip(f"this umoci cannot unpack zstd layers: {err}")
    assert rootfs is not None, err
    implicit = ref_merge(layers, tmp_path / "ref")
    with mount(a) as m:
        compare_trees(m.path, rootfs, check_root=False, implicit=implicit)


@pytest.mark.parametrize("how", ["gzip", "zstd"])
def test_skopeo(mount, tmp_path, how):
    """An OCI archive that skopeo (no daemon) writes from a docker save tar, its layers
    compressed by skopeo: the same tree as the docker save tar and the reference."""
    require_tool("skopeo")
    layers = layers_rules()
    d = docker_image(tmp_path / "docker.tar", [(["x:1"], layers)])
    o = tmp_path / "oci.tar"
    run("skopeo", "--insecure-policy", "copy", "-q", "--dest-compress-format", how,
        f"docker-archive:{d}", f"oci-archive:{o}:latest")
    implicit = ref_merge(layers, tmp_path / "ref")
    with mount(o) as m:
        compare_trees(m.path, tmp_path / "ref", check_root=False, implicit=implicit)
    with mount(d) as m:
        compare_trees(m.path, tmp_path / "ref", check_root=False, implicit=implicit)


def test_several_images(mount, tmp_path):
    """One folder per tag: OCI ref names, docker's RepoTags (two tags of one image: two
    folders), a tagless manifest named by its digest."""
    one, two = layers_simple(), layers_rules()
    a = oci_image(tmp_path / "oci.tar", [("v1", one), ("v2", two), (None, one[:1])])
    d = docker_image(tmp_path / "docker.tar", [(["x:1", "registry/x:latest"], one),
                                               (["y:2"], two)])
    refs = {}
    for name, layers in (("one", one), ("two", two), ("base", one[:1])):
        refs[name] = (tmp_path / name, ref_merge(layers, tmp_path / name))
    with mount(a) as m:
        names = set(os.listdir(m.path))
        tagless = names - {"v1", "v2"}
        assert len(names) == 3 and len(tagless) == 1 and len(min(tagless)) == 12, names
        for sub, ref in (("v1", "one"), ("v2", "two"), (min(tagless), "base")):
            compare_trees(os.path.join(m.path, sub), refs[ref][0], check_root=False,
                          implicit=refs[ref][1])
    with mount(d) as m:
        assert sorted(os.listdir(m.path)) == ["registry_x:latest", "x:1", "y:2"]
        for sub, ref in (("x:1", "one"), ("registry_x:latest", "one"), ("y:2", "two")):
            compare_trees(os.path.join(m.path, sub), refs[ref][0], check_root=False,
                          implicit=refs[ref][1])


def test_docker25(mount, tmp_path):
    """docker >= 25 writes an OCI layout and a manifest.json naming its blobs: manifest.json
    is read (docker's tags), and the plain layers are checked against the config's
    diff_ids."""
    one, two = layers_simple(), layers_rules()

    def both(blobs, docs):
        man = []
        for d, tag in zip(json.loads(docs["index.json"])["manifests"], ["a:1", "b/c:2"]):
            m = json.loads(blobs[d["digest"][7:]])
            man.append({"Config": "blobs/sha256/" + m["config"]["digest"][7:],
                        "RepoTags": [tag],
                        "Layers": ["blobs/sha256/" + ly["digest"][7:] for ly in m["layers"]]})
        docs["manifest.json"] = json.dumps(man).encode()

    a = oci_image(tmp_path / "d25.tar", [("1", one), ("2", two)], "none", tamper=both)
    refs = [(tmp_path / n, ref_merge(ly, tmp_path / n)) for n, ly in (("one", one), ("two", two))]
    with mount(a) as m:
        assert sorted(os.listdir(m.path)) == ["a:1", "b_c:2"]
        for sub, (ref, implicit) in zip(["a:1", "b_c:2"], refs):
            compare_trees(os.path.join(m.path, sub), ref, check_root=False, implicit=implicit)
    assert checkpoints(str(a) + ".index.sqlite") == 0  # plain layers: read in place


def test_raw_and_second_mount(mount, tmp_path):
    """--oci-raw shows the tar as it is (its own index: the options differ); a second plain
    mount reads the index only (no new build)."""
    layers = layers_rules()
    a = oci_image(tmp_path / "img.tar", [(None, layers)], "gzip")
    with mount(a) as m:
        assert os.path.isfile(os.path.join(m.path, "usr/lib/a.so"))
    assert checkpoints(str(a) + ".index.sqlite") > 0  # the gzip layers: decoded, indexed
    with mount(a, "--oci-raw") as m:
        assert sorted(os.listdir(m.path)) == ["blobs", "index.json", "oci-layout"]
        with tarfile.open(a) as t:
            for ti in t.getmembers():
                with open(os.path.join(m.path, ti.name), "rb") as f:
                    assert f.read() == t.extractfile(ti).read()
    with mount(a) as m:
        assert os.path.isfile(os.path.join(m.path, "usr/lib/a.so"))
    with mount(a) as m:
        assert "indexed" not in m.log()  # the index was used as it is
        assert open(os.path.join(m.path, "usr/bin/tool"), "rb").read() == b"#!/bin/sh\n"


def refused(tmp_path, archive, words):
    mnt = tmp_path / "refused"
    mnt.mkdir(exist_ok=True)
    r = run_tarseek("-f", archive, mnt)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert any(w in out for w in words), out
    assert "AddressSanitizer" not in out and "runtime error" not in out, out


def changed_layer(change):
    """A tamper function for oci_image: the first layer's blob changed by change(bytes), the
    manifest and the index made to agree with it (sizes, digests)."""
    def tamper(blobs, docs):
        idx = json.loads(docs["index.json"])
        mh = idx["manifests"][0]["digest"][7:]
        man = json.loads(blobs.pop(mh))
        lh = man["layers"][0]["digest"][7:]
        data = change(blobs.pop(lh))
        nh = hashlib.sha256(data).hexdigest()
        blobs[nh] = data
        man["layers"][0].update(digest="sha256:" + nh, size=len(data))
        mb = json.dumps(man).encode()
        mbh = hashlib.sha256(mb).hexdigest()
        blobs[mbh] = mb
        idx["manifests"][0].update(digest="sha256:" + mbh, size=len(mb))
        docs["index.json"] = json.dumps(idx).encode()
    return tamper


def test_damaged_crc(mount, tmp_path):
    """A byte of a gzip layer changed (its digest made to agree): the layer decodes, but not
    to what its CRC-32 says: its files read EIO, never the wrong bytes."""
    big = [rand(100_000, 20 + i) for i in range(4)]
    l1 = layer_tar([("d", "d", None)] + [(f"d/f{i}", "f", b) for i, b in enumerate(big)])

    def flip(data):
        data = bytearray(data)
        data[len(data) // 2] ^= 0x01
        return bytes(data)

    a = oci_image(tmp_path / "flip.tar", [(None, [l1])], "gzip", tamper=changed_layer(flip))
    with mount(a, allow_errors=True) as m:
        got = [read_errno(os.path.join(m.path, f"d/f{i}")) for i in range(4)]
        assert errno.EIO in got, got
        for i, e in enumerate(got):
            if e is None:
                assert open(os.path.join(m.path, f"d/f{i}"), "rb").read() == big[i]
            else:
                assert e == errno.EIO


def test_damaged_layer(mount, tmp_path):
    """A gzip layer cut short (the manifest says the cut size and digest, so the layout is
    consistent): the files before the cut read whole; the one the cut falls in fails with
    EIO, and those whose headers lie past it are not listed (as in a cut .tar.gz)."""
    big = [rand(200_000, 10 + i) for i in range(6)]
    l1 = layer_tar([("d", "d", None)] + [(f"d/f{i}", "f", b) for i, b in enumerate(big)])

    a = oci_image(tmp_path / "cut.tar", [(None, [l1])], "gzip", tamper=changed_layer(
        lambda data: data[:-300_000]))
    with mount(a, allow_errors=True) as m:
        got = [read_errno(os.path.join(m.path, f"d/f{i}")) for i in range(6)]
        assert got[0] is None and got[-1] in (errno.EIO, errno.ENOENT), got
        for i, e in enumerate(got):
            if e is None:
                assert open(os.path.join(m.path, f"d/f{i}"), "rb").read() == big[i]
            else:
                assert e in (errno.EIO, errno.ENOENT)
        assert "damaged" in m.log()


def test_refused(tmp_path):
    """Bad JSON, a digest or size that does not match, a missing blob, an unknown media type:
    a clear message, no mount."""
    layers = layers_simple()

    def bad_json(blobs, docs):
        docs["index.json"] = b'{"manifests": [{"digest": '

    def deep_json(blobs, docs):
        docs["index.json"] = b"[" * 100_000 + b"]" * 100_000

    def wrong_digest(blobs, docs):
        idx = json.loads(docs["index.json"])
        h = idx["manifests"][0]["digest"][7:]
        blobs[h] = blobs[h].replace(b'"schemaVersion": 2', b'"schemaVersion": 3')
        docs["index.json"] = json.dumps(idx).encode()

    def wrong_size(blobs, docs):
        idx = json.loads(docs["index.json"])
        idx["manifests"][0]["size"] = 10 ** 30
        docs["index.json"] = json.dumps(idx).encode()

    def missing(blobs, docs):
        idx = json.loads(docs["index.json"])
        man = json.loads(blobs[idx["manifests"][0]["digest"][7:]])
        blobs.pop(man["layers"][1]["digest"][7:])

    def media(blobs, docs):
        idx = json.loads(docs["index.json"])
        h = idx["manifests"][0]["digest"][7:]
        man = json.loads(blobs.pop(h))
        man["layers"][0]["mediaType"] = "application/vnd.oci.image.layer.v1.tar+encrypted"
        mb = json.dumps(man).encode()
        mh = hashlib.sha256(mb).hexdigest()
        blobs[mh] = mb
        idx["manifests"][0].update(digest="sha256:" + mh, size=len(mb))
        docs["index.json"] = json.dumps(idx).encode()

    def traversal(blobs, docs):
        idx = json.loads(docs["index.json"])
        idx["manifests"][0]["digest"] = "sha256:../../../../etc/passwd"
        docs["index.json"] = json.dumps(idx).encode()

    cases = {bad_json: ["bad JSON"], deep_json: ["bad JSON"], wrong_digest: ["digest"],
             wrong_size: ["size"], missing: ["missing"], media: ["media type"],
             traversal: ["digest"]}
    for fn, words in cases.items():
        a = oci_image(tmp_path / f"{fn.__name__}.tar", [(None, layers)], tamper=fn)
        refused(tmp_path, a, words)
    # docker: a layer named in manifest.json that is not in the tar
    d = tmp_path / "docker-missing.tar"
    with tarfile.open(d, "w") as t:
        add(t, "c.json", b"{}")
        add(t, "manifest.json", json.dumps([{"Config": "c.json", "RepoTags": None,
                                             "Layers": ["nope/layer.tar"]}]).encode())
    refused(tmp_path, d, ["missing"])
