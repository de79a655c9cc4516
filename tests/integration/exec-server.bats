#!/usr/bin/env bats
# The Codex exec-server protocol served for a daemon sandbox
# (docs/exec-server.md): a node JSON-RPC client
# (tests/agent-tools/exec-server-check.mjs, `ws` from $AGENTBOX_NPM_DIR)
# drives the daemon's endpoint GET /v1/sandboxes/{id}/exec-server, then
# `agentbox exec-server --stdio` and `--listen`.  The effects must be the
# sandbox's: its hostname, its /workspace, the host's directory untouched
# except for the workspace itself, and no process left when a client goes.

load daemon-common.bash

CHECK="$BATS_TEST_DIRNAME/../agent-tools/exec-server-check.mjs"

setup() {
	daemon_setup
	command -v node >/dev/null || skip "node is not installed"
	: "${AGENTBOX_NPM_DIR:=$BATS_TEST_DIRNAME/../../build/npm}"
	export AGENTBOX_NPM_DIR
	[ -d "$AGENTBOX_NPM_DIR/sdk/node_modules/ws" ] || skip "ws is not installed in $AGENTBOX_NPM_DIR/sdk"
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$WS"
	# The quiet-session test proves the endpoint outlives the daemon's idle
	# timeout; a short one keeps it short.
	if [[ $BATS_TEST_DESCRIPTION == *"quiet session"* ]]; then
		daemon_start --idle-timeout 2s
	else
		daemon_start
	fi
	ID="$(ab create --workspace "$WS" --hostname "xs-$MARK")"
	EP="unix:$SOCK:/v1/sandboxes/$ID/exec-server"
}

teardown() {
	daemon_teardown
}

check() {
	timeout -k 2 250 node "$CHECK" "$@"
}

# No process of the sandbox runs any more (bounded: 5 s).
no_processes_left() {
	local i n
	for ((i = 0; i < 50; i++)); do
		n="$(api "/v1/sandboxes/$ID/processes" | jq '[.processes[] | select(.running)] | length')"
		[ "$n" = 0 ] && return 0
		sleep 0.1
	done
	api "/v1/sandboxes/$ID/processes" >&2
	return 1
}

# The core scenario passed.  Before the agent's file service reads
# anything the sandbox can see (another branch), the one check allowed to
# fail is the read of /etc/os-release outside the workspace.
core_passed() {
	! grep '^FAIL' <<<"$output" && [ "$status" -eq 0 ]
}

# The core scenario's effects: the sandbox's hostname, its /workspace.
assert_core_effects() {
	[[ "$output" == *'ECHO_STDOUT "out\nxs-'"$MARK"'\n/workspace\n"'* ]]
	[[ "$output" == *'ECHO_STDERR "err\n"'* ]]
	[[ "$output" == *"MADE_BY_PROCESS \"xs-$MARK\\n\""* ]]
	[ "$(cat "$WS/made-by-process.txt")" = "xs-$MARK" ]
	[ "$(cat "$WS/xs-file.txt")" = "written through fs" ]
	[ "$(hostname)" != "xs-$MARK" ]
}

@test "exec-server: the daemon endpoint: initialize, processes on a pty, signals, files" {
	XS_BASE=file:///workspace run check core "$EP"
	echo "$output"
	core_passed
	assert_core_effects
	no_processes_left
	local mon
	mon="$(api "/v1/sandboxes/$ID" | jq -r .monitor_pid)"
	[ "$(api_status "/v1/sandboxes/$ID?force=1" -X DELETE)" = 204 ]
	monitor_gone "$mon"
	assert_nothing_left "$SNAPSHOT"
}

@test "exec-server: the host's workspace path in a URI is the sandbox's /workspace" {
	XS_BASE="file://$WS" run check core "$EP"
	echo "$output"
	core_passed
	[[ "$output" == *"ok   fs/canonicalize (same form as asked)"* ]]
	assert_core_effects
}

@test "exec-server: agentbox exec-server --stdio relays to the daemon" {
	XS_BASE=file:///workspace run check core "stdio:[\"$AGENTBOX\",\"exec-server\",\"--sandbox\",\"$ID\",\"--stdio\"]"
	echo "$output"
	core_passed
	assert_core_effects
	no_processes_left
}

