// network through the SDK: allowOut CIDRs onto the egress policy's
// allow_cidrs (reached), every other address refused by the proxy (403),
// allowInternetAccess: false = no network at all, and denyOut CIDRs other
// than 0.0.0.0/0 refused at create (our policy has no CIDR deny list).
// The peers are HTTP servers of this process on loopback addresses.
'use strict';
const http = require('http');
const { e2b, template, check, rejects, main } = require('./common.js');
const { Sandbox } = e2b;

function serve(host, port) {
  return new Promise((resolve, reject) => {
    const s = http.createServer((req, res) => res.end('hello from ' + host));
    s.on('error', reject);
    s.listen(port, host, () => resolve(s));
  });
}

main(async () => {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const servers = [await serve('127.0.0.2', port), await serve('127.0.0.3', port)];
  const curl = (host) => `curl -sS --max-time 20 -o /dev/null -w "%{http_code}" http://${host}:${port}/ || echo " failed"`;
  const a = await Sandbox.create(template, { network: { denyOut: ['0.0.0.0/0'], allowOut: ['127.0.0.2/32'] } });
  const ok = await a.commands.run(`curl -sS --max-time 20 http://127.0.0.2:${port}/`);
  check(ok.stdout === 'hello from 127.0.0.2', 'allowOut 127.0.0.2/32: reached');
  const no = await a.commands.run(curl('127.0.0.3'));
  check(no.stdout.trim() === '403', 'an address outside allowOut: refused by the egress proxy (' + no.stdout.trim() + ')');
  await a.kill();
  const b = await Sandbox.create(template, { allowInternetAccess: false });
  const none = await b.commands.run(curl('127.0.0.2'));
  check(/failed|000/.test(none.stdout), 'allowInternetAccess: false: no network (' + none.stdout.trim() + ')');
  await b.kill();
  const e = await rejects(Sandbox.create(template, { network: { denyOut: ['10.0.0.0/8'] } }), null, 'a denyOut CIDR other than 0.0.0.0/0 is refused at create');
  check(/denyOut/.test(e.message), 'saying why: ' + e.message);
  for (const s of servers) s.close();
});
