// Drives an exec-server (ours or the reference) through one scenario and
// fails loudly.  Usage:
//   node exec-server-check.mjs SCENARIO TRANSPORT [TRANSPORT2]
// TRANSPORT: unix:SOCKET:PATH (the daemon), ws://HOST:PORT/PATH, or
// stdio:["cmd","arg",...].  XS_BASE is the file:// URI of a writable test
// directory (ours: file:///workspace or the host workspace path; the
// reference: a host directory); XS_BASE2 the same for TRANSPORT2.
// Scenarios: core, bad, foreign, oversize, diff (TRANSPORT vs TRANSPORT2).
import { Client, b64, shape } from './exec-server-rpc.mjs';

const [scenario, t1, t2] = process.argv.slice(2);
let failures = 0;
const ok = (cond, what, detail) => {
	if (cond) console.log('ok   ' + what);
	else { failures++; console.log('FAIL ' + what + (detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 2000) : '')); }
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connect(t, headers) {
	if (t.startsWith('stdio:')) { const a = JSON.parse(t.slice(6)); return Client.stdio(a[0], a.slice(1)); }
	return Client.ws(t, { headers });
}

const code = (r) => r.error ? r.error.code : 'result';
const text = (s) => Buffer.from(s, 'base64').toString();

function startParams(id, argv, base, extra = {}) {
	return { processId: id, argv, cwd: base, env: { PATH: '/usr/local/bin:/usr/bin:/bin', TERM: 'dumb' }, tty: false, pipeStdin: false, arg0: null, sandbox: null, ...extra };
}

