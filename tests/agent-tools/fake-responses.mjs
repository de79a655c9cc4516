#!/usr/bin/env node
// A fake OpenAI Responses API for driving the real Codex offline.
//
//   node fake-responses.mjs --script STEPS.json --log REQUESTS.jsonl [--port-file FILE]
//
// Listens on 127.0.0.1 (a random port), prints its base URL
// ("http://127.0.0.1:PORT/v1", what Codex's model_provider.base_url wants)
// on stdout and in --port-file, and answers POST .../responses with an SSE
// stream: response.created, one response.output_item.done per item of the
// current step, response.completed.  Every request (method, path, parsed
// body) is appended to the log as one JSON line, so a test can assert on
// what Codex sent back (the tool outputs).
//
// The script is {"steps": [STEP, ...]}; a STEP is an array of output items
// (Responses API shapes) or {"items": [...], "capture": {NAME: REGEX}}.
// Shorthands inside a step:
//   {"type": "message", "text": "..."}        an assistant message
//   "arguments": {...}                          stringified for function_call
// Missing call_id / id fields are filled in as "call_s<step>_<i>" /
// "fc_s<step>_<i>".  Which step answers a request: one past the highest
// step whose call ids appear in the request's input (the history Codex
// sends back), so a retried request gets the same step again and
// unrelated requests do not advance the script.  Past the last step, the
// last step's message is repeated (or "done.").
//
// capture: each REGEX runs over the request's input items that came back
// from tools (function_call_output and the like, stringified); the last
// match's first group becomes $NAME, replacing any argument string equal
// to "$NAME" (a number when it is all digits) or containing it.
import http from "node:http";
import fs from "node:fs";

function parseArgs(argv) {
	const out = {};
	for (let i = 2; i < argv.length; i++) {
		const a = argv[i];
		if (!a.startsWith("--")) throw new Error(`unexpected argument ${a}`);
		out[a.slice(2)] = argv[++i];
	}
	return out;
}

const args = parseArgs(process.argv);
if (!args.script || !args.log) {
	console.error("usage: fake-responses.mjs --script FILE --log FILE [--port-file FILE]");
	process.exit(2);
}
const script = JSON.parse(fs.readFileSync(args.script, "utf8"));
const steps = script.steps || [];

const CALL_TYPES = new Set(["function_call", "custom_tool_call", "tool_search_call", "local_shell_call"]);
const OUTPUT_TYPES = new Set([
	"function_call_output",
	"custom_tool_call_output",
	"tool_search_output",
	"local_shell_call_output",
	"mcp_tool_call_output",
]);

// The step to answer with: one past the highest step of ours in the history.
function stepIndex(input) {
	let next = 0;
	for (const item of input || []) {
		if (!item || !CALL_TYPES.has(item.type)) continue;
		const m = /^call_s(\d+)_/.exec(item.call_id || "");
		if (m) next = Math.max(next, Number(m[1]) + 1);
	}
	return next;
}

function captures(spec, input) {
	const vals = {};
	if (!spec) return vals;
	const outputs = (input || []).filter((it) => it && OUTPUT_TYPES.has(it.type)).map((it) => JSON.stringify(it));
	for (const [name, re] of Object.entries(spec)) {
		const rx = new RegExp(re, "g");
		for (const text of outputs) {
			for (const m of text.matchAll(rx)) vals[name] = m[1];
		}
	}
	return vals;
}

function substitute(value, vals) {
	if (typeof value === "string") {
		for (const [name, v] of Object.entries(vals)) {
			if (value === `$${name}`) return /^\d+$/.test(v) ? Number(v) : v;
			value = value.split(`$${name}`).join(v);
		}
		return value;
	}
	if (Array.isArray(value)) return value.map((v) => substitute(v, vals));
	if (value && typeof value === "object") {
		const o = {};
		for (const [k, v] of Object.entries(value)) o[k] = substitute(v, vals);
		return o;
	}
	return value;
}

function message(text, id) {
	return {
		type: "message",
		role: "assistant",
		id,
		content: [{ type: "output_text", text, annotations: [] }],
	};
}

// The output items of step n, filled in.
function stepItems(n, input) {
	if (n >= steps.length) {
		const last = steps.length ? steps[steps.length - 1] : [];
		const items = Array.isArray(last) ? last : last.items || [];
		const msg = items.find((it) => it.type === "message");
		return [message(msg ? msg.text || "done." : "done.", `msg_s${n}`)];
	}
	const step = steps[n];
	const items = Array.isArray(step) ? step : step.items || [];
	const vals = captures(Array.isArray(step) ? null : step.capture, input);
	return items.map((raw, i) => {
		let it = substitute(structuredClone(raw), vals);
		if (it.type === "message" && typeof it.text === "string") return message(it.text, it.id || `msg_s${n}_${i}`);
		if (CALL_TYPES.has(it.type)) {
			it.call_id = it.call_id || `call_s${n}_${i}`;
			it.id = it.id || `fc_s${n}_${i}`;
			if (it.status === undefined && it.type !== "function_call") it.status = "completed";
		}
		if (it.type === "function_call" && typeof it.arguments !== "string") {
			it.arguments = JSON.stringify(it.arguments || {});
		}
		return it;
	});
}

let seq = 0;
function logRequest(req, raw) {
	let body = null;
	try {
		body = raw.length ? JSON.parse(raw) : null;
	} catch {
		body = { unparsed: raw.slice(0, 4096) };
	}
	const entry = { n: seq++, method: req.method, path: req.url, body };
	fs.appendFileSync(args.log, JSON.stringify(entry) + "\n");
	return body;
}

function sse(res, events) {
	res.writeHead(200, {
		"content-type": "text/event-stream",
		"cache-control": "no-cache",
		connection: "keep-alive",
	});
	for (const ev of events) {
		res.write(`event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`);
	}
	res.end();
}

let respCount = 0;
function answerResponses(res, body) {
	const input = (body && body.input) || [];
	const n = stepIndex(input);
	const items = stepItems(n, input);
	const id = `resp_${respCount++}`;
	const events = [{ type: "response.created", response: { id } }];
	items.forEach((item, i) => events.push({ type: "response.output_item.done", output_index: i, item }));
	events.push({
		type: "response.completed",
		response: {
			id,
			usage: {
				input_tokens: 10,
				input_tokens_details: { cached_tokens: 0 },
				output_tokens: 5,
				output_tokens_details: { reasoning_tokens: 0 },
				total_tokens: 15,
			},
		},
	});
	sse(res, events);
}

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		const body = logRequest(req, Buffer.concat(chunks).toString("utf8"));
		const path = req.url.split("?")[0];
		if (req.method === "POST" && path.endsWith("/responses")) {
			answerResponses(res, body);
		} else if (req.method === "GET" && path.endsWith("/models")) {
			res.writeHead(200, { "content-type": "application/json" });
			res.end(JSON.stringify({ object: "list", data: [], models: [] }));
		} else {
			res.writeHead(404, { "content-type": "application/json" });
			res.end(JSON.stringify({ error: { message: `fake-responses: no ${req.method} ${path}` } }));
		}
	});
});

server.listen(0, "127.0.0.1", () => {
	const url = `http://127.0.0.1:${server.address().port}/v1`;
	if (args["port-file"]) fs.writeFileSync(args["port-file"], url + "\n");
	process.stdout.write(url + "\n");
});

for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => server.close(() => process.exit(0)));
