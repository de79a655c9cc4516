// commands and pty through the SDK: streams, exit codes, background, list,
// kill, stdin, timeoutMs, envs, cwd, connect; pty create, resize, input.
'use strict';
const { e2b, template, check, rejects, main } = require('./common.js');
const { Sandbox, CommandExitError } = e2b;

main(async () => {
  const sbx = await Sandbox.create(template);
  let out = '', err = '';
  const r = await sbx.commands.run('echo one; echo two >&2; echo three', {
    onStdout: (d) => { out += d; }, onStderr: (d) => { err += d; },
  });
  check(r.exitCode === 0 && r.stdout === 'one\nthree\n' && r.stderr === 'two\n', 'run: stdout and stderr');
  check(out === 'one\nthree\n' && err === 'two\n', 'run: streamed callbacks');
  const e = await rejects(sbx.commands.run('echo bad >&2; exit 7'), CommandExitError, 'exit 7 is CommandExitError');
  check(e.exitCode === 7 && e.stderr === 'bad\n', 'CommandExitError carries exit code and stderr');
  const id = await sbx.commands.run('id -u; pwd; echo $HOME');
  check(id.stdout === '1000\n/home/user\n/home/user\n', 'default user 1000, home and cwd /home/user');
  check((await sbx.commands.run('pwd')).stdout === '/home/user\n', 'pwd is /home/user');
  check((await sbx.commands.run('echo $HOME')).stdout === '/home/user\n', '$HOME is /home/user');
  const root = await sbx.commands.run('id -u; echo $HOME', { user: 'root' });
  check(root.stdout === '0\n/root\n', 'user root, HOME /root');
  const env = await sbx.commands.run('echo $FOO:$BAR', { envs: { FOO: 'x', BAR: 'y z' } });
  check(env.stdout === 'x:y z\n', 'envs');
  const cwd = await sbx.commands.run('mkdir -p sub && cd sub && pwd');
  const cwd2 = await sbx.commands.run('pwd', { cwd: '/home/user/sub' });
  const cwd3 = await sbx.commands.run('pwd', { cwd: 'sub' });
  check(cwd.stdout === '/home/user/sub\n' && cwd2.stdout === '/home/user/sub\n' && cwd3.stdout === '/home/user/sub\n', 'cwd (absolute and relative)');
  const ws = await sbx.commands.run('test -d /workspace/sub && echo same');
  check(ws.stdout === 'same\n', 'the home is the workspace: /workspace/sub is there too');
  const own = await sbx.commands.run('stat -c %u /home/user /workspace');
  check(own.stdout === '1000\n1000\n', 'the home (the workspace) belongs to the user');
  // A big output in a few chunks arrives whole and in order.
  const big = await sbx.commands.run('seq 1 200000');
  check(big.stdout.split('\n').length === 200001 && big.stdout.endsWith('200000\n'), 'large output whole');

  const t0 = Date.now();
  await rejects(sbx.commands.run('sleep 30', { timeoutMs: 1000 }), null, 'timeoutMs ends the command');
  check(Date.now() - t0 < 10000, 'timeoutMs: within its deadline');

  const bg = await sbx.commands.run('sleep 60', { background: true });
  check(bg.pid > 0, 'background: a pid at once');
  const procs = await sbx.commands.list();
  check(procs.some((p) => p.pid === bg.pid && p.cmd === '/bin/bash'), 'list shows the background command');
  check(await sbx.commands.kill(bg.pid) === true, 'kill: true');
  await rejects(bg.wait(), CommandExitError, 'killed command ends with an error');
  check(await sbx.commands.kill(bg.pid) === false, 'kill of an ended pid: false');
  check(!(await sbx.commands.list()).some((p) => p.pid === bg.pid), 'killed command is gone from list');

  const cat = await sbx.commands.run('cat', { background: true, stdin: true });
  await sbx.commands.sendStdin(cat.pid, 'hello stdin\n');
  if (sbx.commands.closeStdin) await sbx.commands.closeStdin(cat.pid);
  else await sbx.commands.sendStdin(cat.pid, '');
  if (sbx.commands.closeStdin) {
    const cr = await cat.wait();
    check(cr.stdout === 'hello stdin\n', 'stdin and closeStdin');
  } else {
    await sbx.commands.kill(cat.pid);
    console.log('ok stdin (no closeStdin in this SDK)');
  }

  const slow = await sbx.commands.run('echo first; sleep 1; echo second', { background: true });
  const again = await sbx.commands.connect(slow.pid);
  const ar = await again.wait();
  check(ar.stdout.includes('second'), 'connect re-attaches to a running command');

  let ptyOut = '';
  const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { ptyOut += Buffer.from(d).toString(); } });
  await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 });
  await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size; echo pty-$((40+2))\nexit\n'));
  await pty.wait().catch(() => {});
  check(ptyOut.includes('30 100'), 'pty resize seen by stty');
  check(ptyOut.includes('pty-42'), 'pty input and output');

  await sbx.kill();
});
