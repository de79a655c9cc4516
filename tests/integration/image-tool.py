#!/usr/bin/env python3
"""Test images for image-store.bats, built locally (no network):

  oci-layout ROOT OUT [--cmd JSON] [--user U] [--workdir D] [--env K=V]...
                     an OCI image layout of one gzip layer made from ROOT;
                     --uncompressed 1: the layer as a plain tar;
                     --diff-id DIGEST: a config that says so, whatever the layer is
  layer-tar ROOT OUT.tar     the layer's uncompressed tar alone (a plain root)
  docker-save ROOT OUT.tar   a `docker save` archive (manifest.json form)
  evil CASE OUT.tar          a hostile layer (see CASES)
  fake-registry DIR PORTFILE [--corrupt]   a v2 registry serving the OCI
                     layout DIR on 127.0.0.1 (port written to PORTFILE);
                     --corrupt serves every layer blob with one byte flipped;
                     --slow serves layer blobs at ~256 KiB/s;
                     --token wants a bearer token from its /token (basic auth)
"""
import gzip, hashlib, http.server, io, json, os, sys, tarfile, time

def sha(b): return "sha256:" + hashlib.sha256(b).hexdigest()

def tar_of(root):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name in sorted(os.listdir(root)):
            t.add(os.path.join(root, name), arcname=name)
    return buf.getvalue()

def config_of(diff_id, args):
    c = {}
    if args.get("cmd"): c["Cmd"] = json.loads(args["cmd"])
    if args.get("entrypoint"): c["Entrypoint"] = json.loads(args["entrypoint"])
    if args.get("user"): c["User"] = args["user"]
    if args.get("workdir"): c["WorkingDir"] = args["workdir"]
    if args.get("env"): c["Env"] = args["env"]
    return json.dumps({"architecture": "amd64", "os": "linux", "config": c,
                       "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode()

def put(out, b):
    d = sha(b)
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(out, "blobs", "sha256", d[7:]), "wb") as f: f.write(b)
    return d

def oci_layout(root, out, args):
    raw = tar_of(root)
    plain = args.get("uncompressed")
    layer = raw if plain else gzip.compress(raw, compresslevel=1, mtime=0)
    cfg = config_of(args.get("diff-id") or sha(raw), args)
    ld, cd = put(out, layer), put(out, cfg)
    man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": len(cfg)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar" + ("" if plain else "+gzip"),
                    "digest": ld, "size": len(layer)}]}).encode()
    md = put(out, man)
    # A manifest list too: an arm64 entry that must not be picked.
    idx = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
          {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": len(man),
           "platform": {"os": "linux", "architecture": "arm64"}},
          {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": len(man),
           "platform": {"os": "linux", "architecture": "amd64"}}]}).encode()
    xd = put(out, idx)
    with open(os.path.join(out, "oci-layout"), "w") as f: json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                   "digest": md, "size": len(man)}]}, f)
    with open(os.path.join(out, "list-digest"), "w") as f: f.write(xd + "\n")
    print(md)

def docker_save(root, out):
    raw = tar_of(root)
    cfg = config_of(sha(raw), {"cmd": '["/bin/sh"]'})
    with tarfile.open(out, "w") as t:
        def add(name, b):
            ti = tarfile.TarInfo(name); ti.size = len(b); t.addfile(ti, io.BytesIO(b))
        add("abc123/layer.tar", raw)
        add("cfg.json", cfg)
        add("manifest.json", json.dumps([{"Config": "cfg.json", "RepoTags": ["saved/busybox:1"],
                                          "Layers": ["abc123/layer.tar"]}]).encode())

