#!/usr/bin/env bats
# Secrets and tokens of a daemon sandbox (docs/daemon.md, "Sandboxes" and
# "Ports"): the credential token, the real secret and the port token appear
# in no GET, listing, `ls --json`, `inspect` or state.json (the port token
# only in create's answer); the /ports/ proxy's cookie after ?token= opens
# that sandbox and no other, and neither the cookie nor the token reaches
# the sandbox's server; an idle port stream is closed; the daemon's memory
# keeps no freed copy of a request's secret in jansson's buffers (counted
# in /proc/PID/mem).  The server inside
# is tests/helpers/port-peers.js (node's http module); the client is curl
# with a cookie jar, over the daemon's socket.

load daemon-common.bash

PEERS="$BATS_TEST_DIRNAME/../helpers/port-peers.js"
SECRET="sk-SECRETVALUE-$RANDOM$RANDOM"

setup() {
	daemon_setup
	if ! command -v node >/dev/null; then
		skip "node is not installed"
	fi
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$WS"
	cp "$PEERS" "$WS/port-peers.js"
	JAR="$BATS_TEST_TMPDIR/jar"
}

teardown() {
	daemon_teardown
}

# new_box [JSON]: create through the API; sets ID and TOKEN (the port
# token, from create's answer).
new_box() {
	local body="${1:-}"
	[ -n "$body" ] || body="{\"workspace\": \"$WS\"}"
	api /v1/sandboxes -d "$body" >"$D/created"
	ID="$(jq -er .id "$D/created")"
	TOKEN="$(jq -er .port_token "$D/created")"
	[[ "$TOKEN" =~ ^[0-9a-f]{64}$ ]]
}

# serve ID PORT: the peer server on 127.0.0.1:PORT inside sandbox ID, up.
serve() {
	local i
	ab exec -d "$1" -- node /workspace/port-peers.js server "$2" >/dev/null
	for ((i = 0; i < 100; i++)); do
		ab exec "$1" -- node -e "require('net').connect($2, '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))" && return 0
		sleep 0.1
	done
	echo "the server inside did not start" >&2
	return 1
}

# port ID PORT PATH [curl options]: the /ports/ proxy; prints the status,
# the head goes to $D/head, the body to $D/body.
port() {
	local id="$1" p="$2" path="$3"
	shift 3
	curl -s -D "$D/head" -o "$D/body" -w '%{http_code}' --max-time 20 --unix-socket "$SOCK" \
		"$@" "http://agentbox/v1/sandboxes/$id/ports/$p$path"
}

# absent WORD FILE...: WORD is in none of the files.
absent() {
	local w="$1"
	shift
	run grep -lF -- "$w" "$@"
	[ "$status" -eq 1 ] || {
		echo "found in: $output" >&2
		return 1
	}
}

