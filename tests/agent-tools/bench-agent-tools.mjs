#!/usr/bin/env node
// The client half of bench/agent-tools/run: round trips through an
// exec-server (ours or the real `codex exec-server`), timed one at a time
// (the MCP half is bench/agent-tools/mcp-exec, a C client).  Prints one JSON object per metric:
//   {"metric": NAME, "p50": ms, "p90": ms, "mean": ms, "n": N}
//
//   node bench-agent-tools.mjs exec-server URL --cwd URI --file URI [--size B] [--n N]
//        [--pace MS] [--token T]
//       URL is ws://... or ws+unix:///path/to.sock:/v1/sandboxes/ID/exec-server;
//       metrics "process" (process/start of /bin/true until process/exited,
//       back to back), "process-paced" (the same, --pace MS apart, default
//       60) and "readFile" (fs/readFile of --file, --size bytes);
//
// Needs AGENTBOX_NPM_DIR (ws from its sdk/ packages).
import path from "node:path";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";

const opts = { n: "200" };
const pos = [];
for (let i = 2; i < process.argv.length; i++) {
	const a = process.argv[i];
	if (a.startsWith("--")) opts[a.slice(2)] = process.argv[++i];
	else pos.push(a);
}
const [mode, a1] = pos;
const N = Number(opts.n);
const WARMUP = Math.min(20, Math.max(1, Math.floor(N / 10)));

function report(metric, samples) {
	const s = [...samples].sort((x, y) => x - y);
	const q = (p) => s[Math.min(s.length - 1, Math.floor((s.length - 1) * p))];
	const mean = s.reduce((x, y) => x + y, 0) / s.length;
	const r = (v) => Math.round(v * 1000) / 1000;
	process.stdout.write(JSON.stringify({ metric, p50: r(q(0.5)), p90: r(q(0.9)), mean: r(mean), n: s.length }) + "\n");
}

function die(why) {
	console.error(`bench-agent-tools: ${why}`);
	process.exit(1);
}

// A JSON-RPC client over one WebSocket, with notification waiters.
async function rpcConnect(url, token) {
	const require = createRequire(path.join(process.env.AGENTBOX_NPM_DIR || ".", "sdk", "package.json"));
	const { WebSocket } = require("ws");
	const headers = token ? { authorization: `Bearer ${token}` } : {};
	const ws = new WebSocket(url, { headers, maxPayload: 256 << 20, perMessageDeflate: false });
	await new Promise((resolve, reject) => {
		ws.once("open", resolve);
		ws.once("error", reject);
		ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
	});
	let nextId = 1;
	const pending = new Map();
	const watchers = new Map(); // "method processId" -> resolve
	ws.on("message", (data) => {
		const msg = JSON.parse(data.toString());
		if (msg.id !== undefined && !msg.method) {
			const p = pending.get(msg.id);
			pending.delete(msg.id);
			if (p) msg.error ? p.reject(new Error(`${p.method}: ${JSON.stringify(msg.error)}`)) : p.resolve(msg.result);
		} else if (msg.method) {
			const key = `${msg.method} ${msg.params && msg.params.processId}`;
			const w = watchers.get(key);
			if (w) {
				watchers.delete(key);
				w(msg.params);
			}
		}
	});
	ws.on("close", () => {
		for (const p of pending.values()) p.reject(new Error("connection closed"));
	});
	return {
		call(method, params) {
			const id = nextId++;
			ws.send(JSON.stringify({ id, method, params }));
			return new Promise((resolve, reject) => pending.set(id, { method, resolve, reject }));
		},
		notify(method, params) {
			ws.send(JSON.stringify({ method, params }));
		},
		waitFor(method, processId) {
			return new Promise((resolve) => watchers.set(`${method} ${processId}`, resolve));
		},
		close() {
			ws.close();
		},
	};
}

async function benchExecServer(url) {
	if (!opts.cwd || !opts.file) die("exec-server needs --cwd URI and --file URI");
	const rpc = await rpcConnect(url, opts.token);
	await rpc.call("initialize", { clientName: "agentbox-bench", resumeSessionId: null });
	rpc.notify("initialized", {});
	const start = (i) => {
		const processId = `bench-${process.pid}-${i}`;
		const exited = rpc.waitFor("process/exited", processId);
		const closed = rpc.waitFor("process/closed", processId);
		const started = rpc.call("process/start", {
			processId,
			argv: ["/bin/true"],
			cwd: opts.cwd,
			env: {},
			envPolicy: null,
			tty: false,
			pipeStdin: false,
			arg0: null,
			sandbox: null,
		});
		return { processId, started, exited, closed };
	};
	// Back to back, then with a pause before each start (the reference
	// answers a start that follows a finished process ~50 ms late; a pause
	// shows its best case).
	const pace = Number(opts.pace || 60);
	for (const [metric, gap, base] of [["process", 0, 0], ["process-paced", pace, N + WARMUP]]) {
		const samples = [];
		for (let i = 0; i < N + WARMUP; i++) {
			if (gap) await new Promise((r) => setTimeout(r, gap));
			const t0 = performance.now();
			const p = start(base + i);
			await p.started;
			const ex = await p.exited;
			const t1 = performance.now();
			if (ex.exitCode !== 0) die(`process/exited with ${JSON.stringify(ex)}`);
			await p.closed;
			await rpc.call("process/terminate", { processId: p.processId });
			if (i >= WARMUP) samples.push(t1 - t0);
		}
		report(metric, samples);
	}
	const reads = [];
	let size = -1;
	for (let i = 0; i < N + WARMUP; i++) {
		const t0 = performance.now();
		const r = await rpc.call("fs/readFile", { path: opts.file, sandbox: null });
		const t1 = performance.now();
		size = Buffer.from(r.dataBase64, "base64").length;
		if (i >= WARMUP) reads.push(t1 - t0);
	}
	if (size !== Number(opts.size || size)) die(`fs/readFile returned ${size} bytes, not ${opts.size}`);
	report("readFile", reads);
	rpc.close();
}

try {
	if (mode === "exec-server") await benchExecServer(a1);
	else die(`unknown mode ${mode} (exec-server)`);
	process.exit(0);
} catch (e) {
	die(e.message);
}
