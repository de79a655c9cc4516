#!/usr/bin/env bats
# The real Codex (0.171.0) as an MCP client of `agentbox mcp --sandbox ID`
# ($CODEX_HOME/config.toml [mcp_servers.agentbox]), driven by the scripted
# fake model: Codex defers MCP tools behind tool_search, so the model
# searches first, then calls sandbox_exec in the "mcp__agentbox"
# namespace.  The command must run inside the sandbox, and its output must
# come back to the model.
#
# Needs: node, Codex under AGENTBOX_NPM_DIR, agentbox with `mcp` (issue
# 12) — without it the tests fail.

load codex-common.bash

setup() {
	codex_setup
}

teardown() {
	codex_teardown
}

# mcp_config: Codex's MCP server entry for agentbox (the stub on the host
# in reference mode).
mcp_config() {
	if [ "$REFERENCE" = 1 ]; then
		cat >>"$CODEX_HOME/config.toml" <<EOF2

[mcp_servers.agentbox]
command = "node"
args = ["$AGENT_TOOLS/codex-stub-mcp.mjs"]
env = { AGENTBOX_NPM_DIR = "$AGENTBOX_NPM_DIR" }
EOF2
	else
		cat >>"$CODEX_HOME/config.toml" <<EOF2

[mcp_servers.agentbox]
command = "$AGENTBOX"
args = ["mcp", "--sandbox", "$SBX"]
env = { AGENTBOX_HOST = "$SOCK" }
startup_timeout_sec = 20
tool_timeout_sec = 60
EOF2
	fi
}

@test "codex calls agentbox mcp's sandbox_exec after tool_search: it runs in the sandbox, its output reaches the model" {
	require_agentbox_command mcp
	HOST_FILES+=("/tmp/$MARK-mcp")
	fake_model_start "$(jq -n --arg mark "$MARK" '{steps: [
	  [{type: "tool_search_call", execution: "client", arguments: {query: "sandbox exec shell command", limit: 8}}],
	  [{type: "function_call", namespace: "mcp__agentbox", name: "sandbox_exec", arguments: {
	     command: ("echo host=$(cat /proc/sys/kernel/hostname); echo \($mark) > /tmp/\($mark)-mcp; echo sum=$((6 * 7))")}}],
	  [{type: "message", text: "mcp flow done"}]
	]}')"
	mcp_config
	codex_run -- exec --skip-git-repo-check "run the scripted steps" || {
		cat "$T/codex.out" >&2
		return 1
	}
	grep -q 'mcp flow done' "$T/codex.out"
	# tool_search offered sandbox_exec in the mcp__agentbox namespace.
	jq -se '[.[].body.input[]? | select(.type == "tool_search_output" and .call_id == "call_s0_0")
		| .tools[] | select(.type == "namespace" and .name == "mcp__agentbox") | .tools[].name]
		| index("sandbox_exec") != null' "$T/requests.jsonl" >/dev/null || {
		jq -c '.body.input[]? | select(.type == "tool_search_output")' "$T/requests.jsonl" >&2
		return 1
	}
	# The call ran in the sandbox, and its output came back to the model.
	out="$(tool_output call_s1_0)"
	echo "sandbox_exec output: $out" >&2
	[[ "$out" == *"host=$SBX_HOSTNAME"* ]]
	[[ "$out" == *"sum=42"* ]]
	[ "$(sbx_sh "cat /tmp/$MARK-mcp")" = "$MARK" ]
	if [ "$REFERENCE" != 1 ]; then
		[ ! -e "/tmp/$MARK-mcp" ]
		# Codex ended the MCP server it spawned.
		wait_gone pgrep -f -- "mcp --sandbox $SBX"
	fi
}

@test "codex gets a failing command's status from agentbox mcp's sandbox_exec, and the server keeps serving" {
	require_agentbox_command mcp
	fake_model_start "$(jq -n '{steps: [
	  [{type: "tool_search_call", execution: "client", arguments: {query: "sandbox exec", limit: 8}}],
	  [{type: "function_call", namespace: "mcp__agentbox", name: "sandbox_exec", arguments: {
	     command: "echo to-stderr >&2; exit 3"}}],
	  [{type: "function_call", namespace: "mcp__agentbox", name: "sandbox_exec", arguments: {
	     command: "echo still-serving"}}],
	  [{type: "message", text: "mcp flow done"}]
	]}')"
	mcp_config
	codex_run -- exec --skip-git-repo-check "run the scripted steps" || {
		cat "$T/codex.out" >&2
		return 1
	}
	grep -q 'mcp flow done' "$T/codex.out"
	out="$(tool_output call_s1_0)"
	echo "failing sandbox_exec output: $out" >&2
	[[ "$out" == *"to-stderr"* ]]
	[[ "$out" =~ exit_code[^0-9]*3 ]]
	out="$(tool_output call_s2_0)"
	[[ "$out" == *"still-serving"* ]]
}
