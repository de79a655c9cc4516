# Shared by the MCP tests (mcp-*.bats): a daemon of the test's own
# (daemon-common.bash), the official MCP clients from $AGENTBOX_NPM_DIR/mcp,
# and raw JSON-RPC over the stdio relay and over HTTP.

load daemon-common.bash

MCP_CLIENT="$BATS_TEST_DIRNAME/../agent-tools/mcp-client.mjs"

mcp_setup() {
	daemon_setup
	: "${AGENTBOX_NPM_DIR:=$BATS_TEST_DIRNAME/../../build/npm}"
	export AGENTBOX_NPM_DIR AGENTBOX
}

# need_clients: skip a test that drives the official clients when they are
# not installed (scripts/install-deps puts them in build/npm/mcp).
need_clients() {
	if [ ! -d "$AGENTBOX_NPM_DIR/mcp/node_modules/@modelcontextprotocol/sdk" ] ||
		[ ! -d "$AGENTBOX_NPM_DIR/mcp/node_modules/@modelcontextprotocol/client" ]; then
		skip "the MCP clients are not installed in $AGENTBOX_NPM_DIR/mcp"
	fi
}

# mcp_node [ENV=V...]: the client script, bounded in time.
mcp_node() {
	env "$@" timeout -k 5 240 node "$MCP_CLIENT"
}

# running_count ID: processes still running in the sandbox.
running_count() {
	api "/v1/sandboxes/$1/processes" | jq '[.processes[] | select(.running)] | length'
}

# mcp_stdio [agentbox mcp args...] <LINES: the relay's stdout.
mcp_stdio() {
	timeout -k 5 60 "$AGENTBOX" mcp "$@" 2>"$D/mcp-stderr"
}

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'

# mcp_http PATH [curl options...]: POST to the daemon's socket; the
# response head goes to $D/head, the body to stdout.
mcp_http() {
	local path="$1"
	shift
	curl -s --max-time 60 --unix-socket "$SOCK" -D "$D/head" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' "$@" "http://agentbox$path"
}

# mcp_init PATH [VERSION]: a session on PATH; prints its id.
mcp_init() {
	local v="${2:-2025-11-25}"
	mcp_http "$1" -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"$v\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}" >"$D/init"
	tr -d '\r' <"$D/head" | awk 'tolower($1) == "mcp-session-id:" { print $2 }'
}

# mcp_status PATH SESSION BODY [curl options]: the HTTP status; body in $D/body.
mcp_status() {
	local path="$1" sid="$2" body="$3"
	shift 3
	curl -s -o "$D/body" -w '%{http_code}' --max-time 60 --unix-socket "$SOCK" \
		-H 'Content-Type: application/json' ${sid:+-H "Mcp-Session-Id: $sid"} "$@" \
		--data-binary "$body" "http://agentbox$path"
}

# relay_start [agentbox mcp args...]: the relay on a FIFO held open as fd 5
# (so it sees no EOF until `exec 5>&-`), initialized; its pid in $relay,
# its stdout in $D/out.
relay_start() {
	mkfifo "$D/in"
	"$AGENTBOX" mcp "$@" <"$D/in" >"$D/out" 2>"$D/mcp-stderr" &
	relay=$!
	BG_PIDS+=("$relay")
	exec 5>"$D/in"
	echo "$INIT" >&5
	echo "$INITED" >&5
}

# wait_lines N: until the relay has written N lines (at most 10 s).
wait_lines() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(wc -l <"$D/out")" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
