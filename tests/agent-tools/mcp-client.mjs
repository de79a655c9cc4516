// Drives agentbox's MCP server with an official MCP client and calls every
// tool.  Environment:
//   MCP_SDK        v1 (@modelcontextprotocol/sdk 1.x) or v2 (@modelcontextprotocol/client 2.x)
//   MCP_TRANSPORT  stdio (spawns `$AGENTBOX mcp [--sandbox ID]`) or http
//   AGENTBOX, AGENTBOX_HOST      the binary and the daemon's socket (stdio)
//   MCP_URL, MCP_TOKEN           the endpoint and the daemon's bearer token (http)
//   MCP_SANDBOX    bind to this sandbox; empty: unbound (lifecycle tools, sandbox_id)
//   AGENTBOX_NPM_DIR             where build/npm/mcp lives
// Prints one "ok ..." line per check; exits 1 on the first failure.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const npm = path.join(process.env.AGENTBOX_NPM_DIR, 'mcp', 'node_modules');
const sdk = process.env.MCP_SDK || 'v1';
const transportKind = process.env.MCP_TRANSPORT || 'stdio';
const bound = process.env.MCP_SANDBOX || '';
const req = createRequire(path.join(npm, 'x.js'));

async function load(spec) {
	return import(pathToFileURL(req.resolve(spec)).href);
}

