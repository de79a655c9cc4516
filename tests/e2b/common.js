// Shared by the E2B SDK tests: the SDK under test (E2B_PKG names one of
// the pinned versions in tests/npm/e2b), a bounded check helper, and raw
// HTTP for the requests the SDK never makes (bad tokens, bad envelopes).
'use strict';
const path = require('path');
const http = require('http');

const npmDir = process.env.AGENTBOX_NPM_DIR;
const pkg = process.env.E2B_PKG || 'e2b-2-51';
const e2b = require(path.join(npmDir, 'e2b', 'node_modules', pkg));
const template = process.env.E2B_TEMPLATE || 'base';
const url = new URL(process.env.E2B_API_URL);

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
  console.log('ok ' + what);
}

async function rejects(p, cls, what) {
  try {
    await p;
  } catch (e) {
    if (cls && !(e instanceof cls)) throw new Error(`${what}: expected ${cls.name}, got ${e.constructor.name}: ${e.message}`);
    console.log('ok ' + what);
    return e;
  }
  throw new Error(what + ': did not fail');
}

// raw(method, path, headers, body) -> {status, headers, body: Buffer}
function raw(method, p, headers = {}, body = null) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path: p, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.setTimeout(30000, () => req.destroy(new Error('timeout')));
    if (body) req.write(body);
    req.end();
  });
}

function envelope(obj, flags = 0) {
  const j = Buffer.from(JSON.stringify(obj));
  const h = Buffer.alloc(5);
  h[0] = flags;
  h.writeUInt32BE(j.length, 1);
  return Buffer.concat([h, j]);
}

// Envelopes of a Connect stream's body.
function envelopes(buf) {
  const out = [];
  for (let o = 0; o + 5 <= buf.length;) {
    const n = buf.readUInt32BE(o + 1);
    out.push({ flags: buf[o], msg: JSON.parse(buf.subarray(o + 5, o + 5 + n).toString()) });
    o += 5 + n;
  }
  return out;
}

function main(fn) {
  const t = setTimeout(() => { console.error('FAIL: timed out'); process.exit(1); }, 150000);
  fn().then(() => { clearTimeout(t); console.log('done ' + pkg); },
    (e) => { console.error('FAIL', e); process.exit(1); });
}

module.exports = { e2b, pkg, template, check, rejects, raw, envelope, envelopes, main };
