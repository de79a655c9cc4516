#!/usr/bin/env bats
# Ports of a daemon's sandbox reached from the host: `agentbox port` (raw
# TCP through the daemon's socket) and the daemon's /ports/ proxy behind the
# sandbox's port token.  The peers are node's own http/net modules
# (tests/helpers/port-peers.js): an HTTP server with a WebSocket echo inside
# the sandbox, and a WebSocket client on the host.

load daemon-common.bash

PEERS="$BATS_TEST_DIRNAME/../helpers/port-peers.js"

setup() {
	daemon_setup
	if ! command -v node >/dev/null; then
		skip "node is not installed"
	fi
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$WS"
	cp "$PEERS" "$WS/port-peers.js"
}

teardown() {
	daemon_teardown
}

# box_with_server: a sandbox running the peer server on 127.0.0.1:8000
# inside; sets ID and TOKEN.
box_with_server() {
	local i
	ab create --workspace "$WS" --json >"$D/created"
	ID="$(jq -r .id "$D/created")"
	ab exec -d "$ID" -- node /workspace/port-peers.js server 8000 >/dev/null
	TOKEN="$(jq -r .port_token "$D/created")"
	[[ "$TOKEN" =~ ^[0-9a-f]{64}$ ]]
	for ((i = 0; i < 100; i++)); do
		[ "$(api_status "/v1/sandboxes/$ID/ports/8000/hello?token=$TOKEN")" = 200 ] && return 0
		sleep 0.1
	done
	echo "the server inside did not start" >&2
	return 1
}

# port_start ARGS...: `agentbox port ARGS` in the background; sets PORT_PID
# and LPORT (the local port it printed).
port_start() {
	local i
	# Created here: the background job's redirections may come after sed.
	: >"$D/port.out"
	: >"$D/port.err"
	"$AGENTBOX" port "$@" >>"$D/port.out" 2>>"$D/port.err" &
	PORT_PID=$!
	BG_PIDS+=("$PORT_PID")
	for ((i = 0; i < 100; i++)); do
		LPORT="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$D/port.out")"
		[ -n "$LPORT" ] && return 0
		kill -0 "$PORT_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$D/port.err" >&2
	return 1
}

proxy() {
	local path="$1"
	shift
	api_status "/v1/sandboxes/$ID/ports/8000$path" "$@"
}

@test "agentbox port forwards HTTP and WebSocket to a server inside; ends on SIGTERM" {
	daemon_start
	box_with_server
	port_start "$ID" 8000
	run curl -sS --max-time 10 "http://127.0.0.1:$LPORT/hello"
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the sandbox" ]
	# The request reaches the server as the client sent it (raw TCP).
	run curl -sS --max-time 10 "http://127.0.0.1:$LPORT/echo?q=%20a" -d payload
	[ "$(echo "$output" | jq -r .url)" = "/echo?q=%20a" ]
	[ "$(echo "$output" | jq -r .body)" = payload ]
	# Several connections at once, each its own stream.
	pids=()
	for i in 1 2 3 4; do
		curl -sS --max-time 10 -o "$D/par$i" "http://127.0.0.1:$LPORT/hello" &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in 1 2 3 4; do
		[ "$(cat "$D/par$i")" = "hello from the sandbox" ]
	done
	run timeout 15 node "$PEERS" ws 127.0.0.1 "$LPORT" /chat
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "echo /chat one" ]
	[ "${lines[1]}" = "echo /chat two" ]
	kill -TERM "$PORT_PID"
	rc=0
	wait "$PORT_PID" || rc=$?
	[ "$rc" -eq 0 ]
	run curl -sS --max-time 2 "http://127.0.0.1:$LPORT/hello"
	[ "$status" -ne 0 ]
	# Removing the sandbox ends the server inside with it (PID 1 goes).
	mon="$(api "/v1/sandboxes/$ID" | jq -r .monitor_pid)"
	agent="$(agent_pid "$ID")"
	ab rm -f "$ID"
	monitor_gone "$mon"
	! kill -0 "$agent" 2>/dev/null || grep -q '^State:.*Z' "/proc/$agent/status"
}

# bytes_like N FILE: the pattern port-peers.js serves at /bytes?n=N.
bytes_like() {
	node -e 'const n = +process.argv[1], b = Buffer.alloc(n);
for (let i = 0; i < n; i++) b[i] = ((i % 65536) * 7 + 3) & 255;
process.stdout.write(b)' "$1" >"$2"
}

