// The v2 client (@modelcontextprotocol/client 2.x) restricted to one
// protocol version, over Streamable HTTP: connects, prints the version it
// negotiated, calls sandbox_exec once.  Environment: MCP_URL, MCP_TOKEN,
// MCP_VERSION, AGENTBOX_NPM_DIR.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const req = createRequire(path.join(process.env.AGENTBOX_NPM_DIR, 'mcp', 'node_modules', 'x.js'));
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(req.resolve('@modelcontextprotocol/client')).href);

const version = process.env.MCP_VERSION;
const client = new Client({ name: 'agentbox-negotiate', version: '1.0.0' }, { supportedProtocolVersions: [version] });
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
	requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
});
await client.connect(transport);
assert.equal(client.getNegotiatedProtocolVersion(), version);
const r = await client.callTool({ name: 'sandbox_exec', arguments: { command: 'echo negotiated' } });
assert.equal(r.structuredContent.stdout, 'negotiated\n');
console.log(`negotiated ${client.getNegotiatedProtocolVersion()}`);
await transport.terminateSession();
await client.close();
