#!/usr/bin/env bats
# The sandbox's desktop (spec "desktop": Xvfb :99 and x11vnc on the
# sandbox's loopback) and the VNC door GET /v1/sandboxes/{id}/vnc on the
# daemon's TCP listener (docs/browser.md): noVNC in a real headless
# Chromium on the host draws the desktop a headed Chromium in the sandbox
# paints red; the door's refusals.  One daemon and one sandbox for the
# file; every listener on loopback.

bats_require_minimum_version 1.5.0

ROOT_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
: "${AGENTBOX:=$ROOT_DIR/build/agentbox}"
: "${BATS_TEST_TIMEOUT:=120}"
export BROWSER_NPM="${AGENTBOX_NPM_DIR:-$ROOT_DIR/build/npm}/browser"
export SDK_NPM="${AGENTBOX_NPM_DIR:-$ROOT_DIR/build/npm}/sdk"
HERE="$BATS_TEST_DIRNAME/browser"

api() {
	local path="$1"
	shift
	curl -sS --max-time 90 --unix-socket "$SOCK" "$@" "http://agentbox$path"
}

# free_ports: two distinct free loopback ports.
free_ports() {
	python3 -c 'import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])'
}

setup_file() {
	local f i
	for f in chromium node curl jq python3 Xvfb x11vnc; do
		command -v "$f" >/dev/null || { echo "$f is missing (scripts/install-deps)" >&2; return 1; }
	done
	[ -f /usr/share/novnc/vnc.html ] || { echo "novnc is missing (scripts/install-deps)" >&2; return 1; }
	export F="$BATS_FILE_TMPDIR"
	export SOCK="$F/d/run/agentbox.sock" STATE="$F/d/state"
	mkdir -p "$F/d"
	echo "daemon-token-0123456789abcdef" >"$F/token"
	chmod 600 "$F/token"
	export TPORT WPORT
	read -r TPORT WPORT < <(free_ports)
	python3 -m http.server "$WPORT" --bind 127.0.0.1 --directory /usr/share/novnc >/dev/null 2>&1 &
	echo $! >"$F/web.pid"
	AGENTBOX_VNC_PING_INTERVAL=1s AGENTBOX_VNC_PONG_TIMEOUT=2500ms setsid "$AGENTBOX" serve \
		--socket "$SOCK" --state-dir "$STATE" --listen "127.0.0.1:$TPORT" --token-file "$F/token" \
		>>"$F/daemon.log" 2>&1 </dev/null &
	export DAEMON_PID=$!
	for ((i = 0; i < 100; i++)); do
		curl -s --max-time 2 --unix-socket "$SOCK" http://agentbox/v1/health >/dev/null 2>&1 && break
		sleep 0.1
	done
	api /v1/sandboxes -d '{"backend": "native", "desktop": true, "limits": {"pids": 2048}}' >"$F/created"
	export ID TOKEN
	ID="$(jq -er .id "$F/created")"
	TOKEN="$(jq -er .port_token "$F/created")"
	export VNC="ws://127.0.0.1:$TPORT/v1/sandboxes/$ID/vnc"
}