async function core(t, base) {
	const c = await connect(t);
	const init = await c.init();
	ok(init.result && typeof init.result.sessionId === 'string', 'initialize has a sessionId', init);
	const info = init.result.environmentInfo;
	ok(info && info.platformOs === 'linux' && info.shell && info.shell.path.startsWith('/bin/'), 'environmentInfo: linux, a shell', info);
	ok(info.cwd.startsWith('file:///') && info.userHomeDir.startsWith('file:///') && info.tempDir === 'file:///tmp', 'environmentInfo: URIs', info);
	ok(Object.values(info.capabilities).every((v) => v === false), 'no optional capability is advertised', info.capabilities);
	const ei = await c.call('environment/info', null);
	ok(ei.result && ei.result.shell.path === info.shell.path, 'environment/info', ei);
	const es = await c.call('environment/status', null);
	ok(es.result && es.result.status === 'ready', 'environment/status', es);

	let r = await c.call('process/start', startParams('echo', ['/bin/sh', '-c', 'echo out; echo err >&2; hostname; pwd; exit 3'], base));
	ok(r.result && r.result.processId === 'echo' && r.result.sandboxType === 'none', 'process/start echo', r);
	await c.until(() => c.closedNote('echo'));
	const ex = c.exitedNote('echo'), cl = c.closedNote('echo');
	ok(ex && ex.params.exitCode === 3, 'process/exited 3', ex);
	const outs = c.notes.filter((n) => n.method === 'process/output' && n.params.processId === 'echo');
	const seqs = outs.map((n) => n.params.seq).concat([ex.params.seq, cl.params.seq]);
	ok(seqs.every((s, i) => i === 0 || s > seqs[i - 1]), 'one seq counter: output < exited < closed', seqs);
	ok(outs.some((n) => n.params.stream === 'stderr') && outs.some((n) => n.params.stream === 'stdout'), 'stdout and stderr streams', outs);
	console.log('ECHO_STDOUT ' + JSON.stringify(c.output('echo', 'stdout')));
	console.log('ECHO_STDERR ' + JSON.stringify(c.output('echo', 'stderr')));
	r = await c.call('process/read', { processId: 'echo', afterSeq: 0, maxBytes: 65536, waitMs: 0 });
	ok(r.result && r.result.exited && r.result.closed && r.result.exitCode === 3 && r.result.chunks.length === outs.length, 'process/read after the end', r);

	// A shell on a real pty, fed through process/write.
	r = await c.call('process/start', startParams('tty', ['/bin/sh', '-c', 'if [ -t 0 ]; then echo IS-A-TTY; fi; tty; read line; echo "got $line"; sleep 60'], base, { tty: true }));
	ok(r.result, 'process/start tty', r);
	// a long poll that the output ends
	const t0 = Date.now();
	r = await c.call('process/read', { processId: 'tty', afterSeq: 0, waitMs: 10000 });
	ok(r.result && r.result.chunks.length > 0 && Date.now() - t0 < 9000, 'process/read long poll returns with output', r);
	ok(r.result.chunks.every((ch) => ch.stream === 'pty'), 'tty output is stream "pty"', r.result.chunks);
	r = await c.call('process/write', { processId: 'tty', chunk: b64('typed-words\n'), writeId: '1' });
	ok(r.result && r.result.status === 'accepted', 'process/write accepted', r);
	await c.until(() => c.output('tty').includes('got typed-words'));
	const tout = c.output('tty');
	ok(tout.includes('IS-A-TTY') && /\/dev\/pts\/\d+/.test(tout) && tout.includes('got typed-words'), 'the pty: a terminal, the typed line', tout);
	await sleep(300); // the shell is in its sleep by now
	r = await c.call('process/signal', { processId: 'tty', signal: 'interrupt' });
	ok(r.result, 'process/signal interrupt', r);
	await c.until(() => c.closedNote('tty'));
	ok(c.exitedNote('tty') && c.exitedNote('tty').params.exitCode === 130, 'interrupt: exit 130', c.exitedNote('tty') || c.notes.filter((n) => n.params.processId === 'tty').slice(-3));

	// terminate a running process; a long poll with nothing to say times out
	r = await c.call('process/start', startParams('sleeper', ['sleep', '300'], base, { pipeStdin: true }));
	ok(r.result, 'process/start sleeper', r);
	const t1 = Date.now();
	r = await c.call('process/read', { processId: 'sleeper', afterSeq: 0, waitMs: 700 });
	ok(r.result && r.result.chunks.length === 0 && !r.result.exited && Date.now() - t1 >= 600, 'process/read waits waitMs', r);
	r = await c.call('process/terminate', { processId: 'sleeper' });
	ok(r.result && r.result.running === true, 'process/terminate {running: true}', r);
	await c.until(() => c.closedNote('sleeper'));
	r = await c.call('process/terminate', { processId: 'sleeper' });
	ok(r.result && r.result.running === false, 'terminate again: {running: false}', r);
	r = await c.call('process/write', { processId: 'sleeper', chunk: b64('x'), writeId: '2' });
	ok(r.result && r.result.status === 'stdinClosed', 'write after the end: stdinClosed', r);

	// env: the policy and the keys
	r = await c.call('process/start', startParams('env', ['/bin/sh', '-c', 'echo "A=$A B=$B MY_TOKEN=$MY_TOKEN"'], base, {
		env: { A: 'one' }, envPolicy: { inherit: 'all', ignoreDefaultExcludes: false, exclude: [], set: { B: 'two', MY_TOKEN: 'x' }, includeOnly: [] } }));
	ok(r.result, 'process/start with envPolicy', r);
	await c.until(() => c.closedNote('env'));
	ok(c.output('env').trim() === 'A=one B=two MY_TOKEN=x', 'env and envPolicy.set applied', c.output('env'));

	// files
	const f = base + '/xs-file.txt';
	r = await c.call('fs/writeFile', { path: f, dataBase64: b64('written through fs\n'), sandbox: null });
	ok(r.result, 'fs/writeFile', r);
	r = await c.call('fs/readFile', { path: f });
	ok(r.result && text(r.result.dataBase64) === 'written through fs\n', 'fs/readFile round trip', r);
	r = await c.call('fs/getMetadata', { path: f });
	ok(r.result && r.result.isFile && !r.result.isDirectory && r.result.size === 19, 'fs/getMetadata', r);
	r = await c.call('fs/createDirectory', { path: base + '/xs-dir/sub', recursive: true });
	ok(r.result, 'fs/createDirectory recursive', r);
	r = await c.call('fs/copy', { sourcePath: f, destinationPath: base + '/xs-dir/sub/copy.txt', recursive: false });
	ok(r.result, 'fs/copy a file', r);
	r = await c.call('fs/copy', { sourcePath: base + '/xs-dir', destinationPath: base + '/xs-dir2', recursive: true });
	ok(r.result, 'fs/copy a tree', r);
	r = await c.call('fs/readFile', { path: base + '/xs-dir2/sub/copy.txt' });
	ok(r.result && text(r.result.dataBase64) === 'written through fs\n', 'the copied tree', r);
	r = await c.call('fs/readDirectory', { path: base + '/xs-dir2' });
	ok(r.result && r.result.entries.length === 1 && r.result.entries[0].fileName === 'sub' && r.result.entries[0].isDirectory, 'fs/readDirectory', r);
	r = await c.call('fs/canonicalize', { path: f });
	ok(r.result && r.result.path === f, 'fs/canonicalize (same form as asked)', r);
	r = await c.call('fs/remove', { path: base + '/xs-dir2', recursive: true, force: false });
	ok(r.result, 'fs/remove recursive', r);
	r = await c.call('fs/getMetadata', { path: base + '/xs-dir2' });
	ok(code(r) === -32004, 'removed: -32004', r);
	// the sandbox's own files (reads outside the workspace)
	r = await c.call('fs/readFile', { path: 'file:///etc/os-release' });
	ok(r.result && text(r.result.dataBase64).includes('ID='), 'fs/readFile file:///etc/os-release (a sandbox path)', r);
	// effects inside the sandbox: a file the process made is seen by fs/*
	r = await c.call('process/start', startParams('mk', ['/bin/sh', '-c', 'hostname > made-by-process.txt'], base));
	await c.until(() => c.closedNote('mk'));
	r = await c.call('fs/readFile', { path: base + '/made-by-process.txt' });
	console.log('MADE_BY_PROCESS ' + JSON.stringify(r.result ? text(r.result.dataBase64) : r));
	c.end();
	await sleep(300);
}