@test "large bodies stream through both ways intact (agentbox port and the proxy)" {
	daemon_start
	box_with_server
	port_start "$ID" 8000
	n=$((24 * 1024 * 1024))
	bytes_like "$n" "$D/want"
	curl -sS --max-time 60 -o "$D/got1" "http://127.0.0.1:$LPORT/bytes?n=$n"
	cmp "$D/want" "$D/got1"
	curl -sS --max-time 60 -o "$D/got2" "http://agentbox/v1/sandboxes/$ID/ports/8000/bytes?n=$n&token=$TOKEN" \
		--unix-socket "$SOCK"
	cmp "$D/want" "$D/got2"
	head -c $((16 * 1024 * 1024 + 5)) /dev/urandom >"$D/up"
	want="$(stat -c %s "$D/up") $(sha256sum "$D/up" | cut -d' ' -f1)"
	run curl -sS --max-time 60 --data-binary "@$D/up" "http://127.0.0.1:$LPORT/digest"
	[ "$output" = "$want" ]
	run curl -sS --max-time 60 --data-binary "@$D/up" -H "Transfer-Encoding: chunked" \
		--unix-socket "$SOCK" "http://agentbox/v1/sandboxes/$ID/ports/8000/digest?token=$TOKEN"
	[ "$output" = "$want" ]
}

@test "agentbox port: a closed port drops the connection and says why; bad input is refused" {
	daemon_start
	ID="$(ab create --no-workspace)"
	port_start "$ID" 8001 --listen 127.0.0.1:0
	run curl -sS --max-time 10 "http://127.0.0.1:$LPORT/"
	[ "$status" -ne 0 ]
	grep -q "nothing is listening on port 8001 in sandbox $ID" "$D/port.err"
	kill -TERM "$PORT_PID"
	wait "$PORT_PID"
	run ab port 0123456789abcdef 8000
	[ "$status" -eq 125 ]
	echo "$output" | grep -q "no sandbox '0123456789abcdef'"
	run ab port "$ID/../x" 8000
	[ "$status" -eq 125 ]
	echo "$output" | grep -q "usage: agentbox port"
	run ab port "$ID" 8000 --listen 0.0.0.0:0
	[ "$status" -eq 125 ]
	echo "$output" | grep -q "loopback"
	for bad in 0 65536 8x -1; do
		run ab port "$ID" "$bad"
		[ "$status" -eq 125 ]
	done
	run ab port "$ID"
	[ "$status" -eq 125 ]
	run env AGENTBOX_HOST="$D/none.sock" "$AGENTBOX" port "$ID" 8000
	[ "$status" -eq 125 ]
	echo "$output" | grep -q "no agentbox daemon"
}

@test "the /ports/ proxy: the token (header or query) is required and not forwarded" {
	daemon_start
	box_with_server
	[ "$(api /v1/sandboxes -d '{"ttl":"1m"}' | jq -r .port_token | wc -c)" -eq 65 ]
	[ "$(proxy /hello -H "Authorization: Bearer $TOKEN")" = 200 ]
	[ "$(cat "$D/body")" = "hello from the sandbox" ]
	[ "$(proxy "/echo?a=1&token=$TOKEN&b=%2F" -d body -H 'X-Custom: yes')" = 200 ]
	[ "$(jq -r .url "$D/body")" = "/echo?a=1&b=%2F" ]
	[ "$(jq -r .body "$D/body")" = body ]
	[ "$(jq -r .method "$D/body")" = POST ]
	jq -e '.headers | index("X-Custom")' "$D/body"
	[ "$(proxy /echo -H "Authorization: Bearer $TOKEN")" = 200 ]
	[ "$(jq -r .url "$D/body")" = /echo ]
	! jq -r '.headers[]' "$D/body" | grep -qi "$TOKEN"
	! jq -r '.headers[]' "$D/body" | grep -qi '^authorization$'
	# No path after the port is "/".
	[ "$(proxy "?token=$TOKEN")" = 200 ]
	[ "$(jq -r .url "$D/body")" = / ]
	# Missing, wrong (same length and other length), another sandbox's token.
	[ "$(proxy /hello)" = 401 ]
	[ "$(jq -r .error.code "$D/body")" = unauthorized ]
	# Same length, last digit changed.
	if [ "${TOKEN: -1}" = 0 ]; then wrong="${TOKEN%?}1"; else wrong="${TOKEN%?}0"; fi
	[ "$wrong" != "$TOKEN" ]
	[ "$(proxy /hello -H "Authorization: Bearer $wrong")" = 401 ]
	[ "$(proxy "/hello?token=$wrong")" = 401 ]
	[ "$(proxy "/hello?token=${TOKEN}0")" = 401 ]
	[ "$(proxy "/hello?token=abc")" = 401 ]
	ab create --no-workspace --json >"$D/other"
	other="$(jq -r .id "$D/other")"
	otok="$(jq -r .port_token "$D/other")"
	[ "$otok" != "$TOKEN" ]
	[ "$(proxy /hello -H "Authorization: Bearer $otok")" = 401 ]
	[ "$(api_status "/v1/sandboxes/$other/ports/8000/hello?token=$TOKEN")" = 401 ]
	# Unknown sandbox, closed port, bad port.
	[ "$(api_status "/v1/sandboxes/0123456789abcdef/ports/8000/hello?token=$TOKEN")" = 404 ]
	[ "$(api_status "/v1/sandboxes/$ID/ports/8001/hello?token=$TOKEN")" = 502 ]
	[ "$(jq -r .error.code "$D/body")" = bad_gateway ]
	jq -r .error.message "$D/body" | grep -q "nothing is listening on port 8001"
	[ "$(api_status "/v1/sandboxes/$ID/ports/0/hello?token=$TOKEN")" = 404 ]
	[ "$(api_status "/v1/sandboxes/$ID/ports/70000/hello?token=$TOKEN")" = 404 ]
}

