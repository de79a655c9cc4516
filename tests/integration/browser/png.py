#!/usr/bin/env python3
"""python3 png.py FILE X Y: prints "WIDTH HEIGHT R G B" of a PNG (8-bit
RGB or RGBA, non-interlaced: what Chromium writes), decoded with zlib and
the five filters of RFC 2083 6, so the test checks real pixels."""
import struct
import sys
import zlib

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    chunk = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, inter = struct.unpack(">IIBBBBB", chunk)
        assert depth == 8 and ctype in (2, 6) and inter == 0, "unsupported PNG"
    elif kind == b"IDAT":
        idat += chunk
    pos += 12 + n
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
x, y = int(sys.argv[2]), int(sys.argv[3])
prev = bytearray(stride)
for row in range(y + 1):
    f = raw[row * (stride + 1)]
    line = bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1:
            line[i] = (line[i] + a) & 255
        elif f == 2:
            line[i] = (line[i] + b) & 255
        elif f == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[i] = (line[i] + pr) & 255
    prev = line
px = prev[x * bpp:x * bpp + 3]
print(w, h, px[0], px[1], px[2])