async function bad(t, base) {
	let c = await connect(t);
	await c.init();
	c.sendText('{"id": 1, "method": ');
	await c.until(() => c.raw.length > 0, 5000);
	ok(c.raw[0] && c.raw[0].id === -1 && c.raw[0].error.code === -32600, 'malformed JSON: -32600 with id -1 (as the reference)', c.raw);
	c.sendText('[1,2]');
	await c.until(() => c.raw.length > 1, 5000);
	ok(c.raw[1] && c.raw[1].error.code === -32600, 'not an object: -32600', c.raw);
	let r = await c.call('foo/bar', {});
	ok(code(r) === -32601, 'unknown method: -32601', r);
	r = await c.call('initialize', { clientName: 'again' });
	ok(code(r) === -32600, 'initialize twice: -32600', r);
	const cases = [
		['a plain path', '/etc/hostname', -32602],
		['an http URI', 'http://example.com/x', -32602],
		['a data URI', 'data:text/plain,hi', -32602],
		['a URI with ..', base + '/../../etc/passwd', -32602],
		['a URI with %2e%2e', base + '/%2e%2e/%2e%2e/etc/passwd', -32602],
		['a URI with a host', 'file://evil.example/etc/passwd', -32600],
		['a URI with %00', base + '/a%00b', -32602],
	];
	for (const [what, p, want] of cases) {
		r = await c.call('fs/readFile', { path: p });
		ok(code(r) === want, `fs/readFile of ${what}: ${want}`, r);
	}
	r = await c.call('fs/readFile', {});
	ok(code(r) === -32602, 'fs/readFile without path: -32602', r);
	r = await c.call('fs/readFile', { path: base + '/no-such-file' });
	ok(code(r) === -32004, 'a missing file: -32004', r);
	// symlinks out: the link's target is resolved inside the sandbox
	r = await c.call('fs/readFile', { path: base + '/link-out' });
	ok(!r.result || !text(r.result.dataBase64).includes(process.env.XS_HOST_SECRET || '\0'), 'a symlink to a host-only file never yields it', r);
	console.log('LINK_OUT_READ ' + JSON.stringify(code(r)));
	r = await c.call('fs/writeFile', { path: base + '/link-out', dataBase64: b64('overwritten') });
	console.log('LINK_OUT_WRITE ' + JSON.stringify(code(r)));
	r = await c.call('process/start', startParams('e1', ['true'], base, { env: { 'BAD-KEY': 'x' } }));
	ok(code(r) === -32602, 'env key BAD-KEY: -32602', r);
	r = await c.call('process/start', startParams('e2', ['true'], base, { env: { '1X': 'x' } }));
	ok(code(r) === -32602, 'env key 1X: -32602', r);
	r = await c.call('process/start', startParams('e3', ['true'], base, { envPolicy: { inherit: 'all', set: { 'A=B': 'x' } } }));
	ok(code(r) === -32602, 'envPolicy.set key A=B: -32602', r);
	r = await c.call('process/start', startParams('s1', ['true'], base, { sandbox: { bogus: 1 } }));
	ok(code(r) === -32602, 'sandbox without permissions: -32602', r);
	const ws = { permissions: { type: 'managed', file_system: { type: 'restricted', entries: [
		{ path: { type: 'special', value: { kind: 'root' } }, access: 'read' },
		{ path: { type: 'special', value: { kind: 'project_roots' } }, access: 'write' },
		{ path: { type: 'special', value: { kind: 'slash_tmp' } }, access: 'write' },
		{ path: { type: 'special', value: { kind: 'tmpdir' } }, access: 'write' }] }, network: 'restricted' },
		cwd: base, workspaceRoots: [base], windowsSandboxLevel: 'disabled', useLegacyLandlock: false };
	r = await c.call('process/start', startParams('s2', ['true'], base, { sandbox: ws }));
	ok(r.result, 'a profile equal to the sandbox: accepted', r);
	const more = JSON.parse(JSON.stringify(ws));
	more.permissions.file_system.entries[0].access = 'write';
	r = await c.call('process/start', startParams('s3', ['true'], base, { sandbox: more }));
	ok(code(r) === -32600 && /does not pretend/.test(r.error.message), 'a profile asking for a writable root: refused', r);
	const less = JSON.parse(JSON.stringify(ws));
	less.permissions.file_system.entries.push({ path: { type: 'special', value: { kind: 'project_roots', subpath: '.git' } }, access: 'read', missing_path_behavior: 'skip' });
	r = await c.call('process/start', startParams('s4', ['true'], base, { sandbox: less }));
	ok(code(r) === -32600, 'a profile asking for a read-only .git: refused (cannot be enforced)', r);
	const net = JSON.parse(JSON.stringify(ws));
	net.permissions.network = 'enabled';
	r = await c.call('process/start', startParams('s5', ['true'], base, { sandbox: net }));
	ok(code(r) === -32600, 'a profile asking for network the sandbox lacks: refused', r);
	r = await c.call('process/start', startParams('a0', ['true'], base, { arg0: 'fake' }));
	ok(code(r) === -32602, 'arg0: refused (not supported)', r);
	r = await c.call('process/start', startParams('dup', ['sleep', '30'], base));
	r = await c.call('process/start', startParams('dup', ['true'], base));
	ok(code(r) === -32600, 'duplicate processId: -32600', r);
	r = await c.call('process/start', startParams('empty', [], base));
	ok(code(r) === -32602, 'empty argv: -32602', r);
	r = await c.call('process/read', { processId: 'nope' });
	ok(code(r) === -32600, 'process/read of an unknown id: -32600', r);
	r = await c.call('environment/status', null);
	ok(r.result && r.result.status === 'ready', 'still serving after all that', r);
	c.end();
	await sleep(300);
}

