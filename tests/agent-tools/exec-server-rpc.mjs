// A small JSON-RPC client for the Codex exec-server protocol, over a
// WebSocket (ws://, or ws+unix:SOCKET:PATH for the daemon's unix socket)
// or over a child's stdin/stdout (newline-delimited JSON).  Used by the
// exec-server*.bats tests.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const WebSocket = require(process.env.AGENTBOX_NPM_DIR + '/sdk/node_modules/ws');

export class Client {
	constructor() {
		this.nextId = 1;
		this.pending = new Map();
		this.notes = [];
		this.waiters = [];
		this.closed = null;
		this.raw = [];
	}

	static async ws(url, opts = {}) {
		const c = new Client();
		let target = url;
		if (url.startsWith('unix:')) {
			const [, sock, path] = url.split(':');
			target = `ws+unix://${sock}:${path}`;
		}
		c.sock = new WebSocket(target, { headers: opts.headers || {}, maxPayload: 200 << 20 });
		await new Promise((res, rej) => {
			c.sock.once('open', res);
			c.sock.once('error', rej);
			c.sock.once('unexpected-response', (req, resp) => rej(new Error('HTTP ' + resp.statusCode)));
		});
		c.sock.on('message', (d) => c.onText(d.toString()));
		c.sock.on('close', (code) => c.onClose(code));
		c.sock.on('error', () => {});
		c.sendText = (s) => c.sock.send(s);
		c.end = () => c.sock.close();
		return c;
	}

	static async stdio(cmd, args) {
		const c = new Client();
		c.child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'] });
		let buf = '';
		c.child.stdout.on('data', (d) => {
			buf += d;
			let i;
			while ((i = buf.indexOf('\n')) >= 0) {
				const line = buf.slice(0, i);
				buf = buf.slice(i + 1);
				if (line.trim()) c.onText(line);
			}
		});
		c.child.on('exit', (code) => c.onClose(code));
		c.child.stdin.on('error', () => {});
		c.sendText = (s) => c.child.stdin.write(s + '\n');
		c.end = () => c.child.stdin.end();
		return c;
	}

	onText(text) {
		let m;
		try { m = JSON.parse(text); } catch { this.raw.push(text); return; }
		if (m.id !== undefined && m.id !== null && this.pending.has(m.id)) {
			const p = this.pending.get(m.id);
			this.pending.delete(m.id);
			p(m);
		} else if (m.method) {
			this.notes.push(m);
		} else {
			this.raw.push(m);
		}
		for (const w of this.waiters.splice(0)) w();
	}

	onClose(code) {
		this.closed = code;
		for (const p of this.pending.values()) p({ error: { code: 'closed', message: 'closed' } });
		this.pending.clear();
		for (const w of this.waiters.splice(0)) w();
	}

	// The whole answer ({result} or {error}).
	call(method, params, timeoutMs = 40000) {
		const id = this.nextId++;
		return new Promise((res) => {
			const t = setTimeout(() => { this.pending.delete(id); res({ error: { code: 'timeout', message: method } }); }, timeoutMs);
			this.pending.set(id, (m) => { clearTimeout(t); res(m); });
			this.sendText(JSON.stringify({ id, method, params }));
		});
	}

	notify(method, params) {
		this.sendText(JSON.stringify({ method, params }));
	}

	// Wait until pred() is true (re-checked on each message), at most ms.
	async until(pred, ms = 20000) {
		const end = Date.now() + ms;
		while (!pred()) {
			if (Date.now() > end || this.closed !== null) return pred();
			await new Promise((res) => { this.waiters.push(res); setTimeout(res, 200); });
		}
		return true;
	}

	async init() {
		const r = await this.call('initialize', { clientName: 'agentbox-test', resumeSessionId: null });
		this.notify('initialized', {});
		return r;
	}

	// process/output of one process, decoded and joined (of one stream
	// when given: stdout and stderr are two pipes, so their order between
	// each other is the reader's, not the writer's).
	output(pid, stream) {
		return this.notes.filter((n) => n.method === 'process/output' && n.params.processId === pid
			&& (!stream || n.params.stream === stream))
			.map((n) => Buffer.from(n.params.chunk, 'base64').toString()).join('');
	}

	closedNote(pid) {
		return this.notes.find((n) => n.method === 'process/closed' && n.params.processId === pid);
	}

	exitedNote(pid) {
		return this.notes.find((n) => n.method === 'process/exited' && n.params.processId === pid);
	}
}

// The shape of a value: keys and types, recursively (arrays by their first element).
export function shape(v) {
	if (v === null) return 'null';
	if (Array.isArray(v)) return v.length ? [shape(v[0])] : [];
	if (typeof v === 'object') {
		const o = {};
		for (const k of Object.keys(v).sort()) o[k] = shape(v[k]);
		return o;
	}
	return typeof v;
}

export function b64(s) {
	return Buffer.from(s).toString('base64');
}
