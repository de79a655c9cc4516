#!/usr/bin/env bats
# `agentbox mcp` (the stdio transport, relayed to the daemon) driven by the
# official MCP clients, and by hand with bad input.

load mcp-common.bash

setup() {
	mcp_setup
	daemon_start
}

teardown() {
	daemon_teardown
}

@test "SDK 1.x over stdio, bound to a sandbox: every tool; the session's processes end with it" {
	need_clients
	id="$(create '{"backend": "native"}')"
	run mcp_node MCP_SDK=v1 MCP_TRANSPORT=stdio MCP_SANDBOX="$id"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q '^ok closed$'
	[ "$(echo "$output" | grep -c '^ok ')" -ge 14 ]
	# The client left `sleep 300` running in the background; EOF on the
	# relay's stdin deleted the session, which killed it.
	echo "$output" | grep -q '^left '
	[ "$(running_count "$id")" = 0 ]
}

@test "client 2.x over stdio, unbound: lifecycle tools and every tool" {
	need_clients
	run mcp_node MCP_SDK=v2 MCP_TRANSPORT=stdio MCP_SANDBOX=
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q '^ok sandbox_destroy$'
	echo "$output" | grep -q '^ok closed$'
	[ "$(api /v1/sandboxes | jq '.sandboxes | length')" = 0 ]
	assert_nothing_left "$SNAPSHOT"
}

@test "stdio: malformed lines, unknown methods and tools, oversize lines: the right errors, still serving" {
	id="$(create '{"backend": "native"}')"
	{
		echo 'this is not json'
		echo "$INIT"
		echo "$INITED"
		echo '{"jsonrpc":"2.0","id":2,"method":"no/such/method"}'
		echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"no_such_tool"}}'
		echo '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"x"}'
		echo '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/workspace/../etc/mcp-x","content":"x"}}}'
		echo '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/proc/self/root/etc/hostname"}}}'
		echo '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"true","sandbox_id":"x"}}}'
		echo '{"jsonrpc":"2.0","id":8'
		head -c $((9 << 20)) /dev/zero | tr '\0' ' '
		echo
		echo '{"jsonrpc":"2.0","id":9,"method":"ping"}'
		echo ''
		echo '{"jsonrpc":"2.0","id":"ten","method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"sleep 300","background":true}}}'
	} >"$D/in"
	mcp_stdio --sandbox "$id" <"$D/in" >"$D/out"
	cat "$D/out"
	# Only JSON-RPC messages on stdout, one per line.
	jq -e -s 'all(.jsonrpc == "2.0")' "$D/out"
	# Two lines that are not JSON (-32700 from the daemon), one over 8 MiB
	# (-32600 from the relay, which never buffers it whole).
	[ "$(jq -s '[.[] | select(.id == null) | .error.code] | sort' -c "$D/out")" = '[-32700,-32700,-32600]' ]
	[ "$(jq -r 'select(.id == 1) | .result.protocolVersion' "$D/out")" = 2025-11-25 ]
	[ "$(jq -r 'select(.id == 2) | .error.code' "$D/out")" = -32601 ]
	[ "$(jq -r 'select(.id == 3) | .error.code' "$D/out")" = -32602 ]
	[ "$(jq -r 'select(.id == 4) | .error.code' "$D/out")" = -32602 ]
	[ "$(jq -r 'select(.id == 5) | .result.isError' "$D/out")" = true ]
	[ "$(jq -r 'select(.id == 6) | .result.isError' "$D/out")" = true ]
	# A bound session's tools take no sandbox_id.
	[ "$(jq -r 'select(.id == 7) | .result.isError' "$D/out")" = true ]
	jq -r 'select(.id == 7) | .result.content[0].text' "$D/out" | grep -q sandbox_id
	[ "$(jq -c 'select(.id == 9) | .result' "$D/out")" = '{}' ]
	[ "$(jq -r 'select(.id == "ten") | .result.structuredContent.status' "$D/out")" = running ]
	[ ! -e /etc/mcp-x ]
	# EOF ended the session: the background sleep is gone.
	[ "$(running_count "$id")" = 0 ]
	! grep -qi 'segmentation\|abort' "$D/daemon.log"
	kill -0 "$DAEMON_PID"
}

@test "stdio: no daemon is a JSON-RPC error on stdout, not a crash" {
	echo "$INIT" | AGENTBOX_HOST="$D/nothing.sock" mcp_stdio >"$D/out"
	jq -e '.id == 1 and .error.code == -32603' "$D/out"
	jq -r .error.message "$D/out" | grep -q 'no agentbox daemon'
}

@test "stdio, unbound: a sandbox created without keep goes with the session" {
	{
		echo "$INIT"
		echo "$INITED"
		echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_create","arguments":{"backend":"native"}}}'
		echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sandbox_create","arguments":{"backend":"native","keep":true}}}'
	} | mcp_stdio >"$D/out"
	cat "$D/out"
	gone="$(jq -r 'select(.id == 2) | .result.structuredContent.sandbox_id' "$D/out")"
	kept="$(jq -r 'select(.id == 3) | .result.structuredContent.sandbox_id' "$D/out")"
	[ -n "$gone" ] && [ "$gone" != null ]
	[ "$(api_status "/v1/sandboxes/$gone")" = 404 ]
	[ "$(api_status "/v1/sandboxes/$kept")" = 200 ]
	[ "$(api_status "/v1/sandboxes/$kept" -X DELETE)" = 204 ]
	assert_nothing_left "$SNAPSHOT"
}

@test "stdio: SIGTERM to the relay ends the session and its processes" {
	id="$(create '{"backend": "native"}')"
	relay_start --sandbox "$id"
	echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"sleep 300","background":true}}}' >&5
	wait_lines 2
	[ "$(jq -r 'select(.id == 2) | .result.structuredContent.status' "$D/out")" = running ]
	[ "$(running_count "$id")" = 1 ]
	kill -TERM "$relay"
	st=0
	wait "$relay" || st=$?
	[ "$st" -eq $((128 + 15)) ]
	exec 5>&-
	[ "$(running_count "$id")" = 0 ]
}

@test "stdio: a daemon restart loses the session; the relay starts a new one and carries on" {
	id="$(create '{"backend": "native"}')"
	relay_start --sandbox "$id"
	echo '{"jsonrpc":"2.0","id":2,"method":"ping"}' >&5
	wait_lines 2
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID" || true
	daemon_start 5>&- # the daemon must not hold the FIFO open
	echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"echo again"}}}' >&5
	wait_lines 3
	exec 5>&-
	wait "$relay"
	cat "$D/out" "$D/mcp-stderr"
	[ "$(jq -c 'select(.id == 2) | .result' "$D/out")" = '{}' ]
	[ "$(jq -r 'select(.id == 3) | .result.structuredContent.stdout' "$D/out")" = again ]
	grep -q 'lost the MCP session' "$D/mcp-stderr"
	# Only the client's own initialize was answered on stdout.
	[ "$(jq -s '[.[] | select(.result.protocolVersion)] | length' "$D/out")" = 1 ]
}
