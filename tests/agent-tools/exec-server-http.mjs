// http/request through an exec-server (tests/integration/exec-server-http.bats).
//   node exec-server-http.mjs origin DIR HOST PORT TLSPORT LOPORT CERT KEY
//       the test's origins: http on HOST:PORT, https on HOST:TLSPORT (CERT,
//       KEY), and a listener on 127.0.0.1:LOPORT that only records
//       connections (a target the policy denies: it must never be dialed);
//       requests are logged to DIR/requests, connections to DIR/lo-conns
//   node exec-server-http.mjs proxy XS ORIGIN TLS_ORIGIN LOPORT
//   node exec-server-http.mjs none XS ORIGIN
//   node exec-server-http.mjs diff XS REF ORIGIN
// XS, REF: exec-server transports (unix:SOCKET:PATH or ws://...).
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Client, b64, shape } from './exec-server-rpc.mjs';

const [mode, ...args] = process.argv.slice(2);
let failures = 0;
const ok = (cond, what, detail) => {
	if (cond) console.log('ok   ' + what);
	else { failures++; console.log('FAIL ' + what + (detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 1500) : '')); }
};
const text = (s) => Buffer.from(s || '', 'base64').toString();
const hdr = (r, name) => (r.result.headers.find((h) => h.name === name) || {}).value;
const HUGE = 70 << 20;

function origin([dir, host, port, tlsPort, loPort, cert, key]) {
	const handler = (req, res) => {
		const parts = [];
		req.on('data', (d) => parts.push(d));
		req.on('end', () => {
			const body = Buffer.concat(parts);
			fs.appendFileSync(dir + '/requests', `${req.method} ${req.url} ${body.length}\n`);
			if (req.url === '/hello') {
				res.setHeader('x-origin', 'test-origin');
				res.setHeader('set-cookie', ['a=1', 'b=2']);
				res.setHeader('content-type', 'application/json');
				res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString() }));
			} else if (req.url === '/echo') {
				res.writeHead(201, { 'content-type': req.headers['content-type'] || 'x/none', 'x-len': String(body.length) });
				res.end(body);
			} else if (req.url === '/stream') {
				res.writeHead(200, { 'content-type': 'text/event-stream' });
				let i = 0;
				const tick = () => {
					if (++i > 4) return res.end();
					res.write(`data: part${i}\n\n`);
					setTimeout(tick, 150);
				};
				tick();
			} else if (req.url === '/huge') {
				res.writeHead(200, { 'content-type': 'application/octet-stream' }); // chunked
				const mib = Buffer.alloc(1 << 20, 120);
				let sent = 0;
				const more = () => {
					while (sent < HUGE) {
						sent += mib.length;
						if (!res.write(mib)) return res.once('drain', more);
					}
					res.end();
				};
				res.on('error', () => {});
				more();
			} else {
				res.writeHead(404);
				res.end('no such page\n');
			}
		});
	};
	http.createServer(handler).listen(+port, host);
	https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, handler).listen(+tlsPort, host);
	net.createServer((s) => { fs.appendFileSync(dir + '/lo-conns', 'conn\n'); s.destroy(); }).listen(+loPort, '127.0.0.1');
	fs.writeFileSync(dir + '/ready', 'ready\n');
}

let nreq = 0;
const req = (url, extra = {}) => ({ method: 'GET', url, headers: [], timeoutMs: 20000, requestId: 'r-' + ++nreq, streamResponse: false, ...extra });

