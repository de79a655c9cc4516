#!/usr/bin/env bats
# MCP's Streamable HTTP transport on the daemon (POST /v1/mcp and
# /v1/sandboxes/{id}/mcp): the official clients against the TCP listener
# with its token, protocol negotiation, sessions, and bad input.

load mcp-common.bash

TOKEN=a-test-token-of-32-characters-xx

setup() {
	mcp_setup
	printf '%s\n' "$TOKEN" >"$D/token"
	chmod 600 "$D/token"
	# A random port; another one when something else holds it.
	local try
	for try in 1 2 3 4 5; do
		PORT=$((20000 + RANDOM % 20000))
		daemon_start --listen "127.0.0.1:$PORT" --token-file "$D/token" 2>/dev/null && return 0
		grep -q 'Address already in use' "$D/daemon.log" || break
		: >"$D/daemon.log"
	done
	cat "$D/daemon.log" >&2
	return 1
}

teardown() {
	daemon_teardown
}

@test "SDK 1.x and client 2.x over Streamable HTTP on the TCP listener: every tool" {
	need_clients
	id="$(create '{"backend": "native"}')"
	run mcp_node MCP_SDK=v1 MCP_TRANSPORT=http MCP_URL="http://127.0.0.1:$PORT/v1/sandboxes/$id/mcp" MCP_TOKEN="$TOKEN" MCP_SANDBOX="$id"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q '^ok DELETE ended the session$'
	[ "$(running_count "$id")" = 0 ]
	run mcp_node MCP_SDK=v2 MCP_TRANSPORT=http MCP_URL="http://127.0.0.1:$PORT/v1/mcp" MCP_TOKEN="$TOKEN" MCP_SANDBOX=
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q '^ok sandbox_destroy$'
	# port_url on a daemon with a listener: a URL that really reaches the port.
	sid="$(mcp_init "/v1/sandboxes/$id/mcp")"
	mcp_status "/v1/sandboxes/$id/mcp" "$sid" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"mkdir -p /tmp/www && echo served >/tmp/www/index.html && cd /tmp/www && exec python3 -m http.server 8765 --bind 127.0.0.1","background":true}}}' >/dev/null
	url=""
	for _ in $(seq 50); do
		[ "$(mcp_status "/v1/sandboxes/$id/mcp" "$sid" '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"port_url","arguments":{"port":8765}}}')" = 200 ]
		if [ "$(jq -r .result.structuredContent.listening "$D/body")" = true ]; then
			url="$(jq -r .result.structuredContent.url "$D/body")"
			break
		fi
		sleep 0.2
	done
	[ -n "$url" ]
	[[ "$url" == "http://127.0.0.1:$PORT/v1/sandboxes/$id/ports/8765/?token="* ]]
	[ "$(curl -s --max-time 10 "$url")" = served ]
	[ "$(mcp_status "/v1/sandboxes/$id/mcp" "$sid" '' -X DELETE)" = 204 ]
	[ "$(running_count "$id")" = 0 ]
}

@test "protocol versions: 2025-11-25, 2025-06-18 and 2025-03-26 are answered as asked, others with the latest" {
	for v in 2025-11-25 2025-06-18 2025-03-26 2024-11-05 1999-01-01; do
		sid="$(mcp_init /v1/mcp "$v")"
		[ "${#sid}" = 32 ]
		want="$v"
		case "$v" in 2024-* | 1999-*) want=2025-11-25 ;; esac
		[ "$(jq -r .result.protocolVersion "$D/init")" = "$want" ]
		[ "$(jq -r .result.serverInfo.name "$D/init")" = agentbox ]
		[ "$(jq -r .result.capabilities.tools.listChanged "$D/init")" = false ]
		[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","method":"notifications/initialized"}')" = 202 ]
		[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "MCP-Protocol-Version: $want")" = 200 ]
		[ "$(jq -c .result "$D/body")" = '{}' ]
		[ "$(mcp_status /v1/mcp "$sid" '' -X DELETE)" = 204 ]
	done
	# A header naming a version we do not speak is 400.
	sid="$(mcp_init /v1/mcp)"
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H 'MCP-Protocol-Version: 2024-11-05')" = 400 ]
	# A batch: two answers in one array.
	[ "$(mcp_status /v1/mcp "$sid" '[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":4,"method":"tools/list"}]')" = 200 ]
	[ "$(jq -c '[.[].id]' "$D/body")" = '[3,4]' ]
	# The v2 client limited to each version negotiates it and works with it.
	need_clients
	id="$(create '{"backend": "native"}')"
	for v in 2025-11-25 2025-06-18 2025-03-26; do
		run env MCP_VERSION="$v" MCP_URL="http://127.0.0.1:$PORT/v1/sandboxes/$id/mcp" MCP_TOKEN="$TOKEN" \
			timeout -k 5 60 node "$BATS_TEST_DIRNAME/../agent-tools/mcp-negotiate.mjs"
		echo "$output"
		[ "$status" -eq 0 ]
		[ "$output" = "negotiated $v" ]
	done
}

