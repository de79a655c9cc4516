#!/usr/bin/env bats
# agentbox create --credential NAME=FILE (and POST /v1/sandboxes with
# "credentials"): the CLI reads FILE and sends the entry; the daemon gives
# the sandbox base URLs on 127.0.0.1:8288 and a per-sandbox token, and
# serves the credential proxy itself, so the real secret stays in the
# daemon (memory, and credentials.json 0600 in its state directory for
# re-adoption).  The daemon, its sandboxes and a fake TLS upstream
# (credential/upstream.js, test CA) run in a network namespace holding only
# lo (credential/common.bash).

load netns-daemon

: "${BATS_TEST_TIMEOUT:=180}"

setup() {
	cred_setup
	D="$T/d"
	SOCK="$D/run/agentbox.sock"
	STATE="$D/state"
	mkdir -p "$D"
	export AGENTBOX_HOST="$SOCK"
	DAEMON_PID=""
}

teardown() {
	local id p f
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		for id in $(api /v1/sandboxes 2>/dev/null | jq -r '.sandboxes[].id' 2>/dev/null); do
			api -X DELETE "/v1/sandboxes/$id?force=1" >/dev/null 2>&1 || true
		done
		kill -TERM "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
	fi
	# A daemon that died: end its sandboxes' monitors (ours by state file).
	for f in "$STATE"/sandboxes/*/state.json; do
		[ -f "$f" ] || continue
		p="$(jq -r '.monitor.pid' "$f")"
		if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = agentbox-mon ]; then
			kill -TERM "$p" 2>/dev/null || true
		fi
	done
	cred_teardown
}

daemon_start() {
	netns_daemon_start
}

daemon_kill9() {
	kill -KILL "$DAEMON_PID" 2>/dev/null || true
	wait "$DAEMON_PID" 2>/dev/null || true
	DAEMON_PID=""
}

ab() {
	timeout -k 2 90 "$AGENTBOX" "$@"
}

# entry FILE BASEURL HEADER VALUE: one upstream entry.
entry() {
	printf '{"baseUrl": "%s", "inject": [{"header": "%s", "value": "%s"}], "stripRequestHeaders": ["x-strip-me"]}\n' \
		"$2" "$3" "$4" >"$1"
}

# call_up ID: curl inside sandbox ID to the upstream through 8288; prints
# the token and the echo answer.
call_up() {
	ab exec "$1" -- sh -c '
		echo "$AGENTBOX_CREDENTIAL_TOKEN"
		curl -sS --max-time 20 -H "Authorization: Bearer $AGENTBOX_CREDENTIAL_TOKEN" \
			-H "x-strip-me: 1" "$OPENAI_BASE_URL/echo?q=1"'
}

# no_secret: the secret is in no API output, no state.json, no daemon log.
no_secret() {
	local id="$1"
	run ab inspect "$id"
	[ "$status" -eq 0 ]
	[[ "$output" != *"$SECRET_OAI"* ]]
	[[ "$output" != *SECRET* ]]
	run api /v1/sandboxes
	[ "$status" -eq 0 ]
	[[ "$output" == *"$id"* ]]
	[[ "$output" != *SECRET* ]]
	run api "/v1/sandboxes/$id"
	[[ "$output" != *SECRET* ]]
	run ! grep -qF SECRET "$D/daemon.log" "$STATE/sandboxes/$id/state.json"
}

@test "create --credential: curl inside gets the secret injected, the token never goes upstream" {
	start_upstream up
	entry "$T/openai.json" "https://127.0.0.1:$up_PORT/v1" authorization "Bearer $SECRET_OAI"
	daemon_start
	id="$(ab create --no-workspace --credential "openai=$T/openai.json")"
	[[ "$id" =~ ^[0-9a-f]+$ ]]
	run --separate-stderr call_up "$id"
	echo "status $status; stdout: $output; stderr: $stderr"
	[ "$status" -eq 0 ]
	token="${lines[0]}"
	[[ "$token" =~ ^[0-9a-f]{64}$ ]]
	[ "$(printf '%s\n' "${lines[1]}" | jq -r .url)" = "/v1/echo?q=1" ]
	[ "$(received_header up authorization)" = "Bearer $SECRET_OAI" ]
	[ -z "$(received_header up x-strip-me)" ]
	run ! grep -qF -- "$token" "$T/up.log"
	# a wrong token is refused, nothing goes upstream
	n="$(log_requests up | wc -l)"
	run ab exec "$id" -- curl -sS --max-time 20 -H "Authorization: Bearer nope" -w ' %{http_code}' \
		http://127.0.0.1:8288/openai/echo
	[ "$output" = "unauthorized
 401" ]
	[ "$(log_requests up | wc -l)" -eq "$n" ]
	no_secret "$id"
	# the secrets' file: 0600, and the sandbox cannot read it
	f="$STATE/sandboxes/$id/credentials.json"
	[ "$(stat -c %a "$f")" = 600 ]
	grep -qF "$SECRET_OAI" "$f"
	run ab exec "$id" -- cat "$f"
	[ "$status" -ne 0 ]
	[[ "$output" != *SECRET* ]]
	[ "$(api "/v1/sandboxes/$id" -o /dev/null -w '%{http_code}' -X DELETE)" = 204 ]
	[ ! -e "$f" ]
}

@test "POST /v1/sandboxes with credentials entries; a bad entry is 400 without the secret" {
	start_upstream up
	daemon_start
	body="$(jq -n --arg u "https://127.0.0.1:$up_PORT/v1" --arg s "Bearer $SECRET_OAI" \
		'{network: "proxy", credentials: [{name: "openai", baseUrl: $u, inject: [{header: "authorization", value: $s}]}]}')"
	id="$(api /v1/sandboxes -d "$body" | jq -er .id)"
	run --separate-stderr call_up "$id"
	echo "status $status; stdout: $output; stderr: $stderr"
	[ "$status" -eq 0 ]
	[ "$(received_header up authorization)" = "Bearer $SECRET_OAI" ]
	# the egress listener still answers next to it (a policy refusal)
	run ab exec "$id" -- curl -sS --max-time 20 -o /dev/null -w "%{http_code}" -x http://127.0.0.1:3128 \
		http://198.51.100.1/
	echo "egress: $output"
	[[ "$output" =~ ^[0-9]{3}$ ]]
	[ "$output" != 000 ]
	no_secret "$id"
	for bad in "[{\"name\": \"openai\", \"baseUrl\": \"http://x.example\", \"inject\": [{\"header\": \"a\", \"value\": \"$SECRET_OAI\"}]}]" \
		"[{\"name\": \"openai\", \"baseUrl\": \"https://x.example\", \"inject\": [{\"header\": \"a\", \"value\": \"$SECRET_OAI\\n\"}]}]" \
		'"x"' '[]'; do
		run api /v1/sandboxes -o "$D/body" -w '%{http_code}' -d "{\"credentials\": $bad}"
		echo "$bad -> $output $(cat "$D/body")"
		[ "$output" = 400 ]
		run ! grep -qF SECRET "$D/body"
	done
	run ! grep -qF SECRET "$D/daemon.log"
	[ "$(api /v1/sandboxes | jq '.sandboxes | length')" = 1 ]
}

@test "the daemon's sandbox holds no secret: env, files, process memory" {
	mkdir -p "$T/ws"
	cp "$CRED_HELPERS/sandbox-scan.sh" "$CRED_HELPERS/sandbox-scan-mem.pl" "$T/ws/"
	entry "$T/openai.json" "https://127.0.0.1:1/v1" authorization "Bearer $SECRET_OAI"
	daemon_start
	id="$(ab create --workspace "$T/ws" -e "REV=$(printf '%s' "$SECRET_OAI" | rev)" \
		-e "START=$(date +%s)" --credential "openai=$T/openai.json")"
	run --separate-stderr ab exec "$id" -- /workspace/sandbox-scan.sh
	echo "status $status; stdout:"
	echo "$output"
	echo "stderr: $stderr"
	[ "$status" -eq 0 ]
	grep -qx "env secret=0 token=1" <<<"$output"
	grep -qx "files secret=0 token=1" <<<"$output"
	grep -qx "usr-changed secret=0 token=0 files=[0-9]*" <<<"$output"
	grep -qx "proc secret=0 token=1" <<<"$output"
	grep -qx "mem secret=0 token=1 pids=[1-9][0-9]* bytes=[1-9][0-9]* unreadable=[0-9]*" <<<"$output"
}

@test "daemon SIGKILL and restart: the re-adopted sandbox's credentials still work" {
	start_upstream up
	entry "$T/openai.json" "https://127.0.0.1:$up_PORT/v1" authorization "Bearer $SECRET_OAI"
	daemon_start
	id="$(ab create --no-workspace --credential "openai=$T/openai.json")"
	run --separate-stderr call_up "$id"
	[ "$status" -eq 0 ]
	token="${lines[0]}"
	daemon_kill9
	daemon_start
	[ "$(api "/v1/sandboxes/$id" | jq -r .state)" = running ]
	: >"$T/up.log"
	run --separate-stderr call_up "$id"
	echo "status $status; stdout: $output; stderr: $stderr; daemon:"
	cat "$D/daemon.log"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$token" ]
	[ "$(printf '%s\n' "${lines[1]}" | jq -r .url)" = "/v1/echo?q=1" ]
	[ "$(received_header up authorization)" = "Bearer $SECRET_OAI" ]
	no_secret "$id"
}