async function proxy([xs, o, tlsO, loPort]) {
	const early = await Client.ws(xs);
	await early.call('initialize', { clientName: 'early', resumeSessionId: null });
	let r = await early.call('http/request', req(o + '/hello'));
	ok(r.error && r.error.code === -32600, 'http/request before initialized: -32600', r);
	early.end();
	const c = await Client.ws(xs);
	await c.init();
	// GET: headers both ways, repeated response headers kept
	r = await c.call('http/request', req(o + '/hello', { headers: [{ name: 'X-Test', value: 'one' }, { name: 'accept', value: 'text/plain' }] }));
	ok(r.result && r.result.status === 200, 'GET 200', r);
	const got = JSON.parse(text(r.result.bodyBase64));
	ok(got.method === 'GET' && got.headers['x-test'] === 'one' && got.headers.accept === 'text/plain', 'request headers reach the origin', got);
	ok(got.headers.host === new URL(o).host, 'Host is the URL\'s authority', got.headers);
	ok(hdr(r, 'x-origin') === 'test-origin' && r.result.headers.filter((h) => h.name === 'set-cookie').length === 2, 'response headers, repeats kept', r.result.headers);
	console.log('GET_SHAPE ' + JSON.stringify(shape(r.result)));
	// POST with a binary body
	const bin = Buffer.from([0, 1, 2, 255, 254, 10, 13, 65]);
	r = await c.call('http/request', req(o + '/echo', { method: 'POST', headers: [{ name: 'content-type', value: 'application/x-test' }], bodyBase64: bin.toString('base64') }));
	ok(r.result && r.result.status === 201 && r.result.bodyBase64 === bin.toString('base64') && hdr(r, 'x-len') === '8' && hdr(r, 'content-type') === 'application/x-test', 'POST body round trip', r);
	r = await c.call('http/request', req(o + '/missing'));
	ok(r.result && r.result.status === 404 && text(r.result.bodyBase64) === 'no such page\n', 'an origin 404 is a result', r);
	// https through CONNECT, verified against the test CA
	r = await c.call('http/request', req(tlsO + '/hello', { headers: [{ name: 'x-test', value: 'tls' }] }));
	ok(r.result && r.result.status === 200 && JSON.parse(text(r.result.bodyBase64)).headers['x-test'] === 'tls', 'https GET through CONNECT + TLS', r);
	// streamResponse: the head first, then ordered deltas, then done
	r = await c.call('http/request', req(o + '/stream', { requestId: 'st-1', streamResponse: true }));
	ok(r.result && r.result.status === 200 && r.result.bodyBase64 === '' && hdr(r, 'content-type') === 'text/event-stream', 'stream: head with an empty body', r);
	const deltas = () => c.notes.filter((n) => n.method === 'http/request/bodyDelta' && n.params.requestId === 'st-1');
	await c.until(() => deltas().some((n) => n.params.done), 15000);
	const ds = deltas();
	ok(ds.length >= 4 && ds.every((n, i) => n.params.seq === i + 1), 'stream: several deltas, seq 1, 2, ...', ds.map((n) => n.params));
	ok(ds.filter((n) => n.params.done).length === 1 && ds[ds.length - 1].params.done && ds[ds.length - 1].params.error === null, 'stream: one final done, no error', ds.map((n) => n.params));
	ok(ds.map((n) => text(n.params.deltaBase64)).join('') === [1, 2, 3, 4].map((i) => `data: part${i}\n\n`).join(''), 'stream: the body', ds.map((n) => text(n.params.deltaBase64)));
	console.log('DELTA_SHAPE ' + JSON.stringify(shape(ds[0].params)));
	// denied targets: the proxy's answer, never dialed
	r = await c.call('http/request', req(`http://127.0.0.1:${loPort}/x`));
	ok(r.result && r.result.status === 403 && /^egress denied: /.test(text(r.result.bodyBase64)), 'loopback not allowed: the proxy\'s 403', r);
	r = await c.call('http/request', req('http://169.254.169.254/latest/meta-data/'));
	ok(r.result && r.result.status === 403 && /^egress denied: /.test(text(r.result.bodyBase64)), 'metadata address: 403', r);
	r = await c.call('http/request', req('http://10.1.2.3:8080/'));
	ok(r.result && r.result.status === 403 && /^egress denied: /.test(text(r.result.bodyBase64)), 'private address: 403', r);
	r = await c.call('http/request', req(`https://127.0.0.1:${loPort}/`));
	ok(r.error && r.error.code === -32603 && /403/.test(r.error.message) && /egress denied/.test(r.error.message), 'https to a denied target: CONNECT refused, -32603 with the reason', r);
	// malformed params
	const bad = [
		['no url', { method: 'GET' }],
		['url not http', req('ftp://127.0.0.2/')],
		['bad method', req(o + '/hello', { method: 'GE T' })],
		['bad header name', req(o + '/hello', { headers: [{ name: 'a b', value: 'x' }] })],
		['header value with CRLF', req(o + '/hello', { headers: [{ name: 'x', value: 'a\r\nInjected: 1' }] })],
		['bodyBase64 not base64', req(o + '/echo', { method: 'POST', bodyBase64: '%%%' })],
		['streamResponse without requestId', req(o + '/stream', { streamResponse: true, requestId: null })],
		['headers not an array', req(o + '/hello', { headers: { a: 'b' } })],
	];
	for (const [what, p] of bad) {
		r = await c.call('http/request', p);
		ok(r.error && r.error.code === -32602, 'bad params: ' + what, r);
	}
	// a response past the cap: an error, the server keeps serving
	r = await c.call('http/request', req(o + '/huge'), 60000);
	ok(r.error && r.error.code === -32603 && /exceeds 64 MiB/.test(r.error.message), 'a 70 MiB response is refused (64 MiB cap)', r);
	r = await c.call('http/request', req(o + '/hello'));
	ok(r.result && r.result.status === 200, 'still serving after the cap', r);
	// streamed, the same body passes (no cap on a stream)
	r = await c.call('http/request', req(o + '/huge', { requestId: 'big', streamResponse: true }), 60000);
	const big = () => c.notes.filter((n) => n.method === 'http/request/bodyDelta' && n.params.requestId === 'big');
	await c.until(() => big().some((n) => n.params.done), 60000);
	const total = big().reduce((a, n) => a + Buffer.from(n.params.deltaBase64, 'base64').length, 0);
	ok(total === HUGE && big()[big().length - 1].params.error === null, 'a streamed 70 MiB body arrives whole', total);
	c.notes.length = 0;
	c.end();
}

