// What bench/e2b's scripts share: a REST call on the daemon's unix
// socket, a millisecond clock and percentiles.
'use strict';
const http = require('http');

function rest(sock, method, p, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: sock, method, path: p, headers: { 'Content-Type': 'application/json' } }, (res) => {
      const c = [];
      res.on('data', (d) => c.push(d));
      res.on('end', () => (res.statusCode >= 300 ? reject(new Error(`${p}: ${res.statusCode}`)) : resolve(c.length ? JSON.parse(Buffer.concat(c)) : null)));
    });
    req.on('error', reject);
    if (body) req.write(JSON.stringify(body));
    req.end();
  });
}

const ms = () => Number(process.hrtime.bigint()) / 1e6;
function pct(v, p) { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; }

module.exports = { rest, ms, pct };
