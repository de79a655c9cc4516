#!/usr/bin/env node
// A stand-in for `agentbox mcp`, for developing the Codex MCP test harness
// only (tests/integration/codex-common.bash with CODEX_TEST_REFERENCE=1):
// a stdio MCP server (the official SDK) with one tool, sandbox_exec
// {command}, that runs the command on the HOST with bash -c.  Its text
// content differs from its structuredContent on purpose: Codex hands the
// model the structuredContent (seen with 0.171.0).  It proves
// how Codex discovers and calls an MCP tool; it proves nothing about
// agentbox, and the committed tests never use it.
//
//   AGENTBOX_NPM_DIR=... node codex-stub-mcp.mjs
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";
import path from "node:path";

const npm = process.env.AGENTBOX_NPM_DIR;
if (!npm) {
	console.error("codex-stub-mcp: AGENTBOX_NPM_DIR is not set");
	process.exit(2);
}
const require = createRequire(path.join(npm, "mcp", "package.json"));
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = require("zod");

const server = new McpServer({ name: "agentbox-stub", version: "0.0.1" });
server.registerTool(
	"sandbox_exec",
	{
		description: "Run a shell command (stub: on the host).",
		inputSchema: { command: z.string() },
	},
	async ({ command }) => {
		const r = spawnSync("/bin/bash", ["-c", command], { encoding: "utf8", timeout: 20000 });
		const out = { exit_code: r.status, stdout: r.stdout, stderr: r.stderr, truncated: false };
		return { content: [{ type: "text", text: `TEXT exit_code=${out.exit_code}\n${out.stdout}${out.stderr}` }], structuredContent: out };
	},
);
await server.connect(new StdioServerTransport());
