/* `agentbox mcp`: the stdio MCP server, a relay to the daemon (cmd-mcp.c). */
#ifndef AB_CLI_CMD_MCP_H
#define AB_CLI_CMD_MCP_H

int ab_cmd_mcp (int argc, char **argv);

#endif