def entry(t, name, kind=tarfile.REGTYPE, data=b"", link="", mode=0o644, size=None):
    ti = tarfile.TarInfo(name); ti.type = kind; ti.mode = mode; ti.linkname = link
    ti.size = len(data) if size is None else size
    t.addfile(ti, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

def evil(case, out, target):
    with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as t:
        if case == "dotdot": entry(t, "../../../../../../.." + target + "/dotdot", data=b"x")
        elif case == "absolute": entry(t, target + "/absolute", data=b"x")
        elif case == "symlink-dir":
            entry(t, "d", tarfile.SYMTYPE, link=target)
            entry(t, "d/through-symlink", data=b"x")
        elif case == "symlink-swap":
            entry(t, "d", tarfile.DIRTYPE, mode=0o755)
            entry(t, "d", tarfile.SYMTYPE, link=target)
            entry(t, "d/swapped", data=b"x")
        elif case == "hardlink-out": entry(t, "h", tarfile.LNKTYPE, link=target + "/victim")
        elif case == "hardlink-dotdot": entry(t, "h", tarfile.LNKTYPE, link="../../../../../../../etc/passwd")
        elif case == "symlink-then-file":
            entry(t, "f", tarfile.SYMTYPE, link=target + "/victim")
            entry(t, "f", data=b"overwritten")
        elif case == "device": entry(t, "dev-sda", tarfile.BLKTYPE); entry(t, "ok", data=b"ok")
        elif case == "setuid": entry(t, "suid", data=b"#!/bin/sh\n", mode=0o4755)
        elif case == "whiteout":
            entry(t, "etc", tarfile.DIRTYPE, mode=0o755)
            entry(t, "etc/.wh.passwd", data=b"")
            entry(t, "opq", tarfile.DIRTYPE, mode=0o755)
            entry(t, "opq/.wh..wh..opq", data=b"")
        elif case == "whiteout-dotdot": entry(t, ".wh...", data=b"")
        elif case == "big": entry(t, "big", data=b"y" * (3 << 20))
        else: sys.exit("unknown case " + case)

def fake_registry(layout, portfile, corrupt, slow, token):
    import base64
    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def do_GET(self):
            p = self.path
            if token:
                # Docker Hub's flow: 401 + a Bearer challenge; the token
                # service wants basic credentials and the pull scope.
                if p.startswith("/token?"):
                    want = "Basic " + base64.b64encode(b"tester:s3cret").decode()
                    if self.headers.get("Authorization") != want or "scope=repository%3Atest%2Fbb%3Apull" not in p:
                        return self.reply(401, b"{}", "application/json")
                    return self.reply(200, json.dumps({"token": "tok-123"}).encode(), "application/json")
                if self.headers.get("Authorization") != "Bearer tok-123":
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Bearer realm="http://%s/token",service="fake"' % self.headers["Host"])
                    self.send_header("Content-Length", "0"); self.end_headers()
                    return
            if p == "/v2/":
                return self.reply(200, b"{}", "application/json")
            parts = p.split("/")
            kind, ref = parts[-2], parts[-1]
            if kind == "manifests":
                if ref.startswith("sha256:"): d = ref
                else: d = json.load(open(os.path.join(layout, "index.json")))["manifests"][0]["digest"]
                b = open(os.path.join(layout, "blobs", "sha256", d[7:]), "rb").read()
                return self.reply(200, b, json.loads(b).get("mediaType", "application/vnd.oci.image.manifest.v1+json"))
            if kind == "blobs":
                f = os.path.join(layout, "blobs", "sha256", ref[7:])
                if not os.path.exists(f): return self.reply(404, b"", "text/plain")
                b = open(f, "rb").read()
                is_layer = b[:2] == b"\x1f\x8b"
                if corrupt and is_layer: b = b[:-10] + bytes([b[-10] ^ 1]) + b[-9:]
                rng = self.headers.get("Range", "")
                if rng.startswith("bytes=") and rng.endswith("-"):
                    start = int(rng[6:-1])
                    with open(portfile + ".ranges", "a") as f: f.write("%d\n" % start)
                    return self.reply(206, b[start:], "application/octet-stream", slow and is_layer)
                return self.reply(200, b, "application/octet-stream", slow and is_layer)
            self.reply(404, b"", "text/plain")
        do_HEAD = do_GET
        def reply(self, code, b, ctype, slow=False):
            self.send_response(code)
            self.send_header("Content-Type", ctype); self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            if self.command == "HEAD": return
            if not slow: return self.wfile.write(b)
            for i in range(0, len(b), 16384):
                self.wfile.write(b[i:i + 16384]); self.wfile.flush(); time.sleep(0.06)
    s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    with open(portfile + ".tmp", "w") as f: f.write(str(s.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    s.serve_forever()

def main(a):
    if a[0] == "oci-layout":
        args, i, env = {}, 3, []
        while i < len(a):
            if a[i] == "--env": env.append(a[i + 1])
            else: args[a[i][2:]] = a[i + 1]
            i += 2
        args["env"] = env
        oci_layout(a[1], a[2], args)
    elif a[0] == "docker-save": docker_save(a[1], a[2])
    elif a[0] == "layer-tar": open(a[2], "wb").write(tar_of(a[1]))
    elif a[0] == "evil": evil(a[1], a[2], a[3] if len(a) > 3 else "/tmp")
    elif a[0] == "fake-registry": fake_registry(a[1], a[2], "--corrupt" in a, "--slow" in a, "--token" in a)
    else: sys.exit(__doc__)

main(sys.argv[1:])
