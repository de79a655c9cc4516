#!/usr/bin/env node
// Peers for tests/integration/daemon-port.bats, written against node's own
// http and net modules (no packages), loopback only.
//
//   port-peers.js server PORT     inside a sandbox: HTTP on 127.0.0.1:PORT
//                                 (/hello, /echo: method, url, raw headers,
//                                 body, /bytes?n=N, /digest: size and sha256
//                                 of the body) and a WebSocket echo (RFC 6455) on
//                                 any path; prints "READY" once listening
//   port-peers.js ws HOST PORT PATH [HEADER...]
//   port-peers.js ws-unix SOCKET PATH [HEADER...]
//                                 a WebSocket client: handshake, send two
//                                 masked text messages, print each echo on
//                                 a line, close; exit 1 on any failure
'use strict';

const http = require('http');
const net = require('net');
const crypto = require('crypto');

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

function frame(payload, mask) {
  const len = payload.length;
  const head = [0x81];
  if (len < 126) head.push((mask ? 0x80 : 0) | len);
  else head.push((mask ? 0x80 : 0) | 126, len >> 8, len & 255);
  if (!mask) return Buffer.concat([Buffer.from(head), payload]);
  const key = crypto.randomBytes(4);
  const body = Buffer.from(payload.map((b, i) => b ^ key[i % 4]));
  return Buffer.concat([Buffer.from(head), key, body]);
}

// Complete frames at the front of buf: [{op, payload}], and the rest.
function parse(buf) {
  const out = [];
  for (;;) {
    if (buf.length < 2) break;
    let len = buf[1] & 127, off = 2;
    const masked = buf[1] & 128;
    if (len === 126) { if (buf.length < 4) break; len = buf.readUInt16BE(2); off = 4; }
    const need = off + (masked ? 4 : 0) + len;
    if (buf.length < need) break;
    let payload = buf.subarray(off + (masked ? 4 : 0), need);
    if (masked) {
      const key = buf.subarray(off, off + 4);
      payload = Buffer.from(payload.map((b, i) => b ^ key[i % 4]));
    }
    out.push({ op: buf[0] & 15, payload });
    buf = buf.subarray(need);
  }
  return [out, buf];
}

function server(port) {
  const srv = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url, 'http://x');
      if (url.pathname === '/bytes') { // n bytes of a pattern (back-pressure, integrity)
        const n = Number(url.searchParams.get('n'));
        const block = Buffer.alloc(65536);
        for (let i = 0; i < block.length; i++) block[i] = (i * 7 + 3) & 255;
        res.setHeader('Content-Length', n);
        let sent = 0;
        const more = () => {
          while (sent < n) {
            const part = block.subarray(0, Math.min(block.length, n - sent));
            sent += part.length;
            if (!res.write(part)) return res.once('drain', more);
          }
          res.end();
        };
        more();
        return;
      }
      if (url.pathname === '/digest') { // size and sha256 of the request body
        const body = Buffer.concat(chunks);
        res.end(`${body.length} ${crypto.createHash('sha256').update(body).digest('hex')}\n`);
        return;
      }
      if (req.url === '/hello') {
        res.setHeader('Content-Type', 'text/plain');
        res.end('hello from the sandbox\n');
        return;
      }
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.rawHeaders,
        body: Buffer.concat(chunks).toString() }));
    });
  });
  srv.on('upgrade', (req, sock, head) => {
    const accept = crypto.createHash('sha1')
      .update(req.headers['sec-websocket-key'] + GUID).digest('base64');
    sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n' +
      `Connection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    let buf = head;
    const onData = (d) => {
      let msgs;
      [msgs, buf] = parse(Buffer.concat([buf, d]));
      for (const m of msgs) {
        if (m.op === 8) { sock.end(Buffer.from([0x88, 0])); return; }
        if (m.op === 1) sock.write(frame(Buffer.from(`echo ${req.url} ${m.payload}`), false));
      }
    };
    sock.on('data', onData);
    sock.on('error', () => {});
    if (head.length) onData(Buffer.alloc(0));
  });
  srv.listen(port, '127.0.0.1', () => process.stdout.write('READY\n'));
}

function client(sock, host, path, headers) {
  const key = crypto.randomBytes(16).toString('base64');
  const timer = setTimeout(() => { console.error('timed out'); process.exit(1); }, 10000);
  let buf = Buffer.alloc(0), upgraded = false, got = 0;
  sock.on('connect', () => {
    sock.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\n` +
      `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n` +
      headers.map((h) => h + '\r\n').join('') + '\r\n');
  });
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    if (!upgraded) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString();
      const want = crypto.createHash('sha1').update(key + GUID).digest('base64');
      if (!/^HTTP\/1\.1 101/.test(head) || !head.includes(want)) {
        console.error('handshake failed: ' + head.split('\r\n')[0]);
        process.exit(1);
      }
      upgraded = true;
      buf = buf.subarray(end + 4);
      sock.write(frame(Buffer.from('one'), true));
      sock.write(frame(Buffer.from('two'), true));
    }
    let msgs;
    [msgs, buf] = parse(buf);
    for (const m of msgs) {
      if (m.op !== 1) continue;
      console.log(m.payload.toString());
      if (++got === 2) {
        clearTimeout(timer);
        sock.end(Buffer.from([0x88, 0x80, 0, 0, 0, 0]));
      }
    }
  });
  sock.on('error', (e) => { console.error(e.message); process.exit(1); });
  sock.on('close', () => process.exit(got === 2 ? 0 : 1));
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'server') server(Number(args[0]));
else if (mode === 'ws') client(net.connect(Number(args[1]), args[0]), `${args[0]}:${args[1]}`,
  args[2], args.slice(3));
else if (mode === 'ws-unix') client(net.connect(args[0]), 'agentbox', args[1], args.slice(2));
else { console.error('usage: port-peers.js server PORT | ws HOST PORT PATH | ws-unix SOCK PATH'); process.exit(2); }
