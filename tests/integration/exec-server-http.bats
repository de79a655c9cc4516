#!/usr/bin/env bats
# The exec-server's http/request (docs/exec-server.md): performed for the
# sandbox through its own egress proxy, so its policy decides and its audit
# log records.  The daemon, its sandboxes, the origins
# (tests/agent-tools/exec-server-http.mjs origin: http and https on
# 127.0.0.2, a listener on 127.0.0.1 that the policy denies) and the
# reference `codex exec-server` run in a network namespace holding only lo
# (credential/common.bash), so nothing can leave the machine.

load netns-daemon

: "${BATS_TEST_TIMEOUT:=240}"
HTTP_CHECK="$BATS_TEST_DIRNAME/../agent-tools/exec-server-http.mjs"

setup() {
	cred_setup
	: "${AGENTBOX_NPM_DIR:=$ROOT_DIR/build/npm}"
	export AGENTBOX_NPM_DIR
	[ -d "$AGENTBOX_NPM_DIR/sdk/node_modules/ws" ] || skip "ws is not installed in $AGENTBOX_NPM_DIR/sdk"
	D="$T/d"
	SOCK="$D/run/agentbox.sock"
	STATE="$D/state"
	O="$T/origin"
	mkdir -p "$D" "$O"
	: >"$O/lo-conns"
	export AGENTBOX_HOST="$SOCK"
	DAEMON_PID=""
	# a server certificate for the origin's address, from the test CA
	[ -f "$CERTS/o2.pem" ] || _cred_leaf "$CERTS" o2 ca "subjectAltName=IP:127.0.0.2"
	inns_bg node "$HTTP_CHECK" origin "$O" 127.0.0.2 8080 8443 8099 "$CERTS/o2.pem" "$CERTS/o2.key"
	local i
	for ((i = 0; i < 100; i++)); do
		[ -f "$O/ready" ] && break
		sleep 0.1
	done
	[ -f "$O/ready" ]
	ORIGIN="http://127.0.0.2:8080"
	TLS_ORIGIN="https://127.0.0.2:8443"
	netns_daemon_start
}

teardown() {
	netns_daemon_teardown
}

check() {
	timeout -k 2 200 nsenter -t "$NS_PID" -n -- node "$HTTP_CHECK" "$@"
}

# a native sandbox with network "proxy" that may reach 127.0.0.2 only
create_proxy() {
	api /v1/sandboxes -d "{\"backend\": \"native\", \"network\": \"proxy\", \"egress\": {\"allow_hosts\": [\"127.0.0.2\"],
		\"allow_cidrs\": [\"127.0.0.2/32\"], \"audit_log\": \"$T/audit.log\"}}" | jq -er .id
}

@test "http/request: GET, POST, headers, https, streaming, denied targets, bad params, the cap" {
	local id threads i
	id="$(create_proxy)"
	threads="$(ls "/proc/$DAEMON_PID/task" | wc -l)"
	run check proxy "unix:$SOCK:/v1/sandboxes/$id/exec-server" "$ORIGIN" "$TLS_ORIGIN" 8099
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"ALL OK"* ]]
	# the origin saw what the client sent, through the proxy
	grep -q '^GET /hello 0$' "$O/requests"
	grep -q '^POST /echo 8$' "$O/requests"
	# the denied targets were never dialed, and the proxy audited them
	[ ! -s "$O/lo-conns" ]
	grep -q '169.254.169.254' "$T/audit.log"
	grep -q '10.1.2.3' "$T/audit.log"
	grep -q '127.0.0.1' "$T/audit.log"
	# the connections' threads (and the requests') ended
	for ((i = 0; i < 100; i++)); do
		[ "$(ls "/proc/$DAEMON_PID/task" | wc -l)" -le "$threads" ] && break
		sleep 0.1
	done
	[ "$(ls "/proc/$DAEMON_PID/task" | wc -l)" -le "$threads" ]
}

@test "http/request: a sandbox with network none has none" {
	local id
	id="$(api /v1/sandboxes -d '{"backend": "native", "network": "none"}' | jq -er .id)"
	run check none "unix:$SOCK:/v1/sandboxes/$id/exec-server" "$ORIGIN"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"ALL OK"* ]]
	[ ! -s "$O/requests" ]
}

@test "http/request: the result has the reference's shape" {
	local codex="$AGENTBOX_NPM_DIR/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
	[ -x "$codex" ] || skip "Codex is not installed in $AGENTBOX_NPM_DIR/codex"
	local id i url
	id="$(create_proxy)"
	mkdir -p "$T/codex-home" "$T/ref"
	CODEX_HOME="$T/codex-home" inns_bg env -C "$T/ref" -u HTTP_PROXY -u http_proxy "$codex" exec-server \
		--listen ws://127.0.0.1:0 >"$T/ref.out" 2>&1 </dev/null
	for ((i = 0; i < 100; i++)); do
		url="$(grep -Eo '^ws://127\.0\.0\.1:[0-9]+' "$T/ref.out" | head -1 || true)"
		[ -n "$url" ] && break
		sleep 0.1
	done
	[ -n "$url" ]
	run check diff "unix:$SOCK:/v1/sandboxes/$id/exec-server" "$url" "$ORIGIN"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"ALL OK"* ]]
}
