// What the SDK never sends, over raw HTTP: missing and wrong keys and
// tokens (RPCs, /files, previews), another sandbox's id with this token,
// malformed envelopes, bodies over the limit, unknown methods.  Each gets
// its error and changes nothing.
'use strict';
const { e2b, template, check, raw, envelope, envelopes, main } = require('./common.js');
const { Sandbox } = e2b;

main(async () => {
  const a = await Sandbox.create(template);
  const b = await Sandbox.create(template);
  const tokA = a.envdAccessToken || a.envdApi?.accessToken || a.connectionConfig?.accessToken;
  const ta = tokA || (await (async () => { throw new Error('no token on the SDK object'); })());
  const key = process.env.E2B_API_KEY;
  const env = (id, tok) => Object.assign({ 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983' }, tok === undefined ? {} : { 'X-Access-Token': tok });
  const list = JSON.stringify({});
  const j = { 'Content-Type': 'application/json' };

  // Control plane keys.
  check((await raw('GET', '/v2/sandboxes')).status === 401, 'no X-API-KEY: 401');
  check((await raw('GET', '/v2/sandboxes', { 'X-API-KEY': key + '0' })).status === 401, 'wrong X-API-KEY: 401');
  const bad = await raw('GET', '/v2/sandboxes', { 'X-API-KEY': 'e2b_0000' });
  check(bad.status === 401 && JSON.parse(bad.body).code === 401, "401 with E2B's error body");
  check((await raw('GET', '/sandboxes/' + a.sandboxId, { 'X-API-KEY': ta })).status === 401, 'a sandbox token is not an API key');

  // envd tokens.
  const rpc = '/process.Process/List';
  check((await raw('POST', rpc, Object.assign(env(a.sandboxId), j), list)).status === 401, 'RPC without token: 401');
  check((await raw('POST', rpc, Object.assign(env(a.sandboxId, 'x'.repeat(64)), j), list)).status === 401, 'RPC with a wrong token: 401');
  check((await raw('POST', rpc, Object.assign(env(b.sandboxId, ta), j), list)).status === 401, "a's token on b's id: 401");
  check((await raw('POST', rpc, Object.assign(env('0000000000000000', ta), j), list)).status === 502, 'unknown sandbox id: 502');
  check((await raw('POST', rpc, Object.assign(env(a.sandboxId, ta), j), list)).status === 200, 'the right token: 200');
  check((await raw('GET', '/files?path=x', env(a.sandboxId))).status === 401, '/files without token: 401');
  check((await raw('GET', '/files?path=x&signature=v1_AAAA', env(a.sandboxId))).status === 401, '/files with a wrong signature: 401');
  check((await raw('POST', '/files?path=planted.txt', Object.assign(env(b.sandboxId, ta), { 'Content-Type': 'application/octet-stream' }), 'x')).status === 401, "/files write with a's token on b: 401");
  check(await b.files.exists('planted.txt') === false, 'nothing written');
  check((await raw('GET', '/health', env(a.sandboxId))).status === 204, '/health: 204');

  // Signed URLs (the SDK makes them from the token).
  if (a.uploadUrl) {
    await a.files.write('signed.txt', 'signed');
    const u = new URL(await a.downloadUrl('signed.txt'));
    const r = await raw('GET', u.pathname + u.search, { 'E2b-Sandbox-Id': a.sandboxId });
    check(r.status === 200 && r.body.toString() === 'signed', 'downloadUrl signature opens /files');
    const u2 = new URL(await a.downloadUrl('other.txt'));
    const r2 = await raw('GET', '/files?path=signed.txt&' + u2.search.replace(/^\?path=[^&]*&?/, ''), { 'E2b-Sandbox-Id': a.sandboxId });
    check(r2.status === 401, 'a signature for another path: 401');
  }

  // Previews.
  const srv = await a.commands.run('cd /tmp && echo served >index.html && exec python3 -m http.server 8765 --bind 127.0.0.1', { background: true });
  const host = a.getHost(8765);
  let pv = null;
  for (let i = 0; i < 50; i++) {
    pv = await raw('GET', '/index.html', { Host: host, 'e2b-traffic-access-token': ta });
    if (pv.status === 200) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  check(pv.status === 200 && pv.body.toString() === 'served\n', 'preview through Host with the token');
  check((await raw('GET', '/index.html', { Host: host })).status === 401, 'preview without token: 401');
  const hostB = b.getHost(8765);
  check((await raw('GET', '/index.html', { Host: hostB, 'X-Access-Token': ta })).status === 401, "preview of b with a's token: 401");
  await a.commands.kill(srv.pid);

  // Bad Connect input.
  const sh = Object.assign(env(a.sandboxId, ta), { 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1' });
  const good = envelope({ process: { cmd: '/bin/true' } });
  const cut = good.subarray(0, good.length - 3);
  let r = await raw('POST', '/process.Process/Start', sh, cut);
  let ev = envelopes(r.body);
  check(ev.length === 1 && ev[0].flags === 2 && ev[0].msg.error.code === 'invalid_argument', 'truncated envelope: invalid_argument');
  const lie = Buffer.from(good); lie.writeUInt32BE(1 << 30, 1);
  r = await raw('POST', '/process.Process/Start', sh, lie);
  check(envelopes(r.body)[0].msg.error.code === 'invalid_argument', 'envelope with a false length: invalid_argument');
  const comp = Buffer.from(good); comp[0] = 1;
  r = await raw('POST', '/process.Process/Start', sh, comp);
  check(envelopes(r.body)[0].msg.error.code === 'invalid_argument', 'compressed envelope refused');
  r = await raw('POST', '/process.Process/Start', sh, envelope([1, 2]));
  check(envelopes(r.body)[0].msg.error.code === 'invalid_argument', 'not an object: invalid_argument');
  r = await raw('POST', '/filesystem.Filesystem/Stat', Object.assign(env(a.sandboxId, ta), j), '{"path":');
  check(r.status === 400 && JSON.parse(r.body).code === 'invalid_argument', 'malformed unary JSON: 400 invalid_argument');
  r = await raw('POST', '/filesystem.Filesystem/Stat', Object.assign(env(a.sandboxId, ta), j), JSON.stringify({ path: 'x'.repeat(2 << 20) }));
  check(r.status === 413 || r.status === 429 || r.status === 400, 'body over the limit refused (' + r.status + ')');
  r = await raw('POST', '/process.Process/Nope', Object.assign(env(a.sandboxId, ta), j), '{}');
  check(r.status === 501 && JSON.parse(r.body).code === 'unimplemented', 'unknown method: unimplemented');
  r = await raw('POST', '/nope.Nope/X', Object.assign(env(a.sandboxId, ta), j), '{}');
  check(r.status === 501, 'unknown service: unimplemented');
  r = await raw('POST', '/process.Process/SendSignal', Object.assign(env(a.sandboxId, ta), j), JSON.stringify({ process: { pid: 999999 }, signal: 'SIGNAL_SIGKILL' }));
  check(r.status === 404 && JSON.parse(r.body).code === 'not_found', 'signal to an unknown pid: not_found');
  r = await raw('POST', '/process.Process/SendSignal', Object.assign(env(a.sandboxId, ta), j), JSON.stringify({ process: { pid: 1 }, signal: 'SIGNAL_SIGHUP' }));
  check(r.status === 400, 'an unknown signal: invalid_argument');
  // StreamInput (client streaming; the JS SDK never calls it).
  const cat = await a.commands.run('cat', { background: true, stdin: true });
  const si = Buffer.concat([envelope({ start: { process: { pid: cat.pid } } }),
    envelope({ data: { input: { stdin: Buffer.from('via stream\n').toString('base64') } } }), envelope({ keepalive: {} })]);
  r = await raw('POST', '/process.Process/StreamInput', sh, si);
  ev = envelopes(r.body);
  check(r.status === 200 && ev.length === 2 && ev[1].flags === 2 && !ev[1].msg.error, 'StreamInput answered');
  await a.commands.sendStdin(cat.pid, 'then sdk\n');
  if (a.commands.closeStdin) await a.commands.closeStdin(cat.pid); else await a.commands.kill(cat.pid);
  const cr = await cat.wait().catch((e) => e);
  check(cr.stdout === 'via stream\nthen sdk\n', 'StreamInput reached stdin, in order');
  r = await raw('POST', '/process.Process/StreamInput', sh, envelope({ data: { input: { stdin: 'eA==' } } }));
  check(envelopes(r.body).pop().msg.error.code === 'invalid_argument', 'StreamInput without start: invalid_argument');
  check((await a.commands.run('echo still fine')).stdout === 'still fine\n', 'the sandbox is unchanged');
  await a.kill();
  await b.kill();
});
