#!/usr/bin/env bats
# The credential proxy streams both ways: the first server-sent event
# reaches the client while the upstream is still answering, the first
# request-body chunk reaches the upstream while the client is still
# sending; and real SDKs from npm (openai, @anthropic-ai/sdk) stream
# through it to a fake TLS upstream.  credential/common.bash has the set-up.

load credential/common

setup() {
	cred_setup
	start_upstream UP
	write_config "$(default_config "$UP_PORT")"
	start_cp
}

teardown() {
	cred_teardown
}

no_leak() {
	local s
	for s in "$TOKEN" "$SECRET_ANT" "$SECRET_OAI"; do
		! grep -qF -- "$s" "$T/cp.err" || { cat "$T/cp.err" >&2; return 1; }
	done
}

# wait_exit PID [TENTHS]: until PID ends (10 s); its status.
wait_exit() {
	local pid="$1" n="${2:-100}" i
	for ((i = 0; i < n; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	wait "$pid"
}

@test "SSE: the first event reaches the client before the upstream finishes" {
	inns_bg curl -sS -N --max-time 30 "$CP/anthropic/v1/hold-sse" -H "$(auth)" >"$T/sse.out" 2>&1
	local pid=$BG_LAST
	wait_for "$T/sse.out" '^data: first$'
	# The upstream is still holding its response open (it waits for the
	# release file, which does not exist yet).
	[ ! -e "$T/UP.release" ]
	! grep -q '"sse-finished"' "$T/UP.log"
	! grep -q 'second' "$T/sse.out"
	touch "$T/UP.release"
	wait_exit "$pid"
	grep -qx 'data: second' "$T/sse.out"
	grep -q '"sse-finished"' "$T/UP.log"
}

@test "request body: the first chunk reaches the upstream before the client finishes" {
	run inns node "$CRED_HELPERS/client.js" upload "$CP_PORT" /anthropic/v1/upload "$TOKEN" "$T/UP.log"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"upstream had the first chunk before the client finished"* ]]
	[[ "$output" == *"status 200 body 20"* ]]
	[ "$(received_header UP transfer-encoding)" = chunked ]
}

@test "openai SDK from npm: streamed and plain chat completions through the proxy" {
	cred_npm_install || skip "openai and @anthropic-ai/sdk are not installed in $CRED_NPM (scripts/install-deps npm)"
	run inns env NODE_PATH="$CRED_NPM/node_modules" OPENAI_API_KEY= OPENAI_BASE_URL= \
		node "$CRED_HELPERS/client.js" openai "$CP/openai" "$TOKEN"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^stream:\ Hello\ from\ upstream\ \(([0-9]+)\ chunks\)$ ]]
	[ "${BASH_REMATCH[1]}" -ge 4 ]
	[ "${lines[1]}" = "plain: Hello from upstream" ]
	[ "$(log_requests UP | jq -r .url | sort -u)" = /v1/chat/completions ]
	[ "$(received_header UP authorization)" = "Bearer $SECRET_OAI" ]
	! log_requests UP | grep -qF "$TOKEN"
	no_leak
}

@test "@anthropic-ai/sdk from npm: a streamed message and a plain one through the proxy" {
	cred_npm_install || skip "openai and @anthropic-ai/sdk are not installed in $CRED_NPM (scripts/install-deps npm)"
	run inns env NODE_PATH="$CRED_NPM/node_modules" ANTHROPIC_API_KEY= ANTHROPIC_AUTH_TOKEN= \
		ANTHROPIC_BASE_URL= node "$CRED_HELPERS/client.js" anthropic "$CP/anthropic" "$TOKEN"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^stream:\ Hello\ from\ upstream\ \(([0-9]+)\ events,\ stop\ end_turn\)$ ]]
	[ "${lines[1]}" = "plain: Hello from upstream" ]
	[ "$(log_requests UP | jq -r .url | sort -u)" = /v1/messages ]
	[ "$(received_header UP x-api-key)" = "$SECRET_ANT" ]
	[ -z "$(received_header UP authorization)" ]
	[ -n "$(received_header UP anthropic-version)" ]
	! log_requests UP | grep -qF "$TOKEN"
	no_leak
}
