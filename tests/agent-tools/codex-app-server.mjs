#!/usr/bin/env node
// Drive `codex app-server` (stdio, JSON-RPC lines) through one turn that
// runs in a remote environment (an exec-server):
//   initialize {capabilities.experimentalApi: true}, initialized,
//   environment/add {environmentId, execServerUrl, authBearerToken?},
//   thread/start {environments: [{environmentId, cwd}]}, turn/start,
//   and wait for turn/completed.
//
//   node codex-app-server.mjs --codex BIN --url WS-URL [--token-file FILE]
//        --env-id ID --cwd DIR-ON-THE-EXEC-SERVER --prompt TEXT --log FILE [--timeout-ms N]
//
// CODEX_HOME (and the model provider in its config.toml) come from the
// environment.  Every message both ways goes to --log as a JSON line
// ({"dir": "c2s"|"s2c", "msg": ...}).  Prints {"threadId", "turn"} (the
// turn/completed params) and exits 0 when the turn completed; 1 with the
// reason on stderr when a request failed or the time ran out.
import { spawn } from "node:child_process";
import fs from "node:fs";
import readline from "node:readline";

const opts = {};
for (let i = 2; i < process.argv.length; i += 2) opts[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
for (const k of ["codex", "url", "env-id", "cwd", "prompt", "log"]) {
	if (!opts[k]) {
		console.error(`codex-app-server.mjs: missing --${k}`);
		process.exit(2);
	}
}
const timeoutMs = Number(opts["timeout-ms"] || 90000);
const token = opts["token-file"] ? fs.readFileSync(opts["token-file"], "utf8").trim() : null;

const child = spawn(opts.codex, ["app-server"], { stdio: ["pipe", "pipe", "inherit"] });
const log = (dir, msg) => fs.appendFileSync(opts.log, JSON.stringify({ dir, msg }) + "\n");
const fail = (why) => {
	console.error(`codex-app-server.mjs: ${why}`);
	child.kill("SIGKILL");
	process.exit(1);
};
const timer = setTimeout(() => fail(`no turn/completed within ${timeoutMs} ms`), timeoutMs);

let nextId = 1;
const waiting = new Map();
let onNotification = () => {};
function send(msg) {
	log("c2s", msg);
	child.stdin.write(JSON.stringify(msg) + "\n");
}
function request(method, params) {
	const id = nextId++;
	send({ id, method, params });
	return new Promise((resolve, reject) => waiting.set(id, { method, resolve, reject }));
}

readline.createInterface({ input: child.stdout }).on("line", (line) => {
	let msg;
	try {
		msg = JSON.parse(line);
	} catch {
		log("s2c", { raw: line });
		return;
	}
	log("s2c", msg);
	if (msg.id !== undefined && msg.method) {
		// A request of the server's (an approval...): none is expected with
		// approvalPolicy "never"; refuse it rather than hang.
		send({ id: msg.id, error: { code: -32601, message: "not handled by the test client" } });
	} else if (msg.id !== undefined) {
		const w = waiting.get(msg.id);
		if (!w) return;
		waiting.delete(msg.id);
		if (msg.error) w.reject(new Error(`${w.method}: ${JSON.stringify(msg.error)}`));
		else w.resolve(msg.result);
	} else if (msg.method) {
		onNotification(msg);
	}
});
child.on("exit", (code, sig) => fail(`codex app-server exited (${code ?? sig}) before the turn completed`));

try {
	await request("initialize", {
		clientInfo: { name: "agentbox-tests", title: null, version: "0.0.0" },
		capabilities: { experimentalApi: true },
	});
	send({ method: "initialized" });
	const add = { environmentId: opts["env-id"], execServerUrl: opts.url };
	if (token) add.authBearerToken = token;
	await request("environment/add", add);
	// The thread's own cwd is left to the app-server (its working
	// directory); the environment's cwd is a path on the exec-server's side.
	const thread = await request("thread/start", {
		approvalPolicy: "never",
		sandbox: "danger-full-access",
		environments: [{ environmentId: opts["env-id"], cwd: opts.cwd }],
	});
	const threadId = thread.thread.id;
	const completed = new Promise((resolve) => {
		onNotification = (msg) => {
			if (msg.method === "turn/completed" && msg.params.threadId === threadId) resolve(msg.params);
		};
	});
	await request("turn/start", {
		threadId,
		input: [{ type: "text", text: opts.prompt, text_elements: [] }],
	});
	const turn = await completed;
	clearTimeout(timer);
	process.stdout.write(JSON.stringify({ threadId, turn }) + "\n");
	// End the app-server (and with it its exec-server connections) before
	// exiting: SIGTERM, then SIGKILL after 5 s.
	child.removeAllListeners("exit");
	child.stdin.end();
	child.kill("SIGTERM");
	const hard = setTimeout(() => child.kill("SIGKILL"), 5000);
	child.on("exit", () => {
		clearTimeout(hard);
		process.exit(0);
	});
} catch (e) {
	fail(e.message);
}
