// A fake model-provider upstream for the credential proxy's tests and
// benchmark: HTTPS with a test CA's certificate (or plain HTTP), loopback
// only.  Prints the port it bound on the first line of stdout, then serves
// until killed.  Every request is logged, when its body has ended, as one
// JSON line {method, url, headers (raw pairs), servername, bodyBytes};
// connections as {event: "connection"}.
//
//   node upstream.js --cert C --key K [--plain] [--log FILE] [--release FILE]
//
// Paths (matched on their end, so any baseUrl prefix works):
//   .../echo                 the request back as JSON
//   .../chat/completions     OpenAI-style, JSON or SSE (stream: true)
//   .../messages             Anthropic-style, JSON or SSE (stream: true)
//   .../hold-sse             one SSE event, then waits for the --release
//                            file to exist (at most 20 s), then a second
//                            event and the end (logs "sse-finished")
//   .../upload               logs "first-chunk" as soon as the first body
//                            byte arrives; answers the byte count at the end
//   .../bytes/N              N bytes (content-length), written in 64 KiB
//                            buffers with back-pressure
//   .../tiny                 a 2-byte body
//   .../reset                destroys the connection without an answer
//   .../truncate             a head promising 100 bytes, 10 bytes, then a reset
'use strict';
const fs = require('fs');
const http = require('http');
const https = require('https');

const args = {};
for (let i = 2; i < process.argv.length; i++) {
	const a = process.argv[i];
	if (a === '--plain') args.plain = true;
	else args[a.replace(/^--/, '')] = process.argv[++i];
}

function log(obj) {
	if (args.log) fs.appendFileSync(args.log, JSON.stringify(obj) + '\n');
}

function sse(res) {
	res.writeHead(200, {'content-type': 'text/event-stream', 'cache-control': 'no-cache'});
	if (res.socket) res.socket.setNoDelay(true);
}

function openaiChunk(content, finish) {
	return 'data: ' + JSON.stringify({
		id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 0, model: 'test-model',
		choices: [{index: 0, delta: content === null ? {} : {role: 'assistant', content}, finish_reason: finish}],
	}) + '\n\n';
}

function openai(req, res, body) {
	let parsed = {};
	try { parsed = JSON.parse(body || '{}'); } catch (e) { /* not JSON */ }
	if (parsed.stream) {
		sse(res);
		for (const piece of ['Hello', ' from', ' upstream']) res.write(openaiChunk(piece, null));
		res.write(openaiChunk(null, 'stop'));
		res.end('data: [DONE]\n\n');
		return;
	}
	const out = JSON.stringify({
		id: 'chatcmpl-test', object: 'chat.completion', created: 0, model: 'test-model',
		choices: [{index: 0, message: {role: 'assistant', content: 'Hello from upstream'}, finish_reason: 'stop'}],
		usage: {prompt_tokens: 1, completion_tokens: 3, total_tokens: 4},
	});
	res.writeHead(200, {'content-type': 'application/json'});
	res.end(out);
}

function anthropicEvent(type, data) {
	return 'event: ' + type + '\ndata: ' + JSON.stringify(Object.assign({type}, data)) + '\n\n';
}

function anthropic(req, res, body) {
	let parsed = {};
	try { parsed = JSON.parse(body || '{}'); } catch (e) { /* not JSON */ }
	const message = {
		id: 'msg_test', type: 'message', role: 'assistant', model: 'test-model', content: [],
		stop_reason: null, stop_sequence: null, usage: {input_tokens: 1, output_tokens: 0},
	};
	if (!parsed.stream) {
		message.content = [{type: 'text', text: 'Hello from upstream'}];
		message.stop_reason = 'end_turn';
		res.writeHead(200, {'content-type': 'application/json'});
		res.end(JSON.stringify(message));
		return;
	}
	sse(res);
	res.write(anthropicEvent('message_start', {message}));
	res.write(anthropicEvent('content_block_start', {index: 0, content_block: {type: 'text', text: ''}}));
	for (const piece of ['Hello', ' from', ' upstream'])
		res.write(anthropicEvent('content_block_delta', {index: 0, delta: {type: 'text_delta', text: piece}}));
	res.write(anthropicEvent('content_block_stop', {index: 0}));
	res.write(anthropicEvent('message_delta', {delta: {stop_reason: 'end_turn', stop_sequence: null}, usage: {output_tokens: 3}}));
	res.end(anthropicEvent('message_stop', {}));
}

function holdSse(req, res) {
	sse(res);
	res.write('data: first\n\n');
	const deadline = Date.now() + 20000;
	const timer = setInterval(() => {
		if (!(args.release && fs.existsSync(args.release)) && Date.now() < deadline) return;
		clearInterval(timer);
		res.end('data: second\n\n');
		log({event: 'sse-finished'});
	}, 20);
}

function bytes(res, n) {
	const buf = Buffer.alloc(64 * 1024, 'x');
	res.writeHead(200, {'content-type': 'application/octet-stream', 'content-length': String(n)});
	let left = n;
	(function pump() {
		while (left > 0) {
			const part = left >= buf.length ? buf : buf.subarray(0, left);
			left -= part.length;
			if (!res.write(part)) return res.once('drain', pump);
		}
		res.end();
	})();
}

function handler(req, res) {
	const chunks = [];
	let n = 0;
	const upload = req.url.split('?')[0].endsWith('/upload');
	req.on('data', (c) => {
		if (upload && n === 0) log({event: 'first-chunk'});
		n += c.length;
		if (n <= 1 << 20) chunks.push(c);
	});
	req.on('end', () => {
		const body = Buffer.concat(chunks).toString();
		const path = req.url.split('?')[0];
		const rec = {method: req.method, url: req.url, headers: req.rawHeaders,
			servername: req.socket.servername || null, bodyBytes: n};
		log(rec);
		if (path.endsWith('/echo')) {
			res.writeHead(200, {'content-type': 'application/json'});
			res.end(JSON.stringify(Object.assign(rec, {body})));
		} else if (path.endsWith('/chat/completions')) openai(req, res, body);
		else if (path.endsWith('/messages')) anthropic(req, res, body);
		else if (path.endsWith('/hold-sse')) holdSse(req, res);
		else if (path.endsWith('/upload')) res.end(String(n));
		else if (/\/bytes\/\d+$/.test(path)) bytes(res, Number(path.split('/').pop()));
		else if (path.endsWith('/tiny')) res.end('ok');
		else if (path.endsWith('/reset')) req.socket.destroy();
		else if (path.endsWith('/truncate')) {
			res.writeHead(200, {'content-length': '100'});
			res.write('0123456789');
			setTimeout(() => req.socket.destroy(), 100);
		}
		else { res.writeHead(404); res.end('no such path\n'); }
	});
}

const server = args.plain
	? http.createServer(handler)
	: https.createServer({key: fs.readFileSync(args.key), cert: fs.readFileSync(args.cert)}, handler);
server.keepAliveTimeout = 30000;
server.on(args.plain ? 'connection' : 'secureConnection', (s) => {
	s.setNoDelay(true);
	log({event: 'connection'});
});
server.listen(Number(args.port || 0), args.host || '127.0.0.1', () => {
	process.stdout.write(server.address().port + '\n');
});
