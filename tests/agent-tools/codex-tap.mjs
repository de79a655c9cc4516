#!/usr/bin/env node
// A logging tap between Codex and an exec-server, so a test can see which
// requests Codex sent (and prove its tool calls went through the
// exec-server at all, not through a local fallback).
//
//   node codex-tap.mjs ws --upstream WS-URL --log FILE [--port-file FILE]
//       listens on ws://127.0.0.1:<random>, prints that URL, and relays every
//       connection to WS-URL (the Authorization and x-request-id headers of
//       the client's upgrade are passed on), one text frame per message;
//   node codex-tap.mjs stdio --log FILE -- PROGRAM [ARGS...]
//       runs PROGRAM with piped stdin/stdout and relays newline-delimited
//       messages both ways (stderr is inherited); exits with its status.
//
// Each message is one JSON line in the log: {"dir": "c2s"|"s2c", "conn": N,
// "msg": <parsed JSON or {"raw": text}>}.  Needs AGENTBOX_NPM_DIR (ws).
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { spawn } from "node:child_process";
import { createRequire } from "node:module";

const mode = process.argv[2];
const opts = {};
let rest = [];
for (let i = 3; i < process.argv.length; i++) {
	const a = process.argv[i];
	if (a === "--") {
		rest = process.argv.slice(i + 1);
		break;
	}
	opts[a.replace(/^--/, "")] = process.argv[++i];
}
if (!opts.log || (mode === "ws" && !opts.upstream) || (mode === "stdio" && !rest.length)) {
	console.error("usage: codex-tap.mjs ws --upstream URL --log FILE | stdio --log FILE -- PROGRAM [ARGS...]");
	process.exit(2);
}

function log(dir, conn, text) {
	let msg;
	try {
		msg = JSON.parse(text);
	} catch {
		msg = { raw: String(text).slice(0, 4096) };
	}
	fs.appendFileSync(opts.log, JSON.stringify({ dir, conn, msg }) + "\n");
}

function wsTap() {
	const require = createRequire(path.join(process.env.AGENTBOX_NPM_DIR || ".", "sdk", "package.json"));
	const { WebSocket, WebSocketServer } = require("ws");
	const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, maxPayload: 256 << 20 });
	let conns = 0;
	wss.on("connection", (client, req) => {
		const conn = conns++;
		const headers = {};
		for (const h of ["authorization", "x-request-id"]) if (req.headers[h]) headers[h] = req.headers[h];
		const up = new WebSocket(opts.upstream, { headers, maxPayload: 256 << 20 });
		const pending = [];
		client.on("message", (data, isBinary) => {
			log("c2s", conn, data.toString());
			if (up.readyState === WebSocket.OPEN) up.send(data, { binary: isBinary });
			else pending.push([data, isBinary]);
		});
		up.on("open", () => {
			for (const [d, b] of pending.splice(0)) up.send(d, { binary: b });
		});
		up.on("message", (data, isBinary) => {
			log("s2c", conn, data.toString());
			if (client.readyState === WebSocket.OPEN) client.send(data, { binary: isBinary });
		});
		const closeBoth = (code, reason) => {
			const c = code >= 1000 && code < 5000 && code !== 1005 && code !== 1006 ? code : 1000;
			for (const s of [client, up]) {
				if (s.readyState === WebSocket.OPEN) s.close(c, reason);
				else if (s.readyState === WebSocket.CONNECTING) s.terminate();
			}
		};
		client.on("close", (code, reason) => closeBoth(code, reason));
		up.on("close", (code, reason) => {
			log("s2c", conn, JSON.stringify({ tapClosed: code, reason: reason.toString() }));
			closeBoth(code, reason);
		});
		up.on("error", (e) => {
			log("s2c", conn, JSON.stringify({ tapError: e.message }));
			closeBoth(1011, "upstream error");
		});
		client.on("error", () => closeBoth(1011, "client error"));
	});
	wss.on("listening", () => {
		const url = `ws://127.0.0.1:${wss.address().port}`;
		if (opts["port-file"]) fs.writeFileSync(opts["port-file"], url + "\n");
		process.stdout.write(url + "\n");
	});
	for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
}

function stdioTap() {
	const child = spawn(rest[0], rest.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
	readline.createInterface({ input: process.stdin }).on("line", (line) => {
		log("c2s", 0, line);
		child.stdin.write(line + "\n");
	});
	process.stdin.on("end", () => child.stdin.end());
	readline.createInterface({ input: child.stdout }).on("line", (line) => {
		log("s2c", 0, line);
		process.stdout.write(line + "\n");
	});
	child.stdin.on("error", () => {});
	child.on("close", (code) => process.exit(code === null ? 128 + 9 : code));
	for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => child.kill(sig));
}

if (mode === "ws") wsTap();
else if (mode === "stdio") stdioTap();
else {
	console.error(`codex-tap.mjs: unknown mode ${mode}`);
	process.exit(2);
}
