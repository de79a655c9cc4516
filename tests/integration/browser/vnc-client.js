// node vnc-client.js MODE URL [ORIGIN]: a WebSocket client of the VNC door
// (ws from tests/npm/sdk).  Prints one line:
//   status   "status N" (the upgrade's HTTP status) or "open PROTOCOL RFB..."
//            (the first bytes the VNC server sent)
//   big      sends a 2 MiB message; "closed CODE"
//   nopong   answers no ping; "closed CODE after MS"
//   pong     answers pings (the default); "open after MS" when still open
//            after 4 s
const WebSocket = require(`${process.env.SDK_NPM}/node_modules/ws`);
const [mode, url, origin] = process.argv.slice(2);
const t0 = Date.now();
const ws = new WebSocket(url, ['binary'], {
  origin, autoPong: mode !== 'nopong', handshakeTimeout: 10000,
});
ws.on('unexpected-response', (req, res) => { console.log(`status ${res.statusCode}`); process.exit(0); });
ws.on('error', (e) => { console.log(`error ${e.message}`); process.exit(0); });
ws.on('close', (code) => { console.log(`closed ${code} after ${Date.now() - t0}`); process.exit(0); });
ws.once('message', (data) => {
  if (mode === 'status') {
    console.log(`open ${ws.protocol} ${Buffer.from(data).toString('latin1').trim()}`);
    process.exit(0);
  }
  if (mode === 'big') ws.send(Buffer.alloc(2 * 1024 * 1024, 1));
  if (mode === 'pong') setTimeout(() => { console.log(`open after ${Date.now() - t0}`); process.exit(0); }, 4000);
});
setTimeout(() => { console.log('timeout'); process.exit(0); }, 20000);