let Client, Stdio, Http;
if (sdk === 'v1') {
	({ Client } = await load('@modelcontextprotocol/sdk/client/index.js'));
	({ StdioClientTransport: Stdio } = await load('@modelcontextprotocol/sdk/client/stdio.js'));
	({ StreamableHTTPClientTransport: Http } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js'));
} else {
	({ Client, StreamableHTTPClientTransport: Http } = await load('@modelcontextprotocol/client'));
	({ StdioClientTransport: Stdio } = await load('@modelcontextprotocol/client/stdio'));
}

function ok(what) {
	console.log(`ok ${what}`);
}

const transport =
	transportKind === 'stdio'
		? new Stdio({
				command: process.env.AGENTBOX,
				args: ['mcp', ...(bound ? ['--sandbox', bound] : [])],
				env: { ...process.env },
				stderr: 'inherit',
			})
		: new Http(new URL(process.env.MCP_URL), {
				requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
			});
const client = new Client({ name: 'agentbox-test', version: '1.0.0' });
await client.connect(transport);
ok(`connected (${sdk}, ${transportKind}, ${bound ? 'bound' : 'unbound'})`);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
const sandboxTools = ['list_dir', 'move', 'port_url', 'read_file', 'remove', 'sandbox_exec', 'sandbox_process', 'stat', 'write_file'];
const want = bound ? sandboxTools : [...sandboxTools, 'sandbox_create', 'sandbox_destroy', 'sandbox_list'].sort();
assert.deepEqual(names, want);
for (const t of tools) {
	assert.equal(t.inputSchema.type, 'object', t.name);
	assert.equal(t.outputSchema.type, 'object', t.name);
	assert.equal(typeof t.annotations.readOnlyHint, 'boolean', t.name);
	assert.equal(typeof t.annotations.destructiveHint, 'boolean', t.name);
	assert.equal('sandbox_id' in t.inputSchema.properties, (!bound && sandboxTools.includes(t.name)) || t.name === 'sandbox_destroy', t.name);
}
ok(`tools/list: ${names.length} tools with input and output schemas and annotations`);

let sandboxId = bound;
if (!bound) {
	const r = await client.callTool({ name: 'sandbox_create', arguments: { backend: process.env.AGENTBOX_BACKEND || 'native' } });
	assert.ok(!r.isError, JSON.stringify(r));
	sandboxId = r.structuredContent.sandbox_id;
	assert.equal(r.structuredContent.state, 'running');
	const l = await client.callTool({ name: 'sandbox_list', arguments: {} });
	assert.ok(l.structuredContent.sandboxes.some((s) => s.sandbox_id === sandboxId));
	ok('sandbox_create + sandbox_list');
}

// The outputSchema check: the SDK validates structuredContent itself; check
// the fields every schema requires, too.
function checkShape(toolName, sc) {
	const t = tools.find((x) => x.name === toolName);
	for (const k of t.outputSchema.required || []) assert.ok(k in sc, `${toolName}: ${k} missing`);
	for (const [k, v] of Object.entries(sc)) {
		const p = t.outputSchema.properties[k];
		assert.ok(p, `${toolName}: ${k} not in the schema`);
		const types = [].concat(p.type);
		const actual = v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;
		assert.ok(types.includes(actual) || (actual === 'integer' && types.includes('number')), `${toolName}.${k}: ${actual} vs ${types}`);
	}
}

async function call(name, args, { error = false } = {}) {
	const a = bound ? args : { sandbox_id: sandboxId, ...args };
	const r = await client.callTool({ name, arguments: a });
	assert.equal(!!r.isError, error, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r)}`);
	assert.equal(r.content[0].type, 'text');
	if (!error) checkShape(name, r.structuredContent);
	return r;
}

let r = await call('sandbox_exec', { command: 'echo hello; echo oops >&2; exit 3' });
assert.equal(r.structuredContent.status, 'exited');
assert.equal(r.structuredContent.exit_code, 3);
assert.equal(r.structuredContent.stdout, 'hello\n');
assert.equal(r.structuredContent.stderr, 'oops\n');
assert.equal(r.structuredContent.truncated, false);
assert.match(r.content[0].text, /hello[\s\S]*oops[\s\S]*exit code 3/);
ok('sandbox_exec: exit code, stdout, stderr');

r = await call('sandbox_exec', { argv: ['cat'], stdin: 'from stdin' });
assert.equal(r.structuredContent.stdout, 'from stdin');
ok('sandbox_exec: argv and stdin');

r = await call('sandbox_exec', { command: 'head -c 3000000 /dev/zero | tr "\\0" x' });
assert.equal(r.structuredContent.truncated, true);
assert.equal(r.structuredContent.stdout.length, 1 << 20);
assert.equal(r.structuredContent.stdout_bytes, 3000000);
ok('sandbox_exec: output capped at 1 MiB, the rest counted');

r = await call('sandbox_exec', { command: 'sleep 30', timeout: 0.5 }, { error: true });
assert.equal(r.structuredContent.status, 'timed_out');
assert.equal(r.structuredContent.timed_out, true);
assert.equal(r.structuredContent.exit_code, 124);
assert.match(r.content[0].text, /timed out/);
ok('sandbox_exec: a timeout kills it and is reported');

// A long-running process polled to its end.
r = await call('sandbox_exec', { command: 'for i in 1 2 3 4 5; do echo line$i; sleep 0.2; done; exit 7', yield_ms: 100 });
assert.equal(r.structuredContent.status, 'running');
const sid = r.structuredContent.session_id;
let out = '';
let status = 'running';
for (let i = 0; i < 50 && status === 'running'; i++) {
	const p = await call('sandbox_process', { action: 'poll', session_id: sid, wait_ms: 1000 });
	out += p.structuredContent.output;
	status = p.structuredContent.status;
	if (status !== 'running') assert.equal(p.structuredContent.exit_code, 7);
}
assert.equal(status, 'exited');
assert.equal(out, 'line1\nline2\nline3\nline4\nline5\n');
const lg = await call('sandbox_process', { action: 'log', session_id: sid, offset: 6, limit: 6 });
assert.equal(lg.structuredContent.output, 'line2\n');
ok('sandbox_exec yield + sandbox_process poll to the end, log by offset');

// A pty: keys typed into it.
r = await call('sandbox_exec', { command: 'if [ -t 0 ]; then echo TTY; fi; read x; echo got:$x', pty: true, background: true });
const pty = r.structuredContent.session_id;
await call('sandbox_process', { action: 'send_keys', session_id: pty, keys: ['hello', 'Enter'] });
out = '';
status = 'running';
for (let i = 0; i < 50 && status === 'running'; i++) {
	const p = await call('sandbox_process', { action: 'poll', session_id: pty, wait_ms: 1000 });
	out += p.structuredContent.output;
	status = p.structuredContent.status;
}
assert.match(out, /TTY/);
assert.match(out, /got:hello/);
ok('pty: a real terminal, send_keys typed into it');

// Background, write, kill, remove.
r = await call('sandbox_exec', { command: 'cat', background: true });
const bg = r.structuredContent.session_id;
await call('sandbox_process', { action: 'write', session_id: bg, data: 'echoed\n' });
let p = await call('sandbox_process', { action: 'poll', session_id: bg, wait_ms: 5000 });
assert.equal(p.structuredContent.output, 'echoed\n');
let l = await call('sandbox_process', { action: 'list' });
assert.ok(l.structuredContent.sessions.some((s) => s.session_id === bg && s.status === 'running'));
p = await call('sandbox_process', { action: 'kill', session_id: bg });
assert.notEqual(p.structuredContent.status, 'running');
await call('sandbox_process', { action: 'remove', session_id: bg });
l = await call('sandbox_process', { action: 'list' });
assert.ok(!l.structuredContent.sessions.some((s) => s.session_id === bg));
r = await call('sandbox_process', { action: 'poll', session_id: bg }, { error: true });
assert.match(r.content[0].text, /no process/);
ok('background + write + poll + list + kill + remove');

// Files.
await call('write_file', { path: '/workspace/mcp/a.txt', content: 'héllo\n' });
r = await call('read_file', { path: '/workspace/mcp/a.txt' });
assert.equal(r.structuredContent.content, 'héllo\n');
await call('write_file', { path: '/workspace/mcp/bin', content: Buffer.from([0, 1, 255]).toString('base64'), encoding: 'base64' });
r = await call('read_file', { path: '/workspace/mcp/bin', encoding: 'base64' });
assert.equal(r.structuredContent.content, 'AAH/');
r = await call('read_file', { path: '/workspace/mcp/bin' }, { error: true });
assert.match(r.content[0].text, /base64/);
r = await call('list_dir', { path: '/workspace/mcp' });
assert.deepEqual(r.structuredContent.entries.map((e) => e.name).sort(), ['a.txt', 'bin']);
r = await call('stat', { path: '/workspace/mcp/a.txt' });
assert.equal(r.structuredContent.type, 'file');
assert.equal(r.structuredContent.size, 7);
await call('move', { from: '/workspace/mcp/a.txt', to: '/workspace/mcp/b.txt' });
r = await call('stat', { path: '/workspace/mcp/a.txt' }, { error: true });
await call('remove', { path: '/workspace/mcp', recursive: true });
r = await call('stat', { path: '/workspace/mcp' }, { error: true });
ok('write_file, read_file (text, base64), list_dir, stat, move, remove');

// Denied paths: outside what the sandbox may write, `..` out of the workspace.
r = await call('write_file', { path: '/etc/agentbox-mcp-denied', content: 'x' }, { error: true });
r = await call('write_file', { path: '/workspace/../etc/agentbox-mcp-denied', content: 'x' }, { error: true });
r = await call('sandbox_exec', { command: 'ln -s /etc /workspace/out' });
r = await call('write_file', { path: '/workspace/out/agentbox-mcp-denied', content: 'x', create_dirs: false }, { error: true });
await call('remove', { path: '/workspace/out' });
ok('denied paths are tool errors');

r = await call('port_url', { port: 8765 });
assert.equal(r.structuredContent.listening, false);
assert.equal(r.structuredContent.path, `/v1/sandboxes/${sandboxId}/ports/8765/`);
ok('port_url');

// Bad arguments are tool errors, unknown tools protocol errors.
r = await call('sandbox_exec', { nope: 1 }, { error: true });
await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /unknown tool|-32602/);
ok('bad arguments: isError; unknown tool: -32602');

if (!bound) {
	r = await client.callTool({ name: 'sandbox_destroy', arguments: { sandbox_id: sandboxId } });
	assert.ok(!r.isError, JSON.stringify(r));
	ok('sandbox_destroy');
}
// A process left running: the session's end must take it along.
if (bound) {
	r = await call('sandbox_exec', { command: 'sleep 300', background: true });
	console.log(`left ${r.structuredContent.pid}`);
}
if (transportKind === 'http') {
	await transport.terminateSession();
	ok('DELETE ended the session');
}
await client.close();
ok('closed');
