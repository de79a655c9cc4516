// Directory watches through the SDK (sandbox.files.watchDir), the agent's
// inotify: every event type, with and without recursive, renames as
// RENAME + CREATE, directories renamed or made inside a recursive watch
// followed, and each bound (depth, directory count, events not taken, the
// watched directory going) ending the watch with a clear error.
'use strict';
const { e2b, template, check, rejects, raw, main } = require('./common.js');
const { Sandbox } = e2b;
const T = e2b.FilesystemEventType;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Events arrive as they happen: wait (bounded) until cond holds.
async function until(cond, what, ms = 5000) {
  for (let t = 0; t < ms && !cond(); t += 20) await sleep(20);
  check(cond(), what);
}

const has = (evs, name, type) => evs.some((e) => e.name === name && e.type === type);

main(async () => {
  const sbx = await Sandbox.create(template);
  const sh = (cmd) => sbx.commands.run(cmd);
  await sh('mkdir -p flat rec');

  // Not recursive: every event type in the directory itself, nothing below.
  const flat = [];
  const h1 = await sbx.files.watchDir('flat', (e) => flat.push(e));
  await sh('echo a >flat/f && echo more >>flat/f && chmod 600 flat/f && mv flat/f flat/g && rm flat/g && mkdir flat/sub && echo x >flat/sub/inner');
  await until(() => has(flat, 'sub', T.CREATE), 'watchDir: the last event arrives');
  check(has(flat, 'f', T.CREATE), 'CREATE');
  check(has(flat, 'f', T.WRITE), 'WRITE');
  check(has(flat, 'f', T.CHMOD), 'CHMOD');
  check(has(flat, 'f', T.RENAME) && has(flat, 'g', T.CREATE), 'a rename: RENAME of the old name, CREATE of the new');
  check(!has(flat, 'f', T.REMOVE), 'a rename is not a remove');
  check(has(flat, 'g', T.REMOVE), 'REMOVE');
  const order = flat.map((e) => e.name + ':' + e.type);
  check(order.indexOf('f:' + T.CREATE) < order.indexOf('f:' + T.WRITE) && order.indexOf('f:' + T.RENAME) < order.indexOf('g:' + T.REMOVE), 'in the order they happened');
  await sleep(100);
  check(!flat.some((e) => e.name.includes('inner')), 'not recursive: nothing from below');
  await h1.stop();

  // includeEntry (envd >= 0.6.3, which the native backend reports): the
  // event carries the path's EntryInfo.
  if (template === 'base') {
  const withEntry = [];
  const h0 = await sbx.files.watchDir('flat', (e) => withEntry.push(e), { includeEntry: true });
  await sh('echo e >flat/entry.txt');
  await until(() => withEntry.some((e) => e.name === 'entry.txt' && e.entry), 'includeEntry: an event with its entry');
  const en = withEntry.find((e) => e.name === 'entry.txt' && e.entry).entry;
  check(en.type === 'file' && en.path.endsWith('/flat/entry.txt') && typeof en.owner === 'string', 'the entry: type, path, owner');
  await h0.stop();
  }

  // Recursive: deep creates, a directory renamed is followed under its new name.
  const rec = [];
  const h2 = await sbx.files.watchDir('rec', (e) => rec.push(e), { recursive: true });
  await sh('mkdir -p rec/a/b/c && echo y >rec/a/b/c/f');
  await until(() => has(rec, 'a/b/c/f', T.CREATE), 'recursive: a file made three levels down (mkdir -p) is seen');
  check(has(rec, 'a', T.CREATE) && has(rec, 'a/b', T.CREATE) && has(rec, 'a/b/c', T.CREATE), 'recursive: each new directory is seen');
  await sh('mv rec/a/b rec/a/z');
  await until(() => has(rec, 'a/z', T.CREATE), 'recursive: a renamed directory: CREATE of the new name');
  check(has(rec, 'a/b', T.RENAME), 'recursive: and RENAME of the old one');
  // Like envd (fsnotify), what happens in a directory before its watch is
  // added is seen by the scan of it (CREATE), not as it happened: the
  // rename is waited for before writing into it.
  await sh('echo w >rec/a/z/c/g && echo v >>rec/a/z/c/f');
  await until(() => has(rec, 'a/z/c/f', T.WRITE) && has(rec, 'a/z/c/g', T.CREATE), 'recursive: a create and a write inside the renamed directory, under its new name');
  await sh('rm -r rec/a');
  await until(() => has(rec, 'a', T.REMOVE), 'recursive: a removed tree');
  check(has(rec, 'a/z/c/f', T.REMOVE), 'recursive: removes from deep down');
  await h2.stop();

  // Bounds, each a clear error.
  await sh('mkdir -p deep/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17');
  const e1 = await rejects(sbx.files.watchDir('deep', () => {}, { recursive: true }), e2b.RateLimitError, 'a tree deeper than 16 levels is refused');
  check(/deeper than 16/.test(e1.message), 'the depth error says so: ' + e1.message);
  check((await sbx.files.watchDir('deep', () => {})) && true, 'the same directory without recursive is fine');
  // The bounds that need thousands of files run where files are cheap
  // (E2B_WATCH_LIGHT=1 on gVisor, whose file system makes them minutes).
  const light = process.env.E2B_WATCH_LIGHT === '1';
  if (!light) {
    await sh('mkdir -p many && cd many && mkdir $(seq 4100)');
    const e2 = await rejects(sbx.files.watchDir('many', () => {}, { recursive: true }), e2b.RateLimitError, 'more than 4096 directories are refused');
    check(/more than 4096 directories/.test(e2.message), 'the count error says so: ' + e2.message);
  }
  await sh('mkdir -p grow');
  let exit3;
  const h3 = await sbx.files.watchDir('grow', () => {}, { recursive: true, onExit: (e) => { exit3 = e || 'clean'; } });
  await sh('mkdir -p grow/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17');
  await until(() => exit3, 'a watch whose tree grows past the depth bound ends');
  check(exit3 instanceof Error && /deeper than 16/.test(exit3.message), 'with the depth error: ' + exit3);
  await h3.stop();
  await sh('mkdir -p gone');
  let exit4;
  const h4 = await sbx.files.watchDir('gone', () => {}, { onExit: (e) => { exit4 = e || 'clean'; } });
  await sh('rmdir gone');
  await until(() => exit4, 'a watch whose directory is removed ends');
  check(exit4 instanceof Error && /watched directory/.test(exit4.message), 'saying why: ' + exit4);
  await h4.stop();
  await rejects(sbx.files.watchDir('nope', () => {}), e2b.NotFoundError, 'a missing directory: NotFoundError');

  // The watcher RPCs (not called by the JS SDK): raw Connect.  Events not
  // taken wait in the agent up to its bound; past it the watcher ends
  // with resource_exhausted instead of losing events silently.
  const token = sbx.envdAccessToken || sbx.envdApi?.accessToken || sbx.connectionConfig?.accessToken;
  const rpc = async (m, body) => {
    const r = await raw('POST', '/filesystem.Filesystem/' + m, { 'E2b-Sandbox-Id': sbx.sandboxId, 'X-Access-Token': token, 'Content-Type': 'application/json' }, JSON.stringify(body));
    return { status: r.status, msg: JSON.parse(r.body.toString() || '{}') };
  };
  await sh('mkdir -p q');
  const cw = await rpc('CreateWatcher', { path: 'q', recursive: false, includeEntry: true });
  check(cw.status === 200, 'CreateWatcher');
  await sh('echo 1 >q/one');
  let ge;
  // The event may arrive just after the command has ended: poll (250 times, 20 ms apart).
  for (let t = 0; t < 5000 && !(ge && (ge.status !== 200 || ge.msg.events.length)); t += 20) { ge = await rpc('GetWatcherEvents', { watcherId: cw.msg.watcherId }); if (ge.status === 200 && !ge.msg.events.length) await sleep(20); }
  check(ge.status === 200 && ge.msg.events[0].name === 'one' && ge.msg.events[0].type === 'EVENT_TYPE_CREATE', 'GetWatcherEvents: the create');
  check(ge.msg.events[0].entry && ge.msg.events[0].entry.path.endsWith('/q/one') && ge.msg.events[0].entry.type === 'FILE_TYPE_FILE', 'includeEntry: the EntryInfo');
  if (!light) {
    await sh('cd q && for i in $(seq 30000); do : >f$i; done');
    let over;
    for (let i = 0; i < 50; i++) {
      over = await rpc('GetWatcherEvents', { watcherId: cw.msg.watcherId });
      if (over.status !== 200) break;
      await sleep(20);
    }
    check(over.status === 429 && over.msg.code === 'resource_exhausted' && /events were lost/.test(over.msg.message), 'events not taken past the bound: resource_exhausted (' + JSON.stringify(over.msg) + ')');
    check((await rpc('GetWatcherEvents', { watcherId: cw.msg.watcherId })).status === 404, 'and the watcher is gone');
  } else {
    check((await rpc('RemoveWatcher', { watcherId: cw.msg.watcherId })).status === 200, 'RemoveWatcher');
  }
  await sbx.kill();
});
