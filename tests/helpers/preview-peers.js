#!/usr/bin/env node
// Real peers for the preview bridge's integration tests (tests/integration/
// preview-*.bats), loopback only.  Node's own http module and the `ws`
// package (installed by the tests into a cache under the build directory,
// found through NODE_PATH) are independent implementations to check ours
// against.
//
//   preview-peers.js http    HTTP origin; prints "PORT n", serves until killed
//   preview-peers.js ws      WebSocket server; prints "PORT n", then one
//                            "EVENT <path> <what> <detail>" line per event
//   preview-peers.js drive SPEC CMD ARGS...
//                            run CMD (websocket-framed), feed it the SPEC's
//                            handshake and frames, print one JSON result:
//                            {exit, ms, frames: [{len, text (first 4 KiB)}], stderr}
'use strict';

const http = require('http');
const crypto = require('crypto');
const { spawn } = require('child_process');

function listen(server) {
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`PORT ${server.address().port}\n`);
  });
}

// ---- HTTP origin -------------------------------------------------------------

function raw(req, text) {
  req.socket.write(text);
  req.socket.destroy();
}

function httpRoutes(req, res, body) {
  const url = new URL(req.url, 'http://x');
  const n = Number(url.searchParams.get('n') || 0);
  switch (url.pathname) {
    case '/hello':
      res.setHeader('Content-Type', 'text/plain');
      res.setHeader('Set-Cookie', ['a=1', 'b=2']);
      res.setHeader('X-Long', 'v'.repeat(8193));
      res.setHeader('X-Edge', 'v'.repeat(8192));
      res.setHeader('N'.repeat(129), 'too long a name');
      res.end('hello world');
      return;
    case '/echo':
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({
        method: req.method, url: req.url, headers: req.rawHeaders,
        body: body.toString('base64'),
      }));
      return;
    case '/bytes': // Content-Length
      res.setHeader('Content-Length', n);
      res.end(Buffer.alloc(n, 'x'));
      return;
    case '/stream': // chunked, in pieces
      for (let i = 0; i < n; i += 7) res.write(Buffer.alloc(Math.min(7, n - i), 'y'));
      res.end();
      return;
    case '/status':
      res.statusCode = n;
      res.end();
      return;
    case '/slow':
      return; // never answers
    case '/truncated':
      raw(req, 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..');
      return;
    case '/malformed':
      raw(req, 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!');
      return;
    case '/until-close':
      raw(req, 'HTTP/1.1 200 OK\r\nX-Mode: close\r\n\r\nread until the end');
      return;
    case '/interim':
      req.socket.write('HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n');
      res.end('final');
      return;
  }
  // Signalling relays that misbehave: <prefix>/signal.
  if (url.pathname === '/text/signal') {
    res.setHeader('Content-Type', 'text/plain');
    res.end('this is not json');
    return;
  }
  if (url.pathname.startsWith('/slow/')) return;
  res.statusCode = 404;
  res.end('no such route');
}

function serveHttp() {
  const server = http.createServer((req, res) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => httpRoutes(req, res, Buffer.concat(parts)));
  });
  listen(server);
}

// ---- WebSocket server ----------------------------------------------------------

function event(path, what, detail) {
  process.stdout.write(`EVENT ${path} ${what} ${detail}\n`);
}

function wsConnection(ws, req) {
  const url = new URL(req.url, 'http://x');
  const path = url.pathname;
  ws.on('message', (data, isBinary) => {
    event(path, 'message', `${data.length} ${isBinary ? 'binary' : 'text'}`);
    if (path === '/echo' || path === '/hello' || path === '/ping') ws.send(data, { binary: isBinary });
  });
  ws.on('close', (code) => event(path, 'close', code));
  ws.on('error', (e) => event(path, 'error', e.message.replace(/\s+/g, '_')));
  ws.on('pong', (data) => {
    event(path, 'pong', data.toString());
    ws.send('pong-received');
  });
  switch (path) {
    case '/hello': ws.send('hello'); break;
    case '/send': ws.send(Buffer.alloc(Number(url.searchParams.get('bytes')), 'z')); break;
    case '/close': ws.close(Number(url.searchParams.get('code'))); break;
    case '/drop': ws.terminate(); break;
    case '/ping': ws.ping('are-you-there'); break;
    case '/headers': ws.send(JSON.stringify(req.headers)); break;
    case '/fragments':
      ws.send('frag', { fin: false });
      ws.send('mented', { fin: true });
      break;
  }
}

