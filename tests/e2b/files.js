// files through the SDK: text and a 64 MiB binary both ways, list, exists,
// getInfo, makeDir, rename, remove, several files at once, watchDir.
'use strict';
const crypto = require('crypto');
const { e2b, template, check, rejects, main } = require('./common.js');
const { Sandbox } = e2b;

main(async () => {
  const sbx = await Sandbox.create(template);
  const w = await sbx.files.write('notes/a.txt', 'hello files\n');
  check(w.path === '/workspace/notes/a.txt' && w.name === 'a.txt', 'write answers the path (parents made)');
  check(await sbx.files.read('notes/a.txt') === 'hello files\n', 'read text back');
  check(await sbx.files.read('/workspace/notes/a.txt') === 'hello files\n', 'absolute path');
  const big = crypto.randomBytes(64 << 20);
  await sbx.files.write('big.bin', big);
  const back = Buffer.from(await sbx.files.read('big.bin', { format: 'bytes' }));
  check(back.length === big.length && crypto.createHash('sha256').update(back).digest('hex') === crypto.createHash('sha256').update(big).digest('hex'), '64 MiB binary round trip');
  const sum = await sbx.commands.run('sha256sum big.bin | cut -d" " -f1');
  check(sum.stdout.trim() === crypto.createHash('sha256').update(big).digest('hex'), 'the sandbox sees the same bytes');
  await sbx.files.write([{ path: 'm/1.txt', data: 'one' }, { path: 'm/2.txt', data: 'two' }]);
  check(await sbx.files.read('m/2.txt') === 'two', 'several files in one write');
  const ls = await sbx.files.list('notes');
  check(ls.length === 1 && ls[0].name === 'a.txt' && ls[0].type === 'file' && ls[0].size === 12, 'list');
  check(await sbx.files.exists('notes/a.txt') === true && await sbx.files.exists('nope') === false, 'exists');
  const info = await sbx.files.getInfo('notes/a.txt');
  check(info.type === 'file' && info.size === 12 && info.permissions === '-rw-r--r--' && info.modifiedTime instanceof Date, 'getInfo');
  check(await sbx.files.makeDir('dir1') === true && await sbx.files.makeDir('dir1') === false, 'makeDir, and again: false');
  const mv = await sbx.files.rename('notes/a.txt', 'dir1/b.txt');
  check(mv.path === '/workspace/dir1/b.txt' && await sbx.files.exists('notes/a.txt') === false, 'rename');
  await sbx.files.remove('dir1');
  check(await sbx.files.exists('dir1') === false, 'remove (recursive)');
  await rejects(sbx.files.read('missing.txt'), e2b.NotFoundError || e2b.FileNotFoundError || Error, 'read of a missing file fails');
  await rejects(sbx.files.write('/etc/planted', 'x'), null, 'write outside the file roots is refused');
  await rejects(sbx.files.write('../escape.txt', 'x'), null, '.. escape refused');
  const link = await sbx.commands.run('ln -s /etc /workspace/etc-link && echo ok');
  check(link.stdout === 'ok\n', 'made a symlink out');
  await rejects(sbx.files.write('etc-link/planted', 'x'), null, 'a write through a symlink that leads out is refused');
  if (process.env.E2B_WATCH === '1') {
    const events = [];
    const h = await sbx.files.watchDir('.', (ev) => events.push(ev));
    await sbx.files.write('watched.txt', 'x');
    for (let i = 0; i < 50 && !events.length; i++) await new Promise((r) => setTimeout(r, 100));
    await h.stop();
    check(events.some((ev) => ev.name === 'watched.txt'), 'watchDir sees a write');
  }
  await sbx.kill();
});