// A processId of another connection is unknown here.
async function foreign(t, base) {
	const a = await connect(t), b = await connect(t);
	await a.init();
	await b.init();
	let r = await a.call('process/start', startParams('mine', ['sleep', '300'], base, { pipeStdin: true }));
	ok(r.result, 'A starts a process', r);
	r = await b.call('process/read', { processId: 'mine' });
	ok(code(r) === -32600, 'B reads it: unknown (-32600)', r);
	r = await b.call('process/write', { processId: 'mine', chunk: b64('x'), writeId: '1' });
	ok(r.result && r.result.status === 'unknownProcess', 'B writes to it: unknownProcess', r);
	r = await b.call('process/terminate', { processId: 'mine' });
	ok(r.result && r.result.running === false, 'B terminates it: {running: false}', r);
	r = await a.call('process/read', { processId: 'mine', waitMs: 0 });
	ok(r.result && !r.result.exited, 'A\'s process still runs', r);
	r = await b.call('process/start', startParams('mine', ['true'], base));
	ok(r.result, 'B may use the same id for its own', r);
	// a long poll in flight when the connection closes
	a.call('process/read', { processId: 'mine', afterSeq: 0, waitMs: 30000 });
	await sleep(200);
	a.end();
	b.end();
	await sleep(300);
}