async function none([xs, o]) {
	const c = await Client.ws(xs);
	await c.init();
	const r = await c.call('http/request', req(o + '/hello'));
	ok(r.error && r.error.code === -32603 && /no network/.test(r.error.message), 'network none: no http/request', r);
	c.end();
}

async function diff([xs, ref, o]) {
	const shapes = [];
	for (const t of [xs, ref]) {
		const c = await Client.ws(t);
		await c.init();
		const r = await c.call('http/request', req(o + '/hello'));
		ok(r.result && r.result.status === 200, 'GET through ' + (t === xs ? 'ours' : 'the reference'), r);
		const codes = [];
		for (const p of [{ method: 'GET' }, req(o + '/hello', { requestId: null }), req('ftp://127.0.0.2/'),
			req(o + '/hello', { headers: [{ name: 'a b', value: 'x' }] }), req(o + '/hello', { bodyBase64: '%%%' })]) {
			const b = await c.call('http/request', p);
			codes.push(b.error ? b.error.code : 'result');
		}
		const p = { ...req(o + '/hello') };
		delete p.headers; delete p.timeoutMs; delete p.streamResponse;
		const minimal = await c.call('http/request', p);
		codes.push(minimal.error ? minimal.error.code : minimal.result.status);
		shapes.push(JSON.stringify([shape(r.result), r.result && JSON.parse(text(r.result.bodyBase64)).method, codes]));
		c.end();
	}
	ok(shapes[0] === shapes[1], 'result shape and bad-params code as the reference', shapes);
}

if (mode === 'origin') origin(args);
else {
	const run = { proxy, none, diff }[mode];
	await run(args);
	console.log(failures ? `${failures} FAILED` : 'ALL OK');
	process.exit(failures ? 1 : 0);
}
