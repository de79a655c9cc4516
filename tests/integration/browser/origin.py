#!/usr/bin/env python3
"""The browser tests' web origin: python3 origin.py ADDR PORT LOG.

Every request is appended to LOG as one line "METHOD PATH BODY", so a test
sees what the browser sent (a form's POST) and what never arrived.
  /            a form (POST /submit) with a text field and a button
  /red         a 200x100 page, all red (the screenshot's known pixel)
  /redirect?to=URL   302 to URL
  /sub?src=URL a page whose <img> loads URL (a subresource)
  /huge        a full-page canvas of noise: a PNG far over 10 MB
"""
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ADDR, PORT, LOG = sys.argv[1], int(sys.argv[2]), sys.argv[3]

FORM = b"""<!doctype html><title>form page</title>
<form method=post action=/submit><input id=q name=q><button id=go>go</button></form>
<p id=msg>hello <b>origin</b></p>"""
RED = b"""<!doctype html><title>red</title><style>html,body{margin:0;background:#ff0000}</style>
<div style="width:200px;height:100px"></div>"""
HUGE = b"""<!doctype html><title>huge</title><style>body{margin:0}</style>
<canvas id=c width=2400 height=2400></canvas><script>
const c = document.getElementById('c').getContext('2d');
const img = c.createImageData(2400, 2400);
let x = 2463534242;
for (let i = 0; i < img.data.length; i++) {
  x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
  img.data[i] = (i & 3) == 3 ? 255 : x & 255;
}
c.putImageData(img, 0, 0);
</script>"""


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def note(self, body=b""):
        with open(LOG, "a") as f:
            f.write("%s %s %s\n" % (self.command, self.path, body.decode("latin-1")))

    def send(self, code, body, ctype="text/html", extra=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.note()
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path == "/":
            self.send(200, FORM)
        elif u.path == "/red":
            self.send(200, RED)
        elif u.path == "/huge":
            self.send(200, HUGE)
        elif u.path == "/redirect":
            self.send(302, b"", extra={"Location": q["to"][0]})
        elif u.path == "/sub":
            src = q["src"][0].replace('"', "")
            self.send(200, ('<!doctype html><title>sub</title><img src="%s">' % src).encode())
        else:
            self.send(404, b"not found", "text/plain")

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n) if n else b""
        self.note(body)
        self.send(200, b"<!doctype html><title>thanks</title><p id=done>got it</p>")


ThreadingHTTPServer((ADDR, PORT), H).serve_forever()
