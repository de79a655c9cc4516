// Pause and resume as the SDK's users see them: POST /sandboxes/{id}/pause
// freezes the sandbox (its state reads "paused", a second pause is 409,
// list by state finds it), Sandbox.connect resumes it (201) and a process
// started before the pause carries on where it was.
'use strict';
const { e2b, pkg, template, check, raw, main } = require('./common.js');
const { Sandbox } = e2b;

const key = { 'X-API-KEY': process.env.E2B_API_KEY, 'Content-Type': 'application/json' };

main(async () => {
  const s = await Sandbox.create(template, { metadata: { suite: 'pause-' + pkg + '-' + process.pid } });
  await s.commands.run('i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done', { background: true });
  await new Promise((r) => setTimeout(r, 300));
  let r = await raw('POST', `/sandboxes/${s.sandboxId}/pause`, key);
  check(r.status === 204, 'pause: 204');
  r = await raw('POST', `/sandboxes/${s.sandboxId}/pause`, key);
  check(r.status === 409, 'pause again: 409');
  const info = await Sandbox.getInfo(s.sandboxId);
  check(info.state === 'paused', 'getInfo: paused');
  const paused = [];
  const p = Sandbox.list({ query: { state: ['paused'] } });
  while (p.hasNext) paused.push(...await p.nextItems());
  check(paused.some((x) => x.sandboxId === s.sandboxId), 'list state=paused finds it');
  r = await raw('POST', `/sandboxes/${s.sandboxId}/connect`, key, JSON.stringify({ timeout: 300 }));
  check(r.status === 201, 'connect of a paused sandbox resumes it: 201');
  const again = await Sandbox.connect(s.sandboxId);
  check((await again.getInfo()).state === 'running', 'running after connect');
  const a = Number((await again.commands.run('cat /tmp/count')).stdout);
  await new Promise((r2) => setTimeout(r2, 400));
  const b = Number((await again.commands.run('cat /tmp/count')).stdout);
  check(b > a, `the loop goes on after resume (${a} -> ${b})`);
  await again.kill();
});