@test "the /ports/ proxy relays a WebSocket upgrade both ways" {
	daemon_start
	box_with_server
	run timeout 15 node "$PEERS" ws-unix "$SOCK" "/v1/sandboxes/$ID/ports/8000/room?token=$TOKEN"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "echo /room one" ]
	[ "${lines[1]}" = "echo /room two" ]
	run timeout 15 node "$PEERS" ws-unix "$SOCK" "/v1/sandboxes/$ID/ports/8000/h" \
		"Authorization: Bearer $TOKEN"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "echo /h one" ]
	run timeout 15 node "$PEERS" ws-unix "$SOCK" "/v1/sandboxes/$ID/ports/8000/room"
	[ "$status" -ne 0 ]
	echo "$output" | grep -q "handshake failed: HTTP/1.1 401"
}

@test "on the TCP listener the proxy takes the port token, the rest of the API the daemon's" {
	echo "daemon-token-0123456789" >"$D/token"
	chmod 600 "$D/token"
	tport="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1",
  () => { console.log(s.address().port); s.close(); })')"
	daemon_start --listen "127.0.0.1:$tport" --token-file "$D/token"
	box_with_server
	base="http://127.0.0.1:$tport/v1/sandboxes/$ID"
	run curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$base/ports/8000/hello?token=$TOKEN"
	[ "$output" = 200 ]
	run curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$base/ports/8000/hello" \
		-H "Authorization: Bearer daemon-token-0123456789"
	[ "$output" = 401 ]
	run curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$base" \
		-H "Authorization: Bearer $TOKEN"
	[ "$output" = 401 ]
	run curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST "$base/tcp/8000" \
		-H 'Connection: Upgrade' -H 'Upgrade: tcp' -H "Authorization: Bearer $TOKEN"
	[ "$output" = 401 ]
	run timeout 15 node "$PEERS" ws 127.0.0.1 "$tport" "/v1/sandboxes/$ID/ports/8000/t?token=$TOKEN"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "echo /t one" ]
}

@test "the raw stream endpoint needs the upgrade; the token survives a daemon restart" {
	daemon_start
	box_with_server
	[ "$(api_status "/v1/sandboxes/$ID/tcp/8000" -X POST)" = 400 ]
	[ "$(api_status "/v1/sandboxes/$ID/tcp/0" -X POST -H 'Connection: Upgrade' -H 'Upgrade: tcp')" = 400 ]
	[ "$(api_status "/v1/sandboxes/nope/tcp/8000" -X POST -H 'Connection: Upgrade' -H 'Upgrade: tcp')" = 404 ]
	[ "$(api_status "/v1/sandboxes/$ID/tcp/8001" -X POST -H 'Connection: Upgrade' -H 'Upgrade: tcp')" = 502 ]
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID" || true
	daemon_start
	# Shown only by create: the restarted daemon's GET leaves it out too.
	ab inspect "$ID" | jq -e 'has("port_token") | not'
	[ "$(proxy "/hello?token=$TOKEN")" = 200 ]
}