@test "exec-server: --listen serves the printed URL and refuses any other credential" {
	local url pid token
	token="tok-$RANDOM$RANDOM$RANDOM"
	printf '%s\n' "$token" >"$BATS_TEST_TMPDIR/token"
	setsid "$AGENTBOX" exec-server --sandbox "$ID" --listen ws://127.0.0.1:0 \
		--token-file "$BATS_TEST_TMPDIR/token" >"$BATS_TEST_TMPDIR/url" 2>"$BATS_TEST_TMPDIR/listen.log" &
	pid=$!
	BG_PIDS+=("$pid")
	wait_for "$BATS_TEST_TMPDIR/url" "^ws://"
	url="$(head -1 "$BATS_TEST_TMPDIR/url")"
	[[ "$url" =~ ^ws://127\.0\.0\.1:[0-9]+/[0-9a-f]{64}$ ]]
	XS_BASE=file:///workspace run check core "$url"
	echo "$output"
	core_passed
	assert_core_effects
	# a wrong secret, no secret, a wrong token: 401 before any upgrade
	local base="${url%/*}" key='dGhlIHNhbXBsZSBub25jZQ=='
	for target in "$base/0000" "$base/" "${url}x"; do
		run curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
			-H "Sec-WebSocket-Key: $key" -H 'Sec-WebSocket-Version: 13' "http${target#ws}"
		[ "$output" = 401 ]
	done
	run curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
		-H "Sec-WebSocket-Key: $key" -H 'Sec-WebSocket-Version: 13' -H "Authorization: Bearer ${token}x" "http${base#ws}/"
	[ "$output" = 401 ]
	# the bearer token (Codex's authBearerToken) opens it
	run curl -s -o /dev/null -w '%{http_code}' --max-time 3 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
		-H "Sec-WebSocket-Key: $key" -H 'Sec-WebSocket-Version: 13' -H "Authorization: Bearer $token" "http${base#ws}/"
	[ "$output" = 101 ]
	# a browser's page elsewhere is refused
	run curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
		-H "Sec-WebSocket-Key: $key" -H 'Sec-WebSocket-Version: 13' -H 'Origin: https://evil.example' "http${url#ws}"
	[ "$output" = 403 ]
	kill -0 "$pid"
	no_processes_left
}

@test "exec-server: --listen is loopback only unless --listen-non-loopback" {
	run ab exec-server --sandbox "$ID" --listen ws://0.0.0.0:0
	[ "$status" -ne 0 ]
	[[ "$output" == *"not a loopback address"* ]]
	run ab exec-server --sandbox "$ID"
	[ "$status" -eq 2 ]
	run ab exec-server --stdio
	[ "$status" -eq 2 ]
}

@test "exec-server: --create makes a sandbox per connection and removes it after" {
	local n_before
	n_before="$(api /v1/sandboxes | jq '.sandboxes | length')"
	XS_BASE=file:///workspace run check core \
		"stdio:[\"$AGENTBOX\",\"exec-server\",\"--create\",\"--workspace\",\"$WS\",\"--hostname\",\"xs-$MARK\",\"--stdio\"]"
	echo "$output"
	core_passed
	assert_core_effects
	[ "$(api /v1/sandboxes | jq '.sandboxes | length')" = "$n_before" ]
	# --keep keeps it
	XS_BASE=file:///workspace run check core \
		"stdio:[\"$AGENTBOX\",\"exec-server\",\"--create\",\"--workspace\",\"$WS\",\"--hostname\",\"xs-$MARK\",\"--keep\",\"--stdio\"]"
	[ "$(api /v1/sandboxes | jq '.sandboxes | length')" = "$((n_before + 1))" ]
}

@test "exec-server: bad input is answered and the server keeps serving" {
	echo "host-only-$MARK" >"$BATS_TEST_TMPDIR/host-secret"
	ln -s "$BATS_TEST_TMPDIR/host-secret" "$WS/link-out"
	XS_HOST_SECRET="host-only-$MARK" XS_BASE=file:///workspace run check bad "$EP"
	echo "$output"
	[ "$status" -eq 0 ]
	# the link's target is never the host's file: untouched
	[ "$(cat "$BATS_TEST_TMPDIR/host-secret")" = "host-only-$MARK" ]
	no_processes_left
	# over --stdio too
	XS_HOST_SECRET="host-only-$MARK" XS_BASE=file:///workspace run check bad \
		"stdio:[\"$AGENTBOX\",\"exec-server\",\"--sandbox\",\"$ID\",\"--stdio\"]"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/host-secret")" = "host-only-$MARK" ]
	no_processes_left
}

@test "exec-server: a processId of another connection is unknown; a closed connection leaves no process" {
	XS_BASE=file:///workspace run check foreign "$EP"
	echo "$output"
	[ "$status" -eq 0 ]
	no_processes_left
	kill -0 "$DAEMON_PID"
}

@test "exec-server: a message over 100 MiB is refused with 1009 and the daemon keeps serving" {
	XS_BASE=file:///workspace run check oversize "$EP"
	echo "$output"
	[ "$status" -eq 0 ]
	kill -0 "$DAEMON_PID"
	[ "$(wc -c <"$WS/big.bin")" -eq $((30 << 20)) ]
}

@test "exec-server: the endpoint is behind the daemon: unknown sandbox 404, plain GET 400" {
	[ "$(api_status /v1/sandboxes/0123456789abcdef/exec-server)" = 404 ]
	[ "$(api_status "/v1/sandboxes/$ID/exec-server")" = 400 ]
}

@test "exec-server: a quiet session outlives the daemon's idle timeout (2 s here)" {
	# A plain connection that says nothing is closed at that timeout...
	run timeout 20 python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); t = time.monotonic()
while s.recv(4096): pass
print("closed after %.1f s" % (time.monotonic() - t))' "$SOCK"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output =~ closed\ after\ [1-3]\. ]]
	# ...and a quiet exec-server session twice as long is not.
	XS_IDLE_MS=5000 XS_BASE=file:///workspace run timeout -k 2 200 node "$CHECK" idle "$EP"
	echo "$output"
	[ "$status" -eq 0 ]
	no_processes_left
}