@test "sessions: required, unknown is 404, bound to their endpoint, ended by DELETE with their processes" {
	a="$(create '{"backend": "native"}')"
	b="$(create '{"backend": "native"}')"
	ping='{"jsonrpc":"2.0","id":2,"method":"ping"}'
	[ "$(mcp_status "/v1/sandboxes/$a/mcp" "" "$ping")" = 400 ]
	[ "$(mcp_status "/v1/sandboxes/$a/mcp" 0123456789abcdef0123456789abcdef "$ping")" = 404 ]
	[ "$(jq -r .error.code "$D/body")" = -32001 ]
	sid="$(mcp_init "/v1/sandboxes/$a/mcp")"
	[ "$(mcp_status "/v1/sandboxes/$a/mcp" "$sid" "$ping")" = 200 ]
	# Another sandbox's endpoint and the unbound one do not know it.
	[ "$(mcp_status "/v1/sandboxes/$b/mcp" "$sid" "$ping")" = 404 ]
	[ "$(mcp_status /v1/mcp "$sid" "$ping")" = 404 ]
	[ "$(mcp_status "/v1/sandboxes/0000000000000000/mcp" "$sid" "$ping")" = 404 ]
	# initialize inside a session is refused.
	[ "$(mcp_status "/v1/sandboxes/$a/mcp" "$sid" "$INIT")" = 400 ]
	# Background processes of the session, then DELETE.
	for n in 1 2 3; do
		[ "$(mcp_status "/v1/sandboxes/$a/mcp" "$sid" '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"sleep 300","background":true}}}')" = 200 ]
		[ "$(jq -r .result.structuredContent.status "$D/body")" = running ]
	done
	[ "$(running_count "$a")" = 3 ]
	[ "$(mcp_status "/v1/sandboxes/$a/mcp" "$sid" '' -X DELETE)" = 204 ]
	[ "$(running_count "$a")" = 0 ]
	[ "$(mcp_status "/v1/sandboxes/$a/mcp" "$sid" "$ping")" = 404 ]
	[ "$(mcp_status "/v1/sandboxes/$a/mcp" "$sid" '' -X DELETE)" = 404 ]
	# A session outlives its sandbox and can still be ended.
	sid="$(mcp_init "/v1/sandboxes/$b/mcp")"
	[ "$(api_status "/v1/sandboxes/$b?force=1" -X DELETE)" = 204 ]
	[ "$(mcp_status "/v1/sandboxes/$b/mcp" "$sid" "$ping")" = 404 ]
	[ "$(mcp_status "/v1/sandboxes/$b/mcp" "$sid" '' -X DELETE)" = 204 ]
	# No server-initiated stream.
	[ "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" "http://agentbox/v1/sandboxes/$a/mcp")" = 405 ]
}

@test "bad input over HTTP: malformed JSON, oversize body, wrong token, hostile Origin" {
	sid="$(mcp_init /v1/mcp)"
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":')" = 400 ]
	[ "$(jq -r .error.code "$D/body")" = -32700 ]
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":2,"method":"nope"}')" = 200 ]
	[ "$(jq -r .error.code "$D/body")" = -32601 ]
	[ "$(mcp_status /v1/mcp "$sid" '{"id":2,"method":"ping"}')" = 200 ]
	[ "$(jq -r .error.code "$D/body")" = -32600 ]
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}')" = 200 ]
	[ "$(jq -r .error.code "$D/body")" = -32602 ]
	# Over 8 MiB: 413, and the daemon keeps serving.
	head -c $((9 << 20)) /dev/zero | tr '\0' ' ' >"$D/big"
	code="$(curl -s -o "$D/body" -w '%{http_code}' --max-time 60 --unix-socket "$SOCK" -H 'Content-Type: application/json' -H "Mcp-Session-Id: $sid" --data-binary @"$D/big" http://agentbox/v1/mcp)"
	[ "$code" = 413 ]
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":3,"method":"ping"}')" = 200 ]
	# The TCP listener: no token or a wrong one is 401 before MCP sees it.
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "$INIT" "http://127.0.0.1:$PORT/v1/mcp")" = 401 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong-token-wrong-token-wrong-tok' -H 'Content-Type: application/json' -d "$INIT" "http://127.0.0.1:$PORT/v1/mcp")" = 401 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d "$INIT" "http://127.0.0.1:$PORT/v1/mcp")" = 200 ]
	# DNS rebinding: a page on another origin is refused; loopback origins pass.
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":4,"method":"ping"}' -H 'Origin: http://evil.example')" = 403 ]
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":4,"method":"ping"}' -H 'Origin: http://127.0.0.1.evil.example')" = 403 ]
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":4,"method":"ping"}' -H 'Origin: null')" = 403 ]
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":4,"method":"ping"}' -H 'Origin: http://localhost:3000')" = 200 ]
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":4,"method":"ping"}' -H 'Origin: http://[::1]:3000')" = 200 ]
	# Unbound tools need a sandbox_id that exists.
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"true"}}}')" = 200 ]
	[ "$(jq -r .result.isError "$D/body")" = true ]
	[ "$(mcp_status /v1/mcp "$sid" '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"sandbox_id":"../../x","command":"true"}}}')" = 200 ]
	[ "$(jq -r .result.isError "$D/body")" = true ]
	kill -0 "$DAEMON_PID"
}

