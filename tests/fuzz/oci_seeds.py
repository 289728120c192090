"""Seeds of fuzz_oci (make-seeds.sh): small container images written with tarfile, as the
mount test makes them -- OCI layouts with gzip, zstd (when the zstd tool is there) and plain
layers, several tags, an image index inside the index, docker save tars (one and two tags),
layers with whiteouts, opaque folders, links, climbing paths; and cut or flipped copies.
    oci_seeds.py DIR
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def layer(entries):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name, kind, payload in entries:
            ti = tarfile.TarInfo(name)
            data = None
            if kind == "d":
                ti.type = tarfile.DIRTYPE
            elif kind == "f":
                ti.size, data = len(payload), io.BytesIO(payload)
            elif kind == "l":
                ti.type, ti.linkname = tarfile.SYMTYPE, payload
            else:
                ti.type, ti.linkname = tarfile.LNKTYPE, payload
            t.addfile(ti, data)
    return b.getvalue()


L1 = layer([("etc", "d", None), ("etc/keep", "f", b"base\n"), ("etc/gone", "f", b"x\n"),
            ("opt", "d", None), ("opt/old", "f", b"old\n"), ("bin", "l", "usr/bin"),
            ("data", "f", b"d" * 700), ("hard", "h", "data"), ("../../up", "f", b"up")])
L2 = layer([("etc/.wh.gone", "f", b""), ("etc/keep", "f", b"top\n"),
            ("opt/.wh..wh..opq", "f", b""), ("opt/new", "f", b"new\n"), (".wh.data", "f", b""),
            ("data", "d", None), ("data/in", "f", b"in"), ("/abs/x", "f", b"abs")])


def comp(data, how):
    if how == "gzip":
        return gzip.compress(data, mtime=0)
    if how == "zstd":
        return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True,
                              check=True).stdout
    return data


MT = {"gzip": "+gzip", "zstd": "+zstd", "none": ""}


def write(path, members):
    with tarfile.open(path, "w") as t:
        for n, d in members:
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            t.addfile(ti, io.BytesIO(d))


def oci(path, images, how, nested=False):
    blobs = {}

    def blob(d):
        h = hashlib.sha256(d).hexdigest()
        blobs[h] = d
        return h

    descs = []
    for tag, layers in images:
        cs = [comp(x, how) for x in layers]
        cfg = b'{"rootfs":{"type":"layers","diff_ids":[]}}'
        man = json.dumps({"schemaVersion": 2, "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": "sha256:" + blob(cfg), "size": len(cfg)}, "layers": [
            {"mediaType": "application/vnd.oci.image.layer.v1.tar" + MT[how],
             "digest": "sha256:" + blob(c), "size": len(c)} for c in cs]}).encode()
        d = {"mediaType": "application/vnd.oci.image.manifest.v1+json",
             "digest": "sha256:" + blob(man), "size": len(man),
             "platform": {"os": "linux", "architecture": "amd64"}}
        if tag:
            d["annotations"] = {"org.opencontainers.image.ref.name": tag}
        descs.append(d)
    idx = {"schemaVersion": 2, "manifests": descs}
    if nested:
        inner = json.dumps(idx).encode()
        idx = {"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "digest": "sha256:" + blob(inner), "size": len(inner),
            "annotations": {"org.opencontainers.image.ref.name": "multi"}}]}
    write(path, [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
                 ("index.json", json.dumps(idx).encode())] +
          [("blobs/sha256/" + h, d) for h, d in blobs.items()])


def docker(path, images):
    members, man = [], []
    for k, (tags, layers) in enumerate(images):
        names = []
        for i, x in enumerate(layers):
            names.append(f"{k}{i}/layer.tar")
            members.append((names[-1], x))
        cfg = json.dumps({"rootfs": {"diff_ids": [
            "sha256:" + hashlib.sha256(x).hexdigest() for x in layers]}}).encode()
        members.append((f"c{k}.json", cfg))
        man.append({"Config": f"c{k}.json", "RepoTags": tags, "Layers": names})
    members.append(("manifest.json", json.dumps(man).encode()))
    write(path, members)


hows = ["gzip", "none"] + (["zstd"] if shutil.which("zstd") else [])
for how in hows:
    oci(f"{out}/oci-{how}.tar", [(None, [L1, L2])], how)
oci(f"{out}/oci-tags.tar", [("v1", [L1]), ("v2", [L1, L2]), (None, [L2])], "gzip")
oci(f"{out}/oci-nested.tar", [(None, [L1]), (None, [L1, L2])], "none", nested=True)
docker(f"{out}/docker.tar", [(["x:1"], [L1, L2])])
docker(f"{out}/docker-tags.tar", [(["x:1", "reg/x:2"], [L1]), (None, [L2])])
for name in ("oci-gzip.tar", "docker.tar"):
    data = open(f"{out}/{name}", "rb").read()
    open(f"{out}/cut-{name}", "wb").write(data[:len(data) * 2 // 3])
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x40
    open(f"{out}/flipped-{name}", "wb").write(bytes(flipped))