async function oversize(t, base) {
	const c = await connect(t);
	await c.init();
	const big = '{"id":5,"method":"environment/status","params":' + JSON.stringify('x'.repeat(101 << 20)) + '}';
	c.sendText(big);
	await c.until(() => c.closed !== null, 30000);
	ok(c.closed === 1009, 'a message over 100 MiB: closed with 1009', c.closed);
	const d = await connect(t);
	const r = await d.init();
	ok(r.result, 'the server keeps serving', r);
	// just under the limit is served
	const near = await d.call('fs/writeFile', { path: base + '/big.bin', dataBase64: Buffer.alloc(30 << 20, 7).toString('base64') }, 120000);
	ok(near.result, 'a 40 MiB message is served', near.error);
	d.end();
	await sleep(300);
}

// A quiet session (Codex waiting for its model) stays up: no idle timeout.
async function idle(t, base) {
	const c = await connect(t);
	await c.init();
	let r = await c.call('process/start', startParams('long', ['sleep', '600'], base));
	ok(r.result, 'a long process', r);
	await sleep(Number(process.env.XS_IDLE_MS || 130000));
	ok(c.closed === null, 'the connection is still open after the quiet time', c.closed);
	r = await c.call('process/read', { processId: 'long', waitMs: 0 });
	ok(r.result && !r.result.exited, 'the process still runs', r);
	r = await c.call('fs/getMetadata', { path: base });
	ok(r.result && r.result.isDirectory, 'files still served', r);
	c.end();
	await sleep(300);
}

// --- differential ---------------------------------------------------------

// Compatible shapes: the same keys and types; an empty array fits any array.
function compatible(a, b) {
	if (Array.isArray(a) && Array.isArray(b)) return !a.length || !b.length || compatible(a[0], b[0]);
	if (a && b && typeof a === 'object' && typeof b === 'object') {
		const ka = Object.keys(a), kb = Object.keys(b);
		return ka.length === kb.length && ka.every((k) => k in b && compatible(a[k], b[k]));
	}
	return a === b;
}

function summary(r, values) {
	if (r.error) return { error: r.error.code };
	const s = { result: shape(r.result) };
	for (const v of values || []) s[v] = r.result[v];
	return s;
}