@test "a command that floods output: capped answers, bounded daemon memory" {
	id="$(create '{"backend": "native"}')"
	sid="$(mcp_init "/v1/sandboxes/$id/mcp")"
	before="$(vm_rss_kib "$DAEMON_PID")"
	# Foreground: 1 MiB per stream comes back, the rest is counted.
	[ "$(mcp_status "/v1/sandboxes/$id/mcp" "$sid" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"head -c 200000000 /dev/zero; head -c 3000000 /dev/zero >&2","timeout":120,"yield_ms":120000}}}')" = 200 ]
	[ "$(jq -r .result.structuredContent.truncated "$D/body")" = true ]
	[ "$(jq -r .result.structuredContent.stdout_bytes "$D/body")" = 200000000 ]
	[ "$(jq -r .result.structuredContent.stderr_bytes "$D/body")" = 3000000 ]
	[ "$(jq -r '.result.structuredContent.stdout | length' "$D/body")" = 1048576 ]
	# Background: the log keeps the last 1 MiB; the process is never blocked.
	[ "$(mcp_status "/v1/sandboxes/$id/mcp" "$sid" '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"head -c 300000000 /dev/zero; echo END","background":true}}}')" = 200 ]
	psid="$(jq -r .result.structuredContent.session_id "$D/body")"
	st=running
	for _ in $(seq 120); do
		mcp_status "/v1/sandboxes/$id/mcp" "$sid" "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_process\",\"arguments\":{\"action\":\"list\"}}}" >/dev/null
		st="$(jq -r --arg p "$psid" '.result.structuredContent.sessions[] | select(.session_id == $p) | .status' "$D/body")"
		[ "$st" = running ] || break
		sleep 0.5
	done
	[ "$st" = exited ]
	[ "$(jq -r --arg p "$psid" '.result.structuredContent.sessions[] | select(.session_id == $p) | .output_bytes' "$D/body")" = 300000004 ]
	mcp_status "/v1/sandboxes/$id/mcp" "$sid" "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_process\",\"arguments\":{\"action\":\"poll\",\"session_id\":\"$psid\"}}}" >/dev/null
	[ "$(jq -r .result.structuredContent.dropped "$D/body")" = $((300000004 - 1048576)) ]
	jq -e '.result.structuredContent.output | endswith("END\n")' "$D/body"
	after="$(vm_rss_kib "$DAEMON_PID")"
	echo "daemon RSS: $before KiB before, $after KiB after" >&2
	[ $((after - before)) -lt $((64 * 1024)) ]
}

@test "notifications/cancelled kills the foreground run it names" {
	id="$(create '{"backend": "native"}')"
	sid="$(mcp_init "/v1/sandboxes/$id/mcp")"
	start=$SECONDS
	curl -s -o "$D/long" --max-time 90 --unix-socket "$SOCK" -H 'Content-Type: application/json' \
		-H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","id":"long-1","method":"tools/call","params":{"name":"sandbox_exec","arguments":{"command":"sleep 60","yield_ms":60000}}}' \
		"http://agentbox/v1/sandboxes/$id/mcp" &
	call=$!
	BG_PIDS+=("$call")
	for _ in $(seq 50); do
		[ "$(running_count "$id")" = 1 ] && break
		sleep 0.1
	done
	[ "$(running_count "$id")" = 1 ]
	# Another id cancels nothing.
	[ "$(mcp_status "/v1/sandboxes/$id/mcp" "$sid" '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long-2"}}')" = 202 ]
	sleep 0.3
	[ "$(running_count "$id")" = 1 ]
	[ "$(mcp_status "/v1/sandboxes/$id/mcp" "$sid" '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long-1","reason":"timeout"}}')" = 202 ]
	wait "$call"
	[ $((SECONDS - start)) -lt 30 ]
	[ "$(jq -r .result.structuredContent.signal "$D/long")" = 9 ]
	[ "$(running_count "$id")" = 0 ]
}
