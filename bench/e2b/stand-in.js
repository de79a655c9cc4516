// bench/e2b/compare's stand-in envd: answers every process.Process/Start at
// once with a start, an end and the end-stream envelope, as agentbox does.
'use strict';
const http = require('http');

function envelope(flags, obj) {
  const j = Buffer.from(JSON.stringify(obj));
  const b = Buffer.alloc(5 + j.length);
  b[0] = flags;
  b.writeUInt32BE(j.length, 1);
  j.copy(b, 5);
  return b;
}
const start = envelope(0, { event: { start: { pid: 7 } } });
const end = Buffer.concat([envelope(0, { event: { end: { exitCode: 0, exited: true, status: 'exit status 0' } } }), envelope(2, {})]);
http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/connect+json' });
    res.write(start);
    res.end(end);
  });
}).listen(+process.env.STAND_IN_PORT, '127.0.0.1');
