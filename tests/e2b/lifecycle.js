// The control plane through the SDK: create with metadata and envVars,
// connect, getInfo, list with metadata filters, setTimeout, expiry, kill,
// unknown templates, and two sandboxes that cannot see each other.
'use strict';
const { e2b, pkg, template, check, rejects, main } = require('./common.js');
const { Sandbox } = e2b;

async function listAll(query) {
  const p = Sandbox.list({ query });
  const out = [];
  while (p.hasNext) out.push(...await p.nextItems());
  return out;
}

main(async () => {
  const tag = pkg + '-' + process.pid;
  const a = await Sandbox.create(template, { metadata: { suite: tag, name: 'a' }, envs: { FROM_CREATE: 'yes' } });
  const b = await Sandbox.create(template, { metadata: { suite: tag, name: 'b' } });
  check(a.sandboxId !== b.sandboxId, 'two sandboxes');
  check((await a.commands.run('echo $FROM_CREATE')).stdout === 'yes\n', 'envVars are the default environment');
  const info = await a.getInfo();
  check(info.sandboxId === a.sandboxId && info.metadata.name === 'a' && info.state === 'running' && info.templateId === template, 'getInfo');
  const both = await listAll({ metadata: { suite: tag } });
  check(both.length === 2, 'list by metadata: both');
  const onlyA = await listAll({ metadata: { suite: tag, name: 'a' } });
  check(onlyA.length === 1 && onlyA[0].sandboxId === a.sandboxId, 'list by two metadata keys: one');

  // Isolation: b sees neither a's files nor a's processes.
  await a.files.write('secret.txt', 'only a');
  const bg = await a.commands.run('sleep 120', { background: true });
  check(await b.files.exists('secret.txt') === false, "b cannot see a's files");
  check(!(await b.commands.list()).some((p) => p.pid === bg.pid && p.args.includes('sleep 120')), "b cannot see a's processes");
  check(await b.commands.kill(bg.pid) === false || (await a.commands.list()).some((p) => p.pid === bg.pid), "b cannot kill a's process");

  const c = await Sandbox.connect(a.sandboxId);
  check((await c.files.read('secret.txt')) === 'only a', 'connect: the same sandbox');
  await a.setTimeout(60000);
  const end1 = (await a.getInfo()).endAt.getTime();
  check(end1 > Date.now() + 50000 && end1 < Date.now() + 70000, 'setTimeout moves endAt');

  const short = await Sandbox.create(template, { timeoutMs: 2000, metadata: { suite: tag, name: 'short' } });
  let gone = false;
  for (let i = 0; i < 60 && !gone; i++) {
    await new Promise((r) => setTimeout(r, 200));
    gone = !(await short.isRunning());
  }
  check(gone, 'expiry: the sandbox ends at its timeout');

  await rejects(Sandbox.create('no-such-template'), null, 'unknown template refused');
  check(await a.kill() === undefined || true, 'kill');
  check(await Sandbox.kill(a.sandboxId) === false, 'kill again: false');
  check(await a.isRunning() === false, 'killed: not running');
  await rejects(Sandbox.connect(a.sandboxId), null, 'connect to a killed sandbox fails');
  await b.kill();
  check((await listAll({ metadata: { suite: tag } })).length === 0, 'none left');
});
