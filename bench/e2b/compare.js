// bench/e2b/compare's measurements (see there).
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');
const { rest, ms, pct } = require('./common');
const { Sandbox } = require(path.join(process.env.AGENTBOX_NPM_DIR, 'e2b', 'node_modules', 'e2b-2-51'));

const N = +(process.env.BENCH_N || 200);
const dirs = process.env.DIRS.split(','), ports = process.env.PORTS.split(',');
const standIn = +process.env.STAND_IN_PORT;

// A control-plane call on the E2B port from node's own http client.
function e2bApi(agent, port, key, method, p, body) {
  return new Promise((resolve, reject) => {
    const data = body ? Buffer.from(JSON.stringify(body)) : null;
    const req = http.request({
      agent, host: '127.0.0.1', port, method, path: p,
      headers: { 'x-api-key': key, 'content-type': 'application/json', ...(data ? { 'content-length': data.length } : {}) },
    }, (res) => {
      const c = [];
      res.on('data', (d) => c.push(d));
      res.on('end', () => (res.statusCode >= 300 ? reject(new Error(`${p}: ${res.statusCode}`)) : resolve(c.length ? JSON.parse(Buffer.concat(c)) : null)));
    });
    req.on('error', reject);
    req.end(data);
  });
}

// The SDK's Start request, from node's own http client on a keep-alive connection.
function connectStart(agent, port, id, token, cmd, args) {
  const j = Buffer.from(JSON.stringify({ process: { cmd, args }, stdin: false }));
  const body = Buffer.alloc(5 + j.length);
  body.writeUInt32BE(j.length, 1);
  j.copy(body, 5);
  return new Promise((resolve, reject) => {
    const req = http.request({
      agent, host: '127.0.0.1', port, method: 'POST', path: '/process.Process/Start',
      headers: {
        'connect-protocol-version': '1', 'connect-timeout-ms': '60000', 'content-type': 'application/connect+json',
        'e2b-sandbox-id': id, 'keepalive-ping-interval': '50', 'x-access-token': token, 'content-length': body.length,
      },
    }, (res) => {
      const c = [];
      res.on('data', (d) => c.push(d));
      res.on('end', () => (Buffer.concat(c).includes('"exitCode":0') ? resolve() : reject(new Error(`Start: ${Buffer.concat(c)}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

(async () => {
  const builds = [];
  for (let k = 0; k < 2; k++) {
    const cfg = { apiKey: fs.readFileSync(path.join(dirs[k], 'key'), 'utf8').trim(), apiUrl: `http://127.0.0.1:${ports[k]}`, sandboxUrl: `http://127.0.0.1:${ports[k]}` };
    const s = await Sandbox.create({ ...cfg, timeoutMs: 900000 });
    const id = s.sandboxId;
    const token = JSON.parse(fs.readFileSync(path.join(dirs[k], 'state', 'sandboxes', id, 'e2b.json'))).token;
    const sock = path.join(dirs[k], 'run', 'a.sock');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const exec = (cmd) => rest(sock, 'POST', `/v1/sandboxes/${id}/exec`, { cmd, wait: true });
    const bash = ['/bin/bash', '-l', '-c', 'true'];
    builds.push({ s, kinds: {
      'SDK commands.run(true)': () => s.commands.run('true'),
      'Connect Start, bash -l -c true': () => connectStart(agent, ports[k], id, token, '/bin/bash', ['-l', '-c', 'true']),
      'REST exec, bash -l -c true': () => exec(['/bin/bash', '-l', '-c', 'true']),
      'Connect Start, /bin/true': () => connectStart(agent, ports[k], id, token, '/bin/true', []),
      'REST exec, /bin/true': () => exec(['/bin/true']),
    }, create: {
      'SDK create + run(true) + kill': async () => { const x = await Sandbox.create({ ...cfg, timeoutMs: 120000 }); await x.commands.run('true'); await x.kill(); },
      'E2B API create + Start + kill, node http': async () => {
        const x = await e2bApi(agent, ports[k], cfg.apiKey, 'POST', '/v2/sandboxes', { templateID: 'base', timeout: 120 });
        await connectStart(agent, ports[k], x.sandboxID, x.envdAccessToken, '/bin/bash', bash.slice(1));
        await e2bApi(agent, ports[k], cfg.apiKey, 'DELETE', `/sandboxes/${x.sandboxID}`);
      },
      'REST create + exec + delete': async () => {
        const b = await rest(sock, 'POST', '/v1/sandboxes', { ttl: 120 });
        await rest(sock, 'POST', `/v1/sandboxes/${b.id}/exec`, { cmd: bash, wait: true });
        await rest(sock, 'DELETE', `/v1/sandboxes/${b.id}?force=1`);
      },
    } });
  }
  // The client alone: against the stand-in envd (the sandbox is created on build 0).
  const cfg0 = { apiKey: fs.readFileSync(path.join(dirs[0], 'key'), 'utf8').trim(), apiUrl: `http://127.0.0.1:${ports[0]}`, sandboxUrl: `http://127.0.0.1:${standIn}` };
  const sf = await Sandbox.create({ ...cfg0, timeoutMs: 900000 });
  const fagent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const client = {
    'SDK commands.run(true), stand-in envd': () => sf.commands.run('true'),
    'Connect Start, node http, stand-in envd': () => connectStart(fagent, standIn, 'x', 'x', '/bin/true', []),
  };
  const keys = Object.keys(builds[0].kinds);
  const res = [{}, {}], cres = {};
  for (let i = 0; i < 3; i++) {
    for (const b of builds) for (const k of keys) await b.kinds[k]();
    for (const k in client) await client[k]();
  }
  for (let i = 0; i < N; i++) {
    for (const k of keys)
      for (let j = 0; j < 2; j++) {
        const w = (i + j) % 2; // old first on even rounds, new first on odd ones
        const t = ms();
        await builds[w].kinds[k]();
        (res[w][k] ||= []).push(ms() - t);
      }
    for (const k in client) { const t = ms(); await client[k](); (cres[k] ||= []).push(ms() - t); }
  }
  const C = +(process.env.BENCH_CREATE || 20);
  for (let i = 0; i < C; i++)
    for (const k of Object.keys(builds[0].create))
      for (let j = 0; j < 2; j++) {
        const w = (i + j) % 2;
        const t = ms();
        await builds[w].create[k]();
        (res[w][k] ||= []).push(ms() - t);
      }
  const f = (v) => `p50 ${pct(v, 0.5).toFixed(2)} p90 ${pct(v, 0.9).toFixed(2)}`;
  console.log(`${''.padEnd(40)} ${'old (ms)'.padEnd(22)} new (ms)   (n=${N} each, creates n=${C})`);
  for (const k of Object.keys(res[0])) console.log(`${k.padEnd(40)} ${f(res[0][k]).padEnd(22)} ${f(res[1][k])}`);
  for (const k in client) console.log(`${k.padEnd(40)} ${f(cres[k])}`);
  for (const b of builds) await b.s.kill();
  await sf.kill();
})().catch((e) => { console.error('bench/e2b/compare:', e); process.exit(1); });