function serveWs() {
  const { WebSocketServer } = require('ws');
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => [...protocols][0] });
  const server = http.createServer((req, res) => { res.statusCode = 426; res.end(); });
  server.on('upgrade', (req, socket, head) => {
    const path = new URL(req.url, 'http://x').pathname;
    event(path, 'upgrade', req.headers['sec-websocket-version']);
    if (path === '/refuse') {
      socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (path === '/bad-accept') {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Accept: ' + crypto.randomBytes(20).toString('base64') + '\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wsConnection(ws, req));
  });
  listen(server);
}

// ---- driving websocket-framed ----------------------------------------------------

function frameOf(payload) {
  const h = Buffer.alloc(4);
  h.writeUInt32BE(payload.length);
  return Buffer.concat([h, payload]);
}

function drive(spec, cmd, args) {
  const started = Date.now();
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const result = { exit: null, ms: 0, frames: [], stderr: '', killed: false };
  let out = Buffer.alloc(0);
  let waitFrames = null; // the frame count a waitFrames step is waiting for
  const check = () => {
    if (waitFrames !== null && result.frames.length >= waitFrames) {
      waitFrames = null;
      setImmediate(next);
    }
  };

  child.stdin.on('error', () => {});
  child.stdout.on('data', (d) => {
    out = Buffer.concat([out, d]);
    while (out.length >= 4 && out.length >= 4 + out.readUInt32BE(0)) {
      const len = out.readUInt32BE(0);
      const p = out.subarray(4, 4 + len);
      result.frames.push({ len, text: p.subarray(0, 4096).toString('utf8') });
      out = out.subarray(4 + len);
    }
    check();
  });
  child.stderr.on('data', (d) => { result.stderr += d.toString(); });
  const killer = setTimeout(() => { result.killed = true; child.kill('SIGKILL'); }, spec.timeoutMs || 15000);
  child.on('close', (code) => {
    clearTimeout(killer);
    result.exit = code;
    result.ms = Date.now() - started;
    result.trailing = out.length;
    process.stdout.write(JSON.stringify(result) + '\n');
  });

  const steps = (spec.steps || []).slice();
  function next() {
    const s = steps.shift();
    if (!s) return;
    if (s.send !== undefined) child.stdin.write(frameOf(Buffer.from(s.send)));
    if (s.sendBytes !== undefined) child.stdin.write(frameOf(Buffer.alloc(s.sendBytes, 'b')));
    if (s.sendHeader !== undefined) {
      const h = Buffer.alloc(4);
      h.writeUInt32BE(s.sendHeader);
      child.stdin.write(h);
    }
    if (s.end) child.stdin.end();
    if (s.wait !== undefined) { setTimeout(next, s.wait); return; }
    if (s.waitFrames !== undefined) {
      waitFrames = s.waitFrames;
      check();
      return;
    }
    next();
  }
  const line = spec.rawHandshake !== undefined ? spec.rawHandshake : JSON.stringify(spec.handshake) + '\n';
  child.stdin.write(line);
  next();
}

const mode = process.argv[2];
if (mode === 'http') serveHttp();
else if (mode === 'ws') serveWs();
else if (mode === 'drive') drive(JSON.parse(process.argv[3]), process.argv[4], process.argv.slice(5));
else {
  process.stderr.write('usage: preview-peers.js http|ws|drive SPEC CMD...\n');
  process.exit(2);
}
