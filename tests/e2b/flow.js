// Flow control: a client that stops reading a command's output stream
// makes the command block (it does not run to the end into the daemon's
// memory), and the daemon's memory stays bounded; reading again lets it end.
'use strict';
const http = require('http');
const fs = require('fs');
const { e2b, template, check, envelope, main } = require('./common.js');
const { Sandbox } = e2b;

const rss = (pid) => +(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

main(async () => {
  const sbx = await Sandbox.create(template);
  const token = sbx.envdAccessToken || sbx.envdApi?.accessToken || sbx.connectionConfig?.accessToken;
  const url = new URL(process.env.E2B_API_URL);
  const daemon = +process.env.DAEMON_PID;
  const before = rss(daemon);
  let got = 0;
  const res = await new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method: 'POST', path: '/process.Process/Start',
      headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'X-Access-Token': token, 'Content-Type': 'application/connect+json', 'Connect-Timeout-Ms': '0' } }, resolve);
    req.on('error', reject);
    req.end(envelope({ process: { cmd: '/bin/sh', args: ['-c', 'head -c 50000000 /dev/zero; echo done >/tmp/flow-done'] } }));
  });
  let paused = false;
  await new Promise((r) => {
    res.on('data', (c) => {
      got += c.length;
      if (!paused && got > (1 << 20)) { paused = true; res.pause(); r(); }
    });
  });
  await new Promise((r) => setTimeout(r, 3000));
  const procs = await sbx.commands.list();
  check(procs.some((p) => p.args.join(' ').includes('head -c 50000000')), 'a reader that stopped: the command is blocked, not done');
  check(!(await sbx.files.exists('/tmp/flow-done').catch(() => false)), 'it has not reached its end');
  const grown = rss(daemon) - before;
  check(grown < 64 * 1024, `the daemon grew ${grown} KiB, not the output's 50 MB`);
  await new Promise((r) => { res.on('end', r); res.resume(); });
  check(got > 50000000, 'reading again: all of it arrives');
  await sbx.kill();
});