teardown_file() {
	if [ -n "${DAEMON_PID:-}" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		[ -n "${ID:-}" ] && api "/v1/sandboxes/$ID?force=1" -X DELETE >/dev/null 2>&1
		kill -TERM "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
	fi
	kill -TERM "$(cat "$F/web.pid")" 2>/dev/null || true
}

@test "desktop: Xvfb and x11vnc on the sandbox's loopback, the password only in a file" {
	[ "$(api "/v1/sandboxes/$ID/desktop" -o "$F/desk" -w '%{http_code}')" = 200 ]
	pw="$(jq -er .password "$F/desk")"
	[ "${#pw}" = 8 ]
	run api "/v1/sandboxes/$ID/exec" -d '{"cmd": "ss -ltn; ps -e -o args", "wait": true}'
	out="$(jq -r .stdout <<<"$output")"
	echo "$out"
	grep -q '127.0.0.1:5900 ' <<<"$out"
	! grep -q '0.0.0.0:5900 ' <<<"$out"
	grep -q '^Xvfb :99' <<<"$out"
	grep -q '^x11vnc .*-passwdfile /tmp/agentbox-desktop/passwd' <<<"$out"
	! grep -q -- "$pw" <<<"$out"
	# a sandbox without a desktop has none
	api /v1/sandboxes -d '{"backend": "native"}' >"$F/created2"
	id2="$(jq -er .id "$F/created2")"
	[ "$(api "/v1/sandboxes/$id2/desktop" -o /dev/null -w '%{http_code}')" = 404 ]
	t2="$(jq -er .port_token "$F/created2")"
	run timeout 20 node "$HERE/vnc-client.js" status "ws://127.0.0.1:$TPORT/v1/sandboxes/$id2/vnc?token=$t2"
	echo "$output"
	[ "$output" = "status 404" ]
	api "/v1/sandboxes/$id2?force=1" -X DELETE >/dev/null
}

@test "noVNC in a headless Chromium on the host draws the sandbox's desktop" {
	[ -d "$BROWSER_NPM/node_modules/playwright-core" ] || skip "scripts/install-deps npm (tests/npm/browser)"
	s="$(api "/v1/sandboxes/$ID/browser" -d '{"headless": false}' | jq -er .session)"
	api "/v1/sandboxes/$ID/browser/$s/evaluate" \
		-d '{"expression": "document.documentElement.style.background = \"#ff0000\"; 1"}' >/dev/null
	pw="$(api "/v1/sandboxes/$ID/desktop" | jq -er .password)"
	url="http://127.0.0.1:$WPORT/vnc.html?host=127.0.0.1&port=$TPORT&autoconnect=true&resize=off"
	url="$url&password=$pw&path=v1/sandboxes/$ID/vnc%3Ftoken%3D$TOKEN"
	# The host's Chromium (its PulseAudio client) makes /tmp/pulse-* unless
	# its runtime directory is one of this test's own.
	mkdir -p -m 0700 "$F/xdg"
	XDG_RUNTIME_DIR="$F/xdg" run timeout 60 node "$HERE/novnc.js" "$url" "$F/novnc.png"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "255 0 0" ]
	[ -s "$F/novnc.png" ]
	api "/v1/sandboxes/$ID/browser/$s" -X DELETE >/dev/null
}

@test "the VNC door: the right token opens it (subprotocol binary, RFB greeting)" {
	run timeout 20 node "$HERE/vnc-client.js" status "$VNC?token=$TOKEN"
	echo "$output"
	[[ "$output" == "open binary RFB 003.008" ]]
}

@test "the VNC door refuses a wrong token, a missing one, the daemon's own, a foreign Origin" {
	run timeout 20 node "$HERE/vnc-client.js" status "$VNC?token=${TOKEN%?}x"
	[ "$output" = "status 401" ]
	run timeout 20 node "$HERE/vnc-client.js" status "$VNC"
	[ "$output" = "status 401" ]
	code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Connection: Upgrade' \
		-H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
		-H 'Authorization: Bearer daemon-token-0123456789abcdef' "http://127.0.0.1:$TPORT/v1/sandboxes/$ID/vnc")"
	[ "$code" = 401 ]
	run timeout 20 node "$HERE/vnc-client.js" status "$VNC?token=$TOKEN" http://evil.example
	[ "$output" = "status 403" ]
	run timeout 20 node "$HERE/vnc-client.js" status "ws://127.0.0.1:$TPORT/v1/sandboxes/0123456789abcdef/vnc?token=$TOKEN"
	[ "$output" = "status 401" ]
	run timeout 20 node "$HERE/vnc-client.js" status "$VNC?token=$TOKEN" http://localhost:1234
	[[ "$output" == "open binary RFB"* ]]
}

@test "the VNC door closes an oversize message (1009) and a client that stops answering pings" {
	run timeout 20 node "$HERE/vnc-client.js" big "$VNC?token=$TOKEN"
	echo "$output"
	[[ "$output" == "closed 1009 "* ]]
	run timeout 20 node "$HERE/vnc-client.js" nopong "$VNC?token=$TOKEN"
	echo "$output"
	[[ "$output" == "closed 1001 "* ]]
	run timeout 20 node "$HERE/vnc-client.js" pong "$VNC?token=$TOKEN"
	echo "$output"
	[[ "$output" == "open after "* ]]
}
