// bench/e2b/run's measurements (see there).
'use strict';
const path = require('path');
const { rest: restOn, ms, pct } = require('./common');
const rest = (...a) => restOn(process.env.AB_SOCK, ...a);
const { Sandbox } = require(path.join(process.env.AGENTBOX_NPM_DIR, 'e2b', 'node_modules', 'e2b-2-51'));

const N = +(process.env.BENCH_N || 20), RTT = +(process.env.BENCH_RTT || 100), PAR = +(process.env.BENCH_PAR || 20);

function show(name, v) { console.log(`${name.padEnd(44)} p50 ${pct(v, 0.5).toFixed(2)} ms  p90 ${pct(v, 0.9).toFixed(2)} ms  (n=${v.length})`); return pct(v, 0.5); }

(async () => {
  const sdk = [], api = [];
  for (let i = 0; i < N; i++) {
    let t = ms();
    const s = await Sandbox.create({ timeoutMs: 120000 });
    await s.commands.run('true');
    await s.kill();
    sdk.push(ms() - t);
    t = ms();
    const b = await rest('POST', '/v1/sandboxes', { ttl: 120 });
    await rest('POST', `/v1/sandboxes/${b.id}/exec`, { cmd: ['/bin/bash', '-l', '-c', 'true'], wait: true });
    await rest('DELETE', `/v1/sandboxes/${b.id}?force=1`);
    api.push(ms() - t);
  }
  const a = show('SDK create + run(true) + kill', sdk);
  const b = show('REST create + exec(bash -l -c true) + delete', api);
  console.log(`  ratio SDK / REST: ${(a / b).toFixed(2)}`);

  const s = await Sandbox.create({ timeoutMs: 120000 });
  const rtt = [], rrtt = [];
  const id = s.sandboxId;
  const rb = await rest('POST', '/v1/sandboxes', { ttl: 120 });
  // The SDK runs every command as /bin/bash -l -c CMD: the same here.  The
  // two interleaved (one SDK call, one REST call, ...): both see the same load.
  const rexec = () => rest('POST', `/v1/sandboxes/${rb.id}/exec`, { cmd: ['/bin/bash', '-l', '-c', 'true'], wait: true });
  await s.commands.run('true');
  await rexec();
  for (let i = 0; i < RTT; i++) {
    let t = ms(); await s.commands.run('true'); rtt.push(ms() - t);
    t = ms(); await rexec(); rrtt.push(ms() - t);
  }
  const c = show('SDK commands.run(true) round trip', rtt);
  const d = show('REST exec(bash -l -c true) round trip', rrtt);
  console.log(`  ratio SDK / REST: ${(c / d).toFixed(2)}`);
  await s.kill();
  await rest('DELETE', `/v1/sandboxes/${rb.id}?force=1`);

  const t0 = ms();
  const many = await Promise.all(Array.from({ length: PAR }, () => Sandbox.create({ timeoutMs: 120000 })));
  const wall = ms() - t0;
  console.log(`${PAR} concurrent Sandbox.create()`.padEnd(44) + ` ${wall.toFixed(0)} ms wall`);
  await Promise.all(many.map((x) => x.kill()));
  void id;
})().catch((e) => { console.error('bench/e2b:', e); process.exit(1); });
