// Real clients for the credential proxy's tests.  The SDKs come from npm
// (NODE_PATH points at the cached node_modules).
//
//   node client.js openai BASE_URL TOKEN      openai SDK: a streamed and a plain chat completion
//   node client.js anthropic BASE_URL TOKEN   @anthropic-ai/sdk: a streamed and a plain message
//   node client.js upload PORT PATH TOKEN LOG  a chunked upload whose second chunk is only
//                                              sent once LOG says the upstream got the first
// Each prints what it received; exit status 0 only if everything arrived.
'use strict';
const fs = require('fs');
const http = require('http');

async function openai(base, token) {
	const OpenAI = require('openai');
	const client = new OpenAI({apiKey: token, baseURL: base, maxRetries: 0, timeout: 20000});
	const stream = await client.chat.completions.create({
		model: 'test-model', messages: [{role: 'user', content: 'hi'}], stream: true,
	});
	let text = '';
	let chunks = 0;
	for await (const chunk of stream) {
		chunks++;
		text += (chunk.choices[0] && chunk.choices[0].delta && chunk.choices[0].delta.content) || '';
	}
	console.log('stream: ' + text + ' (' + chunks + ' chunks)');
	const plain = await client.chat.completions.create({model: 'test-model', messages: [{role: 'user', content: 'hi'}]});
	console.log('plain: ' + plain.choices[0].message.content);
}

async function anthropic(base, token) {
	const sdk = require('@anthropic-ai/sdk');
	const Anthropic = sdk.Anthropic || sdk.default;
	// The thread token as a bearer token (ANTHROPIC_AUTH_TOKEN's way), no API key.
	const client = new Anthropic({authToken: token, apiKey: null, baseURL: base, maxRetries: 0, timeout: 20000});
	const stream = client.messages.stream({
		model: 'test-model', max_tokens: 16, messages: [{role: 'user', content: 'hi'}],
	});
	let text = '';
	let events = 0;
	for await (const ev of stream) {
		events++;
		if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
	}
	const final = await stream.finalMessage();
	console.log('stream: ' + text + ' (' + events + ' events, stop ' + final.stop_reason + ')');
	const plain = await client.messages.create({model: 'test-model', max_tokens: 16, messages: [{role: 'user', content: 'hi'}]});
	console.log('plain: ' + plain.content[0].text);
}

function sawFirstChunk(logFile) {
	try {
		return fs.readFileSync(logFile, 'utf8').includes('"first-chunk"');
	} catch (e) {
		return false;
	}
}

function upload(port, path, token, logFile) {
	return new Promise((resolve, reject) => {
		const req = http.request({host: '127.0.0.1', port: Number(port), path, method: 'POST',
			headers: {authorization: 'Bearer ' + token, 'content-type': 'text/plain'}});
		req.on('response', (res) => {
			let body = '';
			res.on('data', (d) => (body += d));
			res.on('end', () => {
				console.log('status ' + res.statusCode + ' body ' + body);
				resolve();
			});
		});
		req.on('error', reject);
		req.write('chunk-one\n');
		const deadline = Date.now() + 10000;
		const timer = setInterval(() => {
			if (sawFirstChunk(logFile)) {
				clearInterval(timer);
				console.log('upstream had the first chunk before the client finished');
				req.end('chunk-two\n');
			} else if (Date.now() > deadline) {
				clearInterval(timer);
				console.log('upstream never saw the first chunk while the body was open');
				req.end('chunk-two\n');
				process.exitCode = 1;
			}
		}, 20);
	});
}

async function main() {
	const [mode, ...rest] = process.argv.slice(2);
	if (mode === 'openai') await openai(rest[0], rest[1]);
	else if (mode === 'anthropic') await anthropic(rest[0], rest[1]);
	else if (mode === 'upload') await upload(rest[0], rest[1], rest[2], rest[3]);
	else throw new Error('unknown mode ' + mode);
}

main().catch((e) => {
	console.log('error: ' + (e && e.message));
	process.exitCode = 1;
});