async function sequence(t, base) {
	const c = await connect(t);
	const out = [];
	const step = async (name, method, params, values) => { out.push([name, summary(await c.call(method, params), values)]); };
	await step('environment/info before initialize', 'environment/info', null);
	await step('process/start before initialize', 'process/start', startParams('p0', ['true'], base));
	const pre = await c.call('initialize', { clientName: 'diff', resumeSessionId: null });
	out.push(['initialize', { result: shape({ ...pre.result, environmentInfo: { ...pre.result.environmentInfo, capabilities: {} } }) }]);
	out.push(['capability names', Object.keys(pre.result.environmentInfo.capabilities).sort().join(',')]);
	await step('fs before initialized', 'fs/readFile', { path: base + '/a.txt' });
	await step('process before initialized', 'process/start', startParams('p0', ['true'], base));
	await step('initialize twice', 'initialize', { clientName: 'diff' });
	c.notify('initialized', {});
	await step('environment/info', 'environment/info', null);
	await step('environment/status', 'environment/status', null, ['status']);
	await step('start', 'process/start', startParams('p1', ['/bin/sh', '-c', 'echo hi; echo err >&2; exit 3'], base));
	await c.until(() => c.closedNote('p1'));
	out.push(['notifications', [...new Set(c.notes.filter((n) => n.params.processId === 'p1').map((n) => n.method))].sort().join(',')]);
	out.push(['exited', shape(c.exitedNote('p1').params), c.exitedNote('p1').params.exitCode]);
	out.push(['output note', shape(c.notes.find((n) => n.method === 'process/output').params)]);
	await step('read', 'process/read', { processId: 'p1', afterSeq: 0, maxBytes: 1000, waitMs: 0 }, ['exited', 'closed', 'exitCode']);
	await step('duplicate id', 'process/start', startParams('p1', ['true'], base));
	await step('empty argv', 'process/start', startParams('p2', [], base));
	await step('write unknown', 'process/write', { processId: 'zz', chunk: b64('x'), writeId: '1' }, ['status']);
	await step('read unknown', 'process/read', { processId: 'zz' });
	await step('terminate unknown', 'process/terminate', { processId: 'zz' }, ['running']);
	await step('start sleeper', 'process/start', startParams('p3', ['sleep', '30'], base, { pipeStdin: true }));
	await step('write', 'process/write', { processId: 'p3', chunk: b64('hi\n'), writeId: '1' }, ['status']);
	await step('signal kill (no such variant)', 'process/signal', { processId: 'p3', signal: 'kill' });
	await step('signal', 'process/signal', { processId: 'p3', signal: 'interrupt' });
	await c.until(() => c.closedNote('p3'));
	out.push(['interrupted exit', c.exitedNote('p3').params.exitCode]);
	await step('terminate ended', 'process/terminate', { processId: 'p3' }, ['running']);
	await step('readFile', 'fs/readFile', { path: base + '/a.txt' });
	await step('readFile missing', 'fs/readFile', { path: base + '/nope' });
	await step('readFile plain path', 'fs/readFile', { path: '/etc/hostname' });
	await step('readFile http', 'fs/readFile', { path: 'http://x/a' });
	await step('readFile dir', 'fs/readFile', { path: base });
	await step('readFile no path', 'fs/readFile', {});
	await step('writeFile', 'fs/writeFile', { path: base + '/b.txt', dataBase64: b64('hi\n') });
	await step('writeFile bad base64', 'fs/writeFile', { path: base + '/b.txt', dataBase64: '!!!' });
	await step('writeFile no parent', 'fs/writeFile', { path: base + '/nodir/b.txt', dataBase64: b64('x') });
	await step('mkdir no parent', 'fs/createDirectory', { path: base + '/x/y', recursive: false });
	await step('mkdir -p', 'fs/createDirectory', { path: base + '/x/y', recursive: true });
	await step('metadata', 'fs/getMetadata', { path: base + '/a.txt' }, ['isFile', 'isDirectory', 'size']);
	await step('metadata dir', 'fs/getMetadata', { path: base + '/x' }, ['isFile', 'isDirectory']);
	await step('metadata missing', 'fs/getMetadata', { path: base + '/nope' });
	await step('readDirectory', 'fs/readDirectory', { path: base + '/x' });
	// symlinks (the test made links/{lf -> ../a.txt, ld -> ../x}): followed for the type
	await step('metadata of a link to a file', 'fs/getMetadata', { path: base + '/links/lf' }, ['isFile', 'isDirectory', 'isSymlink']);
	await step('metadata of a link to a dir', 'fs/getMetadata', { path: base + '/links/ld' }, ['isFile', 'isDirectory', 'isSymlink']);
	const links = await c.call('fs/readDirectory', { path: base + '/links' });
	out.push(['readDirectory of links', links.result && JSON.stringify(links.result.entries.sort((a, b) => a.fileName.localeCompare(b.fileName)))]);
	await step('readFile through a link', 'fs/readFile', { path: base + '/links/lf' }, ['dataBase64']);
	await step('copy', 'fs/copy', { sourcePath: base + '/a.txt', destinationPath: base + '/c.txt', recursive: false });
	await step('copy dir flat', 'fs/copy', { sourcePath: base + '/x', destinationPath: base + '/x2', recursive: false });
	await step('copy dir', 'fs/copy', { sourcePath: base + '/x', destinationPath: base + '/x2', recursive: true });
	await step('remove non-empty flat', 'fs/remove', { path: base + '/x', recursive: false });
	await step('remove missing, force false', 'fs/remove', { path: base + '/nope', force: false });
	await step('mkdir for remove', 'fs/createDirectory', { path: base + '/x3/y' });
	await step('remove by default recursive', 'fs/remove', { path: base + '/x3' });
	await step('removed', 'fs/getMetadata', { path: base + '/x3' });
	await step('remove', 'fs/remove', { path: base + '/x', recursive: true });
	await step('remove missing force', 'fs/remove', { path: base + '/nope', force: true });
	await step('canonicalize', 'fs/canonicalize', { path: base + '/a.txt' });
	await step('canonicalize missing', 'fs/canonicalize', { path: base + '/nope' });
	await step('unknown method', 'foo/bar', {});
	c.sendText('{oops');
	await c.until(() => c.raw.length > 0, 5000);
	out.push(['parse error', c.raw[0] && c.raw[0].id, c.raw[0] && c.raw[0].error && c.raw[0].error.code]);
	await step('after the parse error', 'environment/status', null, ['status']);
	c.end();
	return out;
}

async function diff() {
	const ref = await sequence(t1, process.env.XS_BASE);
	const ours = await sequence(t2, process.env.XS_BASE2);
	for (let i = 0; i < ref.length; i++) {
		const [name, ...a] = ref[i], [name2, ...b] = ours[i] || [];
		const same = name === name2 && a.length === b.length && a.every((x, j) => (typeof x === 'object' && x !== null) ? compatible(x.result || x, (b[j] && (b[j].result || b[j])) || null) && (x.error === (b[j] || {}).error) && Object.keys(x).every((k) => k === 'result' || JSON.stringify(x[k]) === JSON.stringify(b[j][k])) : x === b[j]);
		ok(same, 'same as the reference: ' + name, { reference: a, ours: b });
	}
}

const base = process.env.XS_BASE;
const fn = { core, bad, foreign, oversize, idle, diff }[scenario];
if (!fn) { console.error('unknown scenario ' + scenario); process.exit(2); }
const timer = setTimeout(() => { console.log('FAIL timeout'); process.exit(1); }, 280000);
await fn(t1, base);
clearTimeout(timer);
console.log(failures ? `${failures} FAILED` : 'ALL OK');
process.exit(failures ? 1 : 0);