@test "no GET, listing, ls --json, inspect or state.json shows the credential token, the secret or the port token" {
	daemon_start
	local ctok body
	body="$(jq -cn --arg s "$SECRET" --arg w "$WS" \
		'{workspace: $w, env: {MINE: "visible"}, credentials: [{name: "openai", baseUrl: "https://127.0.0.1:9/v1", inject: [{header: "authorization", value: ("Bearer " + $s)}]}]}')"
	new_box "$body"
	# The token the sandbox got (it is meant to see it).
	ctok="$(ab exec "$ID" -- printenv AGENTBOX_CREDENTIAL_TOKEN)"
	[[ "$ctok" =~ ^[0-9a-f]{64}$ ]]
	[ "$(ab exec "$ID" -- printenv OPENAI_API_KEY)" = "$ctok" ]
	# Everything the owner can read back, into files.
	api "/v1/sandboxes/$ID" >"$D/get"
	api /v1/sandboxes >"$D/list"
	ab ls --json >"$D/ls"
	ab inspect "$ID" >"$D/inspect"
	cp "$STATE/sandboxes/$ID/state.json" "$D/saved-state"
	[ "$(jq -r .id "$D/get")" = "$ID" ]
	[ "$(jq -r '.spec.env.MINE' "$D/get")" = visible ]
	[ "$(jq -r '.spec.env.AGENTBOX_CREDENTIAL_TOKEN' "$D/get")" = "<redacted>" ]
	[ "$(jq -r '.spec.env.OPENAI_API_KEY' "$D/inspect")" = "<redacted>" ]
	[[ "$(jq -r '.spec.env.OPENAI_BASE_URL' "$D/get")" == http://127.0.0.1:8288/openai* ]]
	jq -e '.spec.env | has("AGENTBOX_CREDENTIAL_TOKEN") | not' "$D/saved-state"
	jq -e 'has("port_token") | not' "$D/get"
	for w in "$ctok" "$SECRET" SECRETVALUE "$TOKEN"; do
		absent "$w" "$D/get" "$D/list" "$D/ls" "$D/inspect" "$D/daemon.log"
	done
	for w in "$ctok" "$SECRET"; do
		absent "$w" "$D/saved-state"
	done
	# After a restart: still nowhere, and the sandbox's variables are back
	# (from credentials.json, the one file that holds them, 0600).
	[ "$(stat -c %a "$STATE/sandboxes/$ID/credentials.json")" = 600 ]
	daemon_kill9
	daemon_start
	[ "$(ab exec "$ID" -- printenv AGENTBOX_CREDENTIAL_TOKEN)" = "$ctok" ]
	api "/v1/sandboxes/$ID" >"$D/get2"
	api /v1/sandboxes >"$D/list2"
	cp "$STATE/sandboxes/$ID/state.json" "$D/saved-state2"
	for w in "$ctok" "$SECRET" "$TOKEN"; do
		absent "$w" "$D/get2" "$D/list2"
	done
	absent "$ctok" "$D/saved-state2"
	[ "$(jq -r '.spec.env.AGENTBOX_CREDENTIAL_TOKEN' "$D/get2")" = "<redacted>" ]
	# `agentbox create --json` is where a CLI user reads the port token.
	run ab create --no-workspace --json
	[ "$status" -eq 0 ]
	[[ "$(jq -r .port_token <<<"$output")" =~ ^[0-9a-f]{64}$ ]]
}

@test "ports: ?token= sets a scoped HttpOnly SameSite=Strict cookie; the cookie alone opens the sandbox; neither reaches the server" {
	daemon_start
	new_box
	serve "$ID" 8000
	[ "$(port "$ID" 8000 "/echo?a=1&token=$TOKEN" -c "$JAR")" = 200 ]
	grep -i '^set-cookie:' "$D/head" | tee "$D/setcookie"
	[ "$(wc -l <"$D/setcookie")" -eq 1 ]
	grep -Eiq "^set-cookie: agentbox_port_$ID=$TOKEN; Path=/v1/sandboxes/$ID/ports; HttpOnly; SameSite=Strict"$'\r'"?$" "$D/setcookie"
	[ "$(jq -r .url "$D/body")" = "/echo?a=1" ]
	# The cookie alone: the browser's next request.
	[ "$(port "$ID" 8000 /echo -b "$JAR")" = 200 ]
	[ "$(jq -r .url "$D/body")" = /echo ]
	! grep -qi '^set-cookie:' "$D/head"
	# A cookie answer, a Bearer answer: no new cookie; other ports of the
	# same sandbox too (the Path is the sandbox's).
	[ "$(port "$ID" 8000 /echo -H "Authorization: Bearer $TOKEN")" = 200 ]
	! grep -qi '^set-cookie:' "$D/head"
	# What the server saw: no token, no cookie of ours, no Referer naming
	# the token; the app's own cookie kept.
	[ "$(port "$ID" 8000 /echo -H "Cookie: app=1; agentbox_port_$ID=$TOKEN; b=2" \
		-H "Referer: http://agentbox/v1/sandboxes/$ID/ports/8000/?token=$TOKEN")" = 200 ]
	jq -r '.headers | join("\n")' "$D/body" >"$D/seen"
	cat "$D/seen"
	absent "$TOKEN" "$D/body"
	absent agentbox_port "$D/body"
	grep -qx 'app=1; b=2' "$D/seen"
	! grep -qix referer "$D/seen"
	# Only our cookie: the Cookie field is dropped altogether.
	[ "$(port "$ID" 8000 /echo -b "$JAR")" = 200 ]
	! jq -r '.headers[]' "$D/body" | grep -qix cookie
	# A wrong cookie (same length) is refused like none.
	if [ "${TOKEN: -1}" = 0 ]; then wrong="${TOKEN%?}1"; else wrong="${TOKEN%?}0"; fi
	[ "$(port "$ID" 8000 /echo -H "Cookie: agentbox_port_$ID=$wrong")" = 401 ]
	[ "$(jq -r .error.code "$D/body")" = unauthorized ]
}

@test "ports: sandbox A's cookie or token never opens sandbox B" {
	daemon_start
	new_box
	local a="$ID" ta="$TOKEN"
	serve "$a" 8000
	new_box
	local b="$ID" tb="$TOKEN"
	serve "$b" 8000
	[ "$ta" != "$tb" ]
	[ "$(port "$a" 8000 "/echo?token=$ta" -c "$JAR")" = 200 ]
	[ "$(port "$a" 8000 /echo -b "$JAR")" = 200 ]
	# The browser's jar does not even send A's cookie to B (Path) ...
	[ "$(port "$b" 8000 /echo -b "$JAR")" = 401 ]
	# ... and a client that sends it anyway, under either name, is refused
	# exactly as without a token.
	[ "$(port "$b" 8000 /echo -H "Cookie: agentbox_port_$a=$ta")" = 401 ]
	[ "$(jq -r .error.code "$D/body")" = unauthorized ]
	[ "$(jq -r .error.message "$D/body")" = "missing or wrong port token" ]
	[ "$(port "$b" 8000 /echo -H "Cookie: agentbox_port_$b=$ta")" = 401 ]
	[ "$(jq -r .error.message "$D/body")" = "missing or wrong port token" ]
	[ "$(port "$b" 8000 "/echo?token=$ta")" = 401 ]
	! grep -qi '^set-cookie:' "$D/head"
	[ "$(port "$b" 8000 /echo -H "Authorization: Bearer $ta")" = 401 ]
	# B's own token still works, and its cookie is B's.
	[ "$(port "$b" 8000 "/echo?token=$tb")" = 200 ]
	grep -qi "^set-cookie: agentbox_port_$b=$tb; Path=/v1/sandboxes/$b/ports;" "$D/head"
}

@test "ports: an idle stream is closed after AGENTBOX_PORT_IDLE_TIMEOUT; a live one is not" {
	AGENTBOX_PORT_IDLE_TIMEOUT=1s daemon_start
	new_box
	# A server that accepts and never answers.
	ab exec -d "$ID" -- node -e "require('net').createServer(() => {}).listen(8001, '127.0.0.1')" >/dev/null
	serve "$ID" 8000
	local t0 t1 rc
	t0="$(date +%s%N)"
	rc=0
	port "$ID" 8001 "/?token=$TOKEN" >/dev/null || rc=$?
	t1="$(date +%s%N)"
	echo "curl rc=$rc after $(((t1 - t0) / 1000000)) ms"
	[ "$rc" -eq 52 ] # empty reply: the daemon closed the stream
	[ $(((t1 - t0) / 1000000)) -ge 900 ]
	[ $(((t1 - t0) / 1000000)) -lt 10000 ]
	# A stream that keeps moving outlives the timeout: 3 s of a slow body.
	run timeout 20 sh -c "for i in 1 2 3 4 5 6; do printf x; sleep 0.5; done | curl -s --max-time 15 \
		--unix-socket '$SOCK' -H 'Transfer-Encoding: chunked' --data-binary @- \
		'http://agentbox/v1/sandboxes/$ID/ports/8000/digest?token=$TOKEN'"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "6 "* ]]
}

@test "ports: without the variable the idle timeout is not 1 s (the default, 300 s, holds a quiet stream)" {
	daemon_start
	new_box
	ab exec -d "$ID" -- node -e "require('net').createServer(() => {}).listen(8001, '127.0.0.1')" >/dev/null
	serve "$ID" 8000
	local rc=0
	curl -s -o /dev/null --max-time 3 --unix-socket "$SOCK" \
		"http://agentbox/v1/sandboxes/$ID/ports/8001/?token=$TOKEN" || rc=$?
	[ "$rc" -eq 28 ] # curl's own timeout: the daemon kept the stream
}

# copies PID WORD: how many times WORD is in the readable memory of PID.
copies() {
	python3 - "$1" "$2" <<'PY'
import sys
pid, needle, n = int(sys.argv[1]), sys.argv[2].encode(), 0
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        span, perms = line.split()[:2]
        a, b = (int(x, 16) for x in span.split("-"))
        if "r" not in perms:
            continue
        try:
            mem.seek(a)
            n += mem.read(b - a).count(needle)
        except (OSError, ValueError, OverflowError):
            pass
print(n)
PY
}

@test "the daemon's memory: the secret of a create request is left in the parsed configuration, not in jansson's freed buffers" {
	[ "$(id -u)" = 0 ] || skip "reading the daemon's memory needs root"
	command -v python3 >/dev/null || skip "python3 is not installed"
	daemon_start
	local body n
	body="$(jq -cn --arg s "$SECRET" \
		'{workspace: null, credentials: [{name: "openai", baseUrl: "https://127.0.0.1:9/v1", inject: [{header: "authorization", value: ("Bearer " + $s)}]}]}')"
	new_box "$body"
	n="$(copies "$DAEMON_PID" "$SECRET")"
	echo "copies of the secret in the daemon: $n"
	# One is the configuration the credential relay injects from; without
	# the wipe of what jansson frees (base/json-wipe.c) there are three
	# (the request's parse and its copy), and the connection's read buffer
	# (net/http-io.c) and the body (daemon/respond.c) are wiped too.
	[ "$n" -eq 1 ]
	ab rm -f "$ID"
}
